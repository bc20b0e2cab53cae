/* store: an iwscope SQLite database: opened (created, upgraded) for a run or read-only, the
 * SQLite sink, and queries for reports. spool.c and dbmerge.c work on its connection. */
#ifndef IWSCOPE_STORE_H
#define IWSCOPE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dbrows.h"
#include "sink.h"

typedef struct store store;

/* Opens (creating if needed) the iwscope database at path for writing a run, upgrading one
 * of an older schema version in place. A file that is not an iwscope database, has a schema
 * version this iwscope cannot write (newer, or older than SCHEMA_OLDEST), is read-only or
 * corrupt is refused and left untouched. NULL with a one-line reason in err. */
store *store_open(const char *path, char *err, size_t errlen);

/* Opens an existing iwscope database read-only (report, plot, merge's inputs). NULL with a
 * reason in err. */
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

/* Runs sql (no parameters) and hands its rows to row() as dbrows.h says. Returns 0, or -1
 * with store_error set. */
int store_query(store *s, const char *sql, db_row_fn row, void *arg);

/* SQLite's version string. */
const char *store_sqlite_version(void);

/* The SQLite schema this build creates (schema/sqlite.sql + schema/views.sql). */
const char *store_schema_text(void);

/* The schema version this build writes. */
int store_schema_version(void);

/* For the modules that work on a store's connection (spool.c, dbmerge.c). */
struct sqlite3;
struct sqlite3 *store_db(store *s);

/* Runs sql (statements, no results); on failure sets store_error to "PATH: what: why". 0 or -1. */
int store_exec(store *s, const char *sql, const char *what);

/* The first column of sql's first row in *out. 0, or -1 without setting store_error. */
int store_int(store *s, const char *sql, int64_t *out);

/* Commits what the sink has pending. 0 or -1. */
int store_commit(store *s);

/* Sets store_error to "PATH: what: SQLite's last message". */
void store_fail(store *s, const char *what);

/* Sets store_error to a line of its own. */
void store_failf(store *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The path s was opened with. */
const char *store_path(const store *s);

/* Whether s reads a database of an older schema as if it were upgraded (TEMP views over a
 * read-only file): its own tables are the older ones. */
bool store_read_as_upgraded(const store *s);

#endif
