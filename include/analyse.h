/* analyse: one run of the capture command: opens the source and the sinks, nDPI, drops
 * privileges, runs the capture (files, live, replay, a pipe), and records the run. */
#ifndef IWSCOPE_ANALYSE_H
#define IWSCOPE_ANALYSE_H

#include "cli.h"

/* The run cfg describes. The exit status: 0, EXIT_USAGE or EXIT_RUNTIME (said on stderr). */
int analyse_run(struct config *cfg);

#endif
