/* The capture command's command line: options, defaults, usage. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <pwd.h>

#include "capture.h"
#include "dpi.h"
#include "exitcode.h"
#include "ch.h"
#include "pg.h"
#include "store.h"

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: iwscope -r FILE [-r FILE ...] [-o DB|URI] [-c COUNT] [-q] [-v] [--json]\n"
	        "               [--replay[=SPEED]] [--no-ui] [--no-color] [-d SECONDS]\n"
	        "               [--timing] [--no-dpi] [--dpi-packets N] [--flow-cap N] [--threads N]\n"
	        "               [--probe NAME] [--spool FILE] [-F FILTERFILE | EXPRESSION]\n"
	        "       iwscope -i IFACE [-i IFACE ...] [-o DB|URI] [-s SNAPLEN] [-B BUFFER_KIB] [-p]\n"
	        "               [-Z USER] [--no-ui] [--json] [--no-color] [-d SECONDS] [--probe NAME]\n"
	        "               [--spool FILE] [EXPRESSION]\n"
	        "       iwscope report DB|URI [--format table|csv|json] [--by server|client|app|rwnd|standard|transport]\n"
	        "               [--limit N]\n"
	        "       iwscope plot DB|URI -o DIR\n"
	        "       iwscope merge [-q] DB [DB ...] -o DB|URI\n"
	        "       iwscope schema sqlite|postgresql|clickhouse [--cluster NAME] [--database DB]\n"
	        "       iwscope --version | -h\n"
	        "\n"
	        "Reconstructs every TCP handshake and QUIC connection in a capture, measures each\n"
	        "side's first flight (initial window: TCP's in segments, QUIC's in datagrams, as\n"
	        "lower bounds) and writes one row per flow to an SQLite database. Beside the\n"
	        "verdicts a row holds source_file (the -r file the flow began in; NULL live),\n"
	        "c_/s_rwnd_class (receiver class of the SYN window: 6KB 10MSS 20MSS 64KB 8192\n"
	        "16384, small: below ten segments, too small for an IW10, other) and app_proto\n"
	        "with dpi_method (how sure nDPI was: payload, offport, guess, none; offport and\n"
	        "guess are weak, shown as \"MQTT?\" in reports, -v lines and the dashboard).\n"
	        "\n"
	        "  -r FILE        read a pcap or pcapng file (\"-\" = standard input); several -r\n"
	        "                 are one capture, merged by packet time as mergecap does (a tap's\n"
	        "                 two direction files; files that follow one another); a pcapng\n"
	        "                 file's interfaces may differ in link type and snapshot length\n"
	        "  -i IFACE       capture live from IFACE (a BPF filter keeps TCP and UDP, for\n"
	        "                 QUIC, unless you give one); SIGINT/SIGTERM stop it after\n"
	        "                 writing every flow;\n"
	        "                 several -i (up to %d, a tap's ports) are one capture, merged by\n"
	        "                 packet time\n"
	        "  -s SNAPLEN     live: bytes captured per packet (default %d)\n"
	        "  -B KIB         live: kernel capture buffer in KiB (default %d: 128 MiB)\n"
	        "  -p             live: do not put the interface in promiscuous mode\n"
	        "  -Z USER        live: drop root for USER once the interface and database are open\n"
	        "  --replay[=N]   with -r: replay at the capture's own pace (N times faster)\n"
	        "  --max-gap S    replay: silences longer than S seconds of capture time are cut\n"
	        "                 to S (default %g; 0 waits them out), as tcpreplay --maxsleep\n"
	        "  --no-ui        no dashboard: one line per finished flow on stdout (--json: JSON)\n"
	        "  --no-color     no colours in the dashboard (also when NO_COLOR is set)\n"
	        "  -d SECONDS     dashboard refresh interval (default 1)\n"
	        "  -o DB          SQLite database to write (default iwscope.db); created if absent\n"
	        "  -o postgresql://USER@HOST/DB\n"
	        "                 write to PostgreSQL instead (schema created if absent); rows\n"
	        "                 spool to a local SQLite file while the server is unreachable\n"
	        "  -o clickhouse://USER@HOST[:PORT]/DB\n"
	        "                 write to ClickHouse over HTTP (port 8123; one server's schema\n"
	        "                 created if absent; a cluster's: iwscope schema clickhouse); the\n"
	        "                 same spool; password also from CLICKHOUSE_PASSWORD or\n"
	        "                 ?password_file=PATH\n"
	        "  --probe NAME   this capture point's name in runs and flows (default: host name)\n"
	        "  --replace      the same files analysed into the database before (same probe,\n"
	        "                 same -r list): analyse them again in place of that run\n"
	        "                 (ClickHouse: one server only; refused on a cluster)\n"
	        "  --append       ... or add a second run beside it (without either, such a run\n"
	        "                 is refused: its flows would count twice; the same capture under\n"
	        "                 another name or piped to -r - is found by a digest of its first\n"
	        "                 records at the run's end: said, or replaced with --replace)\n"
	        "  --spool FILE   the spool for -o postgresql:// or clickhouse:// (default\n"
	        "                 ~/.local/state/iwscope/spool-PROBE.db)\n"
	        "  -c COUNT       stop after COUNT packets\n"
	        "  -F FILE        read the BPF filter expression from FILE\n"
	        "  -q             print nothing but errors\n"
	        "  -v             also print one line per finished flow on standard output\n"
	        "  --json         with -v: JSON lines\n"
	        "  --timing       locate first flights by timing even when timestamps allow TSecr\n"
	        "                 (a flow seen in one direction then gets no verdict: its own\n"
	        "                 echoes are the only evidence)\n"
	        "  --no-dpi       do not run nDPI (app_proto stays NULL, server_name too but on\n"
	        "                 QUIC rows: read from the client's Initial packets)\n"
	        "  --dpi-packets N  payload packets nDPI inspects per flow before it guesses (default %u)\n"
	        "  --flow-cap N   open flows kept at most (default: what %u%% of the available\n"
	        "                 memory holds, at least %u); beyond it the stalest are evicted\n"
	        "  --threads N    files: 2 or more runs most of nDPI and the writes on a second\n"
	        "                 thread, 1 everything on one; -i: N workers analyse beside the\n"
	        "                 capture thread (up to %u); the rows are the same; default: the\n"
	        "                 CPUs the process may use, at most 2 for files\n"
	        "  -h, --help     this help\n"
	        "  --version      versions of iwscope, libpcap, nDPI and SQLite\n"
	        "\n"
	        "Exit status: 0 success, 1 usage error, 2 runtime failure (a capture cut short,\n"
	        "no input readable, a database error and why: a missing or unwritable folder,\n"
	        "a full disk; unknown database host or refused login), 3 some input files\n"
	        "skipped (unreadable, not a capture, gzip-compressed, an unsupported link type:\n"
	        "listed, in runs.skipped), every other one analysed (status partial). Rows\n"
	        "analysed before a failure are kept. Live capture stopped by q or Ctrl-C is\n"
	        "complete. See iwscope(1).\n",
	        LIVE_IFACES_MAX, LIVE_SNAPLEN, LIVE_BUFFER_KIB, (double)REPLAY_MAX_GAP_S, DPI_MAX_PKTS, FLOW_MEM_PERCENT, FLOW_CAP_MIN,
	        LIVE_WORKERS_MAX);
}

/* A usage error: one line, and where the help is. EXIT_USAGE. */
static int usage_error(const char *what)
{
	fprintf(stderr, "iwscope: %s (see iwscope --help)\n", what);
	return EXIT_USAGE;
}

static void version(void)
{
	printf("iwscope %s\n%s\nnDPI %s\nSQLite %s (schema version %d)\nlibpq %s\nlibcurl %s\n",
	       IWSCOPE_VERSION, capture_pcap_version(), dpi_version(), store_sqlite_version(),
	       store_schema_version(), pg_libpq_version(), ch_libcurl_version());
	printf("memory: %zu bytes per open flow, plus %zu bytes of nDPI state until its protocol "
	       "is decided\n", flow_slot_bytes(), dpi_flow_bytes());
	printf("flow table: %u open flows at most by default (%u%% of the memory available now)\n",
	       flow_default_cap(), FLOW_MEM_PERCENT);
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

/* The filter file's contents with '#' comments (to the end of their line) removed, as tcpdump
 * -F does, and newlines as spaces. NULL with errno set on failure. */
static char *read_filter_file(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	int ch;
	bool comment = false;
	while (buf && (ch = fgetc(f)) != EOF) {
		if (ch == '#')
			comment = true;
		if (ch == '\n')
			comment = false;
		if (comment)
			continue;
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

/* A probe name goes into every row and into file names: keep it plain. */
/* s as a whole decimal number in lo .. hi: true with *v set. */
static bool number_in(const char *s, unsigned long lo, unsigned long hi, unsigned long *v)
{
	char *end;
	errno = 0;
	*v = strtoul(s, &end, 10);
	return !errno && !*end && *v >= lo && *v <= hi;
}

static bool valid_probe(const char *p)
{
	size_t n = strlen(p);
	if (n == 0 || n >= PROBE_MAX)
		return false;
	for (; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("._:-", *p))
			return false;
	return true;
}

/* The host name (up to its first dot), as the default probe name. */
static int default_probe(char *out, size_t len)
{
	char host[256];
	if (gethostname(host, sizeof(host)) != 0)
		return -1;
	host[sizeof(host) - 1] = '\0';
	host[strcspn(host, ".")] = '\0';
	if (!valid_probe(host) || strlen(host) >= len)
		return -1;
	memcpy(out, host, strlen(host) + 1);
	return 0;
}

/* $XDG_STATE_HOME/iwscope/spool-PROBE.db (~/.local/state when unset), its directory made. */
static int default_spool(const char *probe, char *out, size_t len)
{
	char dir[700];
	const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	if (xdg && *xdg == '/')
		snprintf(dir, sizeof(dir), "%s/iwscope", xdg);
	else if (home && *home == '/')
		snprintf(dir, sizeof(dir), "%s/.local/state/iwscope", home);
	else {
		fprintf(stderr, "iwscope: no HOME for the spool; give --spool FILE\n");
		return -1;
	}
	for (char *p = dir + 1; *p; p++) { /* mkdir -p */
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(dir, 0700);
		*p = '/';
	}
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		fprintf(stderr, "iwscope: %s: %s; give --spool FILE\n", dir, strerror(errno));
		return -1;
	}
	snprintf(out, len, "%s/spool-%s.db", dir, probe);
	return 0;
}

/* CPUs this process may run on (taskset, cpusets): a second thread on the same one as the
 * first only adds hand-overs (8% slower, measured under taskset -c 0). */
static int cpus_usable(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return 2;
	int n = CPU_COUNT(&set);
	return n < 1 ? 1 : n > LIVE_WORKERS_MAX ? LIVE_WORKERS_MAX : n;
}

/* The long options' codes past every short option's character. */
enum { OPT_VERSION = 256, OPT_TIMING, OPT_NO_DPI, OPT_FLOW_CAP, OPT_JSON, OPT_DPI_PACKETS,
       OPT_REPLAY, OPT_NO_UI, OPT_NO_COLOR, OPT_PROBE, OPT_SPOOL, OPT_THREADS,
       OPT_APPEND, OPT_REPLACE, OPT_MAX_GAP };
static const struct option longopts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "timing", no_argument, NULL, OPT_TIMING },
	{ "no-dpi", no_argument, NULL, OPT_NO_DPI },
	{ "flow-cap", required_argument, NULL, OPT_FLOW_CAP },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "dpi-packets", required_argument, NULL, OPT_DPI_PACKETS },
	{ "replay", optional_argument, NULL, OPT_REPLAY },
	{ "no-ui", no_argument, NULL, OPT_NO_UI },
	{ "no-color", no_argument, NULL, OPT_NO_COLOR },
	{ "probe", required_argument, NULL, OPT_PROBE },
	{ "spool", required_argument, NULL, OPT_SPOOL },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "append", no_argument, NULL, OPT_APPEND },
	{ "replace", no_argument, NULL, OPT_REPLACE },
	{ "max-gap", required_argument, NULL, OPT_MAX_GAP },
	{ NULL, 0, NULL, 0 },
};

/* Sets the option c that takes a number (or a speed) from optarg. 0, EXIT_USAGE (said), or -1
 * when c is not one of them. */
static int number_option(int c, struct config *cfg)
{
	char *end;
	switch (c) {
	case 'c':
		errno = 0;
		cfg->count = strtoull(optarg, &end, 10);
		if (errno || *end || !*optarg || cfg->count == 0 || optarg[0] == '-') {
			fprintf(stderr, "iwscope: invalid packet count \"%s\"\n", optarg);
			return EXIT_USAGE;
		}
		break;
	case OPT_FLOW_CAP: {
		unsigned long v;
		if (!number_in(optarg, 16, 1ul << 28, &v)) {
			fprintf(stderr, "iwscope: --flow-cap wants 16 .. 268435456\n");
			return EXIT_USAGE;
		}
		cfg->flow_cap = (uint32_t)v;
		break;
	}
	case OPT_DPI_PACKETS: {
		unsigned long v;
		if (!number_in(optarg, 1, 1000, &v)) {
			fprintf(stderr, "iwscope: --dpi-packets wants 1 .. 1000\n");
			return EXIT_USAGE;
		}
		cfg->dpi_packets = (unsigned)v;
		break;
	}
	case 's':
	case 'B': {
		unsigned long v;
		if (!number_in(optarg, c == 's' ? 64 : 1, c == 's' ? 262144 : 4194304, &v)) {
			fprintf(stderr, "iwscope: invalid %s \"%s\"\n", c == 's' ? "snaplen" : "buffer size", optarg);
			return EXIT_USAGE;
		}
		if (c == 's')
			cfg->snaplen = (int)v;
		else
			cfg->buffer_kib = (int)v;
		break;
	}
	case 'd':
		cfg->refresh_s = strtod(optarg, &end);
		if (*end || !(cfg->refresh_s >= 0.1 && cfg->refresh_s <= 3600)) {
			fprintf(stderr, "iwscope: -d wants 0.1 .. 3600 seconds\n");
			return EXIT_USAGE;
		}
		break;
	case OPT_REPLAY:
		cfg->replay = true;
		cfg->replay_speed = optarg ? strtod(optarg, &end) : 1.0;
		if (optarg && (*end || !(cfg->replay_speed > 0))) {
			fprintf(stderr, "iwscope: --replay wants a speed factor above 0\n");
			return EXIT_USAGE;
		}
		break;
	case OPT_MAX_GAP:
		cfg->max_gap_s = strtod(optarg, &end);
		if (*end || !*optarg || !(cfg->max_gap_s >= 0 && cfg->max_gap_s <= 86400))
			return usage_error("--max-gap wants 0 .. 86400 seconds");
		break;
	case OPT_THREADS: {
		unsigned long n;
		if (!isdigit((unsigned char)optarg[0]) || !number_in(optarg, 1, LIVE_WORKERS_MAX, &n)) {
			fprintf(stderr, "iwscope: --threads wants 1 to %u; see --help\n",
			        LIVE_WORKERS_MAX);
			return EXIT_USAGE;
		}
		cfg->threads = (unsigned)n;
		break;
	}
	default:
		return -1;
	}
	return 0;
}

/* Sets option c (its value in optarg); -F's file goes to *filter_file. 0, or the exit status
 * after a usage error (said). */
static int one_option(int c, char **argv, struct config *cfg, const char **filter_file)
{
	int rc = number_option(c, cfg);
	if (rc >= 0)
		return rc;
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
	case 'F':
		*filter_file = optarg;
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
	case 'i': {
		if (cfg->nifaces == LIVE_IFACES_MAX) {
			fprintf(stderr, "iwscope: at most %d -i interfaces\n", LIVE_IFACES_MAX);
			return EXIT_USAGE;
		}
		for (unsigned i = 0; i < cfg->nifaces; i++)
			if (!strcmp(cfg->ifaces[i], optarg)) {
				fprintf(stderr, "iwscope: -i %s given twice\n", optarg);
				return EXIT_USAGE;
			}
		cfg->ifaces[cfg->nifaces++] = optarg;
		cfg->iface = cfg->ifaces[0];
		break;
	}
	case 'p':
		cfg->no_promisc = 1;
		break;
	case 'Z':
		cfg->user = optarg;
		break;
	case OPT_NO_UI:
		cfg->no_ui = true;
		break;
	case OPT_NO_COLOR:
		cfg->no_color = true;
		break;
	case OPT_PROBE:
		if (!valid_probe(optarg)) {
			fprintf(stderr, "iwscope: --probe wants 1 to %d letters, digits, '.', '_', "
			        "':' or '-'\n", PROBE_MAX - 1);
			return EXIT_USAGE;
		}
		snprintf(cfg->probe, sizeof(cfg->probe), "%s", optarg);
		break;
	case OPT_SPOOL:
		cfg->spool = optarg;
		break;
	case OPT_APPEND:
		cfg->append = true;
		break;
	case OPT_REPLACE:
		cfg->replace = true;
		break;
	case 'h':
		usage(stdout);
		exit(0);
	case OPT_VERSION:
		version();
		exit(0);
	case ':':
	default: {
		char what[300];
		if (optopt > 0 && optopt < 256 && optopt != '?')
			snprintf(what, sizeof(what), c == ':' ? "option -%c needs a value"
			                                      : "unknown option -%c", optopt);
		else
			snprintf(what, sizeof(what), c == ':' ? "option %.200s needs a value"
			                                      : "unknown option %.200s", argv[optind - 1]);
		return usage_error(what);
	}
	}
	return 0;
}

/* The options that do not go together, or need another. 0, or EXIT_USAGE (said). */
static int check_combinations(const struct config *cfg)
{
	if (!cfg->nfiles && !cfg->iface)
		return usage_error("no capture given (-r FILE or -i IFACE)");
	if (cfg->json && !cfg->verbose && !cfg->no_ui && !cfg->iface && !cfg->replay)
		return usage_error("--json shapes the lines of -v, --no-ui or live capture");
	if (cfg->nfiles && cfg->iface) {
		fprintf(stderr, "iwscope: -r and -i do not go together\n");
		return EXIT_USAGE;
	}
	if (cfg->replay && !cfg->nfiles) {
		fprintf(stderr, "iwscope: --replay needs -r FILE\n");
		return EXIT_USAGE;
	}
	if (cfg->user && !cfg->iface) {
		fprintf(stderr, "iwscope: -Z is for live capture (-i)\n");
		return EXIT_USAGE;
	}
	if ((cfg->append || cfg->replace) && !cfg->nfiles) {
		fprintf(stderr, "iwscope: --append and --replace are for capture files (-r)\n");
		return EXIT_USAGE;
	}
	if (cfg->append && cfg->replace) {
		fprintf(stderr, "iwscope: --append and --replace do not go together\n");
		return EXIT_USAGE;
	}
	if (cfg->spool && !pg_is_uri(cfg->db) && !ch_is_uri(cfg->db)) {
		fprintf(stderr, "iwscope: --spool is for -o postgresql://... or clickhouse://...\n");
		return EXIT_USAGE;
	}
	return 0;
}

/* What follows from the options: the probe's name, the spool, colours, the filter (from -F or
 * the rest of the line). 0, or the exit status (said). */
static int settle(int argc, char **argv, struct config *cfg, const char *filter_file)
{
	if (!cfg->probe[0] && default_probe(cfg->probe, sizeof(cfg->probe)) != 0) {
		fprintf(stderr, "iwscope: cannot tell this host's name; give --probe NAME\n");
		return EXIT_USAGE;
	}
	pg_redact(cfg->db, cfg->db_shown, sizeof(cfg->db_shown));
	if ((pg_is_uri(cfg->db) || ch_is_uri(cfg->db)) && !cfg->spool) {
		if (default_spool(cfg->probe, cfg->spool_default, sizeof(cfg->spool_default)) != 0)
			return EXIT_RUNTIME;
		cfg->spool = cfg->spool_default;
	}
	if (getenv("NO_COLOR") && *getenv("NO_COLOR"))
		cfg->no_color = true;
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

int cli_parse(int argc, char **argv, struct config *cfg)
{
	const char *filter_file = NULL;
	int c;
	cfg->db = "iwscope.db";
	cfg->threads = (unsigned)cpus_usable();
	cfg->dpi_packets = DPI_MAX_PKTS;
	cfg->refresh_s = 1.0;
	cfg->max_gap_s = REPLAY_MAX_GAP_S;
	opterr = 0; /* a usage error is one line of ours */
	while ((c = getopt_long(argc, argv, "+:r:o:c:F:qvhi:s:B:pZ:d:", longopts, NULL)) != -1) {
		int rc = one_option(c, argv, cfg, &filter_file);
		if (rc)
			return rc;
	}
	int rc = check_combinations(cfg);
	return rc ? rc : settle(argc, argv, cfg, filter_file);
}
