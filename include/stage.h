/* stage: nDPI and the sinks on a thread of their own, fed by the engine through a queue, so
 * a file is read and tracked on one core while flows are classified and written on the other. */
#ifndef IWSCOPE_STAGE_H
#define IWSCOPE_STAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "dpi.h"
#include "flow.h"
#include "pkt.h"
#include "record.h"
#include "sink.h"

typedef struct stage stage;

/* Starts the thread; dpi (may be NULL) and the sinks (already begun) belong to it until
 * stage_stop. A dpi not started yet (dpi_new) is started there, first: nDPI's start-up
 * overlaps the reading of the first packets. If it cannot start, the stage fails (-1 from
 * every call; dpi_ready tells why). NULL on failure. */
stage *stage_start(dpi_ctx *dpi, struct sink *sinks, unsigned nsinks);

/* ---- the reading thread's side: which thread inspects a flow ----
 * While the stage has a backlog the reading thread inspects some new flows itself. Which ones
 * follows a model of the stage's backlog in CPU cycles (config.h), estimated from the packets
 * alone so that the same flows go the same way every run. */

/* The reading thread tracked one more TCP packet: work done while the stage works. */
void stage_own_packet(stage *s);

/* A flow that begins, packets frames into the capture: sets f->dpi_here when the reading
 * thread is to inspect it itself, and counts its expected nDPI work where it will run. */
void stage_begin_flow(stage *s, struct flow *f, uint64_t packets);

/* The reading thread's nDPI context for f (f->dpi_here), else NULL: the stage inspects it. */
dpi_ctx *stage_local_dpi(const stage *s, const struct flow *f);

/* Packet p of flow f for nDPI: inspected here (into here, f's state beside the flow table:
 * flow_dpi_state; NULL: not inspected), or handed to the stage (if nDPI still wants it). 0, or
 * -1 once a sink has failed. */
int stage_inspect(stage *s, struct flow *f, struct dpi_state *here, const struct pkt *p);

/* f's record rec at its end: nDPI's fields are added (here or on the stage's thread) and it is
 * written; f's slot is free for its next flow. Copied. 0, or -1 once a sink has failed. */
int stage_flow_end(stage *s, struct flow *f, struct dpi_state *here, struct flow_record *rec);

/* Most nDPI states alive at once in the reading thread's context. */
uint64_t stage_local_peak(const stage *s);

/* Asks the sinks to commit what is pending (on the stage's thread). 0 or -1. */
int stage_tick(stage *s);

/* Closes the reading thread's nDPI, drains the queue, joins the thread and frees the stage.
 * 0, or -1 if a sink failed. */
int stage_stop(stage *s);

#endif
