/* engine: the analysis pipeline for one run — decode, flow table, handshake and flight
 * trackers, nDPI — handing each finished flow to the sinks. */
#ifndef IWSCOPE_ENGINE_H
#define IWSCOPE_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "dpi.h"
#include "flow.h"
#include "record.h"
#include "sink.h"

struct engine_opts {
	uint32_t flow_cap;  /* open flows at most */
	bool force_timing;  /* first flights by timing even with timestamps */
	bool threaded;      /* nDPI and the sinks on a second thread (capture files) */
	bool early_rows;    /* a flow's row as soon as its verdicts are final, updated at its end
	                     * (live and replay: rows while flows last); not with threaded */
	uint32_t key_step;  /* engines of one run (live workers) number their flows apart: keys */
	uint32_t key_first; /* key_first + 1, + key_step + 1, ...; 0 and 0 mean 1, 2, 3, ... */
	const char *const *source_files; /* capture files by index (borrowed for the run): a row's
	                                  * source_file is the one its flow began in; NULL: none */
};

typedef struct engine engine;

/* Creates an engine writing to nsinks sinks (borrowed); dpi may be NULL. NULL on failure. */
engine *engine_new(const struct engine_opts *o, struct sink *sinks, unsigned nsinks, dpi_ctx *dpi);
void engine_free(engine *e);

/* Analyses one captured frame. Returns 0, or -1 when a sink failed (the run must stop). */
int engine_packet(engine *e, int dlt, const uint8_t *data, uint32_t caplen, uint32_t wirelen,
                  uint64_t ts_us);

/* Prefetching (flow_prefetch): call before each engine_packet with the frame that will follow
 * it, when the reader has it at hand; its bucket is fetched now and its flow at the next call.
 * Changes nothing else. */
void engine_prefetch(engine *e, int dlt, const uint8_t *data, uint32_t caplen);

/* Expires flows idle at wall-clock time now_us (live capture: time goes on without packets).
 * 0 or -1 on sink failure. */
int engine_expire_at(engine *e, uint64_t now_us);

/* The packets that follow come from opts.source_files[i]: new flows are stamped with it. */
void engine_source_file(engine *e, unsigned i);

/* Packets seen so far. */
uint64_t engine_packets(const engine *e);

/* Capture time of the newest packet (or expiry time), microseconds. */
uint64_t engine_now(const engine *e);

/* Flows open now. */
uint32_t engine_open_flows(const engine *e);

/* Writes out every open flow with the given end reason. 0 or -1 on sink failure. */
int engine_flush(engine *e, enum end_reason why);

/* Asks the sinks to commit what is pending. 0 or -1 on sink failure. */
int engine_tick(engine *e);

/* Waits until every flow handed over is written (the second thread, if any, is done and
 * nDPI's counters are final). Call after engine_flush, before ending the sinks. 0, or -1 if a
 * sink failed. */
int engine_finish(engine *e);

/* Copies the run counters into run (packets, bytes, decode reasons, flows, evictions, what the
 * capture lacks). */
void engine_stats(const engine *e, struct run_info *run);

#endif
