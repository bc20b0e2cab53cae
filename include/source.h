/* source: the kinds of source a capture run reads, one file each in src/cmd/ (source_NAME.c),
 * and the registry that lists them. Every kind runs the same way: the plan finds the first
 * kind the command line wants, then opens it (open), starts the analysis (start), and the run
 * hands its loop the plan and the run's state (analyse.h); after the summary a kind may add
 * lines of its own (summary).
 *
 * Adding a source: its file, src/cmd/source_NAME.c, defining its const struct source_kind
 * source_NAME_kind (it includes this header, so that the compiler checks the definition
 * against the declaration), and one line in SOURCE_KIND_LIST (README: "Adding a source, a
 * sink or a column"). */
#ifndef IWSCOPE_SOURCE_H
#define IWSCOPE_SOURCE_H

#include <stdbool.h>

#include "analyse.h"
#include "plan.h"
#include "record.h"

struct source_kind {
	const char *name;
	/* Whether p's command line asks for this kind (p->cfg, p->from_stdin). */
	bool (*wanted)(const struct plan *p);
	/* Rows as flows' verdicts are final, the dashboard on a terminal (else a line per flow when
	 * headless), commits every second: a capture that is watched while it runs. */
	bool streaming;
	/* Read as fast as it can be: each flow written once, at its end, in bulk; nDPI and the
	 * sinks on a second thread with --threads > 1 (stage.c). Else flows' rows come early, as
	 * soon as their verdicts are final. */
	bool bulk;
	/* Runs until it is stopped (q, Ctrl-C, SIGTERM: a complete run, as tcpdump's) and reads no
	 * file (no digest, none skipped); its analysis opens its own nDPI contexts. */
	bool endless;
	/* Opens what it reads, or checks it. 0, or the exit status (said). */
	int (*open)(struct plan *p);
	/* Starts the analysis (p->eng or p->lc). 0, or EXIT_RUNTIME (said). */
	int (*start)(struct plan *p);
	/* Reads until its end, a stop (*rs->stop) or a failure (rs->sink_failed), handing each
	 * frame to the analysis. 0, or the exit status of a failure it said. */
	int (*loop)(struct plan *p, struct run_state *rs);
	/* Its own lines after the run's summary on stderr; NULL: none. */
	void (*summary)(const struct plan *p, const struct run_info *run);
};

/* The registry, a line per kind: X(NAME) is source_NAME_kind in src/cmd/source_NAME.c. The
 * first kind whose wanted() says yes is the run's source (plan.c); the last wants anything. */
#define SOURCE_KIND_LIST(X)                                                                  \
	X(live)   /* -i: interfaces, a capture thread and analysis workers (livecap.c) */      \
	X(replay) /* --replay: files at the capture's own pace */                              \
	X(pipe)   /* -r - from a pipe: read as it comes, rows as live */                       \
	X(files)  /* -r: capture files, several merged by packet time */

#define SOURCE_KIND_DECLARE(name) extern const struct source_kind source_##name##_kind;
SOURCE_KIND_LIST(SOURCE_KIND_DECLARE)
#undef SOURCE_KIND_DECLARE

/* The files' loop (source_files.c), a pipe's too: the files merged by packet time, a pipe read
 * as it comes (its silences: analyse_idle). */
int source_files_loop(struct plan *p, struct run_state *rs);

#endif
