/* flight: each sender's first flight and why it stopped (docs/METHOD.md). */
#ifndef IWSCOPE_FLIGHT_H
#define IWSCOPE_FLIGHT_H

#include <stdbool.h>

#include "flow.h"

struct flight_opts {
	bool force_timing; /* ignore timestamps: decide flight membership by timing alone */
};

/* Feeds p (sent in direction dir, 0 = client to server) to both directions' flight trackers:
 * as data for its sender's flight, as a possible first ACK for the other's. Call after
 * handshake_update and before the per-side counters are updated. */
void flight_update(struct flow *f, const struct pkt *p, int dir, const struct flight_opts *o);

/* The verdict on one sender's first flight, with the evidence behind it. */
struct ff_verdict {
	enum ff_limit limit;
	enum ff_rule rule;  /* membership rule; RULE_NONE without data */
	enum ff_end end;    /* what located the end */
	enum ff_next next;  /* what the next new data came after */
	uint32_t segs;      /* the count the verdict is about (a lower bound unless cwnd) */
	uint32_t bytes;
	uint16_t smss;      /* segment size used; 0 when unknown */
	int64_t pause_us;   /* silence before the next new data; -1 when none followed */
};

/* The verdict on the first flight of f's client (sender 0) or server (sender 1). */
void flight_verdict(const struct flow *f, int sender, struct ff_verdict *v);

/* Round trips at the vantage point, from the handshake, in microseconds; -1 when unknown, or
 * when the leg's SYN or SYN-ACK was sent again (Karn: no measurement).
 * leg 0 = vantage <-> client (SYN-ACK -> ACK), leg 1 = vantage <-> server (SYN -> SYN-ACK). */
int64_t flight_rtt_leg(const struct flow *f, int leg);
/* The leg as the capture timed it, retransmitted SYN or SYN-ACK or not (the row's rtt columns:
 * what the handshake took). */
int64_t handshake_leg(const struct flow *f, int leg);
int64_t flight_rtt(const struct flow *f);

/* S's own full segment: its SYN's MSS less a timestamp option where its data carry one (ts);
 * 0 where its SYN showed none. */
uint32_t flight_own_segment(const struct side *s, bool ts);

#endif
