/* First flights, the method of INFERENCE.md. For a sender S and its receiver R:
 * - a segment of S is in flight 1 until R's first ACK of S's data (A1) could have released
 *   more: by TSecr (RFC 7323) when both SYNs negotiated timestamps, else by timing with the
 *   vantage-to-S round trip from the handshake;
 * - segments are ceil(payload / smss) per new-data packet (senders count cwnd in packets);
 * - the flight stopped for cwnd, rwnd, app or loss, judged when the flow is written. */
#include "flight.h"

#include "config.h"

/* Serial-number comparison (RFC 1982) for 32-bit sequence numbers and timestamps. */
static int32_t sdiff(uint32_t a, uint32_t b) { return (int32_t)(a - b); }

int64_t flight_rtt_leg(const struct flow *f, int leg)
{
	if (leg == 0)
		return (f->synack_us && f->ack_us && f->ack_us >= f->synack_us)
		               ? (int64_t)(f->ack_us - f->synack_us) : -1;
	return (f->syn_us && f->synack_us && f->synack_us >= f->syn_us)
	               ? (int64_t)(f->synack_us - f->syn_us) : -1;
}

int64_t flight_rtt(const struct flow *f)
{
	int64_t c = flight_rtt_leg(f, 0), s = flight_rtt_leg(f, 1);
	return (c >= 0 && s >= 0) ? c + s : -1;
}

/* R's MSS option, 536 when R's SYN was seen whole without one, 0 when unknown. */
static uint16_t receiver_mss(const struct side *r)
{
	if (!r->syn.ts_us)
		return 0;
	if (r->syn.present & OPT_MSS)
		return r->syn.mss;
	return (r->syn.quirks & Q_OPT_CUT) ? 0 : DEFAULT_MSS;
}

static bool ts_negotiated(const struct flow *f)
{
	return (f->c.syn.present & OPT_TS) && (f->s.syn.present & OPT_TS);
}

/* S's first new data: snapshot what R had said before it. */
static void flight_open(struct first_flight *ff, const struct side *r, const struct pkt *p)
{
	ff->state = FF_OPEN;
	ff->first_us = p->ts_us;
	ff->r_ts_before = r->ts_seen;
	ff->r_tsval_before = r->last_tsval;
	ff->rwnd_known = r->win_known;
	ff->rwnd_field = r->last_win;
	ff->rwnd_from_syn = r->win_is_syn;
	uint16_t mss = receiver_mss(r);
	uint16_t opt = (p->opt.present & OPT_TS) ? 12 : 0; /* TS option, padded, in every segment */
	ff->smss = mss > opt ? (uint16_t)(mss - opt) : 0;
}

/* Is S's new-data packet p still in flight 1? */
static bool in_flight1(const struct flow *f, const struct first_flight *ff, int sender,
                       const struct pkt *p)
{
	if (!ff->a1_seen)
		return true; /* nothing had acknowledged S's data yet at the vantage point */
	if (ff->rule == RULE_TSECR && (p->opt.present & OPT_TS))
		return sdiff(p->opt.tsecr, ff->a1_tsval) < 0;
	/* timing: A1 reaches S after one vantage<->S leg; new data released by it comes back
	 * to the vantage point no earlier than t(A1) + leg. */
	int64_t leg = flight_rtt_leg(f, sender == 1 ? 1 : 0);
	int64_t rtt = flight_rtt(f);
	if (leg < 0)
		leg = 0;
	int64_t tol = rtt > 0 ? rtt / FLIGHT_TOL_DIV : 0;
	return (int64_t)p->ts_us < (int64_t)ff->a1_us + leg - tol;
}

/* p is from S (index sender): new data, retransmission or hole for S's flight. */
static void sender_packet(struct flow *f, struct side *s, const struct side *r, int sender,
                          const struct pkt *p)
{
	struct first_flight *ff = &s->ff;
	if (!s->isn_known || p->payload_len == 0 || (p->flags & TH_SYN))
		return;
	uint32_t rel = p->seq - (s->isn + 1);
	uint32_t end = rel + p->payload_len;
	if (sdiff(rel, 0) < 0) {
		if (ff->state == FF_OPEN)
			ff->loss = true;
		return;
	}
	if (ff->state == FF_WAIT) {
		flight_open(ff, r, p);
		ff->snd_nxt = 0;
	}
	uint32_t fl_end = ff->state == FF_OPEN ? ff->snd_nxt : ff->fl_end;
	if (sdiff(end, ff->snd_nxt) <= 0) { /* nothing new: a retransmission */
		if (sdiff(rel, fl_end) < 0)
			ff->loss = true; /* flight-1 bytes sent again: lost (or their ACKs were) */
		return;
	}
	bool hole = sdiff(rel, ff->snd_nxt) > 0;
	uint32_t newlen = hole ? p->payload_len : end - ff->snd_nxt;
	if (ff->state == FF_OPEN) {
		if (in_flight1(f, ff, sender, p)) {
			/* a gap, or old bytes repacketized with new ones, inside flight 1 */
			if (hole || sdiff(rel, ff->snd_nxt) < 0)
				ff->loss = true;
			ff->bytes += newlen;
			ff->segs += ff->smss ? (newlen + ff->smss - 1) / ff->smss : 1;
			ff->last_us = p->ts_us;
			uint16_t pl = p->payload_len > 0xffff ? 0xffff : (uint16_t)p->payload_len;
			if (pl > ff->max_payload) {
				ff->max_payload = pl;
				ff->n_max = 1;
			} else if (pl == ff->max_payload) {
				ff->n_max++;
			}
		} else {
			ff->state = FF_CLOSED;
			ff->fl_end = ff->snd_nxt;
			ff->next_us = p->ts_us;
		}
	}
	ff->snd_nxt = end;
}

/* p is from R: it may be A1 for S's flight, new data of R's own, or SACK a hole in flight 1. */
static void receiver_packet(struct flow *f, struct side *s, const struct side *r,
                            const struct pkt *p, const struct flight_opts *o)
{
	struct first_flight *ff = &s->ff;
	if (ff->state == FF_WAIT || !s->isn_known)
		return;
	if (ff->state == FF_OPEN) {
		if (!ff->a1_seen && (p->flags & TH_ACK) && sdiff(p->ack, s->isn + 1) > 0) {
			ff->a1_seen = true;
			ff->a1_us = p->ts_us;
			ff->a1_tsval = p->opt.tsval;
			bool ts_ok = ts_negotiated(f) && (p->opt.present & OPT_TS);
			/* A1 with the TSval R sent before S's data: the clock ticked slower than the
			 * round trip, TSecr cannot separate flights (INFERENCE.md rule 1). */
			if (o->force_timing || !ts_ok || (ff->r_ts_before && p->opt.tsval == ff->r_tsval_before))
				ff->rule = RULE_TIMING;
			else
				ff->rule = RULE_TSECR;
		}
		if (p->payload_len > 0 && !(p->flags & TH_SYN) && r->isn_known &&
		    sdiff(p->seq + p->payload_len, r->snd_max) > 0)
			ff->r_data_before_next = true;
	}
	/* A SACK block above the cumulative ACK and inside flight 1 means a hole below it. */
	uint32_t fl_end = ff->state == FF_OPEN ? ff->snd_nxt : ff->fl_end;
	for (unsigned i = 0; i < p->opt.nsack; i++) {
		uint32_t left = p->opt.sack_left[i] - (s->isn + 1);
		if (sdiff(p->opt.sack_left[i], p->ack) > 0 && sdiff(left, fl_end) < 0)
			ff->loss = true;
	}
}

void flight_update(struct flow *f, const struct pkt *p, int dir, const struct flight_opts *o)
{
	struct side *snd = dir == 0 ? &f->c : &f->s;
	struct side *rcv = dir == 0 ? &f->s : &f->c;
	if (f->roles_guessed)
		return; /* no handshake: the first flight cannot be located */
	receiver_packet(f, rcv, snd, p, o);
	sender_packet(f, snd, rcv, dir, p);
}

/* R's advertised window in bytes before S's data; false when unknown (INFERENCE.md: never
 * call a flight rwnd-limited on a guessed window). */
static bool receiver_window(const struct first_flight *ff, const struct side *r,
                            const struct side *s, uint32_t *rwnd)
{
	if (!ff->rwnd_known)
		return false;
	if (ff->rwnd_from_syn) {
		*rwnd = ff->rwnd_field; /* SYN windows are never scaled (RFC 7323 2.2) */
		return true;
	}
	if (!r->syn.ts_us || !s->syn.ts_us)
		return false;
	bool r_ws = r->syn.present & OPT_WS, s_ws = s->syn.present & OPT_WS;
	if (r_ws && s_ws) {
		uint8_t sc = r->syn.wscale > 14 ? 14 : r->syn.wscale; /* RFC 7323 2.3 */
		*rwnd = (uint32_t)ff->rwnd_field << sc;
		return true;
	}
	/* one side lacks the option: unscaled, unless its options were cut by the snaplen */
	if ((!r_ws && (r->syn.quirks & Q_OPT_CUT)) || (!s_ws && (s->syn.quirks & Q_OPT_CUT)))
		return false;
	*rwnd = ff->rwnd_field;
	return true;
}

enum ff_limit flight_limit(const struct flow *f, int sender, uint16_t *smss)
{
	const struct side *s = sender == 0 ? &f->c : &f->s;
	const struct side *r = sender == 0 ? &f->s : &f->c;
	const struct first_flight *ff = &s->ff;
	*smss = 0;
	if (f->roles_guessed || !s->isn_known)
		return LIMIT_UNKNOWN;
	if (ff->state == FF_WAIT)
		return LIMIT_NONE;
	uint16_t m = ff->smss;
	/* full-sized segments smaller than the MSS allows (path MTU): use theirs */
	if (ff->n_max >= 2 && (m == 0 || (ff->max_payload < m && 2u * ff->max_payload >= m)))
		m = ff->max_payload;
	if (m == 0)
		m = ff->max_payload;
	*smss = m;
	if (ff->loss)
		return LIMIT_LOSS;
	uint32_t rwnd;
	if (receiver_window(ff, r, s, &rwnd) && (uint64_t)ff->bytes + m > rwnd)
		return LIMIT_RWND;
	if (ff->state == FF_CLOSED && !ff->r_data_before_next) {
		int64_t rtt = flight_rtt(f);
		if (rtt < 0 || (int64_t)(ff->next_us - ff->last_us) * 10 <= rtt * FLIGHT_CWND_RTTS_X10)
			return LIMIT_CWND;
	}
	return LIMIT_APP;
}
