/* analyse: one run of the capture command: opens the source and the sinks, nDPI, drops
 * privileges, runs the source's loop (source.h: files, live, replay, a pipe), and records the
 * run. */
#ifndef IWSCOPE_ANALYSE_H
#define IWSCOPE_ANALYSE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "capture.h"
#include "cli.h"
#include "engine.h"
#include "record.h"
#include "sink.h"

struct plan;

/* The run cfg describes. The exit status: 0, EXIT_USAGE or EXIT_RUNTIME (said on stderr). */
int analyse_run(struct config *cfg);

/* What a source's loop (source.h) is handed: the run as it goes. */
struct run_state {
	engine *eng;               /* the analysis on this thread (NULL for live: livecap's) */
	struct sink *sinks;
	unsigned nsinks;
	volatile sig_atomic_t *stop; /* set by SIGINT, SIGTERM, SIGHUP: the loop ends */
	int sink_failed;           /* a sink or the analysis failed: the loop ends */
	bool quit_early;           /* q on the dashboard before the capture ended */
	struct run_info *run;      /* live: the workers' and the capture's counters */
	struct capture_result cr;  /* files: which failed, a filter error */
	struct plan *plan;
	unsigned cur_file;         /* the file of the frame now read (capture_opts.current_file) */
	/* the run's own: */
	unsigned eng_file;         /* the engine's current file */
	uint32_t since_tick;
	/* a pipe on stdin gone silent: its clock runs on as the wall clock does, from the newest
	 * packet's time, so that flows end (FIN plus a second) and time out as live */
	uint64_t idle_pkts, idle_since_us, idle_capture_us;
	uint64_t digest;           /* FNV-1a of the first RUN_DIGEST_RECORDS frames */
	unsigned digested;
	char digest_hex[24];
};

/* The capture callbacks a source's loop gives its reader, arg a struct run_state: a frame to
 * the engine (a capture_fn), standard input's silences (a capture_idle_fn: a stop ends the
 * reading), a file not read whole (capture_opts.skipped: kept for runs.skipped). */
int analyse_packet(void *arg, int dlt, const uint8_t *data, uint32_t caplen, uint32_t wirelen,
                   uint64_t ts_us);
int analyse_idle(void *arg, bool silent);
void analyse_skipped(void *arg, const char *path, const char *why);

#endif
