/* The ClickHouse sink: rows go first into the local SQLite spool, as for PostgreSQL (pgsink.c),
 * which drains to the server every tick in INSERT ... FORMAT TabSeparated batches. While the
 * server (or, through Distributed tables, any shard) cannot take a batch, the spool keeps it and
 * reconnects back off (1, 2, 4 ... PG_BACKOFF_MAX_S s). A batch leaves the spool only once the
 * server said it took it; one sent again (its answer lost, or some shards had it) collapses
 * into one copy in the tables' ReplacingMergeTree. */
#include "chsink.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ch.h"
#include "clock.h"
#include "config.h"
#include "spool.h"
#include "store.h"

struct chsink {
	store *spool;
	struct sink spool_sink;
	chdb *db;
	char uri[1024], shown[600], spool_path[512];
	bool quiet;
	bool outage;          /* rows are waiting because the server was unreachable */
	bool warned;          /* this outage has been reported */
	uint64_t next_try_ms; /* monotonic time of the next reconnect */
	unsigned backoff_s;
	uint64_t next_drain_ms;
	struct pgsink_stats st;
	char err[1300];
};

static uint64_t mono_ms(void) { return clock_mono_us() / 1000u; }

/* The server went away (or cannot take a batch): keep spooling and try again later. */
static void lost(chsink *c, const char *why)
{
	if (c->db) {
		ch_close(c->db);
		c->db = NULL;
	}
	c->outage = true;
	c->backoff_s = c->backoff_s ? c->backoff_s * 2 : 1;
	if (c->backoff_s > PG_BACKOFF_MAX_S)
		c->backoff_s = PG_BACKOFF_MAX_S;
	c->next_try_ms = mono_ms() + c->backoff_s * 1000u;
	if (!c->warned && !c->quiet)
		fprintf(stderr, "iwscope: %s; spooling to %s and retrying\n", why, c->spool_path);
	c->warned = true;
}

static bool connected(chsink *c, bool now)
{
	if (c->db)
		return true;
	if (!now && mono_ms() < c->next_try_ms)
		return false;
	enum ch_fail fail;
	char err[1200];
	c->db = ch_open(c->uri, true, &fail, err, sizeof(err));
	if (!c->db) {
		lost(c, err);
		return false;
	}
	c->backoff_s = 0;
	return true;
}

/* Sends what the spool holds (at most max flows; 0 = all). -1 only on a spool error. */
static int drain(chsink *c, uint64_t max, bool now)
{
	if (!connected(c, now))
		return 0;
	struct spool_stats cs = { 0 };
	int rc = store_commit(c->spool) != 0 ? -2
	         : spool_copy(store_db(c->spool), true, max, ch_send_batch, c->db, &cs);
	c->st.delivered += cs.flows;
	if (c->outage)
		c->st.drained += cs.flows;
	if (rc == -2) {
		snprintf(c->err, sizeof(c->err), "spool %s", store_error(c->spool));
		return -1;
	}
	if (rc == -1) {
		char why[1300];
		snprintf(why, sizeof(why), "%s", ch_error(c->db));
		lost(c, why);
		return 0;
	}
	if (c->warned && !c->quiet) /* a batch went through: the outage is over */
		fprintf(stderr, "iwscope: %s is back; draining the spool\n", c->shown);
	c->warned = false;
	int64_t pending = 0;
	if (c->outage && spool_pending(store_db(c->spool), &pending) == 0 && pending == 0)
		c->outage = false;
	return 0;
}

chsink *chsink_open(const struct chsink_opts *o, char *err, size_t errlen)
{
	chsink *c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	snprintf(c->uri, sizeof(c->uri), "%s", o->uri);
	ch_shown(o->uri, c->shown, sizeof(c->shown));
	snprintf(c->spool_path, sizeof(c->spool_path), "%s", o->spool);
	c->quiet = o->quiet;
	/* connect first: a target that can never work leaves no spool file behind */
	enum ch_fail fail;
	char cherr[1200];
	c->db = ch_open(o->uri, true, &fail, cherr, sizeof(cherr));
	if (!c->db && fail == CH_FAIL_FATAL) {
		snprintf(err, errlen, "%s", cherr);
		free(c);
		return NULL;
	}
	c->spool = store_open(o->spool, err, errlen);
	if (!c->spool) {
		ch_close(c->db);
		free(c);
		return NULL;
	}
	c->spool_sink = store_sink(c->spool);
	int64_t pending = 0;
	spool_pending(store_db(c->spool), &pending);
	c->st.backlog = (uint64_t)pending; /* left by an earlier run: drained with this one */
	c->outage = pending > 0;
	if (!c->db)
		lost(c, cherr);
	return c;
}

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
 * needs rows deleted, which Distributed tables cannot do: refused too. Not known while the
 * server is unreachable: the run goes on. */
static int earlier_runs(chsink *c, const struct run_info *run)
{
	if (!c->db || (run->again != RUN_NEW_ONLY && run->again != RUN_REPLACE))
		return 0;
	char probe[256], source[4200], sql[16384];
	if (literal(run->probe, probe, sizeof(probe)) != 0 || literal(run->source, source, sizeof(source)) != 0)
		return 0; /* too long to ask about: as if unknown */
	int64_t got[3] = { 0, 0, 0 };
	snprintf(sql, sizeof(sql), "SELECT count(), max(id), (SELECT count() FROM flows FINAL WHERE "
	         "probe = %s AND run_id GLOBAL IN (SELECT id FROM runs FINAL WHERE probe = %s AND source = %s)) "
	         "FROM runs FINAL WHERE probe = %s AND source = %s", probe, probe, source, probe, source);
	if (ch_query(c->db, sql, count_row, got) != 0) {
		snprintf(c->err, sizeof(c->err), "%s", ch_error(c->db));
		return -1;
	}
	if (!got[0])
		return 0;
	snprintf(c->err, sizeof(c->err),
	         "%s: %s was analysed there before (run %lld of probe %s, %lld flows): %s",
	         c->shown, run->source, (long long)got[1], run->probe, (long long)got[2],
	         run->again == RUN_REPLACE ? "--replace cannot delete rows in ClickHouse; --append "
	                                     "adds it a second time"
	                                   : "--append adds it a second time");
	return -1;
}

static int cs_begin(void *self, const struct run_info *run)
{
	chsink *c = self;
	if (earlier_runs(c, run) != 0)
		return -1;
	struct run_info spooled = *run; /* the spool holds only what the server has not taken */
	spooled.again = RUN_APPEND;
	if (c->spool_sink.ops->begin(c->spool_sink.self, &spooled) != 0)
		return -1;
	return drain(c, PG_DRAIN_PER_TICK, false); /* the run's row, and any backlog */
}

static int cs_flow(void *self, const struct flow_record *rec)
{
	chsink *c = self;
	return c->spool_sink.ops->flow(c->spool_sink.self, rec);
}

static int cs_tick(void *self)
{
	chsink *c = self;
	if (c->spool_sink.ops->tick(c->spool_sink.self) != 0)
		return -1;
	uint64_t now = mono_ms();
	if (now < c->next_drain_ms)
		return 0;
	c->next_drain_ms = now + 1000;
	return drain(c, PG_DRAIN_PER_TICK, false);
}

static int cs_end(void *self, const struct run_info *run)
{
	chsink *c = self;
	if (c->spool_sink.ops->end(c->spool_sink.self, run) != 0)
		return -1;
	if (drain(c, 0, true) != 0) /* one more try now, whatever the backoff says */
		return -1;
	int64_t pending = 0;
	spool_pending(store_db(c->spool), &pending);
	c->st.remaining = (uint64_t)pending;
	c->st.spooled = c->st.drained + c->st.remaining;
	return 0;
}

static void cs_close(void *self) { chsink_close(self); }

static const char *cs_error(void *self)
{
	chsink *c = self;
	return c->err[0] ? c->err : store_error(c->spool);
}

static const struct sink_ops chsink_ops = {
	.name = "clickhouse",
	.begin = cs_begin,
	.flow = cs_flow,
	.tick = cs_tick,
	.end = cs_end,
	.close = cs_close,
	.error = cs_error,
};

struct sink chsink_sink(chsink *c)
{
	struct sink k = { &chsink_ops, c };
	return k;
}

void chsink_stats(const chsink *c, struct pgsink_stats *st) { *st = c->st; }

void chsink_close(chsink *c)
{
	if (!c)
		return;
	ch_close(c->db);
	store_close(c->spool);
	memset(c->uri, 0, sizeof(c->uri)); /* it may hold the password */
	free(c);
}
