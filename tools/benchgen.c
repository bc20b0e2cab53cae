/* benchgen: a large capture for the benchmark, made by cloning real flows.
 *
 *   benchgen OUT.pcap CLONES SPACING_US [SNAPLEN] SRC.pcap...
 *
 * Each clone replays one source capture (Ethernet, IPv4) shifted by k * SPACING_US, with the
 * client address rewritten to a fresh one (10.0.0.0 + k + 1) and the server to one of 4096
 * (172.16.0.0 + k % 4096), so clones never share a 5-tuple and thousands are open at once. The
 * clones are merged in time order with a heap. SNAPLEN (default 262144) cuts every record, for
 * the headers-only variant. IP checksums are recomputed; TCP checksums are left as they were.
 *
 *   benchgen OUT.pcap --open N [SPACING_US]
 *
 * N connections all open at once (issue 29): one starts every SPACING_US (default 2); each is a
 * handshake, a 100-byte request, ten 1448-byte segments from the server and the client's ACK,
 * with timestamps and a 20 ms round trip. Once every connection has sent all that, they close
 * in the same order (FIN, FIN, ACK): 18 packets a connection, headers only (each record is cut
 * at the end of its TCP header). Clients 10.0.0.0/8 (64 ports an address), 4096 servers
 * 172.16.0.0/20 on port 443. */
#include <stdbool.h>
#include <stddef.h>
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

/* A binary min-heap of n elements of size bytes at h, ordered by the uint64_t time stamp each
 * element starts with (struct clone, struct open_cur). */
#define HEAP_ELEM_MAX 32

static uint64_t heap_key(const void *h, size_t size, size_t i)
{
	uint64_t v;
	memcpy(&v, (const char *)h + i * size, sizeof(v));
	return v;
}

static void heap_swap(void *h, size_t size, size_t i, size_t j)
{
	char t[HEAP_ELEM_MAX], *a = (char *)h + i * size, *b = (char *)h + j * size;
	memcpy(t, a, size);
	memcpy(a, b, size);
	memcpy(b, t, size);
}

_Static_assert(sizeof(struct clone) <= HEAP_ELEM_MAX && offsetof(struct clone, next_ts) == 0,
               "heap elements start with their time stamp");

static void heap_down(void *h, size_t size, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		if (l < n && heap_key(h, size, l) < heap_key(h, size, m))
			m = l;
		if (l + 1 < n && heap_key(h, size, l + 1) < heap_key(h, size, m))
			m = l + 1;
		if (m == i)
			return;
		heap_swap(h, size, i, m);
		i = m;
	}
}

static void heap_up(void *h, size_t size, size_t i)
{
	while (i && heap_key(h, size, (i - 1) / 2) > heap_key(h, size, i)) {
		heap_swap(h, size, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void put32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24); }

/* ---- --open: N connections open at once ------------------------------------------------- */

#define OPEN_RTT_US 20000u
#define OPEN_EVENTS 18

/* One packet of a connection's script: when (after the connection's phase start), who sends,
 * its flags, relative sequence and ack, payload, and the segment index for data. */
struct open_ev {
	uint32_t at_us;
	uint8_t from_client, flags;
	uint32_t seq, ack, len; /* relative to the sender's and the receiver's ISN */
	uint8_t close;          /* 1: in the closing phase */
};

static struct open_ev open_script[OPEN_EVENTS];

static void open_script_init(void)
{
	const uint32_t R = OPEN_RTT_US, req = 100, seg = 1448, resp = 10 * seg;
	int n = 0;
	/* SYN, SYN-ACK, ACK, request */
	open_script[n++] = (struct open_ev){ 0, 1, 0x02, 0, 0, 0, 0 };
	open_script[n++] = (struct open_ev){ R / 2, 0, 0x12, 0, 1, 0, 0 };
	open_script[n++] = (struct open_ev){ R, 1, 0x10, 1, 1, 0, 0 };
	open_script[n++] = (struct open_ev){ R + 20, 1, 0x18, 1, 1, req, 0 };
	/* ten segments half a round trip later (the server's side of the path is the capture's
	 * far half), 12 us apart, then the client's ACK of them all a round trip after the first */
	for (uint32_t i = 0; i < 10; i++)
		open_script[n++] = (struct open_ev){ R + R / 2 + 20 + 12 * i, 0, (uint8_t)(i == 9 ? 0x18 : 0x10),
		                                     1 + i * seg, 1 + req, seg, 0 };
	open_script[n++] = (struct open_ev){ 2 * R + 20 + 12 * 9, 1, 0x10, 1 + req, 1 + resp, 0, 0 };
	/* closing: the client's FIN, the server's, the last ACK */
	open_script[n++] = (struct open_ev){ 0, 1, 0x11, 1 + req, 1 + resp, 0, 1 };
	open_script[n++] = (struct open_ev){ R / 2, 0, 0x11, 1 + resp, 2 + req, 0, 1 };
	open_script[n++] = (struct open_ev){ R, 1, 0x10, 2 + req, 2 + resp, 0, 1 };
}

static void put_be16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void put_be32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v; }

/* Writes connection k's event e at capture time ts_us (absolute, microseconds) into out;
 * returns the captured length, *wire the frame's length on the wire. */
static uint32_t open_frame(uint8_t *out, uint32_t k, int e, uint64_t ts_us, uint32_t *wire)
{
	const struct open_ev *ev = &open_script[e];
	uint32_t cli = 0x0a000000u + (k >> 6) + 1, srv = 0xac100000u + (k % 4096);
	uint32_t cport = 10000 + (k & 63), sport = 443;
	uint32_t cisn = k * 2654435761u, sisn = ~k * 40503u + 12345u;
	uint32_t src = ev->from_client ? cli : srv, dst = ev->from_client ? srv : cli;
	bool syn = (ev->flags & 0x02) != 0;
	uint32_t topt = syn ? 20 : 12, thl = 20 + topt;
	memset(out, 0, 14 + 20 + thl);
	out[5] = 1; out[11] = 2; out[12] = 8; /* Ethernet, IPv4 */
	uint8_t *ip = out + 14;
	ip[0] = 0x45;
	put_be16(ip + 2, 20 + thl + ev->len);
	put_be16(ip + 4, (k + (uint32_t)e) & 0xffff);
	ip[6] = 0x40; /* DF */
	ip[8] = ev->from_client ? 64 : 58;
	ip[9] = 6;
	put_be32(ip + 12, src);
	put_be32(ip + 16, dst);
	uint32_t sum = 0;
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	put_be16(ip + 10, ~sum & 0xffff);
	uint8_t *t = ip + 20;
	put_be16(t, ev->from_client ? cport : sport);
	put_be16(t + 2, ev->from_client ? sport : cport);
	put_be32(t + 4, (ev->from_client ? cisn : sisn) + ev->seq);
	put_be32(t + 8, (ev->flags & 0x10) ? (ev->from_client ? sisn : cisn) + ev->ack : 0);
	t[12] = (uint8_t)((thl / 4) << 4);
	t[13] = ev->flags;
	put_be16(t + 14, syn ? 64240 : ev->from_client ? 2049 : 509); /* scaled by 7 and 9 */
	/* each side's clock ticks once a millisecond from an offset of its own; the echo is the
	 * peer's clock at the packet this one answers (half a round trip earlier) */
	uint32_t ms = (uint32_t)(ts_us / 1000);
	uint32_t own = (ev->from_client ? k * 7919u : k * 104729u + 77u) + ms;
	uint32_t peer = (ev->from_client ? k * 104729u + 77u : k * 7919u) + ms - OPEN_RTT_US / 2000;
	uint8_t *o = t + 20;
	if (syn) {
		o[0] = 2; o[1] = 4; put_be16(o + 2, 1460);  /* MSS */
		o[4] = 4; o[5] = 2;                         /* SACK permitted */
		o[6] = 8; o[7] = 10; put_be32(o + 8, own); put_be32(o + 12, ev->from_client ? 0 : peer);
		o[16] = 1; o[17] = 3; o[18] = 3; o[19] = ev->from_client ? 7 : 9; /* NOP, window scale */
	} else {
		o[0] = 1; o[1] = 1; o[2] = 8; o[3] = 10; put_be32(o + 4, own); put_be32(o + 8, peer);
	}
	*wire = 14 + 20 + thl + ev->len;
	return 14 + 20 + thl;
}

struct open_cur {
	uint64_t next_ts;
	uint32_t k;
	int e; /* next event */
};

_Static_assert(sizeof(struct open_cur) <= HEAP_ELEM_MAX && offsetof(struct open_cur, next_ts) == 0,
               "heap elements start with their time stamp");

/* One phase (opening: events first..last-1 of the script; closing: the rest) of all N
 * connections, connection k starting at t0 + k * spacing, merged in time order. */
static int open_phase(FILE *out, uint32_t n, uint64_t spacing, uint64_t t0, int first, int last,
                      uint64_t *packets, uint64_t *bytes)
{
	size_t span = (size_t)(open_script[last - 1].at_us / (spacing ? spacing : 1)) + 2;
	struct open_cur *heap = malloc((span < n ? span : n) * sizeof(*heap) + sizeof(*heap));
	if (!heap)
		return -1;
	size_t nh = 0;
	uint32_t started = 0;
	static uint8_t frame[128];
	while (started < n || nh) {
		while (started < n && (!nh || t0 + (uint64_t)started * spacing <= heap[0].next_ts)) {
			heap[nh] = (struct open_cur){ t0 + (uint64_t)started * spacing + open_script[first].at_us, started, first };
			heap_up(heap, sizeof(*heap), nh++);
			started++;
		}
		struct open_cur *c = &heap[0];
		uint32_t wire, cap = open_frame(frame, c->k, c->e, c->next_ts, &wire);
		uint8_t rh[16];
		put32(rh, (uint32_t)(c->next_ts / 1000000u));
		put32(rh + 4, (uint32_t)(c->next_ts % 1000000u));
		put32(rh + 8, cap);
		put32(rh + 12, wire);
		fwrite(rh, 1, 16, out);
		fwrite(frame, 1, cap, out);
		(*packets)++;
		*bytes += cap + 16;
		if (++c->e < last) {
			c->next_ts = c->next_ts - open_script[c->e - 1].at_us + open_script[c->e].at_us;
			heap_down(heap, sizeof(*heap), nh, 0);
		} else {
			heap[0] = heap[--nh];
			heap_down(heap, sizeof(*heap), nh, 0);
		}
	}
	free(heap);
	return 0;
}

static int open_main(const char *path, uint32_t n, uint64_t spacing)
{
	open_script_init();
	FILE *out = fopen(path, "wb");
	if (!out) {
		perror(path);
		return 2;
	}
	static char buf[1 << 22];
	setvbuf(out, buf, _IOFBF, sizeof(buf));
	uint8_t gh[24] = { 0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0 };
	put32(gh + 16, 262144);
	put32(gh + 20, 1);
	fwrite(gh, 1, 24, out);
	uint64_t t0 = 1700000000ull * 1000000u, packets = 0, bytes = 24;
	int closing = OPEN_EVENTS - 3;
	/* the closing phase begins one second after the last connection's last opening packet */
	uint64_t t1 = t0 + (uint64_t)n * spacing + open_script[closing - 1].at_us + 1000000u;
	if (open_phase(out, n, spacing, t0, 0, closing, &packets, &bytes) != 0 ||
	    open_phase(out, n, spacing, t1, closing, OPEN_EVENTS, &packets, &bytes) != 0 || fclose(out) != 0) {
		perror(path);
		return 2;
	}
	fprintf(stderr, "benchgen: %u connections open at once, %llu packets, %.1f MB\n", n,
	        (unsigned long long)packets, (double)bytes / 1e6);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && strcmp(argv[2], "--open") == 0)
		return open_main(argv[1], (uint32_t)strtoul(argv[3], NULL, 10),
		                 argc >= 5 ? strtoull(argv[4], NULL, 10) : 2);
	if (argc < 5) {
		fprintf(stderr, "usage: benchgen OUT.pcap CLONES SPACING_US [SNAPLEN] SRC.pcap...\n"
		                "       benchgen OUT.pcap --open N [SPACING_US]\n");
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
			heap_up(heap, sizeof(*heap), nh++);
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
			heap_down(heap, sizeof(*heap), nh, 0);
		} else {
			heap[0] = heap[--nh];
			heap_down(heap, sizeof(*heap), nh, 0);
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
