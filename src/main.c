/* iwscope: command line -> one read-only configuration; picks the source and the sinks. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "capture.h"
#include "config.h"
#include "dpi.h"
#include "engine.h"
#include "lines.h"
#include "report.h"
#include "store.h"

#define EXIT_USAGE 1
#define EXIT_RUNTIME 2
#define MAX_FILES 1024

struct config {
	const char *files[MAX_FILES];
	unsigned nfiles;
	const char *db;
	uint64_t count;
	char *filter;          /* owned */
	bool quiet, verbose, json, no_dpi, force_timing;
	uint32_t flow_cap;
	unsigned dpi_packets;  /* packets nDPI sees per flow at most */
};

/* The only mutable global: set by the signal handler, read by the capture loop. */
static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: iwscope -r FILE [-r FILE ...] [-o DB] [-c COUNT] [-q] [-v] [--json]\n"
	        "               [--timing] [--no-dpi] [--dpi-packets N] [--flow-cap N]\n"
	        "               [-F FILTERFILE | EXPRESSION]\n"
	        "       iwscope report DB [--format table|csv|json] [--by server|app|rwnd|standard]\n"
	        "       iwscope --version | -h\n"
	        "\n"
	        "Reconstructs every TCP handshake in a capture, measures each side's first flight\n"
	        "(initial window) and writes one row per flow to an SQLite database.\n"
	        "\n"
	        "  -r FILE        read a pcap or pcapng file (\"-\" = standard input); several -r\n"
	        "                 are read in order as one continuous capture\n"
	        "  -o DB          SQLite database to write (default iwscope.db); created if absent\n"
	        "  -c COUNT       stop after COUNT packets\n"
	        "  -F FILE        read the BPF filter expression from FILE\n"
	        "  -q             print nothing but errors\n"
	        "  -v             also print one line per finished flow on standard output\n"
	        "  --json         with -v: JSON lines\n"
	        "  --timing       locate first flights by timing even when timestamps allow TSecr\n"
	        "  --no-dpi       do not run nDPI (app_proto and server_name stay NULL)\n"
	        "  --dpi-packets N  packets nDPI inspects per flow before it guesses (default %u)\n"
	        "  --flow-cap N   open flows kept at most (default %u); the stalest are evicted\n"
	        "  -h, --help     this help\n"
	        "  --version      versions of iwscope, libpcap, nDPI and SQLite\n"
	        "\n"
	        "Exit status: 0 success, 1 usage error, 2 runtime failure (unreadable or cut\n"
	        "capture, unsupported link type, database error). Rows analysed before a\n"
	        "failure are kept. See iwscope(1).\n",
	        DPI_MAX_PKTS, FLOW_CAP_DEFAULT);
}

static void version(void)
{
	printf("iwscope %s\n%s\nnDPI %s\nSQLite %s (schema version %d)\n", IWSCOPE_VERSION,
	       capture_pcap_version(), dpi_version(), store_sqlite_version(), store_schema_version());
	printf("memory: %zu bytes per open flow, plus %zu bytes of nDPI state until its protocol "
	       "is decided\n", flow_slot_bytes(), dpi_flow_bytes());
}

/* Joins argv[from..argc) with spaces: the tcpdump-style trailing filter. */
static char *join_args(int argc, char **argv, int from)
{
	size_t len = 1;
	for (int i = from; i < argc; i++)
		len += strlen(argv[i]) + 1;
	char *s = calloc(1, len);
	if (!s)
		return NULL;
	for (int i = from; i < argc; i++) {
		if (i > from)
			strcat(s, " ");
		strcat(s, argv[i]);
	}
	return s;
}

/* The filter file's contents, '#' comments removed as tcpdump -F does not need, newlines as
 * spaces. NULL with errno set on failure. */
static char *read_filter_file(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	int ch;
	while (buf && (ch = fgetc(f)) != EOF) {
		if (n + 2 >= cap) {
			char *nb = cap < (1u << 20) ? realloc(buf, cap * 2) : NULL;
			if (!nb) {
				free(buf);
				buf = NULL;
				errno = EFBIG;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		buf[n++] = ch == '\n' ? ' ' : (char)ch;
	}
	if (buf)
		buf[n] = '\0';
	fclose(f);
	return buf;
}

static int parse_args(int argc, char **argv, struct config *cfg)
{
	enum { OPT_VERSION = 256, OPT_TIMING, OPT_NO_DPI, OPT_FLOW_CAP, OPT_JSON, OPT_DPI_PACKETS };
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ "timing", no_argument, NULL, OPT_TIMING },
		{ "no-dpi", no_argument, NULL, OPT_NO_DPI },
		{ "flow-cap", required_argument, NULL, OPT_FLOW_CAP },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "dpi-packets", required_argument, NULL, OPT_DPI_PACKETS },
		{ NULL, 0, NULL, 0 },
	};
	const char *filter_file = NULL;
	int c;
	cfg->db = "iwscope.db";
	cfg->dpi_packets = DPI_MAX_PKTS;
	while ((c = getopt_long(argc, argv, "+r:o:c:F:qvh", longopts, NULL)) != -1) {
		char *end;
		switch (c) {
		case 'r':
			if (cfg->nfiles >= MAX_FILES) {
				fprintf(stderr, "iwscope: at most %d -r files\n", MAX_FILES);
				return EXIT_USAGE;
			}
			cfg->files[cfg->nfiles++] = optarg;
			break;
		case 'o':
			cfg->db = optarg;
			break;
		case 'c':
			errno = 0;
			cfg->count = strtoull(optarg, &end, 10);
			if (errno || *end || !*optarg || cfg->count == 0 || optarg[0] == '-') {
				fprintf(stderr, "iwscope: invalid packet count \"%s\"\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'F':
			filter_file = optarg;
			break;
		case 'q':
			cfg->quiet = true;
			break;
		case 'v':
			cfg->verbose = true;
			break;
		case OPT_JSON:
			cfg->json = true;
			break;
		case OPT_TIMING:
			cfg->force_timing = true;
			break;
		case OPT_NO_DPI:
			cfg->no_dpi = true;
			break;
		case OPT_FLOW_CAP: {
			errno = 0;
			unsigned long v = strtoul(optarg, &end, 10);
			if (errno || *end || v < 16 || v > (1ul << 28)) {
				fprintf(stderr, "iwscope: --flow-cap wants 16 .. 268435456\n");
				return EXIT_USAGE;
			}
			cfg->flow_cap = (uint32_t)v;
			break;
		}
		case OPT_DPI_PACKETS: {
			errno = 0;
			unsigned long v = strtoul(optarg, &end, 10);
			if (errno || *end || v < 1 || v > 1000) {
				fprintf(stderr, "iwscope: --dpi-packets wants 1 .. 1000\n");
				return EXIT_USAGE;
			}
			cfg->dpi_packets = (unsigned)v;
			break;
		}
		case 'h':
			usage(stdout);
			exit(0);
		case OPT_VERSION:
			version();
			exit(0);
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (!cfg->nfiles) {
		fprintf(stderr, "iwscope: no capture given (-r FILE)\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	if (filter_file && optind < argc) {
		fprintf(stderr, "iwscope: give the filter with -F or on the command line, not both\n");
		return EXIT_USAGE;
	}
	if (filter_file) {
		cfg->filter = read_filter_file(filter_file);
		if (!cfg->filter) {
			fprintf(stderr, "iwscope: %s: %s\n", filter_file, strerror(errno));
			return EXIT_RUNTIME;
		}
	} else if (optind < argc) {
		cfg->filter = join_args(argc, argv, optind);
	}
	if (cfg->filter) {
		char err[512];
		if (capture_check_filter(cfg->filter, err, sizeof(err)) != 0) {
			fprintf(stderr, "iwscope: filter \"%s\": %s\n", cfg->filter, err);
			return EXIT_USAGE;
		}
	}
	return 0;
}

static int64_t now_us(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

struct run_state {
	engine *eng;
	struct sink *sinks;
	unsigned nsinks;
	uint32_t since_tick;
	int sink_failed;
};

static int tick_sinks(struct run_state *rs)
{
	for (unsigned i = 0; i < rs->nsinks; i++)
		if (rs->sinks[i].ops->tick(rs->sinks[i].self) != 0)
			return -1;
	return 0;
}

static int on_packet(void *arg, int dlt, const uint8_t *data, uint32_t caplen, uint32_t wirelen,
                     uint64_t ts_us)
{
	struct run_state *rs = arg;
	if (engine_packet(rs->eng, dlt, data, caplen, wirelen, ts_us) != 0) {
		rs->sink_failed = 1;
		return -1;
	}
	if (++rs->since_tick >= 8192) {
		rs->since_tick = 0;
		if (tick_sinks(rs) != 0) {
			rs->sink_failed = 1;
			return -1;
		}
	}
	return 0;
}

static void source_text(const struct config *cfg, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = '\0';
	for (unsigned i = 0; i < cfg->nfiles && n + 1 < len; i++) {
		int w = snprintf(buf + n, len - n, "%s%s", i ? " " : "", cfg->files[i]);
		if (w < 0)
			break;
		n += (size_t)w;
	}
}

static void print_summary(const struct config *cfg, const struct run_info *run)
{
	fprintf(stderr, "iwscope: %llu packets (%llu TCP), %llu flow%s written to %s",
	        (unsigned long long)run->packets, (unsigned long long)run->tcp_packets,
	        (unsigned long long)run->flows, run->flows == 1 ? "" : "s", cfg->db);
	if (run->evicted)
		fprintf(stderr, ", %llu evicted early (table full)", (unsigned long long)run->evicted);
	fprintf(stderr, "\n");
	if (run->decode_errors) {
		fprintf(stderr, "iwscope: %llu frames could not be decoded:",
		        (unsigned long long)run->decode_errors);
		for (unsigned i = 0; i < run->nreasons; i++)
			if (strncmp(run->reason_names[i], "not_", 4) && strcmp(run->reason_names[i], "ip_fragment"))
				fprintf(stderr, " %s %llu", run->reason_names[i],
				        (unsigned long long)run->reasons[i]);
		fprintf(stderr, "\n");
	}
}

static int analyse(struct config *cfg)
{
	char err[1100];
	int rc = 0;
	store *db = store_open(cfg->db, err, sizeof(err));
	if (!db) {
		fprintf(stderr, "iwscope: %s\n", err);
		return EXIT_RUNTIME;
	}
	dpi_ctx *dpi = NULL;
	if (!cfg->no_dpi && !(dpi = dpi_open(cfg->dpi_packets))) {
		fprintf(stderr, "iwscope: cannot initialise nDPI\n");
		store_close(db);
		return EXIT_RUNTIME;
	}
	struct sink sinks[2];
	unsigned nsinks = 0;
	sinks[nsinks++] = store_sink(db);
	if (cfg->verbose) {
		sinks[nsinks] = lines_sink(stdout, cfg->json);
		if (sinks[nsinks].ops)
			nsinks++;
	}
	struct engine_opts eo = { .flow_cap = cfg->flow_cap, .force_timing = cfg->force_timing };
	engine *eng = engine_new(&eo, sinks, nsinks, dpi);
	if (!eng) {
		fprintf(stderr, "iwscope: out of memory for the flow table\n");
		rc = EXIT_RUNTIME;
		goto out;
	}
	char source[4096];
	source_text(cfg, source, sizeof(source));
	struct run_info run = { 0 };
	run.started_us = now_us();
	run.source = source;
	run.filter = cfg->filter;
	run.options = cfg->force_timing ? "timing" : NULL;
	run.libpcap_version = capture_pcap_version();
	run.ndpi_version = dpi ? dpi_version() : NULL;
	run.pcap_received = run.pcap_dropped = run.dpi_peak_states = NULL64;
	for (unsigned i = 0; i < nsinks; i++)
		if (sinks[i].ops->begin(sinks[i].self, &run) != 0) {
			fprintf(stderr, "iwscope: %s\n", store_error(db));
			rc = EXIT_RUNTIME;
			goto out;
		}

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	struct run_state rs = { .eng = eng, .sinks = sinks, .nsinks = nsinks };
	struct capture_opts co = { .files = cfg->files, .nfiles = cfg->nfiles,
		                   .filter = cfg->filter, .max_packets = cfg->count };
	struct capture_result cr;
	capture_files(&co, on_packet, &rs, &stop_requested, &cr);

	/* Everything analysed so far is written, whatever stopped the capture. */
	if (!rs.sink_failed && engine_flush(eng, END_CAPTURE) != 0)
		rs.sink_failed = 1;
	engine_stats(eng, &run);
	run.dpi_peak_states = NULL64;
	if (dpi) {
		uint64_t live, peak, inspected;
		dpi_stats(dpi, &live, &peak, &inspected);
		run.dpi_peak_states = (int64_t)peak;
	}
	run.finished_us = now_us();
	run.skipped_files = cr.files_failed;
	run.status = rs.sink_failed ? "failed" : stop_requested ? "interrupted" : "complete";
	if (rs.sink_failed) {
		fprintf(stderr, "iwscope: %s\n", store_error(db));
		sinks[0].ops->end(sinks[0].self, &run); /* best effort: record the failure */
		rc = EXIT_RUNTIME;
		goto out;
	}
	for (unsigned i = 0; i < nsinks; i++)
		if (sinks[i].ops->end(sinks[i].self, &run) != 0) {
			fprintf(stderr, "iwscope: %s\n", store_error(db));
			rc = EXIT_RUNTIME;
			goto out;
		}
	/* a summary adds nothing when every file failed before its first packet */
	if (!cfg->quiet && (run.packets || !cr.files_failed))
		print_summary(cfg, &run);
	if (cr.filter_error)
		rc = EXIT_USAGE;
	else if (cr.files_failed)
		rc = EXIT_RUNTIME;
	if (stop_requested && !cfg->quiet)
		fprintf(stderr, "iwscope: interrupted; everything analysed so far is saved\n");
out:
	engine_free(eng);
	for (unsigned i = 1; i < nsinks; i++)
		sinks[i].ops->close(sinks[i].self);
	dpi_close(dpi);
	store_close(db);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "report"))
		return report_main(argc - 1, argv + 1);
	struct config cfg;
	memset(&cfg, 0, sizeof(cfg));
	int rc = parse_args(argc, argv, &cfg);
	if (rc == 0)
		rc = analyse(&cfg);
	free(cfg.filter);
	return rc;
}
