/* report: summaries of an iwscope database (the `iwscope report` command). */
#ifndef IWSCOPE_REPORT_H
#define IWSCOPE_REPORT_H

/* Runs `iwscope report` with its arguments (argv[0] is "report"); returns the exit status. */
int report_main(int argc, char **argv);

#endif
