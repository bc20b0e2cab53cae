/* First flights, the method of docs/METHOD.md. For a sender S and its receiver R:
 * - a segment of S is in flight 1 until R's first ACK of S's data (A1) could have released
 *   more: by TSecr (RFC 7323) when both SYNs negotiated timestamps, else by timing with the
 *   vantage-to-S round trip from the handshake;
 * - segments are ceil(payload / smss) per new-data packet (senders count cwnd in packets);
 * - a pause ends the flight whatever the rules above allow (rule 3);
 * - the flight stopped for cwnd, rwnd, nagle, app, ambiguous or loss, judged when the flow is
 *   written, with the evidence beside the verdict (struct ff_verdict), in verdict.c. */
#include "flight.h"

#include <string.h>

#include "config.h"

/* Serial-number comparison (RFC 1982) for 32-bit sequence numbers and timestamps. */
static int32_t sdiff(uint32_t a, uint32_t b) { return (int32_t)(a - b); }

int64_t handshake_leg(const struct flow *f, int leg)
{
	uint64_t syn = flow_time(f, FT_SYN), synack = flow_time(f, FT_SYNACK);
	if (leg == 0) {
		uint64_t ack = flow_time(f, FT_ACK);
		return (synack && ack && ack >= synack) ? (int64_t)(ack - synack) : -1;
	}
	return (syn && synack && synack >= syn) ? (int64_t)(synack - syn) : -1;
}

int64_t flight_rtt_leg(const struct flow *f, int leg)
{
	/* Karn: a leg whose first packet was sent again times no round trip (the answer may be
	 * to any copy, or the first copies lost: a SYN retransmitted twice made a 3 s "round
	 * trip" of a 140 ms path, and rule 2 kept 14 segments in a flight of 1) */
	if (f->transport == 6 && (leg == 1 ? f->c.syn.retx : f->s.syn.retx))
		return -1;
	/* ... and a SYN-ACK that echoes another TSval than the SYN seen: it answered a copy the
	 * capture missed */
	if (f->transport == 6 && leg == 1 && (f->c.syn.present & OPT_TS) && (f->s.syn.present & OPT_TS) &&
	    f->s.syn.tsecr != f->c.syn.tsval)
		return -1;
	return handshake_leg(f, leg);
}

int64_t flight_rtt(const struct flow *f)
{
	int64_t c = flight_rtt_leg(f, 0), s = flight_rtt_leg(f, 1);
	return (c >= 0 && s >= 0) ? c + s : -1;
}

/* R's MSS option, 536 when R's SYN was seen whole without one, 0 when unknown. */
static uint16_t receiver_mss(const struct side *r)
{
	if (!r->syn_seen)
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
static void flight_open(struct flow *f, struct first_flight *ff, const struct side *r,
                        const struct pkt *p, const struct flight_opts *o)
{
	ff->state = FF_OPEN;
	ff->rule = !o->force_timing && ts_negotiated(f) && (p->opt.present & OPT_TS) ? RULE_TSECR
	                                                                           : RULE_TIMING;
	/* the receiver sent nothing the capture holds, not even its SYN: one direction only; the
	 * sender's own echoes are the evidence (its SYN carried timestamps only if R's did) */
	ff->one_dir = !r->syn_seen && r->pkts == 0;
	if (ff->one_dir)
		ff->rule = !o->force_timing && (p->opt.present & OPT_TS) ? RULE_ECHO : RULE_TIMING;
	ff->first_tsecr = p->opt.tsecr;
	ff->first_tsval = p->opt.tsval;
	ff->min_inside = UINT16_MAX;
	ff_set_first_us(f, ff, p->ts_us);
	ff->r_ts_before = r->ts_seen;
	/* R's last TSval; from one direction, where R sent nothing (that TSval is 0), S's ACK
	 * field, which the echo rule compares the next data's with */
	ff->r_tsval = ff->one_dir ? p->ack : r->last_tsval;
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
		return sdiff(p->opt.tsecr, ff->r_tsval) < 0; /* A1's TSval */
	/* timing: A1 reaches S after one vantage<->S leg; new data released by it comes back
	 * to the vantage point no earlier than t(A1) + leg. */
	int64_t leg = flight_rtt_leg(f, sender == 1 ? 1 : 0);
	int64_t rtt = flight_rtt(f);
	if (leg < 0 || rtt <= 0)
		leg = 0; /* without the whole round trip no tolerance either: only what came before A1 */
	int64_t tol = rtt > 0 ? rtt / FLIGHT_TOL_DIV : 0;
	return (int64_t)p->ts_us < (int64_t)ff_a1_us(f, ff) + leg - tol;
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
static int64_t tick_upper_us(const struct flow *f, const struct side *s, const struct pkt *p)
{
	uint64_t syn_us = flow_syn_time(f, s);
	if (!(s->syn.present & OPT_TS) || !syn_us || !(p->opt.present & OPT_TS) || p->ts_us <= syn_us)
		return -1;
	int32_t ticks = sdiff(p->opt.tsval, s->syn.tsval);
	if (ticks < 3)
		return -1;
	return (int64_t)(p->ts_us - syn_us) / (ticks - 1);
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
	int64_t tick = tick_upper_us(f, s, p);
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
static bool one_dir_timer(const struct flow *f, const struct side *s, const struct first_flight *ff,
                          const struct pkt *p, uint64_t gap_us)
{
	int64_t tick = tick_upper_us(f, s, p);
	int32_t dv = sdiff(p->opt.tsval, ff->last_tsval);
	uint64_t syn_us = flow_syn_time(f, s);
	if (tick <= 0 || dv < 2 || !syn_us || ff_first_us(f, ff) <= syn_us)
		return false;
	/* an unchanged echo says no ACK arrived only where R's clock ticks several times a round
	 * trip: S's echo moved that far between its SYN-ACK (R's SYN) and its first data (R's
	 * request, a round trip later); a client sender's SYN echoes nothing */
	if (!(s->syn.present & OPT_TS) || !s->syn.tsecr ||
	    sdiff(ff->first_tsecr, s->syn.tsecr) < FLIGHT_ECHO_MIN_TICKS)
		return false;
	uint64_t rtt_max = ff_first_us(f, ff) - syn_us;
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
		if (*in && p->opt.tsecr == ff->last_tsecr && one_dir_timer(f, s, ff, p, gap_us))
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
	int64_t rtt = flight_rtt(f), tick = tick_upper_us(f, s, p);
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

/* S's clock shows that S did not pause before p, its next new data: the flight spread over
 * ticks of that clock (a sender pacing it, or a slow link at S) and the step to p is no
 * larger than twice the largest inside it. S was still sending when the ACK came, so the
 * ACK's arrival, not the window, ended the flight (an IW32 paced at 2 Mbit/s over a 60 ms
 * round trip reads 20 segments before the first ACK). A burst sent at once spans no tick. */
static bool no_pause_at_end(const struct first_flight *ff, const struct pkt *p)
{
	if (!ff->last_ts || !(p->opt.present & OPT_TS) ||
	    sdiff(ff->last_tsval, ff->first_tsval) < FLIGHT_PACED_MIN_TICKS || !ff->max_tsstep)
		return false;
	int32_t end = sdiff(p->opt.tsval, ff->last_tsval);
	return end >= 0 && end <= 2 * (int32_t)ff->max_tsstep;
}

/* S's next new data p came at the flight's own pace, and S's clock (where it has one) shows no
 * more time before p than inside the flight: nothing shows S stopped. A flight spread over
 * milliseconds (a paced sender whose clock ticks slower than its pace, an evenly spaced crafted
 * capture) that the ACK's arrival cut. Below a millisecond a TSO burst's own scheduling spaces
 * packets by as much as the round trip, and TSecr alone decides. */
static bool even_pace_at_end(const struct flow *f, const struct first_flight *ff, const struct pkt *p)
{
	uint64_t gap = p->ts_us - ff_last_us(f, ff);
	if (ff->max_gap_us < FLIGHT_TIMING_MIN_RTT_US || gap > ff->max_gap_us)
		return false;
	if (ff->last_ts && (p->opt.present & OPT_TS))
		return sdiff(p->opt.tsval, ff->last_tsval) <= (int32_t)ff->max_tsstep;
	return true;
}

/* S's new data p is not in flight 1: the flight ends, with what located its end. What the
 * open flight's membership was decided by is read first: the closed flight's fields take its
 * bytes. */
static void flight_close(struct flow *f, struct first_flight *ff, const struct pkt *p,
                         enum ff_end why, bool pause, const struct flight_opts *o)
{
	bool paced = no_pause_at_end(ff, p) || even_pace_at_end(f, ff, p);
	/* one direction: S's ACK field moved, R had sent data (a request); else the newer echo
	 * came from a pure ACK of S's data */
	bool echo = ff->rule == RULE_ECHO;
	int32_t adv = echo ? sdiff(p->opt.tsecr, ff->first_tsecr) : 0;
	bool ack_moved = echo && p->ack != ff->r_tsval; /* S's ACK field on its first data */
	/* new data after a pause that echoes the flight's TSecr: S had processed nothing from R,
	 * so no ACK released it; a timer sent it (a tail-loss probe, an RTO), which no stack
	 * fires sooner than 1.5 RTTs (RFC 8985: PTO = 2 SRTT) nor within 10 ms */
	uint64_t gap = p->ts_us - ff_last_us(f, ff);
	int64_t rtt = flight_rtt(f);
	bool timer = pause && tsecr_usable(f, ff, p, o) && p->opt.tsecr == ff->last_tsecr &&
	             gap >= FLIGHT_TIMER_MIN_US && (int64_t)gap * 10 >= rtt * FLIGHT_CWND_RTTS_X10;
	ff->state = FF_CLOSED;
	ff->fl_end = ff->snd_nxt;
	ff_set_next_us(f, ff, p->ts_us);
	ff->end = (uint8_t)why;
	ff->next_pause = pause;
	ff->a1_before_next = ff->a1_seen;
	ff->next_payload = p->payload_len > UINT16_MAX ? UINT16_MAX : (uint16_t)p->payload_len;
	ff->paced_end = paced;
	ff->echo_adv = adv < 0 ? 0 : adv > UINT16_MAX ? UINT16_MAX : (uint16_t)adv;
	if (echo) {
		if (ack_moved)
			ff->r_data_before_next = true;
		else
			ff->a1_before_next = true;
	}
	ff->next_timer = timer;
	ff->f2_segs = 0; /* the caller counts the packet that closed it */
	ff->f2_bytes = 0;
	ff->f2_last_64us = 0;
	ff->f2_last_tsval = 0;
}

/* The segments newlen new bytes take: ceil(newlen / smss), one while smss is unknown. */
static uint32_t segments(const struct first_flight *ff, uint32_t newlen)
{
	return ff->smss ? (newlen + ff->smss - 1) / ff->smss : 1;
}

uint32_t flight_own_segment(const struct side *s, bool ts)
{
	uint32_t opt = ts ? 12u : 0u;
	if (!s->syn_seen || !(s->syn.present & OPT_MSS) || s->syn.mss <= opt)
		return 0;
	return s->syn.mss - opt;
}

/* S's own full segment as p shows it (its timestamp option or none). */
static uint32_t own_full_segment(const struct side *s, const struct pkt *p)
{
	return flight_own_segment(s, (p->opt.present & OPT_TS) != 0);
}

/* New data of S after flight 1 closed: counted into the next flight until R acknowledges any
 * of it (what that ACK releases is the flight after) or S pauses for half the handshake RTT
 * (a timer send, the application). At any vantage point the count is at most the flight's. */
static void second_flight(const struct flow *f, const struct side *s, struct first_flight *ff,
                          const struct pkt *p, uint32_t newlen)
{
	uint64_t next_us = ff_next_us(f, ff);
	uint64_t off = (p->ts_us > next_us ? p->ts_us - next_us : 0) >> 6;
	int64_t gap = off > ff->f2_last_64us ? (int64_t)(off - ff->f2_last_64us) * 64 : 0;
	/* back to back: no pause, whatever the RTT; one direction: the flight-to-flight spacing */
	int64_t rtt = !gap ? 0 : ff->rule == RULE_ECHO ? (int64_t)(next_us - ff_first_us(f, ff))
	                                               : flight_rtt(f);
	bool has_ts = (p->opt.present & OPT_TS) != 0;
	if (off > UINT16_MAX)
		ff->f2_done = true; /* a next flight over 4 s long */
	else if (rtt > 0 && gap * FLIGHT_PAUSE_RTT_DIV >= rtt) {
		/* a pause, unless S's clock shows it sent p on the heels of the one before (a queue
		 * or a scheduler held p on the way, as it may hold flight 1's tail) */
		int64_t tick = has_ts && ff->f2_last_ts ? tick_upper_us(f, s, p) : -1;
		int32_t dv = has_ts ? sdiff(p->opt.tsval, ff->f2_last_tsval) : -1;
		if (!(tick > 0 && dv >= 0 && (dv + 1) * tick * FLIGHT_PAUSE_RTT_DIV < rtt))
			ff->f2_done = true;
	}
	if (ff->f2_done)
		return;
	uint32_t n = ff->f2_segs + segments(ff, newlen);
	ff->f2_segs = n > UINT16_MAX ? UINT16_MAX : (uint16_t)n;
	ff->f2_bytes = newlen > UINT32_MAX - ff->f2_bytes ? UINT32_MAX : ff->f2_bytes + newlen;
	uint32_t own = own_full_segment(s, p);
	if (!own || p->payload_len % own)
		ff->f2_ragged = true;
	ff->f2_last_64us = (uint16_t)off;
	ff->f2_last_ts = has_ts;
	ff->f2_last_tsval = p->opt.tsval;
}

/* p, new data of S, joins flight 1. */
static void flight_add(struct flow *f, const struct side *s, struct first_flight *ff,
                       const struct pkt *p, uint32_t newlen)
{
	uint32_t own = own_full_segment(s, p);
	if (!own || p->payload_len % own)
		ff->ragged = true;
	if (ff->segs) {
		if (ff->last_payload < ff->min_inside)
			ff->min_inside = ff->last_payload;
		uint64_t last_us = ff_last_us(f, ff);
		uint64_t gap = p->ts_us > last_us ? p->ts_us - last_us : 0;
		if (!ff->gapped && marks_gap(f, ff, gap))
			ff_set_gap(f, ff, ff->segs, ff->bytes);
		if (gap > ff->max_gap_us)
			ff->max_gap_us = gap > UINT32_MAX ? UINT32_MAX : (uint32_t)gap;
		int32_t step = ff->last_ts && (p->opt.present & OPT_TS)
		                       ? sdiff(p->opt.tsval, ff->last_tsval) : 0;
		if (step > (int32_t)ff->max_tsstep)
			ff->max_tsstep = step > UINT16_MAX ? UINT16_MAX : (uint16_t)step;
	}
	ff->bytes += newlen;
	ff->segs += segments(ff, newlen);
	ff_set_last_us(f, ff, p->ts_us);
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
	if (s->isn_known && ff->state == FF_OPEN && p->payload_len == 0 &&
	    !(p->flags & (TH_SYN | TH_FIN | TH_RST)) && sdiff(p->seq - (s->isn + 1), ff->snd_nxt) < 0)
		ff->probe_sent = true; /* a keep-alive: R answers it with its last ACK again */
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
		uint64_t last_us = ff_last_us(f, ff);
		uint64_t gap = ff->segs && p->ts_us > last_us ? p->ts_us - last_us : 0;
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
			ff->f2_bytes = newlen;
			uint32_t own = own_full_segment(s, p);
			ff->f2_ragged = !own || p->payload_len % own;
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
			flight_add(f, s, ff, p, newlen);
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
/* Whether R's acknowledgement of S's sequence ack (absolute) reaches past all the capture
 * showed S send (its FIN included). */
static bool past_seen(const struct side *s, uint32_t ack)
{
	return sdiff(ack - (s->isn + 1), s->ff.snd_nxt + (s->fin ? 1u : 0u)) > 0;
}

static void receiver_packet(struct flow *f, struct side *s, const struct side *r,
                            const struct pkt *p, const struct flight_opts *o)
{
	struct first_flight *ff = &s->ff;
	if (ff->state == FF_WAIT || !s->isn_known)
		return;
	if (ff->one_dir && ff->state == FF_OPEN) { /* R is in the capture after all */
		ff->one_dir = false;
		ff->r_tsval = 0; /* R's TSval before S's data: R had sent nothing */
		if (ff->rule == RULE_ECHO)
			ff->rule = ts_negotiated(f) && !o->force_timing ? RULE_TSECR : RULE_TIMING;
	}
	/* A duplicate ACK (RFC 5681: no data, the same ACK and window as R's last) acknowledging
	 * all S was seen to send: R received a segment above it, one the capture never showed
	 * (its SACK, where R sends one, says the same below): a flight still open has a hole
	 * where it seems to end */
	if (ff->state == FF_OPEN && ff->snd_nxt && p->payload_len == 0 && !ff->probe_sent &&
	    !ff->r_data_before_next && /* R's own data since, or its FIN, has ACKs of its own */
	    r->isn_known && p->seq == r->snd_max && /* not R's keep-alive, below its own edge */
	    (p->flags & (TH_ACK | TH_SYN | TH_FIN | TH_RST)) == TH_ACK && r->ack_seen &&
	    r->win_known && p->ack == r->ack_max && p->win == r->last_win &&
	    p->ack - (s->isn + 1) == ff->snd_nxt)
		ff->loss = true;
	if (p->flags & TH_ACK)
		ff->probe_sent = false;
	/* R acknowledges bytes of S the capture never showed: lost before the capture point (or
	 * by the capture). A flight still open has a hole; one just closed, on R's first ACK
	 * after it, may have lost its tail and had it sent again as what seemed its next data */
	if ((p->flags & TH_ACK) && past_seen(s, p->ack) &&
	    (ff->state == FF_OPEN || (ff->state == FF_CLOSED && !ff->f2_done)))
		ff->loss = true;
	/* ... and R's first ACK after the flight acknowledging a hole the capture left in S's
	 * data since (the side's newest): the same */
	const struct side_holes *h = flow_holes(f, s);
	if ((p->flags & TH_ACK) && ff->state == FF_CLOSED && !ff->f2_done && h->lo != h->hi &&
	    sdiff(p->ack, h->lo) > 0)
		ff->loss = true;
	if (ff->state == FF_OPEN) {
		if (!ff->a1_seen && (p->flags & TH_ACK) && sdiff(p->ack, s->isn + 1) > 0) {
			uint32_t r_before = ff->r_tsval; /* R's TSval before S's data, until A1 */
			ff->a1_seen = true;
			ff->a1_segs = ff->segs;
			ff->a1_bytes = ff->bytes;
			ff_set_a1_us(f, ff, p->ts_us);
			ff->r_tsval = p->opt.tsval; /* A1's */
			bool ts_ok = ts_negotiated(f) && (p->opt.present & OPT_TS);
			/* A1 with the TSval R sent before S's data: the clock ticked slower than the
			 * round trip, TSecr cannot separate flights (docs/METHOD.md rule 1) -- unless
			 * the server's flight echoes the client's SYN (TFO: sent before the handshake's
			 * ACK reached it), so that what echoes A1's TSval was sent after the server
			 * processed a later packet */
			bool tfo = s == &f->s && (r->syn.present & OPT_TS) &&
			           ff->first_tsecr == r->syn.tsval && ff->first_tsecr != r_before;
			bool same_tick = ff->r_ts_before && p->opt.tsval == r_before && !tfo;
			if (o->force_timing || !ts_ok || same_tick)
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
	/* A SACK block above the cumulative ACK and inside flight 1 means a hole below it; one
	 * that reaches past what S was seen to send, bytes the capture never showed (lost before
	 * the capture point, or by it): a flight still open has a hole where it seems to end. */
	uint32_t fl_end = ff->state == FF_OPEN ? ff->snd_nxt : ff->fl_end;
	for (unsigned i = 0; i < p->opt.nsack; i++) {
		if (sdiff(p->opt.sack_left[i], p->ack) <= 0)
			continue; /* a D-SACK, or nothing above the cumulative ACK */
		uint32_t left = p->opt.sack_left[i] - (s->isn + 1);
		if (sdiff(left, fl_end) < 0 || (ff->state == FF_OPEN && past_seen(s, p->opt.sack_right[i])))
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
