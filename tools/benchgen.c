/* benchgen: a large capture for the benchmark, made by cloning real flows.
 *
 *   benchgen OUT.pcap CLONES SPACING_US [SNAPLEN] SRC.pcap...
 *
 * Each clone replays one source capture (Ethernet, IPv4) shifted by k * SPACING_US, with the
 * client address rewritten to a fresh one (10.0.0.0 + k + 1) and the server to one of 4096
 * (172.16.0.0 + k % 4096), so clones never share a 5-tuple and thousands are open at once. The
 * clones are merged in time order with a heap. SNAPLEN (default 262144) cuts every record, for
 * the headers-only variant. IP checksums are recomputed; TCP checksums are left as they were. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rec {
	uint64_t ts;  /* microseconds from the source's first packet */
	uint32_t len, wire;
	uint8_t *data;
	uint8_t from_client;
};

struct source {
	struct rec *r;
	size_t n;
};

struct clone {
	uint64_t next_ts;
	uint32_t k, src, i;
};

static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

static int load(const char *path, struct source *s)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	uint8_t gh[24], rh[16];
	if (fread(gh, 1, 24, f) != 24 || rd32(gh) != 0xa1b2c3d4 || rd32(gh + 20) != 1) {
		fclose(f);
		return -1;
	}
	size_t cap = 256;
	s->r = malloc(cap * sizeof(*s->r));
	s->n = 0;
	uint64_t first = 0;
	uint32_t client = 0;
	while (fread(rh, 1, 16, f) == 16) {
		uint32_t len = rd32(rh + 8);
		uint8_t *d = malloc(len ? len : 1);
		if (!d || fread(d, 1, len, f) != len)
			break;
		if (len < 34 || d[12] != 8 || d[13] != 0) {
			free(d);
			continue;
		}
		uint64_t ts = (uint64_t)rd32(rh) * 1000000u + rd32(rh + 4);
		if (!s->n) {
			first = ts;
			memcpy(&client, d + 26, 4); /* the first packet (a SYN) comes from the client */
		}
		if (s->n == cap)
			s->r = realloc(s->r, (cap *= 2) * sizeof(*s->r));
		s->r[s->n].ts = ts - first;
		s->r[s->n].len = len;
		s->r[s->n].wire = rd32(rh + 12);
		s->r[s->n].data = d;
		s->r[s->n].from_client = memcmp(d + 26, &client, 4) == 0;
		s->n++;
	}
	fclose(f);
	return s->n ? 0 : -1;
}

static void heap_down(struct clone *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		if (l < n && h[l].next_ts < h[m].next_ts)
			m = l;
		if (l + 1 < n && h[l + 1].next_ts < h[m].next_ts)
			m = l + 1;
		if (m == i)
			return;
		struct clone t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

static void heap_up(struct clone *h, size_t i)
{
	while (i && h[(i - 1) / 2].next_ts > h[i].next_ts) {
		struct clone t = h[i];
		h[i] = h[(i - 1) / 2];
		h[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

static void put32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24); }

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: benchgen OUT.pcap CLONES SPACING_US [SNAPLEN] SRC.pcap...\n");
		return 1;
	}
	uint32_t clones = (uint32_t)strtoul(argv[2], NULL, 10);
	uint64_t spacing = strtoull(argv[3], NULL, 10);
	int argi = 4;
	uint32_t snap = 262144;
	char *end;
	unsigned long v = strtoul(argv[4], &end, 10);
	if (!*end) {
		snap = (uint32_t)v;
		argi = 5;
	}
	size_t nsrc = (size_t)(argc - argi);
	struct source *src = calloc(nsrc, sizeof(*src));
	size_t ok = 0;
	for (size_t i = 0; i < nsrc; i++)
		if (load(argv[argi + (int)i], &src[ok]) == 0)
			ok++;
		else
			fprintf(stderr, "benchgen: skipping %s (not an Ethernet IPv4 pcap)\n", argv[argi + (int)i]);
	if (!ok || !clones)
		return 1;
	FILE *out = fopen(argv[1], "wb");
	if (!out) {
		perror(argv[1]);
		return 2;
	}
	static char buf[1 << 22];
	setvbuf(out, buf, _IOFBF, sizeof(buf));
	uint8_t gh[24] = { 0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0 };
	put32(gh + 16, snap);
	put32(gh + 20, 1);
	fwrite(gh, 1, 24, out);
	struct clone *heap = malloc(clones * sizeof(*heap));
	size_t nh = 0;
	uint32_t started = 0;
	uint64_t t0 = 1700000000ull * 1000000u, packets = 0, bytes = 0;
	static uint8_t frame[70000];
	while (started < clones || nh) {
		/* start every clone due before the heap's next packet */
		while (started < clones && (!nh || (uint64_t)started * spacing <= heap[0].next_ts)) {
			struct clone c = { (uint64_t)started * spacing, started, started % (uint32_t)ok, 0 };
			heap[nh] = c;
			heap_up(heap, nh++);
			started++;
		}
		struct clone *c = &heap[0];
		struct rec *r = &src[c->src].r[c->i];
		uint32_t cap = r->len < snap ? r->len : snap;
		memcpy(frame, r->data, r->len);
		uint32_t cli = 0x0a000000u + c->k + 1, srv = 0xac100000u + (c->k % 4096);
		uint32_t a = r->from_client ? cli : srv, b = r->from_client ? srv : cli;
		uint8_t *ip = frame + 14;
		ip[12] = (uint8_t)(a >> 24); ip[13] = (uint8_t)(a >> 16); ip[14] = (uint8_t)(a >> 8); ip[15] = (uint8_t)a;
		ip[16] = (uint8_t)(b >> 24); ip[17] = (uint8_t)(b >> 16); ip[18] = (uint8_t)(b >> 8); ip[19] = (uint8_t)b;
		ip[10] = ip[11] = 0;
		uint32_t sum = 0, ihl = (ip[0] & 15u) * 4;
		for (uint32_t i = 0; i + 1 < ihl; i += 2)
			sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		ip[10] = (uint8_t)(~sum >> 8);
		ip[11] = (uint8_t)~sum;
		uint64_t ts = t0 + c->next_ts;
		uint8_t rh[16];
		put32(rh, (uint32_t)(ts / 1000000u));
		put32(rh + 4, (uint32_t)(ts % 1000000u));
		put32(rh + 8, cap);
		put32(rh + 12, r->wire);
		fwrite(rh, 1, 16, out);
		fwrite(frame, 1, cap, out);
		packets++;
		bytes += cap + 16;
		if (++c->i < src[c->src].n) {
			c->next_ts = (uint64_t)c->k * spacing + src[c->src].r[c->i].ts;
			heap_down(heap, nh, 0);
		} else {
			heap[0] = heap[--nh];
			heap_down(heap, nh, 0);
		}
	}
	if (fclose(out) != 0) {
		perror(argv[1]);
		return 2;
	}
	fprintf(stderr, "benchgen: %u flows cloned from %zu captures, %llu packets, %.1f MB\n", clones, ok,
	        (unsigned long long)packets, (double)bytes / 1e6);
	return 0;
}
