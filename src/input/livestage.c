/* Several interfaces as one capture: each one's frames staged and released in time order. */
#include "livestage.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"

/* Several interfaces: one's frames waiting to be released in time order (a FIFO that never
 * wraps a frame: its bytes move to the front when the end is reached). */
struct stage {
	livestage *lc;
	unsigned link;           /* which capture */
	uint8_t *buf;
	uint64_t size, head, tail; /* bytes; frames are [tail, head) */
	uint64_t last_ts;        /* the latest time stamp this interface handed over */
	uint64_t looked_us;      /* wall clock when its kernel ring was last read */
};


struct livestage {
	capture_live *caps[LIVE_IFACES_MAX];
	unsigned ncaps;
	struct stage stages[LIVE_IFACES_MAX];
	livestage_route_fn route;
	void *arg;
};

static const struct frame *stage_first(const struct stage *st)
{
	return st->head == st->tail ? NULL : (const struct frame *)(st->buf + st->tail);
}

/* Whether a frame stamped ts may be released: no interface can still hand over an earlier
 * one. One whose stage holds frames hands over none earlier than its first (the merge takes
 * the earliest first frame); an empty one none earlier than the latest it handed over, nor
 * than its last look at the kernel's ring less two block timeouts (a frame waits at most one
 * in a partly filled block, the kernel's clock and this one being the same wall clock). */
static bool releasable(const livestage *lc, uint64_t ts)
{
	for (unsigned i = 0; i < lc->ncaps; i++) {
		const struct stage *st = &lc->stages[i];
		if (st->head != st->tail)
			continue;
		uint64_t sure = st->looked_us > 2000u * LIVE_BLOCK_MS ? st->looked_us - 2000u * LIVE_BLOCK_MS : 0;
		if (ts > sure && ts > st->last_ts)
			return false;
	}
	return true;
}

enum release { RELEASE_DUE, RELEASE_ONE, RELEASE_ALL };

/* Releases staged frames to the workers in time order (ties: the interface given first):
 * RELEASE_DUE those no interface can still precede; RELEASE_ONE the earliest, due or not (a
 * stage is full: time order may then break, a frame is never lost); RELEASE_ALL every one
 * (the capture ended). -1 once max_packets are routed. */
static int release(livestage *lc, enum release how)
{
	for (;;) {
		struct stage *first = NULL;
		const struct frame *ff = NULL;
		for (unsigned i = 0; i < lc->ncaps; i++) {
			const struct frame *f = stage_first(&lc->stages[i]);
			if (f && (!ff || f->ts_us < ff->ts_us)) {
				first = &lc->stages[i];
				ff = f;
			}
		}
		if (!ff || (how == RELEASE_DUE && !releasable(lc, ff->ts_us)))
			return 0;
		first->tail += frame_bytes(ff->caplen);
		if (first->tail == first->head)
			first->tail = first->head = 0;
		if (lc->route(lc->arg, first->link, (const uint8_t *)(ff + 1), ff->caplen, ff->wirelen, ff->ts_us) != 0)
			return -1;
		if (how == RELEASE_ONE)
			return 0;
	}
}

/* Whether st has room for need bytes at its end, its frames moved to the front if that helps. */
static bool stage_room(struct stage *st, uint64_t need)
{
	if (st->size - st->head < need && st->tail) {
		memmove(st->buf, st->buf + st->tail, st->head - st->tail);
		st->head -= st->tail;
		st->tail = 0;
	}
	return st->size - st->head >= need;
}

/* A frame of one of several interfaces into its stage. */
static int on_staged(void *arg, int dlt, const uint8_t *data, uint32_t caplen, uint32_t wirelen,
                     uint64_t ts_us)
{
	struct stage *st = arg;
	(void)dlt;
	if (caplen > st->size / 4)
		caplen = (uint32_t)(st->size / 4); /* never: the snaplen is far smaller */
	uint64_t need = frame_bytes(caplen);
	while (!stage_room(st, need)) /* full: the earliest frames go now */
		if (release(st->lc, RELEASE_ONE) != 0)
			return -1;
	struct frame *f = (struct frame *)(st->buf + st->head);
	f->caplen = caplen;
	f->link = st->link;
	f->wirelen = wirelen;
	f->ts_us = ts_us;
	memcpy(f + 1, data, caplen);
	st->head += need;
	if (ts_us > st->last_ts)
		st->last_ts = ts_us;
	return 0;
}

/* Reads every interface's kernel ring (waiting up to timeout_ms for one to have frames) into
 * the stages, and releases what can go. Frames read, or -1 on a capture error (in err, naming
 * the interface) or when max_packets were routed. */
int livestage_round(livestage *lc, int timeout_ms, char *err, size_t errlen)
{
	capture_live_wait(lc->caps, lc->ncaps, timeout_ms);
	int total = 0;
	for (unsigned i = 0; i < lc->ncaps; i++) {
		struct stage *st = &lc->stages[i];
		st->looked_us = (uint64_t)clock_wall_us(); /* before: what it holds is older */
		char why[512] = "";
		int n = capture_live_dispatch(lc->caps[i], on_staged, st, why, sizeof(why));
		if (n < 0) {
			if (why[0])
				snprintf(err, errlen, "%s: %s", capture_live_name(lc->caps[i]), why);
			return -1;
		}
		total += n;
	}
	return release(lc, RELEASE_DUE) != 0 ? -1 : total;
}

void livestage_release_all(livestage *ls)
{
	release(ls, RELEASE_ALL);
}

livestage *livestage_new(capture_live *const *caps, unsigned ncaps, uint64_t bytes,
                         livestage_route_fn route, void *arg)
{
	livestage *ls = calloc(1, sizeof(*ls));
	if (!ls)
		return NULL;
	ls->ncaps = ncaps;
	ls->route = route;
	ls->arg = arg;
	for (unsigned i = 0; i < ncaps; i++) {
		struct stage *st = &ls->stages[i];
		ls->caps[i] = caps[i];
		st->lc = ls;
		st->link = i;
		st->size = bytes;
		if (!(st->buf = aligned_alloc(FRAME_ALIGN, st->size))) {
			livestage_free(ls);
			return NULL;
		}
	}
	return ls;
}

void livestage_free(livestage *ls)
{
	if (!ls)
		return;
	for (unsigned i = 0; i < ls->ncaps; i++)
		free(ls->stages[i].buf);
	free(ls);
}
