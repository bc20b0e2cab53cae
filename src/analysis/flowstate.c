/* A flow's own state beside the table (flow.c): its times as offsets from its first packet,
 * its sides' counts and the sequence the capture skipped, and what rarely does not fit them,
 * kept exact out of line (struct flow_wide), allocated on demand and freed with the flow. */
#include <stdlib.h>

#include "flow.h"

/* flow.h, README's Memory section and --version's figure (flow_slot_bytes) follow this size */
_Static_assert(sizeof(void *) != 8 || sizeof(struct flow) == 352, "struct flow is not 352 bytes");

struct flow_wide *flow_wide(struct flow *f)
{
	if (!f->wide && !(f->wide = calloc(1, sizeof(*f->wide))))
		f->lost = true; /* no memory: what needed it is unknown, never wrong */
	return f->wide;
}

void flow_count_wide(struct flow *f, struct side *sd, uint32_t len)
{
	int i = flow_end(f, sd);
	if (!sd->counts_wide) {
		struct flow_wide *w = flow_wide(f);
		if (!w) { /* lost: the 32-bit counts stop at their maximum (pkts stays nonzero) */
			sd->pkts += sd->pkts < UINT32_MAX;
			sd->bytes = sd->bytes <= UINT32_MAX - len ? sd->bytes + len : UINT32_MAX;
			return;
		}
		w->pkts[i] = sd->pkts;
		w->bytes[i] = sd->bytes;
		sd->counts_wide = true;
	}
	f->wide->pkts[i]++;
	f->wide->bytes[i] += len;
}

/* Follows the sequence side sd of f skipped in the capture as its segment [start, end) arrives
 * (before snd_max moves): a segment beyond snd_max opens a hole (the last one left becomes
 * unseen; a pure ACK's sequence number shows what was sent before it too), one below it fills
 * the newest hole. A segment inside it keeps its lower part; the upper part counts as unseen
 * (one hole is followed: a later fill of that part is not seen). The first hole moves the
 * side's holes to wide (all zero before: nothing for the rest to do). */
static void side_holes(struct flow *f, struct side *sd, uint32_t start, uint32_t end)
{
	bool opens = (int32_t)(start - sd->snd_max) > 0;
	if (!sd->holed) {
		if (!opens || !flow_wide(f))
			return;
		sd->holed = true;
	}
	struct side_holes *h = &f->wide->holes[flow_end(f, sd)];
	if (opens) {
		h->unseen += h->hi - h->lo;
		h->lo = h->mark = sd->snd_max;
		h->hi = start;
		return;
	}
	if (end == start || h->lo == h->hi || (int32_t)(end - h->lo) <= 0 ||
	    (int32_t)(start - h->hi) >= 0)
		return;
	if ((int32_t)(start - h->lo) <= 0) {
		h->lo = (int32_t)(end - h->hi) >= 0 ? h->hi : end;
	} else {
		if ((int32_t)(end - h->hi) < 0)
			h->unseen += h->hi - end;
		h->hi = start;
	}
}

void flow_side_update(struct flow *f, int dir, const struct pkt *p)
{
	struct side *sd = dir == 0 ? &f->c : &f->s;
	flow_count_sent(f, sd, p->payload_len);
	if (p->opt.present & OPT_TS) {
		sd->last_tsval = p->opt.tsval;
		sd->ts_seen = true;
	}
	sd->last_win = p->win;
	sd->win_known = true;
	sd->win_is_syn = (p->flags & TH_SYN) != 0;
	if (sd->isn_known) {
		uint32_t end = p->seq + p->payload_len + ((p->flags & (TH_SYN | TH_FIN)) ? 1 : 0);
		side_holes(f, sd, p->seq, end);
		if ((int32_t)(end - sd->snd_max) > 0)
			sd->snd_max = end;
	}
	if (p->flags & TH_ACK) {
		if (!sd->ack_seen || (int32_t)(p->ack - sd->ack_max) > 0)
			sd->ack_max = p->ack;
		sd->ack_seen = true;
	}
}

uint32_t flow_acked_unseen(const struct flow *f, int dir)
{
	const struct side *sd = dir == 0 ? &f->c : &f->s, *peer = dir == 0 ? &f->s : &f->c;
	if (!sd->isn_known || !peer->ack_seen)
		return 0;
	/* an ACK behind sd's ISN belongs to nothing sd sent (a stray or an earlier connection) */
	if ((int32_t)(peer->ack_max - (sd->isn + 1)) < 0)
		return 0;
	uint32_t ack = peer->ack_max, n = 0;
	int32_t d = (int32_t)(ack - sd->snd_max);
	if (d > 0)
		n += (uint32_t)d;
	/* the holes: the newest as far as the ACK covers it, older ones once it passed them */
	const struct side_holes *h = flow_holes(f, sd);
	if (h->lo != h->hi && (int32_t)(ack - h->lo) > 0)
		n += (int32_t)(ack - h->hi) >= 0 ? h->hi - h->lo : ack - h->lo;
	if (h->unseen && (int32_t)(ack - h->mark) >= 0)
		n += h->unseen;
	return n;
}

bool flow_one_direction(const struct flow *f)
{
	const struct side *only = f->s.pkts == 0 ? &f->c : f->c.pkts == 0 ? &f->s : NULL;
	return only && only->pkts > 0 && only->ack_seen;
}

unsigned flow_syn_opts_cut(const struct flow *f)
{
	unsigned n = 0;
	if (f->c.syn_seen && (f->c.syn.quirks & Q_OPT_CUT))
		n += 1u + f->c.syn.retx;
	if (f->s.syn_seen && (f->s.syn.quirks & Q_OPT_CUT))
		n += 1u + f->s.syn.retx;
	return n;
}

/* The time w shares its offset with (the same time but in a simultaneous open), or FT_N. */
static enum flow_time time_partner(enum flow_time w)
{
	return w == FT_C_SYN ? FT_SYN : w == FT_SYN ? FT_C_SYN : w == FT_S_SYN ? FT_SYNACK
	     : w == FT_SYNACK ? FT_S_SYN : FT_N;
}

void flow_set_time(struct flow *f, enum flow_time w, uint64_t t)
{
	bool seen = t != 0;
	if (w == FT_C_SYN)
		f->c.syn_seen = seen;
	else if (w == FT_S_SYN)
		f->s.syn_seen = seen;
	else
		f->hs_seen = (uint8_t)((f->hs_seen & ~(1u << w)) | (unsigned)seen << w);
	if (!seen || f->times_lost)
		return;
	if (f->times_wide) {
		f->wide->us[w] = t;
		return;
	}
	/* modulo 2^64 both ways: an offset in range gives t back exactly; one shared with a time
	 * seen holds both only if they are the same */
	int64_t d = (int64_t)(t - f->first_us);
	enum flow_time other = time_partner(w);
	if (d >= INT32_MIN && d <= INT32_MAX &&
	    (other == FT_N || !flow_seen(f, other) || flow_time(f, other) == t)) {
		f->hs_off[w == FT_C_SYN ? FT_SYN : w == FT_S_SYN ? FT_SYNACK : w] = (int32_t)d;
		return;
	}
	/* the rare flow whose time is too far from its first packet, or differs from the one its
	 * offset holds: all its times exact, out of line (the others first, from their offsets) */
	if (!f->wide && !(f->wide = calloc(1, sizeof(*f->wide)))) {
		f->times_lost = true; /* no memory: unknown, never a wrong time */
		return;
	}
	for (int i = 0; i < FT_N; i++)
		f->wide->us[i] = i == (int)w ? t : flow_time(f, (enum flow_time)i);
	f->times_wide = true;
}

void flow_set_last_wide(struct flow *f, uint64_t t)
{
	if (!f->last_wide) {
		if (!flow_wide(f)) {
			f->last_off = UINT32_MAX; /* lost: the duration is unknown */
			return;
		}
		f->last_wide = true;
	}
	f->wide->last_us = t;
}

void ff_set_first_us(struct flow *f, struct first_flight *ff, uint64_t t)
{
	int64_t d = (int64_t)(t - f->first_us);
	if (d >= INT32_MIN && d <= INT32_MAX) {
		ff->first_off = (int32_t)d;
		ff->first_wide = false;
		return;
	}
	if (!flow_wide(f))
		return; /* lost: no verdict */
	f->wide->ff_first_us[ff == &f->s.ff] = t;
	ff->first_wide = true;
}

void ff_set_gap(struct flow *f, struct first_flight *ff, uint32_t segs, uint32_t bytes)
{
	if (!flow_wide(f))
		return; /* lost: no verdict */
	f->wide->gap_segs[ff == &f->s.ff] = segs;
	f->wide->gap_bytes[ff == &f->s.ff] = bytes;
	ff->gapped = true;
}

void ff_set_next_us(struct flow *f, struct first_flight *ff, uint64_t t)
{
	int64_t d = (int64_t)(t - ff_first_us(f, ff));
	if (d >= INT32_MIN && d <= INT32_MAX) {
		ff->next_off = (int32_t)d;
		ff->next_wide = false;
		return;
	}
	if (!flow_wide(f))
		return; /* lost: no verdict */
	f->wide->ff_next_us[ff == &f->s.ff] = t;
	ff->next_wide = true;
}
