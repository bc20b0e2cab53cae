/* `iwscope plot DB -o DIR`: four SVG charts — the server IW histogram (exact and lower bounds),
 * the CDF of server first-flight bytes per application, the SYN-window classes of clients and
 * servers, and handshake RTT against first-flight size. Every bar or point carries data-*
 * attributes so tests (and scripts) can read the values back from the DOM. */
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

#define W 800
#define H 480
#define ML 70  /* margins */
#define MR 170
#define MT 50
#define MB 60
#define MAXP 20000 /* points kept per chart */

static const char *const palette[] = { "#2e7d32", "#ef6c00", "#1565c0", "#6a1b9a", "#c62828",
	                               "#00838f", "#9e9d24", "#4e342e" };
#define NPAL (sizeof(palette) / sizeof(palette[0]))

struct series {
	char label[64];
	double x[MAXP], y[MAXP];
	int n;
};

/* Text safe for XML. */
static void xml(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default:
			if ((unsigned char)*s >= 0x20)
				fputc(*s, f);
		}
	}
}

static FILE *svg_open(const char *dir, const char *name, const char *title)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "iwscope: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	           "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
	           "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
	           "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
	           "<text x=\"%d\" y=\"28\" font-size=\"17\" font-weight=\"bold\">",
	        W, H, W, H, ML);
	xml(f, title);
	fputs("</text>\n", f);
	return f;
}

static int svg_close(FILE *f)
{
	fputs("</svg>\n", f);
	return fclose(f) == 0 ? 0 : -1;
}

static void axes(FILE *f, const char *xlabel, const char *ylabel)
{
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", ML, H - MB, W - MR, H - MB);
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", ML, MT, ML, H - MB);
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", (ML + W - MR) / 2, H - 18);
	xml(f, xlabel);
	fprintf(f, "</text>\n<text transform=\"translate(18,%d) rotate(-90)\" text-anchor=\"middle\">", (MT + H - MB) / 2);
	xml(f, ylabel);
	fputs("</text>\n", f);
}

/* A "nice" axis maximum and tick step for values up to max. */
static double nice_max(double max, double *step)
{
	if (max <= 0)
		max = 1;
	/* the smallest step of 1, 2 or 5 x 10^k that covers max in at most 6 ticks */
	for (double mag = pow(10, floor(log10(max)) - 1);; mag *= 10) {
		static const double m[] = { 1, 2, 5 };
		for (int i = 0; i < 3; i++)
			if (max / (m[i] * mag) <= 6) {
				*step = m[i] * mag;
				return ceil(max / *step) * *step;
			}
	}
}

static void y_ticks(FILE *f, double ymax, double step, int decimals)
{
	for (double v = 0; v <= ymax + step / 2; v += step) {
		double y = H - MB - v / ymax * (H - MB - MT);
		fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", ML, y, W - MR, y);
		fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", ML - 6, y + 4);
		fprintf(f, "%.*f</text>\n", decimals, v);
	}
}

static void legend(FILE *f, int i, const char *label, const char *color)
{
	int y = MT + 10 + i * 20;
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>\n", W - MR + 15, y - 10, color);
	fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"legend\">", W - MR + 33, y);
	xml(f, label);
	fputs("</text>\n", f);
}

/* Collects rows as (label, x, y) into at most nmax series by label. */
struct collect {
	struct series *s;
	int n, nmax;
};

static int collect_row(void *arg, int ncols, const char *const *names, const char *const *v,
                       const enum store_type *types)
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
		if (c->n == c->nmax)
			return 0;
		snprintf(c->s[c->n].label, sizeof(c->s[c->n].label), "%s", label);
		c->s[c->n++].n = 0;
	}
	struct series *s = &c->s[i];
	if (s->n < MAXP) {
		s->x[s->n] = atof(v[1]);
		s->y[s->n] = atof(v[2]);
		s->n++;
	}
	return 0;
}

/* Grouped bars: series = groups (e.g. exact / lower bound), x = category index. */
static int bars(const char *dir, const char *file, const char *title, const char *xlabel,
                struct series *s, int ns, char cats[][32], int ncat)
{
	FILE *f = svg_open(dir, file, title);
	if (!f)
		return -1;
	double max = 0;
	for (int i = 0; i < ns; i++)
		for (int k = 0; k < s[i].n; k++)
			if (s[i].y[k] > max)
				max = s[i].y[k];
	double step, ymax = nice_max(max, &step);
	axes(f, xlabel, "flows");
	y_ticks(f, ymax, step, 0);
	if (!ncat)
		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">no data</text>\n", (ML + W - MR) / 2, H / 2);
	double slot = ncat ? (double)(W - ML - MR) / ncat : 0, bw = slot * 0.8 / (ns ? ns : 1);
	for (int c = 0; c < ncat; c++) {
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">", ML + slot * (c + 0.5), H - MB + 16);
		xml(f, cats[c]);
		fputs("</text>\n", f);
		for (int i = 0; i < ns; i++)
			for (int k = 0; k < s[i].n; k++) {
				if ((int)s[i].x[k] != c || s[i].y[k] <= 0)
					continue;
				double h = s[i].y[k] / ymax * (H - MB - MT);
				fprintf(f, "<rect class=\"bar\" data-series=\"");
				xml(f, s[i].label);
				fprintf(f, "\" data-label=\"");
				xml(f, cats[c]);
				fprintf(f, "\" data-value=\"%.0f\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>",
				        s[i].y[k], ML + slot * c + slot * 0.1 + bw * i, H - MB - h, bw, h, palette[i % NPAL]);
				xml(f, s[i].label);
				fprintf(f, " %s: %.0f</title></rect>\n", cats[c], s[i].y[k]);
			}
	}
	for (int i = 0; i < ns; i++)
		legend(f, i, s[i].label, palette[i % NPAL]);
	return svg_close(f);
}

/* Rows (series label, category label, count) into grouped-bar series and categories. */
struct barcollect {
	struct series *s;
	int ns, nsmax;
	char (*cats)[32];
	int ncat, ncatmax;
};

static int bar_row(void *arg, int ncols, const char *const *names, const char *const *v,
                   const enum store_type *types)
{
	(void)names, (void)types;
	if (!v)
		return 0; /* the column names */
	struct barcollect *b = arg;
	if (ncols < 3 || !v[0] || !v[1] || !v[2])
		return 0;
	int c, i;
	for (c = 0; c < b->ncat && strcmp(b->cats[c], v[1]); c++)
		;
	if (c == b->ncat) {
		if (b->ncat == b->ncatmax)
			return 0;
		snprintf(b->cats[b->ncat++], 32, "%s", v[1]);
	}
	for (i = 0; i < b->ns && strcmp(b->s[i].label, v[0]); i++)
		;
	if (i == b->ns) {
		if (b->ns == b->nsmax)
			return 0;
		snprintf(b->s[b->ns].label, sizeof(b->s[b->ns].label), "%s", v[0]);
		b->s[b->ns++].n = 0;
	}
	if (b->s[i].n < MAXP) {
		b->s[i].x[b->s[i].n] = c;
		b->s[i].y[b->s[i].n++] = atof(v[2]);
	}
	return 0;
}

static int cmp_label(const void *a, const void *b)
{
	return strcmp(((const struct series *)a)->label, ((const struct series *)b)->label);
}

static int bar_chart(dbread *db, const char *dir, const char *file, const char *title,
                     const char *xlabel, const char *sql)
{
	static struct series s[4];
	static char cats[64][32];
	struct barcollect b = { s, 0, 4, cats, 0, 64 };
	if (dbread_query(db, sql, bar_row, &b) != 0) {
		fprintf(stderr, "iwscope: %s\n", dbread_error(db));
		return -1;
	}
	qsort(s, (size_t)b.ns, sizeof(s[0]), cmp_label); /* a stable legend: by label */
	return bars(dir, file, title, xlabel, s, b.ns, cats, b.ncat);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* CDF of first-flight bytes per application (log-scaled x when the range is wide). */
static int cdf_chart(dbread *db, const char *dir)
{
	static struct series s[8];
	struct collect c = { s, 0, 8 };
	const char *sql = "SELECT coalesce(app_proto, 'Unknown'), s_iw_bytes, 0 FROM flows "
	                  "WHERE s_iw_bytes > 0 AND app_proto IN (SELECT coalesce(app_proto, 'Unknown') "
	                  "FROM flows WHERE s_iw_bytes > 0 GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 8) "
	                  "OR (app_proto IS NULL AND s_iw_bytes > 0)";
	if (dbread_query(db, sql, collect_row, &c) != 0) {
		fprintf(stderr, "iwscope: %s\n", dbread_error(db));
		return -1;
	}
	FILE *f = svg_open(dir, "ff_bytes_cdf.svg", "Server first-flight bytes by application (CDF)");
	if (!f)
		return -1;
	double lo = 1e18, hi = 0;
	for (int i = 0; i < c.n; i++) {
		qsort(s[i].x, (size_t)s[i].n, sizeof(double), cmp_double);
		if (s[i].n && s[i].x[0] < lo)
			lo = s[i].x[0];
		if (s[i].n && s[i].x[s[i].n - 1] > hi)
			hi = s[i].x[s[i].n - 1];
	}
	bool logx = hi > 0 && lo > 0 && hi / lo > 50;
	if (!c.n)
		lo = 0, hi = 1;
	double x0 = logx ? log10(lo) : 0, x1 = logx ? log10(hi) : hi;
	if (x1 <= x0)
		x1 = x0 + 1;
	axes(f, logx ? "first-flight bytes (log scale)" : "first-flight bytes", "fraction of flows");
	y_ticks(f, 1.0, 0.2, 1);
	for (int t = 0; t <= 4; t++) {
		double v = x0 + (x1 - x0) * t / 4;
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.0f</text>\n",
		        ML + (W - ML - MR) * t / 4.0, H - MB + 16, logx ? pow(10, v) : v);
	}
	for (int i = 0; i < c.n; i++) {
		fprintf(f, "<polyline class=\"cdf\" data-series=\"");
		xml(f, s[i].label);
		fprintf(f, "\" data-flows=\"%d\" fill=\"none\" stroke-width=\"2\" stroke=\"%s\" points=\"", s[i].n,
		        palette[i % NPAL]);
		double px = ML, py = H - MB;
		fprintf(f, "%.1f,%.1f", px, py);
		for (int k = 0; k < s[i].n; k++) {
			double xv = logx ? log10(s[i].x[k]) : s[i].x[k];
			px = ML + (xv - x0) / (x1 - x0) * (W - ML - MR);
			fprintf(f, " %.1f,%.1f", px, py);
			py = H - MB - (double)(k + 1) / s[i].n * (H - MB - MT);
			fprintf(f, " %.1f,%.1f", px, py);
		}
		fputs("\"/>\n", f);
		char lab[96];
		snprintf(lab, sizeof(lab), "%.60s (%d)", s[i].label, s[i].n);
		legend(f, i, lab, palette[i % NPAL]);
	}
	return svg_close(f);
}

/* Handshake RTT against first-flight bytes, one point per flow, coloured by why it stopped. */
static int scatter_chart(dbread *db, const char *dir)
{
	static struct series s[5];
	struct collect c = { s, 0, 5 };
	const char *sql = "SELECT s_iw_limit, rtt_us / 1000.0, s_iw_bytes FROM flows "
	                  "WHERE rtt_us IS NOT NULL AND s_iw_bytes > 0 ORDER BY s_iw_limit, rtt_us, s_iw_bytes";
	if (dbread_query(db, sql, collect_row, &c) != 0) {
		fprintf(stderr, "iwscope: %s\n", dbread_error(db));
		return -1;
	}
	FILE *f = svg_open(dir, "rtt_vs_ff.svg", "Handshake RTT vs server first-flight size");
	if (!f)
		return -1;
	double xmax = 0, ymax = 0;
	for (int i = 0; i < c.n; i++)
		for (int k = 0; k < s[i].n; k++) {
			if (s[i].x[k] > xmax)
				xmax = s[i].x[k];
			if (s[i].y[k] > ymax)
				ymax = s[i].y[k];
		}
	double xs, ys;
	xmax = nice_max(xmax, &xs);
	ymax = nice_max(ymax, &ys);
	axes(f, "handshake RTT at the capture point (ms)", "first-flight bytes");
	y_ticks(f, ymax, ys, 0);
	for (double v = 0; v <= xmax + xs / 2; v += xs)
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n",
		        ML + v / xmax * (W - ML - MR), H - MB + 16, v);
	for (int i = 0; i < c.n; i++) {
		for (int k = 0; k < s[i].n; k++)
			fprintf(f, "<circle class=\"point\" data-series=\"%s\" data-rtt-ms=\"%.3f\" data-bytes=\"%.0f\" "
			           "cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\" fill-opacity=\"0.7\"/>\n",
			        s[i].label, s[i].x[k], s[i].y[k], ML + s[i].x[k] / xmax * (W - ML - MR),
			        H - MB - s[i].y[k] / ymax * (H - MB - MT), palette[i % NPAL]);
		legend(f, i, s[i].label, palette[i % NPAL]);
	}
	return svg_close(f);
}

static void usage(FILE *out) { fprintf(out, "usage: iwscope plot DB -o DIR\n"); }

int plot_main(int argc, char **argv)
{
	static const struct option longopts[] = { { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 } };
	const char *dir = NULL;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		if (c == 'o') {
			dir = optarg;
		} else if (c == 'h') {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 1;
		}
	}
	if (!dir || optind != argc - 1) {
		usage(stderr);
		return 1;
	}
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		fprintf(stderr, "iwscope: %s: %s\n", dir, strerror(errno));
		return 2;
	}
	char err[1100];
	dbread *db = dbread_open(argv[optind], err, sizeof(err));
	if (!db) {
		fprintf(stderr, "iwscope: %s\n", err);
		return 2;
	}
	int rc = 0;
	rc |= bar_chart(db, dir, "iw_histogram.svg", "Server initial windows",
	                "first-flight segments (IW)",
	                "SELECT CASE WHEN s_iw_limit = 'cwnd' THEN 'exact (cwnd)' ELSE 'lower bound' END, "
	                "'IW' || s_iw_segs, count(*) FROM flows "
	                "WHERE s_iw_limit IN ('cwnd', 'app', 'rwnd', 'nagle', 'ambiguous') "
	                "GROUP BY 1, 2, s_iw_segs ORDER BY s_iw_segs, 1");
	rc |= cdf_chart(db, dir);
	rc |= bar_chart(db, dir, "syn_window.svg", "SYN window classes", "receiver class (SYN window)",
	                "SELECT side, rwnd_class, flows FROM rwnd_classes ORDER BY "
	                "CASE rwnd_class WHEN '6KB' THEN 1 WHEN '8192' THEN 2 WHEN '10MSS' THEN 3 "
	                "WHEN '16384' THEN 4 WHEN '20MSS' THEN 5 WHEN '64KB' THEN 6 ELSE 7 END, side");
	rc |= scatter_chart(db, dir);
	dbread_close(db);
	if (rc) {
		fprintf(stderr, "iwscope: could not write every chart in %s\n", dir);
		return 2;
	}
	printf("%s/iw_histogram.svg\n%s/ff_bytes_cdf.svg\n%s/syn_window.svg\n%s/rtt_vs_ff.svg\n", dir, dir, dir, dir);
	return 0;
}
