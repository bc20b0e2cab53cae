/* Why a first flight stopped (docs/METHOD.md "Why the flight stopped"): the verdict on what
 * flight.c recorded, judged when the flow is written, with the evidence beside it (struct
 * ff_verdict): cwnd, rwnd, nagle, app, ambiguous or loss, and from one direction the same by
 * the sender's own echoes. */
#include <string.h>

#include "config.h"
#include "flight.h"

/* Whether a tail held on the way for up to a round trip (Wi-Fi aggregation, a cellular
 * scheduler) could have reached the vantage point just when data released by an ACK would:
 * S's packets crossed part of the path before the capture (S's leg is over an eighth of the
 * round trip, or unknown). Timing alone then cannot tell the two apart; S's echoes can. */
static bool hold_possible(const struct flow *f, int sender)
{
	int64_t leg = flight_rtt_leg(f, sender == 1 ? 1 : 0), rtt = flight_rtt(f);
	return leg < 0 || rtt <= 0 || leg * FLIGHT_NEAR_S_DIV > rtt;
}

/* The round trip the flight itself shows: S's leg of the handshake and R's, R's being the
 * shorter of its handshake leg and the time from the flight's first packet to its first ACK at
 * the vantage point. A busy host can stretch one handshake packet past a millisecond while its
 * data goes round in microseconds (the truth lab's veth pair read IW8 for IW16 so); -1 unknown. */
static int64_t data_rtt(const struct flow *f, int sender)
{
	const struct first_flight *ff = sender == 0 ? &f->c.ff : &f->s.ff;
	int64_t rtt = flight_rtt(f);
	int64_t s_leg = flight_rtt_leg(f, sender == 1 ? 1 : 0);
	int64_t r_leg = flight_rtt_leg(f, sender == 1 ? 0 : 1);
	if (rtt < 0 || !ff->a1_seen || ff->a1_off < 0)
		return rtt;
	int64_t r_data = (int64_t)ff->a1_off;
	return r_data < r_leg ? s_leg + r_data : rtt;
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
	if (!r->syn_seen || !s->syn_seen)
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
	return a->syn_seen && b->syn_seen && !((a->syn.present | b->syn.present) & OPT_MSS) &&
	       !((a->syn.quirks | b->syn.quirks) & Q_OPT_CUT);
}

/* The flight spread over more than the handshake's round trip, and R acknowledged none of it
 * while it passed: no receiver stays silent that long through two full segments (RFC 5681
 * 4.2: an ACK for at least every second one), so these are not a network's times (a crafted
 * capture's even clock) or R's ACKs are missing; nothing shows the window stopped it. */
static bool silent_receiver(const struct flow *f, const struct first_flight *ff)
{
	int64_t rtt = flight_rtt(f);
	return rtt > 0 && ff->segs >= 2 && ff->a1_seen && ff->a1_segs >= ff->segs &&
	       (int64_t)(ff_last_us(f, ff) - ff_first_us(f, ff)) > rtt;
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
static void one_dir_verdict(const struct first_flight *ff, uint16_t m, uint32_t own,
                            struct ff_verdict *v)
{
	/* the flight in segments of m: its packets counted one each while R's MSS was unknown,
	 * super-packets captured on S's host hold several */
	bool super = m && ff->max_payload > m;
	uint32_t segs = super ? (ff->bytes + m - 1u) / m : ff->segs;
	if (super)
		v->segs = segs;
	if (ff->rule == RULE_ECHO && ff->state == FF_CLOSED && ff->end == FF_END_PAUSE &&
	    ff->next_timer && !ff->timer_gap && !ff->r_data_before_next) {
		v->next = FF_NEXT_TIMER;
		v->limit = !m ? LIMIT_AMBIGUOUS : ends_full(ff, m) ? LIMIT_CWND : LIMIT_NAGLE;
		return;
	}
	if (ff->rule != RULE_ECHO || ff->state != FF_CLOSED || ff->end != FF_END_TSECR ||
	    ff->r_data_before_next || ff->echo_adv < FLIGHT_ECHO_MIN_TICKS || ff->timer_gap) {
		v->limit = LIMIT_UNKNOWN; /* nothing here shows where the flight ended */
		v->segs = v->bytes = 0;
		return;
	}
	v->next = FF_NEXT_ACK;
	if (ff->paced_end) {
		v->next = FF_NEXT_PACED;
		v->limit = LIMIT_AMBIGUOUS;
		return;
	}
	bool edge = at_window_edge(segs, ff->bytes, m);
	uint32_t f2_min = edge ? 2u * segs - 1u : segs + 1u;
	/* the next flight in segments of m: its packets were counted one each (R's MSS unknown
	 * while it passed); where m is S's own full segment and every packet of it a multiple of
	 * that, super-packets captured on S's host, its bytes over m (a guessed m, an
	 * application's writes, says nothing of larger packets) */
	uint32_t f2 = ff->f2_segs;
	if (m && m == own && !ff->f2_ragged && ff->f2_bytes / m > f2)
		f2 = ff->f2_bytes / m;
	/* a 6 KB receive window (4 x 1460, Linux <= 2.6.38) grows as data arrives: not even a
	 * doubled next flight rules it out */
	bool six_kb = ff->bytes <= 5840u && ff->bytes + m > 5840u;
	if (!m) /* no sure segment size: whether the last was full is unknown */
		v->limit = LIMIT_AMBIGUOUS;
	else if (!ends_full(ff, m))
		v->limit = LIMIT_NAGLE;
	else if (f2 >= f2_min && !six_kb)
		v->limit = LIMIT_CWND;
	else
		v->limit = LIMIT_APP;
}

/* The handshake was timed but is no round trip: a SYN or SYN-ACK sent again (Karn). */
static bool rtt_unmeasured(const struct flow *f)
{
	return flight_rtt(f) <= 0 && handshake_leg(f, 0) >= 0 && handshake_leg(f, 1) >= 0;
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
	int64_t rtt = flight_rtt(f), gap = (int64_t)(ff_next_us(f, ff) - ff_last_us(f, ff));
	if (rtt_unmeasured(f))
		/* a SYN or SYN-ACK sent again: no round trip is known, so nothing shows the next data
		 * came on the heels of the ACK (what the handshake took is an upper bound, and an
		 * application's pause within it read as released) */
		return FF_NEXT_LATE;
	if (rtt > 0)
		return gap * 10 <= rtt * FLIGHT_CWND_RTTS_X10 ? FF_NEXT_ACK : FF_NEXT_LATE;
	return ff->end == FF_END_TSECR ? FF_NEXT_ACK : FF_NEXT_LATE;
}

/* A lower bound: without the TSecr rule, only what came before the flight's first marked
 * silence is sure (docs/METHOD.md "Ambiguous"). */
static void ambiguous(const struct flow *f, const struct first_flight *ff, struct ff_verdict *v)
{
	v->limit = LIMIT_AMBIGUOUS;
	if (ff->rule != RULE_TSECR && ff->gapped) {
		v->segs = ff_gap_segs(f, ff);
		v->bytes = ff_gap_bytes(f, ff);
	}
}

/* The largest segment S can have sent: its own SYN's MSS, which is its route's MTU less 40 (no
 * segment S sends is larger; a packet that is was captured on S's host before TSO or GSO split
 * it); 0 where S's SYN shows none (cut, or not captured). */
static uint16_t sender_mss_cap(const struct side *s)
{
	return s->syn_seen && (s->syn.present & OPT_MSS) ? s->syn.mss : 0;
}

/* Two or more segments of a common size (1460, 1448 on Ethernet without and with timestamps;
 * 1440, 1428 over IPv6): a TSO or GSO super-packet captured on S's host, whatever S's MSS
 * allows (a jumbo-frame host sends its TSO chunks of a normal path's segments too). */
static bool super_multiple(uint32_t len)
{
	static const uint16_t common[] = {1460, 1448, 1440, 1428};
	for (size_t i = 0; i < sizeof(common) / sizeof(common[0]); i++)
		if (len >= 2u * common[i] && len % common[i] == 0)
			return true;
	return false;
}

/* An Ethernet's MSS (1460, 1440 over IPv6), where S's own is unknown. */
static uint16_t ethernet_mss(const struct flow *f)
{
	return f->ip_ver == 6 ? 1440 : 1460;
}

/* The largest segment S can send as far as the capture shows: its SYN's MSS, else an
 * Ethernet's. */
static uint16_t sender_cap(const struct flow *f, const struct side *s)
{
	return sender_mss_cap(s) ? sender_mss_cap(s) : ethernet_mss(f);
}

/* One direction: the flight is super-packets captured on S's host, every one a multiple of
 * S's own full segment, one at least above any single Ethernet segment: counted in that
 * segment. S's segments can be larger than its own MSS says (a route's advmss, a clamp on
 * its SYN), but sizes that many all divide would be a coincidence, unless S's own is half a
 * segment or less (an advmss of 736 over 1448-byte segments and their super-packets: every
 * multiple of 1448 is one of 724), so two of S's own must exceed an Ethernet segment and a
 * packet at least one must; smaller segments dividing S's own (1448 / 2: a path MSS of 736 on
 * R's side) no path we know has. 0 where this is not such a flight. */
static uint32_t own_super(const struct flow *f, const struct side *s)
{
	const struct first_flight *ff = &s->ff;
	uint32_t own = flight_own_segment(s, ff->last_ts);
	return ff->one_dir && !ff->ragged && own >= SMSS_GUESS_MIN && 2u * own > ethernet_mss(f) &&
	               ff->max_payload >= 2u * own && ff->max_payload > ethernet_mss(f)
	           ? own
	           : 0;
}

/* The segment size a flight is counted in: R's MSS less S's options; the flight's own full
 * size where its packets are smaller (path MTU), or where R's MSS is unknown (cut, or R's SYN
 * not captured) seen twice (the first packet after the flight counts) and within what S can
 * send (at most its cap; at least half of it or RFC 1122's default MSS less a timestamp
 * option: a super-packet, or an application's small writes, are no segment size); from one
 * direction, S's own full segment over a flight of its super-packets (own_super). 0 = none is
 * sure. */
static uint16_t flight_smss(const struct flow *f, const struct side *s)
{
	const struct first_flight *ff = &s->ff;
	uint16_t m = ff->smss;
	if (m)
		return ff->n_max >= 2 && ff->max_payload < m && 2u * ff->max_payload >= m
		               ? ff->max_payload
		               : m;
	uint16_t cap = sender_cap(f, s);
	uint32_t own = own_super(f, s);
	if (own)
		return (uint16_t)own;
	if (ff->max_payload > cap || (2u * ff->max_payload < cap && ff->max_payload < SMSS_GUESS_MIN) ||
	    super_multiple(ff->max_payload))
		return 0;
	/* a jumbo-frame host: a packet above an Ethernet's MSS is one of its own full segments
	 * (its MSS less options) or TSO chunks of a normal path's segments (1380-byte clamps
	 * too), not a size of its own */
	if (ff->max_payload > ethernet_mss(f) && (uint32_t)ff->max_payload + 40u < cap)
		return 0;
	if (ff->n_max >= 2 || (ff->n_max == 1 && ff->state == FF_CLOSED &&
	                       ff->next_payload == ff->max_payload))
		return ff->max_payload;
	return 0;
}

/* S's next data came on an ACK or a timer: S had more to send at once, so its window stopped
 * the flight, unless the flight ended on a short segment and the rest waited for its ACK
 * (Nagle, one message per round trip). */
static void released_verdict(const struct side *s, const struct side *r,
                             const struct first_flight *ff, uint16_t m, uint32_t by_bytes,
                             bool small_inside, struct ff_verdict *v)
{
	v->limit = !m ? LIMIT_AMBIGUOUS : ends_full(ff, m) ? LIMIT_CWND : LIMIT_NAGLE;
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
		else if (crafted(s, r) || ff->bytes > FLIGHT_EXACT_MAX_BYTES)
			v->limit = LIMIT_AMBIGUOUS;
	}
}

static void judge(const struct flow *f, int sender, struct ff_verdict *v)
{
	const struct side *s = sender == 0 ? &f->c : &f->s;
	const struct side *r = sender == 0 ? &f->s : &f->c;
	const struct first_flight *ff = &s->ff;
	memset(v, 0, sizeof(*v));
	v->pause_us = -1;
	/* no handshake; or what the flight needed out of line was not kept (no memory) */
	if (f->roles_guessed || !s->isn_known || f->lost) {
		v->limit = LIMIT_UNKNOWN;
		return;
	}
	if (ff->state == FF_WAIT) {
		v->limit = LIMIT_NONE;
		return;
	}
	uint16_t m = flight_smss(f, s);
	/* the row's segment size: a flight of one size seen once still shows its own (the count
	 * and "full" use only a size that is sure), unless larger than S can send (a super-packet
	 * captured on S's host: unknown) */
	v->smss = m ? m : ff->max_payload <= sender_cap(f, s) || !sender_mss_cap(s) ? ff->max_payload : 0;
	v->rule = (enum ff_rule)ff->rule;
	v->end = (enum ff_end)ff->end;
	v->next = next_kind(f, ff);
	if (ff->state == FF_CLOSED)
		v->pause_us = (int64_t)(ff_next_us(f, ff) - ff_last_us(f, ff));
	v->segs = ff->segs;
	v->bytes = ff->bytes;
	if (ff->loss) {
		v->limit = LIMIT_LOSS;
		return;
	}
	if (ff->time_cut) { /* times past their 32-bit offsets: what they decided is not sure */
		v->pause_us = -1;
		ambiguous(f, ff, v);
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
		one_dir_verdict(ff, m, flight_own_segment(s, ff->last_ts), v);
		if (v->limit == LIMIT_CWND && small_inside)
			v->limit = LIMIT_APP;
		else if (v->limit == LIMIT_CWND && ff->bytes > FLIGHT_EXACT_MAX_BYTES)
			v->limit = LIMIT_AMBIGUOUS;
		return;
	}
	/* a pause that a held tail may have made, or timing at a round trip the sending host's
	 * own scheduling can exceed: the end is not shown; what came before it is a lower bound */
	int64_t rtt = data_rtt(f, sender);
	bool sub_ms = ff->rule == RULE_TIMING && rtt >= 0 && rtt < FLIGHT_TIMING_MIN_RTT_US;
	if (sub_ms && ff->a1_seen && ff->a1_segs < ff->segs) {
		/* what came before A1 passed here no ACK had released; the rest timing cannot place */
		v->limit = LIMIT_AMBIGUOUS;
		v->segs = ff->a1_segs;
		v->bytes = ff->a1_bytes;
		return;
	}
	if (ff->state == FF_CLOSED && (ff->next_unsure || sub_ms)) {
		ambiguous(f, ff, v);
		return;
	}
	/* Timing alone (no usable timestamps): the end is not visible where a silence inside the
	 * flight stands out of its spacing (the handshake's RTT may have overstated the data's),
	 * or where rule 2 put the boundary with no pause there (a queue before the vantage point
	 * spread the flight over more than the round trip). A lower bound up to what is sure. */
	if (ff->rule != RULE_TSECR && ff->state == FF_CLOSED && ff->end == FF_END_TIMING &&
	    !ff->next_pause && v->next != FF_NEXT_REQUEST) {
		ambiguous(f, ff, v);
		return;
	}
	if (ff->rule != RULE_TSECR && ff->gapped) {
		ambiguous(f, ff, v);
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
	if (v->next == FF_NEXT_ACK && ff->paced_end) {
		v->next = FF_NEXT_PACED; /* S was still sending when the ACK came */
		v->limit = LIMIT_AMBIGUOUS;
		return;
	}
	if (v->next == FF_NEXT_ACK || v->next == FF_NEXT_TIMER) {
		released_verdict(s, r, ff, m, by_bytes, small_inside, v);
		if (v->limit == LIMIT_CWND && silent_receiver(f, ff))
			v->limit = LIMIT_AMBIGUOUS;
		/* released, or a tail held on the way for a round trip: timing cannot tell */
		if (v->limit == LIMIT_CWND && ff->rule == RULE_TIMING && hold_possible(f, sender))
			v->limit = LIMIT_AMBIGUOUS;
	} else if (v->next == FF_NEXT_LATE && rtt_unmeasured(f))
		v->limit = LIMIT_AMBIGUOUS; /* no round trip to say "much later" against (Karn) */
	else
		v->limit = LIMIT_APP; /* nothing more, after R's data, or much later: S stopped */
}

void flight_verdict(const struct flow *f, int sender, struct ff_verdict *v)
{
	judge(f, sender, v);
	/* a lower bound where packets shorter than a segment sat inside the flight: a sender that
	 * counts bytes (RFC 3390's and RFC 6928's limits are in bytes) held fewer segments than
	 * packets, so the bound is what either kind had room for, ceil(bytes / smss) */
	const struct side *s = sender == 0 ? &f->c : &f->s;
	const struct first_flight *ff = &s->ff;
	uint16_t m = flight_smss(f, s);
	if (v->limit == LIMIT_CWND || v->limit == LIMIT_UNKNOWN || v->limit == LIMIT_NONE || !v->segs)
		return;
	if (!m && !ff->smss) {
		/* no sure segment size, and the flight counted in packets: a small write is less
		 * than a segment (a sender counting bytes held fewer). No segment is larger than the
		 * largest of S's MSS, an Ethernet's and the largest packet (S's SYN may understate
		 * what S sends: a route's advmss, a SYN proxy), so the flight held at least its bytes
		 * over that many; never more than its packets */
		uint32_t cap = sender_mss_cap(s);
		if (cap < ethernet_mss(f))
			cap = ethernet_mss(f);
		if (cap < ff->max_payload)
			cap = ff->max_payload;
		uint32_t by = v->bytes ? (v->bytes + cap - 1u) / cap : v->segs;
		if (by < v->segs)
			v->segs = by;
		return;
	}
	if (!m || ff->min_inside >= m)
		return;
	uint32_t by_bytes = (v->bytes + m - 1u) / m;
	if (by_bytes < v->segs)
		v->segs = by_bytes ? by_bytes : 1;
}
