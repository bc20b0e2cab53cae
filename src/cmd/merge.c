/* `iwscope merge A.db B.db -o OUT`: the runs and flows of many probes' files in one database,
 * an SQLite file or PostgreSQL. A row's identity is (probe, run, flow), so merging a file
 * twice, or two files that share runs, adds nothing twice. `iwscope schema` prints the DDL. */
#include "merge.h"

#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ch.h"
#include "dbmerge.h"
#include "exitcode.h"
#include "pg.h"
#include "spool.h"
#include "sqldb.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: iwscope merge [-q] [--append] DB [DB ...] -o DB|postgresql://...|clickhouse://...%s\n",
	        out == stderr ? " (see iwscope --help)" : "");
}

/* Same file? (merging a file into itself would attach it to itself) */
static int same_file(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];
	return realpath(a, ra) && realpath(b, rb) && !strcmp(ra, rb);
}

int merge_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "append", no_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL;
	bool quiet = false, append = false;
	int c;
	optind = 1;
	opterr = 0; /* one line: the usage */
	while ((c = getopt_long(argc, argv, "o:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		case 'A': /* runs of a capture already there (runs.digest) merged all the same */
			append = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (!out || optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	char err[1200], shown[512];
	pg_redact(out, shown, sizeof(shown));
	bool to_ch = ch_is_uri(out), to_pg = pg_is_uri(out) || to_ch;
	sqldb *dst = NULL;
	pgdb *pg = NULL;
	chdb *ch = NULL;
	if (to_ch) {
		enum ch_fail fail;
		ch = ch_open(out, true, &fail, err, sizeof(err));
		ch_shown(out, shown, sizeof(shown));
	} else if (to_pg) {
		enum pg_fail fail;
		pg = pg_open(out, true, &fail, err, sizeof(err));
	} else {
		dst = sqldb_open(out, err, sizeof(err));
	}
	if (!dst && !pg && !ch) {
		fprintf(stderr, "iwscope: %s\n", err);
		return EXIT_RUNTIME;
	}
	int rc = 0;
	unsigned done = 0;
	struct dbmerge_stats ms = { 0 };
	for (int i = optind; i < argc; i++) {
		const char *in = argv[i];
		if (!to_pg && same_file(in, out)) {
			fprintf(stderr, "iwscope: %s: is the output; skipped\n", in);
			rc = EXIT_RUNTIME;
			continue;
		}
		if (!to_pg) {
			if (dbmerge_file(dst, in, append, &ms) != 0) {
				fprintf(stderr, "iwscope: %s\n", sqldb_error(dst));
				rc = EXIT_RUNTIME;
				continue;
			}
			done++;
			continue;
		}
		sqldb *src = sqldb_open_read(in, err, sizeof(err));
		if (!src) {
			fprintf(stderr, "iwscope: %s\n", err);
			rc = EXIT_RUNTIME;
			continue;
		}
		struct spool_stats cs = { 0 };
		int r = ch ? spool_copy(src, false, 0, ch_send_batch, ch, &cs)
		           : spool_copy(src, false, 0, pg_send_batch, pg, &cs);
		if (r != 0) {
			fprintf(stderr, "iwscope: %s: %s\n", in, r != -1 ? sqldb_error(src) : ch ? ch_error(ch)
			        : pg_error(pg));
			rc = EXIT_RUNTIME;
		} else {
			done++;
			ms.runs += cs.runs;
			ms.flows += cs.flows;
		}
		sqldb_close(src);
		if (r == -1) /* the server is gone: the other files would fail the same way */
			break;
	}
	if (!quiet && to_pg)
		fprintf(stderr, "iwscope: merged %u of %d databases into %s: %llu runs, %llu flows "
		        "(rows already there were replaced, not added)\n", done, argc - optind, shown,
		        (unsigned long long)ms.runs, (unsigned long long)ms.flows);
	else if (!quiet)
		fprintf(stderr, "iwscope: merged %u of %d databases into %s: %llu runs (%llu new), "
		        "%llu flows (%llu new)\n", done, argc - optind, shown,
		        (unsigned long long)ms.runs, (unsigned long long)ms.new_runs,
		        (unsigned long long)ms.flows, (unsigned long long)ms.new_flows);
	sqldb_close(dst);
	pg_close(pg);
	ch_close(ch);
	return rc;
}

/* iwscope schema clickhouse [--cluster NAME] [--database DB] */
static int schema_clickhouse(int argc, char **argv)
{
	const char *cluster = NULL, *db = "iwscope";
	for (int i = 2; i < argc; i++) {
		const char **to = !strcmp(argv[i], "--cluster") ? &cluster
		                  : !strcmp(argv[i], "--database") ? &db : NULL;
		if (!to || i + 1 == argc || !argv[i + 1][0] || strpbrk(argv[i + 1], "`'\" \\{}")) {
			fprintf(stderr, "usage: iwscope schema clickhouse [--cluster NAME] [--database DB]\n");
			return EXIT_USAGE;
		}
		*to = argv[++i];
	}
	char *sql = ch_schema_text(db, cluster);
	if (!sql) {
		fprintf(stderr, "iwscope: out of memory\n");
		return EXIT_RUNTIME;
	}
	fputs(sql, stdout);
	free(sql);
	return 0;
}

int schema_main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "sqlite")) {
		fputs(sqldb_schema_text(), stdout);
		return 0;
	}
	if (argc == 2 && (!strcmp(argv[1], "postgresql") || !strcmp(argv[1], "postgres"))) {
		fputs(pg_schema_text(), stdout);
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[1], "clickhouse"))
		return schema_clickhouse(argc, argv);
	fprintf(argc == 2 && !strcmp(argv[1], "-h") ? stdout : stderr,
	        "usage: iwscope schema sqlite|postgresql|clickhouse [--cluster NAME] [--database DB]\n");
	return argc == 2 && !strcmp(argv[1], "-h") ? 0 : EXIT_USAGE;
}
