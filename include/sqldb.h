/* sqldb: an iwscope SQLite database's connection: opened (created, upgraded) for writing or
 * read-only, the runs' records, the secondary indexes a bulk load defers, and queries for
 * reports. The SQLite sink (store.c), the spool, merge and reports work through it. */
#ifndef IWSCOPE_SQLDB_H
#define IWSCOPE_SQLDB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dbrows.h"
#include "record.h" /* struct run_info */

typedef struct sqldb sqldb;
struct sqlite3;
struct sqlite3_stmt;

/* Opens (creating if needed) the iwscope database at path for writing, upgrading one of an
 * older schema version in place: WAL, foreign keys on, a missing secondary index built. A file
 * that is not an iwscope database, has a schema version this iwscope cannot write (newer, or
 * older than SCHEMA_OLDEST), is read-only or corrupt is refused and left untouched. NULL with
 * a one-line reason in err. */
sqldb *sqldb_open(const char *path, char *err, size_t errlen);

/* Opens an existing iwscope database read-only (report, plot, merge's inputs). NULL with a
 * reason in err. */
sqldb *sqldb_open_read(const char *path, char *err, size_t errlen);

void sqldb_close(sqldb *d);

/* The last error of d, one line. */
const char *sqldb_error(const sqldb *d);

/* The path d was opened with. */
const char *sqldb_path(const sqldb *d);

/* The SQLite connection, for the modules that prepare their own statements. */
struct sqlite3 *sqldb_handle(sqldb *d);

/* Runs sql (statements, no results); on failure sets sqldb_error to "PATH: what: why". 0 or -1. */
int sqldb_exec(sqldb *d, const char *sql, const char *what);

/* The first column of sql's first row in *out. 0, or -1 without setting sqldb_error. */
int sqldb_int(sqldb *d, const char *sql, int64_t *out);

/* Runs sql (no parameters) and hands its rows to row() as dbrows.h says. Returns 0, or -1
 * with sqldb_error set. */
int sqldb_query(sqldb *d, const char *sql, db_row_fn row, void *arg);

/* Sets sqldb_error to "PATH: what: SQLite's last message". */
void sqldb_fail(sqldb *d, const char *what);

/* Sets sqldb_error to a line of its own. */
void sqldb_failf(sqldb *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Binds v to parameter i of st: NULL for NULL64 (an integer) or a NULL pointer (a text, which
 * SQLite reads during the step that follows: the caller keeps it until then). SQLite's code. */
int sqldb_bind_i64(struct sqlite3_stmt *st, int i, int64_t v);
int sqldb_bind_text(struct sqlite3_stmt *st, int i, const char *v);

/* Whether d reads a database of an older schema as if it were upgraded (TEMP views over a
 * read-only file): its own tables are the older ones. */
bool sqldb_read_as_upgraded(const sqldb *d);

/* Records a run of probe (run->source, its options, versions) as 'running'; its id, in
 * *run_id, is its start time in microseconds, or one more than the probe's latest run here if
 * that is later: unique per probe, and the same wherever the rows go. A capture file's source
 * already analysed here by this probe is refused (RUN_NEW_ONLY) or its earlier runs and their
 * flows deleted (RUN_REPLACE, counted in *replaced_runs and *replaced_flows), inside the
 * caller's transaction (BEGIN IMMEDIATE: the check and the record at once). 0, or -1 with
 * sqldb_error set (the caller rolls back). */
int sqldb_run_record(sqldb *d, const char *probe, const struct run_info *run, int64_t *run_id,
                     int64_t *replaced_runs, int64_t *replaced_flows);

/* Writes run's end (status, counters, decode reasons) into the record of run run_id of probe,
 * inside the caller's transaction. 0, or -1 with sqldb_error set (the caller rolls back). */
int sqldb_run_finish(sqldb *d, const char *probe, int64_t run_id, const struct run_info *run);

/* The schema's secondary indexes of the flows table dropped (a bulk load) or built (after
 * it). 0, or -1 with sqldb_error set. */
int sqldb_drop_indexes(sqldb *d);
int sqldb_build_indexes(sqldb *d);

/* Sets the journal mode ("wal", "delete") and the synchronous level to go with it; whether
 * the database is now in that mode. SQLite leaves the mode as it was while another connection
 * has the file open. */
bool sqldb_journal_mode(sqldb *d, const char *mode, const char *sync);

/* SQLite's version string. */
const char *sqldb_sqlite_version(void);

/* The SQLite schema this build creates (schema/sqlite.sql + schema/views.sql). */
const char *sqldb_schema_text(void);

/* The schema version this build writes. */
int sqldb_schema_version(void);

#endif
