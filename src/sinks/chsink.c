/* The ClickHouse sink: an outbox (outbox.c) whose batches go over HTTP as INSERT ... FORMAT
 * TabSeparated. While the server (or, through Distributed tables, any shard) cannot take a
 * batch, the spool keeps it; one sent again (its answer lost, or some shards had it) collapses
 * into one copy in the tables' ReplacingMergeTree. */
#include "chsink.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ch.h"
#include "config.h"
#include "schema.h"
#include "sink_kinds.h"

static int count_row(void *arg, int ncols, const char *const *names, const char *const *vals,
                     const enum db_type *types)
{
	(void)names;
	(void)types;
	int64_t *out = arg;
	if (vals && ncols >= 3) {
		out[0] = vals[0] ? strtoll(vals[0], NULL, 10) : 0;
		out[1] = vals[1] ? strtoll(vals[1], NULL, 10) : 0;
		out[2] = vals[2] ? strtoll(vals[2], NULL, 10) : 0;
	}
	return 0;
}

/* s as a ClickHouse string literal (backslash and quote escaped) into out. 0, or -1 if it
 * does not fit. */
static int literal(const char *s, char *out, size_t len)
{
	size_t n = 0;
	if (len < 3)
		return -1;
	out[n++] = '\'';
	for (; *s; s++) {
		if (n + 4 >= len)
			return -1;
		if (*s == '\'' || *s == '\\')
			out[n++] = '\\';
		out[n++] = *s;
	}
	out[n++] = '\'';
	out[n] = '\0';
	return 0;
}

/* The ids of the runs a query lists, "1, 2, 3". */
struct ids {
	char list[4096];
	int64_t n;
	bool cut; /* more than the list holds */
};

static int id_row(void *arg, int ncols, const char *const *names, const char *const *vals,
                  const enum db_type *types)
{
	(void)names;
	(void)types;
	struct ids *ids = arg;
	size_t len = strlen(ids->list);
	if (!vals || ncols < 1 || !vals[0])
		return 0;
	if (len + strlen(vals[0]) + 3 >= sizeof(ids->list)) {
		ids->cut = true;
		return 1;
	}
	snprintf(ids->list + len, sizeof(ids->list) - len, "%s%s", ids->n++ ? ", " : "", vals[0]);
	return 0;
}

static int first_int(void *arg, int ncols, const char *const *names, const char *const *vals,
                     const enum db_type *types)
{
	(void)names;
	(void)types;
	if (vals && ncols >= 1)
		*(int64_t *)arg = vals[0] ? strtoll(vals[0], NULL, 10) : 0;
	return 0;
}

/* The first column of sql's first row into *out. 0 or -1. */
static int query_int(chdb *db, const char *sql, int64_t *out)
{
	return ch_query(db, sql, first_int, out);
}

/* Deletes runs ids of probe (a literal) and their rows. ClickHouse deletes with mutations
 * (ALTER TABLE ... DELETE), applied in the background to the parts there when each is made:
 * the new run's rows, written after, are never touched. They are waited for (at most
 * CH_MUTATION_WAIT_S) so that a report right after reads no earlier row. A Distributed table
 * takes no mutation: on a cluster the rows would have to be deleted shard by shard, refused.
 * 0 or -1 (outbox_fail said why). */
static int delete_runs(outbox *ob, chdb *db, const char *probe, const struct ids *ids,
                       const struct run_info *run)
{
	static const char *const tables[][2] = { { "flows", "run_id" }, { "run_decode", "run_id" },
		                                  { "runs", "id" } };
	int64_t distributed = 0, running = 1;
	char sql[sizeof(ids->list) + 512];
	if (query_int(db, "SELECT count() FROM system.tables WHERE database = currentDatabase() "
	              "AND name = 'flows' AND engine = 'Distributed'", &distributed) != 0)
		goto fail;
	if (distributed || ids->cut) {
		outbox_fail(ob, "%s: %s was analysed there before (run %s of probe %s): --replace "
		            "cannot delete it %s; --append adds it a second time", outbox_shown(ob),
		            run->source, ids->list, run->probe, ids->cut ? "(too many earlier runs)"
		            : "through Distributed tables (a cluster's rows are deleted on each shard: "
		              "ALTER TABLE flows_local DELETE WHERE ...)");
		return -1;
	}
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		snprintf(sql, sizeof(sql), "ALTER TABLE %s DELETE WHERE probe = %s AND %s IN (%s)",
		         tables[i][0], probe, tables[i][1], ids->list);
		if (ch_exec(db, sql, "cannot delete the earlier run") != 0)
			goto fail;
	}
	for (int waited_ms = 0; running && waited_ms < CH_MUTATION_WAIT_S * 1000; waited_ms += 100) {
		if (query_int(db, "SELECT count() FROM system.mutations WHERE "
		              "database = currentDatabase() AND table IN ('flows', 'run_decode', "
		              "'runs') AND NOT is_done", &running) != 0)
			goto fail;
		if (running)
			nanosleep(&(struct timespec){ 0, 100000000L }, NULL);
	}
	if (running) /* the new run is written all the same; say what a report may see */
		fprintf(stderr, "iwscope: %s: deleting run %s is still running after %d s; until it "
		        "ends, a report counts its rows too\n", outbox_shown(ob), ids->list,
		        CH_MUTATION_WAIT_S);
	return 0;
fail:
	outbox_fail(ob, "%s", ch_error(db));
	return -1;
}

/* The server's earlier runs of this capture file: refused as in an SQLite file, or with
 * --replace deleted (delete_runs: one server, not a cluster). */
static int earlier_runs(outbox *ob, void *conn, const struct run_info *run)
{
	chdb *db = conn;
	char probe[256], source[4200], sql[16384];
	if (literal(run->probe, probe, sizeof(probe)) != 0 || literal(run->source, source, sizeof(source)) != 0)
		return 0; /* too long to ask about: as if unknown */
	int64_t got[3] = { 0, 0, 0 };
	/* a run that ended without a flow is no earlier analysis (RUN_PRODUCED) */
	snprintf(sql, sizeof(sql), "SELECT count(), max(id), (SELECT count() FROM flows FINAL WHERE "
	         "probe = %s AND run_id GLOBAL IN (SELECT id FROM runs FINAL WHERE probe = %s AND source = %s)) "
	         "FROM runs FINAL WHERE probe = %s AND source = %s AND (status = 'running' OR id GLOBAL IN "
	         "(SELECT DISTINCT run_id FROM flows FINAL WHERE probe = %s))",
	         probe, probe, source, probe, source, probe);
	if (ch_query(db, sql, count_row, got) != 0) {
		outbox_fail(ob, "%s", ch_error(db));
		return -1;
	}
	if (!got[0])
		return 0;
	if (run->again != RUN_REPLACE) {
		char shown[SCHEMA_SOURCE_SHOWN];
		schema_source_shown(run->source, shown, sizeof(shown));
		outbox_fail(ob, "%s: %s was analysed there before (run %lld of probe %s, %lld flows): "
		            "--replace analyses it again in its place, --append adds it a second time",
		            outbox_shown(ob), shown, (long long)got[1], run->probe, (long long)got[2]);
		return -1;
	}
	struct ids ids = { "", 0, false };
	snprintf(sql, sizeof(sql), "SELECT id FROM runs FINAL WHERE probe = %s AND source = %s "
	         "ORDER BY id", probe, source);
	if (ch_query(db, sql, id_row, &ids) != 0 && !ids.cut) {
		outbox_fail(ob, "%s", ch_error(db));
		return -1;
	}
	if (delete_runs(ob, db, probe, &ids, run) != 0)
		return -1;
	outbox_replaced(ob, got[0], got[2]);
	return 0;
}

static void *open_db(const char *uri, bool *fatal, char *err, size_t errlen)
{
	enum ch_fail fail;
	chdb *db = ch_open(uri, true, &fail, err, errlen);
	*fatal = !db && fail == CH_FAIL_FATAL; /* a target that can never work */
	return db;
}

static void close_db(void *db) { ch_close(db); }

static const char *db_error(void *db) { return ch_error(db); }

/* a node of a cluster answers while a shard is down: back once a batch went through */
static const struct outbox_server clickhouse = {
	.name = "clickhouse", .open = open_db, .close = close_db, .send = ch_send_batch,
	.error = db_error, .earlier_runs = earlier_runs, .back_on_batch = true,
};

outbox *chsink_open(const struct chsink_opts *o, char *err, size_t errlen)
{
	char shown[600];
	ch_shown(o->uri, shown, sizeof(shown));
	return outbox_open(&clickhouse, o->uri, shown, o->spool, o->quiet, err, errlen);
}

/* ---- the registry's "clickhouse" kind (sink_kinds.h): -o clickhouse://... ---- */

static bool kind_wanted(const struct sink_conf *c) { return ch_is_uri(c->uri); }

static int kind_open(const struct sink_conf *c, struct sink *out, char *err, size_t errlen)
{
	struct chsink_opts o = { c->uri, c->spool, c->quiet };
	outbox *ob = chsink_open(&o, err, errlen);
	if (!ob)
		return -1;
	*out = outbox_sink(ob);
	return 0;
}

static const char *kind_file(const struct sink_conf *c) { return c->spool; }

const struct sink_kind chsink_kind = {
	.name = "clickhouse", .primary = true, .wanted = kind_wanted, .open = kind_open,
	.file = kind_file, .replaced = outbox_kind_replaced, .summary = outbox_kind_summary,
};
