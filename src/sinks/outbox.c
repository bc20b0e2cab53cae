/* outbox: a remote server written through a local SQLite spool (include/outbox.h). */
#include "outbox.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "config.h"
#include "spool.h"
#include "store.h"

struct outbox {
	const struct outbox_server *srv;
	store *spool;
	struct sink spool_sink;
	void *db;
	char uri[1024], shown[600], spool_path[512];
	bool quiet;
	bool outage;          /* rows are waiting because the server was unreachable */
	bool warned;          /* this outage has been reported */
	uint64_t next_try_ms; /* monotonic time of the next reconnect */
	unsigned backoff_s;
	uint64_t next_drain_ms;
	struct outbox_stats st;
	struct sink_ops ops;  /* the server kind's name, the outbox's operations */
	char err[2048];
};

static int ob_begin(void *self, const struct run_info *run);
static int ob_flow(void *self, const struct flow_record *rec);
static int ob_tick(void *self);
static int ob_end(void *self, const struct run_info *run);
static void ob_close(void *self);
static const char *ob_error(void *self);

static uint64_t mono_ms(void) { return clock_mono_us() / 1000u; }

static void disconnect(outbox *ob)
{
	if (ob->db) {
		ob->srv->close(ob->db);
		ob->db = NULL;
	}
}

/* The server went away (or never came, or cannot take a batch): keep spooling, try later. */
static void lost(outbox *ob, const char *why)
{
	disconnect(ob);
	ob->outage = true;
	ob->backoff_s = ob->backoff_s ? ob->backoff_s * 2 : 1;
	if (ob->backoff_s > PG_BACKOFF_MAX_S)
		ob->backoff_s = PG_BACKOFF_MAX_S;
	ob->next_try_ms = mono_ms() + ob->backoff_s * 1000u;
	if (!ob->warned && !ob->quiet)
		fprintf(stderr, "iwscope: %s; spooling to %s and retrying\n", why, ob->spool_path);
	ob->warned = true;
}

/* An outage is over: said once. */
static void back(outbox *ob)
{
	if (ob->warned && !ob->quiet)
		fprintf(stderr, "iwscope: %s is back; draining the spool\n", ob->shown);
	ob->warned = false;
}

static bool connected(outbox *ob, bool now)
{
	if (ob->db)
		return true;
	if (!now && mono_ms() < ob->next_try_ms)
		return false;
	bool fatal;
	char err[1200];
	ob->db = ob->srv->open(ob->uri, &fatal, err, sizeof(err));
	if (!ob->db) {
		lost(ob, err);
		return false;
	}
	ob->backoff_s = 0;
	if (!ob->srv->back_on_batch)
		back(ob);
	return true;
}

/* Sends what the spool holds (at most max flows; 0 = all). -1 only on a spool error. */
static int drain(outbox *ob, uint64_t max, bool now)
{
	if (!connected(ob, now))
		return 0;
	struct spool_stats cs = { 0 };
	/* the rows the spool's sink has pending are committed first: the drain reads them */
	int rc = store_commit(ob->spool) != 0 ? -2
	         : spool_copy(store_db(ob->spool), true, max, ob->srv->send, ob->db, &cs);
	ob->st.delivered += cs.flows;
	if (ob->outage)
		ob->st.drained += cs.flows;
	if (rc == -2) {
		snprintf(ob->err, sizeof(ob->err), "spool %s", store_error(ob->spool));
		return -1;
	}
	if (rc == -1) {
		char why[1300];
		if (ob->srv->named_errors)
			snprintf(why, sizeof(why), "%s: %s", ob->shown, ob->srv->error(ob->db));
		else
			snprintf(why, sizeof(why), "%s", ob->srv->error(ob->db));
		lost(ob, why);
		return 0;
	}
	if (ob->srv->back_on_batch) /* a batch went through */
		back(ob);
	int64_t pending = 0;
	if (ob->outage && spool_pending(store_db(ob->spool), &pending) == 0 && pending == 0)
		ob->outage = false; /* caught up: from here rows go straight through */
	return 0;
}

outbox *outbox_open(const struct outbox_server *srv, const char *uri, const char *shown,
                    const char *spool, bool quiet, char *err, size_t errlen)
{
	outbox *ob = calloc(1, sizeof(*ob));
	if (!ob) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	ob->srv = srv;
	ob->ops = (struct sink_ops){ .name = srv->name, .begin = ob_begin, .flow = ob_flow,
	                             .tick = ob_tick, .end = ob_end, .close = ob_close,
	                             .error = ob_error };
	snprintf(ob->uri, sizeof(ob->uri), "%s", uri);
	snprintf(ob->shown, sizeof(ob->shown), "%s", shown);
	snprintf(ob->spool_path, sizeof(ob->spool_path), "%s", spool);
	ob->quiet = quiet;
	/* connect first: a target that can never work leaves no spool file behind */
	bool fatal = false;
	char dberr[1200];
	ob->db = srv->open(uri, &fatal, dberr, sizeof(dberr));
	if (!ob->db && fatal) {
		snprintf(err, errlen, "%s", dberr);
		outbox_close(ob);
		return NULL;
	}
	ob->spool = store_open(spool, err, errlen);
	if (!ob->spool) {
		outbox_close(ob);
		return NULL;
	}
	ob->spool_sink = store_sink(ob->spool);
	int64_t pending = 0;
	spool_pending(store_db(ob->spool), &pending);
	ob->st.backlog = (uint64_t)pending; /* left by an earlier run: drained with this one */
	ob->outage = pending > 0;
	if (!ob->db)
		lost(ob, dberr);
	return ob;
}

const char *outbox_shown(const outbox *ob) { return ob->shown; }

void outbox_fail(outbox *ob, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ob->err, sizeof(ob->err), fmt, ap);
	va_end(ap);
}

void outbox_replaced(outbox *ob, int64_t runs, int64_t flows)
{
	ob->st.replaced_runs = runs;
	ob->st.replaced_flows = flows;
}

static int ob_begin(void *self, const struct run_info *run)
{
	outbox *ob = self;
	/* the earlier runs are not known while the server is unreachable: the run goes on */
	if (ob->db && (run->again == RUN_NEW_ONLY || run->again == RUN_REPLACE) &&
	    ob->srv->earlier_runs(ob, ob->db, run) != 0)
		return -1;
	struct run_info spooled = *run; /* the spool holds only what the server has not taken */
	spooled.again = RUN_APPEND;
	if (ob->spool_sink.ops->begin(ob->spool_sink.self, &spooled) != 0)
		return -1;
	return drain(ob, PG_DRAIN_PER_TICK, false); /* the run's row, and any backlog */
}

static int ob_flow(void *self, const struct flow_record *rec)
{
	outbox *ob = self;
	return ob->spool_sink.ops->flow(ob->spool_sink.self, rec);
}

static int ob_tick(void *self)
{
	outbox *ob = self;
	if (ob->spool_sink.ops->tick(ob->spool_sink.self) != 0)
		return -1;
	uint64_t now = mono_ms();
	if (now < ob->next_drain_ms)
		return 0;
	ob->next_drain_ms = now + 1000;
	return drain(ob, PG_DRAIN_PER_TICK, false);
}

static int ob_end(void *self, const struct run_info *run)
{
	outbox *ob = self;
	if (ob->spool_sink.ops->end(ob->spool_sink.self, run) != 0)
		return -1;
	if (drain(ob, 0, true) != 0) /* one more try now, whatever the backoff says */
		return -1;
	int64_t pending = 0;
	spool_pending(store_db(ob->spool), &pending);
	ob->st.remaining = (uint64_t)pending;
	ob->st.spooled = ob->st.drained + ob->st.remaining;
	return 0;
}

static void ob_close(void *self) { outbox_close(self); }

static const char *ob_error(void *self)
{
	outbox *ob = self;
	return ob->err[0] ? ob->err : store_error(ob->spool);
}

struct sink outbox_sink(outbox *ob)
{
	struct sink k = { &ob->ops, ob };
	return k;
}

void outbox_stats(const outbox *ob, struct outbox_stats *st) { *st = ob->st; }

void outbox_close(outbox *ob)
{
	if (!ob)
		return;
	disconnect(ob);
	store_close(ob->spool);
	memset(ob->uri, 0, sizeof(ob->uri)); /* it may hold the password */
	free(ob);
}

void outbox_kind_replaced(void *self, int64_t *runs, int64_t *flows)
{
	const outbox *ob = self;
	*runs = ob->st.replaced_runs;
	*flows = ob->st.replaced_flows;
}

void outbox_kind_summary(void *self, const struct sink_conf *c)
{
	const outbox *ob = self;
	const struct outbox_stats *st = &ob->st;
	fprintf(stderr, "iwscope: %s: %llu flow rows sent", ob->ops.name,
	        (unsigned long long)st->delivered);
	if (st->spooled) {
		fprintf(stderr, "; %llu waited in the spool while the server was unreachable",
		        (unsigned long long)st->spooled);
		if (st->backlog)
			fprintf(stderr, " (%llu left by an earlier run)", (unsigned long long)st->backlog);
		fprintf(stderr, ", %llu drained", (unsigned long long)st->drained);
	}
	fprintf(stderr, "\n");
	if (st->remaining)
		fprintf(stderr, "iwscope: %llu flow rows wait in the spool %s; the next run with it, or "
		        "`iwscope merge %s -o URI`, delivers them\n", (unsigned long long)st->remaining,
		        c->spool, c->spool);
}
