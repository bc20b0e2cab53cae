/* stage: nDPI and the sinks on a thread of their own, fed by the engine through a queue, so
 * a file is read and tracked on one core while flows are classified and written on the other. */
#ifndef IWSCOPE_STAGE_H
#define IWSCOPE_STAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "dpi.h"
#include "record.h"
#include "sink.h"

typedef struct stage stage;

/* Starts the thread; dpi (may be NULL) and the sinks (already begun) belong to it until
 * stage_stop. A dpi not started yet (dpi_new) is started there, first: nDPI's start-up
 * overlaps the reading of the first packets. If it cannot start, the stage fails (-1 from
 * every call; dpi_ready tells why). NULL on failure. */
stage *stage_start(dpi_ctx *dpi, struct sink *sinks, unsigned nsinks);

/* Waits until the stage's nDPI has started (or failed to), so that no two nDPI start-ups run
 * at once: nDPI does not promise that they may. */
void stage_dpi_wait(stage *s);

/* One payload packet for nDPI of the flow in the flow table's slot (index + 1; its IP header
 * at ip, ip_cap bytes). 0, or -1 once a sink has failed. */
int stage_packet(stage *s, uint32_t slot, const uint8_t *ip, uint32_t ip_cap, uint64_t ts_us);

/* The record of the flow in slot at its end: the stage adds nDPI's fields and writes it, and
 * the slot is free for its next flow. Copied. 0, or -1 once a sink has failed. */
int stage_record(stage *s, uint32_t slot, const struct flow_record *rec);

/* A record whose nDPI fields are filled already (the engine ran nDPI on that flow itself):
 * written as it is. Copied. 0, or -1 once a sink has failed. */
int stage_row(stage *s, const struct flow_record *rec);

/* Asks the sinks to commit what is pending (on the stage's thread). 0 or -1. */
int stage_tick(stage *s);

/* Drains the queue, joins the thread and frees the stage. 0, or -1 if a sink failed. */
int stage_stop(stage *s);

#endif
