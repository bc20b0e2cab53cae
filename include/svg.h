/* svg: the SVG writer behind `iwscope plot`: a chart's file with its title, axes with 1, 2, 5 x
 * 10^k ticks (linear from 0 or logarithmic), category labels that never overlap, legends, one
 * colour per meaning, XML-safe text that fits the chart (widths estimated from the font's
 * metrics: the SVG is written without a renderer to measure it). */
#ifndef IWSCOPE_SVG_H
#define IWSCOPE_SVG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* A chart's size and margins, in pixels; the plot area is SVG_PW x SVG_PH. The top margin holds
 * the title and up to SVG_SUBLINES lines under it; the bottom one category labels at 45 degrees
 * and the axis label. */
#define SVG_W 800
#define SVG_H 520
#define SVG_ML 70
#define SVG_MR 170
#define SVG_MT 88
#define SVG_MB 78
#define SVG_PW (SVG_W - SVG_ML - SVG_MR)
#define SVG_PH (SVG_H - SVG_MT - SVG_MB)
#define SVG_TX 16            /* the title's and the subtitle's left edge */
#define SVG_SUBLINES 3
#define SVG_FONT 12          /* the text's size; the title's is 17 */
#define SVG_MAXTICKS 32

/* The colour of a meaning ("cwnd", "app", "rwnd", "nagle", "ambiguous", "loss", "client",
 * "server"), the same in every chart; a grey for anything else. */
const char *svg_colour(const char *meaning);

/* s as XML text: markup escaped, control characters left out, bytes that are not UTF-8 (a name
 * from the wire, a path) as U+FFFD, so that the SVG stays well-formed. */
void svg_text(FILE *f, const char *s);

/* The width of s in pixels at font size px, on the safe side: Helvetica's metrics (Arial's and
 * Liberation Sans', the fonts asked for) plus 10% for a wider fallback (DejaVu Sans); anything
 * past ASCII one em. */
double svg_text_width(const char *s, double px);
/* s cut to at most width pixels at font size px, ending in an ellipsis when cut (never inside
 * a UTF-8 character), into out (len bytes). */
void svg_fit(char *out, size_t len, const char *s, double px, double width);

struct svg_axis {
	bool log;
	double lo, hi;           /* the axis' ends, as values */
	double tick[SVG_MAXTICKS];
	int n;
	double y0, y1;           /* a y axis' pixels at lo and at hi (svg_axis_span; else the plot area) */
	const char *panel;       /* a y axis of one panel of several: data-panel on its line and ticks */
};

/* Linear from 0 to the first tick at or above max, at most 6 steps of 1, 2 or 5 x 10^k
 * (whole steps for counts); steps: at most that many instead of 6. */
void svg_axis_linear(struct svg_axis *a, double max, bool counts);
void svg_axis_linear_steps(struct svg_axis *a, double max, bool counts, int steps);
/* Logarithmic when every value is above 0 and they span more than 50x; linear from 0 else. */
void svg_axis_auto(struct svg_axis *a, double lo, double hi, bool counts);
/* A y axis drawn from pixel bottom (its lo) up to pixel top (its hi): one panel of a chart. */
void svg_axis_span(struct svg_axis *a, double bottom, double top, const char *panel);
/* Where v falls in the plot area, as an x or a y pixel. */
double svg_px(const struct svg_axis *a, double v);
double svg_py(const struct svg_axis *a, double v);
/* Draws the axis ('x' or 'y'), its ticks (with grid lines across the plot for y, and for x if
 * grid) and its label. */
void svg_axis_draw(FILE *f, const struct svg_axis *a, char which, const char *label, bool grid);
/* An x axis of n categories, one slot of SVG_PW / n each: the line, its label, and the
 * categories' names (class "cat") under their slots: level when the widest fits its slot, else
 * at 45 degrees, and where even those would touch only every k-th (each slot keeps a tick). */
void svg_axis_category(FILE *f, const char *label, const char *const *cats, int n);

/* dir/name into out (len bytes), with one slash between them however dir ends. */
void svg_path(char *out, size_t len, const char *dir, const char *name);
/* Opens dir/name and writes the head: the title with "N flows" or "N of M flows" (shown of
 * total), and under it the source, then " - " sub when given, wrapped at spaces to the chart's
 * width in up to SVG_SUBLINES lines (the last cut with an ellipsis if need be). data-flows,
 * data-total and data-source (source_data) on the root. NULL after one line on stderr. */
FILE *svg_open(const char *dir, const char *name, const char *source_data, const char *source,
               long shown, long total, const char *title, const char *sub);
/* Ends the document and closes f: 0, or -1 when it could not be written. */
int svg_close(FILE *f);

#define SVG_LEGEND_W (SVG_MR - 42) /* the room a legend label has */

/* Legend row i: a swatch (or, with dash, a line sample) and its label, cut to the legend's
 * width (the whole label then in a tooltip). */
void svg_legend(FILE *f, int i, const char *label, const char *colour, const char *dash);
/* Legend row i: a heading for the rows under it (class "legend-heading"). */
void svg_legend_heading(FILE *f, int i, const char *label);
/* "no data" (or what) across the plot area, or at the middle of the pixel rows y0..y1. */
void svg_no_data(FILE *f);
void svg_note_at(FILE *f, double y, const char *what);

/* "" for 1, "s" for any other count. */
const char *svg_plural(long n);

#endif
