/* livecap: live capture on every core. One thread only captures: it copies each frame out of
 * libpcap's ring (or rings: several interfaces, their frames merged by time stamp) into the
 * ring of the worker that owns the frame's connection. Each worker runs
 * an engine of its own (flow table, trackers, nDPI). Rows come back to the caller's thread,
 * which hands them to the sinks, so no commit, sweep or redraw ever holds the capture up. */
#ifndef IWSCOPE_LIVECAP_H
#define IWSCOPE_LIVECAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture.h"
#include "engine.h"
#include "sink.h"

typedef struct livecap livecap;

struct livecap_opts {
	unsigned workers;        /* analysis threads, 1 .. LIVE_WORKERS_MAX */
	struct engine_opts eo;   /* each worker's engine; flow_cap is shared out among them */
	bool dpi;                /* nDPI in every worker */
	unsigned dpi_packets;    /* payload packets per flow nDPI sees at most */
	uint64_t max_packets;    /* frames to capture, 0 = until stopped */
};

/* Starts the capture thread and the workers on ncaps open captures (1 .. LIVE_IFACES_MAX,
 * borrowed until livecap_free), which are one capture: a tap's ports, each frame decoded by its
 * own interface's link type. NULL with one line in err (out of memory, nDPI could not start). */
livecap *livecap_start(capture_live *const *caps, unsigned ncaps, const struct livecap_opts *o,
                       char *err, size_t errlen);

/* Hands the rows the workers finished to the sinks, waiting up to timeout_ms for the first
 * ones. Rows handed, or -1 when a sink failed. */
int livecap_rows(livecap *lc, struct sink *sinks, unsigned nsinks, int timeout_ms);

/* Whether the capture ended by itself (its error, max_packets) and every row was handed. */
bool livecap_over(livecap *lc);

/* Ends the capture: the workers write out every open flow (END_CAPTURE), the rows are handed
 * to the sinks, and run gets the counters of all workers and of the capture (received,
 * dropped). 0, or -1 when a sink failed. */
int livecap_finish(livecap *lc, struct sink *sinks, unsigned nsinks, struct run_info *run);

/* The capture's error ("IFACE: " and libpcap's words), or NULL. */
const char *livecap_error(const livecap *lc);

/* Why the workers failed (livecap_rows or livecap_finish gave -1 without a sink failing), or
 * NULL. */
const char *livecap_failure(livecap *lc);

/* Packets analysed and flows open now, over all workers (for the dashboard). */
void livecap_counters(const livecap *lc, uint64_t *packets, uint32_t *open_flows);

/* libpcap's counts for capture i (in livecap_start's order) when the capture stopped. */
void livecap_capture_counts(const livecap *lc, unsigned i, int64_t *received, int64_t *dropped);

/* The longest the capture thread waited for room in a worker's ring (the only time it does
 * not read the kernel's ring), microseconds; 0 when it never had to. */
uint64_t livecap_longest_stall(const livecap *lc);

/* Most nDPI flow states alive at once, summed over the workers (0 without nDPI). */
uint64_t livecap_dpi_peak(const livecap *lc);

void livecap_free(livecap *lc);

#endif
