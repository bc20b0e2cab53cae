/* First flights, the method of docs/METHOD.md. For a sender S and its receiver R:
 * - a segment of S is in flight 1 until R's first ACK of S's data (A1) could have released
 *   more: by TSecr (RFC 7323) when both SYNs negotiated timestamps, else by timing with the
 *   vantage-to-S round trip from the handshake;
 * - segments are ceil(payload / smss) per new-data packet (senders count cwnd in packets);
 * - a pause ends the flight whatever the rules above allow (rule 3);
 * - the flight stopped for cwnd, rwnd, nagle, app, ambiguous or loss, judged when the flow is
 *   written, with the evidence beside the verdict (struct ff_verdict). */
#include "flight.h"

#include <string.h>

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

/* S's nominal segment size: R's MSS less the option bytes S puts in every data segment (the
 * timestamp option, padded: 12); 0 while R's MSS is unknown. */
static uint16_t nominal_smss(const struct side *r, const struct pkt *p)
{
	uint16_t mss = receiver_mss(r);
	uint16_t opt = (p->opt.present & OPT_TS) ? 12 : 0;
	return mss > opt ? (uint16_t)(mss - opt) : 0;
}

/* S's first new data: snapshot what R had said before it. Membership will be decided by
 * TSecr when timestamps were negotiated (A1 may still show R's clock too coarse for it). */
static void flight_open(const struct flow *f, struct first_flight *ff, const struct side *r,
                        const struct pkt *p, const struct flight_opts *o)
{
	ff->state = FF_OPEN;
	ff->rule = !o->force_timing && ts_negotiated(f) && (p->opt.present & OPT_TS) ? RULE_TSECR
	                                                                           : RULE_TIMING;
	/* the receiver sent nothing the capture holds, not even its SYN: one direction only; the
	 * sender's own echoes are the evidence (its SYN carried timestamps only if R's did) */
	ff->one_dir = !r->syn.ts_us && r->pkts == 0;
	if (ff->one_dir)
		ff->rule = !o->force_timing && (p->opt.present & OPT_TS) ? RULE_ECHO : RULE_TIMING;
	ff->first_tsecr = p->opt.tsecr;
	ff->first_tsval = p->opt.tsval;
	ff->first_ack = p->ack;
	ff->min_inside = UINT16_MAX;
	ff->first_us = p->ts_us;
	ff->r_ts_before = r->ts_seen;
	ff->r_tsval_before = r->last_tsval;
	ff->rwnd_known = r->win_known;
	ff->rwnd_field = r->last_win;
	ff->rwnd_from_syn = r->win_is_syn;
	ff->smss = nominal_smss(r, p);
}

/* Is S's new-data packet p still in flight 1 by rule 1 (TSecr) or 2 (timing)? */
static bool in_flight1(const struct flow *f, const struct first_flight *ff, int sender,
                       const struct pkt *p)
{
	if (ff->rule == RULE_ECHO)
		/* S processed nothing newer from R than when its flight began */
		return !(p->opt.present & OPT_TS) || sdiff(p->opt.tsecr, ff->first_tsecr) <= 0;
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

/* Rule 3: a silence of gap_us before new data, at least half the handshake RTT and three times
 * the flight's own spacing so far, ends the flight (a timer send, an application pause, or the
 * next flight of a path faster than its handshake). Unknown without the handshake's RTT. */
static bool is_pause(const struct flow *f, const struct first_flight *ff, uint64_t gap_us)
{
	int64_t rtt = flight_rtt(f);
	if (rtt <= 0)
		return false;
	return (int64_t)gap_us * FLIGHT_PAUSE_RTT_DIV >= rtt &&
	       gap_us >= (uint64_t)FLIGHT_PAUSE_SPACING * ff->max_gap_us;
}

/* An upper bound on the tick of S's timestamp clock from S's own packets (its SYN and p), in
 * microseconds; -1 while fewer than three ticks separate them. */
static int64_t tick_upper_us(const struct side *s, const struct pkt *p)
{
	if (!(s->syn.present & OPT_TS) || !s->syn.ts_us || !(p->opt.present & OPT_TS) ||
	    p->ts_us <= s->syn.ts_us)
		return -1;
	int32_t ticks = sdiff(p->opt.tsval, s->syn.tsval);
	if (ticks < 3)
		return -1;
	return (int64_t)(p->ts_us - s->syn.ts_us) / (ticks - 1);
}

/* The soonest a timer (a tail-loss probe) sends after a flight: 10 ms and 1.5 handshake RTTs. */
static uint64_t timer_min_us(const struct flow *f)
{
	int64_t rtt = flight_rtt(f);
	uint64_t t = rtt > 0 ? (uint64_t)rtt * FLIGHT_CWND_RTTS_X10 / 10 : 0;
	return t > FLIGHT_TIMER_MIN_US ? t : FLIGHT_TIMER_MIN_US;
}

/* S's new data p after a pause of gap_us, echoing the flight's last TSecr where that echo is
 * meaningful (S processed nothing from R since): a timer send, or still flight 1 (a tail that
 * a queue, Wi-Fi or a cellular scheduler held, or the application's own pace: either way S
 * sent it before any ACK reached it)? Returns 1 for flight 1, 0 for a possible timer send that
 * S's clock shows was sent later, -1 when nothing shows which (a held tail or a timer). */
static int after_silence(const struct flow *f, const struct side *s,
                         const struct first_flight *ff, const struct pkt *p, uint64_t gap_us)
{
	uint64_t tmin = timer_min_us(f);
	int32_t dv = sdiff(p->opt.tsval, ff->last_tsval);
	int64_t tick = tick_upper_us(s, p);
	/* S's own clock first: a queue that slowed the flight but not what followed shrinks the
	 * gap seen here, not the one S's TSvals show */
	if (tick > 0 && dv >= 0 && (uint64_t)(dv + 1) * (uint64_t)tick < tmin)
		return 1; /* sent sooner than any timer fires: held on the way */
	if (tick > 0 && dv >= 2 && (uint64_t)(dv - 1) * (uint64_t)tick >= tmin)
		return 0; /* sent a timer's wait after the flight */
	if (gap_us < tmin)
		return 1; /* no timer fires this soon: S sent it without an ACK */
	return dv >= 2 ? 0 : -1;
}

/* One direction: S's new data p, after a silence of gap_us with no newer echo, was sent by a
 * timer (a tail-loss probe): S's clock shows it waited the longest of 10 ms and 1.5 round
 * trips, bounded from above by how long S took from its SYN to its first data (which came
 * after R's answer to that SYN). RFC 8985's probe sends new data only where R's window allows
 * it and the congestion window does not: the flight before it was the congestion window. */
static bool one_dir_timer(const struct side *s, const struct first_flight *ff,
                          const struct pkt *p, uint64_t gap_us)
{
	int64_t tick = tick_upper_us(s, p);
	int32_t dv = sdiff(p->opt.tsval, ff->last_tsval);
	if (tick <= 0 || dv < 2 || !s->syn.ts_us || ff->first_us <= s->syn.ts_us)
		return false;
	/* an unchanged echo says no ACK arrived only where R's clock ticks several times a round
	 * trip: S's echo moved that far between its SYN-ACK (R's SYN) and its first data (R's
	 * request, a round trip later); a client sender's SYN echoes nothing */
	if (!(s->syn.present & OPT_TS) || !s->syn.tsecr ||
	    sdiff(ff->first_tsecr, s->syn.tsecr) < FLIGHT_ECHO_MIN_TICKS)
		return false;
	uint64_t rtt_max = ff->first_us - s->syn.ts_us;
	uint64_t wait = rtt_max * FLIGHT_CWND_RTTS_X10 / 10;
	if (wait < FLIGHT_TIMER_MIN_US)
		wait = FLIGHT_TIMER_MIN_US;
	return gap_us >= FLIGHT_TIMER_MIN_US && (uint64_t)(dv - 1) * (uint64_t)tick >= wait;
}

/* S's new data p after a silence of gap_us, with timestamps: corrects rules 1-3 with what S's
 * echo and clock show (docs/METHOD.md "Late tails"). Where S's echo is meaningful (TSecr rule,
 * or one direction) and p echoes the flight's last TSecr, S processed nothing from R: only a
 * timer could have sent it apart from the flight. With the timing rule, S's own clock can
 * show p was sent within a round trip of the flight's start, before any ACK could reach S. */
static void settle_pause(const struct flow *f, const struct side *s,
                         const struct first_flight *ff, const struct pkt *p, uint64_t gap_us,
                         bool *in, bool *pause, bool *unsure)
{
	if (ff->rule == RULE_ECHO) {
		if (*in && p->opt.tsecr == ff->last_tsecr && one_dir_timer(s, ff, p, gap_us))
			*pause = true; /* S's clock shows a timer's wait: flight 1 ends before p */
		return;
	}
	if (ff->rule != RULE_TIMING) {
		if (*in && *pause && p->opt.tsecr == ff->last_tsecr) {
			int k = after_silence(f, s, ff, p, gap_us);
			if (k == 1)
				*pause = false;
			else if (k < 0)
				*unsure = true;
		}
		return;
	}
	int64_t rtt = flight_rtt(f), tick = tick_upper_us(s, p);
	int32_t dv = sdiff(p->opt.tsval, ff->first_tsval);
	if (!(*in && !*pause) && rtt > 0 && tick > 0 && dv >= 0 && p->opt.tsecr == ff->last_tsecr &&
	    (int64_t)(dv + 1) * tick < rtt - rtt / FLIGHT_TOL_DIV) {
		*in = true; /* sent less than a round trip after the flight's first packet */
		*pause = false;
		return;
	}
	if (*pause && *in)
		*unsure = true;
}

/* A silence inside flight 1 that stands out of the flight's spacing (three times it, at least
 * the timing tolerance; the first one at least a quarter of the handshake RTT): where the
 * flight may have ended if the handshake's RTT overstated the data's. Timing alone cannot tell,
 * so such a flight is only a lower bound up to there. */
static bool marks_gap(const struct flow *f, const struct first_flight *ff, uint64_t gap_us)
{
	int64_t rtt = flight_rtt(f);
	if (rtt <= 0 || gap_us < (uint64_t)FLIGHT_PAUSE_SPACING * ff->max_gap_us)
		return false;
	if ((int64_t)gap_us * FLIGHT_TOL_DIV < rtt)
		return false;
	return ff->max_gap_us > 0 || (int64_t)gap_us * FLIGHT_GAP_FIRST_DIV >= rtt;
}

/* Whether S's TSecr can show that S processed nothing from R between two of its segments. */
static bool tsecr_usable(const struct flow *f, const struct first_flight *ff,
                         const struct pkt *p, const struct flight_opts *o)
{
	/* one direction: S's data carries timestamps only where both SYNs offered them */
	return !o->force_timing && (ts_negotiated(f) || ff->rule == RULE_ECHO) &&
	       (p->opt.present & OPT_TS) && ff->last_ts &&
	       !(ff->a1_seen && ff->rule == RULE_TIMING); /* R's clock ticked slower than the RTT */
}

/* S's new data p is not in flight 1: the flight ends, with what located its end. */
static void flight_close(const struct flow *f, struct first_flight *ff, const struct pkt *p,
                         enum ff_end why, bool pause, const struct flight_opts *o)
{
	ff->state = FF_CLOSED;
	ff->fl_end = ff->snd_nxt;
	ff->next_us = p->ts_us;
	ff->end = (uint8_t)why;
	ff->next_pause = pause;
	ff->a1_before_next = ff->a1_seen;
	ff->next_payload = p->payload_len > UINT16_MAX ? UINT16_MAX : (uint16_t)p->payload_len;
	if (ff->rule == RULE_ECHO) {
		/* one direction: S's ACK field moved, R had sent data (a request); else the newer
		 * echo came from a pure ACK of S's data */
		ff->echo_adv = (uint32_t)sdiff(p->opt.tsecr, ff->first_tsecr);
		if (p->ack != ff->first_ack)
			ff->r_data_before_next = true;
		else
			ff->a1_before_next = true;
	}
	/* new data after a pause that echoes the flight's TSecr: S had processed nothing from R,
	 * so no ACK released it; a timer sent it (a tail-loss probe, an RTO), which no stack
	 * fires sooner than 1.5 RTTs (RFC 8985: PTO = 2 SRTT) nor within 10 ms */
	uint64_t gap = p->ts_us - ff->last_us;
	int64_t rtt = flight_rtt(f);
	ff->next_timer = pause && tsecr_usable(f, ff, p, o) && p->opt.tsecr == ff->last_tsecr &&
	                 gap >= FLIGHT_TIMER_MIN_US && (int64_t)gap * 10 >= rtt * FLIGHT_CWND_RTTS_X10;
}

/* The segments newlen new bytes take: ceil(newlen / smss), one while smss is unknown. */
static uint32_t segments(const struct first_flight *ff, uint32_t newlen)
{
	return ff->smss ? (newlen + ff->smss - 1) / ff->smss : 1;
}

/* New data of S after flight 1 closed: counted into the next flight until R acknowledges any
 * of it (what that ACK releases is the flight after) or S pauses for half the handshake RTT
 * (a timer send, the application). At any vantage point the count is at most the flight's. */
static void second_flight(const struct flow *f, const struct side *s, struct first_flight *ff,
                          const struct pkt *p, uint32_t newlen)
{
	uint64_t off = (p->ts_us > ff->next_us ? p->ts_us - ff->next_us : 0) >> 6;
	int64_t gap = off > ff->f2_last_64us ? (int64_t)(off - ff->f2_last_64us) * 64 : 0;
	/* back to back: no pause, whatever the RTT; one direction: the flight-to-flight spacing */
	int64_t rtt = !gap ? 0 : ff->rule == RULE_ECHO ? (int64_t)(ff->next_us - ff->first_us)
	                                               : flight_rtt(f);
	bool has_ts = (p->opt.present & OPT_TS) != 0;
	if (off > UINT16_MAX)
		ff->f2_done = true; /* a next flight over 4 s long */
	else if (rtt > 0 && gap * FLIGHT_PAUSE_RTT_DIV >= rtt) {
		/* a pause, unless S's clock shows it sent p on the heels of the one before (a queue
		 * or a scheduler held p on the way, as it may hold flight 1's tail) */
		int64_t tick = has_ts && ff->f2_last_ts ? tick_upper_us(s, p) : -1;
		int32_t dv = has_ts ? sdiff(p->opt.tsval, ff->f2_last_tsval) : -1;
		if (!(tick > 0 && dv >= 0 && (dv + 1) * tick * FLIGHT_PAUSE_RTT_DIV < rtt))
			ff->f2_done = true;
	}
	if (ff->f2_done)
		return;
	uint32_t n = ff->f2_segs + segments(ff, newlen);
	ff->f2_segs = n > UINT16_MAX ? UINT16_MAX : (uint16_t)n;
	ff->f2_last_64us = (uint16_t)off;
	ff->f2_last_ts = has_ts;
	ff->f2_last_tsval = p->opt.tsval;
}

/* p, new data of S, joins flight 1. */
static void flight_add(const struct flow *f, struct first_flight *ff, const struct pkt *p,
                       uint32_t newlen)
{
	if (ff->segs) {
		if (ff->last_payload < ff->min_inside)
			ff->min_inside = ff->last_payload;
		uint64_t gap = p->ts_us > ff->last_us ? p->ts_us - ff->last_us : 0;
		if (!ff->gap_segs && marks_gap(f, ff, gap)) {
			ff->gap_segs = ff->segs;
			ff->gap_bytes = ff->bytes;
		}
		if (gap > ff->max_gap_us)
			ff->max_gap_us = gap > UINT32_MAX ? UINT32_MAX : (uint32_t)gap;
	}
	ff->bytes += newlen;
	ff->segs += segments(ff, newlen);
	ff->last_us = p->ts_us;
	uint16_t pl = p->payload_len > 0xffff ? 0xffff : (uint16_t)p->payload_len;
	ff->last_payload = pl;
	ff->last_ts = (p->opt.present & OPT_TS) != 0;
	ff->last_tsecr = p->opt.tsecr;
	ff->last_tsval = p->opt.tsval;
	if (pl > ff->max_payload) {
		ff->max_payload = pl;
		ff->n_max = 1;
	} else if (pl == ff->max_payload) {
		ff->n_max++;
	}
}

/* p is from S (index sender): new data, retransmission or hole for S's flight. Data on S's
 * SYN (TCP Fast Open, RFC 7413) is new data: its first byte is ISN + 1. */
static void sender_packet(struct flow *f, struct side *s, const struct side *r, int sender,
                          const struct pkt *p, const struct flight_opts *o)
{
	struct first_flight *ff = &s->ff;
	if (!s->isn_known || p->payload_len == 0)
		return;
	bool syn = (p->flags & TH_SYN) != 0;
	if (syn && p->seq != s->isn)
		return;
	uint32_t rel = p->seq + (syn ? 1u : 0u) - (s->isn + 1);
	uint32_t end = rel + p->payload_len;
	if (sdiff(rel, 0) < 0) {
		if (ff->state == FF_OPEN)
			ff->loss = true;
		return;
	}
	if (ff->state == FF_WAIT) {
		flight_open(f, ff, r, p, o);
		ff->snd_nxt = 0;
	}
	if (!ff->smss) /* TFO: data on the SYN went before R's MSS was known */
		ff->smss = nominal_smss(r, p);
	uint32_t fl_end = ff->state == FF_OPEN ? ff->snd_nxt : ff->fl_end;
	if (sdiff(end, ff->snd_nxt) <= 0) { /* nothing new: a retransmission */
		if (sdiff(rel, fl_end) < 0)
			ff->loss = true; /* flight-1 bytes sent again: lost (or their ACKs were) */
		return;
	}
	bool hole = sdiff(rel, ff->snd_nxt) > 0;
	uint32_t newlen = hole ? p->payload_len : end - ff->snd_nxt;
	if (ff->state == FF_OPEN) {
		uint64_t gap = ff->segs && p->ts_us > ff->last_us ? p->ts_us - ff->last_us : 0;
		bool pause = ff->segs && is_pause(f, ff, gap);
		bool in = in_flight1(f, ff, sender, p), unsure = false;
		if (ff->segs && (p->opt.present & OPT_TS) && ff->last_ts && !o->force_timing)
			settle_pause(f, s, ff, p, gap, &in, &pause, &unsure);
		else if (pause && in)
			unsure = true; /* rule 2 keeps it in flight 1: a held tail, a timer, or a
			                * handshake slower than the data's round trip; nothing shows which */
		enum ff_end why = FF_END_NONE;
		if (!in)
			why = ff->rule != RULE_TIMING && (p->opt.present & OPT_TS) ? FF_END_TSECR
			                                                           : FF_END_TIMING;
		else if (pause)
			why = FF_END_PAUSE;
		if (why != FF_END_NONE) {
			flight_close(f, ff, p, why, pause, o);
			ff->next_unsure = unsure;
			ff->f2_segs = (uint16_t)segments(ff, newlen);
			ff->f2_last_ts = (p->opt.present & OPT_TS) != 0;
			ff->f2_last_tsval = p->opt.tsval;
			/* bytes between the flight and this packet were sent before it and not seen
			 * here: lost on the way, so where flight 1 ended is not known */
			if (hole)
				ff->loss = true;
		} else {
			/* a gap, or old bytes repacketized with new ones, inside flight 1 */
			if (hole || sdiff(rel, ff->snd_nxt) < 0)
				ff->loss = true;
			/* one direction: a silence a timer could end, unless S's clock shows a hold */
			if (ff->rule == RULE_ECHO && ff->segs && gap >= FLIGHT_TIMER_MIN_US &&
			    (!(p->opt.present & OPT_TS) || !ff->last_ts ||
			     after_silence(f, s, ff, p, gap) != 1))
				ff->timer_gap = true;
			flight_add(f, ff, p, newlen);
		}
	} else if (!ff->f2_done) {
		second_flight(f, s, ff, p, newlen);
	}
	ff->snd_nxt = end;
}

/* Whether R's packet p carries a FIN or data beyond what R sent before. */
static bool r_new_data(const struct side *r, const struct pkt *p)
{
	return (p->flags & TH_FIN) ||
	       (p->payload_len > 0 && r->isn_known &&
	        sdiff(p->seq + ((p->flags & TH_SYN) ? 1u : 0u) + p->payload_len, r->snd_max) > 0);
}

/* p is from R: it may be A1 for S's flight, new data or a FIN of R's own, or SACK a hole in
 * flight 1. */
static void receiver_packet(struct flow *f, struct side *s, const struct side *r,
                            const struct pkt *p, const struct flight_opts *o)
{
	struct first_flight *ff = &s->ff;
	if (ff->state == FF_WAIT || !s->isn_known)
		return;
	if (ff->one_dir && ff->state == FF_OPEN) { /* R is in the capture after all */
		ff->one_dir = false;
		if (ff->rule == RULE_ECHO)
			ff->rule = ts_negotiated(f) && !o->force_timing ? RULE_TSECR : RULE_TIMING;
	}
	/* R acknowledges bytes of S the capture never showed: lost before the capture point (or
	 * by the capture), so a flight still open has a hole */
	if ((p->flags & TH_ACK) &&
	    sdiff(p->ack - (s->isn + 1), ff->snd_nxt + (s->fin ? 1u : 0u)) > 0) {
		ff->acked_unseen = true;
		if (ff->state == FF_OPEN)
			ff->loss = true;
	}
	if (ff->state == FF_OPEN) {
		if (!ff->a1_seen && (p->flags & TH_ACK) && sdiff(p->ack, s->isn + 1) > 0) {
			ff->a1_seen = true;
			ff->a1_segs = ff->segs;
			ff->a1_bytes = ff->bytes;
			ff->a1_us = p->ts_us;
			ff->a1_tsval = p->opt.tsval;
			bool ts_ok = ts_negotiated(f) && (p->opt.present & OPT_TS);
			/* A1 with the TSval R sent before S's data: the clock ticked slower than the
			 * round trip, TSecr cannot separate flights (docs/METHOD.md rule 1). */
			if (o->force_timing || !ts_ok || (ff->r_ts_before && p->opt.tsval == ff->r_tsval_before))
				ff->rule = RULE_TIMING;
			else
				ff->rule = RULE_TSECR;
		}
		if (r_new_data(r, p))
			ff->r_data_before_next = true;
	} else if (ff->state == FF_CLOSED && !ff->f2_done) {
		/* the next flight ends at R's first ACK of its data, or R's own new data (what
		 * follows may answer it) */
		if (((p->flags & TH_ACK) && sdiff(p->ack - (s->isn + 1), ff->fl_end) > 0) ||
		    r_new_data(r, p))
			ff->f2_done = true;
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
	sender_packet(f, snd, rcv, dir, p, o);
}

/* R's advertised window in bytes before S's data; false when unknown (docs/METHOD.md: never
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

/* The least R's window can have been where a snaplen cut a SYN's window scale: the field
 * unscaled (scale >= 0). False where receiver_window knows it, or nothing is known. */
static bool receiver_window_floor(const struct first_flight *ff, const struct side *r,
                                  const struct side *s, uint32_t *floor)
{
	uint32_t w;
	if (!ff->rwnd_known || receiver_window(ff, r, s, &w))
		return false;
	*floor = ff->rwnd_field;
	return true;
}

/* Both SYNs seen whole without an MSS option: no real stack sends that; a crafted capture. */
static bool crafted(const struct side *a, const struct side *b)
{
	return a->syn.ts_us && b->syn.ts_us && !((a->syn.present | b->syn.present) & OPT_MSS) &&
	       !((a->syn.quirks | b->syn.quirks) & Q_OPT_CUT);
}

/* The standard byte limit a flight of small packets stopped under, with segment size m: the
 * next packet would have crossed RFC 3390's, RFC 6928's or two segments' byte count while the
 * flight's packets, counted one by one, would say more segments. 0 when none. */
static uint32_t byte_limit(const struct first_flight *ff, uint16_t m)
{
	uint32_t lim[3] = {2u * m, 4u * m < 4380 ? 4u * m : 4380, 10u * m < 14600 ? 10u * m : 14600};
	for (int i = 0; i < 3; i++) {
		uint32_t l = lim[i] > 2u * m ? lim[i] : 2u * m;
		if (ff->bytes <= l && ff->bytes + ff->next_payload > l && l / m < ff->segs)
			return l;
	}
	return 0;
}

/* The flight's last packet ended on a full segment of m bytes (a super-packet: on a multiple). */
static bool ends_full(const struct first_flight *ff, uint16_t m)
{
	return m && ff->last_payload >= m && ff->last_payload % m == 0;
}

/* Whether a receive window that real stacks open with could have stopped a flight of segs
 * segments and bytes bytes of size m, one more segment not fitting: 4, 10, 20 or 44 of R's
 * MSS (Linux before 2.6.39, 2.6.39 to 3.x, 3.x, 4.19 on: 5840, 14600, 29200, 64240 bytes
 * with a 1460-byte MSS) or 4, 8, 16, 32 or 64 KB (BSD, Windows, macOS, 65535). */
static bool at_window_edge(uint32_t segs, uint32_t bytes, uint16_t m)
{
	static const uint32_t fixed[] = {4096, 5840, 8192, 16384, 32768, 65535, 65536};
	if (segs == 4 || segs == 10 || segs == 20 || segs == 44)
		return true;
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (bytes <= fixed[i] && bytes + m > fixed[i])
			return true;
	return false;
}

/* One direction only (R's packets absent): the verdict from S's own echoes. The flight is S's
 * data echoing what it echoed when it began; it ended where S's echo moved on with its ACK
 * field unchanged (S had processed a pure ACK of its data). That says "before A1" only when
 * R's clock ticks several times per round trip, shown by how far the echo moved. R's window
 * is not seen: a flight that ends where a window real stacks open with would have stopped it
 * needs S's next flight at least twice its size, less one (slow start, one segment per segment
 * acknowledged); elsewhere the next flight must be larger than this one (a window that stopped
 * this flight and was not opened wider would have released no more than it). */
static void one_dir_verdict(const struct first_flight *ff, uint16_t m, struct ff_verdict *v)
{
	if (ff->rule == RULE_ECHO && ff->state == FF_CLOSED && ff->end == FF_END_PAUSE &&
	    ff->next_timer && !ff->timer_gap && !ff->r_data_before_next) {
		v->next = FF_NEXT_TIMER;
		v->limit = ends_full(ff, m) ? LIMIT_CWND : LIMIT_NAGLE;
		return;
	}
	if (ff->rule != RULE_ECHO || ff->state != FF_CLOSED || ff->end != FF_END_TSECR ||
	    ff->r_data_before_next || ff->echo_adv < FLIGHT_ECHO_MIN_TICKS || ff->timer_gap) {
		v->limit = LIMIT_UNKNOWN; /* nothing here shows where the flight ended */
		v->segs = v->bytes = 0;
		return;
	}
	v->next = FF_NEXT_ACK;
	bool edge = at_window_edge(ff->segs, ff->bytes, m);
	uint32_t f2_min = edge ? 2u * ff->segs - 1u : ff->segs + 1u;
	/* a 6 KB receive window (4 x 1460, Linux <= 2.6.38) grows as data arrives: not even a
	 * doubled next flight rules it out */
	bool six_kb = ff->bytes <= 5840u && ff->bytes + m > 5840u;
	if (!ends_full(ff, m))
		v->limit = LIMIT_NAGLE;
	else if (ff->f2_segs >= f2_min && !six_kb)
		v->limit = LIMIT_CWND;
	else
		v->limit = LIMIT_APP;
}

/* What S's next new data came after (docs/METHOD.md "cwnd": on the heels of an ACK, within
 * about 1.5 handshake RTTs of the flight's end, before R sent new data; or a timer send). */
static enum ff_next next_kind(const struct flow *f, const struct first_flight *ff)
{
	if (ff->state != FF_CLOSED)
		return FF_NEXT_NONE;
	if (ff->r_data_before_next)
		return FF_NEXT_REQUEST;
	if (ff->next_timer)
		return FF_NEXT_TIMER;
	if (!ff->a1_before_next)
		return FF_NEXT_LATE;
	int64_t rtt = flight_rtt(f), gap = (int64_t)(ff->next_us - ff->last_us);
	if (rtt > 0)
		return gap * 10 <= rtt * FLIGHT_CWND_RTTS_X10 ? FF_NEXT_ACK : FF_NEXT_LATE;
	return ff->end == FF_END_TSECR ? FF_NEXT_ACK : FF_NEXT_LATE;
}

/* A lower bound: without the TSecr rule, only what came before the flight's first marked
 * silence is sure (docs/METHOD.md "Ambiguous"). */
static void ambiguous(const struct first_flight *ff, struct ff_verdict *v)
{
	v->limit = LIMIT_AMBIGUOUS;
	if (ff->rule != RULE_TSECR && ff->gap_segs) {
		v->segs = ff->gap_segs;
		v->bytes = ff->gap_bytes;
	}
}

/* The segment size a flight is counted in: R's MSS less S's options; the flight's own full
 * size where its packets are smaller (path MTU) or R's MSS is unknown (cut, or R's SYN not
 * captured), seen twice (the first packet after the flight counts). 0 = none is sure. */
static uint16_t flight_smss(const struct first_flight *ff)
{
	uint16_t m = ff->smss;
	if (ff->n_max >= 2 && (m == 0 || (ff->max_payload < m && 2u * ff->max_payload >= m)))
		m = ff->max_payload;
	if (m == 0 && (ff->n_max >= 2 || (ff->n_max == 1 && ff->state == FF_CLOSED &&
	                                  ff->next_payload == ff->max_payload)))
		m = ff->max_payload;
	return m;
}

/* S's next data came on an ACK or a timer: S had more to send at once, so its window stopped
 * the flight, unless the flight ended on a short segment and the rest waited for its ACK
 * (Nagle, one message per round trip). */
static void released_verdict(const struct side *s, const struct side *r,
                             const struct first_flight *ff, uint16_t m, uint32_t by_bytes,
                             bool small_inside, struct ff_verdict *v)
{
	v->limit = ends_full(ff, m) ? LIMIT_CWND : LIMIT_NAGLE;
	if (small_inside) {
		/* a byte-counted window where a standard byte limit explains the stop and the
		 * echoes show the ACK released the rest; a packet-counted one where no byte
		 * limit does and they show the same; else a count either kind had room for */
		uint32_t l = byte_limit(ff, m);
		bool shown = ff->rule == RULE_TSECR && ff->end == FF_END_TSECR;
		if (l && shown) {
			v->limit = LIMIT_CWND;
			v->segs = l / m;
			return;
		}
		if (l || !shown) {
			v->limit = v->limit == LIMIT_NAGLE ? LIMIT_NAGLE : LIMIT_APP;
			v->segs = by_bytes;
			return;
		}
	}
	if (v->limit == LIMIT_CWND) {
		uint32_t floor;
		/* a SYN's window scale cut by the snaplen: the window may have been as small as
		 * its field; a flight that did not fit under it may have been R's window's */
		if (receiver_window_floor(ff, r, s, &floor) && (uint64_t)ff->bytes + m > floor)
			v->limit = LIMIT_AMBIGUOUS;
		else if (crafted(s, r))
			v->limit = LIMIT_AMBIGUOUS;
	}
}

void flight_verdict(const struct flow *f, int sender, struct ff_verdict *v)
{
	const struct side *s = sender == 0 ? &f->c : &f->s;
	const struct side *r = sender == 0 ? &f->s : &f->c;
	const struct first_flight *ff = &s->ff;
	memset(v, 0, sizeof(*v));
	v->pause_us = -1;
	if (f->roles_guessed || !s->isn_known) {
		v->limit = LIMIT_UNKNOWN;
		return;
	}
	if (ff->state == FF_WAIT) {
		v->limit = LIMIT_NONE;
		return;
	}
	uint16_t m = flight_smss(ff);
	/* the row's segment size: a flight of one size seen once still shows its own (the count
	 * and "full" use only a size that is sure) */
	v->smss = m ? m : ff->max_payload;
	v->rule = (enum ff_rule)ff->rule;
	v->end = (enum ff_end)ff->end;
	v->next = next_kind(f, ff);
	if (ff->state == FF_CLOSED)
		v->pause_us = (int64_t)(ff->next_us - ff->last_us);
	v->segs = ff->segs;
	v->bytes = ff->bytes;
	if (ff->loss) {
		v->limit = LIMIT_LOSS;
		return;
	}
	/* packets shorter than a segment inside the flight: a sender counting bytes (RFC 3390,
	 * RFC 6928 limits) holds fewer segments than packets; ceil(bytes / smss) is a count that
	 * either kind of sender had room for */
	uint32_t by_bytes = m ? (ff->bytes + m - 1u) / m : ff->segs;
	bool small_inside = m && ff->min_inside < m && by_bytes < ff->segs;
	if (ff->one_dir) {
		if (small_inside)
			v->segs = by_bytes;
		one_dir_verdict(ff, m, v);
		if (v->limit == LIMIT_CWND && small_inside)
			v->limit = LIMIT_APP;
		return;
	}
	/* a pause that a held tail may have made, or timing at a round trip the sending host's
	 * own scheduling can exceed: the end is not shown; what came before it is a lower bound */
	int64_t rtt = flight_rtt(f);
	bool sub_ms = ff->rule == RULE_TIMING && rtt >= 0 && rtt < FLIGHT_TIMING_MIN_RTT_US;
	if (sub_ms && ff->a1_seen && ff->a1_segs < ff->segs) {
		/* what came before A1 passed here no ACK had released; the rest timing cannot place */
		v->limit = LIMIT_AMBIGUOUS;
		v->segs = ff->a1_segs;
		v->bytes = ff->a1_bytes;
		return;
	}
	if (ff->state == FF_CLOSED && (ff->next_unsure || sub_ms)) {
		ambiguous(ff, v);
		return;
	}
	/* Timing alone (no usable timestamps): the end is not visible where a silence inside the
	 * flight stands out of its spacing (the handshake's RTT may have overstated the data's),
	 * or where rule 2 put the boundary with no pause there (a queue before the vantage point
	 * spread the flight over more than the round trip). A lower bound up to what is sure. */
	if (ff->rule != RULE_TSECR && ff->state == FF_CLOSED && ff->end == FF_END_TIMING &&
	    !ff->next_pause && v->next != FF_NEXT_REQUEST) {
		ambiguous(ff, v);
		return;
	}
	if (ff->rule != RULE_TSECR && ff->gap_segs) {
		ambiguous(ff, v);
		return;
	}
	/* R's window stopped the flight only if S had more to send: the flight ended on a
	 * full-sized segment, or its next data came on an ACK or a timer. A short last segment
	 * followed by a request, nothing, or a long silence was all S had, however little room
	 * one more segment would have found (a 4-byte greeting against a loopback window of one
	 * 65 KB segment is no window-limited flight). Linux does end a window-limited flight on
	 * a short segment (the truth lab's 8 KB receive buffer), so neither test alone will do. */
	uint32_t rwnd;
	bool had_more = ends_full(ff, m) || v->next == FF_NEXT_ACK || v->next == FF_NEXT_TIMER;
	if (had_more && receiver_window(ff, r, s, &rwnd) && (uint64_t)ff->bytes + m > rwnd &&
	    ff->bytes <= rwnd) {
		v->limit = LIMIT_RWND;
		return;
	}
	/* slow start at most doubles the window in a round trip (one segment per segment
	 * acknowledged): a next flight larger than twice this one (and one timer send) shows that
	 * the window had not stopped this one; the application had more only later */
	if (v->next == FF_NEXT_ACK && ends_full(ff, m) && ff->f2_segs > 2u * ff->segs + 1u)
		v->next = FF_NEXT_BURST;
	if (v->next == FF_NEXT_ACK || v->next == FF_NEXT_TIMER)
		released_verdict(s, r, ff, m, by_bytes, small_inside, v);
	else
		v->limit = LIMIT_APP; /* nothing more, after R's data, or much later: S stopped */
}
