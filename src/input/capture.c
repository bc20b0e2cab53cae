/* capture: libpcap sources: capture files (pcap, pcapng; several are one continuous capture; a
 * pipe on standard input read as it comes), live interfaces, and replay at the capture's pace. */
#define _GNU_SOURCE /* fopencookie: a pipe on standard input, read with a timeout */
#include "capture.h"

#include <errno.h>
#include <pcap/pcap.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "decode.h"
#include "fileread.h"

const char *capture_pcap_version(void) { return pcap_lib_version(); }

int capture_check_filter(const char *filter, char *err, size_t errlen)
{
	pcap_t *pc = pcap_open_dead(DLT_EN10MB, 262144);
	if (!pc) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	struct bpf_program prog;
	int rc = pcap_compile(pc, &prog, filter, 1, PCAP_NETMASK_UNKNOWN);
	if (rc != 0)
		snprintf(err, errlen, "%s", pcap_geterr(pc));
	else
		pcap_freecode(&prog);
	pcap_close(pc);
	return rc == 0 ? 0 : -1;
}

static void link_name(int dlt, char *buf, size_t len)
{
	const char *name = pcap_datalink_val_to_name(dlt);
	const char *desc = pcap_datalink_val_to_description(dlt);
	snprintf(buf, len, "%s%s%s%s (DLT %d)", name ? name : "unknown", desc ? " [" : "",
	         desc ? desc : "", desc ? "]" : "", dlt);
}

struct capture_file {
	pcap_t *pc;
	fileread *m;               /* regular file, or NULL (stdin, a pipe) */
	bool direct;               /* records come from fileread_next until it hands over */
	bool has_prog;
	struct bpf_program prog;   /* the filter, for records read in place */
	int dlt;
	struct pipe_in *pipe;      /* standard input that is a pipe or a socket, else NULL */
};

/* Standard input that is a pipe or a socket (tcpdump -w - | iwscope -r -): read as it comes,
 * with a call to idle() at least every CAPTURE_IDLE_MS (silent or not), so the sinks commit while
 * the writer waits or trickles (a regular file never waits). */
struct pipe_in {
	int fd;
	capture_idle_fn idle;
	void *arg;
	uint64_t last_idle_us;  /* monotonic time of the last call to idle */
};

static ssize_t pipe_read(void *cookie, char *buf, size_t len)
{
	struct pipe_in *p = cookie;
	for (;;) {
		/* a trickle that never falls silent still lets the sinks commit */
		if (p->idle && clock_mono_us() - p->last_idle_us >= CAPTURE_IDLE_MS * 1000u) {
			p->last_idle_us = clock_mono_us();
			if (p->idle(p->arg, false) != 0)
				return 0;
		}
		struct pollfd pfd = { p->fd, POLLIN, 0 };
		int r = poll(&pfd, 1, CAPTURE_IDLE_MS);
		if (r > 0) {
			ssize_t n = read(p->fd, buf, len);
			if (n < 0 && errno == EINTR && p->idle)
				continue;
			return n;
		}
		if (r < 0 && errno != EINTR)
			return -1;
		if (!p->idle) {
			if (r < 0)
				return -1; /* a signal, and nobody to ask: as read(2) would say */
			continue;
		}
		/* silence, or a signal: the caller may commit, or ask to stop (the end of input) */
		p->last_idle_us = clock_mono_us();
		if (p->idle(p->arg, r == 0) != 0)
			return 0;
	}
}

static int pipe_close(void *cookie)
{
	free(cookie);
	return 0;
}

bool capture_stdin_is_pipe(void)
{
	struct stat st;
	return fstat(STDIN_FILENO, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

static FILE *pipe_open(struct pipe_in **out)
{
	struct pipe_in *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->fd = STDIN_FILENO;
	cookie_io_functions_t io = { .read = pipe_read, .close = pipe_close };
	FILE *f = fopencookie(p, "r", io);
	if (!f) {
		free(p);
		return NULL;
	}
	*out = p;
	return f;
}

void capture_file_idle(capture_file *cf, capture_idle_fn fn, void *arg)
{
	if (cf && cf->pipe) {
		cf->pipe->idle = fn;
		cf->pipe->arg = arg;
		cf->pipe->last_idle_us = clock_mono_us();
	}
}

/* Compiles filter for cf's link type and installs it in libpcap (which filters what it reads)
 * and keeps it for the records read in place; 0, or -1 with libpcap's reason in err. */
static int set_filter(pcap_t *pc, struct bpf_program *keep, const char *filter, char *err,
                      size_t errlen)
{
	struct bpf_program prog;
	if (pcap_compile(pc, &prog, filter, 1, PCAP_NETMASK_UNKNOWN) != 0) {
		snprintf(err, errlen, "filter \"%s\": %s", filter, pcap_geterr(pc));
		return -1;
	}
	int rc = pcap_setfilter(pc, &prog);
	if (rc != 0)
		snprintf(err, errlen, "filter \"%s\": %s", filter, pcap_geterr(pc));
	if (rc == 0 && keep)
		*keep = prog;
	else
		pcap_freecode(&prog);
	return rc == 0 ? 0 : -1;
}

void capture_file_close(capture_file *cf)
{
	if (!cf)
		return;
	if (cf->has_prog)
		pcap_freecode(&cf->prog);
	if (cf->pc)
		pcap_close(cf->pc); /* closes the stream, and the mapping with it */
	free(cf);
}

capture_file *capture_file_open(const char *path, const char *filter, int *filter_error)
{
	capture_file *cf = calloc(1, sizeof(*cf));
	if (!cf) {
		fprintf(stderr, "iwscope: %s: out of memory\n", path);
		return NULL;
	}
	char errbuf[PCAP_ERRBUF_SIZE] = "";
	/* a regular file is read through fileread's buffer; a pipe or stdin through a large stdio
	 * buffer (one read(2) per CAPTURE_READ_BUF bytes, not stdio's 4 KiB) */
	FILE *f = strcmp(path, "-") ? fileread_open(path, &cf->m)
	          : capture_stdin_is_pipe() ? pipe_open(&cf->pipe) : NULL;
	if (!f) {
		cf->m = NULL;
		cf->pipe = NULL;
		f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
		if (!f) {
			fprintf(stderr, "iwscope: %s: %s\n", path, strerror(errno));
			free(cf);
			return NULL;
		}
		setvbuf(f, NULL, _IOFBF, CAPTURE_READ_BUF);
	}
	cf->pc = pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_MICRO, errbuf);
	if (!cf->pc) {
		fprintf(stderr, "iwscope: %s: %s\n", path, errbuf);
		if (f != stdin)
			fclose(f); /* a pipe's cookie with it */
		free(cf);
		return NULL;
	}
	cf->dlt = pcap_datalink(cf->pc);
	if (!decode_link_supported(cf->dlt)) {
		char name[160];
		link_name(cf->dlt, name, sizeof(name));
		fprintf(stderr, "iwscope: %s: unsupported link type %s\n", path, name);
		capture_file_close(cf);
		return NULL;
	}
	char err[512];
	if (filter) {
		if (set_filter(cf->pc, &cf->prog, filter, err, sizeof(err)) != 0) {
			fprintf(stderr, "iwscope: %s\n", err);
			*filter_error = 1;
			capture_file_close(cf);
			return NULL;
		}
		cf->has_prog = true;
	}
	cf->direct = cf->m && fileread_direct(cf->m, cf->dlt, pcap_snapshot(cf->pc));
	return cf;
}

int capture_file_dlt(const capture_file *cf) { return cf->dlt; }

const char *capture_file_error(capture_file *cf) { return pcap_geterr(cf->pc); }

int capture_file_next(capture_file *cf, struct capture_rec *r)
{
	while (cf->direct) {
		int rc = fileread_next(cf->m, r);
		if (rc == 0)
			return 0;
		if (rc < 0) {
			cf->direct = false; /* libpcap reads on from this record */
			break;
		}
		if (cf->has_prog) {
			struct pcap_pkthdr h = { .caplen = r->caplen, .len = r->len };
			if (!pcap_offline_filter(&cf->prog, &h, r->data))
				continue;
		}
		return 1;
	}
	struct pcap_pkthdr *h;
	const u_char *data;
	int rc = pcap_next_ex(cf->pc, &h, &data);
	if (rc == 1) {
		r->data = data;
		r->caplen = h->caplen;
		r->len = h->len;
		r->ts_us = (uint64_t)h->ts.tv_sec * 1000000u + (uint64_t)h->ts.tv_usec;
		return 1;
	}
	return rc == PCAP_ERROR_BREAK ? 0 : -1;
}

/* Reads one file; returns 0 when read to its end, -1 on a problem already reported. */
static int read_file(const char *path, const struct capture_opts *o, capture_fn fn, void *arg,
                     volatile sig_atomic_t *stop, struct capture_result *res)
{
	capture_file *cf = capture_file_open(path, o->filter, &res->filter_error);
	if (!cf)
		return -1;
	capture_file_idle(cf, o->idle, o->idle_arg);
	int rc = 0;
	for (;;) {
		if (*stop || (o->max_packets && res->packets >= o->max_packets))
			break;
		struct capture_rec r;
		int got = capture_file_next(cf, &r);
		if (got == 1) {
			res->packets++;
			if (fn(arg, cf->dlt, r.data, r.caplen, r.len, r.ts_us) != 0) {
				res->stopped = 1;
				break;
			}
			continue;
		}
		if (got < 0 && !*stop) { /* a stop mid-record (SIGINT on a pipe) is no error */
			fprintf(stderr, "iwscope: %s: %s (after %llu packets)\n", path, capture_file_error(cf),
			        (unsigned long long)res->packets);
			rc = -1;
		}
		break;
	}
	capture_file_close(cf);
	return rc;
}

void capture_files(const struct capture_opts *o, capture_fn fn, void *arg,
                   volatile sig_atomic_t *stop, struct capture_result *res)
{
	memset(res, 0, sizeof(*res));
	for (unsigned i = 0; i < o->nfiles && !*stop && !res->stopped; i++) {
		if (o->max_packets && res->packets >= o->max_packets)
			break;
		if (read_file(o->files[i], o, fn, arg, stop, res) != 0) {
			res->files_failed++;
			if (res->filter_error)
				break;
		}
	}
}

struct capture_live {
	pcap_t *pc;
	int dlt;
	int fd;
	int snaplen, buffer_kib; /* as asked of libpcap: -s and -B, or the defaults */
};

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
		link_name(c->dlt, name, sizeof(name));
		snprintf(err, errlen, "%s: unsupported link type %s", o->iface, name);
		pcap_close(c->pc);
		free(c);
		return NULL;
	}
	if (set_filter(c->pc, NULL, o->filter ? o->filter : "tcp", err, errlen) != 0) {
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

int capture_live_step(capture_live *c, int timeout_ms, capture_fn fn, void *arg, char *err,
                      size_t errlen)
{
	struct pollfd pfd = { c->fd, POLLIN, 0 };
	if (c->fd >= 0 && poll(&pfd, 1, timeout_ms) <= 0)
		return 0;
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

struct capture_replay {
	struct capture_opts o;
	double speed;
	unsigned file;          /* index of the next file to open */
	capture_file *cf;       /* the open file, or NULL */
	unsigned failed;
	int paused;
	bool held;              /* rec is read but not yet due */
	struct capture_rec rec;
	uint64_t first_ts;      /* capture time of the first packet */
	uint64_t start_us;      /* monotonic time it was replayed at (shifted by pauses) */
	uint64_t paused_us;
	int started;
	uint64_t max_gap_us;    /* longest silence replayed as it was (0: no limit) */
	uint64_t last_ts;       /* capture time of the previous packet */
	uint64_t skipped_us;    /* capture time cut out of silences so far */
	unsigned gaps;          /* silences cut */
};

void capture_replay_max_gap(capture_replay *r, uint64_t max_gap_us) { r->max_gap_us = max_gap_us; }

void capture_replay_skipped(const capture_replay *r, unsigned *gaps, uint64_t *skipped_us)
{
	*gaps = r->gaps;
	*skipped_us = r->skipped_us;
}

capture_replay *capture_replay_open(const struct capture_opts *o, double speed)
{
	capture_replay *r = calloc(1, sizeof(*r));
	if (r) {
		r->o = *o;
		r->speed = speed;
	}
	return r;
}

/* Opens the next readable file; 0, or -1 when none is left. */
static int replay_next_file(capture_replay *r)
{
	while (r->file < r->o.nfiles) {
		int filter_error = 0;
		r->cf = capture_file_open(r->o.files[r->file++], r->o.filter, &filter_error);
		if (r->cf)
			return 0;
		r->failed++;
	}
	return -1;
}

void capture_replay_pause(capture_replay *r, int paused)
{
	if (paused == r->paused)
		return;
	if (paused) {
		r->paused_us = clock_mono_us();
	} else if (r->started) { /* shift the start by the pause */
		r->start_us += clock_mono_us() - r->paused_us;
	}
	r->paused = paused;
}

int capture_replay_step(capture_replay *r, int timeout_ms, capture_fn fn, void *arg)
{
	if (r->paused) {
		struct timespec ts = { 0, (long)timeout_ms * 1000000L };
		nanosleep(&ts, NULL);
		return 0;
	}
	int n = 0;
	uint64_t deadline = clock_mono_us() + (uint64_t)timeout_ms * 1000u;
	for (;;) {
		if (!r->held) {
			if (!r->cf && replay_next_file(r) != 0)
				return n ? n : -1;
			int rc = capture_file_next(r->cf, &r->rec);
			if (rc != 1) {
				if (rc < 0) {
					fprintf(stderr, "iwscope: %s: %s\n", r->o.files[r->file - 1], capture_file_error(r->cf));
					r->failed++;
				}
				capture_file_close(r->cf);
				r->cf = NULL;
				continue;
			}
			r->held = true;
		}
		uint64_t ts = r->rec.ts_us;
		if (!r->started) {
			r->started = 1;
			r->first_ts = r->last_ts = ts;
			r->start_us = clock_mono_us();
		}
		if (r->max_gap_us && ts > r->last_ts && ts - r->last_ts > r->max_gap_us) {
			r->skipped_us += ts - r->last_ts - r->max_gap_us; /* counted once: last_ts moves */
			r->gaps++;
		}
		if (ts > r->last_ts)
			r->last_ts = ts;
		if (r->speed > 0) {
			uint64_t played = ts > r->first_ts + r->skipped_us ? ts - r->first_ts - r->skipped_us : 0;
			uint64_t due = r->start_us + (uint64_t)((double)played / r->speed);
			uint64_t now = clock_mono_us();
			if (due > now) {
				if (due > deadline) {
					uint64_t wait = deadline > now ? deadline - now : 0;
					struct timespec w = { (time_t)(wait / 1000000u), (long)(wait % 1000000u) * 1000L };
					nanosleep(&w, NULL);
					return n;
				}
				struct timespec w = { (time_t)((due - now) / 1000000u), (long)((due - now) % 1000000u) * 1000L };
				nanosleep(&w, NULL);
			}
		}
		if (fn(arg, r->cf->dlt, r->rec.data, r->rec.caplen, r->rec.len, ts) != 0)
			return -1;
		r->held = false;
		n++;
		if (clock_mono_us() >= deadline)
			return n;
	}
}

unsigned capture_replay_failed(const capture_replay *r) { return r->failed; }

void capture_replay_close(capture_replay *r)
{
	if (!r)
		return;
	capture_file_close(r->cf);
	free(r);
}
