/* capture_live: one live interface through libpcap: a TPACKET_V3 ring (not immediate mode),
 * non-blocking, polled on its selectable descriptor, its frames handed to a capture_fn. */
#include "capture_live.h"

#include <net/if.h>
#include <pcap/pcap.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>

#include "config.h"
#include "decode.h"

struct capture_live {
	pcap_t *pc;
	const char *name;        /* the interface (borrowed from the options) */
	int dlt;
	int fd;
	int snaplen, buffer_kib; /* as asked of libpcap: -s and -B, or the defaults */
};

const char *capture_live_name(const capture_live *c) { return c->name; }

bool capture_live_loopback(const char *iface)
{
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", iface);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	bool lo = fd >= 0 && ioctl(fd, SIOCGIFFLAGS, &ifr) == 0 && (ifr.ifr_flags & IFF_LOOPBACK);
	if (fd >= 0)
		close(fd);
	return lo;
}

void capture_live_settings(const capture_live *c, int *snaplen, int *buffer_kib)
{
	*snaplen = c->snaplen;
	*buffer_kib = c->buffer_kib;
}

capture_live *capture_live_open(const struct live_opts *o, char *err, size_t errlen)
{
	char errbuf[PCAP_ERRBUF_SIZE] = "";
	capture_live *c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->pc = pcap_create(o->iface, errbuf);
	if (!c->pc) {
		snprintf(err, errlen, "%s: %s", o->iface, errbuf);
		free(c);
		return NULL;
	}
	c->name = o->iface;
	c->snaplen = o->snaplen > 0 ? o->snaplen : LIVE_SNAPLEN;
	c->buffer_kib = o->buffer_kib > 0 ? o->buffer_kib : LIVE_BUFFER_KIB;
	pcap_set_snaplen(c->pc, c->snaplen);
	pcap_set_promisc(c->pc, o->promisc);
	/* Not immediate mode: libpcap then asks Linux for TPACKET_V3, whose ring holds frames
	 * packed one after another, where immediate mode's TPACKET_V2 gives each frame a slot of
	 * the whole snaplen (a 128 MiB ring: 14,000 frames, 35 ms at 400k packets/s). Blocks are
	 * handed over when full or after LIVE_BLOCK_MS. */
	pcap_set_immediate_mode(c->pc, 0);
	pcap_set_timeout(c->pc, LIVE_BLOCK_MS);
	pcap_set_buffer_size(c->pc, c->buffer_kib * 1024);
	int rc = pcap_activate(c->pc);
	if (rc < 0) {
		const char *why = pcap_statustostr(rc);
		const char *detail = pcap_geterr(c->pc);
		if (rc == PCAP_ERROR_NO_SUCH_DEVICE)
			snprintf(err, errlen, "%s: no such interface", o->iface);
		else if (rc == PCAP_ERROR_PERM_DENIED)
			snprintf(err, errlen, "%s: permission denied (capturing needs root or CAP_NET_RAW)",
			         o->iface);
		else
			snprintf(err, errlen, "%s: %s%s%s", o->iface, why, detail[0] ? ": " : "", detail);
		pcap_close(c->pc);
		free(c);
		return NULL;
	}
	c->dlt = pcap_datalink(c->pc);
	if (!decode_link_supported(c->dlt)) {
		char name[160];
		capture_link_name(c->dlt, name, sizeof(name));
		snprintf(err, errlen, "%s: unsupported link type %s", o->iface, name);
		pcap_close(c->pc);
		free(c);
		return NULL;
	}
	if (capture_set_filter(c->pc, NULL, o->filter ? o->filter : LIVE_FILTER_DEFAULT, err, errlen) != 0) {
		pcap_close(c->pc);
		free(c);
		return NULL;
	}
	pcap_setnonblock(c->pc, 1, errbuf);
	c->fd = pcap_get_selectable_fd(c->pc);
	return c;
}

struct dispatch_ctx {
	capture_fn fn;
	void *arg;
	int dlt;
	int stop;
};

static void on_live_packet(u_char *user, const struct pcap_pkthdr *h, const u_char *data)
{
	struct dispatch_ctx *d = (struct dispatch_ctx *)user;
	if (d->stop)
		return;
	uint64_t ts = (uint64_t)h->ts.tv_sec * 1000000u + (uint64_t)h->ts.tv_usec;
	if (d->fn(d->arg, d->dlt, data, h->caplen, h->len, ts) != 0)
		d->stop = 1;
}

int capture_live_wait(capture_live *const *cs, unsigned n, int timeout_ms)
{
	struct pollfd pfd[LIVE_IFACES_MAX];
	unsigned k = 0;
	for (unsigned i = 0; i < n && k < LIVE_IFACES_MAX; i++)
		if (cs[i]->fd >= 0)
			pfd[k++] = (struct pollfd){ cs[i]->fd, POLLIN, 0 };
	if (!k)
		return 1; /* nothing to wait on: dispatch looks */
	return poll(pfd, k, timeout_ms) > 0;
}

int capture_live_step(capture_live *c, int timeout_ms, capture_fn fn, void *arg, char *err,
                      size_t errlen)
{
	/* read after a quiet wait too: a deleted interface first reports "down" (an ENETDOWN
	 * that libpcap takes and clears while the device still exists), and then nothing wakes the
	 * poll; only a read of libpcap's sees, on a later quiet wait, that it has disappeared */
	capture_live_wait(&c, 1, timeout_ms);
	return capture_live_dispatch(c, fn, arg, err, errlen);
}

int capture_live_dispatch(capture_live *c, capture_fn fn, void *arg, char *err, size_t errlen)
{
	struct dispatch_ctx d = { fn, arg, c->dlt, 0 };
	int n = pcap_dispatch(c->pc, -1, on_live_packet, (u_char *)&d);
	if (n < 0 && n != PCAP_ERROR_BREAK) {
		snprintf(err, errlen, "%s", pcap_geterr(c->pc));
		return -1;
	}
	return d.stop ? -1 : (n < 0 ? 0 : n);
}

void capture_live_stats(capture_live *c, int64_t *received, int64_t *dropped)
{
	struct pcap_stat st;
	if (pcap_stats(c->pc, &st) == 0) {
		*received = st.ps_recv;
		*dropped = (int64_t)st.ps_drop + st.ps_ifdrop;
	}
}

int capture_live_dlt(const capture_live *c) { return c->dlt; }

void capture_live_close(capture_live *c)
{
	if (!c)
		return;
	pcap_close(c->pc);
	free(c);
}
