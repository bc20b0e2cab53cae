/* iwscope: the subcommands (report, plot, merge, schema) and the capture command. */
#include <stdlib.h>
#include <string.h>

#include "analyse.h"
#include "merge.h"
#include "plot.h"
#include "report.h"

/* A password in a URI on the command line (postgresql://, clickhouse://) is starred out of
 * the process list (/proc/PID/cmdline is argv's memory): the argument is copied first, and the
 * copy is what the commands read. */
static void hide_passwords(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		char *scheme = strstr(argv[i], "://");
		char *at = scheme ? strchr(scheme + 3, '@') : NULL;
		char *colon = at ? memchr(scheme + 3, ':', (size_t)(at - scheme - 3)) : NULL;
		char *copy = colon && at > colon + 1 ? strdup(argv[i]) : NULL;
		if (!copy)
			continue;
		memset(colon + 1, '*', (size_t)(at - colon - 1));
		argv[i] = copy; /* lives as long as the process */
	}
}

int main(int argc, char **argv)
{
	hide_passwords(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "report"))
		return report_main(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "plot"))
		return plot_main(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "merge"))
		return merge_main(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "schema"))
		return schema_main(argc - 1, argv + 1);
	struct config cfg;
	memset(&cfg, 0, sizeof(cfg));
	int rc = cli_parse(argc, argv, &cfg);
	if (rc == 0)
		rc = analyse_run(&cfg);
	free(cfg.filter);
	return rc;
}
