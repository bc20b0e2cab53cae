/* libFuzzer target: the handshake and first-flight trackers, driven by the packets of one
 * connection. The input is a sequence of 16-byte records, one packet each:
 *   0 dir (bit 0) and options (bit 1 TS, bit 2 MSS, bit 3 WS, bit 4 SACK block)
 *   1 TCP flags           2-3 time since the previous packet, 10 us units
 *   4-5 sequence: offset from the sender's next byte (signed)
 *   6-7 ack: offset from the other side's next byte (signed)
 *   8-9 payload length (mod 9001)   10-11 window   12 TSval step   13 TSecr: 0 echo, else back
 *   14 MSS / 8 (0: 1460)            15 window scale
 * The verdicts of both senders must hold what flight.h promises, whatever the order. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "flight.h"
#include "handshake.h"

static uint16_t be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

static void check(const struct flow *f, int sender, uint64_t sent)
{
	struct ff_verdict v;
	flight_verdict(f, sender, &v);
	if (v.limit > LIMIT_AMBIGUOUS || v.end > FF_END_PAUSE || v.next > FF_NEXT_PACED)
		__builtin_trap();
	if (v.limit == LIMIT_UNKNOWN || v.limit == LIMIT_NONE) {
		if (v.segs || v.bytes)
			__builtin_trap();
		return;
	}
	/* a flight holds at least one byte, no more than was sent, at most a segment per byte; an
	 * exact count has a segment size (none is shown where S's packets were larger than its own
	 * MSS: super-packets, a lower bound) */
	if (!v.bytes || v.bytes > sent || !v.segs || v.segs > v.bytes ||
	    (!v.smss && v.limit == LIMIT_CWND))
		__builtin_trap();
	if (v.limit == LIMIT_CWND && v.next != FF_NEXT_ACK && v.next != FF_NEXT_TIMER)
		__builtin_trap();
	/* a next flight over twice this one: the window had not stopped it */
	if (v.next == FF_NEXT_BURST && v.limit != LIMIT_APP)
		__builtin_trap();
	/* still sending when the ACK came: the window did not end it */
	if (v.next == FF_NEXT_PACED && v.limit != LIMIT_AMBIGUOUS)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct flow f;
	static flow_table *layouts; /* where the SYNs' option layouts are kept */
	if (!layouts && !(layouts = flow_table_new(16)))
		return 0;
	memset(&f, 0, sizeof(f));
	struct flight_opts o = { .force_timing = size % 7 == 0 };
	uint32_t nxt[2] = { 1000, 5000000 }, tsval[2] = { 100, 900 };
	uint64_t t = 1700000000ull * 1000000ull, sent[2] = { 0, 0 };
	f.first_us = t; /* a long input takes the times past their offsets: flow_release frees them */
	for (size_t off = 0; off + 16 <= size; off += 16) {
		const uint8_t *r = data + off;
		int dir = r[0] & 1;
		struct pkt p;
		memset(&p, 0, sizeof(p));
		t += (uint64_t)be16(r + 2) * 10;
		p.ts_us = t;
		p.ip_ver = 4;
		p.flags = r[1];
		p.sport = dir ? 80 : 40000;
		p.dport = dir ? 40000 : 80;
		p.seq = nxt[dir] + (uint32_t)(int16_t)be16(r + 4);
		p.ack = nxt[1 - dir] + (uint32_t)(int16_t)be16(r + 6);
		p.payload_len = be16(r + 8) % 9001u;
		p.win = be16(r + 10);
		if (r[0] & 2) {
			p.opt.present |= OPT_TS;
			tsval[dir] += r[12];
			p.opt.tsval = tsval[dir];
			p.opt.tsecr = tsval[1 - dir] - r[13];
		}
		if (r[0] & 4) {
			p.opt.present |= OPT_MSS;
			p.opt.mss = r[14] ? (uint16_t)(r[14] * 8) : 1460;
		}
		if (r[0] & 8) {
			p.opt.present |= OPT_WS;
			p.opt.wscale = r[15];
		}
		if (r[0] & 16) {
			p.opt.present |= OPT_SACK;
			p.opt.nsack = 1;
			p.opt.sack_left[0] = p.ack + 1448;
			p.opt.sack_right[0] = p.ack + 2896;
		}
		if ((int32_t)(p.seq + p.payload_len - nxt[dir]) > 0)
			nxt[dir] = p.seq + p.payload_len + ((p.flags & TH_SYN) ? 1 : 0);
		sent[dir] += p.payload_len;
		handshake_update(layouts, &f, &p, dir);
		flight_update(&f, &p, dir, &o);
		flow_side_update(&f, dir, &p);
	}
	check(&f, 0, sent[0]);
	check(&f, 1, sent[1]);
	(void)handshake_kind(&f);
	flow_release(layouts, &f);
	return 0;
}
