/* One run of the capture command: source, sinks, nDPI, privileges, signals, the capture loop
 * (files, live, replay, a pipe), the summary and the run's row. */
#include "analyse.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "capture.h"
#include "clock.h"
#include "dpi.h"
#include "engine.h"
#include "exitcode.h"
#include "lines.h"
#include "livecap.h"
#include "pg.h"
#include "pgsink.h"
#include "store.h"
#include "ui.h"

/* Set by the signal handler, read by the capture loops (the one global that changes). */
static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

struct run_state {
	engine *eng;
	struct sink *sinks;
	unsigned nsinks;
	uint32_t since_tick;
	int sink_failed;
	bool quit_early;  /* q on the dashboard before the capture ended */
	/* a pipe on stdin gone silent: its clock runs on as the wall clock does, from the newest
	 * packet's time, so that flows end (FIN plus a second) and time out as live */
	uint64_t idle_pkts, idle_since_us, idle_capture_us;
};

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
		if (engine_tick(rs->eng) != 0) {
			rs->sink_failed = 1;
			return -1;
		}
	}
	return 0;
}

/* Standard input that is a pipe: commit what is pending; stop on a signal. In a silence, when
 * the packets' times follow the wall clock (tcpdump -w - on a live interface), the flows'
 * clock runs on with it, so that ended flows are written (FIN plus a second) and idle ones
 * time out as in live capture; an old capture's times stay as they are. */
static int on_idle(void *arg, bool silent)
{
	struct run_state *rs = arg;
	if (stop_requested)
		return -1;
	uint64_t now = clock_mono_us(), pkts = engine_packets(rs->eng);
	if (pkts != rs->idle_pkts || !rs->idle_since_us) { /* packets came since */
		rs->idle_pkts = pkts;
		rs->idle_since_us = now - (silent ? CAPTURE_IDLE_MS * 1000u : 0);
		rs->idle_capture_us = engine_now(rs->eng);
	}
	int64_t wall = clock_wall_us(), cap = (int64_t)rs->idle_capture_us;
	bool live_clock = cap > wall - 5000000 && cap < wall + 5000000;
	rs->since_tick = 0;
	if ((silent && live_clock &&
	     engine_expire_at(rs->eng, rs->idle_capture_us + (now - rs->idle_since_us)) != 0) ||
	    engine_tick(rs->eng) != 0) {
		rs->sink_failed = 1;
		return -1;
	}
	return 0;
}

/* What the run reads, as runs.source and the dashboard say it: the files, or the interfaces,
 * separated by spaces. */
static void source_text(const struct config *cfg, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = '\0';
	const char *const *names = cfg->iface ? cfg->ifaces : cfg->files;
	unsigned count = cfg->iface ? cfg->nifaces : cfg->nfiles;
	for (unsigned i = 0; i < count && n + 1 < len; i++) {
		int w = snprintf(buf + n, len - n, "%s%s", i ? " " : "", names[i]);
		if (w < 0)
			break;
		n += (size_t)w;
	}
}

/* v with a comma between each three digits ("52,000"), into buf. */
static const char *grouped(uint64_t v, char *buf, size_t len)
{
	char digits[24];
	int n = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)v);
	size_t o = 0;
	for (int i = 0; i < n && o + 2 < len; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
	return buf;
}

/* What the capture lacks, on the summary line, when it lacks anything (docs/METHOD.md "What a
 * capture lacks"). */
static void print_lacks(const struct run_info *run)
{
	if (!run->one_direction && !run->syn_opts_cut && !run->acked_unseen)
		return;
	const char *sep = "; ";
	char b[32];
	if (run->one_direction) {
		fprintf(stderr, "%s%s flow%s seen in one direction only", sep,
		        grouped(run->one_direction, b, sizeof(b)), run->one_direction == 1 ? "" : "s");
		sep = ", ";
	}
	if (run->syn_opts_cut) {
		fprintf(stderr, "%s%s SYN%s with options cut by the snaplen", sep,
		        grouped(run->syn_opts_cut, b, sizeof(b)), run->syn_opts_cut == 1 ? "" : "s");
		sep = ", ";
	}
	if (run->acked_unseen)
		fprintf(stderr, "%s%s byte%s acknowledged but never captured", sep,
		        grouped(run->acked_unseen, b, sizeof(b)), run->acked_unseen == 1 ? "" : "s");
	fprintf(stderr, ": verdicts there are exact only where the packets show them (docs/METHOD.md)");
}

static void print_summary(const struct config *cfg, const struct run_info *run, const store *db,
                          const pgsink *pg)
{
	int64_t replaced = 0, flows = 0;
	struct pgsink_stats st;
	if (pg) {
		pgsink_stats(pg, &st);
		replaced = st.replaced_runs;
		flows = st.replaced_flows;
	} else {
		store_replaced(db, &replaced, &flows);
	}
	if (replaced)
		fprintf(stderr, "iwscope: replaced %lld earlier run%s of %s (%lld flows)\n",
		        (long long)replaced, replaced == 1 ? "" : "s", run->source, (long long)flows);
	fprintf(stderr, "iwscope: %llu packets (%llu TCP), %llu flow%s written to %s",
	        (unsigned long long)run->packets, (unsigned long long)run->tcp_packets,
	        (unsigned long long)run->flows, run->flows == 1 ? "" : "s", cfg->db_shown);
	if (run->evicted)
		fprintf(stderr, ", %llu evicted early (table full)", (unsigned long long)run->evicted);
	print_lacks(run);
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
	if (!pg)
		return;
	fprintf(stderr, "iwscope: postgresql: %llu flow rows sent", (unsigned long long)st.delivered);
	if (st.spooled) {
		fprintf(stderr, "; %llu waited in the spool while the server was unreachable",
		        (unsigned long long)st.spooled);
		if (st.backlog)
			fprintf(stderr, " (%llu left by an earlier run)", (unsigned long long)st.backlog);
		fprintf(stderr, ", %llu drained", (unsigned long long)st.drained);
	}
	fprintf(stderr, "\n");
	if (st.remaining)
		fprintf(stderr, "iwscope: %llu flow rows wait in the spool %s; the next run with it, or "
		        "`iwscope merge %s -o URI`, delivers them\n", (unsigned long long)st.remaining,
		        cfg->spool, cfg->spool);
}

/* Gives the database files to user and becomes that user (tcpdump -Z). 0 or -1 (printed). */
static int drop_privileges(const char *user, const char *db)
{
	struct passwd *pw = getpwnam(user);
	if (!pw) {
		fprintf(stderr, "iwscope: -Z %s: no such user\n", user);
		return -1;
	}
	const char *suffix[] = { "", "-wal", "-shm" };
	for (size_t i = 0; i < 3; i++) {
		char path[1100];
		snprintf(path, sizeof(path), "%s%s", db, suffix[i]);
		if (chown(path, pw->pw_uid, pw->pw_gid) != 0 && errno != ENOENT) {
			fprintf(stderr, "iwscope: %s: cannot give it to %s: %s\n", path, user, strerror(errno));
			return -1;
		}
	}
	if (initgroups(pw->pw_name, pw->pw_gid) != 0 || setgid(pw->pw_gid) != 0 ||
	    setuid(pw->pw_uid) != 0) {
		fprintf(stderr, "iwscope: -Z %s: %s\n", user, strerror(errno));
		return -1;
	}
	if (setuid(0) == 0) { /* must be impossible now */
		fprintf(stderr, "iwscope: -Z %s: root could be regained; stopping\n", user);
		return -1;
	}
	return 0;
}


/* A capture-time span as people say it: "850 ms", "42 s", "3.5 h", "5.8 years". */
static void duration_text(uint64_t us, char *buf, size_t len)
{
	double s = (double)us / 1e6;
	if (s < 1)
		snprintf(buf, len, "%.0f ms", s * 1e3);
	else if (s < 120)
		snprintf(buf, len, "%.0f s", s);
	else if (s < 7200)
		snprintf(buf, len, "%.0f min", s / 60);
	else if (s < 172800)
		snprintf(buf, len, "%.1f h", s / 3600);
	else if (s < 3 * 365.25 * 86400)
		snprintf(buf, len, "%.0f days", s / 86400);
	else
		snprintf(buf, len, "%.1f years", s / (365.25 * 86400));
}

/* The idle capture time a replay cut so far, as text in d; the number of silences cut. */
static unsigned skipped_idle(const capture_replay *replay, char *d, size_t len)
{
	unsigned gaps;
	uint64_t skipped;
	capture_replay_skipped(replay, &gaps, &skipped);
	duration_text(skipped, d, len);
	return gaps;
}

/* The dashboard's turn in a capture loop: its keys, the counters, a redraw every refresh
 * interval or after a key. The key's action; nothing is drawn after UI_QUIT. */
static enum ui_action dashboard_turn(ui *dash, uint64_t packets, uint32_t open_flows, uint64_t now,
                                     uint64_t refresh, uint64_t *last_draw)
{
	enum ui_action a = ui_keys(dash);
	if (a == UI_QUIT)
		return a;
	ui_counters(dash, packets, open_flows);
	if (now - *last_draw >= refresh || a != UI_NONE) {
		ui_draw(dash, a != UI_NONE);
		*last_draw = now;
	}
	return a;
}

/* The live loop, on this thread while others capture and analyse (livecap.c): rows to the
 * sinks as they come, commits every second, the dashboard redrawn every refresh interval.
 * The capture's own end (an error, -c) or a stop ends it; then every open flow is written and
 * run gets the counters. Returns 0, or EXIT_RUNTIME after a capture error (printed). */
static int watch(const struct config *cfg, struct run_state *rs, livecap *lc, ui *dash,
                 struct run_info *run)
{
	uint64_t last_tick = clock_mono_us(), last_draw = 0;
	uint64_t refresh = (uint64_t)(cfg->refresh_s * 1e6);
	while (!stop_requested && !livecap_over(lc)) {
		if (livecap_rows(lc, rs->sinks, rs->nsinks, 100) < 0) {
			rs->sink_failed = 1;
			break;
		}
		uint64_t now = clock_mono_us();
		if (now - last_tick >= 1000000u) {
			last_tick = now;
			if (sinks_tick(rs->sinks, rs->nsinks) != 0) {
				rs->sink_failed = 1;
				break;
			}
		}
		if (dash) {
			uint64_t pkts;
			uint32_t open;
			livecap_counters(lc, &pkts, &open);
			if (dashboard_turn(dash, pkts, open, now, refresh, &last_draw) == UI_QUIT) {
				rs->quit_early = true;
				break;
			}
		}
	}
	/* everything captured so far is analysed and written, whatever ended the capture */
	if (livecap_finish(lc, rs->sinks, rs->sink_failed ? 0 : rs->nsinks, run) != 0)
		rs->sink_failed = 1;
	if (!rs->sink_failed && sinks_tick(rs->sinks, rs->nsinks) != 0)
		rs->sink_failed = 1;
	if (livecap_error(lc) && !rs->sink_failed) {
		fprintf(stderr, "iwscope: %s\n", livecap_error(lc)); /* names the interface */
		return EXIT_RUNTIME;
	}
	return 0;
}

/* The replay loop: packets in steps of at most 100 ms, sinks committed every second, the
 * dashboard redrawn every refresh interval. */
static int stream(const struct config *cfg, struct run_state *rs, capture_replay *replay,
                  ui *dash)
{
	uint64_t last_tick = clock_mono_us(), last_draw = 0;
	unsigned gaps_noted = 0;
	uint64_t refresh = (uint64_t)(cfg->refresh_s * 1e6);
	bool ended = false;
	while (!stop_requested) {
		int n = ended ? 0 : capture_replay_step(replay, 100, on_packet, rs);
		if (n < 0) {
			if (!dash || rs->sink_failed || ended)
				break; /* a sink failed or the replay ended */
			/* the replay ended: show every flow and keep the dashboard until q */
			ended = true;
			if (engine_flush(rs->eng, END_CAPTURE) != 0 || engine_tick(rs->eng) != 0) {
				rs->sink_failed = 1;
				break;
			}
			char d[48];
			if (skipped_idle(replay, d, sizeof(d))) { /* what was cut stays said */
				char note[160];
				snprintf(note, sizeof(note), "replay finished, skipped %s idle: q quits", d);
				ui_note(dash, note);
			} else {
				ui_note(dash, "replay finished: q quits");
			}
			ui_counters(dash, engine_packets(rs->eng), engine_open_flows(rs->eng));
			ui_draw(dash, true);
		}
		if (ended) {
			struct timespec w = { 0, 100000000L };
			nanosleep(&w, NULL);
		}
		if (dash && !ended) { /* say so when a silence was cut */
			char d[48];
			unsigned gaps = skipped_idle(replay, d, sizeof(d));
			if (gaps != gaps_noted) {
				char note[160];
				gaps_noted = gaps;
				snprintf(note, sizeof(note), "skipped %s of idle capture (%u gap%s > %gs)", d,
				         gaps, gaps == 1 ? "" : "s", cfg->max_gap_s);
				ui_note(dash, note);
			}
		}
		if (cfg->count && engine_packets(rs->eng) >= cfg->count)
			break;
		uint64_t now = clock_mono_us();
		if (now - last_tick >= 1000000u) {
			last_tick = now;
			if (engine_tick(rs->eng) != 0) {
				rs->sink_failed = 1;
				break;
			}
		}
		if (dash) {
			enum ui_action a = dashboard_turn(dash, engine_packets(rs->eng),
			                                  engine_open_flows(rs->eng), now, refresh, &last_draw);
			if (a == UI_QUIT) {
				rs->quit_early = !ended;
				break;
			}
			if (a == UI_PAUSE)
				capture_replay_pause(replay, ui_paused(dash));
		}
	}
	return 0;
}

static void close_live(capture_live **live, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		capture_live_close(live[i]);
}

/* The message of the sink that failed: the primary's when it has one, else the first other. */
static const char *failed_sink_error(const struct sink *sinks, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		const char *e = sinks[i].ops->error(sinks[i].self);
		if (e && *e)
			return e;
	}
	return "a sink failed";
}

int analyse_run(struct config *cfg)
{
	char err[1100];
	int rc = 0;
	bool streaming = cfg->iface || cfg->replay;
	/* tcpdump -w - | iwscope -r -: a pipe that stays open is read as live capture is (rows
	 * of open flows once their verdicts are final, commits every second, WAL for readers) */
	bool from_stdin = false;
	for (unsigned i = 0; i < cfg->nfiles; i++)
		from_stdin |= !strcmp(cfg->files[i], "-");
	bool piped = from_stdin && capture_stdin_is_pipe();
	capture_live *live[LIVE_IFACES_MAX] = { NULL };
	unsigned nlive = 0;
	capture_replay *replay = NULL;
	ui *dash = NULL;
	struct capture_opts co = { .files = cfg->files, .nfiles = cfg->nfiles,
		                   .filter = cfg->filter, .max_packets = cfg->count };
	/* open the interfaces first: no permission means no database either */
	for (unsigned i = 0; cfg->iface && i < cfg->nifaces; i++) {
		struct live_opts lo = { cfg->ifaces[i], cfg->snaplen, cfg->buffer_kib, cfg->filter,
			                !cfg->no_promisc };
		if (!(live[nlive] = capture_live_open(&lo, err, sizeof(err)))) {
			fprintf(stderr, "iwscope: %s\n", err);
			close_live(live, nlive);
			return EXIT_RUNTIME;
		}
		nlive++;
	}
	/* capture files: those that cannot be opened are reported now and skipped; when none
	 * can, no database is created or touched (standard input is read as it comes) */
	const char *readable[MAX_FILES];
	unsigned unreadable = 0;
	if (!cfg->iface) {
		co.files = readable;
		co.nfiles = 0;
		for (unsigned i = 0; i < cfg->nfiles; i++) {
			/* a pipe, a FIFO, /dev/stdin: opening it would consume it, so it is read as it
			 * comes and its problems are reported then */
			struct stat st;
			if (!strcmp(cfg->files[i], "-") ||
			    (stat(cfg->files[i], &st) == 0 && !S_ISREG(st.st_mode))) {
				readable[co.nfiles++] = cfg->files[i];
				continue;
			}
			int filter_error = 0;
			capture_file *cf = capture_file_open(cfg->files[i], cfg->filter, &filter_error);
			if (filter_error)
				return EXIT_USAGE;
			if (cf)
				readable[co.nfiles++] = cfg->files[i];
			else
				unreadable++;
			capture_file_close(cf);
		}
		if (!co.nfiles)
			return EXIT_RUNTIME;
	}
	/* the primary sink: an SQLite file, or PostgreSQL with its spool */
	store *db = NULL;
	pgsink *pg = NULL;
	if (pg_is_uri(cfg->db)) {
		struct pgsink_opts po = { cfg->db, cfg->spool, cfg->quiet };
		pg = pgsink_open(&po, err, sizeof(err));
	} else {
		db = store_open(cfg->db, err, sizeof(err));
		if (db && !streaming && !piped)
			store_bulk(db);
	}
	if (!db && !pg) {
		fprintf(stderr, "iwscope: %s\n", err);
		close_live(live, nlive);
		return EXIT_RUNTIME;
	}
	dpi_ctx *dpi = NULL;
	engine *eng = NULL;
	livecap *lc = NULL;
	struct sink sinks[3];
	unsigned nsinks = 0;
	/* files: nDPI and the sinks on a second thread; live and replay stay on one, next to the
	 * dashboard that shows the flows as they are written */
	bool threaded = !streaming && !piped && cfg->threads > 1;
	/* with that thread, nDPI starts up there while this one reads the first packets */
	/* live: each worker opens its own (livecap.c) */
	if (!cfg->no_dpi && !nlive &&
	    !(dpi = threaded ? dpi_new(cfg->dpi_packets) : dpi_open(cfg->dpi_packets))) {
		fprintf(stderr, "iwscope: cannot initialise nDPI\n");
		rc = EXIT_RUNTIME;
		goto out;
	}
	sinks[nsinks++] = pg ? pgsink_sink(pg) : store_sink(db);
	const struct sink primary = sinks[0];
	bool want_ui = streaming && !cfg->no_ui && isatty(STDOUT_FILENO) && isatty(STDIN_FILENO);
	if (cfg->verbose || (streaming && !want_ui)) { /* headless: a line per finished flow */
		sinks[nsinks] = lines_sink(stdout, cfg->json);
		if (sinks[nsinks].ops)
			nsinks++;
	}
	/* Rows of flows still open (early rows) are for live capture and replay: a file is read
	 * faster than its flows lasted, and its rows all arrive within the run anyway, each
	 * written once. */
	struct engine_opts eo = { .flow_cap = cfg->flow_cap, .force_timing = cfg->force_timing,
		                  .threaded = threaded, .early_rows = streaming || piped };
	char source[4096];
	source_text(cfg, source, sizeof(source));
	struct run_info run = { 0 };
	run.probe = cfg->probe;
	run.started_us = clock_wall_us();
	run.source = source;
	run.filter = cfg->filter ? cfg->filter : cfg->iface ? "tcp" : NULL;
	char options[96] = "";
	if (nlive) { /* what the capture was opened with (every interface alike), beside what
	              * changes results */
		int snaplen, kib;
		capture_live_settings(live[0], &snaplen, &kib);
		snprintf(options, sizeof(options), "snaplen=%d buffer_kib=%d%s", snaplen, kib,
		         cfg->force_timing ? " timing" : "");
	} else if (cfg->force_timing) {
		snprintf(options, sizeof(options), "timing");
	}
	run.options = options[0] ? options : NULL;
	run.libpcap_version = capture_pcap_version();
	run.ndpi_version = cfg->no_dpi ? NULL : dpi_version();
	run.pcap_received = run.pcap_dropped = run.dpi_peak_states = NULL64;
	/* a source that is not a file (an interface, standard input) is new every time */
	run.again = cfg->iface || from_stdin ? RUN_LIVE : cfg->replace ? RUN_REPLACE
	            : cfg->append ? RUN_APPEND : RUN_NEW_ONLY;
	if (primary.ops->begin(primary.self, &run) != 0) {
		fprintf(stderr, "iwscope: %s\n", primary.ops->error(primary.self));
		rc = EXIT_RUNTIME;
		goto out;
	}
	if (cfg->user && drop_privileges(cfg->user, pg ? cfg->spool : cfg->db) != 0) {
		rc = EXIT_RUNTIME;
		goto out;
	}
	if (want_ui) {
		struct ui_opts uo = { source, !cfg->no_color };
		dash = ui_open(&uo);
		if (dash)
			sinks[nsinks++] = ui_sink(dash);
	}
	if (nlive) {
		struct livecap_opts lo = { .workers = cfg->threads, .eo = eo, .dpi = !cfg->no_dpi,
			                   .dpi_packets = cfg->dpi_packets, .max_packets = cfg->count };
		lc = livecap_start(live, nlive, &lo, err, sizeof(err));
		if (!lc) {
			fprintf(stderr, "iwscope: %s\n", err);
			rc = EXIT_RUNTIME;
			goto out;
		}
	} else if (!(eng = engine_new(&eo, sinks, nsinks, dpi))) {
		fprintf(stderr, "iwscope: out of memory for the flow table\n");
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
	co.idle = on_idle;
	co.idle_arg = &rs;
	struct capture_result cr = { 0 };
	if (nlive) {
		rc = watch(cfg, &rs, lc, dash, &run);
	} else if (streaming) {
		replay = capture_replay_open(&co, cfg->replay_speed);
		if (replay) {
			capture_replay_max_gap(replay, (uint64_t)(cfg->max_gap_s * 1e6));
			rc = stream(cfg, &rs, replay, dash);
			char d[48];
			unsigned gaps = skipped_idle(replay, d, sizeof(d));
			cr.files_failed = capture_replay_failed(replay);
			if (gaps && !cfg->quiet && !dash) { /* the dashboard said it on screen */
				fprintf(stderr, "iwscope: replay skipped %s of idle capture (%u gap%s over %g s)\n",
				        d, gaps, gaps == 1 ? "" : "s", cfg->max_gap_s);
			}
		} else {
			fprintf(stderr, "iwscope: out of memory\n");
			rc = EXIT_RUNTIME;
			rs.sink_failed = 1;
		}
	} else {
		capture_files(&co, on_packet, &rs, &stop_requested, &cr);
	}
	cr.files_failed += unreadable;

	/* Everything analysed so far is written, whatever stopped the capture (live: watch). */
	if (eng && !rs.sink_failed && engine_flush(eng, END_CAPTURE) != 0)
		rs.sink_failed = 1;
	if (eng && engine_finish(eng) != 0)
		rs.sink_failed = 1;
	if (dash) { /* give the terminal back before printing anything */
		ui_close(dash);
		dash = NULL;
		nsinks--;
	}
	if (eng)
		engine_stats(eng, &run);
	if (dpi) {
		uint64_t alive, peak, inspected;
		dpi_stats(dpi, &alive, &peak, &inspected);
		/* two contexts with a stage: the sum of their peaks bounds the flows at once */
		run.dpi_peak_states = (int64_t)(peak + engine_dpi_peak(eng));
	} else if (lc && !cfg->no_dpi) {
		run.dpi_peak_states = (int64_t)livecap_dpi_peak(lc);
	}
	run.finished_us = clock_wall_us();
	run.skipped_files = cr.files_failed;
	/* what happened, as the exit status says it: a file that could not be read whole (missing,
	 * cut short, unsupported) fails the run, whose rows are kept all the same */
	run.status = rs.sink_failed || (lc && livecap_error(lc)) ? "failed"
	             : stop_requested || rs.quit_early ? "interrupted"
	             : cr.files_failed || cr.filter_error ? "failed" : "complete";
	if (rs.sink_failed) {
		fprintf(stderr, "iwscope: %s\n", dpi && !dpi_ready(dpi) ? "cannot initialise nDPI"
		                                   : lc && livecap_failure(lc) ? livecap_failure(lc)
		                                   : failed_sink_error(sinks, nsinks));
		primary.ops->end(primary.self, &run); /* best effort: record the failure */
		rc = EXIT_RUNTIME;
		goto out;
	}
	for (unsigned i = 0; i < nsinks; i++)
		if (sinks[i].ops->end(sinks[i].self, &run) != 0) {
			fprintf(stderr, "iwscope: %s\n", sinks[i].ops->error(sinks[i].self));
			rc = EXIT_RUNTIME;
			goto out;
		}
	fflush(stdout);
	/* a summary adds nothing when every file failed before its first packet */
	if (!cfg->quiet && (run.packets || !cr.files_failed))
		print_summary(cfg, &run, db, pg);
	if (nlive && !cfg->quiet) {
		fprintf(stderr, "iwscope: %lld packets received by the capture, %lld dropped (%s); "
		        "the capture waited %.1f ms at most\n", (long long)run.pcap_received,
		        (long long)run.pcap_dropped, options, livecap_longest_stall(lc) / 1000.0);
		for (unsigned i = 0; i < nlive && nlive > 1; i++) {
			int64_t received, dropped;
			livecap_capture_counts(lc, i, &received, &dropped);
			fprintf(stderr, "%s%s: %lld received, %lld dropped%s", i ? "; " : "iwscope: ",
			        cfg->ifaces[i], (long long)received, (long long)dropped,
			        i + 1 == nlive ? "\n" : "");
		}
	}
	if (cr.filter_error)
		rc = EXIT_USAGE;
	else if (cr.files_failed && !rc)
		rc = EXIT_RUNTIME;
	if (stop_requested && !cfg->quiet)
		fprintf(stderr, "iwscope: interrupted; everything analysed so far is saved\n");
out:
	ui_close(dash);
	livecap_free(lc);
	engine_free(eng);
	for (unsigned i = 1; i < nsinks; i++)
		sinks[i].ops->close(sinks[i].self);
	dpi_close(dpi);
	store_close(db);
	pgsink_close(pg);
	capture_replay_close(replay);
	close_live(live, nlive);
	return rc;
}
