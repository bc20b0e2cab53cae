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

/* Packet p of flow f for the stage's nDPI (if nDPI still wants it). 0, or -1 once a sink has
 * failed. */
int stage_inspect(stage *s, struct flow *f, const struct pkt *p);

/* f's record rec at its end: nDPI's fields are added on the stage's thread and it is written;
 * f's slot is free for its next flow. Copied. 0, or -1 once a sink has failed. */
int stage_flow_end(stage *s, struct flow *f, struct flow_record *rec);

/* Asks the sinks to commit what is pending (on the stage's thread). 0 or -1. */
int stage_tick(stage *s);

/* Hands over what is queued, lets the thread drain it and end (its nDPI and sinks stay the
 * caller's to close), joins it and frees the stage. 0, or -1 if a sink failed. */
int stage_stop(stage *s);

#endif
