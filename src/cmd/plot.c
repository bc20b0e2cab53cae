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
#include "json.h"

#define W 800
#define H 480
#define ML 70  /* margins */
#define MR 170
#define MT 62
#define MB 60
#define PW (W - ML - MR) /* the plot area */
#define PH (H - MT - MB)
#define MAXP 20000 /* points kept per series */
#define MAXTICKS 32

/* One colour per meaning, the same in every chart. */
static const struct {
	const char *key, *colour;
} colours[] = {
	{ "cwnd", "#2e7d32" },      /* an exact IW */
	{ "app", "#ef6c00" },       /* lower bounds, by why the flight stopped */
	{ "rwnd", "#1565c0" },
	{ "nagle", "#6a1b9a" },
	{ "ambiguous", "#8d6e63" },
	{ "loss", "#c62828" },      /* never drawn: no verdict */
	{ "client", "#37474f" },    /* the two sides of a connection */
	{ "server", "#90a4ae" },
};

/* The verdicts with a first-flight size, in legend order. */
static const char *const limits[] = { "cwnd", "app", "rwnd", "nagle", "ambiguous" };
#define NLIMITS 5
#define LIMITS_SQL "('cwnd', 'app', 'rwnd', 'nagle', 'ambiguous')"

static const char *colour_of(const char *key)
{
	for (size_t i = 0; i < sizeof(colours) / sizeof(colours[0]); i++)
		if (!strcmp(colours[i].key, key))
			return colours[i].colour;
	return "#757575";
}

/* Applications: greys and dashes, no verdict's colour. */
static const char *const app_grey[] = { "#212121", "#757575" };
static const char *const app_dash[] = { "none", "7 3", "2 3", "9 3 2 3" };

struct series {
	char label[64];
	double x[MAXP], y[MAXP];
	int n;        /* kept */
	long total;   /* seen */
};

/* Text safe for XML: markup escaped, control characters left out, bytes that are not UTF-8
 * (a name from the wire, a path) as U+FFFD, so that the SVG stays well-formed. */
static void xml(FILE *f, const char *s)
{
	while (s && *s) {
		switch (*s) {
		case '<': fputs("&lt;", f); s++; continue;
		case '>': fputs("&gt;", f); s++; continue;
		case '&': fputs("&amp;", f); s++; continue;
		case '"': fputs("&quot;", f); s++; continue;
		default:
			break;
		}
		unsigned cp;
		size_t n = json_utf8_char(s, &cp);
		if (!n) { /* not UTF-8: one byte */
			fputs("\xef\xbf\xbd", f);
			s++;
			continue;
		}
		if (cp >= 0x20)
			fwrite(s, 1, n, f);
		s += n;
	}
}

/* ------------------------------------------------------------------------------------------ */
/* What the database holds: the source and the flows by verdict, for the titles. */

struct census {
	char source[512];   /* the runs' sources, or the database */
	long flows;         /* every flow */
	long by_limit[NLIMITS];
	long loss;          /* a hole or a retransmission inside the first flight */
	long no_data;       /* the server sent nothing (none), or no verdict at all */
	long measured;      /* flows with a verdict and a first-flight size */
};

static int census_source(void *arg, int ncols, const char *const *names, const char *const *v,
                         const enum db_type *types)
{
	(void)types;
	if (!v)
		return 0; /* the column names */
	(void)names;
	struct census *c = arg;
	if (ncols < 1 || !v[0])
		return 0;
	size_t len = strlen(c->source);
	if (len + 3 < sizeof(c->source))
		snprintf(c->source + len, sizeof(c->source) - len, "%s%s", len ? ", " : "", v[0]);
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
	if (ncols < 3 || !v[1])
		return 0;
	long n = atol(v[1]), sized = v[2] ? atol(v[2]) : 0;
	c->flows += n;
	int i = 0;
	while (v[0] && i < NLIMITS && strcmp(v[0], limits[i]))
		i++;
	if (v[0] && i < NLIMITS) {
		c->by_limit[i] += sized;
		c->measured += sized;
		c->no_data += n - sized;
	} else if (v[0] && !strcmp(v[0], "loss")) {
		c->loss += n;
	} else {
		c->no_data += n;
	}
	return 0;
}

static int census_read(dbread *db, const char *target, struct census *c)
{
	memset(c, 0, sizeof(*c));
	if (dbread_query(db, "SELECT source, min(started_us) FROM runs GROUP BY source ORDER BY 2, 1",
	                 census_source, c) != 0 ||
	    dbread_query(db, "SELECT s_iw_limit, count(*), sum(CASE WHEN s_iw_segs > 0 THEN 1 ELSE 0 END) "
	                     "FROM flows GROUP BY s_iw_limit", census_limit, c) != 0) {
		fprintf(stderr, "iwscope: %s\n", dbread_error(db));
		return -1;
	}
	if (!c->source[0]) /* no runs: the file, never a URI (it may hold a password) */
		snprintf(c->source, sizeof(c->source), "%s", strstr(target, "://") ? "no runs recorded" : target);
	if (strlen(c->source) > 100) { /* a long list of files: its start, cut between characters */
		size_t cut = 96;
		while (cut > 0 && ((unsigned char)c->source[cut] & 0xc0) == 0x80)
			cut--;
		snprintf(c->source + cut, sizeof(c->source) - cut, "...");
	}
	return 0;
}

static const char *plural(long n) { return n == 1 ? "" : "s"; }

/* "N flows" or "N of M flows": the title's count. */
static void of_flows(char *buf, size_t len, long shown, long all)
{
	if (shown == all)
		snprintf(buf, len, "%ld flow%s", all, plural(all));
	else
		snprintf(buf, len, "%ld of %ld flow%s", shown, all, plural(all));
}

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
/* Axes: 1, 2, 5 x 10^k ticks, linear from 0 or logarithmic. */

struct axis {
	bool log;
	double lo, hi;           /* the axis' ends, as values */
	double tick[MAXTICKS];
	int n;
};

/* m x 10^e as a double, made from exact parts (0.1 * 3 is not 0.3). */
static double m10(double m, int e)
{
	return e >= 0 ? m * pow(10, e) : m / pow(10, -e);
}

/* Linear from 0 to the first tick at or above max, at most 6 steps of 1, 2 or 5 x 10^k
 * (whole steps for counts). */
static void axis_linear(struct axis *a, double max, bool counts)
{
	memset(a, 0, sizeof(*a));
	if (!(max > 0))
		max = 1;
	static const int m[] = { 1, 2, 5 };
	int e = (int)floor(log10(max)) - 1, k = 0;
	while (max / m10(m[k], e) > 6 + 1e-9 || (counts && m10(m[k], e) < 1)) {
		if (++k == 3) {
			k = 0;
			e++;
		}
	}
	double step = m10(m[k], e);
	int steps = (int)ceil(max / step - 1e-9);
	for (int i = 0; i <= steps && i < MAXTICKS; i++)
		a->tick[a->n++] = m10((double)m[k] * i, e);
	a->lo = 0;
	a->hi = a->tick[a->n - 1];
}

/* The 1, 2, 5 x 10^k value at or below v (up = false) or at or above it. */
static double round125(double v, bool up)
{
	int e = (int)floor(log10(v));
	static const int m[] = { 1, 2, 5, 10 };
	double r = up ? m10(10, e) : m10(1, e);
	for (int i = 0; i < 4; i++) {
		double x = m10(m[i], e);
		if (up && x >= v * (1 - 1e-9)) {
			r = x;
			break;
		}
		if (!up && x <= v * (1 + 1e-9))
			r = x;
	}
	return r;
}

/* Logarithmic over [lo, hi] (both > 0): ticks at 1, 2, 5 x 10^k over at most 3 decades, at
 * the decades beyond. */
static void axis_log(struct axis *a, double lo, double hi)
{
	memset(a, 0, sizeof(*a));
	a->log = true;
	a->lo = round125(lo, false);
	a->hi = round125(hi, true);
	if (a->hi <= a->lo)
		a->hi = round125(a->lo * 1.5, true);
	bool decades = log10(a->hi / a->lo) > 3 + 1e-9;
	if (decades) {
		a->lo = m10(1, (int)floor(log10(a->lo) + 1e-9));
		a->hi = m10(1, (int)ceil(log10(a->hi) - 1e-9));
	}
	static const int m[] = { 1, 2, 5 };
	for (int e = (int)floor(log10(a->lo) + 1e-9); e <= (int)ceil(log10(a->hi) - 1e-9); e++)
		for (int i = 0; i < 3; i++) {
			double v = m10(m[i], e);
			if ((decades && i) || v < a->lo * (1 - 1e-9) || v > a->hi * (1 + 1e-9) || a->n == MAXTICKS)
				continue;
			a->tick[a->n++] = v;
		}
}

/* Logarithmic when every value is above 0 and they span more than 50x; linear from 0 else. */
static void axis_auto(struct axis *a, double lo, double hi, bool counts)
{
	if (lo > 0 && hi / lo > 50)
		axis_log(a, lo, hi);
	else
		axis_linear(a, hi, counts);
}

/* Where v falls on the axis, 0 to 1. */
static double axis_at(const struct axis *a, double v)
{
	if (a->log)
		return v <= 0 ? 0 : (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo));
	return a->hi > a->lo ? (v - a->lo) / (a->hi - a->lo) : 0;
}

static double px(const struct axis *a, double v) { return ML + axis_at(a, v) * PW; }
static double py(const struct axis *a, double v) { return H - MB - axis_at(a, v) * PH; }

/* A tick label: 0.5, 20, 5k, 2M (exact for 1, 2, 5 x 10^k). */
static void tick_label(char *buf, size_t len, double v)
{
	if (v >= 1e6)
		snprintf(buf, len, "%gM", v / 1e6);
	else if (v >= 1e3)
		snprintf(buf, len, "%gk", v / 1e3);
	else
		snprintf(buf, len, "%g", v);
}

static void draw_axis(FILE *f, const struct axis *a, char which, const char *label, bool grid)
{
	bool x = which == 'x';
	fprintf(f, "<line class=\"axis\" data-axis=\"%c\" data-scale=\"%s\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
	           "stroke=\"black\"/>\n", which, a->log ? "log" : "linear", ML, H - MB, x ? W - MR : ML, x ? H - MB : MT);
	for (int i = 0; i < a->n; i++) {
		char text[32];
		tick_label(text, sizeof(text), a->tick[i]);
		if (x) {
			double p = px(a, a->tick[i]);
			if (grid)
				fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eee\"/>\n", p, MT, p, H - MB);
			fprintf(f, "<text class=\"tick\" data-axis=\"x\" data-value=\"%.12g\" x=\"%.1f\" y=\"%d\" "
			           "text-anchor=\"middle\">%s</text>\n", a->tick[i], p, H - MB + 16, text);
		} else {
			double p = py(a, a->tick[i]);
			fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", ML, p, W - MR, p);
			fprintf(f, "<text class=\"tick\" data-axis=\"y\" data-value=\"%.12g\" x=\"%d\" y=\"%.1f\" "
			           "text-anchor=\"end\">%s</text>\n", a->tick[i], ML - 6, p + 4, text);
		}
	}
	char full[160];
	snprintf(full, sizeof(full), "%s%s", label, a->log ? " (log scale)" : "");
	if (x)
		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", ML + PW / 2, H - 18);
	else
		fprintf(f, "<text transform=\"translate(18,%d) rotate(-90)\" text-anchor=\"middle\">", MT + PH / 2);
	xml(f, full);
	fputs("</text>\n", f);
}

/* ------------------------------------------------------------------------------------------ */
/* Files */

/* A chart's file with its title (the chart and its flow count) and a line under it (the source,
 * what it shows, what was left out). data-flows: the flows drawn; data-total: in the database. */
static FILE *svg_open(const char *dir, const char *name, const struct census *c, long shown,
                      const char *title, const char *sub)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "iwscope: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	char count[64];
	of_flows(count, sizeof(count), shown, c->flows);
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	           "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
	           "font-family=\"sans-serif\" font-size=\"12\" data-flows=\"%ld\" data-total=\"%ld\" data-source=\"",
	        W, H, W, H, shown, c->flows);
	xml(f, c->source);
	fprintf(f, "\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
	           "<text class=\"title\" x=\"%d\" y=\"24\" font-size=\"17\" font-weight=\"bold\">", ML);
	xml(f, title);
	fputs(", ", f);
	xml(f, count);
	fprintf(f, "</text>\n<text class=\"subtitle\" x=\"%d\" y=\"43\" fill=\"#444\">", ML);
	xml(f, c->source);
	if (sub && *sub) {
		fputs(" \xe2\x80\x94 ", f); /* an em dash */
		xml(f, sub);
	}
	fputs("</text>\n", f);
	return f;
}

static int svg_close(FILE *f)
{
	fputs("</svg>\n", f);
	return fclose(f) == 0 ? 0 : -1;
}

/* A legend entry: a swatch (or a line sample with dash) and its label. */
static void legend(FILE *f, int i, const char *label, const char *colour, const char *dash)
{
	int y = MT + 10 + i * 20;
	if (dash)
		fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\" "
		           "stroke-dasharray=\"%s\"/>\n", W - MR + 12, y - 4, W - MR + 30, y - 4, colour, dash);
	else
		fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>\n", W - MR + 15, y - 10, colour);
	fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"legend\" data-colour=\"%s\">", W - MR + 36, y, colour);
	xml(f, label);
	fputs("</text>\n", f);
}

static void no_data(FILE *f)
{
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">no data</text>\n", ML + PW / 2, H / 2);
}

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

static int hist_chart(dbread *db, const char *dir, const struct census *c)
{
	static struct hist h;
	memset(&h, 0, sizeof(h));
	if (dbread_query(db, "SELECT s_iw_limit, s_iw_segs, count(*) FROM flows WHERE s_iw_limit IN " LIMITS_SQL
	                     " AND s_iw_segs > 0 GROUP BY s_iw_limit, s_iw_segs ORDER BY s_iw_segs, s_iw_limit",
	                 hist_row, &h) != 0)
		return query_failed(db);
	long exact = 0, lower = 0, max = 0;
	for (int k = 0; k < h.ncat; k++) {
		long lb = 0;
		for (int l = 1; l < NLIMITS; l++)
			lb += h.count[k][l];
		exact += h.count[k][0];
		lower += lb;
		if (h.count[k][0] > max)
			max = h.count[k][0];
		if (lb > max)
			max = lb;
	}
	char sub[256];
	snprintf(sub, sizeof(sub), "%ld exact (cwnd), %ld lower bound%s", exact, lower, plural(lower));
	const char *what[] = { "loss (no verdict)", "without a server first flight", "in IWs past the 64 shown" };
	long n[] = { c->loss, c->no_data, h.dropped };
	left_out(sub, sizeof(sub), what, n, 3);
	FILE *f = svg_open(dir, "iw_histogram.svg", c, exact + lower, "Server initial windows", sub);
	if (!f)
		return -1;
	struct axis y;
	axis_linear(&y, (double)max, true);
	draw_axis(f, &y, 'y', "flows", false);
	fprintf(f, "<line class=\"axis\" data-axis=\"x\" data-scale=\"category\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
	           "stroke=\"black\"/>\n<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">first-flight segments (IW)</text>\n",
	        ML, H - MB, W - MR, H - MB, ML + PW / 2, H - 18);
	if (!h.ncat)
		no_data(f);
	double slot = h.ncat ? (double)PW / h.ncat : 0, bw = slot * 0.4;
	bool used[NLIMITS] = { false };
	for (int k = 0; k < h.ncat; k++) {
		char cat[32];
		snprintf(cat, sizeof(cat), "IW%ld", h.segs[k]);
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", ML + slot * (k + 0.5), H - MB + 16, cat);
		double base = 0;
		for (int l = 0; l < NLIMITS; l++) {
			long v = h.count[k][l];
			if (v <= 0)
				continue;
			used[l] = true;
			double x = ML + slot * k + slot * 0.1 + (l ? bw : 0), top = py(&y, base + (double)v);
			fprintf(f, "<rect class=\"bar\" data-series=\"%s\" data-label=\"%s\" data-value=\"%ld\" data-limit=\"%s\" "
			           "x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>%s %s: %ld</title></rect>\n",
			        l ? "lower bound" : "exact (cwnd)", cat, v, limits[l], x, top, bw, py(&y, base) - top,
			        colour_of(limits[l]), l ? ">=" : "", cat, v);
			if (l)
				base += (double)v;
		}
	}
	int i = 0;
	for (int l = 0; l < NLIMITS; l++)
		if (used[l]) {
			char lab[64];
			snprintf(lab, sizeof(lab), l ? "lower bound: %s" : "exact (%s)", limits[l]);
			legend(f, i++, lab, colour_of(limits[l]), NULL);
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
	for (i = 0; i < c->n; i++)
		if (!strcmp(c->s[i].label, label))
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
	const char *sql = "SELECT coalesce(f.app_proto, 'Unknown'), f.s_iw_bytes, 0 FROM flows f JOIN "
	                  "(SELECT coalesce(app_proto, 'Unknown') AS app, count(*) AS n FROM flows "
	                  "WHERE s_iw_limit IN " LIMITS_SQL " AND s_iw_segs > 0 GROUP BY 1) a "
	                  "ON a.app = coalesce(f.app_proto, 'Unknown') "
	                  "WHERE f.s_iw_limit IN " LIMITS_SQL " AND f.s_iw_segs > 0 ORDER BY a.n DESC, a.app";
	if (dbread_query(db, sql, collect_row, &k) != 0)
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
	char sub[256] = "";
	const char *what[] = { "loss (no verdict)", "without a server first flight", "in other applications" };
	long n[] = { c->loss, c->no_data, k.dropped };
	left_out(sub, sizeof(sub), what, n, 3);
	FILE *f = svg_open(dir, "ff_bytes_cdf.svg", c, shown, "Server first-flight bytes by application (CDF)", sub);
	if (!f)
		return -1;
	struct axis x, y;
	axis_auto(&x, lo, hi, true);
	axis_linear(&y, 1.0, false);
	draw_axis(f, &x, 'x', "first-flight bytes", true);
	draw_axis(f, &y, 'y', "fraction of flows", false);
	if (!k.n)
		no_data(f);
	for (int i = 0; i < k.n; i++) {
		const char *grey = app_grey[(i / 4) % 2], *dash = app_dash[i % 4];
		fprintf(f, "<polyline class=\"cdf\" data-series=\"");
		xml(f, s[i].label);
		fprintf(f, "\" data-flows=\"%ld\" fill=\"none\" stroke-width=\"2\" stroke=\"%s\" stroke-dasharray=\"%s\" points=\"",
		        s[i].total, grey, dash);
		double cx = ML, cy = H - MB;
		fprintf(f, "%.1f,%.1f", cx, cy);
		for (int j = 0; j < s[i].n; j++) {
			cx = px(&x, s[i].x[j]);
			fprintf(f, " %.1f,%.1f", cx, cy);
			cy = py(&y, (double)(j + 1) / s[i].n);
			fprintf(f, " %.1f,%.1f", cx, cy);
		}
		fputs("\"/>\n", f);
		char lab[96];
		snprintf(lab, sizeof(lab), "%.60s (%ld)", s[i].label, s[i].total);
		legend(f, i, lab, grey, dash);
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
	if (dbread_query(db, "SELECT side, rwnd_class, flows FROM rwnd_classes ORDER BY "
	                     "CASE rwnd_class WHEN '6KB' THEN 1 WHEN '8192' THEN 2 WHEN '10MSS' THEN 3 "
	                     "WHEN '16384' THEN 4 WHEN '20MSS' THEN 5 WHEN '64KB' THEN 6 ELSE 7 END, side",
	                 bar_row, &b) != 0)
		return query_failed(db);
	double max = 0;
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < b.s[i].n; k++)
			if (b.s[i].y[k] > max)
				max = b.s[i].y[k];
	char sub[256];
	snprintf(sub, sizeof(sub), "%ld client SYN%s, %ld server SYN%s (SYN-ACK) seen", b.s[0].total,
	         plural(b.s[0].total), b.s[1].total, plural(b.s[1].total));
	FILE *f = svg_open(dir, "syn_window.svg", c, c->flows, "SYN window classes", sub);
	if (!f)
		return -1;
	struct axis y;
	axis_linear(&y, max, true);
	draw_axis(f, &y, 'y', "flows", false);
	fprintf(f, "<line class=\"axis\" data-axis=\"x\" data-scale=\"category\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
	           "stroke=\"black\"/>\n<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">receiver class (SYN window)</text>\n",
	        ML, H - MB, W - MR, H - MB, ML + PW / 2, H - 18);
	if (!b.ncat)
		no_data(f);
	double slot = b.ncat ? (double)PW / b.ncat : 0, bw = slot * 0.4;
	for (int k = 0; k < b.ncat; k++) {
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">", ML + slot * (k + 0.5), H - MB + 16);
		xml(f, b.cats[k]);
		fputs("</text>\n", f);
		for (int i = 0; i < 2; i++)
			for (int j = 0; j < b.s[i].n; j++) {
				if ((int)b.s[i].x[j] != k || b.s[i].y[j] <= 0)
					continue;
				double top = py(&y, b.s[i].y[j]);
				fprintf(f, "<rect class=\"bar\" data-series=\"%s\" data-label=\"", b.s[i].label);
				xml(f, b.cats[k]);
				fprintf(f, "\" data-value=\"%.0f\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>%s ",
				        b.s[i].y[j], ML + slot * k + slot * 0.1 + bw * i, top, bw, H - MB - top,
				        colour_of(b.s[i].label), b.s[i].label);
				xml(f, b.cats[k]);
				fprintf(f, ": %.0f</title></rect>\n", b.s[i].y[j]);
			}
	}
	for (int i = 0; i < 2; i++)
		legend(f, i, b.s[i].label, colour_of(b.s[i].label), NULL);
	return svg_close(f);
}

/* ------------------------------------------------------------------------------------------ */
/* Handshake RTT against first-flight bytes, one point per flow with a verdict, coloured by it. */

static int scatter_chart(dbread *db, const char *dir, const struct census *c)
{
	static struct series s[NLIMITS];
	struct collect k = { s, 0, NLIMITS, 0 };
	long no_rtt = 0;
	if (dbread_query(db, "SELECT s_iw_limit, rtt_us / 1000.0, s_iw_bytes FROM flows WHERE s_iw_limit IN " LIMITS_SQL
	                     " AND s_iw_segs > 0 AND rtt_us > 0 ORDER BY CASE s_iw_limit WHEN 'cwnd' THEN 1 "
	                     "WHEN 'app' THEN 2 WHEN 'rwnd' THEN 3 WHEN 'nagle' THEN 4 ELSE 5 END, rtt_us, s_iw_bytes",
	                 collect_row, &k) != 0)
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
	char sub[256] = "";
	const char *what[] = { "loss (no verdict)", "without a server first flight", "without a handshake RTT" };
	long n[] = { c->loss, c->no_data, no_rtt };
	left_out(sub, sizeof(sub), what, n, 3);
	if (shown > kept) {
		size_t l = strlen(sub);
		snprintf(sub + l, sizeof(sub) - l, "%s%ld points drawn", l ? "; " : "", kept);
	}
	FILE *f = svg_open(dir, "rtt_vs_ff.svg", c, shown, "Handshake RTT vs server first-flight size", sub);
	if (!f)
		return -1;
	struct axis x, y;
	axis_auto(&x, xlo, xhi, false);
	axis_auto(&y, ylo, yhi, true);
	draw_axis(f, &x, 'x', "handshake RTT at the capture point (ms)", true);
	draw_axis(f, &y, 'y', "first-flight bytes", false);
	if (!k.n)
		no_data(f);
	for (int i = 0; i < k.n; i++) {
		const char *col = colour_of(s[i].label);
		for (int j = 0; j < s[i].n; j++)
			fprintf(f, "<circle class=\"point\" data-series=\"%s\" data-rtt-ms=\"%.3f\" data-bytes=\"%.0f\" "
			           "cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\" fill-opacity=\"0.7\"/>\n",
			        s[i].label, s[i].x[j], s[i].y[j], px(&x, s[i].x[j]), py(&y, s[i].y[j]), col);
		char lab[96];
		snprintf(lab, sizeof(lab), "%s (%ld)", s[i].label, s[i].total);
		legend(f, i, lab, col, NULL);
	}
	return svg_close(f);
}

static void usage(FILE *out)
{
	fprintf(out, "usage: iwscope plot DB|postgresql://... -o DIR%s\n",
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
	if (!dir || optind != argc - 1) {
		usage(stderr);
		return EXIT_USAGE;
	}
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
	printf("%s/iw_histogram.svg\n%s/ff_bytes_cdf.svg\n%s/syn_window.svg\n%s/rtt_vs_ff.svg\n", dir, dir, dir, dir);
	return 0;
}
