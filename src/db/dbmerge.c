/* Merging iwscope SQLite files: the other file attached to the output's connection, each table
 * upserted on its key in one transaction, so a file merged twice, or two files that share runs,
 * add nothing twice and a later state of a row replaces an earlier one, never the reverse. */
#include "dbmerge.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <sqlite3.h>

#include "schema.h"

/* Builds "a,b,c" (or "a=excluded.a,..." with set) of table's columns from the open schema,
 * leaving out the columns in skip (",a,b,"). */
static int column_list(sqldb *s, const char *table, bool set, const char *skip, char *out,
                       size_t len)
{
	char sql[96];
	snprintf(sql, sizeof(sql), "SELECT name FROM pragma_table_info('%s')", table);
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(sqldb_handle(s), sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	size_t n = 0;
	out[0] = '\0';
	int rc = 0;
	while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
		const char *c = (const char *)sqlite3_column_text(st, 0);
		if (!skip || !schema_is_key(skip, c))
			rc = schema_list_add(out, len, &n, c, set);
	}
	sqlite3_finalize(st);
	return rc == 0 && n ? 0 : -1;
}

/* A run of src that read the same capture (digest) as a different run already in dst: said in
 * dst's error. 1 when there is one, 0 when none, -1 on an error. */
static int same_capture(sqldb *dst, const char *src)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(sqldb_handle(dst), "SELECT s.id, s.probe, s.source, m.id, m.probe, "
	                       "m.source, (SELECT count(*) FROM src.flows f WHERE f.probe = s.probe "
	                       "AND f.run_id = s.id) FROM src.runs s JOIN main.runs m ON "
	                       "m.digest = s.digest AND NOT (m.probe = s.probe AND m.id = s.id) "
	                       "WHERE s.digest IS NOT NULL ORDER BY s.probe, s.id LIMIT 1", -1, &st,
	                       NULL) != SQLITE_OK) {
		sqldb_fail(dst, "cannot compare the runs' captures");
		return -1;
	}
	int rc = sqlite3_step(st), found = rc == SQLITE_ROW;
	if (found)
		sqldb_failf(dst, "%s: run %lld of probe %s (%s, %lld flows) read the same capture as run "
		            "%lld of probe %s (%s) already in %s: its flows would count twice; "
		            "--append merges it all the same", src,
		            (long long)sqlite3_column_int64(st, 0), sqlite3_column_text(st, 1),
		            sqlite3_column_text(st, 2), (long long)sqlite3_column_int64(st, 6),
		            (long long)sqlite3_column_int64(st, 3), sqlite3_column_text(st, 4),
		            sqlite3_column_text(st, 5), sqldb_path(dst));
	else if (rc != SQLITE_DONE)
		sqldb_fail(dst, "cannot compare the runs' captures");
	sqlite3_finalize(st);
	return found ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

int dbmerge_file(sqldb *dst, const char *src, bool append, struct dbmerge_stats *ms)
{
	char err[1024];
	sqldb *probe = sqldb_open_read(src, err, sizeof(err)); /* the same checks as a report */
	if (!probe) {
		sqldb_failf(dst, "%s", err);
		return -1;
	}
	bool old = sqldb_read_as_upgraded(probe); /* the merge below reads the file's own tables */
	sqldb_close(probe);
	if (old) {
		sqldb_failf(dst, "%s: an older iwscope schema, which must be upgraded once (with write "
		            "access to it) before it can be merged", src);
		return -1;
	}
	sqlite3 *db = sqldb_handle(dst);
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "ATTACH ?1 AS src", -1, &st, NULL) != SQLITE_OK) {
		sqldb_fail(dst, "cannot attach");
		return -1;
	}
	sqlite3_bind_text(st, 1, src, -1, SQLITE_TRANSIENT);
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		sqldb_failf(dst, "%s: cannot attach: %s", src, sqlite3_errmsg(db));
		return -1;
	}
	static char cols[8192], set[16384], sql[8192 * 2 + 16384 + 1024];
	const struct schema_table *t = schema_tables;
	int64_t before[3] = { 0 }, after[3] = { 0 }, in[3] = { 0 };
	rc = sqldb_exec(dst, "BEGIN IMMEDIATE", "cannot start the merge");
	if (rc == 0 && !append && same_capture(dst, src) != 0)
		rc = -1;
	for (int i = 0; i < 3 && rc == 0; i++) {
		char count[80];
		snprintf(count, sizeof(count), "SELECT count(*) FROM main.%s", t[i].name);
		if (sqldb_int(dst, count, &before[i]) != 0) {
			sqldb_fail(dst, "cannot merge");
			rc = -1;
			break;
		}
		snprintf(count, sizeof(count), "SELECT count(*) FROM src.%s", t[i].name);
		if (sqldb_int(dst, count, &in[i]) != 0 ||
		    column_list(dst, t[i].name, false, NULL, cols, sizeof(cols)) != 0 ||
		    column_list(dst, t[i].name, true, t[i].key_cols, set, sizeof(set)) != 0) {
			sqldb_fail(dst, "cannot merge");
			rc = -1;
			break;
		}
		/* "WHERE true": SQLite's parser needs it between a SELECT and ON CONFLICT */
		snprintf(sql, sizeof(sql), "INSERT INTO main.%s (%s) SELECT %s FROM src.%s WHERE true "
		         "ON CONFLICT (%s) DO UPDATE SET %s WHERE %s", t[i].name, cols, cols,
		         t[i].name, t[i].key, set, t[i].guard);
		rc = sqldb_exec(dst, sql, "cannot merge");
		snprintf(count, sizeof(count), "SELECT count(*) FROM main.%s", t[i].name);
		if (rc == 0 && sqldb_int(dst, count, &after[i]) != 0) {
			sqldb_fail(dst, "cannot merge");
			rc = -1;
		}
	}
	if (rc == 0)
		rc = sqldb_exec(dst, "COMMIT", "cannot commit the merge");
	else
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_exec(db, "DETACH src", NULL, NULL, NULL);
	if (rc == 0) {
		ms->runs += (uint64_t)in[0];
		ms->flows += (uint64_t)in[2];
		ms->new_runs += (uint64_t)(after[0] - before[0]);
		ms->new_flows += (uint64_t)(after[2] - before[2]);
	}
	return rc;
}
