/* cli: the capture command's command line -> one configuration, read-only after parsing. */
#ifndef IWSCOPE_CLI_H
#define IWSCOPE_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

#define MAX_FILES 1024

struct config {
	const char *files[MAX_FILES];
	unsigned nfiles;
	const char *db;        /* -o: SQLite file or postgresql:// URI */
	char db_shown[512];    /* db as messages show it (no password) */
	const char *spool;     /* --spool: where a PostgreSQL sink keeps rows the server has not taken */
	char spool_default[1024];
	char probe[PROBE_MAX]; /* --probe */
	uint64_t count;
	char *filter;          /* owned */
	bool quiet, verbose, json, no_dpi, force_timing;
	uint32_t flow_cap;
	unsigned dpi_packets;  /* packets nDPI sees per flow at most */
	const char *iface;     /* -i: live capture (the first interface) */
	const char *ifaces[LIVE_IFACES_MAX]; /* every -i: several are one capture (a tap's ports) */
	unsigned nifaces;
	int snaplen, buffer_kib, no_promisc;
	const char *user;      /* -Z: drop root to this user */
	double refresh_s;      /* -d: dashboard refresh */
	double replay_speed;   /* --replay[=SPEED]: 1 = the capture's own pace, 0 = off */
	double max_gap_s;      /* --max-gap: longest silence a replay waits out (0: any) */
	bool replay, no_ui, no_color;
	bool append, replace;  /* --append, --replace: a source analysed here before */
	unsigned threads;      /* --threads: files: 2 puts nDPI and the sinks on a second thread;
	                        * live: analysis workers beside the capture thread */
};

/* Fills cfg from argv (cfg zeroed first by the caller). 0, or the exit status to end with
 * after a usage error (said in one line); --help and --version print and exit 0. */
int cli_parse(int argc, char **argv, struct config *cfg);

#endif
