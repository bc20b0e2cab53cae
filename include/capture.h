/* capture: capture files (pcap, pcapng, a pipe), several as one continuous capture merged by
 * packet time, and their replay at the capture's pace. Live interfaces: capture_live.h. */
#ifndef IWSCOPE_CAPTURE_H
#define IWSCOPE_CAPTURE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One captured frame; returns 0 to go on, -1 to stop the capture (a sink failed). */
typedef int (*capture_fn)(void *arg, int dlt, const uint8_t *data, uint32_t caplen,
                          uint32_t wirelen, uint64_t ts_us);

/* Called for standard input that is a pipe every CAPTURE_IDLE_MS at most: silent when
 * nothing came in that time, else between reads of a trickle; non-zero stops reading (as at
 * the end of input). */
typedef int (*capture_idle_fn)(void *arg, bool silent);

/* The frame after the one about to be handed over, when the reader already has it (a capture
 * file read in place): for prefetching, nothing else. */
typedef void (*capture_peek_fn)(void *arg, int dlt, const uint8_t *data, uint32_t caplen);

struct capture_opts {
	const char *const *files;  /* "-" is standard input */
	unsigned nfiles;
	const char *filter;        /* BPF expression or NULL */
	uint64_t max_packets;      /* 0 = all */
	capture_idle_fn idle;      /* a pipe on standard input: called in its silences */
	void *idle_arg;
	/* a file that could not be opened (said on stderr): its path and why, with idle_arg */
	void (*skipped)(void *arg, const char *path, const char *why);
	unsigned *current_file;    /* set to files' index of each frame before fn sees it */
	capture_peek_fn peek;      /* or NULL; with the callback's arg */
};

/* Whether standard input is a pipe or a socket (read as it comes, as live capture is). */
bool capture_stdin_is_pipe(void);

struct capture_result {
	uint64_t packets;          /* frames handed to the callback */
	unsigned files_failed;     /* cut short: an error after the file was opened */
	unsigned files_skipped;    /* could not be opened (unreadable, not a capture, unsupported) */
	int filter_error;          /* the filter did not compile: a usage error */
	int stopped;               /* the callback asked to stop */
};

/* Reads the files as one capture, calling fn for each frame that passes the filter, until the
 * end, max_packets, *stop or fn's -1. Several files are merged by packet time, as mergecap
 * does: the frame handed on is always the earliest of every file's next one (of two at the
 * same time, the earlier file's on the command line), so files that follow one another are
 * read one after the other, and files that overlap (a tap's two directions) interleave. Each
 * frame goes with its own file's (or pcapng interface's) link type. Problems with a file are
 * printed as one line on stderr naming the file; the other files are still read (a filter
 * error stops everything). */
void capture_files(const struct capture_opts *o, capture_fn fn, void *arg,
                   volatile sig_atomic_t *stop, struct capture_result *res);

/* One capture file read record by record (pcap or pcapng; "-" is standard input). */
typedef struct capture_file capture_file;

/* One frame: data stays valid until the next capture_file_next. */
struct capture_rec {
	const uint8_t *data;
	uint32_t caplen, len;
	uint64_t ts_us;
	int dlt;                   /* its link type (a pcapng file's interfaces may differ) */
	const uint8_t *next;       /* the next record's frame when already in the read buffer (a
	                            * classic pcap file read in place), else NULL */
	uint32_t next_caplen;
};

/* Opens a capture file of a supported link type with filter (or NULL, borrowed until the
 * close) installed. A pcapng file is read by pcapng.c (interfaces of several link types; the
 * filter compiled for each), anything else by libpcap. NULL after one line on stderr naming
 * the file, why (may be NULL) holding what it said after the name ("unsupported link type ...",
 * "gzip-compressed ..."); *filter_error is set when the filter was the problem. */
capture_file *capture_file_open(const char *path, const char *filter, int *filter_error,
                                char *why, size_t whylen);

/* The next frame that passes the filter: 1 with *r filled, 0 at the end of the file, -1 on an
 * error (capture_file_error says what, in libpcap's words). */
int capture_file_next(capture_file *cf, struct capture_rec *r);
/* The link type of the file (of a pcapng file: of its first interface). */
int capture_file_dlt(const capture_file *cf);
/* Whether it is a regular file (one that can be opened again; not a pipe, not stdin). */
bool capture_file_regular(const capture_file *cf);
/* For standard input that is a pipe: fn is called after each CAPTURE_IDLE_MS of silence. */
void capture_file_idle(capture_file *cf, capture_idle_fn fn, void *arg);
const char *capture_file_error(capture_file *cf);
void capture_file_close(capture_file *cf);

/* Replays files (merged by packet time, as capture_files) at their own pace times speed (0 = as
 * fast as possible), in steps, so a dashboard can refresh between them. */
typedef struct capture_replay capture_replay;
capture_replay *capture_replay_open(const struct capture_opts *o, double speed);
/* Silences in the capture longer than max_gap_us (capture time) are cut to max_gap_us when
 * replayed, as tcpreplay's --maxsleep does (0: never): a capture that jumps years would
 * otherwise freeze the replay. The flows still see the packets' own times. */
void capture_replay_max_gap(capture_replay *r, uint64_t max_gap_us);
/* How many silences were cut so far, and the capture time they skipped. */
void capture_replay_skipped(const capture_replay *r, unsigned *gaps, uint64_t *skipped_us);
/* Delivers the packets due by now (waiting at most timeout_ms). Returns packets delivered,
 * 0 when none were due, -1 at the end of the last file or when fn asked to stop. */
int capture_replay_step(capture_replay *r, int timeout_ms, capture_fn fn, void *arg);
void capture_replay_pause(capture_replay *r, int paused);
/* Files cut short, and files that could not be opened (already reported on stderr). */
unsigned capture_replay_failed(const capture_replay *r);
unsigned capture_replay_skipped_files(const capture_replay *r);
void capture_replay_close(capture_replay *r);

/* Checks that a BPF expression compiles (for Ethernet); 0, or -1 with libpcap's reason in err. */
int capture_check_filter(const char *filter, char *err, size_t errlen);

/* libpcap's version string. */
const char *capture_pcap_version(void);

/* For capture_live.c, which opens interfaces with the same checks as files: a link type's
 * name and description from libpcap ("EN10MB [Ethernet] (DLT 1)"), and filter compiled and
 * installed on a libpcap handle (kept in *keep when keep is not NULL, else freed): 0, or -1
 * with libpcap's reason in err. */
struct pcap;
struct bpf_program;
void capture_link_name(int dlt, char *buf, size_t len);
int capture_set_filter(struct pcap *pc, struct bpf_program *keep, const char *filter, char *err,
                       size_t errlen);

/* Live interfaces: capture_live.h, here so that every source is one include away. */
#include "capture_live.h"

#endif
