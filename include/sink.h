/* sink: where finished flows go (SQLite, PostgreSQL, stdout lines, the dashboard). A sink is a
 * const table of functions plus its own state, so the engine never knows which sinks run; the
 * run finds the sinks it wants in one registry (sink_kind_at), by what the command line asks.
 *
 * Every sink lives the same way: open (its kind's open) -> begin -> flow ... tick ... -> end ->
 * close. Adding a sink: its file with its sink_ops and its const struct sink_kind (below), and
 * one line in sink_kinds.h's list. */
#ifndef IWSCOPE_SINK_H
#define IWSCOPE_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record.h"

struct sink_ops {
	const char *name;
	/* Called once before the first flow; may fill run-level ids. 0 or -1 with a message. */
	int (*begin)(void *self, const struct run_info *run);
	/* A flow whose verdicts are final: once early (update = 0) if they were final before it
	 * ended, then at its end with update = 1; or once at its end. Borrowed for the call. */
	int (*flow)(void *self, const struct flow_record *rec);
	/* Called at least once a second of wall time: commit what is pending. */
	int (*tick)(void *self);
	/* Called once at the end with final counters: the run's last write and commit. The sink
	 * still answers error() and its own statistics after it. 0 or -1 with a message. */
	int (*end)(void *self, const struct run_info *run);
	/* Lets go of everything the sink holds (its database connection, the terminal, its memory):
	 * self is gone after it. Called exactly once by the sink's owner, after end or, when the run
	 * failed or stopped early, instead of it. A sink whose state belongs to another (livecap's
	 * queue: its worker's) does nothing. */
	void (*close)(void *self);
	/* The last failure, one line (what a -1 above meant). */
	const char *(*error)(void *self);
};

struct sink {
	const struct sink_ops *ops;
	void *self;
};

/* What the run tells the sinks about itself (from the command line), read by each kind's
 * wanted() and open(). */
struct sink_conf {
	const char *uri;    /* -o: an SQLite file or postgresql://... */
	const char *spool;  /* PostgreSQL's local spool file */
	const char *source; /* what the run reads (the dashboard's title) */
	bool quiet;         /* no outage or recovery lines on stderr */
	bool bulk;          /* a capture file read at once: each flow written once, as fast as can be */
	bool lines, json;   /* a line (or JSON line) per flow on standard output */
	bool dashboard;     /* the ncurses dashboard (standard input and output are a terminal) */
	bool color;
};

/* One entry of the registry: a kind of sink, how the run recognises that it is wanted, how it
 * is opened, and what the run's messages ask of it. */
struct sink_kind {
	const char *name;
	/* Where runs and flows are kept (-o): the run uses the first primary kind that is wanted,
	 * and begins it first; its error is the one a failed run reports. */
	bool primary;
	/* Holds the terminal: opened last (after the run has begun and root is dropped) and ended
	 * and closed first, as soon as the capture is over, so that every message is seen. */
	bool terminal;
	bool (*wanted)(const struct sink_conf *c);
	/* Opens the sink into *out. 0 (out->ops NULL: not available here, which is no error, such
	 * as a dashboard without a terminal), or -1 with one line in err. */
	int (*open)(const struct sink_conf *c, struct sink *out, char *err, size_t errlen);
	/* The local file it writes (given to -Z's user with its -wal and -shm), or NULL. */
	const char *(*file)(const struct sink_conf *c);
	/* --replace: the earlier runs of the source (and their flows) it replaced; NULL: none. */
	void (*replaced)(void *self, int64_t *runs, int64_t *flows);
	/* Lines of its own after the run's summary on stderr; NULL: none. */
	void (*summary)(void *self, const struct sink_conf *c);
};

/* The registry's entry i (0, 1, ...), or NULL past the last. */
const struct sink_kind *sink_kind_at(unsigned i);

/* Hands rec to each of the n sinks in turn, or asks each to commit what is pending; stops at
 * the first that fails. 0, or -1 when one failed. */
int sinks_flow(struct sink *sinks, unsigned n, const struct flow_record *rec);
int sinks_tick(struct sink *sinks, unsigned n);

#endif
