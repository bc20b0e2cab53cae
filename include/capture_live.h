/* capture_live: one live interface through libpcap (TPACKET_V3 ring, non-blocking), the handle
 * livecap.c's capture thread and the single-threaded run read. */
#ifndef IWSCOPE_CAPTURE_LIVE_H
#define IWSCOPE_CAPTURE_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture.h" /* capture_fn */

/* A live interface (libpcap, TPACKET_V3 ring, non-blocking). */
typedef struct capture_live capture_live;

struct live_opts {
	const char *iface;    /* borrowed until the capture is closed */
	int snaplen;          /* 0 = LIVE_SNAPLEN */
	int buffer_kib;       /* 0 = LIVE_BUFFER_KIB */
	const char *filter;   /* NULL = LIVE_FILTER_DEFAULT (config.h) */
	int promisc;
};

/* Opens and activates iface. NULL with one line in err (no such device, no permission...). */
capture_live *capture_live_open(const struct live_opts *o, char *err, size_t errlen);

/* Waits up to timeout_ms for packets and hands every one available to fn. Returns the number
 * of packets, or -1 on a capture error (message in err) or when fn asked to stop. */
int capture_live_step(capture_live *c, int timeout_ms, capture_fn fn, void *arg, char *err,
                      size_t errlen);

/* Waits up to timeout_ms until one of n captures (at most LIVE_IFACES_MAX) has packets: 1, or
 * 0 when none came. */
int capture_live_wait(capture_live *const *cs, unsigned n, int timeout_ms);

/* Hands every packet c holds now to fn, without waiting: the number of packets, or -1 as
 * capture_live_step. */
int capture_live_dispatch(capture_live *c, capture_fn fn, void *arg, char *err, size_t errlen);

/* The interface's name, as given in live_opts. */
const char *capture_live_name(const capture_live *c);

/* The interface's link type (DLT_*). */
int capture_live_dlt(const capture_live *c);

/* libpcap's counts: packets received and dropped by the kernel / interface. */
void capture_live_stats(capture_live *c, int64_t *received, int64_t *dropped);
void capture_live_close(capture_live *c);
/* The snaplen and kernel buffer the capture was opened with. */
void capture_live_settings(const capture_live *c, int *snaplen, int *buffer_kib);

/* Whether iface is a loopback interface: Linux hands a packet socket each of its packets twice
 * (as sent and as received); libpcap keeps the received copy, but its received count (the
 * kernel's) has both, so it is twice the packets analysed. */
bool capture_live_loopback(const char *iface);

#endif
