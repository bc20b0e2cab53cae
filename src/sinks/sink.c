/* The sinks as one: the registry of the kinds of sink the run can open, and what the engine,
 * the stage and the live capture's writer hand to each. */
#include "sink.h"

#include <stdio.h>

#include "ch.h"
#include "chsink.h"
#include "lines.h"
#include "pg.h"
#include "pgsink.h"
#include "store.h"
#include "ui.h"

/* ---- how each kind is opened and asked (the kinds' files are sqlite: store.c, postgresql:
 * pgsink.c, clickhouse: chsink.c, lines: lines.c and json.c, dashboard: ui.c) ---- */

static bool want_sqlite(const struct sink_conf *c) { return !pg_is_uri(c->uri) && !ch_is_uri(c->uri); }
static bool want_pg(const struct sink_conf *c) { return pg_is_uri(c->uri); }
static bool want_ch(const struct sink_conf *c) { return ch_is_uri(c->uri); }
static bool want_lines(const struct sink_conf *c) { return c->lines; }
static bool want_dashboard(const struct sink_conf *c) { return c->dashboard; }

static const char *sqlite_file(const struct sink_conf *c) { return c->uri; }
static const char *pg_file(const struct sink_conf *c) { return c->spool; }

static int open_sqlite(const struct sink_conf *c, struct sink *out, char *err, size_t errlen)
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

static int open_pg(const struct sink_conf *c, struct sink *out, char *err, size_t errlen)
{
	struct pgsink_opts po = { c->uri, c->spool, c->quiet };
	outbox *pg = pgsink_open(&po, err, errlen);
	if (!pg)
		return -1;
	*out = outbox_sink(pg);
	return 0;
}

static int open_ch(const struct sink_conf *c, struct sink *out, char *err, size_t errlen)
{
	struct chsink_opts co = { c->uri, c->spool, c->quiet };
	outbox *ch = chsink_open(&co, err, errlen);
	if (!ch)
		return -1;
	*out = outbox_sink(ch);
	return 0;
}

static int open_lines(const struct sink_conf *c, struct sink *out, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	*out = lines_sink(stdout, c->json); /* out of memory: no lines, as before */
	return 0;
}

static int open_dashboard(const struct sink_conf *c, struct sink *out, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	struct ui_opts uo = { c->source, c->color };
	ui *dash = ui_open(&uo);
	*out = dash ? ui_sink(dash) : (struct sink){ NULL, NULL };
	return 0;
}

static void sqlite_replaced(void *self, int64_t *runs, int64_t *flows)
{
	store_replaced(self, runs, flows);
}

static void server_replaced(void *self, int64_t *runs, int64_t *flows)
{
	struct outbox_stats st;
	outbox_stats(self, &st);
	*runs = st.replaced_runs;
	*flows = st.replaced_flows;
}

/* A spooling sink's lines after the summary: rows sent, what waited in the spool, what still
 * does. */
static void spool_summary(const char *name, const struct outbox_stats *s, const struct sink_conf *c)
{
	struct outbox_stats st = *s;
	fprintf(stderr, "iwscope: %s: %llu flow rows sent", name, (unsigned long long)st.delivered);
	if (st.spooled) {
		fprintf(stderr, "; %llu waited in the spool while the server was unreachable",
		        (unsigned long long)st.spooled);
		if (st.backlog)
			fprintf(stderr, " (%llu left by an earlier run)", (unsigned long long)st.backlog);
		fprintf(stderr, ", %llu drained", (unsigned long long)st.drained);
	}
	fprintf(stderr, "\n");
	if (st.remaining)
		fprintf(stderr, "iwscope: %llu flow rows wait in the spool %s; the next run with it, or "
		        "`iwscope merge %s -o URI`, delivers them\n", (unsigned long long)st.remaining,
		        c->spool, c->spool);
}

/* A spooling sink's lines after the summary, under its server's name. */
static void outbox_summary(void *self, const struct sink_conf *c)
{
	struct outbox_stats st;
	outbox_stats(self, &st);
	spool_summary(outbox_sink(self).ops->name, &st, c);
}

/* The registry: the kinds in the order they are opened (the primary first). */
static const struct sink_kind kinds[] = {
	{ "sqlite", true, false, want_sqlite, open_sqlite, sqlite_file, sqlite_replaced, NULL },
	{ "postgresql", true, false, want_pg, open_pg, pg_file, server_replaced, outbox_summary },
	{ "clickhouse", true, false, want_ch, open_ch, pg_file, server_replaced, outbox_summary },
	{ "lines", false, false, want_lines, open_lines, NULL, NULL, NULL },
	{ "dashboard", false, true, want_dashboard, open_dashboard, NULL, NULL, NULL },
};

const struct sink_kind *sink_kind_at(unsigned i)
{
	return i < sizeof(kinds) / sizeof(kinds[0]) ? &kinds[i] : NULL;
}

/* ---- the sinks as one ---- */

int sinks_flow(struct sink *sinks, unsigned n, const struct flow_record *rec)
{
	for (unsigned i = 0; i < n; i++)
		if (sinks[i].ops->flow(sinks[i].self, rec) != 0)
			return -1;
	return 0;
}

int sinks_tick(struct sink *sinks, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (sinks[i].ops->tick(sinks[i].self) != 0)
			return -1;
	return 0;
}
