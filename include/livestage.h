/* livestage: several interfaces as one capture (a tap's ports): each one's frames wait in a
 * stage of their own and are released in time-stamp order, a frame only once no interface can
 * still hand over an earlier one (livestage.c's releasable()). Used by livecap.c's capture
 * thread only; the frame header is the one of its workers' rings. */
#ifndef IWSCOPE_LIVESTAGE_H
#define IWSCOPE_LIVESTAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture.h"
#include "config.h"

/* A frame in a worker's ring or an interface's stage: this header, then caplen bytes, padded
 * to FRAME_ALIGN. */
struct frame {
	uint32_t caplen : 24;  /* at most a quarter of a ring (4 MiB) */
	uint32_t link : 8;     /* the capture it came from (its link type), 0 .. LIVE_IFACES_MAX-1 */
	uint32_t wirelen;
	uint64_t ts_us;
};
#define FRAME_ALIGN 16u
_Static_assert(sizeof(struct frame) == FRAME_ALIGN, "a frame header is one alignment unit");
#define FRAME_WRAP 0xFFFFFFu /* caplen of a header that says: go on at the ring's start */
_Static_assert((uint64_t)LIVE_RING_KIB * 1024u / 4 < FRAME_WRAP, "caplen fits its field");
_Static_assert(LIVE_IFACES_MAX <= 256, "link fits its field");

/* A frame's bytes in a ring or a stage, header included. */
static inline uint64_t frame_bytes(uint32_t caplen)
{
	return sizeof(struct frame) + ((caplen + FRAME_ALIGN - 1) & ~(uint64_t)(FRAME_ALIGN - 1));
}

/* Where a released frame goes (the worker that owns its connection): 0, or -1 to stop (every
 * frame wanted is routed). link: the capture it came from, 0 .. ncaps-1. */
typedef int (*livestage_route_fn)(void *arg, unsigned link, const uint8_t *data, uint32_t caplen,
                                  uint32_t wirelen, uint64_t ts_us);

typedef struct livestage livestage;

/* Stages of bytes each for the ncaps captures (borrowed), released to route(arg, ...). NULL when
 * out of memory. */
livestage *livestage_new(capture_live *const *caps, unsigned ncaps, uint64_t bytes,
                         livestage_route_fn route, void *arg);

/* Reads every interface's kernel ring (waiting up to timeout_ms for one to have frames) into
 * the stages, and releases what can go. Frames read, or -1 on a capture error (in err, naming
 * the interface) or when route said stop. */
int livestage_round(livestage *ls, int timeout_ms, char *err, size_t errlen);

/* The capture ended: every staged frame is released, in time order. */
void livestage_release_all(livestage *ls);

void livestage_free(livestage *ls);

#endif
