/* pg: PostgreSQL through libpq, for the PostgreSQL sink and for reports. The only user of
 * libpq-fe.h. */
#ifndef IWSCOPE_PG_H
#define IWSCOPE_PG_H

#include <stdbool.h>
#include <stddef.h>

#include "dbrows.h"

typedef struct pgdb pgdb;

/* Whether target names a PostgreSQL database (postgresql:// or postgres://). */
bool pg_is_uri(const char *target);

/* uri with its password, if any, replaced by "***": for messages. */
void pg_redact(const char *uri, char *out, size_t len);

enum pg_fail {
	PG_FAIL_TRANSIENT, /* the server could not be reached: trying later may work */
	PG_FAIL_FATAL,     /* unknown host, refused login, bad URI, not an iwscope database */
};

/* Connects to uri and checks that the database holds iwscope's schema, creating it when it
 * holds no table named runs and create is set. NULL with a one-line reason in err and what
 * kind of failure it was in *fail. */
pgdb *pg_open(const char *uri, bool create, enum pg_fail *fail, char *err, size_t errlen);

void pg_close(pgdb *db);

/* Upserts the rows of tables into db (a pgdb) in one transaction (COPY into temporary tables,
 * then INSERT ... ON CONFLICT on each table's key), so a batch sent twice leaves one copy: a
 * db_batch_fn, what spool_copy hands batches to. 0 or -1. */
int pg_send_batch(void *db, const struct db_rows *tables, unsigned ntables);

/* Runs sql and calls row() with each result row as text. 0 or -1. */
int pg_query(pgdb *db, const char *sql, db_row_fn row, void *arg);

/* Runs sql (statements without results, e.g. a transaction). 0 or -1. */
int pg_exec(pgdb *db, const char *sql);

/* The last error, one line. */
const char *pg_error(const pgdb *db);

/* The PostgreSQL schema (schema/postgresql.sql + schema/views.sql). */
const char *pg_schema_text(void);

/* libpq's version, e.g. "15.18" (loading it), or "not found". */
const char *pg_libpq_version(void);

#endif
