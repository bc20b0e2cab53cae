/* `iwscope plot DB -o DIR`: four SVG charts — the server IW histogram (exact, and lower bounds
 * stacked by why the flight stopped), the CDF of server first-flight bytes per application, the
 * SYN-window classes of clients and servers, and handshake RTT against first-flight size.
 *
 * What a reader can rely on: tick values are 1, 2 or 5 x 10^k; an axis whose values span more
 * than 50x is logarithmic; a colour means one thing in every chart (a verdict, a side; the
 * applications are greys with dashes); flows without a first-flight measurement (loss: a hole
 * or a retransmission inside it) are left out and counted in the title, which also names the
 * source. Every bar, line, point and tick carries data-* attributes, so tests (and scripts)
 * read the values back from the DOM. */
#include "plot.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dbread.h"
#include "exitcode.h"
#include "svg.h"

#define MAXP 20000 /* points kept per series */

/* The verdicts with a first-flight size, in legend order. */
static const char *const limits[] = { "cwnd", "app", "rwnd", "nagle", "ambiguous" };
#define NLIMITS 5
#define LIMITS_SQL "('cwnd', 'app', 'rwnd', 'nagle', 'ambiguous')"
/* The TCP flows with a verdict and a first flight, in FROM flows FINAL (ClickHouse: read
 * through the rows not merged yet) or FROM flows (SQLite and PostgreSQL). */
#define MEASURED(final) "FROM flows " final " WHERE s_iw_limit IN " LIMITS_SQL \
	" AND s_iw_segs > 0 AND coalesce(transport, 'tcp') = 'tcp'"

/* Applications: greys and dashes, no verdict's colour. */
static const char *const app_grey[] = { "#212121", "#757575" };
static const char *const app_dash[] = { "none", "7 3", "2 3", "9 3 2 3" };

struct series {
	char label[64];
	double x[MAXP], y[MAXP];
	int n;        /* kept */
	long total;   /* seen */
};


/* ------------------------------------------------------------------------------------------ */
/* What the database holds: the source and the flows by verdict, for the titles. */

struct census {
	char sources[1024];  /* the runs' sources joined by ", " (data-source; cut with "...") */
	bool sources_cut;
	char names[1024];    /* their files' (or interfaces') names without directories, a line each */
	char source[1536];   /* what the subtitle says: the sources when they fit, else a count */
	long runs, inputs;   /* runs, and the files or interfaces their sources list */
	long live_inputs;    /* of those, interfaces */
	bool inputs_cut;     /* a source was cut when stored: more inputs than it lists */
	long probes;
	char probe[64];      /* the probe, when there is one */
	long flows;          /* every flow, TCP and QUIC */
	long quic;           /* QUIC connections: no chart draws them */
	long by_limit[NLIMITS];
	long loss;           /* a hole or a retransmission inside the first flight */
	long no_data;        /* the server sent nothing (none), or no verdict at all */
	long measured;       /* flows with a verdict and a first-flight size */
};

/* Appends s to buf (len bytes) after sep when buf is not empty; false when it did not fit. */
static bool append(char *buf, size_t len, const char *sep, const char *s)
{
	size_t l = strlen(buf);
	if (l + strlen(sep) + strlen(s) + 1 > len)
		return false;
	snprintf(buf + l, len - l, "%s%s", l ? sep : "", s);
	return true;
}

/* Before runs.source was stored whole (issue 31, item 6), the capture command cut it at this
 * many bytes, anywhere. Such a run has no digest (the column came with whole sources): a source
 * of exactly this length without one may list fewer files than the run read. */
#define OLD_SOURCE_MAX 4095

/* One source per row (files space separated, as runs.source holds them), with its runs,
 * whether it was live and whether a run of it has no digest (written before whole sources). */
static int census_source(void *arg, int ncols, const char *const *names, const char *const *v,
                         const enum db_type *types)
{
	(void)types;
	if (!v)
		return 0; /* the column names */
	(void)names;
	struct census *c = arg;
	if (ncols < 4 || !v[0])
		return 0;
	c->runs += v[2] ? atol(v[2]) : 1;
	if (!c->sources_cut && !append(c->sources, sizeof(c->sources) - 4, ", ", v[0])) {
		c->sources_cut = true;
		append(c->sources, sizeof(c->sources), "", "...");
	}
	bool live = v[3] && atol(v[3]) > 0;
	if (strlen(v[0]) == OLD_SOURCE_MAX && ncols >= 5 && v[4] && atol(v[4]) > 0)
		c->inputs_cut = true;
	for (const char *p = v[0]; *p;) {
		size_t n = strcspn(p, " ");
		if (n) {
			c->inputs++;
			c->live_inputs += live;
			const char *slash = p + n;
			while (slash > p && slash[-1] != '/')
				slash--;
			char base[256];
			snprintf(base, sizeof(base), "%.*s", (int)(p + n - slash), slash);
			append(c->names, sizeof(c->names), "\n", base);
		}
		p += n;
		while (*p == ' ')
			p++;
	}
	return 0;
}

static int census_probes(void *arg, int ncols, const char *const *names, const char *const *v,
                         const enum db_type *types)
{
	(void)types, (void)names;
	struct census *c = arg;
	if (v && ncols >= 2 && v[0]) {
		c->probes = atol(v[0]);
		snprintf(c->probe, sizeof(c->probe), "%s", v[1] ? v[1] : "");
	}
	return 0;
}

static int census_limit(void *arg, int ncols, const char *const *names, const char *const *v,
                        const enum db_type *types)
{
	(void)types;
	if (!v)
		return 0; /* the column names */
	(void)names;
	struct census *c = arg;
	if (ncols < 4 || !v[2])
		return 0;
	long n = atol(v[2]), sized = v[3] ? atol(v[3]) : 0;
	c->flows += n;
	if (v[0] && strcmp(v[0], "tcp")) {
		c->quic += n;
		return 0;
	}
	int i = 0;
	while (v[1] && i < NLIMITS && strcmp(v[1], limits[i]))
		i++;
	if (v[1] && i < NLIMITS) {
		c->by_limit[i] += sized;
		c->measured += sized;
		c->no_data += n - sized;
	} else if (v[1] && !strcmp(v[1], "loss")) {
		c->loss += n;
	} else {
		c->no_data += n;
	}
	return 0;
}

static size_t count_lines(const char *s)
{
	size_t n = *s ? 1 : 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* What the subtitle says of the source: the runs' sources as they are when they fit a line,
 * else how many files in how many runs (of which probe), then the first names that fit:
 * "610 files in 1 run (probe vm): a.pcap, b.pcap, ...". */
static void census_describe(struct census *c, const char *target)
{
	double room = SVG_W - SVG_TX - 8;
	if (!c->runs) { /* no runs: the file, never a URI (it may hold a password) */
		snprintf(c->source, sizeof(c->source), "%s", strstr(target, "://") ? "no runs recorded" : target);
		snprintf(c->sources, sizeof(c->sources), "%.1000s", c->source);
		return;
	}
	if (!c->sources_cut && svg_text_width(c->sources, SVG_FONT) <= room) {
		snprintf(c->source, sizeof(c->source), "%s", c->sources);
		return;
	}
	const char *what = !c->live_inputs ? "file" : c->live_inputs == c->inputs ? "interface" : "input";
	char probe[128] = "";
	if (c->probes > 1)
		snprintf(probe, sizeof(probe), " from %ld probes", c->probes);
	else if (c->probe[0])
		snprintf(probe, sizeof(probe), " (probe %.60s)", c->probe);
	char head[256];
	snprintf(head, sizeof(head), "%s%ld %s%s in %ld run%s%s: ", c->inputs_cut ? "at least " : "", c->inputs, what,
	         svg_plural(c->inputs), c->runs, svg_plural(c->runs), probe);
	/* the names that fit with ", ..." after them, cut between names */
	double left = room - svg_text_width(head, SVG_FONT) - svg_text_width(", \xe2\x80\xa6", SVG_FONT);
	char names[sizeof(c->names)] = "";
	const char *p = c->names;
	while (*p) {
		size_t n = strcspn(p, "\n");
		char name[256], tryit[sizeof(names)];
		snprintf(name, sizeof(name), "%.*s", (int)n, p);
		snprintf(tryit, sizeof(tryit), "%s", names);
		if (!append(tryit, sizeof(tryit), ", ", name) || svg_text_width(tryit, SVG_FONT) > left)
			break;
		snprintf(names, sizeof(names), "%s", tryit);
		p += n;
		while (*p == '\n')
			p++;
	}
	bool all = !*p && (size_t)c->inputs == count_lines(c->names);
	snprintf(c->source, sizeof(c->source), "%s%s%s", head, names, all ? "" : names[0] ? ", \xe2\x80\xa6" : "\xe2\x80\xa6");
}

static int census_read(dbread *db, const char *target, struct census *c)
{
	memset(c, 0, sizeof(*c));
	static const struct dbread_sql sources = {
		"SELECT source, min(started_us), count(*), "
		"max(CASE WHEN pcap_received IS NULL THEN 0 ELSE 1 END), "
		"max(CASE WHEN digest IS NULL THEN 1 ELSE 0 END) FROM runs GROUP BY source ORDER BY 2, 1",
		"SELECT source, min(started_us) AS first_us, count() AS n, "
		"max(if(isNull(pcap_received), 0, 1)), max(if(isNull(digest), 1, 0)) "
		"FROM runs FINAL GROUP BY source ORDER BY first_us, source"
	}, probes = {
		"SELECT count(DISTINCT probe), min(probe) FROM runs",
		"SELECT uniqExact(probe), min(probe) FROM runs FINAL"
	}, by_limit = {
		"SELECT coalesce(transport, 'tcp'), s_iw_limit, count(*), "
		"sum(CASE WHEN s_iw_segs > 0 THEN 1 ELSE 0 END) FROM flows GROUP BY 1, 2",
		"SELECT coalesce(transport, 'tcp') AS transport, s_iw_limit, count(), "
		"countIf(ifNull(s_iw_segs, 0) > 0) FROM flows FINAL GROUP BY transport, s_iw_limit"
	};
	if (dbread_query(db, &sources, census_source, c) != 0 ||
	    dbread_query(db, &probes, census_probes, c) != 0 ||
	    dbread_query(db, &by_limit, census_limit, c) != 0) {
		fprintf(stderr, "iwscope: %s\n", dbread_error(db));
		return -1;
	}
	census_describe(c, target);
	return 0;
}

/* QUIC connections are in no chart: their first flights are datagrams, lower bounds only
 * (`iwscope report --by transport` shows them). */
#define QUIC_LEFT_OUT "QUIC (TCP only here)"

/* Appends "; left out: 2 loss, 1 without RTT"-style parts (those above 0) to buf. */
static void left_out(char *buf, size_t len, const char *const *what, const long *n, int k)
{
	bool any = false;
	for (int i = 0; i < k; i++) {
		if (n[i] <= 0)
			continue;
		size_t l = strlen(buf);
		snprintf(buf + l, len - l, "%s%ld %s", any ? ", " : (l ? "; left out: " : "left out: "), n[i], what[i]);
		any = true;
	}
}


/* ------------------------------------------------------------------------------------------ */
/* Files */


static int query_failed(dbread *db)
{
	fprintf(stderr, "iwscope: %s\n", dbread_error(db));
	return -1;
}

/* ------------------------------------------------------------------------------------------ */
/* The server IW histogram: per IW, the exact flows, and the lower bounds stacked by why the
 * flight stopped. */

#define MAXCAT 64

struct hist {
	long segs[MAXCAT];
	long count[MAXCAT][NLIMITS];
	int ncat;
	long dropped;  /* flows in IWs past the 64 kept */
};

static int hist_row(void *arg, int ncols, const char *const *names, const char *const *v,
                    const enum db_type *types)
{
	(void)types;
	if (!v)
		return 0; /* the column names */
	(void)names;
	struct hist *h = arg;
	if (ncols < 3 || !v[0] || !v[1] || !v[2])
		return 0;
	int l = 0;
	while (l < NLIMITS && strcmp(v[0], limits[l]))
		l++;
	if (l == NLIMITS)
		return 0;
	long segs = atol(v[1]);
	int c = 0;
	while (c < h->ncat && h->segs[c] != segs)
		c++;
	if (c == h->ncat) {
		if (h->ncat == MAXCAT) {
			h->dropped += atol(v[2]);
			return 0;
		}
		h->segs[h->ncat++] = segs;
	}
	h->count[c][l] += atol(v[2]);
	return 0;
}

/* The histogram's two panels, one above the other, each with its own count axis: exact IWs
 * above, lower bounds under them, so that a few exact flows stay visible beside hundreds of
 * lower bounds. COUNT_ROOM pixels above each panel's top tick hold the bars' counts. */
#define COUNT_ROOM 14
#define PANEL_GAP 10
#define PANEL_H ((SVG_PH - PANEL_GAP) / 2)
#define EXACT_BOTTOM (SVG_MT + PANEL_H)
#define LOWER_TOP (EXACT_BOTTOM + PANEL_GAP)

/* A bar's count above it, when the slot has room for it. */
static void bar_count(FILE *f, double x, double top, double slot, long v)
{
	char n[32];
	snprintf(n, sizeof(n), "%ld", v);
	if (svg_text_width(n, 10) <= slot - 2)
		fprintf(f, "<text class=\"count\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"10\" "
		           "fill=\"#444\">%s</text>\n", x, top - 3, n);
}

static int hist_chart(dbread *db, const char *dir, const struct census *c)
{
	static struct hist h;
	memset(&h, 0, sizeof(h));
#define HIST_SQL(final) "SELECT s_iw_limit, s_iw_segs, count(*) " MEASURED(final) \
	" GROUP BY s_iw_limit, s_iw_segs ORDER BY s_iw_segs, s_iw_limit"
	static const struct dbread_sql sql = { HIST_SQL(""), HIST_SQL("FINAL") };
	if (dbread_query(db, &sql, hist_row, &h) != 0)
		return query_failed(db);
	long exact = 0, lower = 0, max_exact = 0, max_lower = 0;
	for (int k = 0; k < h.ncat; k++) {
		long lb = 0;
		for (int l = 1; l < NLIMITS; l++)
			lb += h.count[k][l];
		exact += h.count[k][0];
		lower += lb;
		if (h.count[k][0] > max_exact)
			max_exact = h.count[k][0];
		if (lb > max_lower)
			max_lower = lb;
	}
	char sub[512];
	snprintf(sub, sizeof(sub), "%ld exact (cwnd), %ld lower bound%s", exact, lower, svg_plural(lower));
	const char *what[] = { "loss (no verdict)", "without a server first flight", "in IWs past the 64 shown",
		               QUIC_LEFT_OUT };
	long n[] = { c->loss, c->no_data, h.dropped, c->quic };
	left_out(sub, sizeof(sub), what, n, 4);
	FILE *f = svg_open(dir, "iw_histogram.svg", c->sources, c->source, exact + lower, c->flows,
	                   "Server initial windows", sub);
	if (!f)
		return -1;
	struct svg_axis ye, yl;
	svg_axis_linear_steps(&ye, (double)max_exact, true, 4);
	svg_axis_span(&ye, EXACT_BOTTOM, SVG_MT + COUNT_ROOM, "exact");
	svg_axis_linear_steps(&yl, (double)max_lower, true, 4);
	svg_axis_span(&yl, SVG_H - SVG_MB, LOWER_TOP + COUNT_ROOM, "lower");
	svg_axis_draw(f, &ye, 'y', "exact IW: flows", false);
	svg_axis_draw(f, &yl, 'y', "lower bound: flows", false);
	fprintf(f, "<line class=\"baseline\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#757575\"/>\n", SVG_ML,
	        EXACT_BOTTOM, SVG_W - SVG_MR, EXACT_BOTTOM);
	static char cats[MAXCAT][32];
	const char *names[MAXCAT];
	for (int k = 0; k < h.ncat; k++) {
		snprintf(cats[k], sizeof(cats[k]), "IW%ld", h.segs[k]);
		names[k] = cats[k];
	}
	svg_axis_category(f, "server first-flight segments (IW; a lower bound: at least that)", names, h.ncat);
	if (!exact)
		svg_note_at(f, (SVG_MT + EXACT_BOTTOM) / 2.0, h.ncat ? "no flight seen to end at its congestion window"
		                                                      : "no data");
	if (!lower)
		svg_note_at(f, (LOWER_TOP + SVG_H - SVG_MB) / 2.0, h.ncat ? "no lower bounds" : "no data");
	double slot = h.ncat ? (double)SVG_PW / h.ncat : 0, bw = slot * 0.6 < 48 ? slot * 0.6 : 48;
	bool used[NLIMITS] = { false };
	for (int k = 0; k < h.ncat; k++) {
		double mid = SVG_ML + slot * (k + 0.5), x = mid - bw / 2, base = 0;
		for (int l = 0; l < NLIMITS; l++) {
			long v = h.count[k][l];
			if (v <= 0)
				continue;
			used[l] = true;
			const struct svg_axis *y = l ? &yl : &ye;
			double top = svg_py(y, base + (double)v);
			fprintf(f, "<rect class=\"bar\" data-series=\"%s\" data-label=\"%s\" data-value=\"%ld\" data-limit=\"%s\" "
			           "x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>%s%s %s: %ld</title></rect>\n",
			        l ? "lower bound" : "exact (cwnd)", cats[k], v, limits[l], x, top, bw, svg_py(y, base) - top,
			        svg_colour(limits[l]), l ? ">=" : "", cats[k], limits[l], v);
			if (l)
				base += (double)v;
			else
				bar_count(f, mid, top, slot, v);
		}
		if (base > 0)
			bar_count(f, mid, svg_py(&yl, base), slot, (long)base);
	}
	if (used[0])
		svg_legend(f, 0, "exact (cwnd)", svg_colour(limits[0]), NULL);
	int row = (LOWER_TOP - SVG_MT) / 20 + 1; /* the lower bounds' legend beside their panel */
	bool heading = false;
	for (int l = 1; l < NLIMITS; l++)
		if (used[l]) {
			if (!heading)
				svg_legend_heading(f, row++, "lower bound, stopped by:");
			heading = true;
			svg_legend(f, row++, limits[l], svg_colour(limits[l]), NULL);
		}
	return svg_close(f);
}

/* ------------------------------------------------------------------------------------------ */
/* Series of (label, x, y) rows, at most nmax labels. */

struct collect {
	struct series *s;
	int n, nmax;
	long dropped;  /* rows of labels past nmax */
};

static int collect_row(void *arg, int ncols, const char *const *names, const char *const *v,
                       const enum db_type *types)
{
	(void)names, (void)types;
	if (!v)
		return 0; /* the column names */
	struct collect *c = arg;
	if (ncols < 3 || !v[1] || !v[2])
		return 0;
	const char *label = v[0] ? v[0] : "Unknown";
	int i;
	for (i = 0; i < c->n; i++) /* a label as long as the kept one: the same series */
		if (!strncmp(c->s[i].label, label, sizeof(c->s[i].label) - 1))
			break;
	if (i == c->n) {
		if (c->n == c->nmax) {
			c->dropped++;
			return 0;
		}
		snprintf(c->s[c->n].label, sizeof(c->s[c->n].label), "%s", label);
		c->s[c->n].n = 0;
		c->s[c->n++].total = 0;
	}
	struct series *s = &c->s[i];
	s->total++;
	if (s->n < MAXP) {
		s->x[s->n] = atof(v[1]);
		s->y[s->n] = atof(v[2]);
		s->n++;
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* CDF of server first-flight bytes per application: the 8 with the most flows. */
static int cdf_chart(dbread *db, const char *dir, const struct census *c)
{
	static struct series s[8];
	struct collect k = { s, 0, 8, 0 };
	/* the applications by flows, most first: the rows come in that order */
	static const struct dbread_sql sql = {
		"SELECT coalesce(f.app_proto, 'Unknown'), f.s_iw_bytes, 0 FROM flows f JOIN "
		"(SELECT coalesce(app_proto, 'Unknown') AS app, count(*) AS n " MEASURED("")
		" GROUP BY 1) a ON a.app = coalesce(f.app_proto, 'Unknown') "
		"WHERE f.s_iw_limit IN " LIMITS_SQL " AND f.s_iw_segs > 0 AND coalesce(f.transport, 'tcp') = 'tcp' "
		"ORDER BY a.n DESC, a.app",
		/* both sides subqueries: ClickHouse joins them where the query runs, each read
		 * through the Distributed table (a Distributed table joined directly would send the
		 * join to every shard, each with only its own flows) */
		"SELECT app, s_iw_bytes, 0 FROM (SELECT coalesce(app_proto, 'Unknown') AS app, s_iw_bytes "
		MEASURED("FINAL") ") ANY INNER JOIN (SELECT coalesce(app_proto, 'Unknown') AS app, count() AS n "
		MEASURED("FINAL") " GROUP BY app) USING app ORDER BY n DESC, app"
	};
	if (dbread_query(db, &sql, collect_row, &k) != 0)
		return query_failed(db);
	double lo = 0, hi = 0;
	long shown = 0, kept = 0;
	for (int i = 0; i < k.n; i++) {
		qsort(s[i].x, (size_t)s[i].n, sizeof(double), cmp_double);
		if (s[i].n && (!kept || s[i].x[0] < lo))
			lo = s[i].x[0];
		if (s[i].n && s[i].x[s[i].n - 1] > hi)
			hi = s[i].x[s[i].n - 1];
		shown += s[i].total;
		kept += s[i].n;
	}
	char sub[512] = "";
	const char *what[] = { "loss (no verdict)", "without a server first flight", "in other applications",
		               QUIC_LEFT_OUT };
	long n[] = { c->loss, c->no_data, k.dropped, c->quic };
	left_out(sub, sizeof(sub), what, n, 4);
	FILE *f = svg_open(dir, "ff_bytes_cdf.svg", c->sources, c->source, shown, c->flows,
	                   "Server first-flight bytes by application (CDF)", sub);
	if (!f)
		return -1;
	struct svg_axis x, y;
	svg_axis_auto(&x, lo, hi, true);
	svg_axis_linear(&y, 1.0, false);
	svg_axis_draw(f, &x, 'x', "first-flight bytes", true);
	svg_axis_draw(f, &y, 'y', "fraction of flows", false);
	if (!k.n)
		svg_no_data(f);
	for (int i = 0; i < k.n; i++) {
		const char *grey = app_grey[(i / 4) % 2], *dash = app_dash[i % 4];
		fprintf(f, "<polyline class=\"cdf\" data-series=\"");
		svg_text(f, s[i].label);
		fprintf(f, "\" data-flows=\"%ld\" fill=\"none\" stroke-width=\"2\" stroke=\"%s\" stroke-dasharray=\"%s\" points=\"",
		        s[i].total, grey, dash);
		double cx = SVG_ML, cy = SVG_H - SVG_MB;
		fprintf(f, "%.1f,%.1f", cx, cy);
		for (int j = 0; j < s[i].n; j++) {
			cx = svg_px(&x, s[i].x[j]);
			fprintf(f, " %.1f,%.1f", cx, cy);
			cy = svg_py(&y, (double)(j + 1) / s[i].n);
			fprintf(f, " %.1f,%.1f", cx, cy);
		}
		fputs("\"/>\n", f);
		char count[32], name[96], lab[160];
		snprintf(count, sizeof(count), " (%ld)", s[i].total);
		svg_fit(name, sizeof(name), s[i].label, SVG_FONT, SVG_LEGEND_W - svg_text_width(count, SVG_FONT));
		snprintf(lab, sizeof(lab), "%s%s", name, count);
		svg_legend(f, i, lab, grey, dash);
	}
	return svg_close(f);
}

/* ------------------------------------------------------------------------------------------ */
/* SYN-window classes of clients and servers: grouped bars. */

struct barcollect {
	struct series s[2];  /* client, server */
	char cats[MAXCAT][32];
	int ncat;
};

static int bar_row(void *arg, int ncols, const char *const *names, const char *const *v,
                   const enum db_type *types)
{
	(void)names, (void)types;
	if (!v)
		return 0; /* the column names */
	struct barcollect *b = arg;
	if (ncols < 3 || !v[0] || !v[1] || !v[2])
		return 0;
	int side = !strcmp(v[0], "client") ? 0 : !strcmp(v[0], "server") ? 1 : -1;
	if (side < 0)
		return 0;
	int c = 0;
	while (c < b->ncat && strcmp(b->cats[c], v[1]))
		c++;
	if (c == b->ncat) {
		if (b->ncat == MAXCAT)
			return 0;
		snprintf(b->cats[b->ncat++], 32, "%s", v[1]);
	}
	struct series *s = &b->s[side];
	if (s->n < MAXP) {
		s->x[s->n] = c;
		s->y[s->n++] = atof(v[2]);
		s->total += atol(v[2]);
	}
	return 0;
}

static int syn_chart(dbread *db, const char *dir, const struct census *c)
{
	static struct barcollect b;
	memset(&b, 0, sizeof(b));
	snprintf(b.s[0].label, sizeof(b.s[0].label), "client");
	snprintf(b.s[1].label, sizeof(b.s[1].label), "server");
	static const struct dbread_sql sql = { /* a view: the same text in ClickHouse */
		"SELECT side, rwnd_class, flows FROM rwnd_classes ORDER BY "
		"CASE rwnd_class WHEN '6KB' THEN 1 WHEN '8192' THEN 2 WHEN '10MSS' THEN 3 "
		"WHEN '16384' THEN 4 WHEN '20MSS' THEN 5 WHEN '64KB' THEN 6 ELSE 7 END, side", NULL
	};
	if (dbread_query(db, &sql, bar_row, &b) != 0)
		return query_failed(db);
	double max = 0;
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < b.s[i].n; k++)
			if (b.s[i].y[k] > max)
				max = b.s[i].y[k];
	char sub[512];
	snprintf(sub, sizeof(sub), "%ld client SYN%s, %ld server SYN%s (SYN-ACK) seen", b.s[0].total,
	         svg_plural(b.s[0].total), b.s[1].total, svg_plural(b.s[1].total));
	const char *what[] = { QUIC_LEFT_OUT };
	long n[] = { c->quic };
	left_out(sub, sizeof(sub), what, n, 1);
	FILE *f = svg_open(dir, "syn_window.svg", c->sources, c->source, c->flows - c->quic, c->flows,
	                   "SYN window classes", sub);
	if (!f)
		return -1;
	struct svg_axis y;
	svg_axis_linear(&y, max, true);
	svg_axis_span(&y, SVG_H - SVG_MB, SVG_MT + COUNT_ROOM, NULL); /* room for the counts above the bars */
	svg_axis_draw(f, &y, 'y', "flows", false);
	const char *names[MAXCAT];
	for (int k = 0; k < b.ncat; k++)
		names[k] = b.cats[k];
	svg_axis_category(f, "receiver class (SYN window)", names, b.ncat);
	if (!b.ncat)
		svg_no_data(f);
	double slot = b.ncat ? (double)SVG_PW / b.ncat : 0, bw = slot * 0.4 < 40 ? slot * 0.4 : 40;
	for (int k = 0; k < b.ncat; k++) {
		for (int i = 0; i < 2; i++)
			for (int j = 0; j < b.s[i].n; j++) {
				if ((int)b.s[i].x[j] != k || b.s[i].y[j] <= 0)
					continue;
				double top = svg_py(&y, b.s[i].y[j]);
				fprintf(f, "<rect class=\"bar\" data-series=\"%s\" data-label=\"", b.s[i].label);
				svg_text(f, b.cats[k]);
				fprintf(f, "\" data-value=\"%.0f\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>%s ",
				        b.s[i].y[j], SVG_ML + slot * (k + 0.5) - bw + bw * i, top, bw, SVG_H - SVG_MB - top,
				        svg_colour(b.s[i].label), b.s[i].label);
				svg_text(f, b.cats[k]);
				fprintf(f, ": %.0f</title></rect>\n", b.s[i].y[j]);
				bar_count(f, SVG_ML + slot * (k + 0.5) - bw / 2 + bw * i, top, bw + 2, (long)b.s[i].y[j]);
			}
	}
	for (int i = 0; i < 2; i++)
		svg_legend(f, i, b.s[i].label, svg_colour(b.s[i].label), NULL);
	return svg_close(f);
}

/* ------------------------------------------------------------------------------------------ */
/* Handshake RTT against first-flight bytes, one point per flow with a verdict, coloured by it. */

static int scatter_chart(dbread *db, const char *dir, const struct census *c)
{
	static struct series s[NLIMITS];
	struct collect k = { s, 0, NLIMITS, 0 };
	long no_rtt = 0;
#define SCATTER_SQL(final) "SELECT s_iw_limit, rtt_us / 1000.0, s_iw_bytes " MEASURED(final) \
	" AND rtt_us > 0 ORDER BY CASE s_iw_limit WHEN 'cwnd' THEN 1 WHEN 'app' THEN 2 WHEN 'rwnd' " \
	"THEN 3 WHEN 'nagle' THEN 4 ELSE 5 END, rtt_us, s_iw_bytes"
	static const struct dbread_sql sql = { SCATTER_SQL(""), SCATTER_SQL("FINAL") };
	if (dbread_query(db, &sql, collect_row, &k) != 0)
		return query_failed(db);
	double xlo = 0, xhi = 0, ylo = 0, yhi = 0;
	long shown = 0, kept = 0;
	for (int i = 0; i < k.n; i++) {
		for (int j = 0; j < s[i].n; j++) {
			if (!kept++ || s[i].x[j] < xlo)
				xlo = s[i].x[j];
			if (kept == 1 || s[i].y[j] < ylo)
				ylo = s[i].y[j];
			if (s[i].x[j] > xhi)
				xhi = s[i].x[j];
			if (s[i].y[j] > yhi)
				yhi = s[i].y[j];
		}
		shown += s[i].total;
	}
	no_rtt = c->measured - shown;
	char sub[512] = "";
	const char *what[] = { "loss (no verdict)", "without a server first flight", "without a handshake RTT",
		               QUIC_LEFT_OUT };
	long n[] = { c->loss, c->no_data, no_rtt, c->quic };
	left_out(sub, sizeof(sub), what, n, 4);
	if (shown > kept) {
		size_t l = strlen(sub);
		snprintf(sub + l, sizeof(sub) - l, "%s%ld points drawn", l ? "; " : "", kept);
	}
	FILE *f = svg_open(dir, "rtt_vs_ff.svg", c->sources, c->source, shown, c->flows, "Handshake RTT vs server first-flight size", sub);
	if (!f)
		return -1;
	struct svg_axis x, y;
	svg_axis_auto(&x, xlo, xhi, false);
	svg_axis_auto(&y, ylo, yhi, true);
	svg_axis_draw(f, &x, 'x', "handshake RTT at the capture point (ms)", true);
	svg_axis_draw(f, &y, 'y', "first-flight bytes", false);
	if (!k.n)
		svg_no_data(f);
	for (int i = k.n - 1; i >= 0; i--) { /* the exact (cwnd) points last: on top */
		const char *col = svg_colour(s[i].label);
		for (int j = 0; j < s[i].n; j++)
			fprintf(f, "<circle class=\"point\" data-series=\"%s\" data-rtt-ms=\"%.3f\" data-bytes=\"%.0f\" "
			           "cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\" fill-opacity=\"0.7\"/>\n",
			        s[i].label, s[i].x[j], s[i].y[j], svg_px(&x, s[i].x[j]), svg_py(&y, s[i].y[j]), col);
	}
	for (int i = 0; i < k.n; i++) {
		char lab[96];
		snprintf(lab, sizeof(lab), "%s (%ld)", s[i].label, s[i].total);
		svg_legend(f, i, lab, svg_colour(s[i].label), NULL);
	}
	return svg_close(f);
}

/* dir with each run of slashes as one and none at its end ("plots//" is "plots", "/" stays),
 * in out (len bytes): the paths printed and written have no "//". */
static const char *clean_dir(char *out, size_t len, const char *dir)
{
	size_t n = 0;
	for (const char *p = dir; *p && n + 1 < len; p++)
		if (*p != '/' || !n || out[n - 1] != '/')
			out[n++] = *p;
	while (n > 1 && out[n - 1] == '/')
		n--;
	out[n] = '\0';
	return out;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: iwscope plot DB|postgresql://...|clickhouse://... -o DIR%s\n",
	        out == stderr ? " (see iwscope --help)" : "");
}

int plot_main(int argc, char **argv)
{
	static const struct option longopts[] = { { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 } };
	const char *dir = NULL;
	int c;
	optind = 1;
	opterr = 0; /* one line: the usage */
	while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		if (c == 'o') {
			dir = optarg;
		} else if (c == 'h') {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (!dir || optind != argc - 1 || !*dir) {
		usage(stderr);
		return EXIT_USAGE;
	}
	static char clean[4096];
	dir = clean_dir(clean, sizeof(clean), dir);
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		fprintf(stderr, "iwscope: %s: %s\n", dir, strerror(errno));
		return EXIT_RUNTIME;
	}
	char err[1100];
	dbread *db = dbread_open(argv[optind], err, sizeof(err));
	if (!db) {
		fprintf(stderr, "iwscope: %s\n", err);
		return EXIT_RUNTIME;
	}
	static struct census census;
	int rc = census_read(db, argv[optind], &census);
	if (!rc) {
		rc |= hist_chart(db, dir, &census);
		rc |= cdf_chart(db, dir, &census);
		rc |= syn_chart(db, dir, &census);
		rc |= scatter_chart(db, dir, &census);
	}
	dbread_close(db);
	if (rc) {
		fprintf(stderr, "iwscope: could not write every chart in %s\n", dir);
		return EXIT_RUNTIME;
	}
	static const char *const files[] = { "iw_histogram.svg", "ff_bytes_cdf.svg", "syn_window.svg", "rtt_vs_ff.svg" };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[4200];
		svg_path(path, sizeof(path), dir, files[i]);
		puts(path);
	}
	return 0;
}
