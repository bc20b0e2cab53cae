/* Live capture on every core: a capture thread, workers with engines of their own, rows back
 * to the caller's thread.
 *
 * The capture thread reads libpcap's ring and copies each frame into one worker's ring, chosen
 * by a hash symmetric in the connection's two endpoints (after decoding tunnels and VLANs), so
 * that both directions of a connection reach one engine in capture order: each flow sees
 * exactly the packets it would on one thread, and its row is the same. A worker's ring is a
 * single-producer single-consumer byte ring; the capture thread waits only when one is full
 * (the kernel's ring then holds the rest, and its drops are counted by libpcap).
 *
 * Several interfaces (a tap's two ports, one direction each) are one capture: the capture
 * thread reads them all, and a connection's packets must reach its worker in time order, its
 * SYN before the SYN-ACK that answers it. Arrival order is not that: each interface's kernel
 * ring hands its frames over in blocks, up to LIVE_BLOCK_MS late, so one port's SYN may arrive
 * after the other port's SYN-ACK. Each interface's frames therefore wait in a stage of their
 * own and are released in time-stamp order, a frame only once no interface can still hand over
 * an earlier one (livestage.c); the frames are then routed as one interface's are.
 *
 * Workers hand finished rows over in chunks through one queue; the caller's thread gives them
 * to the sinks and commits. A slow disk lengthens the queue, up to CHUNKS_QUEUED_MAX chunks
 * (65,536 rows, some 68 MB: seconds of a busy link's flows); only past that do the workers,
 * then the capture, wait. Each flow's row is the one of the same packets read from a file,
 * as long as no worker's share of --flow-cap has to evict. */
#include "livecap.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "config.h"
#include "decode.h"
#include "dpi.h"
#include "flow.h"
#include "livestage.h"

#define ROWS_PER_CHUNK 32
#define CHUNKS_QUEUED_MAX 2048 /* rows waiting for the sinks at most: 65,536 */
#define ROWS_PUSH_US 100000u   /* a worker hands its rows over at least this often */
#define WAIT_MS 100            /* an idle worker looks again this often */

struct row_chunk {
	struct row_chunk *next;
	unsigned n;
	struct flow_record rec[ROWS_PER_CHUNK];
};

struct ring {
	uint8_t *buf;
	uint64_t size;           /* a power of two */
	_Atomic uint64_t head;   /* bytes written (the capture thread) */
	_Atomic uint64_t tail;   /* bytes read (the worker) */
	_Atomic bool waiting;    /* the worker sleeps on cv */
	_Atomic bool over;       /* nothing more will come */
	_Atomic bool closed;     /* the worker is gone (failed, or the run is torn down): frames
	                          * for it are dropped rather than waited for */
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

struct worker {
	livecap *lc;
	unsigned id;
	pthread_t thread;
	bool started;
	struct ring ring;
	struct sink sink;          /* the queue, as the engine's only sink */
	engine *eng;
	dpi_ctx *dpi;
	struct row_chunk *chunk;   /* rows not handed over yet */
	uint64_t pushed_us;        /* when rows were last handed over */
	_Atomic uint64_t packets;  /* published for the dashboard */
	_Atomic uint32_t open_flows;
	struct run_info stats;     /* the engine's counters, at the end */
	uint64_t dpi_peak;
};

struct livecap {
	capture_live *caps[LIVE_IFACES_MAX];
	int dlts[LIVE_IFACES_MAX];
	unsigned ncaps;
	livestage *stages;          /* with more than one capture */
	uint64_t lag_us;            /* how far behind the wall clock a released frame may be */
	bool max_reached;
	unsigned nworkers;
	struct worker *workers;
	uint64_t max_packets, routed;
	pthread_t thread;
	bool started;
	_Atomic bool stop;          /* the caller asks the capture to end */
	_Atomic bool capture_over;  /* the capture thread is done */
	_Atomic uint64_t stall_us;  /* the longest the capture waited for room in a worker's ring */
	_Atomic uint64_t caught_up_us; /* wall clock as the capture's last finished read began:
	                                * every frame older than that, less lag_us, is in a
	                                * worker's ring or analysed; 0 before the first */
	char err[512];              /* the capture's error, set before capture_over */
	int64_t received[LIVE_IFACES_MAX], dropped[LIVE_IFACES_MAX]; /* libpcap's counts when the
	                                                              * capture stopped */
	bool failed_capture;
	/* the row queue */
	pthread_mutex_t qmu;
	pthread_cond_t q_rows, q_room;
	struct row_chunk *qhead, *qtail;
	unsigned queued;
	unsigned workers_done;
	bool sinks_failed;          /* a sink failed: workers no longer wait for room */
	bool worker_failed;         /* a worker could not keep a row: the run fails */
};

/* Condition variables wait on CLOCK_MONOTONIC: a step of the system clock neither stalls
 * nor hurries them. */
static void cond_init(pthread_cond_t *cv)
{
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(cv, &a);
	pthread_condattr_destroy(&a);
}

/* ms from now, on the condition variables' clock. */
static struct timespec deadline_in(long ms)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += (ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

/* ---- which worker: both directions of a connection to one ----------------------------- */

static uint64_t endpoint_mix(const struct ip_addr *a, uint16_t port)
{
	uint64_t x, y;
	memcpy(&x, a->b, 8);
	memcpy(&y, a->b + 8, 8);
	uint64_t h = (x ^ (y * 0x9e3779b97f4a7c15ull)) + port;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

/* A frame that does not decode to TCP goes to worker 0, which counts it. */
static unsigned worker_of(const livecap *lc, int dlt, const uint8_t *data, uint32_t caplen)
{
	if (lc->nworkers == 1)
		return 0;
	struct pkt p;
	enum decode_result r = decode_packet(dlt, data, caplen, 0, &p);
	if (r != DECODE_OK && r != DECODE_UDP) /* UDP: a QUIC connection's datagrams, one worker */
		return 0;
	uint64_t h = endpoint_mix(&p.src, p.sport) + endpoint_mix(&p.dst, p.dport);
	h ^= h >> 29;
	return (unsigned)(h % lc->nworkers);
}

/* ---- the capture thread ---------------------------------------------------------------- */

static void wake(struct ring *r)
{
	if (atomic_load(&r->waiting)) {
		pthread_mutex_lock(&r->mu);
		pthread_cond_signal(&r->cv);
		pthread_mutex_unlock(&r->mu);
	}
}

/* Nothing more will come into r: its worker ends once it has analysed what is there. */
static void ring_end(struct ring *r)
{
	atomic_store(&r->over, true);
	pthread_mutex_lock(&r->mu);
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

/* Copies one frame into r, waiting while r is full (the worker is behind): the capture's only
 * stall, the longest of which is kept in *stall_us. */
static void ring_put(struct ring *r, unsigned link, const uint8_t *data, uint32_t caplen,
                     uint32_t wirelen, uint64_t ts_us, _Atomic uint64_t *stall_us)
{
	uint64_t need = frame_bytes(caplen);
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	uint64_t at = head & (r->size - 1), room_to_end = r->size - at;
	uint64_t wrap = room_to_end < need ? room_to_end : 0;
	uint64_t waited_from = 0;
	while (r->size - (head - atomic_load_explicit(&r->tail, memory_order_acquire)) < need + wrap) {
		if (atomic_load(&r->closed))
			return;
		if (!waited_from)
			waited_from = clock_mono_us();
		wake(r);
		struct timespec w = { 0, 20000 };
		nanosleep(&w, NULL);
	}
	if (waited_from) {
		uint64_t waited = clock_mono_us() - waited_from;
		if (waited > atomic_load_explicit(stall_us, memory_order_relaxed))
			atomic_store_explicit(stall_us, waited, memory_order_relaxed);
	}
	if (wrap) {
		struct frame *m = (struct frame *)(r->buf + at);
		m->caplen = FRAME_WRAP;
		head += wrap;
		at = 0;
	}
	struct frame *f = (struct frame *)(r->buf + at);
	f->caplen = caplen;
	f->link = link;
	f->wirelen = wirelen;
	f->ts_us = ts_us;
	memcpy(f + 1, data, caplen);
	atomic_store_explicit(&r->head, head + need, memory_order_release);
}

/* One frame to the worker that owns its connection; -1 once max_packets are routed. */
static int route(livecap *lc, unsigned link, const uint8_t *data, uint32_t caplen,
                 uint32_t wirelen, uint64_t ts_us)
{
	struct worker *w = &lc->workers[worker_of(lc, lc->dlts[link], data, caplen)];
	if (caplen > w->ring.size / 4)
		caplen = (uint32_t)(w->ring.size / 4); /* never: the snaplen is far smaller */
	ring_put(&w->ring, link, data, caplen, wirelen, ts_us, &lc->stall_us);
	if (++lc->routed % 64 == 0)
		wake(&w->ring);
	if (lc->max_packets && lc->routed >= lc->max_packets) {
		lc->max_reached = true;
		return -1;
	}
	return 0;
}

/* Several interfaces: a frame released from its stage (livestage.c). */
static int route_staged(void *arg, unsigned link, const uint8_t *data, uint32_t caplen,
                        uint32_t wirelen, uint64_t ts_us)
{
	return route(arg, link, data, caplen, wirelen, ts_us);
}

/* One interface: frames go straight to the workers. */
static int on_frame(void *arg, int dlt, const uint8_t *data, uint32_t caplen, uint32_t wirelen,
                    uint64_t ts_us)
{
	(void)dlt;
	return route(arg, 0, data, caplen, wirelen, ts_us);
}

/* One read of the kernel's rings: the interface's own, or every interface's into the stages. */
static int capture_read(livecap *lc, int timeout_ms, char *err, size_t errlen)
{
	if (lc->ncaps > 1)
		return livestage_round(lc->stages, timeout_ms, err, errlen);
	char why[sizeof(lc->err)] = "";
	int n = capture_live_step(lc->caps[0], timeout_ms, on_frame, lc, why, sizeof(why));
	if (n < 0 && why[0])
		snprintf(err, errlen, "%s: %s", capture_live_name(lc->caps[0]), why);
	return n;
}

static void *capture_main(void *arg)
{
	livecap *lc = arg;
	while (!atomic_load(&lc->stop)) {
		char err[sizeof(lc->err)] = "";
		uint64_t before = (uint64_t)clock_wall_us();
		int n = capture_read(lc, WAIT_MS, err, sizeof(err));
		/* a read takes every block the kernel has handed over (a backlog too, however long
		 * the workers kept it waiting): what it left arrived after it began, but for a block
		 * still filling (lag_us). The workers' clocks may move up to here once they have
		 * analysed what it routed, stored before this. */
		if (n >= 0)
			atomic_store_explicit(&lc->caught_up_us, before, memory_order_release);
		for (unsigned i = 0; i < lc->nworkers; i++)
			wake(&lc->workers[i].ring);
		if (n < 0) {
			if (err[0]) { /* else max_packets was reached */
				memcpy(lc->err, err, sizeof(err));
				lc->failed_capture = true;
			}
			break;
		}
	}
	/* Stopped: what the kernel holds was received, so it is analysed too. A block partly
	 * filled is handed over after LIVE_BLOCK_MS: wait that long for the last one, but not
	 * for traffic that goes on. */
	if (atomic_load(&lc->stop) && !lc->failed_capture) {
		char err[sizeof(lc->err)];
		uint64_t until = clock_mono_us() + 3000u * LIVE_BLOCK_MS;
		while (clock_mono_us() < until && capture_read(lc, 2 * LIVE_BLOCK_MS, err, sizeof(err)) > 0)
			;
	}
	if (lc->ncaps > 1 && !lc->max_reached) /* what waits in the stages was captured too */
		livestage_release_all(lc->stages);
	/* libpcap's counts as the reading stops: what arrives later was never the capture's */
	for (unsigned i = 0; i < lc->ncaps; i++)
		capture_live_stats(lc->caps[i], &lc->received[i], &lc->dropped[i]);
	atomic_store(&lc->capture_over, true);
	for (unsigned i = 0; i < lc->nworkers; i++)
		ring_end(&lc->workers[i].ring);
	return NULL;
}

/* ---- rows back to the caller's thread -------------------------------------------------- */

static void push_rows(struct worker *w)
{
	livecap *lc = w->lc;
	w->pushed_us = clock_mono_us();
	struct row_chunk *c = w->chunk;
	if (!c || !c->n)
		return;
	w->chunk = NULL;
	pthread_mutex_lock(&lc->qmu);
	while (lc->queued >= CHUNKS_QUEUED_MAX && !lc->sinks_failed)
		pthread_cond_wait(&lc->q_room, &lc->qmu);
	if (lc->qtail)
		lc->qtail->next = c;
	else
		lc->qhead = c;
	lc->qtail = c;
	lc->queued++;
	pthread_cond_signal(&lc->q_rows);
	pthread_mutex_unlock(&lc->qmu);
}

/* The workers' sink: rows are copied into chunks for the queue (records are self-contained). */
static int queue_flow(void *self, const struct flow_record *rec)
{
	struct worker *w = self;
	if (!w->chunk) {
		w->chunk = malloc(sizeof(*w->chunk));
		if (!w->chunk)
			return -1;
		w->chunk->next = NULL;
		w->chunk->n = 0;
	}
	w->chunk->rec[w->chunk->n++] = *rec;
	if (w->chunk->n == ROWS_PER_CHUNK)
		push_rows(w);
	return 0;
}

static int queue_tick(void *self)
{
	push_rows(self);
	return 0;
}

static int queue_run(void *self, const struct run_info *run)
{
	(void)self;
	(void)run;
	return 0;
}

static void queue_close(void *self) { (void)self; }

static const char *queue_error(void *self)
{
	(void)self;
	return "out of memory for rows";
}

static const struct sink_ops queue_ops = {
	"queue", queue_run, queue_flow, queue_tick, queue_run, queue_close, queue_error,
};

/* ---- the workers ----------------------------------------------------------------------- */

static void publish(struct worker *w)
{
	atomic_store_explicit(&w->packets, engine_packets(w->eng), memory_order_relaxed);
	atomic_store_explicit(&w->open_flows, engine_open_flows(w->eng), memory_order_relaxed);
}

/* Analyses what is in the ring, at most budget frames. Frames analysed, or -1 on failure. */
static int drain(struct worker *w, unsigned budget)
{
	struct ring *r = &w->ring;
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
	unsigned n = 0;
	int rc = 0;
	while (tail != head && n < budget) {
		const struct frame *f = (const struct frame *)(r->buf + (tail & (r->size - 1)));
		if (f->caplen == FRAME_WRAP) {
			tail += r->size - (tail & (r->size - 1));
			continue;
		}
		/* the frame after it, when the ring has it already: its flow is fetched meanwhile
		 * (engine_prefetch: with many connections open, each lookup is a cache miss) */
		uint64_t next = tail + frame_bytes(f->caplen);
		if (next != head && (next & (r->size - 1))) {
			const struct frame *g = (const struct frame *)(r->buf + (next & (r->size - 1)));
			if (g->caplen != FRAME_WRAP)
				engine_prefetch(w->eng, w->lc->dlts[g->link], (const uint8_t *)(g + 1), g->caplen);
		}
		if (engine_packet(w->eng, w->lc->dlts[f->link], (const uint8_t *)(f + 1), f->caplen,
		                  f->wirelen, f->ts_us) != 0)
			rc = -1;
		tail = next;
		if (++n % 256 == 0)
			atomic_store_explicit(&r->tail, tail, memory_order_release);
	}
	atomic_store_explicit(&r->tail, tail, memory_order_release);
	return rc ? -1 : (int)n;
}

static void sleep_for_frames(struct ring *r)
{
	pthread_mutex_lock(&r->mu);
	atomic_store(&r->waiting, true);
	if (atomic_load(&r->head) == atomic_load_explicit(&r->tail, memory_order_relaxed) &&
	    !atomic_load(&r->over)) {
		struct timespec until = deadline_in(WAIT_MS);
		pthread_cond_timedwait(&r->cv, &r->mu, &until);
	}
	atomic_store(&r->waiting, false);
	pthread_mutex_unlock(&r->mu);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct ring *r = &w->ring;
	uint64_t next_sweep = clock_mono_us() + 1000000u;
	bool failed = false;
	for (;;) {
		bool over = atomic_load(&r->over); /* read before the ring: nothing comes after */
		/* read before the ring too: the frames routed before it are in the ring now */
		uint64_t caught_up = atomic_load_explicit(&w->lc->caught_up_us, memory_order_acquire);
		int n = drain(w, 4096);
		if (n < 0) {
			failed = true;
			break;
		}
		/* Time goes on without packets: idle flows end. Not before what the kernel still
		 * holds (a block is handed over up to LIVE_BLOCK_MS late; a backlog, while the
		 * workers or the writer were behind, for seconds), a stage still holds or this ring
		 * holds is analysed: a flow's next packet must not come after its row (a closed
		 * connection's last ACK, held in the kernel's ring while the row queue was full,
		 * came back as a row of its own). So the clock moves to the wall clock only as far
		 * as the capture thread's last finished read began, and only once this ring held
		 * nothing more (what that read routed is analysed); frames move it too, by their own
		 * times (engine_packet). */
		uint64_t now = clock_mono_us();
		if (now >= next_sweep && n < 4096 && caught_up) {
			uint64_t wall = (uint64_t)clock_wall_us();
			uint64_t until = caught_up < wall ? caught_up : wall;
			next_sweep = now + 1000000u;
			if (until > w->lc->lag_us && engine_expire_at(w->eng, until - w->lc->lag_us) != 0) {
				failed = true;
				break;
			}
		}
		publish(w);
		if (now - w->pushed_us >= ROWS_PUSH_US)
			push_rows(w);
		if (n == 0) {
			if (over)
				break;
			push_rows(w);
			sleep_for_frames(r);
		}
	}
	livecap *lc = w->lc;
	if (failed) { /* out of memory for a row: the run fails as a sink would, now */
		atomic_store(&r->closed, true);
		pthread_mutex_lock(&lc->qmu);
		lc->worker_failed = true;
		pthread_cond_signal(&lc->q_rows);
		pthread_mutex_unlock(&lc->qmu);
	}
	if (!failed && engine_flush(w->eng, END_CAPTURE) != 0)
		failed = true;
	engine_finish(w->eng);
	engine_stats(w->eng, &w->stats);
	publish(w);
	push_rows(w);
	pthread_mutex_lock(&lc->qmu);
	lc->workers_done++;
	if (failed)
		lc->worker_failed = true;
	pthread_cond_signal(&lc->q_rows);
	pthread_mutex_unlock(&lc->qmu);
	return NULL;
}

/* ---- the caller's side ----------------------------------------------------------------- */

/* Joins every thread: the capture thread first, then the workers (which end once their
 * rings are over and drained). */
static void join_threads(livecap *lc)
{
	atomic_store(&lc->stop, true);
	if (lc->started) {
		pthread_join(lc->thread, NULL);
		lc->started = false;
	}
	for (unsigned i = 0; i < lc->nworkers; i++) {
		struct worker *w = &lc->workers[i];
		ring_end(&w->ring);
		if (w->started) {
			pthread_join(w->thread, NULL);
			w->started = false;
		}
	}
}

static bool all_done(livecap *lc)
{
	pthread_mutex_lock(&lc->qmu);
	bool done = lc->workers_done == lc->nworkers && !lc->qhead;
	pthread_mutex_unlock(&lc->qmu);
	return done;
}

livecap *livecap_start(capture_live *const *caps, unsigned ncaps, const struct livecap_opts *o,
                       char *err, size_t errlen)
{
	if (ncaps < 1 || ncaps > LIVE_IFACES_MAX) {
		snprintf(err, errlen, "1 to %d interfaces", LIVE_IFACES_MAX);
		return NULL;
	}
	livecap *lc = calloc(1, sizeof(*lc));
	unsigned n = o->workers < 1 ? 1 : o->workers > LIVE_WORKERS_MAX ? LIVE_WORKERS_MAX : o->workers;
	if (lc)
		lc->workers = calloc(n, sizeof(*lc->workers));
	if (!lc || !lc->workers) {
		free(lc);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	lc->ncaps = ncaps;
	for (unsigned i = 0; i < ncaps; i++) {
		lc->caps[i] = caps[i];
		lc->dlts[i] = capture_live_dlt(caps[i]);
	}
	/* a released frame is behind the wall clock by the kernel's block timeout, and with
	 * stages by their hold (two block timeouts) and a round or two of reads (WAIT_MS each) */
	lc->lag_us = 2000u * LIVE_BLOCK_MS + (ncaps > 1 ? 2000u * LIVE_BLOCK_MS + 2000u * WAIT_MS : 0);
	lc->nworkers = n;
	lc->max_packets = o->max_packets;
	pthread_mutex_init(&lc->qmu, NULL);
	cond_init(&lc->q_rows);
	cond_init(&lc->q_room);
	if (ncaps > 1 && !(lc->stages = livestage_new(caps, ncaps, (uint64_t)LIVE_RING_KIB * 1024u,
	                                               route_staged, lc))) {
		snprintf(err, errlen, "out of memory");
		livecap_free(lc);
		return NULL;
	}
	/* --flow-cap, or what the memory available allows (flow.c), shared out among the workers */
	uint32_t cap_flows = o->eo.flow_cap ? o->eo.flow_cap : flow_default_cap();
	for (unsigned i = 0; i < n; i++) {
		struct worker *w = &lc->workers[i];
		w->lc = lc;
		w->id = i;
		pthread_mutex_init(&w->ring.mu, NULL);
		cond_init(&w->ring.cv);
		w->ring.size = (uint64_t)LIVE_RING_KIB * 1024u;
		w->ring.buf = aligned_alloc(FRAME_ALIGN, w->ring.size);
		/* nDPI start-ups one after another, here: nDPI does not promise that two may overlap */
		if (!w->ring.buf || (o->dpi && !(w->dpi = dpi_open(o->dpi_packets)))) {
			snprintf(err, errlen, w->ring.buf ? "cannot initialise nDPI" : "out of memory");
			livecap_free(lc);
			return NULL;
		}
		struct engine_opts eo = o->eo;
		eo.threaded = false;
		eo.flow_cap = (cap_flows + n - 1) / n;
		eo.key_step = n;
		eo.key_first = i;
		w->sink = (struct sink){ &queue_ops, w };
		w->eng = engine_new(&eo, &w->sink, 1, w->dpi);
		if (!w->eng) {
			snprintf(err, errlen, "out of memory for the flow table");
			livecap_free(lc);
			return NULL;
		}
	}
	/* the threads leave signals to the caller's thread */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	bool ok = true;
	for (unsigned i = 0; i < n && ok; i++)
		ok = (lc->workers[i].started =
		              pthread_create(&lc->workers[i].thread, NULL, worker_main, &lc->workers[i]) == 0);
	if (ok)
		ok = (lc->started = pthread_create(&lc->thread, NULL, capture_main, lc) == 0);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!ok) {
		snprintf(err, errlen, "cannot start the capture threads");
		livecap_free(lc);
		return NULL;
	}
	return lc;
}

static void free_chunks(struct row_chunk *c)
{
	while (c) {
		struct row_chunk *next = c->next;
		free(c);
		c = next;
	}
}

/* Takes every chunk queued (waiting up to timeout_ms for one). */
static struct row_chunk *take_rows(livecap *lc, int timeout_ms)
{
	pthread_mutex_lock(&lc->qmu);
	if (!lc->qhead && timeout_ms > 0 && lc->workers_done < lc->nworkers) {
		struct timespec until = deadline_in(timeout_ms);
		pthread_cond_timedwait(&lc->q_rows, &lc->qmu, &until);
	}
	struct row_chunk *c = lc->qhead;
	lc->qhead = lc->qtail = NULL;
	lc->queued = 0;
	pthread_cond_broadcast(&lc->q_room);
	pthread_mutex_unlock(&lc->qmu);
	return c;
}

static void fail_queue(livecap *lc)
{
	pthread_mutex_lock(&lc->qmu);
	lc->sinks_failed = true; /* workers stop waiting for room */
	pthread_cond_broadcast(&lc->q_room);
	pthread_mutex_unlock(&lc->qmu);
}

int livecap_rows(livecap *lc, struct sink *sinks, unsigned nsinks, int timeout_ms)
{
	struct row_chunk *first = take_rows(lc, timeout_ms);
	int rc = 0, handed = 0;
	for (struct row_chunk *c = first; c; c = c->next)
		for (unsigned i = 0; i < c->n && rc == 0; i++, handed++)
			rc = sinks_flow(sinks, nsinks, &c->rec[i]);
	free_chunks(first);
	pthread_mutex_lock(&lc->qmu);
	if (lc->worker_failed)
		rc = -1;
	pthread_mutex_unlock(&lc->qmu);
	if (rc != 0)
		fail_queue(lc);
	return rc ? -1 : handed;
}

bool livecap_over(livecap *lc) { return atomic_load(&lc->capture_over) && all_done(lc); }

/* Adds one worker's run counters to run's; decode reasons are matched by name. */
static void add_stats(struct run_info *run, const struct run_info *w)
{
	run->packets += w->packets;
	run->bytes += w->bytes;
	run->tcp_packets += w->tcp_packets;
	run->quic_packets += w->quic_packets;
	run->flows += w->flows;
	run->evicted += w->evicted;
	run->evicted_unsettled += w->evicted_unsettled;
	run->evicted_later += w->evicted_later;
	run->one_direction += w->one_direction;
	run->syn_opts_cut += w->syn_opts_cut;
	run->acked_unseen += w->acked_unseen;
	run->decode_errors += w->decode_errors;
	for (unsigned i = 0; i < w->nreasons; i++) {
		unsigned j = 0;
		while (j < run->nreasons && strcmp(run->reason_names[j], w->reason_names[i]))
			j++;
		if (j == run->nreasons) {
			if (j == sizeof(run->reasons) / sizeof(run->reasons[0]))
				continue;
			run->reason_names[run->nreasons++] = w->reason_names[i];
			run->reasons[j] = 0;
		}
		run->reasons[j] += w->reasons[i];
	}
}

int livecap_finish(livecap *lc, struct sink *sinks, unsigned nsinks, struct run_info *run)
{
	/* the capture ends; the workers analyse what it handed them and write out their open
	 * flows, while this thread keeps the rows going to the sinks */
	atomic_store(&lc->stop, true);
	int rc = 0;
	while (!all_done(lc)) {
		if (rc == 0 && livecap_rows(lc, sinks, nsinks, WAIT_MS) < 0)
			rc = -1;
		else if (rc != 0)
			free_chunks(take_rows(lc, WAIT_MS));
	}
	join_threads(lc);
	run->packets = run->bytes = run->tcp_packets = run->quic_packets = run->flows = run->evicted = 0;
	run->evicted_unsettled = run->evicted_later = 0;
	run->one_direction = run->syn_opts_cut = run->acked_unseen = 0;
	run->decode_errors = 0;
	run->nreasons = 0;
	for (unsigned i = 0; i < lc->nworkers; i++) {
		struct worker *w = &lc->workers[i];
		add_stats(run, &w->stats);
		if (w->dpi) {
			uint64_t alive, inspected;
			dpi_stats(w->dpi, &alive, &w->dpi_peak, &inspected);
		}
	}
	run->pcap_received = run->pcap_dropped = 0;
	for (unsigned i = 0; i < lc->ncaps; i++) {
		run->pcap_received += lc->received[i];
		run->pcap_dropped += lc->dropped[i];
	}
	if (lc->sinks_failed || lc->worker_failed)
		rc = -1;
	return rc;
}

const char *livecap_error(const livecap *lc) { return lc->failed_capture ? lc->err : NULL; }

const char *livecap_failure(livecap *lc)
{
	pthread_mutex_lock(&lc->qmu);
	bool failed = lc->worker_failed;
	pthread_mutex_unlock(&lc->qmu);
	return failed ? "out of memory for the rows of live capture" : NULL;
}

void livecap_counters(const livecap *lc, uint64_t *packets, uint32_t *open_flows)
{
	*packets = 0;
	*open_flows = 0;
	for (unsigned i = 0; i < lc->nworkers; i++) {
		*packets += atomic_load_explicit(&lc->workers[i].packets, memory_order_relaxed);
		*open_flows += atomic_load_explicit(&lc->workers[i].open_flows, memory_order_relaxed);
	}
}

void livecap_capture_counts(const livecap *lc, unsigned i, int64_t *received, int64_t *dropped)
{
	*received = i < lc->ncaps ? lc->received[i] : 0;
	*dropped = i < lc->ncaps ? lc->dropped[i] : 0;
}

uint64_t livecap_longest_stall(const livecap *lc)
{
	return atomic_load_explicit(&lc->stall_us, memory_order_relaxed);
}

uint64_t livecap_dpi_peak(const livecap *lc)
{
	uint64_t sum = 0;
	for (unsigned i = 0; i < lc->nworkers; i++)
		sum += lc->workers[i].dpi_peak;
	return sum;
}

void livecap_free(livecap *lc)
{
	if (!lc)
		return;
	/* torn down without livecap_finish (a failure): nobody waits for anybody */
	fail_queue(lc);
	for (unsigned i = 0; i < lc->nworkers; i++)
		atomic_store(&lc->workers[i].ring.closed, true);
	join_threads(lc);
	for (unsigned i = 0; i < lc->nworkers; i++) {
		struct worker *w = &lc->workers[i];
		engine_free(w->eng);
		dpi_close(w->dpi);
		free(w->chunk);
		free(w->ring.buf);
		pthread_mutex_destroy(&w->ring.mu);
		pthread_cond_destroy(&w->ring.cv);
	}
	livestage_free(lc->stages);
	free_chunks(lc->qhead);
	pthread_mutex_destroy(&lc->qmu);
	pthread_cond_destroy(&lc->q_rows);
	pthread_cond_destroy(&lc->q_room);
	free(lc->workers);
	free(lc);
}
