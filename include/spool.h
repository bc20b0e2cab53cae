/* spool: an SQLite database's rows handed on to another database in batches. The PostgreSQL
 * sink's spool (an outbox) drains through it, deleting what the server took; `merge` into
 * PostgreSQL reads each file through it. */
#ifndef IWSCOPE_SPOOL_H
#define IWSCOPE_SPOOL_H

#include <stdbool.h>
#include <stdint.h>

#include "dbrows.h"
#include "sqldb.h"

struct spool_stats {
	uint64_t flows, runs;
};

/* Hands s's rows to fn, oldest flows first, in batches of PG_BATCH_ROWS flows; stops after
 * max_flows (0 = all). With drain (the spool), each batch is deleted in the transaction that
 * sent it, and finished runs once none of their flows is left. Returns 0 when done; -1 when
 * fn refused a batch (it stays); -2 on a database error (sqldb_error). The caller commits
 * what it has pending on s first. */
int spool_copy(sqldb *s, bool drain, uint64_t max_flows, db_batch_fn fn, void *arg,
               struct spool_stats *cs);

/* Flows waiting in s (the spool). 0 or -1. */
int spool_pending(sqldb *s, int64_t *flows);

#endif
