/* exitcode: the exit status of every subcommand (capture, report, plot, merge, schema). */
#ifndef IWSCOPE_EXITCODE_H
#define IWSCOPE_EXITCODE_H

#define EXIT_USAGE 1   /* a usage error: one line, and where the help is */
#define EXIT_RUNTIME 2 /* a capture, database or output failure */
#define EXIT_SKIPPED 3 /* the capture command: some input files skipped (said, listed in
                        * runs.skipped), every other one analysed */

#endif
