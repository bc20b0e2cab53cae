/* One run of the capture command: the plan (plan.c) opened, nDPI, privileges, signals, the
 * source's loop (source.h: files, a pipe, a replay, live), the summary and the run's row. */
#include "analyse.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "clock.h"
#include "config.h"
#include "decode.h"
#include "dpi.h"
#include "engine.h"
#include "exitcode.h"
#include "livecap.h"
#include "plan.h"
#include "source.h"

/* Set by the signal handler, read by the sources' loops (through run_state.stop): this file's
 * only global. (The dashboard keeps its terminal's state in ui.c's, libpq is loaded once into
 * pg.c's.) */
static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* The frames a run's digest covers: enough to tell two captures apart, read in microseconds. */
#define RUN_DIGEST_RECORDS 64

/* The digest of the capture's first frames (time, lengths, bytes): the same capture read again
 * under another name, through a pipe, or merged, has the same one. */
static void digest_frame(struct run_state *rs, const uint8_t *data, uint32_t caplen,
                         uint32_t wirelen, uint64_t ts_us)
{
	uint64_t h = rs->digested++ ? rs->digest : 14695981039346656037ull;
	uint64_t head[2] = { ts_us, ((uint64_t)caplen << 32) | wirelen };
	const uint8_t *b = (const uint8_t *)head;
	for (size_t i = 0; i < sizeof(head); i++)
		h = (h ^ b[i]) * 1099511628211ull;
	for (uint32_t i = 0; i < caplen; i++)
		h = (h ^ data[i]) * 1099511628211ull;
	rs->digest = h;
}

/* A file not read whole (said on stderr already): kept, with why, for runs.skipped. */
void analyse_skipped(void *arg, const char *path, const char *why)
{
	struct run_state *rs = arg;
	plan_note_skipped(rs->plan, path, why);
}

/* A frame to the engine: which file it came from, the run's digest, a commit every 8192. */
int analyse_packet(void *arg, int dlt, const uint8_t *data, uint32_t caplen, uint32_t wirelen,
                   uint64_t ts_us)
{
	struct run_state *rs = arg;
	if (rs->cur_file != rs->eng_file) /* new flows begin in this file from now on */
		engine_source_file(rs->eng, rs->eng_file = rs->cur_file);
	if (rs->digested < RUN_DIGEST_RECORDS)
		digest_frame(rs, data, caplen, wirelen, ts_us);
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
int analyse_idle(void *arg, bool silent)
{
	struct run_state *rs = arg;
	if (*rs->stop)
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

/* Frames of the run not analysed for reason r, 0 if none. */
static uint64_t reason_count(const struct run_info *run, enum decode_result r)
{
	for (unsigned i = 0; i < run->nreasons; i++)
		if (!strcmp(run->reason_names[i], decode_reason_name(r)))
			return run->reasons[i];
	return 0;
}

/* The run's summary on stderr; the primary sink adds its own lines (sink.h). */
static void print_summary(const struct plan *p, const struct run_info *run)
{
	const struct config *cfg = p->cfg;
	const struct sink_kind *primary = p->kinds[0];
	void *self = p->sinks[0].self;
	int64_t replaced = 0, flows = 0;
	if (primary->replaced)
		primary->replaced(self, &replaced, &flows);
	if (replaced)
		fprintf(stderr, "iwscope: replaced %lld earlier run%s of %s (%lld flows)\n",
		        (long long)replaced, replaced == 1 ? "" : "s", run->source, (long long)flows);
	char quic[48] = "";
	if (run->quic_packets)
		snprintf(quic, sizeof(quic), ", %llu QUIC", (unsigned long long)run->quic_packets);
	fprintf(stderr, "iwscope: %llu packets (%llu TCP%s), %llu flow%s written to %s",
	        (unsigned long long)run->packets, (unsigned long long)run->tcp_packets, quic,
	        (unsigned long long)run->flows, run->flows == 1 ? "" : "s", cfg->db_shown);
	if (run->evicted) {
		/* what it cost: rows written before their verdicts were final, and the packets of
		 * those connections that came later (no second row; not analysed) */
		fprintf(stderr, ", %llu evicted early (table full: --flow-cap; %llu before their verdicts "
		        "were final, %llu later packets of theirs not analysed)",
		        (unsigned long long)run->evicted, (unsigned long long)run->evicted_unsettled,
		        (unsigned long long)run->evicted_later);
	}
	uint64_t copies = reason_count(run, DECODE_COPY);
	if (copies) {
		char b[32];
		fprintf(stderr, ", %s packet%s held twice (a copy each, analysed once: docs/METHOD.md)",
		        grouped(copies, b, sizeof(b)), copies == 1 ? "" : "s");
	}
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
	if (primary->summary)
		primary->summary(self, &p->sc);
}

static void catch_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* The run's row as it begins: what it reads, with what, and what it does when it was read
 * before. */
static void run_begins(const struct plan *p, struct run_info *run)
{
	const struct config *cfg = p->cfg;
	memset(run, 0, sizeof(*run));
	run->probe = cfg->probe;
	run->started_us = clock_wall_us();
	run->source = p->source_text;
	run->filter = cfg->filter ? cfg->filter : cfg->iface ? LIVE_FILTER_DEFAULT : NULL;
	run->options = p->options[0] ? p->options : NULL;
	run->libpcap_version = capture_pcap_version();
	run->ndpi_version = cfg->no_dpi ? NULL : dpi_version();
	run->pcap_received = run->pcap_dropped = run->dpi_peak_states = NULL64;
	/* a source that is not a file (an interface, standard input) is new every time */
	run->again = cfg->iface || p->from_stdin ? RUN_LIVE : cfg->replace ? RUN_REPLACE
	             : cfg->append ? RUN_APPEND : RUN_NEW_ONLY;
	/* the same capture under another name or through a pipe: found by its digest at the end */
	run->again_same = cfg->iface ? RUN_LIVE : cfg->replace ? RUN_REPLACE
	                  : cfg->append ? RUN_APPEND : RUN_NEW_ONLY;
}

/* The capture is over: everything analysed so far is written, whatever stopped it (live: its
 * loop did), and run gets the counters and how it ended. */
static void run_ends(struct plan *p, struct run_state *rs, struct run_info *run)
{
	engine *eng = p->eng;
	if (eng && !rs->sink_failed && engine_flush(eng, END_CAPTURE) != 0)
		rs->sink_failed = 1;
	if (eng && engine_finish(eng) != 0)
		rs->sink_failed = 1;
	plan_release_terminal(p, run); /* give the terminal back before printing anything */
	if (eng)
		engine_stats(eng, run);
	if (p->dpi) {
		uint64_t alive, peak, inspected;
		dpi_stats(p->dpi, &alive, &peak, &inspected);
		run->dpi_peak_states = (int64_t)peak; /* one context, on whichever thread */
	} else if (p->lc && !p->cfg->no_dpi) {
		run->dpi_peak_states = (int64_t)livecap_dpi_peak(p->lc);
	}
	run->finished_us = clock_wall_us();
	unsigned skipped = rs->cr.files_skipped + p->unreadable;
	run->skipped_files = rs->cr.files_failed + skipped;
	run->skipped = p->skipped;
	if (rs->digested && !p->source->endless) {
		snprintf(rs->digest_hex, sizeof(rs->digest_hex), "%016llx",
		         (unsigned long long)rs->digest);
		run->digest = rs->digest_hex;
	}
	/* what happened, as the exit status says it. Live capture ends when the user stops it (q,
	 * Ctrl-C, SIGTERM), as tcpdump's does: complete. A file run cut short by a signal or q is
	 * interrupted; a file cut short fails the run (its rows are kept all the same); files that
	 * could not be opened at all (missing, not a capture, an unsupported link type) make it
	 * partial when any other was analysed */
	bool nothing_read = !p->source->endless && skipped >= p->cfg->nfiles;
	run->status = rs->sink_failed || (p->lc && livecap_error(p->lc)) ? "failed"
	              : (stop_requested || rs->quit_early) && !p->source->endless ? "interrupted"
	              : rs->cr.files_failed || rs->cr.filter_error || nothing_read ? "failed"
	              : skipped ? "partial" : "complete";
}

/* The files skipped, a line each, after the summary: at most 20, the rest counted. */
static void print_skipped(const struct run_info *run)
{
	fprintf(stderr, "iwscope: %llu input file%s not read whole (listed in runs.skipped):\n",
	        (unsigned long long)run->skipped_files, run->skipped_files == 1 ? "" : "s");
	const char *line = run->skipped;
	unsigned shown = 0;
	while (*line && shown < 20) {
		const char *nl = strchr(line, '\n');
		int len = nl ? (int)(nl - line) : (int)strlen(line);
		fprintf(stderr, "  %.*s\n", len, line);
		shown++;
		line += len + (nl ? 1 : 0);
	}
	if (*line)
		fprintf(stderr, "  ... and more: iwscope report shows every one\n");
}

/* The run's end as it is said: the failure, or each sink's end, the summary, the exit status. */
static int finish(struct plan *p, struct run_state *rs, const struct run_info *run, int rc)
{
	const struct config *cfg = p->cfg;
	if (rs->sink_failed) {
		fprintf(stderr, "iwscope: %s\n", p->dpi && !dpi_ready(p->dpi) ? "cannot initialise nDPI"
		                                   : p->lc && livecap_failure(p->lc) ? livecap_failure(p->lc)
		                                   : plan_sink_error(p));
		plan_end(p, run, true); /* best effort: record the failure */
		return EXIT_RUNTIME;
	}
	if (plan_end(p, run, false) != 0)
		return EXIT_RUNTIME;
	fflush(stdout);
	/* a summary adds nothing when every file failed before its first packet */
	if (!cfg->quiet && (run->packets || !run->skipped_files))
		print_summary(p, run);
	if (!cfg->quiet && run->skipped)
		print_skipped(run);
	if (p->source->summary && !cfg->quiet)
		p->source->summary(p, run);
	if (rs->cr.filter_error)
		rc = EXIT_USAGE;
	else if (!strcmp(run->status, "failed") && !rc)
		rc = EXIT_RUNTIME;
	else if (!strcmp(run->status, "partial") && !rc)
		rc = EXIT_SKIPPED;
	if (stop_requested && !cfg->quiet && !p->source->endless)
		fprintf(stderr, "iwscope: interrupted; everything analysed so far is saved\n");
	return rc;
}

int analyse_run(struct config *cfg)
{
	struct plan p;
	struct run_info run;
	plan_from_config(&p, cfg);
	int rc = plan_open_source(&p);
	if (!rc)
		rc = plan_open_sinks(&p);
	if (!rc)
		rc = plan_open_dpi(&p);
	if (!rc) {
		run_begins(&p, &run);
		rc = plan_begin(&p, &run);
	}
	if (!rc)
		rc = plan_drop_privileges(&p);
	if (!rc) {
		plan_open_terminal(&p, &run);
		rc = plan_start(&p);
	}
	if (rc) {
		plan_close(&p);
		return rc;
	}
	catch_signals();
	struct run_state rs = { .eng = p.eng, .sinks = p.sinks, .nsinks = p.nsinks,
		                .stop = &stop_requested, .run = &run, .plan = &p };
	rc = p.source->loop(&p, &rs);
	run_ends(&p, &rs, &run);
	rc = finish(&p, &rs, &run, rc);
	plan_close(&p);
	return rc;
}
