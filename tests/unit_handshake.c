/* Unit tests of the handshake tracker (src/analysis/handshake.c) on hand-built packets: who is the client,
 * what each SYN advertised, when each step passed (and the RTT legs flight.c takes from them),
 * retransmitted SYNs and SYN-ACKs, outcomes, simultaneous open and port reuse. */
#include <string.h>

#include "flight.h"
#include "handshake.h"
#include "unit.h"

#define T0 (1700000000ull * 1000000ull)
#define C_ISN 1000u
#define S_ISN 900000u

/* A segment from dir (0 = client, port 40000; 1 = server, port 443) at t_us after T0. */
static struct pkt seg(int dir, uint64_t t_us, uint8_t flags, uint32_t seq, uint32_t ack)
{
	struct pkt p;
	memset(&p, 0, sizeof(p));
	p.ts_us = T0 + t_us;
	p.ip_ver = 4;
	p.ttl = dir ? 57 : 64;
	p.flags = flags;
	p.sport = dir ? 443 : 40000;
	p.dport = dir ? 40000 : 443;
	p.seq = seq;
	p.ack = ack;
	p.win = dir ? 65160 : 64240;
	p.tcp_hlen = 20;
	return p;
}

/* A SYN (or SYN-ACK) with the usual Linux options: mss, sok, ts, nop, ws. */
static void linux_options(struct pkt *p, uint16_t mss, uint8_t ws, uint32_t tsval)
{
	static const uint8_t layout[] = { 2, 4, 8, 1, 3 };
	p->opt.present = OPT_MSS | OPT_SACKOK | OPT_TS | OPT_WS;
	p->opt.mss = mss;
	p->opt.wscale = ws;
	p->opt.tsval = tsval;
	p->opt.layout_len = sizeof(layout);
	memcpy(p->opt.layout, layout, sizeof(layout));
	p->tcp_hlen = 40;
}

/* The table the flows' SYN option layouts are kept in (the flows themselves are not in it). */
static flow_table *layouts(void)
{
	static flow_table *t;
	if (!t)
		t = flow_table_new(16);
	return t;
}

/* A flow as the engine starts it: cleared, its first packet at T0. */
static void fresh(struct flow *f)
{
	memset(f, 0, sizeof(*f));
	f->first_us = T0;
}

static void feed(struct flow *f, const struct pkt *p, int dir)
{
	handshake_update(layouts(), f, p, dir);
}

/* SYN at 0, SYN-ACK at 30 ms, ACK at 30.2 ms, as next to the client. */
static void three_way(struct flow *f)
{
	fresh(f);
	struct pkt p = seg(0, 0, TH_SYN, C_ISN, 0);
	linux_options(&p, 1460, 7, 111);
	feed(f, &p, 0);
	p = seg(1, 30000, TH_SYN | TH_ACK, S_ISN, C_ISN + 1);
	linux_options(&p, 1400, 9, 222);
	p.opt.tsecr = 111;
	feed(f, &p, 1);
	p = seg(0, 30200, TH_ACK, C_ISN + 1, S_ISN + 1);
	feed(f, &p, 0);
}

static void which_end_is_the_client(void)
{
	struct pkt p = seg(0, 0, TH_SYN, 1, 0);
	CHECK(handshake_src_is_client(&p));
	p = seg(1, 0, TH_SYN | TH_ACK, 1, 2);
	CHECK(!handshake_src_is_client(&p));
	/* mid-stream: the end sending to the service port (below 1024) is the client */
	p = seg(0, 0, TH_ACK, 1, 2);
	CHECK(handshake_src_is_client(&p));
	p = seg(1, 0, TH_ACK, 1, 2);
	CHECK(!handshake_src_is_client(&p));
	/* both above 1024: the lower port is the likelier service */
	p.sport = 50000;
	p.dport = 8080;
	CHECK(handshake_src_is_client(&p));
	p.sport = 8080;
	p.dport = 50000;
	CHECK(!handshake_src_is_client(&p));
	/* a SYN names its sender the client whatever the ports say */
	p.flags = TH_SYN;
	CHECK(handshake_src_is_client(&p));
}

static void syn_options_recorded(void)
{
	struct flow f;
	three_way(&f);
	CHECK_EQ_INT(handshake_kind(&f), HS_COMPLETE);
	CHECK_EQ_INT(flow_time(&f, FT_C_SYN), T0);
	CHECK_EQ_INT(f.c.syn.win, 64240);
	CHECK_EQ_INT(f.c.syn.mss, 1460);
	CHECK_EQ_INT(f.c.syn.wscale, 7);
	CHECK_EQ_INT(f.c.syn.tsval, 111);
	CHECK_EQ_INT(f.c.syn.ttl, 64);
	CHECK_EQ_INT(f.c.syn.present, (OPT_MSS | OPT_SACKOK | OPT_TS | OPT_WS));
	const struct syn_layout *l = flow_layout(layouts(), &f, 0);
	CHECK_EQ_INT(l->len, 5);
	CHECK_EQ_INT(l->kinds[0], 2);
	CHECK_EQ_INT(l->kinds[4], 3);
	CHECK_EQ_INT(flow_layout(layouts(), &f, 1)->len, 5);
	CHECK_EQ_INT(f.c.syn.layout, f.s.syn.layout); /* one layout, kept once */
	flow_release(layouts(), &f);
	CHECK_EQ_INT(f.c.syn.retx, 0);
	CHECK_EQ_INT(f.c.syn.payload, 0);
	CHECK(f.c.isn_known);
	CHECK_EQ_INT(f.c.isn, C_ISN);
	CHECK_EQ_INT(flow_time(&f, FT_S_SYN), T0 + 30000);
	CHECK_EQ_INT(f.s.syn.win, 65160);
	CHECK_EQ_INT(f.s.syn.mss, 1400);
	CHECK_EQ_INT(f.s.syn.wscale, 9);
	CHECK_EQ_INT(f.s.syn.tsval, 222);
	CHECK_EQ_INT(f.s.syn.ttl, 57);
	CHECK(f.s.isn_known);
	CHECK_EQ_INT(f.s.isn, S_ISN);
	CHECK_EQ_INT(f.s.snd_max, S_ISN + 1);
	/* a SYN without options: none present, the window kept */
	fresh(&f);
	struct pkt p = seg(0, 0, TH_SYN, C_ISN, 0);
	p.win = 8192;
	feed(&f, &p, 0);
	CHECK_EQ_INT(f.c.syn.present, 0);
	CHECK_EQ_INT(flow_layout(layouts(), &f, 0)->len, 0);
	CHECK_EQ_INT(f.c.syn.layout, SYN_LAYOUT_EMPTY);
	CHECK_EQ_INT(f.c.syn.win, 8192);
}

/* The times of each step, and the round-trip legs at the vantage point built from them. */
static void times_and_rtt_legs(void)
{
	struct flow f;
	three_way(&f);
	CHECK_EQ_INT(flow_time(&f, FT_SYN), T0);
	CHECK_EQ_INT(flow_time(&f, FT_SYNACK), T0 + 30000);
	CHECK_EQ_INT(flow_time(&f, FT_ACK), T0 + 30200);
	CHECK_EQ_INT(flight_rtt_leg(&f, 1), 30000); /* vantage <-> server: SYN -> SYN-ACK */
	CHECK_EQ_INT(flight_rtt_leg(&f, 0), 200);   /* vantage <-> client: SYN-ACK -> ACK */
	CHECK_EQ_INT(flight_rtt(&f), 30200);
	/* without the ACK the client leg, and so the RTT, is unknown */
	fresh(&f);
	struct pkt p = seg(0, 0, TH_SYN, C_ISN, 0);
	feed(&f, &p, 0);
	p = seg(1, 500, TH_SYN | TH_ACK, S_ISN, C_ISN + 1);
	feed(&f, &p, 1);
	CHECK_EQ_INT(handshake_kind(&f), HS_NO_ACK);
	CHECK_EQ_INT(flight_rtt_leg(&f, 1), 500);
	CHECK_EQ_INT(flight_rtt_leg(&f, 0), -1);
	CHECK_EQ_INT(flight_rtt(&f), -1);
	/* an ACK that does not acknowledge the SYN-ACK completes nothing */
	p = seg(0, 700, TH_ACK, C_ISN + 1, S_ISN + 5000);
	feed(&f, &p, 0);
	CHECK_EQ_INT(flow_time(&f, FT_ACK), 0);
	CHECK_EQ_INT(handshake_kind(&f), HS_NO_ACK);
	/* the first data segment stands in for a lost pure ACK */
	p = seg(0, 900, TH_ACK | TH_PSH, C_ISN + 1, S_ISN + 1);
	p.payload_len = 100;
	feed(&f, &p, 0);
	CHECK_EQ_INT(flow_time(&f, FT_ACK), T0 + 900);
	CHECK_EQ_INT(handshake_kind(&f), HS_COMPLETE);
	CHECK_EQ_INT(flight_rtt_leg(&f, 0), 400);
	/* time going backwards (a SYN-ACK stamped before the SYN) gives no negative leg */
	fresh(&f);
	p = seg(0, 5000, TH_SYN, C_ISN, 0);
	feed(&f, &p, 0);
	p = seg(1, 1000, TH_SYN | TH_ACK, S_ISN, C_ISN + 1);
	feed(&f, &p, 1);
	CHECK_EQ_INT(flight_rtt_leg(&f, 1), -1);
}

/* Times too far from the flow's first packet for a 32-bit offset (a handshake hours after it, a
 * capture's clock stepping back hours): every time of the flow moves out of line, exact, and
 * the legs come out as they would from the times themselves. */
static void times_far_from_the_first_packet(void)
{
	struct flow f;
	fresh(&f); /* first packet at T0, the handshake two hours on */
	const uint64_t h2 = 2 * 3600 * 1000000ull;
	struct pkt p = seg(0, h2, TH_SYN, C_ISN, 0);
	linux_options(&p, 1460, 7, 111);
	feed(&f, &p, 0);
	CHECK(f.times_wide);
	CHECK_EQ_INT(flow_time(&f, FT_SYN), T0 + h2);
	CHECK_EQ_INT(flow_time(&f, FT_C_SYN), T0 + h2);
	CHECK_EQ_INT(flow_syn_time(&f, &f.c), T0 + h2);
	p = seg(1, h2 + 30000, TH_SYN | TH_ACK, S_ISN, C_ISN + 1);
	feed(&f, &p, 1);
	p = seg(0, h2 + 30200, TH_ACK, C_ISN + 1, S_ISN + 1);
	feed(&f, &p, 0);
	CHECK_EQ_INT(handshake_kind(&f), HS_COMPLETE);
	CHECK_EQ_INT(flow_time(&f, FT_SYNACK), T0 + h2 + 30000);
	CHECK_EQ_INT(flow_time(&f, FT_S_SYN), T0 + h2 + 30000);
	CHECK_EQ_INT(flow_time(&f, FT_ACK), T0 + h2 + 30200);
	CHECK_EQ_INT(flight_rtt_leg(&f, 1), 30000);
	CHECK_EQ_INT(flight_rtt_leg(&f, 0), 200);
	flow_release(layouts(), &f);
	/* two times in their offsets, then one two hours before the first packet: the two carried
	 * over exact beside it */
	fresh(&f);
	p = seg(0, 0, TH_SYN, C_ISN, 0);
	feed(&f, &p, 0);
	p = seg(1, 500, TH_SYN | TH_ACK, S_ISN, C_ISN + 1);
	feed(&f, &p, 1);
	CHECK(!f.times_wide && !f.wide);
	p = seg(0, 0, TH_ACK, C_ISN + 1, S_ISN + 1);
	p.ts_us = T0 - h2;
	feed(&f, &p, 0);
	CHECK(f.times_wide);
	CHECK_EQ_INT(flow_time(&f, FT_SYN), T0);
	CHECK_EQ_INT(flow_time(&f, FT_C_SYN), T0);
	CHECK_EQ_INT(flow_time(&f, FT_SYNACK), T0 + 500);
	CHECK_EQ_INT(flow_time(&f, FT_S_SYN), T0 + 500);
	CHECK_EQ_INT(flow_time(&f, FT_ACK), T0 - h2);
	CHECK_EQ_INT(flight_rtt_leg(&f, 1), 500);
	CHECK_EQ_INT(flight_rtt_leg(&f, 0), -1); /* the ACK stamped before the SYN-ACK */
	/* a time set to 0 is not seen (QUIC's Retry starts its handshake again so) */
	flow_set_time(&f, FT_ACK, 0);
	CHECK(!flow_seen(&f, FT_ACK));
	CHECK_EQ_INT(flow_time(&f, FT_ACK), 0);
	CHECK_EQ_INT(handshake_kind(&f), HS_NO_ACK);
	flow_release(layouts(), &f);
	CHECK(!f.wide);
	/* the edges of an offset: 2^31 - 1 us after the first packet fits, one more does not;
	 * -2^31 fits before it */
	fresh(&f);
	flow_set_time(&f, FT_SYN, T0 + INT32_MAX);
	flow_set_time(&f, FT_SYNACK, T0 - (uint64_t)INT32_MAX - 1);
	CHECK(!f.times_wide);
	CHECK_EQ_INT(flow_time(&f, FT_SYN), T0 + INT32_MAX);
	CHECK_EQ_INT(flow_time(&f, FT_SYNACK), T0 - (uint64_t)INT32_MAX - 1);
	flow_set_time(&f, FT_ACK, T0 + (uint64_t)INT32_MAX + 1);
	CHECK(f.times_wide);
	CHECK_EQ_INT(flow_time(&f, FT_ACK), T0 + (uint64_t)INT32_MAX + 1);
	CHECK_EQ_INT(flow_time(&f, FT_SYN), T0 + INT32_MAX);
	flow_release(layouts(), &f);
	/* a capture's time 0 is "not seen", as it always was */
	fresh(&f);
	f.first_us = 0;
	p = seg(0, 0, TH_SYN, C_ISN, 0);
	p.ts_us = 0;
	feed(&f, &p, 0);
	CHECK(!flow_seen(&f, FT_SYN) && !f.c.syn_seen);
	CHECK_EQ_INT(handshake_kind(&f), HS_NONE);
	flow_release(layouts(), &f);
	/* a SYN and its SYN-ACK share their offsets with the sides' SYN times: one offset each,
	 * nothing out of line */
	three_way(&f);
	CHECK(!f.times_wide && !f.wide);
	CHECK_EQ_INT(flow_time(&f, FT_C_SYN), flow_time(&f, FT_SYN));
	CHECK_EQ_INT(flow_time(&f, FT_S_SYN), flow_time(&f, FT_SYNACK));
	CHECK(flow_time(&f, FT_SYN) != flow_time(&f, FT_SYNACK));
	flow_release(layouts(), &f);
	/* one of a pair set to another time than the other (here by hand): both exact */
	fresh(&f);
	flow_set_time(&f, FT_SYN, T0 + 5);
	flow_set_time(&f, FT_C_SYN, T0 + 5);
	CHECK(!f.times_wide);
	flow_set_time(&f, FT_C_SYN, T0 + 6);
	CHECK(f.times_wide);
	CHECK_EQ_INT(flow_time(&f, FT_SYN), T0 + 5);
	CHECK_EQ_INT(flow_time(&f, FT_C_SYN), T0 + 6);
	flow_release(layouts(), &f);
	/* the one set first no longer seen: the other takes the offset alone */
	fresh(&f);
	flow_set_time(&f, FT_SYNACK, T0 + 5);
	flow_set_time(&f, FT_SYNACK, 0);
	flow_set_time(&f, FT_S_SYN, T0 + 9);
	CHECK(!f.times_wide);
	CHECK_EQ_INT(flow_time(&f, FT_S_SYN), T0 + 9);
	CHECK_EQ_INT(flow_time(&f, FT_SYNACK), 0);
}

/* The flow's last packet time is a 32-bit offset from its first (71 minutes); a flow that goes
 * on longer keeps it in wide, exact; a time before the latest changes nothing. */
static void last_packet_time(void)
{
	struct flow f;
	fresh(&f);
	CHECK_EQ_INT(flow_last_us(&f), T0);
	flow_saw(&f, T0 + 100);
	CHECK_EQ_INT(flow_last_us(&f), T0 + 100);
	flow_saw(&f, T0 + 50); /* a clock stepping back */
	CHECK_EQ_INT(flow_last_us(&f), T0 + 100);
	flow_saw(&f, T0 + UINT32_MAX);
	CHECK(!f.last_wide && !f.wide);
	CHECK_EQ_INT(flow_last_us(&f), T0 + UINT32_MAX);
	flow_saw(&f, T0 + (uint64_t)UINT32_MAX + 1);
	CHECK(f.last_wide && f.wide);
	CHECK_EQ_INT(flow_last_us(&f), T0 + (uint64_t)UINT32_MAX + 1);
	flow_saw(&f, T0 + 3 * 3600 * 1000000ull);
	CHECK_EQ_INT(flow_last_us(&f), T0 + 3 * 3600 * 1000000ull);
	flow_saw(&f, T0 + 1000);
	CHECK_EQ_INT(flow_last_us(&f), T0 + 3 * 3600 * 1000000ull);
	CHECK(!f.lost);
	flow_release(layouts(), &f);
	CHECK(!f.wide && !f.last_wide);
}

static void retransmitted_syns(void)
{
	struct flow f;
	fresh(&f);
	struct pkt p = seg(0, 0, TH_SYN, C_ISN, 0);
	linux_options(&p, 1460, 7, 111);
	feed(&f, &p, 0);
	CHECK_EQ_INT(handshake_kind(&f), HS_SYN_ONLY);
	/* the same ISN one and three seconds later: retransmissions, the first SYN's values kept */
	p = seg(0, 1000000, TH_SYN, C_ISN, 0);
	p.win = 1;
	feed(&f, &p, 0);
	p.ts_us = T0 + 3000000;
	feed(&f, &p, 0);
	CHECK_EQ_INT(f.c.syn.retx, 2);
	CHECK_EQ_INT(flow_time(&f, FT_C_SYN), T0);
	CHECK_EQ_INT(f.c.syn.win, 64240);
	CHECK_EQ_INT(flow_time(&f, FT_SYN), T0);
	/* the SYN-ACK twice: one retransmission; the first one's time is the handshake's */
	p = seg(1, 3030000, TH_SYN | TH_ACK, S_ISN, C_ISN + 1);
	feed(&f, &p, 1);
	p.ts_us = T0 + 4030000;
	feed(&f, &p, 1);
	CHECK_EQ_INT(f.s.syn.retx, 1);
	CHECK_EQ_INT(flow_time(&f, FT_SYNACK), T0 + 3030000);
	CHECK_EQ_INT(flight_rtt_leg(&f, 1), 3030000); /* from the first SYN: what the client waited */
	CHECK_EQ_INT(handshake_kind(&f), HS_NO_ACK);
}

static void outcomes(void)
{
	struct flow f;
	/* refused: the SYN answered by RST */
	fresh(&f);
	struct pkt p = seg(0, 0, TH_SYN, C_ISN, 0);
	feed(&f, &p, 0);
	p = seg(1, 100, TH_RST | TH_ACK, 0, C_ISN + 1);
	feed(&f, &p, 1);
	CHECK(f.s.rst && !f.c.rst);
	CHECK_EQ_INT(handshake_kind(&f), HS_REFUSED);
	/* first seen at the SYN-ACK */
	fresh(&f);
	p = seg(1, 0, TH_SYN | TH_ACK, S_ISN, C_ISN + 1);
	feed(&f, &p, 1);
	CHECK_EQ_INT(handshake_kind(&f), HS_NO_SYN);
	CHECK_EQ_INT(f.s.isn, S_ISN);
	CHECK_EQ_INT(flow_time(&f, FT_SYNACK), T0);
	CHECK_EQ_INT(flow_time(&f, FT_SYN), 0);
	/* first seen mid-stream: no handshake at all, a FIN noted */
	fresh(&f);
	p = seg(1, 0, TH_ACK | TH_FIN, 5, 6);
	feed(&f, &p, 1);
	CHECK_EQ_INT(handshake_kind(&f), HS_NONE);
	CHECK(f.s.fin && !f.c.fin && !f.s.isn_known);
	/* simultaneous open (RFC 9293 3.5 figure 8): both send a bare SYN, then SYN-ACKs */
	fresh(&f);
	p = seg(0, 0, TH_SYN, C_ISN, 0);
	feed(&f, &p, 0);
	p = seg(1, 10, TH_SYN, S_ISN, 0);
	CHECK(!handshake_is_reuse(&f, &p, 1)); /* the other end's own SYN is not a new connection */
	feed(&f, &p, 1);
	CHECK_EQ_INT(handshake_kind(&f), HS_SIMULTANEOUS);
	CHECK_EQ_INT(f.s.isn, S_ISN);
	CHECK_EQ_INT(flow_time(&f, FT_S_SYN), T0 + 10);
	p = seg(1, 20, TH_SYN | TH_ACK, S_ISN, C_ISN + 1);
	feed(&f, &p, 1);
	CHECK_EQ_INT(flow_time(&f, FT_SYNACK), T0 + 20);
	/* the server's SYN and its SYN-ACK share an offset but here differ: both kept, exact */
	CHECK(f.times_wide);
	CHECK_EQ_INT(flow_time(&f, FT_S_SYN), T0 + 10);
	CHECK_EQ_INT(flow_time(&f, FT_SYN), T0);
	CHECK_EQ_INT(flow_time(&f, FT_C_SYN), T0);
	CHECK_EQ_INT(flow_time(&f, FT_ACK), 0);
	p = seg(0, 30, TH_SYN | TH_ACK, C_ISN, S_ISN + 1);
	feed(&f, &p, 0);
	CHECK_EQ_INT(flow_time(&f, FT_ACK), T0 + 30);
	flow_release(layouts(), &f);
}

/* TCP Fast Open (RFC 7413): data on the SYN; the handshake's ACK may acknowledge the server's
 * data sent before it. */
static void fast_open(void)
{
	struct flow f;
	fresh(&f);
	struct pkt p = seg(0, 0, TH_SYN, C_ISN, 0);
	linux_options(&p, 1460, 7, 111);
	p.opt.present |= OPT_TFO;
	p.payload_len = 120;
	feed(&f, &p, 0);
	CHECK_EQ_INT(f.c.syn.payload, 120);
	CHECK_EQ_INT(f.c.snd_max, C_ISN + 1 + 120);
	CHECK(f.c.syn.present & OPT_TFO);
	p = seg(1, 100, TH_SYN | TH_ACK, S_ISN, C_ISN + 121);
	feed(&f, &p, 1);
	/* an ACK of data the server has not sent completes nothing */
	p = seg(0, 30000, TH_ACK, C_ISN + 121, S_ISN + 1 + 1448);
	feed(&f, &p, 0);
	CHECK_EQ_INT(flow_time(&f, FT_ACK), 0);
	/* the server's data goes out before the client's ACK (the engine's side counters move
	 * snd_max); the ACK that acknowledges some of it completes the handshake */
	struct pkt d = seg(1, 200, TH_ACK, S_ISN + 1, C_ISN + 121);
	d.payload_len = 1448;
	feed(&f, &d, 1);
	flow_side_update(&f, 1, &d);
	CHECK_EQ_INT(f.s.snd_max, S_ISN + 1 + 1448);
	feed(&f, &p, 0);
	CHECK_EQ_INT(flow_time(&f, FT_ACK), T0 + 30000);
	CHECK_EQ_INT(handshake_kind(&f), HS_COMPLETE);
}

static void port_reuse(void)
{
	struct flow f;
	three_way(&f);
	struct pkt p = seg(0, 60000000, TH_SYN, C_ISN, 0);
	CHECK(!handshake_is_reuse(&f, &p, 0)); /* the first SYN's ISN: a retransmission */
	p.seq = 777777;
	CHECK(handshake_is_reuse(&f, &p, 0)); /* a new ISN on the same tuple: a new connection */
	/* a SYN-ACK with a new ISN is a new connection only once the old one closed */
	p = seg(1, 60000000, TH_SYN | TH_ACK, S_ISN + 99999, 777778);
	CHECK(!handshake_is_reuse(&f, &p, 1));
	struct pkt fin = seg(0, 50000000, TH_ACK | TH_FIN, C_ISN + 1, S_ISN + 1);
	feed(&f, &fin, 0);
	CHECK(f.c.fin);
	CHECK(handshake_is_reuse(&f, &p, 1));
	/* the same SYN-ACK again is not */
	p.seq = S_ISN;
	CHECK(!handshake_is_reuse(&f, &p, 1));
	/* data and pure ACKs never open a connection */
	p = seg(0, 60000000, TH_ACK, 5, 6);
	CHECK(!handshake_is_reuse(&f, &p, 0));
}

/* A side's packets and bytes are 32-bit in the flow; past that they move to wide, exact (a
 * connection of over 4 GiB, or 2^32 packets, cannot be captured here cheaply: the counts are
 * set just below the edge). */
static void counts_past_32_bits(void)
{
	struct flow f;
	fresh(&f);
	flow_count_sent(&f, &f.s, 1448);
	CHECK(!f.s.counts_wide && !f.wide);
	CHECK_EQ_INT(flow_pkts(&f, &f.s), 1);
	CHECK_EQ_INT(flow_bytes(&f, &f.s), 1448);
	/* bytes: the last that fit, then one more */
	f.s.bytes = UINT32_MAX - 1448;
	flow_count_sent(&f, &f.s, 1448);
	CHECK(!f.s.counts_wide);
	CHECK_EQ_INT(flow_bytes(&f, &f.s), UINT32_MAX);
	flow_count_sent(&f, &f.s, 1);
	CHECK(f.s.counts_wide && f.wide);
	CHECK_EQ_INT(flow_bytes(&f, &f.s), (uint64_t)UINT32_MAX + 1);
	CHECK_EQ_INT(flow_pkts(&f, &f.s), 3);
	flow_count_sent(&f, &f.s, 65000);
	CHECK_EQ_INT(flow_bytes(&f, &f.s), (uint64_t)UINT32_MAX + 65001);
	CHECK_EQ_INT(flow_pkts(&f, &f.s), 4);
	CHECK(f.s.pkts != 0);
	/* the client's still inline beside them */
	flow_count_sent(&f, &f.c, 0);
	CHECK(!f.c.counts_wide);
	CHECK_EQ_INT(flow_pkts(&f, &f.c), 1);
	CHECK_EQ_INT(flow_bytes(&f, &f.c), 0);
	/* packets: 2^32 - 1 fit, the next one moves them */
	f.c.pkts = UINT32_MAX - 1;
	flow_count_sent(&f, &f.c, 10);
	CHECK(!f.c.counts_wide);
	flow_count_sent(&f, &f.c, 10);
	CHECK(f.c.counts_wide);
	CHECK_EQ_INT(flow_pkts(&f, &f.c), (uint64_t)UINT32_MAX + 1);
	CHECK_EQ_INT(flow_bytes(&f, &f.c), 20);
	CHECK(!f.lost);
	/* the row reads them so (engine-built rows count through flow_side_update) */
	struct pkt d = seg(1, 10, TH_ACK, S_ISN + 1, C_ISN + 1);
	d.payload_len = 100;
	flow_side_update(&f, 1, &d);
	CHECK_EQ_INT(flow_bytes(&f, &f.s), (uint64_t)UINT32_MAX + 65101);
	flow_release(layouts(), &f);
	CHECK(!f.wide);
}

/* The sequence a side skipped: none inline (all zero), the first hole moves it to wide, where
 * it is followed as before: filled from below, partly filled, and what the peer acknowledged of
 * it counted as never captured. */
static void holes_out_of_line(void)
{
	struct flow f;
	fresh(&f);
	struct pkt p = seg(0, 0, TH_SYN, C_ISN, 0);
	feed(&f, &p, 0);
	flow_side_update(&f, 0, &p);
	p = seg(1, 100, TH_SYN | TH_ACK, S_ISN, C_ISN + 1);
	feed(&f, &p, 1);
	flow_side_update(&f, 1, &p);
	/* the server's first 1000 bytes, then a gap of 1000, then 1000 more */
	p = seg(1, 200, TH_ACK, S_ISN + 1, C_ISN + 1);
	p.payload_len = 1000;
	flow_side_update(&f, 1, &p);
	CHECK(!f.s.holed && !f.wide);
	CHECK_EQ_INT(flow_holes(&f, &f.s)->hi, 0);
	p.seq = S_ISN + 2001;
	flow_side_update(&f, 1, &p);
	CHECK(f.s.holed && !f.c.holed);
	const struct side_holes *h = flow_holes(&f, &f.s);
	CHECK_EQ_INT(h->lo, S_ISN + 1001);
	CHECK_EQ_INT(h->hi, S_ISN + 2001);
	CHECK_EQ_INT(h->mark, S_ISN + 1001);
	CHECK_EQ_INT(h->unseen, 0);
	/* the client acknowledges all of it: 1000 bytes it had, the capture never showed */
	struct pkt a = seg(0, 300, TH_ACK, C_ISN + 1, S_ISN + 3001);
	flow_side_update(&f, 0, &a);
	CHECK_EQ_INT(flow_acked_unseen(&f, 1), 1000);
	CHECK_EQ_INT(flow_acked_unseen(&f, 0), 0);
	/* the hole's lower half comes (a retransmission): 500 left */
	p.seq = S_ISN + 1001;
	p.payload_len = 500;
	flow_side_update(&f, 1, &p);
	CHECK_EQ_INT(h->lo, S_ISN + 1501);
	CHECK_EQ_INT(flow_acked_unseen(&f, 1), 500);
	/* a new hole beyond: the old one's rest counts as unseen below it */
	p.seq = S_ISN + 4001;
	p.payload_len = 100;
	flow_side_update(&f, 1, &p);
	CHECK_EQ_INT(h->unseen, 500);
	CHECK_EQ_INT(h->lo, S_ISN + 3001);
	CHECK_EQ_INT(h->hi, S_ISN + 4001);
	a.ack = S_ISN + 4101;
	flow_side_update(&f, 0, &a);
	CHECK_EQ_INT(flow_acked_unseen(&f, 1), 1500);
	flow_release(layouts(), &f);
}

void test_handshake(void)
{
	counts_past_32_bits();
	holes_out_of_line();
	which_end_is_the_client();
	syn_options_recorded();
	times_and_rtt_legs();
	times_far_from_the_first_packet();
	last_packet_time();
	retransmitted_syns();
	outcomes();
	fast_open();
	port_reuse();
}
