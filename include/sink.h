/* sink: where finished flows go (SQLite, stdout lines, the dashboard). A sink is a const table
 * of functions plus its own state, so the engine never knows which sinks run. */
#ifndef IWSCOPE_SINK_H
#define IWSCOPE_SINK_H

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
	/* Called once at the end with final counters. */
	int (*end)(void *self, const struct run_info *run);
	void (*close)(void *self);
	/* The last failure, one line (what a -1 above meant). */
	const char *(*error)(void *self);
};

struct sink {
	const struct sink_ops *ops;
	void *self;
};

/* Hands rec to each of the n sinks in turn, or asks each to commit what is pending; stops at
 * the first that fails. 0, or -1 when one failed. */
int sinks_flow(struct sink *sinks, unsigned n, const struct flow_record *rec);
int sinks_tick(struct sink *sinks, unsigned n);

#endif
