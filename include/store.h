/* store: the SQLite sink and read access for reports. The only user of sqlite3.h. */
#ifndef IWSCOPE_STORE_H
#define IWSCOPE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sink.h"

typedef struct store store;

/* Opens (creating if needed) the iwscope database at path for writing a run. A file that is
 * not an iwscope database, has another schema version, is read-only or corrupt is refused and
 * left untouched. NULL with a one-line reason in err. */
store *store_open(const char *path, char *err, size_t errlen);

/* Opens an existing iwscope database read-only (reports). NULL with a reason in err. */
store *store_open_read(const char *path, char *err, size_t errlen);

void store_close(store *s);

/* Marks the coming run as a bulk load (a capture file): if the flows table is empty when it
 * begins, the secondary indexes are dropped and built once at its end (or at store_close, or
 * at the next store_open if it was killed), and until then each flow is a plain insert
 * without the foreign key's check (a capture file writes each flow once). */
void store_bulk(store *s);

/* The earlier runs of the same source (and their flows) that this run replaced (--replace). */
void store_replaced(const store *s, int64_t *runs, int64_t *flows);

/* The sink that writes runs and flows into s. */
struct sink store_sink(store *s);

/* The last error of s, one line. */
const char *store_error(const store *s);

/* What a result value is: what JSON and table layouts go by, never a guess from its text. */
enum store_type { STORE_NULL, STORE_INT, STORE_REAL, STORE_TEXT };

/* Runs sql (no parameters) and calls row() once with vals and types NULL (the column names,
 * also for a result without rows), then for each result row with its values as text (NULL
 * for SQL NULL) and their types. row() returns non-zero to stop. Returns 0, or -1 with
 * store_error set. */
typedef int (*store_row_fn)(void *arg, int ncols, const char *const *names,
                            const char *const *vals, const enum store_type *types);
int store_query(store *s, const char *sql, store_row_fn row, void *arg);

/* Like store_query with one text parameter bound to ?1. */
int store_query1(store *s, const char *sql, const char *param, store_row_fn row, void *arg);

/* Commits what the sink has pending. 0 or -1. */
int store_flush(store *s);

/* One table's rows as text, to copy them to another database. */
struct store_rows {
	const char *table;          /* runs, run_decode or flows */
	int ncols;
	const char *const *names;   /* ncols column names */
	unsigned nrows;
	const char *const *vals;    /* nrows * ncols, row after row; NULL is SQL NULL */
};

/* Takes one batch (runs, run_decode, flows or just flows) in one transaction: 0 when it is
 * committed at the other end, -1 when it is not (nothing of it counts as sent). */
typedef int (*store_batch_fn)(void *arg, const struct store_rows *tables, unsigned ntables);

struct store_copy_stats {
	uint64_t flows, runs, batches;
};

/* Hands s's rows to fn, oldest flows first, in batches of PG_BATCH_ROWS flows; stops after
 * max_flows (0 = all). With drain (the spool), each batch is deleted in the transaction that
 * sent it, and finished runs once none of their flows is left. Returns 0 when done; -1 when
 * fn refused a batch (it stays); -2 on a database error (store_error). */
int store_copy(store *s, bool drain, uint64_t max_flows, store_batch_fn fn, void *arg,
               struct store_copy_stats *cs);

/* Flows waiting in s (the spool). 0 or -1. */
int store_pending(store *s, int64_t *flows);

struct store_merge_stats {
	uint64_t runs, flows, new_runs, new_flows;
};

/* Adds the iwscope database at src to dst in one transaction: rows already there (same
 * probe, run and flow) are replaced only by a later state, never duplicated. 0 or -1. */
int store_merge(store *dst, const char *src, struct store_merge_stats *ms);

/* SQLite's version string. */
const char *store_sqlite_version(void);

/* The SQLite schema this build creates (schema/sqlite.sql + schema/views.sql). */
const char *store_schema_text(void);

/* The schema version this build writes. */
int store_schema_version(void);

#endif
