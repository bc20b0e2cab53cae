/* store: the SQLite sink: a run and its flows written into an iwscope SQLite database, which
 * sqldb.h opens (created, upgraded). The PostgreSQL sink's spool is one too. */
#ifndef IWSCOPE_STORE_H
#define IWSCOPE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "sink.h"
#include "sqldb.h"

typedef struct store store;

/* Opens (creating if needed) the iwscope database at path for writing a run (sqldb_open says
 * which files are refused). NULL with a one-line reason in err. */
store *store_open(const char *path, char *err, size_t errlen);

void store_close(store *s);

/* Marks the coming run as a bulk load (a capture file): if the flows table is empty when it
 * begins, the secondary indexes are dropped and built once at its end (or at store_close, or
 * at the next store_open if it was killed), and until then each flow is a plain insert
 * without the foreign key's check (a capture file writes each flow once). */
void store_bulk(store *s);

/* Marks s as the run's own database (not a spool): at the run's end, an earlier run of the
 * same capture (runs.digest: another name, a pipe) is said, or replaced with --replace. */
void store_check_same(store *s);

/* The earlier runs of the same source (and their flows) that this run replaced (--replace). */
void store_replaced(const store *s, int64_t *runs, int64_t *flows);

/* The sink that writes runs and flows into s. */
struct sink store_sink(store *s);

/* The last error of s, one line. */
const char *store_error(const store *s);

/* Commits what the sink has pending (before the spool reads s's connection). 0 or -1. */
int store_commit(store *s);

/* s's connection (the spool drains it). */
sqldb *store_db(store *s);

/* SQLite's version and the schema version this build writes (sqldb_sqlite_version,
 * sqldb_schema_version), for the capture command's --version. */
const char *store_sqlite_version(void);
int store_schema_version(void);

#endif
