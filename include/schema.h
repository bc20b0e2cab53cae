/* schema: SQL both database dialects share (the tables and views are in schema/). */
#ifndef IWSCOPE_SCHEMA_H
#define IWSCOPE_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>

#define SCHEMA_VERSION 6
#define SCHEMA_OLDEST 2 /* the oldest version schema/migrate.sql upgrades from */

/* A flow's identity: unique in flows, and the conflict target of every upsert. It holds
 * server_ip, the distribution column on Citus, where a unique key must contain it. */
#define FLOW_KEY "probe, run_id, flow_key, server_ip"
#define RUN_KEY "probe, id"
/* A run that counts as an earlier analysis of its source, in either dialect: one that wrote
 * a flow, or one still 'running'. A run that ended (failed, interrupted, partial or complete)
 * without a flow never blocks the retry; a 'running' one without flows yet may be another
 * process reading the same files now, whose flows are still to come (one that died without
 * its end: --replace). */
#define RUN_PRODUCED "NOT (status <> 'running' AND NOT EXISTS (SELECT 1 FROM flows WHERE " \
	"flows.probe = runs.probe AND flows.run_id = runs.id))"
#define DECODE_KEY "probe, run_id, reason"

/* An upsert never replaces a final row with an earlier state of it (a replayed spool batch
 * or a stale file in a merge): a flow is final once it has an end_reason, a run once it
 * has finished_us. */
#define FLOW_NOT_STALE "(excluded.end_reason IS NOT NULL OR flows.end_reason IS NULL)"
#define RUN_NOT_STALE "(excluded.finished_us IS NOT NULL OR runs.finished_us IS NULL)"

/* The tables a copy (spool drain, merge) moves, with their keys and stale-row guards. */
struct schema_table {
	const char *name;
	const char *key;      /* the conflict target */
	const char *key_cols; /* the same as ",a,b,": columns an upsert leaves alone */
	const char *guard;    /* when an upsert may replace a row: SQL over excluded and name */
};
extern const struct schema_table schema_tables[3]; /* runs, run_decode, flows */

/* schema_tables' entry for name, or NULL. */
const struct schema_table *schema_table(const char *name);

/* Whether col is one of key_cols (",a,b,"). */
bool schema_is_key(const char *key_cols, const char *col);

/* Appends col to the SQL list in out (*n bytes used): "a", or with set "a=excluded.a" — the
 * column lists of an upsert. 0, or -1 when out is full. */
int schema_list_add(char *out, size_t len, size_t *n, const char *col, bool set);

/* The secondary indexes of the schema text sql (CREATE INDEX, not UNIQUE: upserts need those)
 * one by one: fn(arg, name, statement) with name and statement (without its ';') as lengths
 * into sql. Stops at fn's first non-zero return and returns it; 0 after the last. */
typedef int (*schema_index_fn)(void *arg, const char *name, int nlen, const char *stmt, int slen);
int schema_each_index(const char *sql, schema_index_fn fn, void *arg);

/* runs.source (files space separated, or interfaces) as a one-line message names it, in buf
 * (len bytes, at least 64): whole when it fits, else its first input and how many more
 * ("/srv/a.pcap (and 354 more files)"), so that what follows it in the message (the cause, the
 * way out) is never cut away. */
#define SCHEMA_SOURCE_SHOWN 512 /* a buffer for it */
void schema_source_shown(const char *source, char *buf, size_t len);

/* The SQL that upgrades a database of version from (SCHEMA_OLDEST .. SCHEMA_VERSION - 1) to
 * SCHEMA_VERSION: drops every view, applies schema/migrate.sql's steps, makes the views again.
 * The caller runs it in one transaction, sets the version its dialect's way, and frees it.
 * NULL for a version it cannot upgrade, or out of memory. */
char *schema_upgrade_sql(int from);

/* The SQL that lets a read-only SQLite connection read a database of version from as if it
 * were upgraded, changing nothing in it: TEMP views (which shadow the file's own objects) of
 * each table a migration added columns to, those columns NULL as an upgrade leaves them (or
 * the value a migration's "UPDATE t SET c = 'v' WHERE c IS NULL" gives older rows), and of
 * schema/views.sql. NULL when a migration since from does more than that (then only an
 * upgrade can read it), or out of memory. The caller frees it. */
char *schema_read_as_upgraded_sql(int from);

#endif
