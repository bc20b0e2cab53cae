/* The ClickHouse sink: an outbox (outbox.c) whose batches go over HTTP as INSERT ... FORMAT
 * TabSeparated. While the server (or, through Distributed tables, any shard) cannot take a
 * batch, the spool keeps it; one sent again (its answer lost, or some shards had it) collapses
 * into one copy in the tables' ReplacingMergeTree. */
#include "chsink.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ch.h"

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

/* The server's earlier runs of this capture file: refused as in an SQLite file. --replace
 * needs rows deleted, which Distributed tables cannot do: refused too. */
static int earlier_runs(outbox *ob, void *conn, const struct run_info *run)
{
	chdb *db = conn;
	char probe[256], source[4200], sql[16384];
	if (literal(run->probe, probe, sizeof(probe)) != 0 || literal(run->source, source, sizeof(source)) != 0)
		return 0; /* too long to ask about: as if unknown */
	int64_t got[3] = { 0, 0, 0 };
	snprintf(sql, sizeof(sql), "SELECT count(), max(id), (SELECT count() FROM flows FINAL WHERE "
	         "probe = %s AND run_id GLOBAL IN (SELECT id FROM runs FINAL WHERE probe = %s AND source = %s)) "
	         "FROM runs FINAL WHERE probe = %s AND source = %s", probe, probe, source, probe, source);
	if (ch_query(db, sql, count_row, got) != 0) {
		outbox_fail(ob, "%s", ch_error(db));
		return -1;
	}
	if (!got[0])
		return 0;
	outbox_fail(ob, "%s: %s was analysed there before (run %lld of probe %s, %lld flows): %s",
	         outbox_shown(ob), run->source, (long long)got[1], run->probe, (long long)got[2],
	         run->again == RUN_REPLACE ? "--replace cannot delete rows in ClickHouse; --append "
	                                     "adds it a second time"
	                                   : "--append adds it a second time");
	return -1;
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
