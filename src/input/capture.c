/* capture: packets from capture files (pcap through libpcap or in place, pcapng through
 * pcapng.c; several are one capture, merged by packet time; a pipe on standard input read as it
 * comes), and their replay at the capture's pace. Live interfaces: capture_live.c. */
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
#include "pcapng.h"

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

void capture_link_name(int dlt, char *buf, size_t len)
{
	const char *name = pcap_datalink_val_to_name(dlt);
	const char *desc = pcap_datalink_val_to_description(dlt);
	snprintf(buf, len, "%s%s%s%s (DLT %d)", name ? name : "unknown", desc ? " [" : "",
	         desc ? desc : "", desc ? "]" : "", dlt);
}

/* The filter compiled for one link type (a pcapng file's interfaces may differ). */
struct link_filter {
	int dlt;
	bool usable;               /* compiled; else this link type's frames are left out */
	struct bpf_program prog;
};

struct capture_file {
	pcap_t *pc;                /* libpcap reads the file; NULL when pcapng.c does */
	pcapng *ng;                /* a pcapng regular file, read by pcapng.c */
	FILE *stream;              /* with ng: fileread's stream (closing it frees m) */
	fileread *m;               /* regular file, or NULL (stdin, a pipe) */
	bool direct;               /* records come from fileread_next until it hands over */
	bool has_prog;
	struct bpf_program prog;   /* the filter, for records read in place */
	const char *filter;        /* with ng: the expression, compiled per link type */
	struct link_filter *links; /* with ng and a filter: one per link type met */
	unsigned nlinks, last_link;
	int dlt;                   /* the file's (pcapng: its first interface's) link type */
	struct pipe_in *pipe;      /* standard input that is a pipe or a socket, else NULL */
	char err[512];             /* a problem found here rather than by a reader */
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

/* Compiles filter for the handle's link type and installs it in libpcap (which filters what it
 * reads); a file keeps it for the records read in place. */
int capture_set_filter(pcap_t *pc, struct bpf_program *keep, const char *filter, char *err,
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
	for (unsigned i = 0; i < cf->nlinks; i++)
		if (cf->links[i].usable)
			pcap_freecode(&cf->links[i].prog);
	free(cf->links);
	pcapng_close(cf->ng);
	if (cf->pc)
		pcap_close(cf->pc); /* closes the stream, and the mapping with it */
	else if (cf->stream)
		fclose(cf->stream);
	free(cf);
}

/* The filter compiled for link type dlt, compiled the first time it is asked for (with a dead
 * handle: pcap_offline_filter runs it). A link type the decoder does not know may have no
 * filter (libpcap cannot compile for it): its frames are left out. NULL when the filter does
 * not compile for a link type iwscope decodes, with the reason in err. */
static struct link_filter *link_filter(capture_file *cf, int dlt, char *err, size_t errlen)
{
	if (cf->nlinks && cf->links[cf->last_link].dlt == dlt)
		return &cf->links[cf->last_link];
	for (unsigned i = 0; i < cf->nlinks; i++)
		if (cf->links[i].dlt == dlt) {
			cf->last_link = i;
			return &cf->links[i];
		}
	struct link_filter *grown = realloc(cf->links, (cf->nlinks + 1) * sizeof(*grown));
	if (!grown) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	cf->links = grown;
	struct link_filter *lf = &cf->links[cf->nlinks];
	lf->dlt = dlt;
	pcap_t *dead = pcap_open_dead(dlt, 262144);
	lf->usable = dead && pcap_compile(dead, &lf->prog, cf->filter, 1, PCAP_NETMASK_UNKNOWN) == 0;
	if (!lf->usable && decode_link_supported(dlt)) {
		char name[160];
		capture_link_name(dlt, name, sizeof(name));
		snprintf(err, errlen, "filter \"%s\" does not apply to link type %s: %s", cf->filter,
		         name, dead ? pcap_geterr(dead) : "out of memory");
		if (dead)
			pcap_close(dead);
		return NULL;
	}
	if (dead)
		pcap_close(dead);
	cf->last_link = cf->nlinks++;
	return lf;
}

capture_file *capture_file_open(const char *path, const char *filter, int *filter_error,
                                char *why, size_t whylen)
{
	char whybuf[512];
	if (!why) {
		why = whybuf;
		whylen = sizeof(whybuf);
	}
	why[0] = '\0';
#define REFUSE(...)                                                         \
	do {                                                                    \
		snprintf(why, whylen, __VA_ARGS__);                                 \
		fprintf(stderr, "iwscope: %s: %s\n", path, why);                    \
	} while (0)
	capture_file *cf = calloc(1, sizeof(*cf));
	if (!cf) {
		REFUSE("out of memory");
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
			REFUSE("%s", strerror(errno));
			free(cf);
			return NULL;
		}
		setvbuf(f, NULL, _IOFBF, CAPTURE_READ_BUF);
	}
	if (cf->m && pcapng_probe(cf->m)) {
		/* pcapng.c: each interface its own link type, where libpcap takes one per file */
		cf->stream = f;
		cf->ng = pcapng_open(cf->m, errbuf, sizeof(errbuf));
		if (!cf->ng) {
			REFUSE("%s", errbuf);
			capture_file_close(cf);
			return NULL;
		}
		cf->dlt = pcapng_first_dlt(cf->ng);
	} else {
		cf->pc = pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_MICRO, errbuf);
		if (!cf->pc) {
			if (fileread_gzipped(path))
				REFUSE("gzip-compressed (read it with: zcat %s | iwscope -r -)", path);
			else
				REFUSE("%s", errbuf);
			if (f != stdin)
				fclose(f); /* a pipe's cookie with it */
			free(cf);
			return NULL;
		}
		cf->dlt = pcap_datalink(cf->pc);
	}
	if (!decode_link_supported(cf->dlt)) {
		char name[160];
		capture_link_name(cf->dlt, name, sizeof(name));
		REFUSE("unsupported link type %s", name);
		capture_file_close(cf);
		return NULL;
	}
	char err[512];
	if (filter && cf->ng) {
		/* compiled now for the interfaces described before the first packet (mergecap and
		 * dumpcap describe them all there), so that a filter that cannot apply is a usage
		 * error before anything is written; for any other, when it is met */
		cf->filter = filter;
		int dlts[32];
		unsigned n = pcapng_link_types(cf->ng, dlts, sizeof(dlts) / sizeof(dlts[0]));
		for (unsigned i = 0; i < n; i++)
			if (!link_filter(cf, dlts[i], err, sizeof(err))) {
				REFUSE("%s", err);
				*filter_error = 1;
				capture_file_close(cf);
				return NULL;
			}
	} else if (filter) {
		if (capture_set_filter(cf->pc, &cf->prog, filter, err, sizeof(err)) != 0) {
			snprintf(why, whylen, "%s", err);
			fprintf(stderr, "iwscope: %s\n", err);
			*filter_error = 1;
			capture_file_close(cf);
			return NULL;
		}
		cf->has_prog = true;
	}
	cf->direct = cf->pc && cf->m && fileread_direct(cf->m, cf->dlt, pcap_snapshot(cf->pc));
	return cf;
#undef REFUSE
}

int capture_file_dlt(const capture_file *cf) { return cf->dlt; }

bool capture_file_regular(const capture_file *cf) { return cf->m != NULL; }

const char *capture_file_error(capture_file *cf)
{
	return cf->err[0] ? cf->err : cf->ng ? pcapng_error(cf->ng) : pcap_geterr(cf->pc);
}

/* The next packet of a pcapng file that passes the filter of its link type. */
static int pcapng_file_next(capture_file *cf, struct capture_rec *r)
{
	for (;;) {
		int rc = pcapng_next(cf->ng, r);
		if (rc != 1 || !cf->filter)
			return rc;
		struct link_filter *lf = link_filter(cf, r->dlt, cf->err, sizeof(cf->err));
		if (!lf)
			return -1;
		struct pcap_pkthdr h = { .caplen = r->caplen, .len = r->len };
		if (lf->usable && pcap_offline_filter(&lf->prog, &h, r->data))
			return 1;
	}
}

int capture_file_next(capture_file *cf, struct capture_rec *r)
{
	if (cf->ng)
		return pcapng_file_next(cf, r);
	r->dlt = cf->dlt;
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

/* A file cut short (said on stderr): handed to the run's list of files not read whole. */
static void cut_short(const struct capture_opts *o, const char *path, capture_file *cf)
{
	char why[600];
	snprintf(why, sizeof(why), "cut short: %s", capture_file_error(cf));
	if (o->skipped)
		o->skipped(o->idle_arg, path, why);
}

/* Reads one file; returns 0 when read to its end, -1 on a problem already reported. */
static int read_file(const char *path, const struct capture_opts *o, capture_fn fn, void *arg,
                     volatile sig_atomic_t *stop, struct capture_result *res)
{
	char why[512];
	capture_file *cf = capture_file_open(path, o->filter, &res->filter_error, why, sizeof(why));
	if (!cf) {
		if (o->skipped && !res->filter_error)
			o->skipped(o->idle_arg, path, why);
		res->files_skipped++;
		return 0;
	}
	if (o->current_file)
		*o->current_file = 0;
	capture_file_idle(cf, o->idle, o->idle_arg);
	int rc = 0;
	for (;;) {
		if (*stop || (o->max_packets && res->packets >= o->max_packets))
			break;
		struct capture_rec r;
		r.next = NULL;
		int got = capture_file_next(cf, &r);
		if (got == 1) {
			res->packets++;
			if (o->peek && r.next)
				o->peek(arg, r.dlt, r.next, r.next_caplen);
			if (fn(arg, r.dlt, r.data, r.caplen, r.len, r.ts_us) != 0) {
				res->stopped = 1;
				break;
			}
			continue;
		}
		if (got < 0 && !*stop) { /* a stop mid-record (SIGINT on a pipe) is no error */
			fprintf(stderr, "iwscope: %s: %s (after %llu packets)\n", path, capture_file_error(cf),
			        (unsigned long long)res->packets);
			cut_short(o, path, cf);
			rc = -1;
		}
		break;
	}
	capture_file_close(cf);
	return rc;
}

/* ---- several inputs, one capture: merged by packet time ------------------------------ */

/* One input of a merge. */
struct input {
	const char *path;
	capture_file *cf;          /* open while it is in the heap */
	struct capture_rec head;   /* its next record, while in the heap */
	uint64_t first_ts;         /* the time of its first record (the first look) */
};

/* The inputs as one capture: the record handed on is always the earliest of every input's next
 * one, ties going to the input given first (mergecap 4's go to the later one: rows may differ
 * from its merge's where two inputs' packets share a time stamp). A merge of files that follow one
 * another is their concatenation. Only inputs that overlap the merge's time are open: a first
 * look reads every input's first record and closes a regular file again (reopened when the
 * merge reaches its first record's time), so a thousand files of a day cost one open file at
 * a time; standard input, a pipe or a FIFO cannot be read twice and stays open. */
struct merge {
	const struct capture_opts *o;
	volatile sig_atomic_t *stop;
	struct input *in;
	unsigned n;
	unsigned *due, ndue, next_due; /* regular inputs to open, by (first_ts, index) */
	unsigned *heap, nheap;         /* open inputs by (head.ts_us, index) */
	int taken;                     /* the input whose head the caller holds, or -1 */
	bool looked;                   /* the first look is done */
	uint64_t handed;               /* records handed on */
	unsigned failed;               /* inputs cut short */
	unsigned skipped;              /* inputs that could not be opened */
	int filter_error;
};

static struct merge *merge_new(const struct capture_opts *o, volatile sig_atomic_t *stop)
{
	struct merge *mg = calloc(1, sizeof(*mg));
	if (!mg)
		return NULL;
	mg->o = o;
	mg->stop = stop;
	mg->n = o->nfiles;
	mg->taken = -1;
	mg->in = calloc(mg->n ? mg->n : 1, sizeof(*mg->in));
	mg->due = calloc(mg->n ? mg->n : 1, sizeof(*mg->due));
	mg->heap = calloc(mg->n ? mg->n : 1, sizeof(*mg->heap));
	if (!mg->in || !mg->due || !mg->heap) {
		free(mg->in);
		free(mg->due);
		free(mg->heap);
		free(mg);
		return NULL;
	}
	for (unsigned i = 0; i < mg->n; i++)
		mg->in[i].path = o->files[i];
	return mg;
}

static void merge_free(struct merge *mg)
{
	if (!mg)
		return;
	for (unsigned i = 0; i < mg->n; i++)
		capture_file_close(mg->in[i].cf);
	free(mg->in);
	free(mg->due);
	free(mg->heap);
	free(mg);
}

/* Whether input a's next record goes before input b's. */
static bool goes_before(const struct merge *mg, unsigned a, unsigned b)
{
	uint64_t ta = mg->in[a].head.ts_us, tb = mg->in[b].head.ts_us;
	return ta < tb || (ta == tb && a < b);
}

static void heap_swap(struct merge *mg, unsigned i, unsigned j)
{
	unsigned t = mg->heap[i];
	mg->heap[i] = mg->heap[j];
	mg->heap[j] = t;
}

static void heap_down(struct merge *mg, unsigned i)
{
	for (;;) {
		unsigned l = 2 * i + 1, r = l + 1, least = i;
		if (l < mg->nheap && goes_before(mg, mg->heap[l], mg->heap[least]))
			least = l;
		if (r < mg->nheap && goes_before(mg, mg->heap[r], mg->heap[least]))
			least = r;
		if (least == i)
			return;
		heap_swap(mg, i, least);
		i = least;
	}
}

static void heap_push(struct merge *mg, unsigned input)
{
	unsigned i = mg->nheap++;
	mg->heap[i] = input;
	while (i > 0 && goes_before(mg, mg->heap[i], mg->heap[(i - 1) / 2])) {
		heap_swap(mg, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

/* Input i's next record into its head: 1, or 0 when it has none left (ended, or failed: said
 * in one line, counted), its file closed. */
static int input_next(struct merge *mg, unsigned i)
{
	struct input *in = &mg->in[i];
	int rc = capture_file_next(in->cf, &in->head);
	if (rc == 1)
		return 1;
	if (rc < 0 && !*mg->stop) { /* a stop mid-record (SIGINT on a pipe) is no error */
		fprintf(stderr, "iwscope: %s: %s (after %llu packets)\n", in->path,
		        capture_file_error(in->cf), (unsigned long long)mg->handed);
		mg->failed++;
		cut_short(mg->o, in->path, in->cf);
	}
	capture_file_close(in->cf);
	in->cf = NULL;
	return 0;
}

/* Opens input i and reads its first record: 1, or 0 (unreadable or empty; said and counted). */
static int input_open(struct merge *mg, unsigned i)
{
	struct input *in = &mg->in[i];
	char why[512];
	in->cf = capture_file_open(in->path, mg->o->filter, &mg->filter_error, why, sizeof(why));
	if (!in->cf) {
		if (mg->o->skipped && !mg->filter_error)
			mg->o->skipped(mg->o->idle_arg, in->path, why);
		mg->skipped++;
		return 0;
	}
	capture_file_idle(in->cf, mg->o->idle, mg->o->idle_arg);
	return input_next(mg, i);
}

static int by_first_ts(const void *a, const void *b, void *arg)
{
	const struct merge *mg = arg;
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	uint64_t tx = mg->in[x].first_ts, ty = mg->in[y].first_ts;
	return tx < ty ? -1 : tx > ty ? 1 : x < y ? -1 : x > y;
}

/* The first look: every input's first record. Regular files are closed again until due. */
static void merge_look(struct merge *mg)
{
	mg->looked = true;
	for (unsigned i = 0; i < mg->n && !*mg->stop && !mg->filter_error; i++) {
		if (!input_open(mg, i))
			continue;
		struct input *in = &mg->in[i];
		in->first_ts = in->head.ts_us;
		if (capture_file_regular(in->cf)) {
			capture_file_close(in->cf);
			in->cf = NULL;
			mg->due[mg->ndue++] = i;
		} else {
			heap_push(mg, i);
		}
	}
	qsort_r(mg->due, mg->ndue, sizeof(*mg->due), by_first_ts, mg);
}

/* The next record of the merged capture: 1 with *r filled (r->data valid until the next call),
 * or 0 at the end of every input (or after a filter error: mg->filter_error). */
static int merge_next(struct merge *mg, struct capture_rec *r)
{
	if (!mg->looked)
		merge_look(mg);
	if (mg->taken >= 0) { /* the record handed last is used: its input moves on */
		if (input_next(mg, (unsigned)mg->taken) == 1) {
			heap_down(mg, 0);
		} else {
			mg->heap[0] = mg->heap[--mg->nheap];
			heap_down(mg, 0);
		}
		mg->taken = -1;
	}
	/* a file not opened yet joins when its first record is the earliest */
	while (mg->next_due < mg->ndue && !mg->filter_error && !*mg->stop) {
		unsigned i = mg->due[mg->next_due];
		struct input *in = &mg->in[i];
		if (mg->nheap) {
			const struct input *top = &mg->in[mg->heap[0]];
			if (top->head.ts_us < in->first_ts ||
			    (top->head.ts_us == in->first_ts && mg->heap[0] < i))
				break;
		}
		mg->next_due++;
		if (input_open(mg, i))
			heap_push(mg, i);
	}
	if (!mg->nheap || mg->filter_error)
		return 0;
	mg->taken = (int)mg->heap[0];
	*r = mg->in[mg->taken].head;
	if (mg->o->current_file)
		*mg->o->current_file = (unsigned)mg->taken;
	mg->handed++;
	return 1;
}

void capture_files(const struct capture_opts *o, capture_fn fn, void *arg,
                   volatile sig_atomic_t *stop, struct capture_result *res)
{
	memset(res, 0, sizeof(*res));
	if (o->nfiles == 1) { /* one file: no merge to keep */
		if (read_file(o->files[0], o, fn, arg, stop, res) != 0)
			res->files_failed++;
		return;
	}
	struct merge *mg = merge_new(o, stop);
	if (!mg) {
		fprintf(stderr, "iwscope: out of memory\n");
		res->files_failed = o->nfiles;
		return;
	}
	while (!*stop && !(o->max_packets && res->packets >= o->max_packets)) {
		struct capture_rec r;
		if (merge_next(mg, &r) != 1)
			break;
		res->packets++;
		if (fn(arg, r.dlt, r.data, r.caplen, r.len, r.ts_us) != 0) {
			res->stopped = 1;
			break;
		}
	}
	res->files_failed = mg->failed;
	res->files_skipped = mg->skipped;
	res->filter_error = mg->filter_error;
	merge_free(mg);
}

struct capture_replay {
	struct capture_opts o;
	double speed;
	struct merge *mg;       /* the files, merged by packet time */
	volatile sig_atomic_t never; /* a replay is stopped between steps, never inside one */
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
	if (!r)
		return NULL;
	r->o = *o;
	r->speed = speed;
	if (!(r->mg = merge_new(&r->o, &r->never))) {
		free(r);
		return NULL;
	}
	return r;
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
			if (merge_next(r->mg, &r->rec) != 1)
				return n ? n : -1;
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
		if (fn(arg, r->rec.dlt, r->rec.data, r->rec.caplen, r->rec.len, ts) != 0)
			return -1;
		r->held = false;
		n++;
		if (clock_mono_us() >= deadline)
			return n;
	}
}

unsigned capture_replay_failed(const capture_replay *r) { return r->mg->failed; }
unsigned capture_replay_skipped_files(const capture_replay *r) { return r->mg->skipped; }

void capture_replay_close(capture_replay *r)
{
	if (!r)
		return;
	merge_free(r->mg);
	free(r);
}
