/* svg: the SVG writer behind `iwscope plot`: a chart's file with its title, axes with 1, 2, 5 x
 * 10^k ticks (linear from 0 or logarithmic), legends, one colour per meaning, XML-safe text. */
#ifndef IWSCOPE_SVG_H
#define IWSCOPE_SVG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* A chart's size and margins, in pixels; the plot area is SVG_PW x SVG_PH. */
#define SVG_W 800
#define SVG_H 480
#define SVG_ML 70
#define SVG_MR 170
#define SVG_MT 62
#define SVG_MB 60
#define SVG_PW (SVG_W - SVG_ML - SVG_MR)
#define SVG_PH (SVG_H - SVG_MT - SVG_MB)
#define SVG_MAXTICKS 32

/* The colour of a meaning ("cwnd", "app", "rwnd", "nagle", "ambiguous", "loss", "client",
 * "server"), the same in every chart; a grey for anything else. */
const char *svg_colour(const char *meaning);

/* s as XML text: markup escaped, control characters left out, bytes that are not UTF-8 (a name
 * from the wire, a path) as U+FFFD, so that the SVG stays well-formed. */
void svg_text(FILE *f, const char *s);

struct svg_axis {
	bool log;
	double lo, hi;           /* the axis' ends, as values */
	double tick[SVG_MAXTICKS];
	int n;
};

/* Linear from 0 to the first tick at or above max, at most 6 steps of 1, 2 or 5 x 10^k
 * (whole steps for counts). */
void svg_axis_linear(struct svg_axis *a, double max, bool counts);
/* Logarithmic when every value is above 0 and they span more than 50x; linear from 0 else. */
void svg_axis_auto(struct svg_axis *a, double lo, double hi, bool counts);
/* Where v falls in the plot area, as an x or a y pixel. */
double svg_px(const struct svg_axis *a, double v);
double svg_py(const struct svg_axis *a, double v);
/* Draws the axis ('x' or 'y'), its ticks (with grid lines across the plot for y, and for x if
 * grid) and its label. */
void svg_axis_draw(FILE *f, const struct svg_axis *a, char which, const char *label, bool grid);
/* An x axis of categories: the line and its label (the categories are the chart's). */
void svg_axis_category(FILE *f, const char *label);

/* Opens dir/name and writes the head: the title with "N flows" or "N of M flows" (shown of
 * total), a line under it (source, then " - " sub when given); data-flows, data-total and
 * data-source on the root. NULL after one line on stderr. */
FILE *svg_open(const char *dir, const char *name, const char *source, long shown, long total,
               const char *title, const char *sub);
/* Ends the document and closes f: 0, or -1 when it could not be written. */
int svg_close(FILE *f);

/* Legend entry i: a swatch (or, with dash, a line sample) and its label. */
void svg_legend(FILE *f, int i, const char *label, const char *colour, const char *dash);
/* "no data" across the plot area. */
void svg_no_data(FILE *f);

/* "" for 1, "s" for any other count. */
const char *svg_plural(long n);

#endif
