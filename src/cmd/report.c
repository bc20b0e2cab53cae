/* `iwscope report DB`: the questions users ask first, as tables for people, or CSV / JSON for
 * scripts. Tables show whole values into a pipe or file; on a terminal only long names are cut
 * (in the middle, marked), never an address or a number. CSV and JSON hold every row, each
 * value typed by the database (a text column stays text, however it reads). */
#include "report.h"

#include <errno.h>
#include <getopt.h>
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <wchar.h>

#include "dbread.h"
#include "exitcode.h"
#include "json.h"
#include "pg.h"
#include "record.h"
#include "reportsql.h"

enum fmt { FMT_TABLE, FMT_CSV, FMT_JSON };

#define MAX_COLS 16
#define MIN_CUT 16       /* a cut column keeps at least this many terminal columns */

/* Tables left out when they have no rows (CSV and JSON keep them, empty): what happens only
 * under pressure. */
static bool hide_empty(const struct report_section *sec)
{
	return !strcmp(sec->key, "evicted");
}

/* Short headings for the tables' long column names (people read tables; scripts get the
 * names). */
static const struct {
	const char *name, *title;
} column_titles[] = {
	{ "run_id", "run" },          { "tcp_packets", "tcp" },      { "decode_errors", "errors" },
	{ "iw_limit", "why" },        { "c_iw_limit", "why" },       { "s_iw_limit", "why" },
	{ "c_iw_class", "iw_class" }, { "iw_std", "standard" },      { "s_iw_end", "end_by" },
	{ "s_iw_next", "next" },      { "server_port", "port" },     { "exact_flows", "exact" },
	{ "lower_bound", "lb" },      { "iw_min", "min" },           { "iw_max", "max" },
	{ "app_proto", "app" },
	{ "server_name", "name" },    { "one_direction", "one_dir" }, { "syn_opts_cut", "syn_cut" },
	{ "acked_unseen", "unseen_bytes" }, { "quic_version", "version" }, { "transport", "proto" },
	{ "quic_c_preval", "c_bytes" }, { "quic_s_preval", "s_bytes" }, { "amp_limited", "amp" },
};

static const char *column_title(const char *name)
{
	for (size_t i = 0; i < sizeof(column_titles) / sizeof(column_titles[0]); i++)
		if (!strcmp(column_titles[i].name, name))
			return column_titles[i].title;
	return name;
}

/* ---- tables ---------------------------------------------------------------------------------- */

/* How a terminal shows text: whether it takes UTF-8 (then cuts are marked with one "…"). */
struct term {
	int cols; /* terminal width; 0 = not a terminal, nothing is cut */
	bool utf8;
};

struct cell {
	char *text; /* as shown: control characters and bytes that are not UTF-8 as \xHH */
	int width;  /* terminal columns */
	enum db_type type;
};

struct table {
	int ncols;
	char *names[MAX_COLS];
	int app_col, weak_col;   /* app_proto and app_weak (shown as "MQTT?", not a column); -1: none */
	bool weak_shown;         /* a row's app carries the mark: the legend follows the table */
	struct cell *cells; /* nrows * ncols */
	size_t nrows, cap;
	size_t limit;         /* rows kept; 0 = all */
	unsigned long long more; /* rows left out */
	bool utf8;
	bool nomem;
};

/* The terminal columns one character takes (1 where the locale cannot tell). */
static int char_width(unsigned cp, bool utf8)
{
	if (!utf8 || cp < 0x80)
		return 1;
	int w = wcwidth((wchar_t)cp);
	return w < 0 ? 1 : w;
}

/* v as a terminal may show it: nothing in it moves the cursor or starts an escape sequence.
 * Malloc'd (NULL when out of memory); *width its terminal columns. */
static char *shown(const char *v, bool utf8, int *width)
{
	size_t len = strlen(v);
	char *out = malloc(len * 6 + 1), *o = out; /* \u009b: six bytes for two */
	if (!out)
		return NULL;
	int w = 0;
	while (*v) {
		unsigned cp;
		size_t n = json_utf8_char(v, &cp);
		if (n == 0 || cp < 0x20 || cp == 0x7f) {
			o += sprintf(o, "\\x%02x", (unsigned char)*v);
			w += 4;
			v++;
		} else if (cp >= 0x80 && cp < 0xa0) { /* C1 controls: U+009B is a CSI */
			o += sprintf(o, "\\u%04x", cp);
			w += 6;
			v += n;
		} else {
			memcpy(o, v, n);
			o += n;
			v += n;
			w += char_width(cp, utf8);
		}
	}
	*o = '\0';
	*width = w;
	return out;
}

static int table_row(void *arg, int ncols, const char *const *names, const char *const *vals,
                     const enum db_type *types)
{
	struct table *t = arg;
	if (ncols > MAX_COLS)
		ncols = MAX_COLS;
	if (!vals) {
		t->ncols = ncols;
		t->app_col = t->weak_col = -1;
		for (int i = 0; i < ncols; i++) {
			if (!(t->names[i] = strdup(names[i])))
				return t->nomem = true, 1;
			if (!strcmp(names[i], "app_proto"))
				t->app_col = i;
			else if (!strcmp(names[i], "app_weak"))
				t->weak_col = i;
		}
		if (t->app_col < 0)
			t->weak_col = -1; /* nothing to mark: a column like any other */
		return 0;
	}
	if (t->limit && t->nrows >= t->limit) {
		t->more++;
		return 0;
	}
	if (t->nrows == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct cell *c = realloc(t->cells, cap * (size_t)ncols * sizeof(*c));
		if (!c)
			return t->nomem = true, 1;
		t->cells = c;
		t->cap = cap;
	}
	struct cell *row = t->cells + t->nrows * (size_t)ncols;
	bool weak = t->weak_col >= 0 && vals[t->weak_col] && atoi(vals[t->weak_col]) == 1 &&
	            vals[t->app_col];
	for (int i = 0; i < ncols; i++) {
		row[i].type = vals[i] ? types[i] : DB_NULL;
		char marked[APP_PROTO_MAX + sizeof(RECORD_WEAK_MARK)];
		const char *v = vals[i] ? vals[i] : "-";
		if (weak && i == t->app_col) {
			snprintf(marked, sizeof(marked), "%s%s", v, RECORD_WEAK_MARK);
			v = marked;
			t->weak_shown = true;
		}
		row[i].text = shown(v, t->utf8, &row[i].width);
		if (!row[i].text) {
			while (i--)
				free(row[i].text);
			return t->nomem = true, 1;
		}
	}
	t->nrows++;
	return 0;
}

static void table_free(struct table *t)
{
	for (int i = 0; i < t->ncols; i++)
		free(t->names[i]);
	for (size_t r = 0; r < t->nrows; r++)
		for (int i = 0; i < t->ncols; i++)
			free(t->cells[r * (size_t)t->ncols + i].text);
	free(t->cells);
}

static bool is_number(enum db_type type) { return type == DB_INT || type == DB_REAL; }

/* Whether a column may be cut to fit a terminal: text, and no address. */
static bool cuttable(const struct table *t, int col)
{
	const char *n = t->names[col];
	size_t len = strlen(n);
	if ((len >= 3 && !strcmp(n + len - 3, "_ip")) || !strcmp(n, "ip"))
		return false;
	for (size_t r = 0; r < t->nrows; r++)
		if (is_number(t->cells[r * (size_t)t->ncols + col].type))
			return false;
	return true;
}

static void spaces(int n)
{
	while (n-- > 0)
		putchar(' ');
}

/* Prints c in w columns (padded unless last): whole when it fits, else its start, a marker
 * and its end (a name's domain, a path's file), the end getting two thirds. */
static void print_cut(const struct cell *c, int w, bool utf8, bool last)
{
	if (c->width <= w) {
		fputs(c->text, stdout);
		if (!last)
			spaces(w - c->width);
		return;
	}
	const char *mark = utf8 ? "\u2026" : "...";
	int mw = utf8 ? 1 : 3;
	int head = (w - mw) / 3, tail = w - mw - head, used = 0;
	const char *p = c->text, *tail_at = NULL;
	/* the head: whole characters up to head columns */
	while (*p) {
		unsigned cp;
		size_t n = json_utf8_char(p, &cp); /* shown text is valid UTF-8 */
		int cw = char_width(cp, utf8);
		if (!n || used + cw > head)
			break;
		fwrite(p, 1, n, stdout);
		used += cw;
		p += n;
	}
	fputs(mark, stdout);
	used += mw;
	/* the tail: the shortest suffix after the head that fits tail columns */
	int left = c->width - (used - mw);
	while (*p) {
		if (left <= tail) {
			tail_at = p;
			break;
		}
		unsigned cp;
		size_t n = json_utf8_char(p, &cp);
		if (!n)
			break;
		left -= char_width(cp, utf8);
		p += n;
	}
	if (tail_at) {
		fputs(tail_at, stdout);
		used += left;
	}
	if (!last)
		spaces(w - used);
}

static void print_table(const struct report_section *sec, const struct table *t, const struct term *term)
{
	printf("%s\n", sec->title);
	if (!t->nrows) {
		printf("  (none)\n\n");
		return;
	}
	int w[MAX_COLS], minw[MAX_COLS], total = 0, lastcol = t->ncols - 1;
	bool cut[MAX_COLS], numeric[MAX_COLS];
	if (lastcol == t->weak_col)
		lastcol--;
	for (int i = 0; i < t->ncols; i++) {
		w[i] = minw[i] = (int)strlen(column_title(t->names[i]));
		numeric[i] = false;
		for (size_t r = 0; r < t->nrows; r++) {
			const struct cell *c = &t->cells[r * (size_t)t->ncols + i];
			if (c->width > w[i])
				w[i] = c->width;
			numeric[i] = numeric[i] || is_number(c->type);
		}
		cut[i] = cuttable(t, i);
		if (minw[i] < MIN_CUT)
			minw[i] = MIN_CUT;
		if (i == t->weak_col) /* said by the app's mark */
			w[i] = minw[i] = 0, cut[i] = false;
		else
			total += 2 + w[i];
	}
	/* on a terminal: narrow the widest name column until the table fits; addresses and
	 * numbers keep their width. A table that cannot fit so is shown whole (the terminal
	 * wraps its lines either way, and a cut would lose more than it gains). */
	int fitted[MAX_COLS], need = total;
	memcpy(fitted, w, sizeof(w));
	while (term->cols && need > term->cols) {
		int widest = -1;
		for (int i = 0; i < t->ncols; i++)
			if (cut[i] && fitted[i] > minw[i] && (widest < 0 || fitted[i] > fitted[widest]))
				widest = i;
		if (widest < 0)
			break;
		fitted[widest]--;
		need--;
	}
	if (need <= term->cols)
		memcpy(w, fitted, sizeof(w));
	for (int i = 0; i < t->ncols; i++) {
		if (i == t->weak_col)
			continue;
		const char *title = column_title(t->names[i]);
		bool last = i == lastcol;
		int pad = w[i] - (int)strlen(title);
		printf("  ");
		if (numeric[i])
			spaces(pad);
		fputs(title, stdout);
		if (!numeric[i] && !last)
			spaces(pad);
	}
	putchar('\n');
	for (size_t r = 0; r < t->nrows; r++) {
		for (int i = 0; i < t->ncols; i++) {
			if (i == t->weak_col)
				continue;
			const struct cell *c = &t->cells[r * (size_t)t->ncols + i];
			bool last = i == lastcol;
			printf("  ");
			if (numeric[i]) {
				spaces(w[i] - c->width);
				fputs(c->text, stdout);
			} else {
				print_cut(c, w[i], term->utf8, last);
			}
		}
		putchar('\n');
	}
	if (t->more)
		printf("  %s %llu more row%s (--limit 0 for all)\n", term->utf8 ? "\u2026" : "...",
		       t->more, t->more == 1 ? "" : "s");
	if (t->weak_shown)
		printf("  %s\n", RECORD_WEAK_LEGEND);
	putchar('\n');
}

/* ---- CSV (RFC 4180) and JSON (RFC 8259): every row, printed as it comes --------------------- */

struct stream {
	enum fmt fmt;
	unsigned long long rows;
};

/* A field quoted when it holds a comma, a quote, CR or LF (quotes doubled), is empty text
 * (NULL is an empty field, '' is ""), or starts with '#' (the heading of a table). */
static void csv_field(const char *s)
{
	if (!s)
		return;
	if (*s && *s != '#' && !strpbrk(s, ",\"\r\n")) {
		fputs(s, stdout);
		return;
	}
	putchar('"');
	for (; *s; s++) {
		if (*s == '"')
			putchar('"');
		putchar(*s);
	}
	putchar('"');
}

static int stream_row(void *arg, int ncols, const char *const *names, const char *const *vals,
                      const enum db_type *types)
{
	struct stream *st = arg;
	if (st->fmt == FMT_CSV) {
		const char *const *v = vals ? vals : names; /* the header line first */
		for (int i = 0; i < ncols; i++) {
			if (i)
				putchar(',');
			csv_field(v[i]);
		}
		fputs("\r\n", stdout);
		return 0;
	}
	if (!vals)
		return 0;
	printf("%s\n    {", st->rows++ ? "," : "");
	for (int i = 0; i < ncols; i++) {
		if (i)
			fputs(", ", stdout);
		json_string(stdout, names[i]);
		fputs(": ", stdout);
		if (!vals[i] || types[i] == DB_NULL)
			fputs("null", stdout);
		else if (is_number(types[i]))
			fputs(json_number_ok(vals[i]) ? vals[i] : "null", stdout); /* NaN, Infinity */
		else
			json_string(stdout, vals[i]);
	}
	putchar('}');
	return 0;
}

/* ---- the command ----------------------------------------------------------------------------- */

static void usage(FILE *out)
{
	fprintf(out, "usage: iwscope report DB|postgresql://...|clickhouse://... [--format table|csv|json]\n"
	             "                      [--by server|client|app|rwnd|standard|transport] [--limit N]\n"
	             "Tables show at most 100 rows each (server names 50, disagreeing servers 20),\n"
	             "and say how many they left out; --limit N shows N (0 = all). Into a pipe or\n"
	             "a file, tables hold whole values; on a terminal long names are cut to fit.\n"
	             "CSV and JSON always hold every row, whole.\n");
}

static struct term term_of_stdout(void)
{
	struct term t = { 0, false };
	setlocale(LC_CTYPE, "");
	t.utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8");
	if (!isatty(STDOUT_FILENO))
		return t;
	struct winsize ws;
	const char *env = getenv("COLUMNS");
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		t.cols = ws.ws_col;
	else if (env && atoi(env) > 0)
		t.cols = atoi(env);
	else
		t.cols = 80;
	return t;
}

/* arg as given, a database URI's password starred (it may be a second URI) */
static int usage_error(const char *what, const char *arg)
{
	char shown[1024] = "";
	if (arg)
		pg_redact(arg, shown, sizeof(shown));
	fprintf(stderr, "iwscope report: %s%s%s%s; see --help\n", what, arg ? " \"" : "", shown,
	        arg ? "\"" : "");
	return EXIT_USAGE;
}

int report_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "by", required_argument, NULL, 'b' },
		{ "limit", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	enum fmt f = FMT_TABLE;
	size_t nsecs;
	const struct report_section *secs = reportsql_sections(NULL, &nsecs);
	long limit = -1; /* -1: each table's own */
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":f:b:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (!strcmp(optarg, "table"))
				f = FMT_TABLE;
			else if (!strcmp(optarg, "csv"))
				f = FMT_CSV;
			else if (!strcmp(optarg, "json"))
				f = FMT_JSON;
			else
				return usage_error("unknown format", optarg);
			break;
		case 'b':
			if (!(secs = reportsql_sections(optarg, &nsecs)))
				return usage_error("unknown grouping", optarg);
			break;
		case 'n': {
			char *end;
			errno = 0;
			limit = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || limit < 0 || limit > INT_MAX)
				return usage_error("--limit wants a number of rows (0 = all), not", optarg);
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		case ':':
			return usage_error("missing value for", argv[optind - 1]);
		default:
			return usage_error("unknown option", argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return usage_error(optind < argc ? "one database only, not also" : "no database given",
		                   optind < argc ? argv[optind + 1] : NULL);
	char err[1100];
	dbread *s = dbread_open(argv[optind], err, sizeof(err));
	if (!s) {
		fprintf(stderr, "iwscope: report: %s\n", err);
		return EXIT_RUNTIME;
	}
	struct term term = term_of_stdout();
	int rc = 0;
	if (f == FMT_JSON)
		printf("{");
	for (size_t i = 0; i < nsecs && rc == 0; i++) {
		if (f == FMT_TABLE) {
			struct table t = { .limit = limit >= 0 ? (size_t)limit : (size_t)secs[i].rows,
			                   .utf8 = term.utf8 };
			if (dbread_query(s, &secs[i].sql, table_row, &t) != 0 || t.nomem) {
				fprintf(stderr, "iwscope: %s\n", t.nomem ? "out of memory" : dbread_error(s));
				rc = EXIT_RUNTIME;
			} else if (t.nrows || !hide_empty(&secs[i])) {
				print_table(&secs[i], &t, &term);
			}
			table_free(&t);
			continue;
		}
		struct stream st = { f, 0 };
		if (f == FMT_JSON) {
			printf("%s\n  ", i ? "," : "");
			json_string(stdout, secs[i].key);
			printf(": [");
		} else if (nsecs > 1) {
			printf("%s# %s\r\n", i ? "\r\n" : "", secs[i].key);
		}
		if (dbread_query(s, &secs[i].sql, stream_row, &st) != 0) {
			fflush(stdout);
			fprintf(stderr, "iwscope: %s\n", dbread_error(s));
			rc = EXIT_RUNTIME;
		}
		if (f == FMT_JSON)
			printf("%s]", st.rows ? "\n  " : "");
	}
	if (f == FMT_JSON)
		printf("\n}\n");
	dbread_close(s);
	if ((fflush(stdout) != 0 || ferror(stdout)) && rc == 0) {
		fprintf(stderr, "iwscope: standard output: %s\n", strerror(errno ? errno : EIO));
		rc = EXIT_RUNTIME;
	}
	return rc;
}
