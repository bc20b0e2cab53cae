/* `iwscope report DB`: the questions users ask first, as tables (or csv / json). */
#include "report.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dbread.h"

enum fmt { FMT_TABLE, FMT_CSV, FMT_JSON };

#define MAX_COLS 16
#define MAX_ROWS 512

/* A result held in memory so column widths can be measured before printing. */
struct table {
	int ncols, nrows, truncated;
	char *names[MAX_COLS];
	char *cells[MAX_ROWS][MAX_COLS];
};

static int collect(void *arg, int ncols, const char *const *names, const char *const *vals)
{
	struct table *t = arg;
	if (ncols > MAX_COLS)
		ncols = MAX_COLS;
	if (!t->ncols) {
		t->ncols = ncols;
		for (int i = 0; i < ncols; i++)
			t->names[i] = strdup(names[i]);
	}
	if (t->nrows >= MAX_ROWS) {
		t->truncated = 1;
		return 1;
	}
	for (int i = 0; i < ncols; i++)
		t->cells[t->nrows][i] = vals[i] ? strdup(vals[i]) : NULL;
	t->nrows++;
	return 0;
}

static void table_free(struct table *t)
{
	for (int i = 0; i < t->ncols; i++)
		free(t->names[i]);
	for (int r = 0; r < t->nrows; r++)
		for (int i = 0; i < t->ncols; i++)
			free(t->cells[r][i]);
}

static int is_number(const char *s)
{
	if (!s || !*s)
		return 0;
	char *end;
	strtod(s, &end);
	return *end == '\0';
}

static void print_json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

static void print_csv_field(const char *s)
{
	if (!s)
		return;
	if (strpbrk(s, ",\"\n")) {
		putchar('"');
		for (; *s; s++) {
			if (*s == '"')
				putchar('"');
			putchar(*s);
		}
		putchar('"');
	} else {
		fputs(s, stdout);
	}
}

static void print_table(const char *title, const struct table *t, enum fmt f, int *first_json)
{
	if (f == FMT_JSON) {
		printf("%s\n  ", *first_json ? "" : ",");
		*first_json = 0;
		print_json_string(title);
		printf(": [");
		for (int r = 0; r < t->nrows; r++) {
			printf("%s\n    {", r ? "," : "");
			for (int i = 0; i < t->ncols; i++) {
				printf("%s", i ? ", " : "");
				print_json_string(t->names[i]);
				printf(": ");
				const char *v = t->cells[r][i];
				if (!v)
					printf("null");
				else if (is_number(v))
					printf("%s", v);
				else
					print_json_string(v);
			}
			printf("}");
		}
		printf("%s]", t->nrows ? "\n  " : "");
		return;
	}
	if (f == FMT_CSV) {
		printf("# %s\n", title);
		for (int i = 0; i < t->ncols; i++) {
			if (i)
				putchar(',');
			print_csv_field(t->names[i]);
		}
		putchar('\n');
		for (int r = 0; r < t->nrows; r++) {
			for (int i = 0; i < t->ncols; i++) {
				if (i)
					putchar(',');
				print_csv_field(t->cells[r][i]);
			}
			putchar('\n');
		}
		putchar('\n');
		return;
	}
	int w[MAX_COLS];
	for (int i = 0; i < t->ncols; i++) {
		w[i] = (int)strlen(t->names[i]);
		for (int r = 0; r < t->nrows; r++) {
			int l = t->cells[r][i] ? (int)strlen(t->cells[r][i]) : 1;
			if (l > w[i])
				w[i] = l;
		}
		if (w[i] > 30)
			w[i] = 30;
	}
	/* tables fit 80 columns: narrow the widest column until they do; long cells keep their
	 * tail (an address's end, a name's domain) */
	for (;;) {
		int total = 0, widest = 0;
		for (int i = 0; i < t->ncols; i++) {
			total += w[i] + 2;
			if (w[i] > w[widest])
				widest = i;
		}
		if (total <= 80 || w[widest] <= 8)
			break;
		w[widest]--;
	}
	printf("%s\n", title);
	if (!t->nrows) {
		printf("  (none)\n\n");
		return;
	}
	for (int i = 0; i < t->ncols; i++)
		printf("  %-*s", i == t->ncols - 1 ? 0 : w[i], t->names[i]);
	putchar('\n');
	for (int r = 0; r < t->nrows; r++) {
		for (int i = 0; i < t->ncols; i++) {
			const char *v = t->cells[r][i] ? t->cells[r][i] : "-";
			size_t l = strlen(v);
			if (l > (size_t)w[i]) {
				printf("  ...%s", v + l - (size_t)(w[i] - 3));
				continue;
			}
			if (is_number(v))
				printf("  %*.*s", w[i], w[i], v);
			else
				printf("  %-*.*s", i == t->ncols - 1 ? 0 : w[i], w[i], v);
		}
		putchar('\n');
	}
	if (t->truncated)
		printf("  ... (first %d rows)\n", MAX_ROWS);
	putchar('\n');
}

struct section {
	const char *title;
	const char *sql;
};

static const struct section summary_sections[] = {
	{ "Runs",
	  "SELECT probe, id AS run, status, source, packets, tcp_packets AS tcp, "
	  "decode_errors AS errors, flows, evicted FROM runs ORDER BY probe, id" },
	{ "Handshakes",
	  "SELECT handshake, count(*) AS flows, "
	  "round(100.0 * count(*) / (SELECT count(*) FROM flows), 1) AS pct "
	  "FROM flows GROUP BY handshake ORDER BY flows DESC" },
	{ "Receiver classes (SYN window)",
	  "SELECT side, rwnd_class, flows FROM rwnd_classes ORDER BY side, flows DESC" },
	{ "Server initial windows (first flight of each server)",
	  "SELECT iw_class, iw_limit AS why, coalesce(iw_std, '') AS standard, flows "
	  "FROM iw_classes ORDER BY iw_limit <> 'cwnd', "
	  "CAST(ltrim(iw_class, '>=IW') AS INTEGER), iw_class" },
	{ "Client first flights",
	  "SELECT c_iw_class AS iw_class, c_iw_limit AS why, count(*) AS flows FROM flows "
	  "WHERE c_iw_class IS NOT NULL GROUP BY c_iw_class, c_iw_limit "
	  "ORDER BY c_iw_limit <> 'cwnd', CAST(ltrim(c_iw_class, '>=IW') AS INTEGER)" },
	{ "Why first flights stopped",
	  "SELECT 'server' AS sender, s_iw_limit AS why, count(*) AS flows FROM flows "
	  "WHERE s_iw_limit IS NOT NULL GROUP BY s_iw_limit UNION ALL "
	  "SELECT 'client', c_iw_limit, count(*) FROM flows WHERE c_iw_limit IS NOT NULL "
	  "GROUP BY c_iw_limit ORDER BY 1 DESC, 3 DESC" },
	{ "Evidence behind the server verdicts",
	  "SELECT s_iw_limit AS why, s_iw_end AS end_by, coalesce(s_iw_next, '') AS next, "
	  "count(*) AS flows, CAST(sum(s_iw_pause_us) AS BIGINT) / nullif(count(s_iw_pause_us), 0) / 1000 "
	  "AS pause_ms FROM flows "
	  "WHERE s_iw_limit IS NOT NULL AND s_iw_limit <> 'none' GROUP BY 1, 2, 3 "
	  "ORDER BY s_iw_limit <> 'cwnd', 4 DESC" },
	{ "Servers whose flows disagree",
	  "SELECT server_ip, server_port, exact_flows, iw_min, iw_max, lower_bound "
	  "FROM server_iw WHERE disagree = 1 ORDER BY flows DESC, server_ip, server_port LIMIT 20" },
	{ "Frames not analysed",
	  "SELECT reason, sum(packets) AS packets FROM run_decode GROUP BY reason "
	  "ORDER BY packets DESC" },
};

static const struct section server_sections[] = {
	{ "Servers: initial window verdicts",
	  "SELECT server_ip, server_port AS port, flows, exact_flows AS exact, iw, "
	  "lower_bound AS lb, iw_std AS standard, disagree AS split, "
	  "coalesce(app_proto, '') AS app, coalesce(server_name, '') AS name "
	  "FROM server_iw ORDER BY flows DESC, server_ip LIMIT 100" },
};

static const struct section app_sections[] = {
	{ "Server initial windows by application",
	  "SELECT app_proto AS app, iw_class, iw_limit AS why, flows, servers FROM iw_by_app "
	  "ORDER BY 1, iw_limit <> 'cwnd', flows DESC, 2" },
	{ "Server initial windows by server name",
	  "SELECT server_name, iw_class, iw_limit AS why, flows FROM iw_by_name "
	  "ORDER BY flows DESC, 1 LIMIT 50" },
	{ "Receiver classes by application",
	  "SELECT app_proto AS app, rwnd_class, flows FROM rwnd_by_app ORDER BY 1, flows DESC" },
};

static const struct section rwnd_sections[] = {
	{ "Receiver classes by SYN window",
	  "SELECT 'client' AS side, c_rwnd_class AS class, c_syn_win AS syn_win, c_mss AS mss, "
	  "count(*) AS flows FROM flows WHERE c_rwnd_class IS NOT NULL GROUP BY 2, 3, 4 "
	  "UNION ALL SELECT 'server', s_rwnd_class, s_syn_win, s_mss, count(*) FROM flows "
	  "WHERE s_rwnd_class IS NOT NULL GROUP BY 2, 3, 4 ORDER BY 1, 5 DESC" },
};

static const struct section standard_sections[] = {
	{ "Exact server IWs by standard",
	  "SELECT coalesce(s_iw_std, '') AS standard, s_iw_class AS iw_class, count(*) AS flows, "
	  "count(DISTINCT server_ip) AS servers FROM flows WHERE s_iw_limit = 'cwnd' "
	  "GROUP BY 1, 2 ORDER BY 3 DESC" },
};

static void usage(FILE *out)
{
	fprintf(out, "usage: iwscope report DB|postgresql://... [--format table|csv|json]\n"
	             "                      [--by server|app|rwnd|standard]\n");
}

int report_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "by", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	enum fmt f = FMT_TABLE;
	const struct section *secs = summary_sections;
	size_t nsecs = sizeof(summary_sections) / sizeof(summary_sections[0]);
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "f:b:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (!strcmp(optarg, "table"))
				f = FMT_TABLE;
			else if (!strcmp(optarg, "csv"))
				f = FMT_CSV;
			else if (!strcmp(optarg, "json"))
				f = FMT_JSON;
			else {
				fprintf(stderr, "iwscope report: unknown format \"%s\"\n", optarg);
				return 1;
			}
			break;
		case 'b':
#define BY(name, arr)                                               \
	if (!strcmp(optarg, name)) {                                    \
		secs = arr;                                                 \
		nsecs = sizeof(arr) / sizeof(arr[0]);                       \
		break;                                                      \
	}
			BY("server", server_sections)
			BY("app", app_sections)
			BY("rwnd", rwnd_sections)
			BY("standard", standard_sections)
#undef BY
			fprintf(stderr, "iwscope report: unknown grouping \"%s\"\n", optarg);
			return 1;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 1;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 1;
	}
	char err[1100];
	dbread *s = dbread_open(argv[optind], err, sizeof(err));
	if (!s) {
		fprintf(stderr, "iwscope: %s\n", err);
		return 2;
	}
	int rc = 0, first_json = 1;
	if (f == FMT_JSON)
		printf("{");
	for (size_t i = 0; i < nsecs; i++) {
		struct table *t = calloc(1, sizeof(*t));
		if (!t || dbread_query(s, secs[i].sql, collect, t) != 0) {
			fprintf(stderr, "iwscope: %s\n", t ? dbread_error(s) : "out of memory");
			if (t)
				table_free(t);
			free(t);
			rc = 2;
			break;
		}
		print_table(secs[i].title, t, f, &first_json);
		table_free(t);
		free(t);
	}
	if (f == FMT_JSON)
		printf("\n}\n");
	dbread_close(s);
	return rc;
}
