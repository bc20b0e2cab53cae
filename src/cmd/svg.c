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

/* Helvetica's advance widths (per 1000 em) for ' ' to '~'; Arial and Liberation Sans share them. */
static const unsigned short helvetica[95] = {
	278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, /*  !"#$%&'()*+,-./ */
	556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556, /* 0-9 :;<=>? */
	1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778, /* @A-O */
	667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556, /* P-Z [\]^_ */
	333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556, /* `a-o */
	556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584,      /* p-z {|}~ */
};

double svg_text_width(const char *s, double px)
{
	double em = 0;
	while (s && *s) {
		unsigned char ch = (unsigned char)*s;
		if (ch >= 0x20 && ch < 0x7f) {
			em += helvetica[ch - 0x20];
			s++;
			continue;
		}
		unsigned cp;
		size_t n = json_utf8_char(s, &cp);
		em += 1000; /* an em dash, an ellipsis, a wide character: one em */
		s += n ? n : 1;
	}
	return em / 1000 * px * 1.1;
}

void svg_fit(char *out, size_t len, const char *s, double px, double width)
{
	snprintf(out, len, "%s", s ? s : "");
	if (svg_text_width(out, px) <= width)
		return;
	static const char ell[] = "\xe2\x80\xa6"; /* ... as one character */
	size_t cut = strlen(out);
	while (cut > 0) {
		cut--;
		while (cut > 0 && ((unsigned char)out[cut] & 0xc0) == 0x80)
			cut--; /* never inside a character */
		while (cut > 0 && out[cut - 1] == ' ')
			cut--;
		if (cut + sizeof(ell) > len)
			continue;
		memcpy(out + cut, ell, sizeof(ell));
		if (svg_text_width(out, px) <= width)
			return;
	}
	snprintf(out, len, "%s", ell);
}

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

/* Linear from 0 to the first tick at or above max, at most maxsteps steps of 1, 2 or 5 x 10^k
 * (whole steps for counts). */
void svg_axis_linear_steps(struct svg_axis *a, double max, bool counts, int maxsteps)
{
	memset(a, 0, sizeof(*a));
	if (!(max > 0))
		max = 1;
	static const int m[] = { 1, 2, 5 };
	int e = (int)floor(log10(max)) - 1, k = 0;
	if (maxsteps < 1)
		maxsteps = 1;
	while (max / m10(m[k], e) > maxsteps + 1e-9 || (counts && m10(m[k], e) < 1)) {
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

void svg_axis_linear(struct svg_axis *a, double max, bool counts)
{
	svg_axis_linear_steps(a, max, counts, 6);
}

void svg_axis_span(struct svg_axis *a, double bottom, double top, const char *panel)
{
	a->y0 = bottom;
	a->y1 = top;
	a->panel = panel;
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
double svg_py(const struct svg_axis *a, double v)
{
	double y0 = a->y0 > 0 ? a->y0 : SVG_H - SVG_MB, y1 = a->y0 > 0 ? a->y1 : SVG_MT;
	return y0 - axis_at(a, v) * (y0 - y1);
}

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

/* An x axis' label under level tick or category labels (rotated ones take the margin). */
#define LABEL_Y_LEVEL (SVG_H - SVG_MB + 38)

/* data-panel="name" for an axis of one panel of several, else nothing. */
static void panel_attr(FILE *f, const struct svg_axis *a)
{
	if (a->panel)
		fprintf(f, " data-panel=\"%s\"", a->panel);
}

void svg_axis_draw(FILE *f, const struct svg_axis *a, char which, const char *label, bool grid)
{
	bool x = which == 'x';
	double bottom = svg_py(a, a->lo), top = svg_py(a, a->hi);
	fprintf(f, "<line class=\"axis\" data-axis=\"%c\" data-scale=\"%s\"", which, a->log ? "log" : "linear");
	panel_attr(f, a);
	if (x)
		fprintf(f, " x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", SVG_ML, SVG_H - SVG_MB,
		        SVG_W - SVG_MR, SVG_H - SVG_MB);
	else
		fprintf(f, " x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"black\"/>\n", SVG_ML, bottom, SVG_ML, top);
	for (int i = 0; i < a->n; i++) {
		char text[32];
		tick_label(text, sizeof(text), a->tick[i]);
		if (x) {
			double p = svg_px(a, a->tick[i]);
			if (grid)
				fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eee\"/>\n", p, SVG_MT, p, SVG_H - SVG_MB);
			fprintf(f, "<text class=\"tick\" data-axis=\"x\" data-value=\"%.12g\" x=\"%.1f\" y=\"%d\" "
			           "text-anchor=\"middle\">%s</text>\n", a->tick[i], p, SVG_H - SVG_MB + 19, text);
		} else {
			double p = svg_py(a, a->tick[i]);
			fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", SVG_ML, p, SVG_W - SVG_MR, p);
			fprintf(f, "<text class=\"tick\" data-axis=\"y\" data-value=\"%.12g\"", a->tick[i]);
			panel_attr(f, a);
			fprintf(f, " x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", SVG_ML - 6, p + 4, text);
		}
	}
	char full[160];
	snprintf(full, sizeof(full), "%s%s", label, a->log ? " (log scale)" : "");
	char fit[200];
	svg_fit(fit, sizeof(fit), full, SVG_FONT, x ? SVG_PW : bottom - top);
	if (x)
		fprintf(f, "<text class=\"axis-label\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">", SVG_ML + SVG_PW / 2, LABEL_Y_LEVEL);
	else
		fprintf(f, "<text class=\"axis-label\" transform=\"translate(18,%.1f) rotate(-90)\" text-anchor=\"middle\">",
		        (bottom + top) / 2);
	svg_text(f, fit);
	fputs("</text>\n", f);
}

/* Splits text at spaces into lines of at most width pixels, at most maxlines: the last one,
 * or a word wider than a line, cut with an ellipsis. Each line keeps the space it was split at,
 * so that lines that were not cut, put together, are the text. Returns the lines. */
static int wrap(const char *text, double px, double width, char lines[][512], int maxlines)
{
	int n = 0;
	const char *p = text;
	while (*p && n < maxlines) {
		size_t best = 0, len = strlen(p); /* the longest start that fits, ending after a space or at the end */
		for (size_t i = 1; i <= len && i < 512; i++) {
			if (i < len && p[i - 1] != ' ')
				continue;
			char buf[512];
			size_t w = i;
			while (w > 0 && p[w - 1] == ' ')
				w--; /* the space a line ends with takes no room */
			memcpy(buf, p, w);
			buf[w] = '\0';
			if (svg_text_width(buf, px) > width)
				break;
			best = i;
		}
		if (best == len) {
			snprintf(lines[n++], 512, "%.511s", p); /* len < 512 here */
			break;
		}
		if (n == maxlines - 1 || !best) {
			svg_fit(lines[n++], 512, p, px, width);
			const char *space = strchr(p, ' ');
			if (best || !space)
				break;
			p = space + 1; /* a word too long for a line: the text goes on after it */
			continue;
		}
		snprintf(lines[n++], 512, "%.*s", (int)best, p);
		p += best;
	}
	return n;
}

void svg_path(char *out, size_t len, const char *dir, const char *name)
{
	size_t n = strlen(dir);
	snprintf(out, len, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name);
}

/* A chart's file with its title (the chart and its flow count) and lines under it (the source,
 * what it shows, what was left out). data-flows: the flows drawn; data-total: in the database. */
FILE *svg_open(const char *dir, const char *name, const char *source_data, const char *source,
               long shown, long total, const char *title, const char *sub)
{
	char path[4096];
	svg_path(path, sizeof(path), dir, name);
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "iwscope: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	char count[64];
	of_flows(count, sizeof(count), shown, total);
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	           "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
	           "font-family=\"'Liberation Sans', Arial, Helvetica, sans-serif\" font-size=\"%d\" "
	           "data-flows=\"%ld\" data-total=\"%ld\" data-source=\"",
	        SVG_W, SVG_H, SVG_W, SVG_H, SVG_FONT, shown, total);
	svg_text(f, source_data);
	fprintf(f, "\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
	           "<text class=\"title\" x=\"%d\" y=\"24\" font-size=\"17\" font-weight=\"bold\">", SVG_TX);
	char head[512];
	snprintf(head, sizeof(head), "%s, %s", title, count);
	svg_text(f, head);
	fprintf(f, "</text>\n<text class=\"subtitle\" fill=\"#444\">");
	char all[2048];
	snprintf(all, sizeof(all), "%s%s%s", source, sub && *sub ? " \xe2\x80\x94 " : "", sub ? sub : "");
	static char lines[SVG_SUBLINES][512];
	int n = wrap(all, SVG_FONT, SVG_W - SVG_TX - 8, lines, SVG_SUBLINES);
	for (int i = 0; i < n; i++) {
		fprintf(f, "<tspan x=\"%d\" y=\"%d\">", SVG_TX, 43 + 15 * i);
		svg_text(f, lines[i]);
		fputs("</tspan>", f);
	}
	fputs("</text>\n", f);
	return f;
}

int svg_close(FILE *f)
{
	fputs("</svg>\n", f);
	return fclose(f) == 0 ? 0 : -1;
}

#define LEGEND_X (SVG_W - SVG_MR + 36)  /* a legend label's left edge */

/* A legend entry: a swatch (or a line sample with dash) and its label. */
void svg_legend(FILE *f, int i, const char *label, const char *colour, const char *dash)
{
	int y = SVG_MT + 10 + i * 20;
	if (dash)
		fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\" "
		           "stroke-dasharray=\"%s\"/>\n", SVG_W - SVG_MR + 12, y - 4, SVG_W - SVG_MR + 30, y - 4, colour, dash);
	else
		fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>\n", SVG_W - SVG_MR + 15, y - 10, colour);
	char fit[256];
	svg_fit(fit, sizeof(fit), label, SVG_FONT, SVG_LEGEND_W);
	fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"legend\" data-colour=\"%s\">", LEGEND_X, y, colour);
	svg_text(f, fit);
	if (strcmp(fit, label)) {
		fputs("<title>", f);
		svg_text(f, label);
		fputs("</title>", f);
	}
	fputs("</text>\n", f);
}

void svg_legend_heading(FILE *f, int i, const char *label)
{
	char fit[256];
	svg_fit(fit, sizeof(fit), label, SVG_FONT, SVG_W - (SVG_W - SVG_MR + 12) - 6);
	fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"legend-heading\" fill=\"#444\">", SVG_W - SVG_MR + 12,
	        SVG_MT + 10 + i * 20);
	svg_text(f, fit);
	fputs("</text>\n", f);
}

void svg_note_at(FILE *f, double y, const char *what)
{
	fprintf(f, "<text class=\"note\" x=\"%d\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#757575\">", SVG_ML + SVG_PW / 2, y);
	svg_text(f, what);
	fputs("</text>\n", f);
}

void svg_no_data(FILE *f)
{
	svg_note_at(f, SVG_MT + SVG_PH / 2.0, "no data");
}

#define CAT_W 60        /* a category name's widest, in pixels (cut beyond) */
#define CAT_LINE 20.0   /* slots closer than this make labels at 45 degrees touch (14 px apart) */

void svg_axis_category(FILE *f, const char *label, const char *const *cats, int n)
{
	double slot = n > 0 ? (double)SVG_PW / n : SVG_PW, widest = 0;
	for (int k = 0; k < n; k++) {
		double w = svg_text_width(cats[k], SVG_FONT);
		if (w > widest)
			widest = w;
	}
	bool level = (widest < CAT_W ? widest : CAT_W) <= slot - 4;
	fprintf(f, "<line class=\"axis\" data-axis=\"x\" data-scale=\"category\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
	           "stroke=\"black\"/>\n<text class=\"axis-label\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">",
	        SVG_ML, SVG_H - SVG_MB, SVG_W - SVG_MR, SVG_H - SVG_MB, SVG_ML + SVG_PW / 2, level ? LABEL_Y_LEVEL : SVG_H - 10);
	svg_text(f, label);
	fputs("</text>\n", f);
	int every = level || slot >= CAT_LINE ? 1 : (int)ceil(CAT_LINE / slot);
	for (int k = 0; k < n; k++) {
		double x = SVG_ML + slot * (k + 0.5);
		if (every > 1) /* a tick for each slot: the thinned labels still say which is which */
			fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"black\"/>\n", x, SVG_H - SVG_MB,
			        x, SVG_H - SVG_MB + (k % every ? 3 : 5));
		if (k % every)
			continue;
		char fit[128];
		svg_fit(fit, sizeof(fit), cats[k], SVG_FONT, CAT_W);
		if (level)
			fprintf(f, "<text class=\"cat\" data-label=\"");
		else
			fprintf(f, "<text class=\"cat\" transform=\"translate(%.1f,%d) rotate(-45)\" data-label=\"", x + 4, SVG_H - SVG_MB + 16);
		svg_text(f, cats[k]);
		if (level)
			fprintf(f, "\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">", x, SVG_H - SVG_MB + 19);
		else
			fputs("\" text-anchor=\"end\">", f);
		svg_text(f, fit);
		fputs("</text>\n", f);
	}
}
