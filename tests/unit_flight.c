/* Unit tests of the handshake and first-flight trackers on hand-built packet sequences, one
 * connection each, fed in the engine's order (handshake, flights, side counters). Each case is
 * named after the rule of docs/METHOD.md it exercises, so a failing check names the rule. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flight.h"
#include "handshake.h"
#include "record.h"
#include "unit.h"

#define MS 1000ull
#define T0 (1700000000ull * 1000000ull)

/* One connection being built: the flow, each side's next sequence number and clock. */
struct conn {
	struct flow f;
	bool ts;              /* both SYNs carry timestamps */
	uint32_t nxt[2];      /* next sequence number of client (0) and server (1) */
	uint32_t last_tsval[2];
	uint16_t win[2];      /* window field each side sends after its SYN */
	uint16_t mss[2];      /* MSS option in each SYN */
	struct flight_opts o;
};

static struct pkt base(const struct conn *c, int dir, uint64_t t_us, uint8_t flags)
{
	struct pkt p;
	memset(&p, 0, sizeof(p));
	p.ts_us = T0 + t_us;
	p.ip_ver = 4;
	p.ttl = 64;
	p.flags = flags;
	p.sport = dir == 0 ? 40000 : 80;
	p.dport = dir == 0 ? 80 : 40000;
	p.win = c->win[dir];
	p.tcp_hlen = 20;
	if (c->ts) {
		p.opt.present |= OPT_TS;
		p.opt.tsval = (uint32_t)(t_us / MS) + (dir ? 500000u : 100000u); /* 1 ms clocks */
		p.opt.tsecr = c->last_tsval[1 - dir]; /* what the sender has processed: at its side */
	}
	return p;
}

/* The table the flows' SYN option layouts are kept in (the flows themselves are not in it). */
static flow_table *layouts(void)
{
	static flow_table *t;
	if (!t)
		t = flow_table_new(16);
	return t;
}

/* What the connections' flows hold out of line (wide: a marked silence, a hole, a time past
 * its offset): freed as a connection starts over (conn_reset) and at the end. A struct conn on
 * the stack starts as garbage, so only a wide listed here is freed. */
static struct flow_wide *wides[256];
static unsigned nwides;

static void wide_note(struct flow_wide *w)
{
	for (unsigned i = 0; i < nwides; i++)
		if (wides[i] == w)
			return;
	if (nwides < sizeof(wides) / sizeof(wides[0]))
		wides[nwides++] = w;
}

/* c cleared, what its flow held out of line freed. */
static void conn_reset(struct conn *c)
{
	for (unsigned i = 0; i < nwides; i++)
		if (wides[i] == c->f.wide) {
			free(wides[i]);
			wides[i] = wides[--nwides];
			break;
		}
	memset(c, 0, sizeof(*c));
}

static void feed(struct conn *c, struct pkt *p, int dir)
{
	handshake_update(layouts(), &c->f, p, dir);
	flight_update(&c->f, p, dir, &c->o);
	flow_side_update(&c->f, dir, p);
	if (c->f.wide)
		wide_note(c->f.wide);
	if (p->opt.present & OPT_TS)
		c->last_tsval[dir] = p->opt.tsval;
}

/* SYN at 0, SYN-ACK at rtt_s, ACK at rtt_s + rtt_c (vantage-point legs, microseconds); each
 * SYN carries the options c_opts / s_opts (OPT_MSS: mss; OPT_WS: scale 7; OPT_TS with ts)
 * and the client's SYN the quirks c_quirks (Q_OPT_CUT: a snaplen cut its options). */
static void handshake_syns(struct conn *c, bool ts, uint64_t rtt_s, uint64_t rtt_c, uint16_t mss,
                           uint8_t c_opts, uint8_t c_quirks, uint8_t s_opts)
{
	conn_reset(c);
	c->f.first_us = T0; /* as the engine starts a flow: at its first packet */
	c->ts = ts;
	c->nxt[0] = 1000;
	c->nxt[1] = 900000;
	c->win[0] = c->win[1] = 64240;
	c->mss[0] = c->mss[1] = mss;
	struct pkt p = base(c, 0, 0, TH_SYN);
	p.seq = c->nxt[0]++;
	p.opt.present |= c_opts;
	p.opt.mss = (c_opts & OPT_MSS) ? c->mss[0] : 0;
	p.opt.wscale = (c_opts & OPT_WS) ? 7 : 0;
	p.opt.tsecr = 0;
	p.quirks = c_quirks;
	feed(c, &p, 0);
	p = base(c, 1, rtt_s, TH_SYN | TH_ACK);
	p.seq = c->nxt[1]++;
	p.ack = c->nxt[0];
	p.opt.present |= s_opts;
	p.opt.mss = (s_opts & OPT_MSS) ? c->mss[1] : 0;
	p.opt.wscale = (s_opts & OPT_WS) ? 7 : 0;
	feed(c, &p, 1);
	p = base(c, 0, rtt_s + rtt_c, TH_ACK);
	p.seq = c->nxt[0];
	p.ack = c->nxt[1];
	feed(c, &p, 0);
}

/* The usual handshake: MSS 1460 and SACK both ways, timestamps with ts, no window scale. */
static void handshake(struct conn *c, bool ts, uint64_t rtt_s, uint64_t rtt_c)
{
	handshake_syns(c, ts, rtt_s, rtt_c, 1460, OPT_MSS | OPT_SACKOK, 0, OPT_MSS | OPT_SACKOK);
}

/* dir sends len bytes of new data at t; tsecr 0 = echo what it has seen (sender-side view). */
static void data(struct conn *c, int dir, uint64_t t, uint32_t len, uint32_t tsecr)
{
	struct pkt p = base(c, dir, t, TH_ACK | TH_PSH);
	p.seq = c->nxt[dir];
	p.ack = c->nxt[1 - dir];
	p.payload_len = len;
	if (tsecr && c->ts)
		p.opt.tsecr = tsecr;
	c->nxt[dir] += len;
	feed(c, &p, dir);
}

/* A pure ACK from dir of everything the other side sent so far. */
static void ack(struct conn *c, int dir, uint64_t t)
{
	struct pkt p = base(c, dir, t, TH_ACK);
	p.seq = c->nxt[dir];
	p.ack = c->nxt[1 - dir];
	feed(c, &p, dir);
}

/* dir sends len bytes of new data at t carrying TSval tsval and TSecr tsecr as given (what the
 * sender's clock and echo said when it sent the packet, which a queue may have held since). */
static void data_ts(struct conn *c, int dir, uint64_t t, uint32_t len, uint32_t tsval,
                    uint32_t tsecr)
{
	struct pkt p = base(c, dir, t, TH_ACK | TH_PSH);
	p.seq = c->nxt[dir];
	p.ack = c->nxt[1 - dir];
	p.payload_len = len;
	p.opt.tsval = tsval;
	p.opt.tsecr = tsecr;
	c->nxt[dir] += len;
	feed(c, &p, dir);
}

/* A pure ACK from dir with the acknowledgement number ackno (absolute). */
static void ack_to(struct conn *c, int dir, uint64_t t, uint32_t ackno)
{
	struct pkt p = base(c, dir, t, TH_ACK);
	p.seq = c->nxt[dir];
	p.ack = ackno;
	feed(c, &p, dir);
}

/* One direction: the capture holds only the server's packets, from its SYN-ACK at t = 0 on
 * (an asymmetric route, a tap on one fibre). The client's SYN carried TSval 100000; the
 * server's packets echo what it has processed, passed to data() explicitly. */
static void server_only_mss(struct conn *c, bool ts, uint16_t server_mss)
{
	conn_reset(c);
	c->f.first_us = T0; /* as the engine starts a flow: at its first packet */
	c->ts = ts;
	c->nxt[0] = 1001; /* the client's ISN + 1: what the SYN-ACK acknowledges */
	c->nxt[1] = 900000;
	c->win[0] = c->win[1] = 64240;
	c->mss[0] = 1460;
	c->mss[1] = server_mss;
	c->last_tsval[0] = 100000;
	struct pkt p = base(c, 1, 0, TH_SYN | TH_ACK);
	p.seq = c->nxt[1]++;
	p.ack = c->nxt[0];
	p.opt.present |= OPT_MSS | OPT_SACKOK;
	p.opt.mss = c->mss[1];
	feed(c, &p, 1);
}

/* ... its SYN-ACK's MSS 1460. */
static void server_only(struct conn *c, bool ts)
{
	server_only_mss(c, ts, 1460);
}

/* The server's verdict, checked in one line: limit, segment count and evidence (each compared
 * with its value printed; the whole verdict printed once when any differs). */
#define VERDICT(c, sender, lim, n, why_end, why_next)                                           \
	do {                                                                                         \
		struct ff_verdict v_;                                                                    \
		flight_verdict(&(c).f, sender, &v_);                                                     \
		CHECK_EQ_INT(v_.limit, (lim));                                                           \
		CHECK_EQ_INT(v_.segs, (uint32_t)(n));                                                    \
		CHECK_EQ_INT(v_.end, (why_end));                                                         \
		CHECK_EQ_INT(v_.next, (why_next));                                                       \
		if (v_.limit != (lim) || v_.segs != (uint32_t)(n) || v_.end != (why_end) ||             \
		    v_.next != (why_next))                                                               \
			printf("     got limit %d segs %u end %d next %d pause %lld\n", v_.limit, v_.segs, \
			       v_.end, v_.next, (long long)v_.pause_us);                                     \
	} while (0)

/* Rule 1 next to the client: A1 passes the capture point while the flight still arrives; the
 * rest of the flight echoes the older TSval, the next flight A1's. */
static void rule1_receiver_side(void)
{
	struct conn c;
	handshake(&c, true, 30 * MS, 100);
	data(&c, 0, 31 * MS, 100, 0); /* the request */
	uint32_t before = c.last_tsval[0];
	for (int i = 0; i < 10; i++) {
		data(&c, 1, 61 * MS + (uint64_t)i * 100, 1448, before);
		if (i == 1)
			ack(&c, 0, 61 * MS + 150); /* A1, mid-flight */
	}
	ack(&c, 0, 62 * MS);
	for (int i = 0; i < 20; i++)
		data(&c, 1, 91 * MS + (uint64_t)i * 100, 1448, 0);
	VERDICT(c, 1, LIMIT_CWND, 10, FF_END_TSECR, FF_NEXT_ACK);
	VERDICT(c, 0, LIMIT_APP, 1, FF_END_NONE, FF_NEXT_NONE);
}

/* Rule 2 at the same place without timestamps: t(A1) + the server leg. Away from S, a tail
 * held a round trip on the way would arrive just as released data does: a lower bound. */
static void rule2_receiver_side(void)
{
	struct conn c;
	handshake(&c, false, 30 * MS, 100);
	data(&c, 0, 31 * MS, 100, 0);
	for (int i = 0; i < 10; i++) {
		data(&c, 1, 61 * MS + (uint64_t)i * 100, 1460, 0);
		if (i == 1)
			ack(&c, 0, 61 * MS + 150);
	}
	for (int i = 0; i < 20; i++)
		data(&c, 1, 91 * MS + (uint64_t)i * 100, 1460, 0);
	VERDICT(c, 1, LIMIT_AMBIGUOUS, 10, FF_END_TIMING, FF_NEXT_ACK);
}

/* Nagle: a 300-byte header, the body waits for its ACK. */
static void nagle_header_then_body(void)
{
	struct conn c;
	handshake(&c, true, 30 * MS, 100);
	data(&c, 0, 31 * MS, 100, 0);
	data(&c, 1, 61 * MS, 300, 0);
	ack(&c, 0, 61 * MS + 100);
	data(&c, 1, 91 * MS, 1000, 0);
	VERDICT(c, 1, LIMIT_NAGLE, 1, FF_END_TSECR, FF_NEXT_ACK);
}

/* A tail-loss probe next to the server: ACKs held on the way, new data two RTTs after the
 * burst with the flight's TSecr is a timer send; the burst is the IW, not burst + probe. */
static void timer_send_is_not_in_flight(void)
{
	struct conn c;
	handshake(&c, true, 100, 30 * MS);
	data(&c, 0, 30 * MS + 200, 100, 0);
	for (int i = 0; i < 10; i++)
		data(&c, 1, 31 * MS + (uint64_t)i * 20, 1448, 0);
	data(&c, 1, 91 * MS, 1448, 0); /* TLP at 2 RTT, nothing acknowledged yet */
	ack(&c, 0, 140 * MS);
	VERDICT(c, 1, LIMIT_CWND, 10, FF_END_PAUSE, FF_NEXT_TIMER);
	/* without timestamps nothing shows it was a timer (rule 2 keeps it in flight 1, the pause
	 * ends it): a lower bound, never IW11 */
	handshake(&c, false, 100, 30 * MS);
	data(&c, 0, 30 * MS + 200, 100, 0);
	for (int i = 0; i < 10; i++)
		data(&c, 1, 31 * MS + (uint64_t)i * 20, 1460, 0);
	data(&c, 1, 91 * MS, 1460, 0);
	ack(&c, 0, 140 * MS);
	VERDICT(c, 1, LIMIT_AMBIGUOUS, 10, FF_END_PAUSE, FF_NEXT_LATE);
}

/* No timer fires within 10 ms: on a LAN a write 3 ms later (15 RTTs) with the flight's TSecr
 * was sent before any ACK reached the server, by the application: still flight 1 (a lower
 * bound of 2), never a timer send. */
static void timer_floor(void)
{
	struct conn c;
	handshake(&c, true, 50, 150);
	data(&c, 0, 300, 100, 0);
	data(&c, 1, 400, 1448, 0);
	data(&c, 1, 3400, 1448, 0); /* a pause at this RTT, the flight's TSecr, but no timer */
	VERDICT(c, 1, LIMIT_APP, 2, FF_END_NONE, FF_NEXT_NONE);
}

/* Rule 3 with TSecr: an application pause of 20 ms (under 1.5 RTTs: no timer) with the
 * flight's echo: the 4 after it went before any ACK reached the server, still flight 1. */
static void pause_ends_flight(void)
{
	struct conn c;
	handshake(&c, true, 100, 30 * MS);
	data(&c, 0, 30 * MS + 200, 100, 0);
	for (int i = 0; i < 4; i++)
		data(&c, 1, 31 * MS + (uint64_t)i * 20, 1448, 0);
	for (int i = 0; i < 4; i++) /* 20 ms later, no ACK yet: the app wrote more */
		data(&c, 1, 51 * MS + (uint64_t)i * 20, 1448, 0);
	VERDICT(c, 1, LIMIT_APP, 8, FF_END_NONE, FF_NEXT_NONE);
}

/* A burst after the flight: 5 segments, two ACKs, then 12 back to back a round trip later.
 * Slow start cannot more than double, so 5 was not the window (a real server's 206 reply). With
 * 10 then 20 it could be: that stays IW10. */
static void burst_is_not_the_window(void)
{
	struct conn c;
	handshake(&c, false, 70 * MS, 500);
	data(&c, 0, 71 * MS, 287, 0);
	for (int i = 0; i < 5; i++)
		data(&c, 1, 150 * MS + (uint64_t)i * 100, 1400, 0);
	ack(&c, 0, 151 * MS);
	for (int i = 0; i < 12; i++)
		data(&c, 1, 222 * MS + (uint64_t)i * 20, 1400, 0);
	ack(&c, 0, 223 * MS); /* acknowledges the second flight: what follows is the third */
	for (int i = 0; i < 30; i++)
		data(&c, 1, 224 * MS + (uint64_t)i * 20, 1400, 0);
	VERDICT(c, 1, LIMIT_APP, 5, FF_END_TIMING, FF_NEXT_BURST);
	handshake(&c, true, 30 * MS, 100);
	data(&c, 0, 31 * MS, 100, 0);
	for (int i = 0; i < 10; i++)
		data(&c, 1, 61 * MS + (uint64_t)i * 100, 1448, 0);
	ack(&c, 0, 62 * MS);
	for (int i = 0; i < 21; i++) /* 2 x 10 and one timer send */
		data(&c, 1, 91 * MS + (uint64_t)i * 100, 1448, 0);
	VERDICT(c, 1, LIMIT_CWND, 10, FF_END_TSECR, FF_NEXT_ACK);
	data(&c, 1, 91 * MS + 2200, 1448, 0); /* one more: 22 > 2 x 10 + 1 */
	VERDICT(c, 1, LIMIT_APP, 10, FF_END_TSECR, FF_NEXT_BURST);
}

/* Request-response: the server's next data came after the client's next request. */
static void request_response(void)
{
	struct conn c;
	handshake(&c, true, 30 * MS, 100);
	data(&c, 0, 31 * MS, 100, 0);
	data(&c, 1, 61 * MS, 1448, 0);
	data(&c, 0, 62 * MS, 100, 0);
	data(&c, 1, 92 * MS, 1448, 0);
	VERDICT(c, 1, LIMIT_APP, 1, FF_END_TSECR, FF_NEXT_REQUEST);
}

/* Ambiguous: no timestamps, a queue before the capture point spreads the flight over more
 * than the round trip and the next flight follows with no pause: a lower bound only. */
static void ambiguous_queue(void)
{
	struct conn c;
	handshake(&c, false, 30 * MS, 100);
	data(&c, 0, 31 * MS, 100, 0);
	for (int i = 0; i < 30; i++) {
		data(&c, 1, 61 * MS + (uint64_t)i * 6 * MS, 1460, 0);
		if (i == 0)
			ack(&c, 0, 61 * MS + 100);
	}
	/* A1 at 61.1 ms, boundary at 61.1 + 30 - 3 ms: segments up to 88.1 ms are counted */
	VERDICT(c, 1, LIMIT_AMBIGUOUS, 5, FF_END_TIMING, FF_NEXT_ACK);
}

/* Ambiguous: the handshake's RTT (a slow SYN-ACK, 80 ms) overstates the data's (30 ms):
 * rule 2 would merge three flights; the first silence that stands out bounds it. */
static void ambiguous_slow_synack(void)
{
	struct conn c;
	handshake(&c, false, 80 * MS, 100);
	data(&c, 0, 81 * MS, 100, 0);
	uint64_t t = 111 * MS;
	unsigned n = 4;
	for (int fl = 0; fl < 4; fl++, t += 30 * MS, n *= 2) {
		for (unsigned i = 0; i < n; i++) {
			data(&c, 1, t + i * 50, 1460, 0);
			if (fl == 0 && i == 0)
				ack(&c, 0, t + 60);
		}
	}
	VERDICT(c, 1, LIMIT_AMBIGUOUS, 4, FF_END_TIMING, FF_NEXT_ACK);
	/* the silence's count is kept out of line (a flight seldom has one), the client's flight
	 * without */
	CHECK(c.f.s.ff.gapped && !c.f.c.ff.gapped);
	CHECK_EQ_INT(ff_gap_segs(&c.f, &c.f.s.ff), 4);
	CHECK_EQ_INT(ff_gap_bytes(&c.f, &c.f.s.ff), 4 * 1460);
	CHECK_EQ_INT(ff_gap_segs(&c.f, &c.f.c.ff), 0);
	/* an IW1 sender: its first silence has no spacing to stand out of, a quarter RTT will do */
	handshake(&c, false, 80 * MS, 100);
	data(&c, 0, 81 * MS, 100, 0);
	t = 111 * MS;
	n = 1;
	for (int fl = 0; fl < 5; fl++, t += 30 * MS, n *= 2) {
		for (unsigned i = 0; i < n; i++) {
			data(&c, 1, t + i * 50, 1460, 0);
			if (fl == 0)
				ack(&c, 0, t + 60);
		}
	}
	VERDICT(c, 1, LIMIT_AMBIGUOUS, 1, FF_END_TIMING, FF_NEXT_ACK);
	/* with timestamps TSecr sees through it: exact */
	handshake(&c, true, 80 * MS, 100);
	data(&c, 0, 81 * MS, 100, 0);
	uint32_t before = c.last_tsval[0];
	for (unsigned i = 0; i < 4; i++)
		data(&c, 1, 111 * MS + i * 50, 1448, before);
	ack(&c, 0, 111 * MS + 250);
	for (unsigned i = 0; i < 8; i++)
		data(&c, 1, 141 * MS + i * 50, 1448, 0);
	VERDICT(c, 1, LIMIT_CWND, 4, FF_END_TSECR, FF_NEXT_ACK);
}

/* rwnd: the client's window (last segment before the data) holds four segments. */
static void rwnd_full(void)
{
	struct conn c;
	handshake(&c, true, 30 * MS, 100);
	c.win[0] = 4 * 1448; /* no window scale in these SYNs: the field is the window */
	data(&c, 0, 31 * MS, 100, 0);
	for (int i = 0; i < 4; i++)
		data(&c, 1, 61 * MS + (uint64_t)i * 100, 1448, 0);
	ack(&c, 0, 62 * MS);
	for (int i = 0; i < 8; i++)
		data(&c, 1, 91 * MS + (uint64_t)i * 100, 1448, 0);
	VERDICT(c, 1, LIMIT_RWND, 4, FF_END_TSECR, FF_NEXT_ACK);
}

/* Not rwnd: one more segment would not have fitted the window (a loopback window of one
 * segment), but the flight ended short and its next data waited for the client's request:
 * it stopped on its own. */
static void rwnd_but_app(void)
{
	struct conn c;
	handshake(&c, true, 30 * MS, 100);
	c.win[0] = 1448;
	data(&c, 0, 31 * MS, 100, 0);
	data(&c, 1, 61 * MS, 4, 0);
	data(&c, 0, 91 * MS, 100, 0);
	data(&c, 1, 121 * MS, 1448, 0);
	VERDICT(c, 1, LIMIT_APP, 1, FF_END_TSECR, FF_NEXT_REQUEST);
}


/* rwnd, though the next data came late: the receiver's application reads late, so its window
 * update (and S's next data) comes 150 ms after the flight, over 1.5 handshake RTTs; the
 * flight ended on a full segment, so S had more. */
static void rwnd_late_update(void)
{
	struct conn c;
	handshake(&c, true, 30 * MS, 100);
	c.win[0] = 4 * 1448;
	data(&c, 0, 31 * MS, 100, 0);
	for (int i = 0; i < 4; i++)
		data(&c, 1, 61 * MS + (uint64_t)i * 100, 1448, 0);
	c.win[0] = 0;
	ack(&c, 0, 62 * MS);           /* zero window: R's application has not read */
	c.win[0] = 4 * 1448;
	ack(&c, 0, 210 * MS);          /* window update once it reads */
	for (int i = 0; i < 4; i++)
		data(&c, 1, 211 * MS + (uint64_t)i * 100, 1448, 0);
	VERDICT(c, 1, LIMIT_RWND, 4, FF_END_TSECR, FF_NEXT_LATE);
}

/* Loss: flight-1 bytes sent again. */
static void loss_retransmission(void)
{
	struct conn c;
	handshake(&c, true, 30 * MS, 100);
	data(&c, 0, 31 * MS, 100, 0);
	for (int i = 0; i < 10; i++)
		data(&c, 1, 61 * MS + (uint64_t)i * 100, 1448, 0);
	c.nxt[1] -= 1448; /* the last one again */
	data(&c, 1, 300 * MS, 1448, 0);
	struct ff_verdict v;
	flight_verdict(&c.f, 1, &v);
	CHECK_EQ_INT(v.limit, LIMIT_LOSS);
}

/* Super-packets (TSO/GRO): a 3-segment packet counts 3 and ends on a full segment. */
static void super_packets(void)
{
	struct conn c;
	handshake(&c, true, 30 * MS, 100);
	data(&c, 0, 31 * MS, 100, 0);
	data(&c, 1, 61 * MS, 3 * 1448, 0);
	data(&c, 1, 61 * MS + 50, 7 * 1448, 0);
	ack(&c, 0, 62 * MS);
	data(&c, 1, 91 * MS, 4 * 1448, 0);
	VERDICT(c, 1, LIMIT_CWND, 10, FF_END_TSECR, FF_NEXT_ACK);
}

/* A TFO client's SYN at 0 with 120 bytes of data (MSS 1460, timestamps) and the server's
 * SYN-ACK at synack_us acknowledging them; the SYN's TSval. */
static uint32_t tfo_handshake(struct conn *c, uint64_t synack_us)
{
	conn_reset(c);
	c->f.first_us = T0; /* as the engine starts a flow: at its first packet */
	c->ts = true;
	c->nxt[0] = 1000;
	c->nxt[1] = 900000;
	c->win[0] = c->win[1] = 64240;
	struct pkt p = base(c, 0, 0, TH_SYN);
	p.seq = c->nxt[0];
	p.payload_len = 120;
	p.opt.present |= OPT_MSS | OPT_TFO;
	p.opt.mss = 1460;
	p.opt.tsecr = 0;
	c->nxt[0] += 1 + 120;
	feed(c, &p, 0);
	uint32_t syn_tsval = p.opt.tsval;
	p = base(c, 1, synack_us, TH_SYN | TH_ACK);
	p.seq = c->nxt[1]++;
	p.ack = c->nxt[0];
	p.opt.present |= OPT_MSS;
	p.opt.mss = 1460;
	feed(c, &p, 1);
	return syn_tsval;
}

/* TCP Fast Open: data on the SYN opens the client's flight; the SYN-ACK acknowledges it; the
 * server's data goes before the handshake's ACK, which acknowledges some of it. */
static void tfo(void)
{
	struct conn c;
	tfo_handshake(&c, 100);
	for (int i = 0; i < 10; i++)
		data(&c, 1, 120 + (uint64_t)i * 20, 1448, 0);
	ack(&c, 0, 30 * MS); /* the handshake's ACK, and A1 of the server's data */
	for (int i = 0; i < 20; i++)
		data(&c, 1, 30 * MS + 200 + (uint64_t)i * 20, 1448, 0);
	CHECK_EQ_INT(handshake_kind(&c.f), HS_COMPLETE);
	CHECK_GT_INT(flight_rtt(&c.f), 0);
	VERDICT(c, 0, LIMIT_APP, 1, FF_END_NONE, FF_NEXT_NONE);
	VERDICT(c, 1, LIMIT_CWND, 10, FF_END_TSECR, FF_NEXT_ACK);
	struct ff_verdict v;
	flight_verdict(&c.f, 0, &v);
	CHECK_EQ_INT(v.bytes, 120);
}

/* TFO next to the client: the server's 10 segments, sent on the SYN, echo the SYN's TSval and
 * pass after the client's handshake ACK; the client's first ACK of them carries the TSval of
 * that handshake ACK (one clock tick). What echoes it was sent after the server processed one
 * of them: the flight is 10 by TSecr, not a fall-back to timing. */
static void tfo_client_side(void)
{
	struct conn c;
	uint32_t syn_tsval = tfo_handshake(&c, 60 * MS);
	ack(&c, 0, 60 * MS + 70); /* the handshake's ACK */
	for (int i = 0; i < 10; i++) {
		data(&c, 1, 60 * MS + 800 + (uint64_t)i * 10, 1448, syn_tsval);
		ack(&c, 0, 60 * MS + 805 + (uint64_t)i * 10);
	}
	for (int i = 0; i < 20; i++)
		data(&c, 1, 121 * MS + (uint64_t)i * 10, 1448, 0);
	VERDICT(c, 1, LIMIT_CWND, 10, FF_END_TSECR, FF_NEXT_ACK);
	struct ff_verdict v;
	flight_verdict(&c.f, 1, &v);
	CHECK_EQ_INT(v.rule, RULE_TSECR);
}

/* The handshake tracker: retransmitted SYNs are counted, a new ISN on the tuple is reuse. */
static void handshake_cases(void)
{
	struct conn c;
	handshake(&c, true, 30 * MS, 100);
	CHECK_EQ_INT(handshake_kind(&c.f), HS_COMPLETE);
	CHECK_EQ_INT(flight_rtt_leg(&c.f, 1), (int64_t)(30 * MS));
	CHECK_EQ_INT(flight_rtt_leg(&c.f, 0), 100);
	struct pkt p = base(&c, 0, 1000 * MS, TH_SYN);
	p.seq = 1000; /* the first SYN's ISN: a retransmission */
	CHECK(!handshake_is_reuse(&c.f, &p, 0));
	p.seq = 777777;
	CHECK(handshake_is_reuse(&c.f, &p, 0));
	conn_reset(&c);
	c.f.first_us = T0;
	p = base(&c, 0, 0, TH_SYN);
	p.seq = 5;
	feed(&c, &p, 0);
	CHECK_EQ_INT(handshake_kind(&c.f), HS_SYN_ONLY);
	feed(&c, &p, 0);
	CHECK_EQ_INT(c.f.c.syn.retx, 1);
	p = base(&c, 1, 10, TH_RST | TH_ACK);
	feed(&c, &p, 1);
	CHECK_EQ_INT(handshake_kind(&c.f), HS_REFUSED);
}

/* The verdict's other fields: bytes, the segment size it counted with, the membership rule and
 * the silence before the next data (flight end by an ACK, then by a pause). */
/* A flight's times after its first are 32-bit offsets from it: exact within 35 minutes either
 * way (a capture's clock may step back), marked past that; a flight whose times were cut gets
 * no exact verdict. */
static void flight_time_offsets(void)
{
	struct flow fl;
	memset(&fl, 0, sizeof(fl));
	fl.first_us = T0 - 1000;
	struct first_flight *ff = &fl.s.ff;
	ff_set_first_us(&fl, ff, T0);
	CHECK(!ff->first_wide);
	CHECK_EQ_INT(ff_first_us(&fl, ff), T0);
	ff_set_last_us(&fl, ff, T0 - 5);
	ff_set_next_us(&fl, ff, T0 + 35 * 60000 * MS);
	CHECK(!ff->next_wide && !fl.wide);
	CHECK_EQ_INT(ff_last_us(&fl, ff), T0 - 5);
	CHECK_EQ_INT(ff_next_us(&fl, ff), T0 + 35 * 60000 * MS);
	CHECK(!ff->time_cut);
	ff_set_a1_us(&fl, ff, T0 + 36 * 60000 * MS);
	CHECK(ff->time_cut);
	CHECK_EQ_INT(ff_a1_us(&fl, ff), T0 + INT32_MAX);
	/* the flight's first packet and its next data are offsets from the flow's first packet and
	 * from the flight's: past +-35 minutes they are kept out of line, exact */
	ff_set_next_us(&fl, ff, T0 + 40 * 60000 * MS);
	CHECK(ff->next_wide && fl.wide);
	CHECK_EQ_INT(ff_next_us(&fl, ff), T0 + 40 * 60000 * MS);
	ff_set_next_us(&fl, ff, T0 - (uint64_t)INT32_MAX - 1); /* the edge: fits */
	CHECK(!ff->next_wide);
	CHECK_EQ_INT(ff_next_us(&fl, ff), T0 - (uint64_t)INT32_MAX - 1);
	struct first_flight *cf = &fl.c.ff;
	uint64_t back = T0 - 1000 - 2 * 3600 * 1000 * MS; /* two hours before the flow's first */
	ff_set_first_us(&fl, cf, back);
	CHECK(cf->first_wide && !ff->first_wide);
	CHECK_EQ_INT(ff_first_us(&fl, cf), back);
	CHECK_EQ_INT(ff_first_us(&fl, ff), T0);
	ff_set_last_us(&fl, cf, back + 7);
	ff_set_next_us(&fl, cf, back + 10);
	CHECK(!cf->next_wide && !cf->time_cut);
	CHECK_EQ_INT(ff_last_us(&fl, cf), back + 7);
	CHECK_EQ_INT(ff_next_us(&fl, cf), back + 10);
	CHECK(!fl.lost);
	flow_release(layouts(), &fl);
	/* an idle connection's next data 40 minutes on: its time is kept whole, the flight's app */
	struct conn c;
	handshake(&c, true, 100, 30 * MS);
	data(&c, 0, 30 * MS + 200, 100, 0);
	for (int i = 0; i < 4; i++)
		data(&c, 1, 31 * MS + (uint64_t)i * 20, 1000, 0);
	ack(&c, 0, 62 * MS);
	data(&c, 1, 40 * 60000 * MS, 1448, 0);
	CHECK(!c.f.s.ff.time_cut);
	struct ff_verdict v;
	flight_verdict(&c.f, 1, &v);
	CHECK_EQ_INT(v.limit, LIMIT_APP);
	CHECK_EQ_INT(v.pause_us, 40 * 60000 * MS - (31 * MS + 60));
	CHECK(c.f.s.ff.next_wide);
	conn_reset(&c);
	/* the first ACK of the flight 36 minutes on (a capture that missed the others): cut */
	handshake(&c, true, 100, 30 * MS);
	data(&c, 0, 30 * MS + 200, 100, 0);
	for (int i = 0; i < 4; i++)
		data(&c, 1, 31 * MS + (uint64_t)i * 20, 1448, 0);
	ack(&c, 0, 31 * MS + 36 * 60000 * MS);
	data(&c, 1, 31 * MS + 36 * 60000 * MS + 100, 1448, 0);
	CHECK(c.f.s.ff.time_cut);
	flight_verdict(&c.f, 1, &v);
	CHECK_EQ_INT(v.limit, LIMIT_AMBIGUOUS);
	CHECK_EQ_INT(v.pause_us, -1);
	conn_reset(&c);
}

/* A flow that could not keep out of line what did not fit inline (no memory for its wide: set
 * here by hand) says unknown where that was needed: no verdict, no counts, duration or
 * acknowledged-unseen bytes; the rest of its row stands. */
static void lost_flow_says_unknown(void)
{
	struct conn c;
	handshake(&c, true, 50 * MS, 100);
	data(&c, 0, 50 * MS + 200, 100, 0);
	for (int i = 0; i < 10; i++)
		data(&c, 1, 100 * MS + (uint64_t)i * 100, 1448, 0);
	ack(&c, 0, 101 * MS);
	data(&c, 1, 151 * MS, 1448, 0);
	VERDICT(c, 1, LIMIT_CWND, 10, FF_END_TSECR, FF_NEXT_ACK);
	struct flow_record r;
	record_build(layouts(), &c.f, NULL, &r);
	CHECK_EQ_INT(r.s.pkts, 12);
	CHECK_EQ_INT(r.s.iw_segs, 10);
	c.f.lost = true;
	VERDICT(c, 1, LIMIT_UNKNOWN, 0, FF_END_NONE, FF_NEXT_NONE);
	record_build(layouts(), &c.f, NULL, &r);
	CHECK_EQ_INT(r.s.pkts, NULL64);
	CHECK_EQ_INT(r.c.bytes, NULL64);
	CHECK_EQ_INT(r.duration_us, NULL64);
	CHECK_EQ_INT(r.s.acked_unseen, NULL64);
	CHECK_EQ_INT(r.s.iw_segs, NULL64);
	CHECK_EQ_INT(r.s.ff_start_us, NULL64);
	CHECK_EQ_INT(r.handshake, HS_COMPLETE);
	CHECK_EQ_INT(r.rtt_us, 50 * MS + 100);
	CHECK_EQ_INT(r.s.mss, 1460);
}

static void verdict_fields(void)
{
	struct conn c;
	struct ff_verdict v;
	/* by an ACK: 10 x 1448 (1460 less the 12 timestamp bytes) from 61.0 to 61.9 ms, the next
	 * flight at 91 ms */
	handshake(&c, true, 30 * MS, 100);
	data(&c, 0, 31 * MS, 100, 0);
	for (int i = 0; i < 10; i++)
		data(&c, 1, 61 * MS + (uint64_t)i * 100, 1448, 0);
	ack(&c, 0, 62 * MS);
	data(&c, 1, 91 * MS, 1448, 0);
	flight_verdict(&c.f, 1, &v);
	CHECK_EQ_INT(v.limit, LIMIT_CWND);
	CHECK_EQ_INT(v.segs, 10);
	CHECK_EQ_INT(v.bytes, 14480);
	CHECK_EQ_INT(v.smss, 1448);
	CHECK_EQ_INT(v.rule, RULE_TSECR);
	CHECK_EQ_INT(v.pause_us, 91 * MS - (61 * MS + 900));
	/* the client's request: one segment of 100 bytes, its own smss 1448, nothing after it */
	flight_verdict(&c.f, 0, &v);
	CHECK_EQ_INT(v.bytes, 100);
	CHECK_EQ_INT(v.segs, 1);
	CHECK_EQ_INT(v.smss, 1448);
	CHECK_EQ_INT(v.pause_us, -1);
	/* by a pause: 4 segments, 60 ms of silence with no ACK, then a timer send (its TSval 60
	 * ticks on) */
	handshake(&c, true, 100, 30 * MS);
	data(&c, 0, 30 * MS + 200, 100, 0);
	for (int i = 0; i < 4; i++)
		data(&c, 1, 31 * MS + (uint64_t)i * 20, 1448, 0);
	data(&c, 1, 91 * MS, 1448, 0);
	flight_verdict(&c.f, 1, &v);
	CHECK_EQ_INT(v.limit, LIMIT_CWND);
	CHECK_EQ_INT(v.end, FF_END_PAUSE);
	CHECK_EQ_INT(v.next, FF_NEXT_TIMER);
	CHECK_EQ_INT(v.segs, 4);
	CHECK_EQ_INT(v.bytes, 4 * 1448);
	CHECK_EQ_INT(v.pause_us, 91 * MS - (31 * MS + 60));
	/* nothing followed yet: the flight is open, no pause, the sender stopped on its own */
	handshake(&c, true, 30 * MS, 100);
	data(&c, 0, 31 * MS, 100, 0);
	for (int i = 0; i < 3; i++)
		data(&c, 1, 61 * MS + (uint64_t)i * 100, 1448, 0);
	flight_verdict(&c.f, 1, &v);
	CHECK_EQ_INT(v.limit, LIMIT_APP);
	CHECK_EQ_INT(v.segs, 3);
	CHECK_EQ_INT(v.next, FF_NEXT_NONE);
	CHECK_EQ_INT(v.end, FF_END_NONE);
	CHECK_EQ_INT(v.pause_us, -1);
}

/* --timing: a connection with timestamps decided by timing alone, seen next to the server
 * (its leg 2 ms of 30: nothing on the way could hold a tail). */
static void force_timing(void)
{
	struct conn c;
	handshake(&c, true, 2 * MS, 28 * MS);
	c.o.force_timing = true;
	data(&c, 0, 31 * MS, 100, 0);
	for (int i = 0; i < 10; i++)
		data(&c, 1, 31 * MS + 100 + (uint64_t)i * 100, 1448, 0);
	ack(&c, 0, 61 * MS);
	for (int i = 0; i < 20; i++)
		data(&c, 1, 63 * MS + (uint64_t)i * 100, 1448, 0);
	VERDICT(c, 1, LIMIT_CWND, 10, FF_END_TIMING, FF_NEXT_ACK);
	struct ff_verdict v;
	flight_verdict(&c.f, 1, &v);
	CHECK_EQ_INT(v.rule, RULE_TIMING);
	CHECK_EQ_INT(v.smss, 1448); /* the timestamps still take their 12 bytes of every segment */
}

/* Segments are counted from bytes, ceil(payload / smss) per packet: 2000 bytes at an smss of
 * 1460 are 2, then one of 1460: 3 segments, 3460 bytes, ending full. */
static void segments_from_bytes(void)
{
	struct conn c;
	handshake(&c, false, 2 * MS, 28 * MS); /* next to the server */
	data(&c, 0, 31 * MS, 100, 0);
	data(&c, 1, 31 * MS + 100, 2000, 0);
	data(&c, 1, 31 * MS + 200, 1460, 0);
	ack(&c, 0, 61 * MS);
	for (int i = 0; i < 6; i++)
		data(&c, 1, 63 * MS + (uint64_t)i * 100, 1460, 0);
	VERDICT(c, 1, LIMIT_CWND, 3, FF_END_TIMING, FF_NEXT_ACK);
	struct ff_verdict v;
	flight_verdict(&c.f, 1, &v);
	CHECK_EQ_INT(v.bytes, 3460);
	CHECK_EQ_INT(v.smss, 1460);
	CHECK_EQ_INT(v.rule, RULE_TIMING);
	/* a flight ending on a short segment with the next data on an ACK: Nagle, not cwnd */
	handshake(&c, false, 30 * MS, 100);
	data(&c, 0, 31 * MS, 100, 0);
	data(&c, 1, 61 * MS, 1460, 0);
	data(&c, 1, 61 * MS + 100, 700, 0);
	ack(&c, 0, 61 * MS + 200);
	data(&c, 1, 91 * MS, 1460, 0);
	VERDICT(c, 1, LIMIT_NAGLE, 2, FF_END_TIMING, FF_NEXT_ACK);
}

/* A side that sent no data has no flight (none); a flow whose roles were guessed, no verdict. */
static void no_data_and_unknown(void)
{
	struct conn c;
	handshake(&c, true, 30 * MS, 100);
	data(&c, 1, 31 * MS, 41, 0); /* a server that speaks first (an SSH banner) */
	struct ff_verdict v;
	flight_verdict(&c.f, 0, &v);
	CHECK_EQ_INT(v.limit, LIMIT_NONE);
	CHECK_EQ_INT(v.segs, 0);
	CHECK_EQ_INT(v.bytes, 0);
	CHECK_EQ_INT(v.rule, RULE_NONE);
	CHECK_EQ_INT(v.pause_us, -1);
	flight_verdict(&c.f, 1, &v);
	CHECK_EQ_INT(v.limit, LIMIT_APP);
	CHECK_EQ_INT(v.segs, 1);
	CHECK_EQ_INT(v.bytes, 41);
	c.f.roles_guessed = true;
	flight_verdict(&c.f, 1, &v);
	CHECK_EQ_INT(v.limit, LIMIT_UNKNOWN);
}


/* Late tails, next to the client (RTT 50 ms, 1 ms clocks): the server's 10 segments arrive
 * back to back at one TSval, echoing the request, and the client acknowledges the first two.
 * An 11th segment sent with them (the burst's TSval, the request's TSecr) was held on the way
 * (a Wi-Fi or cellular scheduler, a queue) and arrives alone; nothing follows. */
static void late_tail_burst(struct conn *c, uint32_t *req, uint32_t *burst)
{
	handshake(c, true, 50 * MS, 100);
	data(c, 0, 50 * MS + 200, 100, 0); /* the request */
	*req = c->last_tsval[0];
	uint32_t start = c->nxt[1];
	for (int i = 0; i < 10; i++)
		data(c, 1, 100 * MS + (uint64_t)i * 20, 1448, *req);
	*burst = c->last_tsval[1];
	ack_to(c, 0, 100 * MS + 250, start + 2 * 1448); /* A1: the first two */
}

/* Held 30 ms (under 1.5 RTTs): no timer fires that soon, so the server sent it before any ACK
 * reached it: flight 1 is 11 segments, a lower bound (nothing more came), not IW10. */
static void late_tail_held_under_timer(void)
{
	struct conn c;
	uint32_t req, burst;
	late_tail_burst(&c, &req, &burst);
	data_ts(&c, 1, 130 * MS + 180, 1448, burst, req);
	VERDICT(c, 1, LIMIT_APP, 11, FF_END_NONE, FF_NEXT_NONE);
}

/* Held 90 ms (past 1.5 RTTs and 10 ms): a timer could have sent it then, but it carries the
 * burst's TSval and the server's clock, 1 ms a tick since its SYN-ACK 50 ticks before, shows it
 * was sent with the burst, sooner than any timer: still flight 1. */
static void late_tail_sender_clock(void)
{
	struct conn c;
	uint32_t req, burst;
	late_tail_burst(&c, &req, &burst);
	data_ts(&c, 1, 190 * MS + 180, 1448, burst, req);
	VERDICT(c, 1, LIMIT_APP, 11, FF_END_NONE, FF_NEXT_NONE);
}

/* A real timer send: the same 90 ms silence, the flight's TSecr (no ACK reached the server),
 * but a TSval 90 ticks past the burst's: a tail-loss probe, the burst is IW10. */
static void late_tail_timer_send(void)
{
	struct conn c;
	uint32_t req, burst;
	late_tail_burst(&c, &req, &burst);
	data_ts(&c, 1, 190 * MS + 180, 1448, burst + 90, req);
	VERDICT(c, 1, LIMIT_CWND, 10, FF_END_PAUSE, FF_NEXT_TIMER);
}

/* Paced to the ACK, next to the server (RTT 60 ms, 1 ms clocks): 10 segments at once, then a
 * pair every 12 ms, until the client's first ACK comes back while the server is still sending;
 * the data after it echoes that ACK, 12 ticks after the last pair, as the pairs were. The ACK's
 * arrival, not the window, ended the 18: a lower bound (an IW32 paced at 2 Mbit/s read IW20).
 * Sent over half the round trip (3 ms apart) and then silent until the ACK: still IW10. */
static void paced_to_the_ack(void)
{
	for (int paced = 1; paced >= 0; paced--) {
		struct conn c;
		handshake(&c, true, 100, 60 * MS);
		data(&c, 0, 60 * MS + 200, 100, 0);
		int n = paced ? 18 : 10;
		for (int i = 0; i < n; i++) {
			uint64_t t = paced ? (i < 10 ? 61 * MS : 61 * MS + (uint64_t)((i - 8) / 2) * 12 * MS)
			                   : 61 * MS + (uint64_t)i * 3 * MS;
			data(&c, 1, t + (uint64_t)i * 10, 1448, 0);
		}
		ack(&c, 0, 121 * MS);
		for (int i = 0; i < 4; i++)
			data(&c, 1, 121 * MS + 100 + (uint64_t)i * 10, 1448, 0);
		if (paced)
			VERDICT(c, 1, LIMIT_AMBIGUOUS, 18, FF_END_TSECR, FF_NEXT_PACED);
		else
			VERDICT(c, 1, LIMIT_CWND, 10, FF_END_TSECR, FF_NEXT_ACK);
	}
}

/* Rule 2 contradicted by a pause (no timestamps): next to the client (server leg 50 ms), 4
 * segments, the client's ACK of the first, and 30 ms later more data: too soon after the ACK
 * for the ACK to have released it (it needs the 50 ms leg to reach the server), yet after a
 * silence of over half the RTT. A held tail, a timer, or a handshake slower than the data's
 * round trip: nothing shows which; the 4 segments before the pause are a lower bound. */
static void pause_against_rule2(void)
{
	struct conn c;
	handshake(&c, false, 50 * MS, 100);
	data(&c, 0, 50 * MS + 200, 100, 0);
	for (int i = 0; i < 4; i++) {
		data(&c, 1, 100 * MS + (uint64_t)i * 100, 1460, 0);
		if (i == 0)
			ack(&c, 0, 100 * MS + 50);
	}
	for (int i = 0; i < 4; i++)
		data(&c, 1, 130 * MS + (uint64_t)i * 100, 1460, 0);
	VERDICT(c, 1, LIMIT_AMBIGUOUS, 4, FF_END_PAUSE, FF_NEXT_ACK);
}

/* Timing under a 1 ms round trip (loopback, 40 us): two TSO super-packets of 5 segments with
 * the client's ACK between them. The client's 1 ms clock does not move, so rule 1 falls back
 * to timing (with timestamps too), and the sending host's own scheduling moves its packets by
 * more than such a round trip: no exact IW, the first super-packet is a lower bound. */
static void timing_under_1ms(void)
{
	for (int ts = 1; ts >= 0; ts--) {
		struct conn c;
		uint32_t seg = ts ? 1448 : 1460;
		handshake(&c, ts, 20, 20);
		data(&c, 0, 50, 100, 0);
		data(&c, 1, 100, 5 * seg, 0);
		ack(&c, 0, 110);
		data(&c, 1, 130, 5 * seg, 0);
		VERDICT(c, 1, LIMIT_AMBIGUOUS, 5, FF_END_TIMING, FF_NEXT_ACK);
		struct ff_verdict v;
		flight_verdict(&c.f, 1, &v);
		CHECK_EQ_INT(v.rule, RULE_TIMING);
	}
}

/* A busy host stretched the handshake past 1 ms (the client's ACK came 1.5 ms after the
 * SYN-ACK) while the data goes round in 40 us: the round trip the flight shows is what timing
 * is judged against. A super-packet of 8, the client's ACK, then the other 8 that the sender's
 * own scheduling held 869 us (the truth lab's veth pair with TSO, IW16): no exact IW8. */
static void timing_under_1ms_by_data(void)
{
	struct conn c;
	handshake(&c, false, 20, 1500);
	data(&c, 0, 1600, 100, 0);
	data(&c, 1, 1700, 8 * 1460, 0);
	ack(&c, 0, 1740);
	data(&c, 1, 1700 + 869, 8 * 1460, 0);
	ack(&c, 0, 2600);
	VERDICT(c, 1, LIMIT_AMBIGUOUS, 8, FF_END_TIMING, FF_NEXT_ACK);
	/* the same at a real millisecond round trip: released by the ACK, IW8 */
	handshake(&c, false, 20, 1500);
	data(&c, 0, 1600, 100, 0);
	data(&c, 1, 1700, 8 * 1460, 0);
	ack(&c, 0, 3200);
	data(&c, 1, 3220, 8 * 1460, 0);
	VERDICT(c, 1, LIMIT_CWND, 8, FF_END_TIMING, FF_NEXT_ACK);
}

/* One direction (an asymmetric route: only the server's packets, from its SYN-ACK on): n1
 * segments of len echoing the request's TSval (100050), then n2 at t2 echoing echo2 with the
 * ACK field moved by acked bytes (0: the client sent nothing new, the echo came from a pure
 * ACK). */
static void one_dir_flights(struct conn *c, bool ts, int n1, int n2, uint64_t t2, uint32_t echo2,
                            uint32_t acked)
{
	server_only(c, ts);
	c->nxt[0] += 100; /* the request the capture does not hold */
	for (int i = 0; i < n1; i++)
		data(c, 1, 50 * MS + (uint64_t)i * 100, 1448, 100050);
	c->nxt[0] += acked;
	for (int i = 0; i < n2; i++)
		data(c, 1, t2 + (uint64_t)i * 100, 1448, echo2);
}

/* The echo moved 50 ticks (the client's clock ticks 50 times a round trip) with the ACK field
 * unchanged: the server processed a pure ACK of its data, and its next flight is twice this
 * one (slow start; no receive window the capture cannot show stopped it): IW10 by rule echo. */
static void one_dir_echo(void)
{
	struct conn c;
	one_dir_flights(&c, true, 10, 20, 100 * MS, 100100, 0);
	VERDICT(c, 1, LIMIT_CWND, 10, FF_END_TSECR, FF_NEXT_ACK);
	struct ff_verdict v;
	flight_verdict(&c.f, 1, &v);
	CHECK_EQ_INT(v.rule, RULE_ECHO);
	CHECK_EQ_INT(v.smss, 1448); /* the client's MSS is not in the capture: the flight's own size */
}

/* One direction, then the receiver after all (the route came back): while the flight was seen
 * from one side, S's ACK field on its first data holds the place of R's TSval before S's data
 * (R had sent none: 0); once R is seen it is that 0 again, then A1's TSval. The flight is the
 * same as where R's packets were there all along but for the first 3 ms. */
static void one_dir_then_both(void)
{
	struct conn c;
	server_only(&c, true);
	c.nxt[0] += 100; /* the request the capture does not hold */
	for (int i = 0; i < 5; i++)
		data(&c, 1, 50 * MS + (uint64_t)i * 100, 1448, 100050);
	const struct first_flight *ff = &c.f.s.ff;
	CHECK(ff->one_dir && ff->rule == RULE_ECHO);
	CHECK_EQ_INT(ff->r_tsval, 1101); /* the ACK field: the client's ISN + 1 + 100 */
	/* the client's ACK of the request's answer, not yet of the server's data */
	ack_to(&c, 0, 50 * MS + 800, 900001);
	CHECK(!ff->one_dir && !ff->a1_seen && ff->state == FF_OPEN);
	CHECK_EQ_INT(ff->r_tsval, 0);
	ack(&c, 0, 51 * MS);
	CHECK(ff->a1_seen);
	CHECK_EQ_INT(ff->r_tsval, 100051); /* A1's TSval */
	data(&c, 1, 101 * MS, 1448, 100051);
	CHECK_EQ_INT(ff->state, FF_CLOSED);
	struct ff_verdict v;
	flight_verdict(&c.f, 1, &v);
	CHECK_EQ_INT(v.segs, 5);
	CHECK(v.rule != RULE_ECHO);
}

/* The echo moved 1 tick (a round trip of 1.5 ms, a 1 ms clock): a clock ticking about once a
 * round trip may have moved on any later packet of the client, so the echo does not show
 * where the flight ended: no verdict. */
static void one_dir_echo_one_tick(void)
{
	struct conn c;
	one_dir_flights(&c, true, 10, 20, 51 * MS + 500, 100051, 0);
	struct ff_verdict v;
	flight_verdict(&c.f, 1, &v);
	CHECK_EQ_INT(v.limit, LIMIT_UNKNOWN);
	CHECK_EQ_INT(v.rule, RULE_ECHO);
	CHECK_EQ_INT(v.segs, 0); /* no verdict carries no count (the fuzz target's invariant) */
	CHECK_EQ_INT(v.bytes, 0);
}

/* The ACK field moved with the echo: the client sent a new request, and the next flight may
 * answer it: no verdict. */
static void one_dir_new_request(void)
{
	struct conn c;
	one_dir_flights(&c, true, 10, 20, 100 * MS, 100100, 100);
	struct ff_verdict v;
	flight_verdict(&c.f, 1, &v);
	CHECK_EQ_INT(v.limit, LIMIT_UNKNOWN);
	CHECK_EQ_INT(v.rule, RULE_ECHO);
	CHECK_EQ_INT(v.next, FF_NEXT_REQUEST);
}

/* The next flight only 4 segments (under twice 10, less one): a receive window the capture
 * cannot show may have stopped both; a lower bound. */
static void one_dir_small_next(void)
{
	struct conn c;
	one_dir_flights(&c, true, 10, 4, 100 * MS, 100100, 0);
	VERDICT(c, 1, LIMIT_APP, 10, FF_END_TSECR, FF_NEXT_ACK);
}

/* One direction from the server's own host (TSO on): five super-packets of 2 x 1448 bytes
 * echoing the request, then ten more after a pure ACK: every packet a multiple of the
 * server's own full segment (its SYN-ACK's MSS, 1460, less the timestamp option), so counted
 * in it: IW10 by rule echo, smss 1448 (no size was sure before: a lower bound of 5). One packet
 * of another size (a 2000-byte write) and none is: a lower bound, never an exact IW. */
static void one_dir_super_packets(void)
{
	struct conn c;
	for (int ragged = 0; ragged < 2; ragged++) {
		server_only(&c, true);
		c.nxt[0] += 100;
		for (int i = 0; i < 5; i++)
			data(&c, 1, 50 * MS + (uint64_t)i * 100, ragged && i == 2 ? 2000 : 2896, 100050);
		for (int i = 0; i < 10; i++)
			data(&c, 1, 100 * MS + (uint64_t)i * 100, 2896, 100100);
		struct ff_verdict v;
		flight_verdict(&c.f, 1, &v);
		if (!ragged) {
			VERDICT(c, 1, LIMIT_CWND, 10, FF_END_TSECR, FF_NEXT_ACK);
			CHECK_EQ_INT(v.smss, 1448);
		} else {
			CHECK(v.limit == LIMIT_AMBIGUOUS);
			CHECK(v.segs <= 5);
		}
	}
}

/* A server alone whose SYN-ACK's MSS is 736 (a route's advmss) sends n packets of size bytes,
 * then, once the echo moved, next of them: never an exact verdict, never more than ten
 * segments (one_dir_super_second_read). */
static void mss736_two_flights(int n, uint32_t size, int next)
{
	struct conn c;
	server_only_mss(&c, true, 736);
	c.nxt[0] += 100;
	for (int i = 0; i < n; i++)
		data(&c, 1, 50 * MS + (uint64_t)i * 100, size, 100050);
	for (int i = 0; i < next; i++)
		data(&c, 1, 100 * MS + (uint64_t)i * 100, size, 100100);
	struct ff_verdict v;
	flight_verdict(&c.f, 1, &v);
	CHECK(v.limit != LIMIT_CWND);
	CHECK(v.segs <= 10);
}

/* Three sequences a second read found (each read exact before it was fixed): a timer ending
 * a flight of super-packets (its count was the packets': IW5 for IW10); a segment size guessed
 * from an application's equal writes, whose next flight's larger packets were counted by
 * their bytes over it (exact IW10 where an IW32 server wrote 10 KB then 20 KB); and a SYN-ACK
 * whose MSS (736, a route's advmss) understates the 1448-byte segments sent (exact IW20 in
 * segments of 724). */
static void one_dir_super_second_read(void)
{
	struct conn c;
	server_only(&c, true);
	c.nxt[0] += 100;
	for (int i = 0; i < 5; i++)
		data(&c, 1, 50 * MS + (uint64_t)i * 100, 2896, 100050);
	data(&c, 1, 200 * MS, 1448, 100050);
	VERDICT(c, 1, LIMIT_CWND, 10, FF_END_PAUSE, FF_NEXT_TIMER);

	server_only(&c, true);
	c.nxt[0] += 100;
	for (int i = 0; i < 10; i++)
		data(&c, 1, 50 * MS + (uint64_t)i * 100, 1000, 100050);
	for (int i = 0; i < 14; i++)
		data(&c, 1, 100 * MS + (uint64_t)i * 100, 1448, 100100);
	VERDICT(c, 1, LIMIT_APP, 10, FF_END_TSECR, FF_NEXT_ACK);

	mss736_two_flights(10, 1448, 20);
	/* ... and its TSO super-packets (a third read): every multiple of 1448 is one of 724, so
	 * an MSS of 736 says nothing of them: IW10 in five of 2896, never exact IW20 */
	mss736_two_flights(5, 2896, 10);
}

/* One direction: IW3 in 1448-byte segments, then its next flight as three super-packets of
 * 2896 bytes: six segments, twice the flight (its packets alone, three, said no more than a
 * window of the flight's size would have released: a lower bound). */
static void one_dir_super_next(void)
{
	struct conn c;
	one_dir_flights(&c, true, 3, 0, 100 * MS, 100100, 0);
	for (int i = 0; i < 3; i++)
		data(&c, 1, 100 * MS + (uint64_t)i * 100, 2896, 100100);
	VERDICT(c, 1, LIMIT_CWND, 3, FF_END_TSECR, FF_NEXT_ACK);
}

/* 4 full segments (5792 B) fit a 6 KB receive window (Linux <= 2.6.37: 5840), one more would
 * not: though the next flight is twice this one, the window the capture cannot show may have
 * stopped it; a lower bound. */
static void one_dir_six_kb(void)
{
	struct conn c;
	one_dir_flights(&c, true, 4, 8, 100 * MS, 100100, 0);
	VERDICT(c, 1, LIMIT_APP, 4, FF_END_TSECR, FF_NEXT_ACK);
}

/* Without timestamps one direction shows no ACK at all: no verdict. */
static void one_dir_no_timestamps(void)
{
	struct conn c;
	one_dir_flights(&c, false, 10, 20, 100 * MS, 0, 0);
	struct ff_verdict v;
	flight_verdict(&c.f, 1, &v);
	CHECK_EQ_INT(v.limit, LIMIT_UNKNOWN);
	CHECK_EQ_INT(v.rule, RULE_TIMING);
}

/* A hole the receiver acknowledges: next to the client, the capture missed the server's 10th
 * segment (a full capture buffer, a lossy span port), and the client's ACK covers it while the
 * flight is still open: where the flight ended is not shown: loss. */
static void hole_acked_by_receiver(void)
{
	struct conn c;
	handshake(&c, true, 50 * MS, 100);
	data(&c, 0, 50 * MS + 200, 100, 0);
	for (int i = 0; i < 9; i++)
		data(&c, 1, 100 * MS + (uint64_t)i * 100, 1448, 0);
	c.nxt[1] += 1448; /* the 10th: sent and received, not captured */
	ack(&c, 0, 101 * MS);
	VERDICT(c, 1, LIMIT_LOSS, 9, FF_END_NONE, FF_NEXT_NONE);
	for (int i = 0; i < 20; i++)
		data(&c, 1, 151 * MS + (uint64_t)i * 100, 1448, 0);
	VERDICT(c, 1, LIMIT_LOSS, 9, FF_END_TSECR, FF_NEXT_ACK);
	/* the hole the capture left, out of line with the server's holes: the client's ACK of it
	 * is what the row counts as acknowledged, never captured */
	CHECK(c.f.s.holed && !c.f.c.holed);
	CHECK_EQ_INT(flow_acked_unseen(&c.f, 1), 1448);
	CHECK_EQ_INT(flow_acked_unseen(&c.f, 0), 0);
	conn_reset(&c);
}

/* Byte counting: 8 packets of about 417 B (3338 B, client MSS 1460), then, released by the
 * client's ACK (echoing its TSval), one of 1297 B, which would have crossed RFC 3390's 4380 B:
 * a sender counting its window in bytes; its IW is 3 segments, not 8 packets. */
static void small_packets(struct conn *c, bool ts)
{
	handshake(c, ts, 50 * MS, 100);
	data(c, 0, 50 * MS + 200, 100, 0);
	for (int i = 0; i < 8; i++)
		data(c, 1, 100 * MS + (uint64_t)i * 100, i == 7 ? 419 : 417, 0);
	ack(c, 0, 101 * MS);
	data(c, 1, 151 * MS, 1297, 0);
}

static void byte_counting(void)
{
	struct conn c;
	small_packets(&c, true);
	VERDICT(c, 1, LIMIT_CWND, 3, FF_END_TSECR, FF_NEXT_ACK);
	struct ff_verdict v;
	flight_verdict(&c.f, 1, &v);
	CHECK_EQ_INT(v.bytes, 3338);
	CHECK_EQ_INT(v.smss, 1448);
	/* without timestamps nothing shows that the ACK released the 1297 B: a lower bound that
	 * either kind of sender had room for, ceil(3338 / 1460) */
	small_packets(&c, false);
	VERDICT(c, 1, LIMIT_NAGLE, 3, FF_END_TIMING, FF_NEXT_ACK);
	flight_verdict(&c.f, 1, &v);
	CHECK(v.limit == LIMIT_APP || v.limit == LIMIT_NAGLE);
	CHECK_LE_INT(v.segs, 3);
	/* Linux: a 300 B header then 9 full segments, 10 by packets and 10 by bytes: IW10 */
	handshake(&c, true, 50 * MS, 100);
	data(&c, 0, 50 * MS + 200, 100, 0);
	data(&c, 1, 100 * MS, 300, 0);
	for (int i = 1; i < 10; i++)
		data(&c, 1, 100 * MS + (uint64_t)i * 100, 1448, 0);
	ack(&c, 0, 101 * MS);
	for (int i = 0; i < 20; i++)
		data(&c, 1, 151 * MS + (uint64_t)i * 100, 1448, 0);
	VERDICT(c, 1, LIMIT_CWND, 10, FF_END_TSECR, FF_NEXT_ACK);
}

/* A snaplen cut the client's SYN before its window scale (the server's SYN-ACK offers one):
 * the scale is unknown, the client's window field of 3000 may be 3000 bytes (scale 0) or far
 * more. A 10 x 1448 flight released by an ACK does not fit under 3000: the window may have
 * stopped it, no exact IW. Under a field of 65535 a 4-segment flight fits at any scale: IW4. */
static void cut_window_scale(void)
{
	struct conn c;
	handshake_syns(&c, true, 50 * MS, 100, 1460, OPT_MSS | OPT_SACKOK, Q_OPT_CUT,
	               OPT_MSS | OPT_SACKOK | OPT_WS);
	c.win[0] = 3000;
	data(&c, 0, 50 * MS + 200, 100, 0);
	for (int i = 0; i < 10; i++)
		data(&c, 1, 100 * MS + (uint64_t)i * 100, 1448, 0);
	ack(&c, 0, 101 * MS);
	for (int i = 0; i < 20; i++)
		data(&c, 1, 151 * MS + (uint64_t)i * 100, 1448, 0);
	VERDICT(c, 1, LIMIT_AMBIGUOUS, 10, FF_END_TSECR, FF_NEXT_ACK);
	handshake_syns(&c, true, 50 * MS, 100, 1460, OPT_MSS | OPT_SACKOK, Q_OPT_CUT,
	               OPT_MSS | OPT_SACKOK | OPT_WS);
	c.win[0] = 65535;
	data(&c, 0, 50 * MS + 200, 100, 0);
	for (int i = 0; i < 4; i++)
		data(&c, 1, 100 * MS + (uint64_t)i * 100, 1448, 0);
	ack(&c, 0, 101 * MS);
	for (int i = 0; i < 8; i++)
		data(&c, 1, 151 * MS + (uint64_t)i * 100, 1448, 0);
	VERDICT(c, 1, LIMIT_CWND, 4, FF_END_TSECR, FF_NEXT_ACK);
}

/* Crafted: both SYNs seen whole without any option, no MSS (no real stack sends that: a
 * hand-made or rewritten capture). A clean-looking flight of 10 x 536 released by an ACK is
 * no exact IW. The same flight after SYNs with MSS 536 stays IW10. */
static void crafted_syns(void)
{
	for (int real = 0; real < 2; real++) {
		struct conn c;
		uint8_t opts = real ? OPT_MSS : 0;
		handshake_syns(&c, false, 2 * MS, 48 * MS, 536, opts, 0, opts); /* next to S */
		data(&c, 0, 50 * MS + 200, 100, 0);
		for (int i = 0; i < 10; i++)
			data(&c, 1, 50 * MS + 300 + (uint64_t)i * 100, 536, 0);
		ack(&c, 0, 100 * MS);
		for (int i = 0; i < 20; i++)
			data(&c, 1, 102 * MS + (uint64_t)i * 100, 536, 0);
		VERDICT(c, 1, real ? LIMIT_CWND : LIMIT_AMBIGUOUS, 10, FF_END_TIMING, FF_NEXT_ACK);
		struct ff_verdict v;
		flight_verdict(&c.f, 1, &v);
		CHECK_EQ_INT(v.smss, 536);
	}
}

void test_flight(void)
{
	lost_flow_says_unknown();
	one_dir_then_both();
	rule1_receiver_side();
	rule2_receiver_side();
	timing_under_1ms_by_data();
	nagle_header_then_body();
	timer_send_is_not_in_flight();
	timer_floor();
	pause_ends_flight();
	request_response();
	burst_is_not_the_window();
	ambiguous_queue();
	ambiguous_slow_synack();
	rwnd_full();
	rwnd_but_app();
	rwnd_late_update();
	loss_retransmission();
	super_packets();
	tfo();
	tfo_client_side();
	handshake_cases();
	flight_time_offsets();
	verdict_fields();
	force_timing();
	segments_from_bytes();
	no_data_and_unknown();
	late_tail_held_under_timer();
	late_tail_sender_clock();
	paced_to_the_ack();
	late_tail_timer_send();
	pause_against_rule2();
	timing_under_1ms();
	one_dir_echo();
	one_dir_super_packets();
	one_dir_super_next();
	one_dir_super_second_read();
	one_dir_echo_one_tick();
	one_dir_new_request();
	one_dir_small_next();
	one_dir_six_kb();
	one_dir_no_timestamps();
	hole_acked_by_receiver();
	byte_counting();
	cut_window_scale();
	crafted_syns();
	while (nwides)
		free(wides[--nwides]);
}
