/* iwscope: the subcommands (report, plot, merge, schema) and the capture command. */
#include <stdlib.h>
#include <string.h>

#include "analyse.h"
#include "merge.h"
#include "plot.h"
#include "report.h"

int main(int argc, char **argv)
{
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
