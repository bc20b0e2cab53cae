/* plan: the capture command's line as a plan the run owns: which source (from source.h's
 * registry: files merged by time, a pipe, a replay, live interfaces), which sinks (from
 * sink_kinds.h's registry), how many threads; then everything it opened, closed the same way
 * whatever ended the run. */
#ifndef IWSCOPE_PLAN_H
#define IWSCOPE_PLAN_H

#include <stdbool.h>

#include "capture.h"
#include "cli.h"
#include "dpi.h"
#include "engine.h"
#include "livecap.h"
#include "record.h"
#include "sink.h"
#include "ui.h"

#define PLAN_SINKS_MAX 4

struct source_kind;

struct plan {
	const struct config *cfg;
	const struct source_kind *source; /* the kind of source (source.h) */
	bool from_stdin;        /* "-" among the files: a source that is new every time */
	bool threaded;          /* bulk files: nDPI and the sinks on a second thread (stage.c) */
	char *source_text;      /* runs.source and the dashboard's title: every name, whole */
	char options[96];       /* runs.options: what the capture was opened with */
	struct engine_opts eo;

	/* the source, once open */
	const char *files[MAX_FILES]; /* the files that can be read (or read as they come) */
	unsigned nfiles, unreadable;  /* unreadable: said at opening and skipped */
	char *skipped;                /* the files skipped, a line each: "FILE: why" (runs.skipped) */
	size_t skipped_len;
	capture_live *live[LIVE_IFACES_MAX];
	unsigned nlive;

	/* the sinks, in the order opened: the primary first, a terminal sink last */
	struct sink_conf sc;
	struct sink sinks[PLAN_SINKS_MAX];
	const struct sink_kind *kinds[PLAN_SINKS_MAX];
	unsigned nsinks;
	ui *dash; /* the terminal sink's self when the dashboard runs, else NULL */

	/* the analysis: an engine on this thread (with a stage when threaded), or livecap's */
	dpi_ctx *dpi;
	engine *eng;
	livecap *lc;
};

/* What cfg asks for (nothing opened yet): the source's kind, the sinks' conf, the threads.
 * Out of memory for the source's text: it is empty. */
void plan_from_config(struct plan *p, const struct config *cfg);

/* Notes a file skipped (said on stderr already) and why, for runs.skipped. */
void plan_note_skipped(struct plan *p, const char *path, const char *why);

/* Opens the source (its kind's open): the interfaces (no permission means no database
 * either), or checks the files. 0, or the exit status (said). */
int plan_open_source(struct plan *p);

/* The files' open (every kind that reads cfg->files): those that cannot be opened are said now
 * and skipped; none left is EXIT_RUNTIME. 0, or the exit status (said). */
int plan_check_files(struct plan *p);

/* Opens every sink the registry's kinds want except the terminal's, the primary first. 0, or
 * EXIT_RUNTIME (said). */
int plan_open_sinks(struct plan *p);

/* Opens nDPI (not for live: each worker opens its own). 0, or EXIT_RUNTIME (said). */
int plan_open_dpi(struct plan *p);

/* Begins the run in every sink open, the primary first. 0, or EXIT_RUNTIME (said). */
int plan_begin(struct plan *p, const struct run_info *run);

/* -Z: gives the sinks' local files to the user and becomes that user. 0, or EXIT_RUNTIME. */
int plan_drop_privileges(struct plan *p);

/* Opens and begins the terminal's sink (the dashboard), when wanted and possible. */
void plan_open_terminal(struct plan *p, const struct run_info *run);

/* Starts the analysis (its source kind's start): the engine over the sinks, or the live
 * capture's threads. 0, or EXIT_RUNTIME (said). */
int plan_start(struct plan *p);

/* The start of a source read on this thread: an engine over the sinks (p->eng). 0, or
 * EXIT_RUNTIME (said). */
int plan_start_engine(struct plan *p);

/* The capture is over: the terminal's sink is ended and closed, before anything is printed. */
void plan_release_terminal(struct plan *p, const struct run_info *run);

/* The message of the sink that failed: the primary's when it has one, else the first other. */
const char *plan_sink_error(const struct plan *p);

/* Ends the run in every sink in order. best_effort (a failed run): every end is tried and
 * none is said; else the first that fails is said and EXIT_RUNTIME returned. */
int plan_end(struct plan *p, const struct run_info *run, bool best_effort);

/* Closes everything p opened, in reverse: the analysis, the sinks, nDPI, the source. */
void plan_close(struct plan *p);

#endif
