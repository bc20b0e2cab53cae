/* The PostgreSQL sink: rows go first into a local SQLite spool (an outbox), which drains to
 * the server in COPY batches every tick. While the server is unreachable the spool keeps them
 * and reconnects back off (1, 2, 4 ... PG_BACKOFF_MAX_S s); a batch is deleted from the spool
 * only in the transaction that saw the server commit it, and the server's upserts make a batch
 * sent twice (a commit whose answer was lost) land once. */
#include "pgsink.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "config.h"
#include "pg.h"
#include "schema.h"
#include "spool.h"
#include "store.h"

struct pgsink {
	store *spool;
	struct sink spool_sink;
	pgdb *db;
	char uri[1024], shown[512], spool_path[512];
	bool quiet;
	bool outage;          /* rows are waiting because the server was unreachable */
	bool warned;          /* this outage has been reported */
	uint64_t next_try_ms; /* monotonic time of the next reconnect */
	unsigned backoff_s;
	uint64_t next_drain_ms;
	struct pgsink_stats st;
	char err[1200];
};

static uint64_t mono_ms(void) { return clock_mono_us() / 1000u; }

/* The server went away (or never came): keep spooling and try again later. */
static void lost(pgsink *p, const char *why)
{
	if (p->db) {
		pg_close(p->db);
		p->db = NULL;
	}
	p->outage = true;
	p->backoff_s = p->backoff_s ? p->backoff_s * 2 : 1;
	if (p->backoff_s > PG_BACKOFF_MAX_S)
		p->backoff_s = PG_BACKOFF_MAX_S;
	p->next_try_ms = mono_ms() + p->backoff_s * 1000u;
	if (!p->warned && !p->quiet)
		fprintf(stderr, "iwscope: %s; spooling to %s and retrying\n", why, p->spool_path);
	p->warned = true;
}

static bool connected(pgsink *p, bool now)
{
	if (p->db)
		return true;
	if (!now && mono_ms() < p->next_try_ms)
		return false;
	enum pg_fail fail;
	char err[1100];
	p->db = pg_open(p->uri, true, &fail, err, sizeof(err));
	if (!p->db) {
		lost(p, err);
		return false;
	}
	p->backoff_s = 0;
	if (p->warned && !p->quiet)
		fprintf(stderr, "iwscope: %s is back; draining the spool\n", p->shown);
	p->warned = false;
	return true;
}

/* Sends what the spool holds (at most max flows; 0 = all). -1 only on a spool error. */
static int drain(pgsink *p, uint64_t max, bool now)
{
	if (!connected(p, now))
		return 0;
	struct spool_stats cs = { 0 };
	/* the rows the spool's sink has pending are committed first: the drain reads them */
	int rc = store_commit(p->spool) != 0 ? -2
	         : spool_copy(store_db(p->spool), true, max, pg_send_batch, p->db, &cs);
	p->st.delivered += cs.flows;
	if (p->outage)
		p->st.drained += cs.flows;
	if (rc == -2) {
		snprintf(p->err, sizeof(p->err), "spool %s", store_error(p->spool));
		return -1;
	}
	if (rc == -1) {
		char why[1100];
		snprintf(why, sizeof(why), "%s: %s", p->shown, pg_error(p->db));
		lost(p, why);
		return 0;
	}
	int64_t pending = 0;
	if (p->outage && spool_pending(store_db(p->spool), &pending) == 0 && pending == 0)
		p->outage = false; /* caught up: from here rows go straight through */
	return 0;
}

pgsink *pgsink_open(const struct pgsink_opts *o, char *err, size_t errlen)
{
	pgsink *p = calloc(1, sizeof(*p));
	if (!p) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	snprintf(p->uri, sizeof(p->uri), "%s", o->uri);
	pg_redact(o->uri, p->shown, sizeof(p->shown));
	snprintf(p->spool_path, sizeof(p->spool_path), "%s", o->spool);
	p->quiet = o->quiet;
	/* connect first: a login that can never work leaves no spool file behind */
	enum pg_fail fail;
	char pgerr[1100];
	p->db = pg_open(o->uri, true, &fail, pgerr, sizeof(pgerr));
	if (!p->db && fail == PG_FAIL_FATAL) {
		snprintf(err, errlen, "%s", pgerr);
		free(p);
		return NULL;
	}
	p->spool = store_open(o->spool, err, errlen);
	if (!p->spool) {
		pg_close(p->db);
		free(p);
		return NULL;
	}
	p->spool_sink = store_sink(p->spool);
	int64_t pending = 0;
	spool_pending(store_db(p->spool), &pending);
	p->st.backlog = (uint64_t)pending; /* left by an earlier run: drained with this one */
	p->outage = pending > 0;
	if (!p->db)
		lost(p, pgerr);
	return p;
}

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
static int query_int(pgsink *p, char *sql, int64_t *out)
{
	int rc = sql ? pg_query(p->db, sql, first_int, out) : -1;
	free(sql);
	return rc;
}

/* The server's earlier runs of this capture file: refused or removed (--replace), as in an
 * SQLite file. Not known while the server is unreachable: the run goes on. */
static int earlier_runs(pgsink *p, const struct run_info *run)
{
	if (!p->db || (run->again != RUN_NEW_ONLY && run->again != RUN_REPLACE))
		return 0;
	char *probe = literal(run->probe), *source = literal(run->source), *sql;
	int64_t n = 0, id = 0, flows = 0;
	int rc = -1;
	if (!probe || !source)
		goto out;
#define RUNS_OF "(SELECT id FROM runs WHERE probe = %s AND source = %s)"
	if (query_int(p, sqlf("SELECT count(*) FROM runs WHERE probe = %s AND source = %s AND "
	                      RUN_PRODUCED, probe, source), &n) != 0 ||
	    query_int(p, sqlf("SELECT max(id) FROM runs WHERE probe = %s AND source = %s AND "
	                      RUN_PRODUCED, probe, source), &id) != 0 ||
	    query_int(p, sqlf("SELECT count(*) FROM flows WHERE probe = %s AND run_id IN " RUNS_OF,
	                      probe, probe, source), &flows) != 0)
		goto out;
	if (!n) {
		rc = 0;
		goto out;
	}
	if (run->again == RUN_NEW_ONLY) {
		snprintf(p->err, sizeof(p->err),
		         "%s: %s was analysed there before (run %lld of probe %s, %lld flows): "
		         "--replace analyses it again in its place, --append adds it a second time",
		         p->shown, run->source, (long long)id, run->probe, (long long)flows);
		goto refused;
	}
	sql = sqlf("BEGIN; DELETE FROM flows WHERE probe = %s AND run_id IN " RUNS_OF "; "
	           "DELETE FROM run_decode WHERE probe = %s AND run_id IN " RUNS_OF "; "
	           "DELETE FROM runs WHERE probe = %s AND source = %s; COMMIT",
	           probe, probe, source, probe, probe, source, probe, source);
#undef RUNS_OF
	rc = sql ? pg_exec(p->db, sql) : -1;
	free(sql);
	if (rc != 0) {
		pg_exec(p->db, "ROLLBACK");
		goto out;
	}
	p->st.replaced_runs = n;
	p->st.replaced_flows = flows;
out:
	if (rc != 0)
		snprintf(p->err, sizeof(p->err), "%s: %s", p->shown,
		         probe && source ? pg_error(p->db) : "out of memory");
refused:
	free(probe);
	free(source);
	return rc;
}

static int ps_begin(void *self, const struct run_info *run)
{
	pgsink *p = self;
	if (earlier_runs(p, run) != 0)
		return -1;
	struct run_info spooled = *run; /* the spool holds only what the server has not taken */
	spooled.again = RUN_APPEND;
	if (p->spool_sink.ops->begin(p->spool_sink.self, &spooled) != 0)
		return -1;
	return drain(p, PG_DRAIN_PER_TICK, false); /* the run's row, and any backlog */
}

static int ps_flow(void *self, const struct flow_record *rec)
{
	pgsink *p = self;
	return p->spool_sink.ops->flow(p->spool_sink.self, rec);
}

static int ps_tick(void *self)
{
	pgsink *p = self;
	if (p->spool_sink.ops->tick(p->spool_sink.self) != 0)
		return -1;
	uint64_t now = mono_ms();
	if (now < p->next_drain_ms)
		return 0;
	p->next_drain_ms = now + 1000;
	return drain(p, PG_DRAIN_PER_TICK, false);
}

static int ps_end(void *self, const struct run_info *run)
{
	pgsink *p = self;
	if (p->spool_sink.ops->end(p->spool_sink.self, run) != 0)
		return -1;
	if (drain(p, 0, true) != 0) /* one more try now, whatever the backoff says */
		return -1;
	int64_t pending = 0;
	spool_pending(store_db(p->spool), &pending);
	p->st.remaining = (uint64_t)pending;
	p->st.spooled = p->st.drained + p->st.remaining;
	return 0;
}

static void ps_close(void *self) { pgsink_close(self); }

static const char *ps_error(void *self)
{
	pgsink *p = self;
	return p->err[0] ? p->err : store_error(p->spool);
}

static const struct sink_ops pgsink_ops = {
	.name = "postgresql",
	.begin = ps_begin,
	.flow = ps_flow,
	.tick = ps_tick,
	.end = ps_end,
	.close = ps_close,
	.error = ps_error,
};

struct sink pgsink_sink(pgsink *p)
{
	struct sink k = { &pgsink_ops, p };
	return k;
}

void pgsink_stats(const pgsink *p, struct pgsink_stats *st) { *st = p->st; }

void pgsink_close(pgsink *p)
{
	if (!p)
		return;
	pg_close(p->db);
	store_close(p->spool);
	free(p);
}
