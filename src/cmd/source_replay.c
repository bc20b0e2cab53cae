/* The replay source (--replay): capture files at the capture's own pace (or --speed times
 * it), long silences cut (--max-gap), on this thread beside the dashboard. */
#include <stdio.h>
#include <time.h>

#include "capture.h"
#include "clock.h"
#include "engine.h"
#include "exitcode.h"
#include "source.h"
#include "ui.h"

static bool replay_wanted(const struct plan *p) { return p->cfg->replay; }

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

/* The replay loop: packets in steps of at most 100 ms, sinks committed every second, the
 * dashboard redrawn every refresh interval. */
static int replay_stream(const struct config *cfg, struct run_state *rs, capture_replay *replay,
                  ui *dash)
{
	uint64_t last_tick = clock_mono_us(), last_draw = 0;
	unsigned gaps_noted = 0;
	uint64_t refresh = (uint64_t)(cfg->refresh_s * 1e6);
	bool ended = false;
	while (!*rs->stop) {
		int n = ended ? 0 : capture_replay_step(replay, 100, analyse_packet, rs);
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
			enum ui_action a = ui_turn(dash, engine_packets(rs->eng), engine_open_flows(rs->eng),
			                           now, refresh, &last_draw);
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

/* The replay: the files at the capture's pace (replay_stream), then what idle time it cut. */
static int replay_loop(struct plan *p, struct run_state *rs)
{
	const struct config *cfg = p->cfg;
	struct capture_opts co = { .files = p->files, .nfiles = p->nfiles, .filter = cfg->filter,
		                   .max_packets = cfg->count, .idle = analyse_idle, .idle_arg = rs,
		                   .skipped = analyse_skipped, .current_file = &rs->cur_file };
	capture_replay *replay = capture_replay_open(&co, cfg->replay_speed);
	if (!replay) {
		fprintf(stderr, "iwscope: out of memory\n");
		rs->sink_failed = 1;
		return EXIT_RUNTIME;
	}
	capture_replay_max_gap(replay, (uint64_t)(cfg->max_gap_s * 1e6));
	int rc = replay_stream(cfg, rs, replay, p->dash);
	char d[48];
	unsigned gaps = skipped_idle(replay, d, sizeof(d));
	rs->cr.files_failed = capture_replay_failed(replay);
	rs->cr.files_skipped = capture_replay_skipped_files(replay);
	if (gaps && !cfg->quiet && !p->dash) { /* the dashboard said it on screen */
		fprintf(stderr, "iwscope: replay skipped %s of idle capture (%u gap%s over %g s)\n",
		        d, gaps, gaps == 1 ? "" : "s", cfg->max_gap_s);
	}
	capture_replay_close(replay);
	return rc;
}

const struct source_kind source_replay_kind = {
	.name = "replay", .wanted = replay_wanted, .streaming = true, .open = plan_check_files,
	.start = plan_start_engine, .loop = replay_loop,
};
