/* capture: libpcap sources. Several files are one continuous capture. */
#ifndef IWSCOPE_CAPTURE_H
#define IWSCOPE_CAPTURE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/* One captured frame; returns 0 to go on, -1 to stop the capture (a sink failed). */
typedef int (*capture_fn)(void *arg, int dlt, const uint8_t *data, uint32_t caplen,
                          uint32_t wirelen, uint64_t ts_us);

struct capture_opts {
	const char *const *files;  /* "-" is standard input */
	unsigned nfiles;
	const char *filter;        /* BPF expression or NULL */
	uint64_t max_packets;      /* 0 = all */
};

struct capture_result {
	uint64_t packets;          /* frames handed to the callback */
	unsigned files_failed;     /* unreadable, unsupported or cut short */
	int filter_error;          /* the filter did not compile: a usage error */
	int stopped;               /* the callback asked to stop */
};

/* Reads every file in order, calling fn for each frame that passes the filter, until the
 * end, max_packets, *stop or fn's -1. Problems with a file are printed as one line on stderr
 * naming the file; the next file is still read (a filter error stops everything). */
void capture_files(const struct capture_opts *o, capture_fn fn, void *arg,
                   volatile sig_atomic_t *stop, struct capture_result *res);

/* Checks that a BPF expression compiles (for Ethernet); 0, or -1 with libpcap's reason in err. */
int capture_check_filter(const char *filter, char *err, size_t errlen);

/* libpcap's version string. */
const char *capture_pcap_version(void);

#endif
