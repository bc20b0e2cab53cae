/* ch: ClickHouse over its HTTP interface through libcurl, for the ClickHouse sink, merge and
 * reports. The only user of curl.h. */
#ifndef IWSCOPE_CH_H
#define IWSCOPE_CH_H

#include <stdbool.h>
#include <stddef.h>

#include "dbrows.h"

typedef struct chdb chdb;

/* Whether target names a ClickHouse database: clickhouse://[USER[:PASSWORD]@]HOST[:PORT]/DB. */
bool ch_is_uri(const char *target);

/* uri as messages show it: clickhouse://USER@HOST:PORT/DB, never the password. */
void ch_shown(const char *uri, char *out, size_t len);

enum ch_fail {
	CH_FAIL_TRANSIENT, /* the server went away while checking: trying later may work */
	CH_FAIL_FATAL,     /* unknown host, nothing listening, refused login, no such database, bad
	                    * URI, not an iwscope database */
};

/* Connects to uri (the password from the URI, else $CLICKHOUSE_PASSWORD, else the file named
 * by ?password_file=PATH or $CLICKHOUSE_PASSWORD_FILE) and checks that the database holds
 * iwscope's tables of this schema version, creating the one-server schema when it holds none
 * and create is set. NULL with one line in err (never the password) and the kind in *fail. */
chdb *ch_open(const char *uri, bool create, enum ch_fail *fail, char *err, size_t errlen);

void ch_close(chdb *db);

/* Inserts the rows of tables (INSERT ... FORMAT TabSeparated, one request per table, through
 * Distributed tables synchronously: a shard that is down fails the batch). A batch sent twice
 * collapses into one copy (ReplacingMergeTree on the row's key): a db_batch_fn. 0 or -1. */
int ch_send_batch(void *db, const struct db_rows *tables, unsigned ntables);

/* Runs sql (ClickHouse's SQL) and calls row() with each result row as text, typed by the
 * result's column types. 0 or -1. */
int ch_query(chdb *db, const char *sql, db_row_fn row, void *arg);

/* Runs sql that returns nothing (DDL, ALTER, an INSERT with its VALUES); what names it in
 * the error ("what: why"). 0 or -1. */
int ch_exec(chdb *db, const char *sql, const char *what);

/* The last error, one line. */
const char *ch_error(const chdb *db);

/* The ClickHouse schema (schema/clickhouse.sql) for database db: one server's tables, or with
 * cluster the local tables of each shard and Distributed tables over them. Malloc'd (NULL:
 * out of memory). */
char *ch_schema_text(const char *db, const char *cluster);

/* libcurl's version (loading it), or "not found". */
const char *ch_libcurl_version(void);

#endif
