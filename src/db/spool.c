/* Copying an SQLite database's rows elsewhere, a batch at a time: the spool's drain (each batch
 * deleted in the transaction that saw it taken) and merge into PostgreSQL. */
#include "spool.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "config.h"

/* The text of one batch: every value appended to one buffer, pointers made once it is read. */
struct text_table {
	struct db_rows rows;
	char *buf;
	size_t len, cap;
	size_t *offs; /* nrows * ncols offsets into buf; SIZE_MAX = NULL */
	size_t noffs, offs_cap;
	const char **names, **vals;
};

static void text_table_free(struct text_table *t)
{
	if (t->names)
		for (int i = 0; i < t->rows.ncols; i++)
			free((char *)t->names[i]);
	free(t->names);
	free(t->vals);
	free(t->offs);
	free(t->buf);
	memset(t, 0, sizeof(*t));
}

static int text_push(struct text_table *t, const char *v, size_t n)
{
	if (t->noffs == t->offs_cap) {
		size_t cap = t->offs_cap ? t->offs_cap * 2 : 1024;
		size_t *o = realloc(t->offs, cap * sizeof(*o));
		if (!o)
			return -1;
		t->offs = o;
		t->offs_cap = cap;
	}
	if (!v) {
		t->offs[t->noffs++] = SIZE_MAX;
		return 0;
	}
	if (t->len + n + 1 > t->cap) {
		size_t cap = t->cap ? t->cap : 65536;
		while (cap < t->len + n + 1)
			cap *= 2;
		char *b = realloc(t->buf, cap);
		if (!b)
			return -1;
		t->buf = b;
		t->cap = cap;
	}
	memcpy(t->buf + t->len, v, n);
	t->buf[t->len + n] = '\0';
	t->offs[t->noffs++] = t->len;
	t->len += n + 1;
	return 0;
}

/* Reads the rows of sql (one ?1 integer parameter: a rowid lower bound) into t; *last gets the
 * value of the last column, which the select adds as the rowid. */
static int read_table(sqldb *s, const char *table, const char *sql, int64_t after,
                      struct text_table *t, int64_t *last)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(sqldb_handle(s), sql, -1, &st, NULL) != SQLITE_OK) {
		sqldb_fail(s, "cannot read rows to copy");
		return -1;
	}
	sqlite3_bind_int64(st, 1, after);
	int ncols = sqlite3_column_count(st) - 1; /* the last is the rowid */
	t->rows.table = table;
	t->rows.ncols = ncols;
	t->names = calloc((size_t)ncols, sizeof(*t->names));
	if (!t->names)
		goto oom;
	for (int i = 0; i < ncols; i++)
		if (!(t->names[i] = strdup(sqlite3_column_name(st, i))))
			goto oom;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		for (int i = 0; i < ncols; i++) {
			const char *v = (const char *)sqlite3_column_text(st, i);
			if (text_push(t, v, v ? (size_t)sqlite3_column_bytes(st, i) : 0) != 0)
				goto oom;
		}
		*last = sqlite3_column_int64(st, ncols);
		t->rows.nrows++;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		sqldb_fail(s, "cannot read rows to copy");
		return -1;
	}
	t->vals = malloc((t->noffs ? t->noffs : 1) * sizeof(*t->vals));
	if (!t->vals)
		goto oom_done;
	for (size_t i = 0; i < t->noffs; i++)
		t->vals[i] = t->offs[i] == SIZE_MAX ? NULL : t->buf + t->offs[i];
	t->rows.names = t->names;
	t->rows.vals = t->vals;
	return 0;
oom:
	sqlite3_finalize(st);
oom_done:
	sqldb_failf(s, "%s: out of memory reading rows to copy", sqldb_path(s));
	return -1;
}

/* Runs finished and without a flow left in the spool: sent, so removable. */
#define DONE_RUNS "SELECT probe, id FROM runs r WHERE status <> 'running' AND NOT EXISTS " \
	"(SELECT 1 FROM flows f WHERE f.probe = r.probe AND f.run_id = r.id)"

int spool_copy(sqldb *s, bool drain, uint64_t max_flows, db_batch_fn fn, void *arg,
               struct spool_stats *cs)
{
	int64_t after = -1;
	bool first = true;
	for (;;) {
		unsigned want = PG_BATCH_ROWS;
		if (max_flows && cs->flows + want > max_flows)
			want = (unsigned)(max_flows - cs->flows);
		if (sqldb_exec(s, drain ? "BEGIN IMMEDIATE" : "BEGIN", "cannot start a transaction") != 0)
			return -2;
		struct text_table t[3];
		memset(t, 0, sizeof(t));
		char sql[160];
		int64_t last_flow = after, ignore;
		int rc = 0;
		/* the spool resends its few runs with every batch, so a run is never removed before
		 * its latest state went out; a merge sends them once */
		bool with_runs = drain || first;
		if (with_runs &&
		    (read_table(s, "runs", "SELECT *, rowid FROM runs WHERE ?1 = ?1 ORDER BY rowid", 0,
		                &t[0], &ignore) != 0 ||
		     read_table(s, "run_decode", "SELECT *, rowid FROM run_decode WHERE ?1 = ?1 "
		                "ORDER BY rowid", 0, &t[1], &ignore) != 0))
			rc = -2;
		snprintf(sql, sizeof(sql), "SELECT *, rowid FROM flows WHERE rowid > ?1 ORDER BY rowid "
		         "LIMIT %u", want);
		if (!rc && read_table(s, "flows", sql, after, &t[2], &last_flow) != 0)
			rc = -2;
		unsigned nflows = t[2].rows.nrows;
		struct db_rows batch[3];
		unsigned nb = 0;
		for (int i = with_runs ? 0 : 2; i < 3; i++)
			batch[nb++] = t[i].rows;
		if (!rc && (nflows || with_runs) && fn(arg, batch, nb) != 0)
			rc = -1;
		if (!rc && drain) {
			char del[96];
			snprintf(del, sizeof(del), "DELETE FROM flows WHERE rowid <= %lld", (long long)last_flow);
			if (sqldb_exec(s, del, "cannot remove sent rows") != 0 ||
			    sqldb_exec(s, "DELETE FROM run_decode WHERE (probe, run_id) IN (" DONE_RUNS ")",
			               "cannot remove sent runs") != 0 ||
			    sqldb_exec(s, "DELETE FROM runs WHERE (probe, id) IN (" DONE_RUNS ")",
			               "cannot remove sent runs") != 0)
				rc = -2;
		}
		if (with_runs && !rc)
			cs->runs += t[0].rows.nrows;
		for (int i = 0; i < 3; i++)
			text_table_free(&t[i]);
		if (rc) {
			sqlite3_exec(sqldb_handle(s), "ROLLBACK", NULL, NULL, NULL);
			return rc;
		}
		if (sqldb_exec(s, "COMMIT", drain ? "cannot commit the drained spool" : "cannot end a read") != 0)
			return -2;
		cs->flows += nflows;
		after = last_flow;
		first = false;
		if (nflows < want || (max_flows && cs->flows >= max_flows))
			return 0;
	}
}

int spool_pending(sqldb *s, int64_t *flows)
{
	return sqldb_int(s, "SELECT count(*) FROM flows", flows);
}
