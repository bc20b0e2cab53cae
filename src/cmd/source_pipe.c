/* The pipe source (-r - with standard input a pipe, as tcpdump -w - | iwscope -r - gives it):
 * read as it comes, and written as live capture is (rows of open flows once their verdicts are
 * final, commits every second, WAL for readers); its silences run the flows' clock on
 * (analyse_idle). */
#include "capture.h"
#include "source.h"

static bool pipe_wanted(const struct plan *p)
{
	return p->from_stdin && capture_stdin_is_pipe();
}

const struct source_kind source_pipe_kind = {
	.name = "pipe", .wanted = pipe_wanted, .open = plan_check_files, .start = plan_start_engine,
	.loop = source_files_loop,
};
