/* The PostgreSQL sink: an outbox (outbox.c) whose batches go in COPY to the server, where
 * upserts make a batch sent twice (a commit whose answer was lost) land once. */
#include "pgsink.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg.h"
#include "schema.h"
#include "sink_kinds.h"

/* text as an SQL string literal (standard_conforming_strings: only quotes double); malloc'd. */
static char *literal(const char *text)
{
	size_t n = 0, len = 2 * strlen(text) + 3;
	char *out = malloc(len);
	if (!out)
		return NULL;
	out[n++] = '\'';
	for (const char *c = text; *c; c++) {
		if (*c == '\'')
			out[n++] = '\'';
		out[n++] = *c;
	}
	out[n++] = '\'';
	out[n] = '\0';
	return out;
}

/* printf into a malloc'd string. */
static char *sqlf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *sqlf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *out = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (!out)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(out, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return out;
}

static int first_int(void *arg, int ncols, const char *const *names, const char *const *vals,
                     const enum db_type *types)
{
	(void)names;
	(void)types;
	if (!vals)
		return 0; /* the column names: the row follows */
	if (ncols > 0 && vals[0])
		*(int64_t *)arg = strtoll(vals[0], NULL, 10);
	return 1;
}

/* The first column of sql's first row in *out (unchanged without one). 0 or -1. */
static int query_int(pgdb *db, char *sql, int64_t *out)
{
	int rc = sql ? pg_query(db, sql, first_int, out) : -1;
	free(sql);
	return rc;
}

/* The server's earlier runs of this capture file: refused or removed (--replace), as in an
 * SQLite file. */
static int earlier_runs(outbox *ob, void *conn, const struct run_info *run)
{
	pgdb *db = conn;
	char *probe = literal(run->probe), *source = literal(run->source), *sql;
	int64_t n = 0, id = 0, flows = 0;
	int rc = -1;
	if (!probe || !source)
		goto out;
#define RUNS_OF "(SELECT id FROM runs WHERE probe = %s AND source = %s)"
	if (query_int(db, sqlf("SELECT count(*) FROM runs WHERE probe = %s AND source = %s AND "
	                      RUN_PRODUCED, probe, source), &n) != 0 ||
	    query_int(db, sqlf("SELECT max(id) FROM runs WHERE probe = %s AND source = %s AND "
	                      RUN_PRODUCED, probe, source), &id) != 0 ||
	    query_int(db, sqlf("SELECT count(*) FROM flows WHERE probe = %s AND run_id IN " RUNS_OF,
	                      probe, probe, source), &flows) != 0)
		goto out;
	if (!n) {
		rc = 0;
		goto out;
	}
	if (run->again == RUN_NEW_ONLY) {
		char shown[SCHEMA_SOURCE_SHOWN];
		schema_source_shown(run->source, shown, sizeof(shown));
		outbox_fail(ob, "%s: %s was analysed there before (run %lld of probe %s, %lld flows): "
		            "--replace analyses it again in its place, --append adds it a second time",
		            outbox_shown(ob), shown, (long long)id, run->probe, (long long)flows);
		goto refused;
	}
	sql = sqlf("BEGIN; DELETE FROM flows WHERE probe = %s AND run_id IN " RUNS_OF "; "
	           "DELETE FROM run_decode WHERE probe = %s AND run_id IN " RUNS_OF "; "
	           "DELETE FROM runs WHERE probe = %s AND source = %s; COMMIT",
	           probe, probe, source, probe, probe, source, probe, source);
#undef RUNS_OF
	rc = sql ? pg_exec(db, sql) : -1;
	free(sql);
	if (rc != 0) {
		pg_exec(db, "ROLLBACK");
		goto out;
	}
	outbox_replaced(ob, n, flows);
out:
	if (rc != 0)
		outbox_fail(ob, "%s: %s", outbox_shown(ob), probe && source ? pg_error(db) : "out of memory");
refused:
	free(probe);
	free(source);
	return rc;
}

static void *open_db(const char *uri, bool *fatal, char *err, size_t errlen)
{
	enum pg_fail fail;
	pgdb *db = pg_open(uri, true, &fail, err, errlen);
	*fatal = !db && fail == PG_FAIL_FATAL; /* a login that can never work */
	return db;
}

static void close_db(void *db) { pg_close(db); }

static const char *db_error(void *db) { return pg_error(db); }

static const struct outbox_server postgresql = {
	.name = "postgresql", .open = open_db, .close = close_db, .send = pg_send_batch,
	.error = db_error, .earlier_runs = earlier_runs, .named_errors = true,
};

outbox *pgsink_open(const struct pgsink_opts *o, char *err, size_t errlen)
{
	char shown[600];
	pg_redact(o->uri, shown, sizeof(shown));
	return outbox_open(&postgresql, o->uri, shown, o->spool, o->quiet, err, errlen);
}

/* ---- the registry's "postgresql" kind (sink_kinds.h): -o postgresql://... ---- */

static bool kind_wanted(const struct sink_conf *c) { return pg_is_uri(c->uri); }

static int kind_open(const struct sink_conf *c, struct sink *out, char *err, size_t errlen)
{
	struct pgsink_opts o = { c->uri, c->spool, c->quiet };
	outbox *ob = pgsink_open(&o, err, errlen);
	if (!ob)
		return -1;
	*out = outbox_sink(ob);
	return 0;
}

static const char *kind_file(const struct sink_conf *c) { return c->spool; }

const struct sink_kind pgsink_kind = {
	.name = "postgresql", .primary = true, .wanted = kind_wanted, .open = kind_open,
	.file = kind_file, .replaced = outbox_kind_replaced, .summary = outbox_kind_summary,
};
