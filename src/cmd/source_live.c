/* The live source (-i): interfaces opened through libpcap, a thread that only captures and
 * workers that analyse (livecap.c); this thread writes the rows, commits and draws the
 * dashboard. */
#include <stdio.h>

#include "capture_live.h"
#include "clock.h"
#include "exitcode.h"
#include "livecap.h"
#include "source.h"
#include "ui.h"

static bool live_wanted(const struct plan *p) { return p->cfg->iface; }

/* Opens every interface (-i, up to LIVE_IFACES_MAX); no permission means no database either. */
static int open_interfaces(struct plan *p)
{
	const struct config *cfg = p->cfg;
	char err[1100];
	for (unsigned i = 0; i < cfg->nifaces; i++) {
		struct live_opts lo = { cfg->ifaces[i], cfg->snaplen, cfg->buffer_kib, cfg->filter,
			                !cfg->no_promisc };
		if (!(p->live[p->nlive] = capture_live_open(&lo, err, sizeof(err)))) {
			fprintf(stderr, "iwscope: %s\n", err);
			return EXIT_RUNTIME;
		}
		p->nlive++;
	}
	/* what the capture was opened with (every interface alike), beside what changes results */
	int snaplen, kib;
	capture_live_settings(p->live[0], &snaplen, &kib);
	snprintf(p->options, sizeof(p->options), "snaplen=%d buffer_kib=%d%s", snaplen, kib,
	         cfg->force_timing ? " timing" : "");
	return 0;
}

/* The capture thread and the workers, each with its own engine and nDPI. */
static int live_start(struct plan *p)
{
	const struct config *cfg = p->cfg;
	char err[1100];
	struct livecap_opts lo = { .workers = cfg->threads, .eo = p->eo, .dpi = !cfg->no_dpi,
		                   .dpi_packets = cfg->dpi_packets, .max_packets = cfg->count };
	if (!(p->lc = livecap_start(p->live, p->nlive, &lo, err, sizeof(err)))) {
		fprintf(stderr, "iwscope: %s\n", err);
		return EXIT_RUNTIME;
	}
	return 0;
}

/* The live loop, on this thread while others capture and analyse (livecap.c): rows to the
 * sinks as they come, commits every second, the dashboard redrawn every refresh interval.
 * The capture's own end (an error, -c) or a stop ends it; then every open flow is written and
 * run gets the counters. Returns 0, or EXIT_RUNTIME after a capture error (printed). */
static int live_loop(struct plan *p, struct run_state *rs)
{
	const struct config *cfg = p->cfg;
	livecap *lc = p->lc;
	ui *dash = p->dash;
	struct run_info *run = rs->run;
	uint64_t last_tick = clock_mono_us(), last_draw = 0;
	uint64_t refresh = (uint64_t)(cfg->refresh_s * 1e6);
	while (!*rs->stop && !livecap_over(lc)) {
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
			if (ui_turn(dash, pkts, open, now, refresh, &last_draw) == UI_QUIT) {
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

/* The live capture's own lines: what libpcap received and dropped, per interface when several. */
static void live_summary(const struct plan *p, const struct run_info *run)
{
	fprintf(stderr, "iwscope: %lld packets received by the capture, %lld dropped (%s); "
	        "the capture waited %.1f ms at most\n", (long long)run->pcap_received,
	        (long long)run->pcap_dropped, p->options, livecap_longest_stall(p->lc) / 1000.0);
	for (unsigned i = 0; i < p->nlive; i++)
		if (capture_live_loopback(p->cfg->ifaces[i]))
			fprintf(stderr, "iwscope: %s is a loopback interface: the kernel counts each of its "
			        "packets twice (as sent and as received), libpcap hands over one copy, so "
			        "'received' is twice the packets analysed\n", p->cfg->ifaces[i]);
	for (unsigned i = 0; i < p->nlive && p->nlive > 1; i++) {
		int64_t received, dropped;
		livecap_capture_counts(p->lc, i, &received, &dropped);
		fprintf(stderr, "%s%s: %lld received, %lld dropped%s", i ? "; " : "iwscope: ",
		        p->cfg->ifaces[i], (long long)received, (long long)dropped,
		        i + 1 == p->nlive ? "\n" : "");
	}
}

const struct source_kind source_live_kind = {
	.name = "live", .wanted = live_wanted, .streaming = true, .endless = true,
	.open = open_interfaces, .start = live_start, .loop = live_loop, .summary = live_summary,
};
