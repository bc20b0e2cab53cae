/* The files source (-r): capture files read as fast as they can be, several merged by packet
 * time as one capture (capture.c); nDPI and the sinks on a second thread (stage.c) with
 * --threads > 1. */
#include "capture.h"
#include "engine.h"
#include "source.h"

static bool files_wanted(const struct plan *p)
{
	(void)p;
	return true; /* the last kind asked: whatever no other kind wants */
}

/* The frame after the next, for prefetching (engine_prefetch). */
static void on_peek(void *arg, int dlt, const uint8_t *data, uint32_t caplen)
{
	struct run_state *rs = arg;
	engine_prefetch(rs->eng, dlt, data, caplen);
}

int source_files_loop(struct plan *p, struct run_state *rs)
{
	struct capture_opts co = { .files = p->files, .nfiles = p->nfiles, .filter = p->cfg->filter,
		                   .max_packets = p->cfg->count, .idle = analyse_idle, .idle_arg = rs,
		                   .skipped = analyse_skipped, .current_file = &rs->cur_file,
		                   .peek = on_peek };
	capture_files(&co, analyse_packet, rs, rs->stop, &rs->cr);
	return 0;
}

const struct source_kind source_files_kind = {
	.name = "files", .wanted = files_wanted, .bulk = true, .open = plan_check_files,
	.start = plan_start_engine, .loop = source_files_loop,
};
