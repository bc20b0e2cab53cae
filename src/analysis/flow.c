/* Bounded bidirectional flow table: a chained hash over a pooled array of flows, plus three
 * expiry lists (closed, half-open, active) each kept in order of last activity, so expiry and
 * eviction take the list heads in O(1). Flows are allocated in chunks, never per packet. */
#include "flow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "hugemem.h"

/* A chunk is one 2 MiB page, filled with as many flows as fit: a power-of-two count of flows
 * rounded the chunk up to the next page, and every flow paid for the waste (4 MiB for 2.7 MiB of
 * 688-byte flows: 1000 bytes a flow). The divisions by a constant compile to multiplies. */
#define CHUNK_FLOWS ((uint32_t)(HUGEMEM_PAGE / sizeof(struct flow)))
#define BUCKETS_MIN 4096u
#define DPI_BLOCK 4096u    /* the pool of nDPI states grows this many at a time */
#define ADDR6_BLOCK 4096u  /* the pool of IPv6 flows' addresses: 128 KiB at a time */
#define GONE_WAYS 8u       /* evicted connections' fingerprints: a set is one cache line */ /* the bucket array starts here and doubles with the open flows */
#ifndef FLOW_PREFETCH_BYTES
#define FLOW_PREFETCH_BYTES sizeof(struct flow)
#endif

enum { L_CLOSED = 0, L_HALFOPEN, L_ACTIVE, L_COUNT };

struct layout_entry {
	struct syn_layout l;
	uint16_t next;  /* the chain's next, index + 1; on the free list, the next free */
	uint32_t refs;  /* SYNs of open flows with this layout; 0: free */
};

static const uint64_t list_timeout_us[L_COUNT] = { FLOW_CLOSED_US, FLOW_HALFOPEN_US, FLOW_IDLE_US };

/* An IPv6 flow's addresses (the flow holds its index + 1); a free one holds the next free
 * one's instead. */
union addr6 {
	struct {
		struct ip_addr c, s;
	} a;
	uint32_t next_free;
};

struct flow_list {
	uint32_t head, tail; /* index + 1 */
};

struct flow_table {
	struct flow **chunks;   /* cap / CHUNK_FLOWS chunks, allocated on demand */
	uint32_t nchunks;       /* allocated so far */
	uint32_t cap, count;
	uint32_t *buckets;      /* index + 1 of the first flow in the chain */
	uint32_t mask;          /* buckets - 1: at least the open flows, so chains stay short */
	uint32_t mask_max;      /* the bucket count the cap needs, minus one */
	uint32_t free_head;     /* index + 1, chained through hnext */
	uint32_t seed;          /* per-table hash seed: crafted tuples cannot aim at one chain */
	uint64_t seed64;
	struct flow_list lists[L_COUNT];
	/* fingerprints of evicted connections, so that their later packets are known as theirs
	 * (flow_evicted_seen): sets of eight (a cache line), one of a full set overwritten in
	 * turn; allocated at the first eviction */
	uint64_t *gone;
	uint32_t gone_mask;
	uint8_t gone_turn;
	uint32_t prefetched;    /* the bucket flow_prefetch fetched last, + 1 */
	/* the pool of nDPI states (flow_dpi_state): blocks of DPI_BLOCK, and a stack of the free */
	struct dpi_state **dpi;
	uint32_t dpi_blocks, dpi_used; /* blocks allocated, states ever handed out */
	uint32_t *dpi_free, dpi_nfree, dpi_free_cap;
	/* the pool of IPv6 flows' addresses: blocks of ADDR6_BLOCK, the free ones chained */
	union addr6 **a6;
	uint32_t a6_blocks, a6_used, a6_free; /* blocks, entries ever handed out, first free + 1 */
	/* the distinct SYN option layouts of the open flows (flow_set_layout), each counted by the
	 * sides that hold it and freed when none does; chained by hash; this thread's own */
	struct layout_entry *lay;
	uint16_t *lay_buckets;  /* index + 1 of each chain's first */
	uint32_t lay_cap, lay_used, lay_mask; /* entries allocated, ever handed out; buckets - 1 */
	uint16_t lay_free;      /* index + 1 of a free entry, chained through next */
};

static struct flow *at(const flow_table *t, uint32_t idx1)
{
	uint32_t i = idx1 - 1;
	return &t->chunks[i / CHUNK_FLOWS][i % CHUNK_FLOWS];
}

static uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

flow_table *flow_table_new(uint32_t cap)
{
	if (cap < 16)
		cap = 16;
	if (cap > FLOW_CAP_MAX)
		cap = FLOW_CAP_MAX;
	flow_table *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	uint32_t nb = 16;
	while (nb < cap)
		nb <<= 1;
	t->cap = cap;
	t->mask_max = nb - 1;
	if (nb > BUCKETS_MIN) /* a small array stays in cache while the flows are few */
		nb = BUCKETS_MIN;
	t->mask = nb - 1;
	t->buckets = calloc(nb, sizeof(*t->buckets));
	t->chunks = calloc((cap + CHUNK_FLOWS - 1) / CHUNK_FLOWS, sizeof(*t->chunks));
	if (!t->buckets || !t->chunks) {
		flow_table_free(t);
		return NULL;
	}
	t->seed = (uint32_t)time(NULL) ^ ((uint32_t)getpid() << 16) ^ 0x9e3779b9u;
	t->seed64 = (uint64_t)mix32(t->seed) << 32 | mix32(t->seed ^ 0x85ebca6bu);
	return t;
}

void flow_table_free(flow_table *t)
{
	if (!t)
		return;
	for (uint32_t c = 0; c < t->nchunks; c++)
		free(t->chunks[c]);
	free(t->chunks);
	for (uint32_t b = 0; b < t->dpi_blocks; b++)
		free(t->dpi[b]);
	free(t->dpi);
	free(t->dpi_free);
	for (uint32_t b = 0; b < t->a6_blocks; b++)
		free(t->a6[b]);
	free(t->a6);
	free(t->lay);
	free(t->lay_buckets);
	free(t->buckets);
	free(t->gone);
	free(t);
}

static union addr6 *addr6_at(const flow_table *t, uint32_t idx1)
{
	return &t->a6[(idx1 - 1) / ADDR6_BLOCK][(idx1 - 1) % ADDR6_BLOCK];
}

/* Keeps an IPv6 flow's addresses: their index + 1, 0 without memory. */
static uint32_t addr6_take(flow_table *t, const struct ip_addr *c, const struct ip_addr *s)
{
	uint32_t i = t->a6_free;
	if (i) {
		t->a6_free = addr6_at(t, i)->next_free;
	} else {
		if (t->a6_used == t->a6_blocks * ADDR6_BLOCK) {
			union addr6 **b = realloc(t->a6, (t->a6_blocks + 1) * sizeof(*b));
			if (!b)
				return 0;
			t->a6 = b;
			if (!(b[t->a6_blocks] = malloc(ADDR6_BLOCK * sizeof(union addr6))))
				return 0;
			t->a6_blocks++;
		}
		i = ++t->a6_used;
	}
	union addr6 *e = addr6_at(t, i);
	e->a.c = *c;
	e->a.s = *s;
	return i;
}

static void addr6_give(flow_table *t, uint32_t idx1)
{
	addr6_at(t, idx1)->next_free = t->a6_free;
	t->a6_free = idx1;
}

struct ip_addr flow_addr(const flow_table *t, const struct flow *f, int end)
{
	struct ip_addr a;
	if (f->ip_ver == 6) {
		const union addr6 *e = addr6_at(t, f->addr[0]);
		return end == 0 ? e->a.c : e->a.s;
	}
	memset(&a, 0, sizeof(a));
	memcpy(a.b, &f->addr[end], 4);
	return a;
}

/* One IPv6 endpoint's hash. */
static uint32_t endpoint_hash(uint32_t seed, const struct ip_addr *a, uint16_t port)
{
	uint32_t h = seed ^ port;
	for (int i = 0; i < 4; i++) {
		uint32_t w;
		memcpy(&w, a->b + 4 * i, 4);
		h = mix32(h ^ w);
	}
	return h;
}

/* Symmetric in the two endpoints, so both directions land in one bucket; the full hash, which
 * the mask reduces to a bucket. An IPv4 endpoint (address and port) fits in one word: the
 * smaller word and the larger one go through one seeded multiply-xorshift, a third of the work
 * of mixing each endpoint. */
static uint32_t key_hash(const flow_table *t, uint8_t ip_ver, const struct ip_addr *x, uint16_t xp,
                         const struct ip_addr *y, uint16_t yp)
{
	if (ip_ver == 4) {
		uint32_t xa, ya;
		memcpy(&xa, x->b, 4);
		memcpy(&ya, y->b, 4);
		uint64_t a = (uint64_t)xa << 16 | xp, b = (uint64_t)ya << 16 | yp;
		uint64_t lo = a < b ? a : b, hi = a ^ b ^ lo;
		uint64_t h = (lo ^ t->seed64) * 0x9e3779b97f4a7c15ull;
		h = (h ^ (h >> 29) ^ hi) * 0xbf58476d1ce4e5b9ull;
		return (uint32_t)(h >> 32);
	}
	uint32_t a = endpoint_hash(t->seed, x, xp);
	uint32_t b = endpoint_hash(t->seed, y, yp);
	return mix32((a + b) ^ (a ^ b) * 0x9e3779b1u ^ ip_ver);
}

static uint32_t tuple_hash(const flow_table *t, const struct pkt *p)
{
	return key_hash(t, p->ip_ver, &p->src, p->sport, &p->dst, p->dport) & t->mask;
}

static uint32_t flow_hash(const flow_table *t, const struct flow *f)
{
	struct ip_addr c = flow_addr(t, f, 0), s = flow_addr(t, f, 1);
	return key_hash(t, f->ip_ver, &c, f->c_port, &s, f->s_port);
}

/* A 64-bit fingerprint of p's connection (either direction alike), never 0. */
static uint64_t tuple_fp(const flow_table *t, uint8_t ip_ver, uint8_t transport, const struct ip_addr *x,
                         uint16_t xp, const struct ip_addr *y, uint16_t yp)
{
	uint64_t h = key_hash(t, ip_ver, x, xp, y, yp);
	uint32_t a = endpoint_hash(t->seed ^ 0x5bd1e995u, x, xp), b = endpoint_hash(t->seed ^ 0x5bd1e995u, y, yp);
	h = h << 32 | (uint32_t)(mix32((a + b) ^ (a ^ b) * 0x9e3779b1u ^ transport));
	return h ? h : 1;
}

void flow_evicted_add(flow_table *t, const struct flow *f)
{
	if (!t->gone) {
		uint32_t n = 1024;
		while (n < 4 * (uint64_t)t->cap && n < FLOW_EVICTED_MAX)
			n <<= 1;
		if (!(t->gone = calloc(n, sizeof(*t->gone))))
			return; /* without memory for it, a continuation becomes a row of its own */
		t->gone_mask = n - 1;
	}
	struct ip_addr c = flow_addr(t, f, 0), s = flow_addr(t, f, 1);
	uint64_t fp = tuple_fp(t, f->ip_ver, f->transport, &c, f->c_port, &s, f->s_port);
	uint64_t *set = &t->gone[(uint32_t)fp & t->gone_mask & ~(uint32_t)(GONE_WAYS - 1)];
	for (unsigned w = 0; w < GONE_WAYS; w++) {
		if (set[w] == fp)
			return;
		if (!set[w]) {
			set[w] = fp;
			return;
		}
	}
	set[t->gone_turn++ % GONE_WAYS] = fp; /* a full set: one of its eight forgotten */
}

bool flow_evicted_seen(const flow_table *t, const struct pkt *p)
{
	if (!t->gone)
		return false;
	uint64_t fp = tuple_fp(t, p->ip_ver, p->transport, &p->src, p->sport, &p->dst, p->dport);
	const uint64_t *set = &t->gone[(uint32_t)fp & t->gone_mask & ~(uint32_t)(GONE_WAYS - 1)];
	for (unsigned w = 0; w < GONE_WAYS; w++)
		if (set[w] == fp)
			return true;
	return false;
}

uint32_t flow_default_cap(void)
{
	/* MemAvailable: what can be used without swapping (free memory and reclaimable cache) */
	uint64_t avail = 0;
	FILE *m = fopen("/proc/meminfo", "r");
	if (m) {
		char line[128];
		unsigned long long kib;
		while (fgets(line, sizeof(line), m))
			if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1) {
				avail = (uint64_t)kib * 1024u;
				break;
			}
		fclose(m);
	}
	if (!avail) {
		long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
		if (pages > 0 && page > 0)
			avail = (uint64_t)pages * (uint64_t)page;
	}
	uint64_t n = avail / 100u * FLOW_MEM_PERCENT / (flow_slot_bytes() + FLOW_MEM_EXTRA);
	if (n < FLOW_CAP_MIN)
		n = FLOW_CAP_MIN;
	if (n > FLOW_CAP_MAX)
		n = FLOW_CAP_MAX;
	return (uint32_t)n;
}

/* Doubles the bucket array and rechains every open flow: amortised O(1) per insert. Without
 * memory for it the table keeps its array, and its chains grow longer. */
static void grow_buckets(flow_table *t)
{
	uint32_t nb = (t->mask + 1) * 2;
	/* from 2 MiB on, in huge pages: with a million flows open every lookup reads a random
	 * bucket, and 4 KiB pages made most of them a TLB miss too */
	size_t bytes = (size_t)nb * sizeof(uint32_t);
	uint32_t *nbk = bytes >= HUGEMEM_PAGE ? huge_alloc(bytes, true) : calloc(nb, sizeof(*nbk));
	if (!nbk)
		return;
	for (uint32_t b = 0; b <= t->mask; b++) {
		uint32_t i = t->buckets[b];
		while (i) {
			struct flow *f = at(t, i);
			uint32_t next = f->hnext, h = flow_hash(t, f) & (nb - 1);
			f->hnext = nbk[h];
			nbk[h] = i;
			i = next;
		}
	}
	free(t->buckets);
	t->buckets = nbk;
	t->mask = nb - 1;
}

static bool same_addr(const struct ip_addr *x, const struct ip_addr *y)
{
	uint64_t a[2], b[2];
	memcpy(a, x->b, 16);
	memcpy(b, y->b, 16);
	return ((a[0] ^ b[0]) | (a[1] ^ b[1])) == 0;
}

/* Whether f's client is x and its server y (x4, y4: their first 4 bytes, an IPv4 address). */
static bool same_ends(const flow_table *t, const struct flow *f, const struct ip_addr *x, uint32_t x4,
                      const struct ip_addr *y, uint32_t y4)
{
	if (f->ip_ver != 6) /* the rest of an IPv4 address is zero, in p as it was in f */
		return f->addr[0] == x4 && f->addr[1] == y4;
	const union addr6 *e = addr6_at(t, f->addr[0]);
	return same_addr(&e->a.c, x) && same_addr(&e->a.s, y);
}

struct flow *flow_lookup(flow_table *t, const struct pkt *p, int *dir)
{
	uint32_t src4, dst4;
	memcpy(&src4, p->src.b, 4);
	memcpy(&dst4, p->dst.b, 4);
	for (uint32_t i = t->buckets[tuple_hash(t, p)]; i; i = at(t, i)->hnext) {
		struct flow *f = at(t, i);
		if (f->ip_ver != p->ip_ver || f->transport != p->transport)
			continue;
		if (f->c_port == p->sport && f->s_port == p->dport &&
		    same_ends(t, f, &p->src, src4, &p->dst, dst4)) {
			*dir = 0;
			return f;
		}
		if (f->s_port == p->sport && f->c_port == p->dport &&
		    same_ends(t, f, &p->dst, dst4, &p->src, src4)) {
			*dir = 1;
			return f;
		}
	}
	return NULL;
}

void flow_prefetch(flow_table *t, const struct pkt *p)
{
	/* the flow of the packet before: its bucket arrived meanwhile; the lines a packet's
	 * trackers read (the key, both sides), all of them: with a million flows open each is a
	 * miss of its own otherwise */
	if (t->prefetched) {
		uint32_t i = t->buckets[(t->prefetched - 1) & t->mask];
		if (i) {
			const char *f = (const char *)at(t, i);
			for (size_t off = 0; off < FLOW_PREFETCH_BYTES; off += 64)
				__builtin_prefetch(f + off);
		}
	}
	uint32_t b = tuple_hash(t, p);
	__builtin_prefetch(&t->buckets[b]);
	t->prefetched = b + 1;
}

static void list_unlink(flow_table *t, struct flow *f)
{
	struct flow_list *l = &t->lists[f->list];
	if (f->lprev)
		at(t, f->lprev)->lnext = f->lnext;
	else
		l->head = f->lnext;
	if (f->lnext)
		at(t, f->lnext)->lprev = f->lprev;
	else
		l->tail = f->lprev;
	f->lprev = f->lnext = 0;
}

static void list_append(flow_table *t, struct flow *f, uint32_t idx, uint8_t list)
{
	struct flow_list *l = &t->lists[list];
	f->list = list;
	f->lnext = 0;
	f->lprev = l->tail;
	if (l->tail)
		at(t, l->tail)->lnext = idx;
	else
		l->head = idx;
	l->tail = idx;
}

static uint8_t list_for(const struct flow *f)
{
	if (f->c.rst || f->s.rst || (f->c.fin && f->s.fin))
		return L_CLOSED;
	if (flow_seen(f, FT_SYN) && !flow_seen(f, FT_SYNACK) && !f->s.pkts)
		return L_HALFOPEN;
	return L_ACTIVE;
}

struct flow *flow_insert(flow_table *t, const struct pkt *p, bool src_is_client)
{
	uint32_t idx = t->free_head;
	if (idx) {
		t->free_head = at(t, idx)->hnext;
	} else {
		if (t->count >= t->cap)
			return NULL;
		uint32_t used = t->nchunks * CHUNK_FLOWS;
		if (t->count >= used) { /* every allocated slot is in use: add a chunk */
			/* one 2 MiB page of flows: touched end to end right below */
			/* not cleared here: each slot is cleared as it is taken (below), and the loop
			 * after this writes every slot's link anyway */
			struct flow *chunk = huge_alloc((size_t)CHUNK_FLOWS * sizeof(*chunk), false);
			if (!chunk)
				return NULL;
			t->chunks[t->nchunks++] = chunk;
			/* slots of the new chunk beyond the first go on the free list */
			for (uint32_t i = CHUNK_FLOWS - 1; i >= 1; i--) {
				uint32_t k = used + i + 1;
				if (k - 1 >= t->cap)
					continue;
				at(t, k)->hnext = t->free_head;
				t->free_head = k;
			}
			idx = used + 1;
		} else {
			return NULL; /* cannot happen: free slots are on the free list */
		}
	}
	const struct ip_addr *c = src_is_client ? &p->src : &p->dst, *s = src_is_client ? &p->dst : &p->src;
	uint32_t a6 = 0;
	if (p->ip_ver == 6 && !(a6 = addr6_take(t, c, s))) {
		at(t, idx)->hnext = t->free_head; /* no memory for its addresses: the slot stays free */
		t->free_head = idx;
		return NULL;
	}
	struct flow *f = at(t, idx);
	memset(f, 0, sizeof(*f));
	f->self = idx;
	f->in_use = true;
	f->ip_ver = p->ip_ver;
	f->transport = p->transport;
	if (a6) {
		f->addr[0] = a6;
	} else {
		memcpy(&f->addr[0], c->b, 4);
		memcpy(&f->addr[1], s->b, 4);
	}
	f->c_port = src_is_client ? p->sport : p->dport;
	f->s_port = src_is_client ? p->dport : p->sport;
	if (t->count >= t->mask && t->mask < t->mask_max)
		grow_buckets(t);
	uint32_t b = tuple_hash(t, p);
	f->hnext = t->buckets[b];
	t->buckets[b] = idx;
	list_append(t, f, idx, L_ACTIVE);
	t->count++;
	return f;
}

void flow_remove(flow_table *t, struct flow *f)
{
	uint32_t idx = f->self;
	if (!idx || !f->in_use)
		return;
	uint32_t *pp = &t->buckets[flow_hash(t, f) & t->mask];
	while (*pp && *pp != idx)
		pp = &at(t, *pp)->hnext;
	if (*pp)
		*pp = f->hnext;
	list_unlink(t, f);
	flow_release(t, f);
	if (f->ip_ver == 6)
		addr6_give(t, f->addr[0]);
	if (f->dpi_idx && t->dpi_nfree < t->dpi_free_cap) /* room for every state handed out */
		t->dpi_free[t->dpi_nfree++] = f->dpi_idx;
	f->dpi_idx = 0;
	f->in_use = false;
	f->hnext = t->free_head;
	t->free_head = idx;
	t->count--;
}

/* seeded as the tuples' hash is: crafted SYNs cannot aim their layouts at one chain */
static uint32_t layout_hash(const flow_table *t, const struct syn_layout *l)
{
	uint32_t h = (2166136261u ^ t->seed) ^ l->len; /* FNV-1a */
	h = (h ^ l->eol_pad) * 16777619u;
	for (unsigned i = 0; i < l->len; i++)
		h = (h ^ l->kinds[i]) * 16777619u;
	return mix32(h);
}

static bool same_layout(const struct syn_layout *a, const struct syn_layout *b)
{
	return a->len == b->len && a->eol_pad == b->eol_pad && memcmp(a->kinds, b->kinds, a->len) == 0;
}

/* Room for twice the layouts (at most SYN_LAYOUT_TABLE_MAX), rechained; false at the limit or
 * without memory. Only when no entry is free: every entry is in a chain. */
static bool layouts_grow(flow_table *t)
{
	uint32_t cap = t->lay_cap ? t->lay_cap * 2 : 64;
	if (cap > SYN_LAYOUT_TABLE_MAX)
		cap = SYN_LAYOUT_TABLE_MAX;
	if (cap <= t->lay_cap)
		return false;
	uint32_t nb = 64;
	while (nb < cap)
		nb <<= 1;
	uint16_t *b = calloc(nb, sizeof(*b));
	if (!b && !t->lay_buckets)
		return false;
	struct layout_entry *e = realloc(t->lay, cap * sizeof(*e));
	if (!e) {
		free(b);
		return false;
	}
	t->lay = e;
	t->lay_cap = cap;
	if (!b)
		return true; /* the old chains hold the more entries too */
	free(t->lay_buckets);
	t->lay_buckets = b;
	t->lay_mask = nb - 1;
	for (uint32_t i = 1; i <= t->lay_used; i++) {
		uint32_t h = layout_hash(t, &e[i - 1].l) & t->lay_mask;
		e[i - 1].next = b[h];
		b[h] = (uint16_t)i;
	}
	return true;
}

/* l's index + 1 in t, counted once more; 0 when t is full (or without memory). */
static uint16_t layout_intern(flow_table *t, const struct syn_layout *l)
{
	uint32_t h = layout_hash(t, l);
	if (t->lay_buckets)
		for (uint16_t i = t->lay_buckets[h & t->lay_mask]; i; i = t->lay[i - 1].next)
			if (same_layout(&t->lay[i - 1].l, l)) {
				t->lay[i - 1].refs++;
				return i;
			}
	uint16_t i = t->lay_free;
	if (i) {
		t->lay_free = t->lay[i - 1].next;
	} else {
		if (t->lay_used == t->lay_cap && !layouts_grow(t))
			return 0;
		i = (uint16_t)++t->lay_used;
	}
	struct layout_entry *e = &t->lay[i - 1];
	e->l = *l;
	e->refs = 1;
	e->next = t->lay_buckets[h & t->lay_mask];
	t->lay_buckets[h & t->lay_mask] = i;
	return i;
}

/* One holder less of layout index i; the last one frees its entry. */
static void layout_release(flow_table *t, uint16_t i)
{
	if (i == SYN_LAYOUT_EMPTY || i > SYN_LAYOUT_TABLE_MAX)
		return;
	struct layout_entry *e = &t->lay[i - 1];
	if (--e->refs)
		return;
	uint16_t *pp = &t->lay_buckets[layout_hash(t, &e->l) & t->lay_mask];
	while (*pp != i)
		pp = &t->lay[*pp - 1].next;
	*pp = e->next;
	e->next = t->lay_free;
	t->lay_free = i;
}

void flow_set_layout(flow_table *t, struct flow *f, int dir, const struct syn_layout *l)
{
	struct syn_info *si = dir == 0 ? &f->c.syn : &f->s.syn;
	layout_release(t, si->layout); /* the one it had (a second SYN taken) */
	if (!l->len) {
		si->layout = SYN_LAYOUT_EMPTY;
		return;
	}
	uint16_t i = layout_intern(t, l);
	if (i) {
		si->layout = i;
		return;
	}
	/* as many distinct layouts open at once as an index holds (crafted SYNs): this flow's
	 * own copy, exact */
	if (!f->wide && !(f->wide = calloc(1, sizeof(*f->wide)))) {
		si->layout = SYN_LAYOUT_LOST; /* no memory: unknown, never another flow's */
		return;
	}
	f->wide->layout[dir] = *l;
	si->layout = SYN_LAYOUT_WIDE;
}

const struct syn_layout *flow_layout(const flow_table *t, const struct flow *f, int dir)
{
	static const struct syn_layout empty;
	uint16_t i = (dir == 0 ? &f->c.syn : &f->s.syn)->layout;
	if (i == SYN_LAYOUT_EMPTY)
		return &empty;
	if (i == SYN_LAYOUT_WIDE)
		return &f->wide->layout[dir];
	if (i == SYN_LAYOUT_LOST)
		return NULL;
	return &t->lay[i - 1].l;
}

void flow_release(flow_table *t, struct flow *f)
{
	layout_release(t, f->c.syn.layout);
	layout_release(t, f->s.syn.layout);
	f->c.syn.layout = f->s.syn.layout = SYN_LAYOUT_EMPTY;
	free(f->wide);
	f->wide = NULL;
	f->times_wide = f->last_wide = false;
	f->c.holed = f->s.holed = f->c.counts_wide = f->s.counts_wide = false;
	f->c.ff.first_wide = f->c.ff.next_wide = f->s.ff.first_wide = f->s.ff.next_wide = false;
	f->c.ff.gapped = f->s.ff.gapped = false;
}

void flow_touch(flow_table *t, struct flow *f)
{
	uint32_t idx = f->self;
	if (!idx)
		return;
	uint8_t l = list_for(f);
	if (f->list == l && t->lists[l].tail == idx)
		return;
	list_unlink(t, f);
	list_append(t, f, idx, l);
}

/* The flow after f in its expiry list, fetched while f is written out: expiry and the final
 * flush take flows in list order, each one's row reads all of it, and with many flows open
 * each is cold. */
static void prefetch_next(const flow_table *t, const struct flow *f)
{
	if (!f->lnext)
		return;
	const char *n = (const char *)at(t, f->lnext);
	for (size_t off = 0; off < sizeof(struct flow); off += 64)
		__builtin_prefetch(n + off);
}

struct flow *flow_expired(flow_table *t, uint64_t now_us)
{
	for (int l = 0; l < L_COUNT; l++) {
		uint32_t h = t->lists[l].head;
		if (h) {
			struct flow *f = at(t, h);
			if (flow_last_us(f) + list_timeout_us[l] <= now_us) {
				prefetch_next(t, f);
				return f;
			}
		}
	}
	return NULL;
}

struct flow *flow_oldest(flow_table *t)
{
	for (int l = 0; l < L_COUNT; l++)
		if (t->lists[l].head) {
			struct flow *f = at(t, t->lists[l].head);
			prefetch_next(t, f);
			return f;
		}
	return NULL;
}

static struct dpi_state *dpi_at(const flow_table *t, uint32_t idx1)
{
	return &t->dpi[(idx1 - 1) / DPI_BLOCK][(idx1 - 1) % DPI_BLOCK];
}

struct dpi_state *flow_dpi_peek(const flow_table *t, const struct flow *f)
{
	return f->dpi_idx ? dpi_at(t, f->dpi_idx) : NULL;
}

struct dpi_state *flow_dpi_state(flow_table *t, struct flow *f)
{
	if (f->dpi_idx)
		return dpi_at(t, f->dpi_idx);
	uint32_t idx;
	if (t->dpi_nfree) {
		idx = t->dpi_free[--t->dpi_nfree];
	} else {
		if (t->dpi_used == t->dpi_blocks * DPI_BLOCK) { /* a block more, and room to free it */
			struct dpi_state **b = realloc(t->dpi, (t->dpi_blocks + 1) * sizeof(*b));
			if (!b)
				return NULL;
			t->dpi = b;
			uint32_t *fr = realloc(t->dpi_free, (size_t)(t->dpi_blocks + 1) * DPI_BLOCK * sizeof(*fr));
			if (!fr)
				return NULL;
			t->dpi_free = fr;
			t->dpi_free_cap = (t->dpi_blocks + 1) * DPI_BLOCK;
			if (!(t->dpi[t->dpi_blocks] = malloc(DPI_BLOCK * sizeof(struct dpi_state))))
				return NULL;
			t->dpi_blocks++;
		}
		idx = ++t->dpi_used;
	}
	f->dpi_idx = idx;
	struct dpi_state *st = dpi_at(t, idx);
	memset(st, 0, sizeof(*st));
	return st;
}

uint32_t flow_count(const flow_table *t) { return t->count; }

/* the flow, at most two buckets (the array doubles at one flow a bucket), and the DPI stage's
 * state of its slot (stage.c) */
size_t flow_slot_bytes(void) { return sizeof(struct flow) + 2 * sizeof(uint32_t) + sizeof(struct dpi_state); }
