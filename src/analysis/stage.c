/* The DPI-and-sinks stage. The engine's thread fills batches of messages (payload packets for
 * nDPI, flow records); full batches pass to this thread through a short bounded queue, so the
 * locks are taken once per batch, not per packet. Per flow the stage keeps nDPI's state by the
 * engine's flow slot: the same packets in the same order as without it, so the same verdicts.
 * Every flow's nDPI runs here: a model of this thread's backlog that gave the reading thread
 * some flows did no better on the benchmark (bench/RESULTS.md, 2026-12-07). */
#include "stage.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "hugemem.h"

enum msg_type { MSG_PACKET = 1, MSG_FINAL, MSG_TICK };

struct msg {
	uint32_t type, len; /* len: bytes after this header, padded to 8 */
	uint64_t key, ts_us;
};

struct batch {
	struct batch *next;
	size_t used;
	uint8_t data[STAGE_BATCH_BYTES - 2 * sizeof(size_t)]; /* a batch is STAGE_BATCH_BYTES */
};
_Static_assert(sizeof(struct batch) == STAGE_BATCH_BYTES, "a batch is STAGE_BATCH_BYTES");
/* a record is read in place in its batch: every message starts 8-byte aligned */
_Static_assert(sizeof(struct msg) % 8 == 0 && offsetof(struct batch, data) % 8 == 0 &&
               _Alignof(struct flow_record) <= 8, "records aligned in their batch");

/* nDPI's view of the flows, by the engine's flow slot, in chunks allocated as slots are used.
 * A slot's next flow sends its first packet only after the record of the one before, and the
 * queue keeps that order: a record's arrival frees its slot here too. */
#define SLOT_SHIFT 12
#define SLOT_CHUNK (1u << SLOT_SHIFT)

struct stage {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv_full, cv_empty;
	struct batch *queue_head, *queue_tail, *free_list;
	struct batch *pool;    /* STAGE_BATCHES batches in huge pages, handed out in order */
	unsigned allocated;
	bool stopping;
	atomic_int failed;
	/* the engine thread's */
	struct batch *filling;
	unsigned dpi_max;          /* payload packets per flow the stage's nDPI may see; 0: no nDPI */
	/* the stage thread's */
	dpi_ctx *dpi;
	struct sink *sinks;
	unsigned nsinks;
	struct dpi_state **slots;
	uint32_t nchunks;
};

/* ---- the queue ---------------------------------------------------------------------------- */

static struct batch *get_free(stage *s)
{
	pthread_mutex_lock(&s->mu);
	while (!s->free_list && s->allocated >= STAGE_BATCHES)
		pthread_cond_wait(&s->cv_full, &s->mu);
	struct batch *b = s->free_list;
	if (b)
		s->free_list = b->next;
	else
		b = &s->pool[s->allocated++]; /* a batch not used yet: its pages are new */
	pthread_mutex_unlock(&s->mu);
	b->used = 0;
	b->next = NULL;
	return b;
}

static void hand_over(stage *s)
{
	struct batch *b = s->filling;
	if (!b || !b->used)
		return;
	s->filling = NULL;
	pthread_mutex_lock(&s->mu);
	if (s->queue_tail)
		s->queue_tail->next = b;
	else
		s->queue_head = b;
	s->queue_tail = b;
	pthread_cond_signal(&s->cv_empty);
	pthread_mutex_unlock(&s->mu);
}

/* Room for a message of len payload bytes in the filling batch (waiting for a free batch if
 * every one is queued). */
static struct msg *reserve(stage *s, uint32_t type, uint64_t key, uint64_t ts_us, size_t len)
{
	size_t need = sizeof(struct msg) + ((len + 7) & ~(size_t)7);
	if (s->filling && s->filling->used + need > sizeof(s->filling->data))
		hand_over(s);
	if (!s->filling)
		s->filling = get_free(s);
	struct msg *m = (struct msg *)(s->filling->data + s->filling->used);
	m->type = type;
	m->len = (uint32_t)(need - sizeof(struct msg));
	m->key = key;
	m->ts_us = ts_us;
	s->filling->used += need;
	return m;
}

/* One payload packet for the stage's nDPI of the flow in the flow table's slot. */
static int put_packet(stage *s, uint32_t slot, const uint8_t *ip, uint32_t ip_cap, uint64_t ts_us)
{
	if (atomic_load_explicit(&s->failed, memory_order_relaxed))
		return -1;
	if (ip_cap > STAGE_MAX_IP)
		ip_cap = STAGE_MAX_IP; /* nDPI reads at most 64 KiB of a packet anyway */
	struct msg *m = reserve(s, MSG_PACKET, slot, ts_us, sizeof(uint32_t) + ip_cap);
	uint8_t *p = (uint8_t *)(m + 1);
	memcpy(p, &ip_cap, sizeof(ip_cap));
	memcpy(p + sizeof(ip_cap), ip, ip_cap);
	return 0;
}

/* Queues a copy of rec (self-contained: valid on the stage's thread as it is). */
static int put_record(stage *s, uint32_t type, uint32_t slot, const struct flow_record *rec)
{
	if (atomic_load_explicit(&s->failed, memory_order_relaxed))
		return -1;
	struct msg *m = reserve(s, type, slot, 0, sizeof(*rec));
	memcpy(m + 1, rec, sizeof(*rec));
	return 0;
}

int stage_tick(stage *s)
{
	if (atomic_load(&s->failed))
		return -1;
	reserve(s, MSG_TICK, 0, 0, 0);
	hand_over(s);
	return 0;
}

/* ---- the reading thread's side ------------------------------------------------------------ */

int stage_inspect(stage *s, struct flow *f, const struct pkt *p)
{
	if (!s->dpi_max || f->dpi_sent >= s->dpi_max || !dpi_wants(p))
		return 0;
	f->dpi_sent++;
	return put_packet(s, f->self, p->ip_hdr, p->ip_cap, p->ts_us);
}

int stage_flow_end(stage *s, struct flow *f, struct flow_record *rec)
{
	return put_record(s, MSG_FINAL, f->self, rec);
}

/* ---- the stage thread ---------------------------------------------------------------------- */

/* The nDPI state of flow slot slot1 (index + 1); with create, allocated when its chunk is
 * new. NULL if it never was, or without memory. */
static struct dpi_state *state_of(stage *s, uint32_t slot1, bool create)
{
	uint32_t i = slot1 - 1, c = i >> SLOT_SHIFT;
	if (c >= s->nchunks) {
		if (!create)
			return NULL;
		struct dpi_state **grown = realloc(s->slots, (c + 1) * sizeof(*grown));
		if (!grown)
			return NULL;
		memset(grown + s->nchunks, 0, (c + 1 - s->nchunks) * sizeof(*grown));
		s->slots = grown;
		s->nchunks = c + 1;
	}
	if (!s->slots[c] && (!create || !(s->slots[c] = calloc(SLOT_CHUNK, sizeof(**s->slots)))))
		return NULL;
	return &s->slots[c][i & (SLOT_CHUNK - 1)];
}

/* A flow's nDPI state, freed and made ready for the slot's next flow. */
static void state_clear(stage *s, struct dpi_state *st)
{
	if (s->dpi)
		dpi_finish(s->dpi, st, NULL);
	dpi_state_free(st);
	memset(st, 0, sizeof(*st));
}

static void to_sinks(stage *s, const struct flow_record *rec)
{
	if (sinks_flow(s->sinks, s->nsinks, rec) != 0)
		atomic_store(&s->failed, 1);
}

static void handle(stage *s, struct msg *m)
{
	uint8_t *body = (uint8_t *)(m + 1);
	if (m->type == MSG_TICK) {
		if (sinks_tick(s->sinks, s->nsinks) != 0)
			atomic_store(&s->failed, 1);
		return;
	}
	if (m->type == MSG_PACKET) {
		if (!s->dpi)
			return;
		struct dpi_state *st = state_of(s, (uint32_t)m->key, true);
		if (!st || dpi_decided(st))
			return; /* without memory for it, the flow is left to the guess at its end */
		uint32_t cap;
		memcpy(&cap, body, sizeof(cap));
		dpi_packet(s->dpi, st, body + sizeof(cap), cap, m->ts_us);
		return;
	}
	/* the record in place: the batch is this thread's until it is handled (messages are
	 * 8-byte aligned, as the record is) */
	struct flow_record *rec = (struct flow_record *)(void *)body;
	struct dpi_state *st = state_of(s, (uint32_t)m->key, false);
	/* the flow's end: nDPI's fields (a guess if it never decided), written once */
	struct dpi_state none = { 0 };
	if (s->dpi)
		dpi_finish(s->dpi, st ? st : &none, rec);
	to_sinks(s, rec);
	if (st)
		state_clear(s, st);
}

static void *run(void *arg)
{
	stage *s = arg;
	if (s->dpi && !dpi_start(s->dpi)) {
		s->dpi = NULL;
		atomic_store(&s->failed, 1);
	}
	for (;;) {
		pthread_mutex_lock(&s->mu);
		while (!s->queue_head && !s->stopping)
			pthread_cond_wait(&s->cv_empty, &s->mu);
		struct batch *b = s->queue_head;
		if (!b) {
			pthread_mutex_unlock(&s->mu);
			return NULL; /* stopping, and all handled */
		}
		s->queue_head = b->next;
		if (!s->queue_head)
			s->queue_tail = NULL;
		pthread_mutex_unlock(&s->mu);
		for (size_t off = 0; off < b->used;) {
			struct msg *m = (struct msg *)(b->data + off);
			if (!atomic_load_explicit(&s->failed, memory_order_relaxed))
				handle(s, m);
			off += sizeof(*m) + m->len;
		}
		pthread_mutex_lock(&s->mu);
		b->next = s->free_list;
		s->free_list = b;
		pthread_cond_signal(&s->cv_full);
		pthread_mutex_unlock(&s->mu);
	}
}

stage *stage_start(dpi_ctx *dpi, struct sink *sinks, unsigned nsinks)
{
	stage *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	/* the queue's memory bound, allocated at once: its batches come into use in order, each
	 * new one in pages nothing touched yet (4 MiB: two huge pages rather than 1024 faults) */
	if (!(s->pool = huge_alloc((size_t)STAGE_BATCHES * sizeof(struct batch), false))) {
		free(s);
		return NULL;
	}
	s->dpi = dpi;
	s->dpi_max = dpi ? dpi_max_packets(dpi) : 0;
	s->sinks = sinks;
	s->nsinks = nsinks;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv_full, NULL);
	pthread_cond_init(&s->cv_empty, NULL);
	/* signals (SIGINT, SIGTERM) stay with the reading thread, which stops the run */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&s->thread, NULL, run, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		pthread_mutex_destroy(&s->mu);
		pthread_cond_destroy(&s->cv_full);
		pthread_cond_destroy(&s->cv_empty);
		free(s->pool);
		free(s);
		return NULL;
	}
	return s;
}

int stage_stop(stage *s)
{
	if (!s)
		return 0;
	hand_over(s);
	pthread_mutex_lock(&s->mu);
	s->stopping = true;
	pthread_cond_signal(&s->cv_empty);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->thread, NULL);
	int rc = atomic_load(&s->failed) ? -1 : 0;
	for (uint32_t c = 0; c < s->nchunks; c++) { /* flows left only after a failure */
		for (uint32_t i = 0; s->slots[c] && i < SLOT_CHUNK; i++)
			state_clear(s, &s->slots[c][i]);
		free(s->slots[c]);
	}
	free(s->slots);
	free(s->pool); /* every batch: filling, queued or free */
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv_full);
	pthread_cond_destroy(&s->cv_empty);
	free(s);
	return rc;
}
