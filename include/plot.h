/* plot: SVG charts from an iwscope database (the `iwscope plot` command), written by iwscope
 * itself: no run-time dependency. */
#ifndef IWSCOPE_PLOT_H
#define IWSCOPE_PLOT_H

/* Runs `iwscope plot DB -o DIR` (argv[0] is "plot"); returns the exit status. */
int plot_main(int argc, char **argv);

#endif
