/* The SVG writer behind `iwscope plot` (plot.c draws the charts): a chart's file and title,
 * axes whose ticks are 1, 2 or 5 x 10^k (linear from 0, or logarithmic), legends, the colours
 * of the meanings and XML-safe text. Every tick carries data-* attributes, so tests read the
 * values back from the DOM. */
#include "svg.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "json.h"

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

const char *svg_colour(const char *meaning)
{
	for (size_t i = 0; i < sizeof(colours) / sizeof(colours[0]); i++)
		if (!strcmp(colours[i].key, meaning))
			return colours[i].colour;
	return "#757575";
}

/* Text safe for XML: markup escaped, control characters left out, bytes that are not UTF-8
 * (a name from the wire, a path) as U+FFFD, so that the SVG stays well-formed. */
void svg_text(FILE *f, const char *s)
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

const char *svg_plural(long n) { return n == 1 ? "" : "s"; }

/* "N flows" or "N of M flows": the title's count. */
static void of_flows(char *buf, size_t len, long shown, long all)
{
	if (shown == all)
		snprintf(buf, len, "%ld flow%s", all, svg_plural(all));
	else
		snprintf(buf, len, "%ld of %ld flow%s", shown, all, svg_plural(all));
}

/* m x 10^e as a double, made from exact parts (0.1 * 3 is not 0.3). */
static double m10(double m, int e)
{
	return e >= 0 ? m * pow(10, e) : m / pow(10, -e);
}

/* Linear from 0 to the first tick at or above max, at most 6 steps of 1, 2 or 5 x 10^k
 * (whole steps for counts). */
void svg_axis_linear(struct svg_axis *a, double max, bool counts)
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
	for (int i = 0; i <= steps && i < SVG_MAXTICKS; i++)
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
static void axis_log(struct svg_axis *a, double lo, double hi)
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
			if ((decades && i) || v < a->lo * (1 - 1e-9) || v > a->hi * (1 + 1e-9) || a->n == SVG_MAXTICKS)
				continue;
			a->tick[a->n++] = v;
		}
}

/* Logarithmic when every value is above 0 and they span more than 50x; linear from 0 else. */
void svg_axis_auto(struct svg_axis *a, double lo, double hi, bool counts)
{
	if (lo > 0 && hi / lo > 50)
		axis_log(a, lo, hi);
	else
		svg_axis_linear(a, hi, counts);
}

/* Where v falls on the axis, 0 to 1. */
static double axis_at(const struct svg_axis *a, double v)
{
	if (a->log)
		return v <= 0 ? 0 : (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo));
	return a->hi > a->lo ? (v - a->lo) / (a->hi - a->lo) : 0;
}

double svg_px(const struct svg_axis *a, double v) { return SVG_ML + axis_at(a, v) * SVG_PW; }
double svg_py(const struct svg_axis *a, double v) { return SVG_H - SVG_MB - axis_at(a, v) * SVG_PH; }

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

void svg_axis_draw(FILE *f, const struct svg_axis *a, char which, const char *label, bool grid)
{
	bool x = which == 'x';
	fprintf(f, "<line class=\"axis\" data-axis=\"%c\" data-scale=\"%s\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
	           "stroke=\"black\"/>\n", which, a->log ? "log" : "linear", SVG_ML, SVG_H - SVG_MB,
	        x ? SVG_W - SVG_MR : SVG_ML, x ? SVG_H - SVG_MB : SVG_MT);
	for (int i = 0; i < a->n; i++) {
		char text[32];
		tick_label(text, sizeof(text), a->tick[i]);
		if (x) {
			double p = svg_px(a, a->tick[i]);
			if (grid)
				fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eee\"/>\n", p, SVG_MT, p, SVG_H - SVG_MB);
			fprintf(f, "<text class=\"tick\" data-axis=\"x\" data-value=\"%.12g\" x=\"%.1f\" y=\"%d\" "
			           "text-anchor=\"middle\">%s</text>\n", a->tick[i], p, SVG_H - SVG_MB + 16, text);
		} else {
			double p = svg_py(a, a->tick[i]);
			fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", SVG_ML, p, SVG_W - SVG_MR, p);
			fprintf(f, "<text class=\"tick\" data-axis=\"y\" data-value=\"%.12g\" x=\"%d\" y=\"%.1f\" "
			           "text-anchor=\"end\">%s</text>\n", a->tick[i], SVG_ML - 6, p + 4, text);
		}
	}
	char full[160];
	snprintf(full, sizeof(full), "%s%s", label, a->log ? " (log scale)" : "");
	if (x)
		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", SVG_ML + SVG_PW / 2, SVG_H - 18);
	else
		fprintf(f, "<text transform=\"translate(18,%d) rotate(-90)\" text-anchor=\"middle\">", SVG_MT + SVG_PH / 2);
	svg_text(f, full);
	fputs("</text>\n", f);
}

/* A chart's file with its title (the chart and its flow count) and a line under it (the source,
 * what it shows, what was left out). data-flows: the flows drawn; data-total: in the database. */
FILE *svg_open(const char *dir, const char *name, const char *source, long shown, long total,
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
	of_flows(count, sizeof(count), shown, total);
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	           "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
	           "font-family=\"sans-serif\" font-size=\"12\" data-flows=\"%ld\" data-total=\"%ld\" data-source=\"",
	        SVG_W, SVG_H, SVG_W, SVG_H, shown, total);
	svg_text(f, source);
	fprintf(f, "\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
	           "<text class=\"title\" x=\"%d\" y=\"24\" font-size=\"17\" font-weight=\"bold\">", SVG_ML);
	svg_text(f, title);
	fputs(", ", f);
	svg_text(f, count);
	fprintf(f, "</text>\n<text class=\"subtitle\" x=\"%d\" y=\"43\" fill=\"#444\">", SVG_ML);
	svg_text(f, source);
	if (sub && *sub) {
		fputs(" \xe2\x80\x94 ", f); /* an em dash */
		svg_text(f, sub);
	}
	fputs("</text>\n", f);
	return f;
}

int svg_close(FILE *f)
{
	fputs("</svg>\n", f);
	return fclose(f) == 0 ? 0 : -1;
}

/* A legend entry: a swatch (or a line sample with dash) and its label. */
void svg_legend(FILE *f, int i, const char *label, const char *colour, const char *dash)
{
	int y = SVG_MT + 10 + i * 20;
	if (dash)
		fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\" "
		           "stroke-dasharray=\"%s\"/>\n", SVG_W - SVG_MR + 12, y - 4, SVG_W - SVG_MR + 30, y - 4, colour, dash);
	else
		fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>\n", SVG_W - SVG_MR + 15, y - 10, colour);
	fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"legend\" data-colour=\"%s\">", SVG_W - SVG_MR + 36, y, colour);
	svg_text(f, label);
	fputs("</text>\n", f);
}

void svg_no_data(FILE *f)
{
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">no data</text>\n", SVG_ML + SVG_PW / 2, SVG_H / 2);
}

void svg_axis_category(FILE *f, const char *label)
{
	fprintf(f, "<line class=\"axis\" data-axis=\"x\" data-scale=\"category\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
	           "stroke=\"black\"/>\n<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">",
	        SVG_ML, SVG_H - SVG_MB, SVG_W - SVG_MR, SVG_H - SVG_MB, SVG_ML + SVG_PW / 2, SVG_H - 18);
	svg_text(f, label);
	fputs("</text>\n", f);
}
