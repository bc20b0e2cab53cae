/* dbmerge: one iwscope SQLite file added to another (`iwscope merge` into an SQLite file). */
#ifndef IWSCOPE_DBMERGE_H
#define IWSCOPE_DBMERGE_H

#include <stdbool.h>
#include <stdint.h>

#include "sqldb.h"

struct dbmerge_stats {
	uint64_t runs, flows, new_runs, new_flows;
};

/* Adds the iwscope database at src to dst in one transaction: rows already there (same
 * probe, run and flow) are replaced only by a later state, never duplicated. A run of src
 * that read the same capture as another run already in dst (runs.digest) is refused, the
 * whole file with it, unless append. 0, or -1 with sqldb_error(dst) set. */
int dbmerge_file(sqldb *dst, const char *src, bool append, struct dbmerge_stats *ms);

#endif
