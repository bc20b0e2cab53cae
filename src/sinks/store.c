/* The SQLite sink: a run and its flows written into an iwscope SQLite database (db/sqldb.c
 * opens it) with prepared statements, rows in batched transactions committed at least once a
 * second; a capture file's run into an empty table loads unindexed. The PostgreSQL sink's
 * spool is one of these. */
#include "store.h"

#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "ch.h"
#include "clock.h"
#include "config.h"
#include "pg.h"
#include "record_columns.h"
#include "schema.h"
#include "sink_kinds.h"
#include "sqldb.h"

struct store {
	sqldb *db;
	sqlite3_stmt *ins_flow;
	int64_t run_id;
	char probe[PROBE_MAX];
	unsigned pending;        /* rows in the open transaction */
	bool in_txn;
	bool bulk;               /* a capture file's run: an empty flows table loads unindexed */
	bool indexes_dropped;    /* the flows table's secondary indexes wait for the run's end;
	                          * meanwhile rows are plain inserts, without the foreign key's
	                          * check */
	bool rollback_journal;   /* that load runs in rollback-journal mode, WAL again after it */
	uint64_t last_commit_us;  /* monotonic */
	int64_t replaced_runs, replaced_flows; /* --replace: what the run took the place of */
	bool lost;               /* a write or commit failed: rows were rolled back (a full disk) */
	bool check_same;         /* the run's own file (not a spool): the same capture read before
	                          * under another name or through a pipe is looked for at the end */
};

void store_check_same(store *s) { s->check_same = true; }

/* Runs sql with ?1 = probe, ?2 = the run's id, ?3 = its digest; the first row's columns 0 and
 * 1 (integers) and 2 (text, into text) when there is one. 1 found, 0 none, -1 error. */
static int same_capture_query(store *s, const char *sql, const char *digest, int64_t *a,
                              int64_t *b, char *text, size_t len)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(sqldb_handle(s->db), sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqldb_bind_text(st, 1, s->probe);
	sqldb_bind_i64(st, 2, s->run_id);
	sqldb_bind_text(st, 3, digest);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*a = sqlite3_column_int64(st, 0);
		*b = sqlite3_column_int64(st, 1);
		const unsigned char *t = sqlite3_column_text(st, 2);
		if (text)
			snprintf(text, len, "%s", t ? (const char *)t : "");
	}
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

#define SAME_ANY "FROM runs WHERE probe = ?1 AND id <> ?2 AND digest = ?3"
#define SAME_RUNS SAME_ANY " AND " RUN_PRODUCED

/* Another run of this probe here read the same capture (runs.digest): with --replace its
 * flows and it are deleted (counted as replaced), without --append it is said on stderr (the
 * flows now count twice). Inside the end's transaction. 0, or -1 with the error set. */
static int same_capture(store *s, const struct run_info *run)
{
	if (!s->check_same || !run->digest || run->again_same == RUN_LIVE ||
	    run->again_same == RUN_APPEND)
		return 0;
	int64_t id = 0, flows = 0, n = 0;
	char source[600];
	int found = same_capture_query(s, "SELECT id, (SELECT count(*) FROM flows f WHERE f.probe = "
	                               "runs.probe AND f.run_id = runs.id), source " SAME_RUNS
	                               " ORDER BY id DESC LIMIT 1", run->digest, &id, &flows,
	                               source, sizeof(source));
	if (found <= 0) {
		if (found < 0)
			sqldb_fail(s->db, "cannot look for runs of the same capture");
		return found;
	}
	if (run->again_same == RUN_NEW_ONLY) {
		fprintf(stderr, "iwscope: warning: %s is the same capture as run %lld of probe %s here "
		        "(%s, %lld flows): its flows now count twice (--replace takes that run's place, "
		        "--append says it is meant)\n", run->source, (long long)id, s->probe, source,
		        (long long)flows);
		return 0;
	}
	if (same_capture_query(s, "SELECT count(*), (SELECT count(*) FROM flows WHERE probe = ?1 AND "
	                       "run_id IN (SELECT id " SAME_ANY ")), NULL " SAME_ANY, run->digest,
	                       &n, &flows, NULL, 0) < 0)
		goto fail;
	/* once one run of the capture with flows is replaced, every run of it goes, those without
	 * flows too, each counted (a digest is written at a run's end: none is still running) */
	static const char *const del[] = {
		"DELETE FROM flows WHERE probe = ?1 AND run_id IN (SELECT id " SAME_ANY ")",
		"DELETE FROM run_decode WHERE probe = ?1 AND run_id IN (SELECT id " SAME_ANY ")",
		"DELETE " SAME_ANY "",
	};
	for (size_t i = 0; i < 3; i++) {
		sqlite3_stmt *st;
		if (sqlite3_prepare_v2(sqldb_handle(s->db), del[i], -1, &st, NULL) != SQLITE_OK)
			goto fail;
		sqldb_bind_text(st, 1, s->probe);
		sqldb_bind_i64(st, 2, s->run_id);
		sqldb_bind_text(st, 3, run->digest);
		int rc = sqlite3_step(st);
		sqlite3_finalize(st);
		if (rc != SQLITE_DONE)
			goto fail;
	}
	s->replaced_runs += n;
	s->replaced_flows += flows;
	return 0;
fail:
	sqldb_fail(s->db, "cannot remove the runs of the same capture");
	return -1;
}

const char *store_sqlite_version(void) { return sqldb_sqlite_version(); }
int store_schema_version(void) { return sqldb_schema_version(); }
const char *store_error(const store *s) { return sqldb_error(s->db); }
sqldb *store_db(store *s) { return s->db; }

static int build_indexes(store *s);

/* Whether c is part of a flow's key: an upsert leaves those alone. */
static bool is_key_column(const char *c)
{
	return schema_is_key(schema_table("flows")->key_cols, c);
}

/* The flow insert: an upsert on the flows' key, or a plain insert for a bulk load, which
 * writes each flow once. */
static int prepare_insert(store *s, bool upsert)
{
	char sql[8192];
	size_t n = (size_t)snprintf(sql, sizeof(sql), "INSERT INTO flows (probe,run_id");
	for (unsigned i = 0; i < record_ncolumns; i++)
		n += (size_t)snprintf(sql + n, sizeof(sql) - n, ",%s", record_columns[i].name);
	n += (size_t)snprintf(sql + n, sizeof(sql) - n, ") VALUES (?,?");
	for (unsigned i = 0; i < record_ncolumns; i++)
		n += (size_t)snprintf(sql + n, sizeof(sql) - n, ",?");
	if (!upsert) {
		n += (size_t)snprintf(sql + n, sizeof(sql) - n, ")");
		goto prepare;
	}
	/* a flow written early gets its final state in place: same row; a stale copy (an early
	 * state arriving after the final one, as a merge can bring) never replaces a final row */
	n += (size_t)snprintf(sql + n, sizeof(sql) - n, ") ON CONFLICT (" FLOW_KEY ") DO UPDATE SET ");
	bool first = true;
	for (unsigned i = 0; i < record_ncolumns; i++) {
		const char *c = record_columns[i].name;
		if (is_key_column(c) || !strcmp(c, "ts_us"))
			continue;
		n += (size_t)snprintf(sql + n, sizeof(sql) - n, "%s%s=excluded.%s", first ? "" : ",", c, c);
		first = false;
	}
	n += (size_t)snprintf(sql + n, sizeof(sql) - n, " WHERE " FLOW_NOT_STALE);
prepare:
	if (n >= sizeof(sql))
		return -1;
	sqlite3_finalize(s->ins_flow);
	s->ins_flow = NULL;
	if (sqlite3_prepare_v2(sqldb_handle(s->db), sql, -1, &s->ins_flow, NULL) != SQLITE_OK) {
		sqldb_fail(s->db, "cannot prepare the flow insert");
		return -1;
	}
	return 0;
}

store *store_open(const char *path, char *err, size_t errlen)
{
	store *s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	s->db = sqldb_open(path, err, errlen);
	if (!s->db) {
		free(s);
		return NULL;
	}
	if (prepare_insert(s, true) != 0) {
		snprintf(err, errlen, "%s", store_error(s));
		store_close(s);
		return NULL;
	}
	return s;
}

void store_close(store *s)
{
	if (!s)
		return;
	if (s->in_txn)
		sqlite3_exec(sqldb_handle(s->db), "ROLLBACK", NULL, NULL, NULL);
	build_indexes(s); /* a run that failed: its rows stay, and so does the schema */
	sqlite3_finalize(s->ins_flow);
	sqldb_close(s->db);
	free(s);
}

/* Back to WAL after a bulk load's rollback journal, for readers during later runs; should
 * another connection hold the file now, the next writer's open sets it. */
static void wal_again(store *s)
{
	if (s->rollback_journal && sqldb_journal_mode(s->db, "wal", "NORMAL"))
		s->rollback_journal = false;
}

int store_commit(store *s)
{
	if (!s->in_txn)
		return 0;
	if (sqldb_exec(s->db, "COMMIT", "cannot commit") != 0) {
		sqlite3_exec(sqldb_handle(s->db), "ROLLBACK", NULL, NULL, NULL);
		s->in_txn = false;
		s->lost = true;
		return -1;
	}
	s->in_txn = false;
	s->pending = 0;
	s->last_commit_us = clock_mono_us();
	return 0;
}

void store_replaced(const store *s, int64_t *runs, int64_t *flows)
{
	*runs = s->replaced_runs;
	*flows = s->replaced_flows;
}

/* Whether the flows table holds no rows but those --replace is about to delete (a bulk
 * load's file), asked before the run's transaction: the journal mode changes outside one. */
static bool flows_empty_after(store *s, const struct run_info *run)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(sqldb_handle(s->db), "SELECT NOT EXISTS (SELECT 1 FROM flows WHERE "
	                       "NOT (?3 AND probe = ?1 AND run_id IN (SELECT id FROM runs WHERE "
	                       "probe = ?1 AND source = ?2)))", -1, &st, NULL) != SQLITE_OK)
		return false;
	sqldb_bind_text(st, 1, s->probe);
	sqldb_bind_text(st, 2, run->source);
	sqlite3_bind_int(st, 3, run->again == RUN_REPLACE);
	bool empty = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return empty;
}

/* A run recorded whose start then failed: its end recorded now, where the disk allows, as
 * failed with no flows (RUN_PRODUCED: it never stands in the retry's way). The start's error
 * stays what is said. Returns -1. */
static int begin_failed(store *s, const struct run_info *run)
{
	char why[1024];
	snprintf(why, sizeof(why), "%s", store_error(s));
	struct run_info ended = *run;
	ended.status = "failed";
	ended.finished_us = clock_wall_us();
	ended.flows = 0;
	ended.nreasons = 0;
	sqldb_run_finish(s->db, s->probe, s->run_id, &ended);
	sqldb_failf(s->db, "%s", why);
	return -1;
}

/* Records the run (sqldb_run_record: an earlier run of the same capture files is refused or
 * replaced) and, for a bulk load into an empty table, drops the flows' secondary indexes, in
 * one transaction: a start the disk has no room for leaves no run behind ('running' with no
 * flow, in the retry's way), and --replace's deletions stand only with the new record. */
static int sink_begin(void *self, const struct run_info *run)
{
	store *s = self;
	snprintf(s->probe, sizeof(s->probe), "%s", run->probe);
	/* A bulk load into an empty table: secondary indexes built once at the end, plain inserts
	 * (each flow written once, its run just recorded), a rollback journal and no syncs, as
	 * tcpdump -w; a power failure mid-run may damage a file that held no flows (the capture
	 * can be run again). Why each, measured: bench/RESULTS.md, History. The journal first
	 * (a mode changes outside a transaction): its checkpoint empties the write-ahead log into
	 * the file, and a rollback journal is deleted after each commit, so the run's end finds
	 * the room its failed rows took (a full disk). */
	bool bulk = s->bulk && flows_empty_after(s, run);
	if (bulk)
		s->rollback_journal = sqldb_journal_mode(s->db, "delete", "OFF");
	int64_t empty = 0;
	if (sqldb_exec(s->db, "BEGIN IMMEDIATE", "cannot record the run") != 0)
		goto fail;
	if (sqldb_run_record(s->db, s->probe, run, &s->run_id, &s->replaced_runs,
	                     &s->replaced_flows) != 0 ||
	    (bulk && sqldb_int(s->db, "SELECT NOT EXISTS (SELECT 1 FROM flows)", &empty) == 0 &&
	     empty && sqldb_drop_indexes(s->db) != 0) ||
	    sqldb_exec(s->db, "COMMIT", "cannot record the run") != 0) {
		sqlite3_exec(sqldb_handle(s->db), "ROLLBACK", NULL, NULL, NULL);
		goto fail;
	}
	s->last_commit_us = clock_mono_us();
	if (!bulk || !empty) {
		wal_again(s); /* the table was not empty after all */
		return 0;
	}
	s->indexes_dropped = true;
	if (sqldb_exec(s->db, "PRAGMA foreign_keys=OFF", "cannot defer the foreign key") != 0 ||
	    prepare_insert(s, false) != 0)
		return begin_failed(s, run);
	return 0;
fail:
	s->replaced_runs = s->replaced_flows = 0;
	wal_again(s);
	return -1;
}

/* The indexes a bulk load left out, built now. 0 or -1. */
static int build_indexes(store *s)
{
	if (!s->indexes_dropped)
		return 0;
	s->indexes_dropped = false;
	if (sqldb_build_indexes(s->db) != 0 ||
	    sqldb_exec(s->db, "PRAGMA foreign_keys=ON", "cannot enable foreign keys") != 0)
		return -1;
	wal_again(s);
	return prepare_insert(s, true);
}

void store_bulk(store *s) { s->bulk = true; }

static int sink_flow(void *self, const struct flow_record *r)
{
	store *s = self;
	sqlite3_stmt *st = s->ins_flow;
	if (!s->in_txn) {
		if (sqldb_exec(s->db, "BEGIN IMMEDIATE", "cannot start a transaction") != 0)
			return -1;
		s->in_txn = true;
	}
	sqldb_bind_text(st, 1, s->probe);
	sqldb_bind_i64(st, 2, s->run_id);
	int i = 3; /* every column of record_columns, in its order: the statement's */
#define BIND_INT(v) sqldb_bind_i64(st, i++, (int64_t)(v))
#define BIND_TEXT(v) sqldb_bind_text(st, i++, (v))
#define BIND(name, type, value) BIND_##type(value);
#define BIND_SIDES(name, type, value) \
	{ const struct side_record *sd = &r->c; BIND_##type(value); } \
	{ const struct side_record *sd = &r->s; BIND_##type(value); }
	FLOW_HEAD(BIND) SIDE(BIND_SIDES) FLOW_TAIL(BIND) SIDE_TAIL(BIND_SIDES) FLOW_TAIL5(BIND)
#undef BIND_INT
#undef BIND_TEXT
#undef BIND
#undef BIND_SIDES
	int rc = sqlite3_step(st); /* every parameter is bound anew for each row */
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		sqldb_fail(s->db, "cannot write a flow");
		s->lost = true;
		return -1;
	}
	if (++s->pending >= STORE_BATCH_ROWS)
		return store_commit(s);
	return 0;
}

static int sink_tick(void *self)
{
	store *s = self;
	if (s->in_txn && clock_mono_us() - s->last_commit_us >= 1000000u)
		return store_commit(s);
	return 0;
}

/* The run's flows in the file now, in *n. 0, or -1. */
static int count_run_flows(store *s, int64_t *n)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(sqldb_handle(s->db), "SELECT count(*) FROM flows WHERE probe = ?1 "
	                       "AND run_id = ?2", -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqldb_bind_text(st, 1, s->probe);
	sqldb_bind_i64(st, 2, s->run_id);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : -1;
}

static int sink_end(void *self, const struct run_info *run)
{
	store *s = self;
	/* the last rows' commit may fail (a full disk): the run is recorded all the same */
	int last = store_commit(s);
	char why[1024];
	snprintf(why, sizeof(why), "%s", store_error(s));
	if (sqldb_exec(s->db, "BEGIN IMMEDIATE", "cannot start a transaction") != 0)
		return -1;
	s->in_txn = true;
	/* rows rolled back (a full disk): the record says what the file holds, not what was
	 * analysed, and that the run failed */
	struct run_info held = *run;
	int64_t n;
	if (s->lost && count_run_flows(s, &n) == 0)
		held.flows = (uint64_t)n;
	if (s->lost)
		held.status = "failed";
	run = &held;
	if (sqldb_run_finish(s->db, s->probe, s->run_id, run) != 0 || same_capture(s, run) != 0) {
		sqlite3_exec(sqldb_handle(s->db), "ROLLBACK", NULL, NULL, NULL);
		s->in_txn = false;
		return -1;
	}
	if (store_commit(s) != 0)
		return -1;
	if (last != 0) { /* recorded as failed; the commit's failure is what is said */
		build_indexes(s);
		sqldb_failf(s->db, "%s", why);
		return -1;
	}
	return build_indexes(s);
}

static void sink_close(void *self) { store_close(self); }

static const char *sink_error(void *self) { return store_error(self); }

static const struct sink_ops store_ops = {
	.name = "sqlite",
	.begin = sink_begin,
	.flow = sink_flow,
	.tick = sink_tick,
	.end = sink_end,
	.close = sink_close,
	.error = sink_error,
};

struct sink store_sink(store *s)
{
	struct sink k = { &store_ops, s };
	return k;
}

/* ---- the registry's "sqlite" kind (sink_kinds.h): -o FILE, any target that is no server's
 * URI ---- */

static bool kind_wanted(const struct sink_conf *c) { return !pg_is_uri(c->uri) && !ch_is_uri(c->uri); }

static int kind_open(const struct sink_conf *c, struct sink *out, char *err, size_t errlen)
{
	store *db = store_open(c->uri, err, errlen);
	if (!db)
		return -1;
	if (c->bulk)
		store_bulk(db);
	store_check_same(db);
	*out = store_sink(db);
	return 0;
}

static const char *kind_file(const struct sink_conf *c) { return c->uri; }

static void kind_replaced(void *self, int64_t *runs, int64_t *flows)
{
	store_replaced(self, runs, flows);
}

const struct sink_kind store_kind = {
	.name = "sqlite", .primary = true, .wanted = kind_wanted, .open = kind_open,
	.file = kind_file, .replaced = kind_replaced,
};
