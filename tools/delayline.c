/* delayline: a user-space delay line for the ground-truth harness (this kernel has no netem).
 * Bridges two interfaces with AF_PACKET sockets and releases every frame a fixed one-way delay
 * after it arrived, in order per direction. Options make the path rough like real ones:
 *
 *   delayline IF_A IF_B DELAY_US [options]
 *
 *   --drop DIR:N[,M...]      drop the Nth (Mth, ...) TCP frame carrying payload in DIR (counted
 *                            over the whole run, retransmissions and SYN data included);
 *                            repeatable. DIR is a2b (IF_A -> IF_B) or b2a.
 *   --synack-delay [DIR:]US  extra delay on TCP SYN+ACK frames only (both directions without
 *                            DIR; repeatable). A per-frame extra delay: frames behind a delayed
 *                            SYN-ACK may overtake it.
 *   --hold-acks DIR:US       pure ACKs (TCP, no payload, no SYN/FIN/RST) in DIR are held and
 *                            released in aggregates at the next multiple of US of a clock
 *                            started at the first held ACK (then delayed as usual), except the
 *                            handshake's ACK (ack == ISN + 1 of the SYN-ACK seen the other way
 *                            for that connection). Later frames in DIR queue behind held ones.
 *   --hold-tail DIR:K:US[:GAP_US]
 *                            the tail of each burst of data frames in DIR is held US longer:
 *                            a TCP frame with payload that arrives within GAP_US (default
 *                            2000) of the previous one in DIR belongs to its burst, and every
 *                            frame of a burst after its K-th is released US later than the
 *                            delay alone would (order kept: frames behind wait too).
 *   --rate DIR:BPS[:QBYTES]  a bottleneck in DIR: release = max(arrival + delay, previous
 *                            release) + len * 8 / BPS, drop-tail when the backlog plus the frame
 *                            would exceed QBYTES (default 262144).
 *   --jitter US              every frame's delay gets a uniform random extra in [0, US]; the
 *                            order stays FIFO (release = max(computed, previous release)).
 *   --seed N                 seed of --jitter's generator (default 1): reproducible draws.
 *   --vnet                   frames keep their offload state (PACKET_VNET_HDR): a TSO or GSO
 *                            super-packet from a host with offloads on crosses as one frame and
 *                            is split (and its checksum filled) by the kernel as it leaves IF_B
 *                            or IF_A, as a NIC would on the wire; --drop, --hold-tail and --rate
 *                            then count a super-packet as one frame.
 *
 * --hold-tail models link-layer aggregation and scheduling: a Wi-Fi access point sends what
 * fits in one aggregate (A-MPDU length, TXOP limit) and the rest of a burst waits for its next
 * channel access; a cellular base station serves a burst in the grant of one TTI and the rest
 * in later ones. What is cut off is whatever arrived after the aggregate filled, so the hold
 * falls on the frames after the K-th of a burst (known when each frame arrives, unlike "the
 * last N", which would need the burst's end before releasing anything). The server's stack is
 * untouched: it sent the whole burst at once, with one TSval and one TSecr; only captures past
 * this point see its tail late, up to a round trip (US near the RTT: the tail comes with the
 * next flight).
 *
 * Per direction and frame: extra = jitter draw, plus US for a held tail; a SYN-ACK with
 * --synack-delay leaves at arrival + delay + extra + synack delay, outside the FIFO; any other
 * frame's release is
 * max(arrival [held to the next aggregate boundary] + delay + extra, previous release), plus its
 * serialisation time under --rate. Runs until SIGTERM/SIGINT, then prints counters on stderr.
 * Interfaces should have offloads off so frames stay MTU-sized (jumbo frames are fine), or
 * --vnet where a host beside the line has them on (a server's own capture). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define QLEN 65536
#define FRAME_MAX 65536 /* jumbo frames (9000 MTU + headers) and then some */
#define SIDE_MAX 256    /* delayed SYN-ACKs in flight per direction */
#define MAX_DROPS 64
#define ISN_SLOTS 256

struct pkt {
	uint64_t release_ns;
	uint32_t len;
	uint8_t *data;
};

struct dir {
	/* FIFO of frames in release order, and the delayed SYN-ACKs beside it */
	struct pkt *q;
	unsigned head, tail; /* head = next to send */
	uint64_t last_release;
	struct pkt side[SIDE_MAX];
	int nside;
	/* configuration */
	long drops[MAX_DROPS];
	int ndrops;
	uint64_t synack_ns;
	uint64_t hold_ns;
	uint64_t rate_bps;
	uint64_t qbytes;
	long tail_k;        /* --hold-tail: frames of a burst after the K-th are held ... */
	uint64_t tail_ns;   /* ... this much longer */
	uint64_t tail_gap_ns; /* a data frame this soon after the previous one is in its burst */
	/* state */
	long data_seen;
	long burst_frames;      /* data frames of the current burst so far */
	uint64_t last_data_ns;  /* arrival of the previous data frame */
	int hold_started;
	uint64_t hold_t0;
	/* counters */
	unsigned long fwd, dropped, taildrop, held, synack_delayed, handshake_acks, tails_held;
	unsigned long oversize; /* frames larger than FRAME_MAX, not forwarded */
};

/* a connection's server ISN, as seen from the ACK's side: key = the ACK's 4-tuple */
struct isn_entry {
	int used;
	uint8_t key[36];
	uint32_t isn;
};

struct tcpinfo {
	int is_tcp;
	int payload;
	unsigned flags; /* FIN 1, SYN 2, RST 4, PSH 8, ACK 16 */
	uint32_t seq, ack;
	uint8_t key[36];    /* src addr (16), dst addr (16), sport, dport */
	uint8_t revkey[36]; /* the same 4-tuple seen from the other end */
};

static volatile sig_atomic_t done;
static unsigned vnet; /* --vnet: bytes of struct virtio_net_hdr before each frame, else 0 */
static void on_signal(int s) { (void)s; done = 1; }

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t rng_state = 1;
static uint64_t rng_next(void) /* splitmix64 */
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int open_if(const char *name, int *ifindex)
{
	int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
	if (fd < 0) {
		perror("delayline: socket");
		exit(2);
	}
	*ifindex = (int)if_nametoindex(name);
	if (!*ifindex) {
		fprintf(stderr, "delayline: no interface %s\n", name);
		exit(2);
	}
	struct sockaddr_ll sll;
	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = *ifindex;
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) != 0) {
		perror("delayline: bind");
		exit(2);
	}
	int one = 1;
	setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
	if (vnet && setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) != 0) {
		perror("delayline: PACKET_VNET_HDR");
		exit(2);
	}
	int buf = 8 << 20;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	return fd;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Decodes an Ethernet frame carrying IPv4/IPv6 + TCP (no IPv6 extension headers). */
static void parse(const uint8_t *d, unsigned len, struct tcpinfo *t)
{
	memset(t, 0, sizeof(*t));
	t->payload = -1;
	if (len < 14)
		return;
	unsigned type = (unsigned)(d[12] << 8 | d[13]), off = 14, tcp, plen;
	const uint8_t *src, *dst;
	unsigned alen;
	if (type == 0x0800 && len >= off + 20 && d[off + 9] == 6) {
		unsigned ihl = (d[off] & 15u) * 4, tot = (unsigned)(d[off + 2] << 8 | d[off + 3]);
		tcp = off + ihl;
		if (ihl < 20 || tot < ihl)
			return;
		plen = tot - ihl;
		src = d + off + 12;
		dst = d + off + 16;
		alen = 4;
	} else if (type == 0x86dd && len >= off + 40 && d[off + 6] == 6) {
		tcp = off + 40;
		plen = (unsigned)(d[off + 4] << 8 | d[off + 5]);
		src = d + off + 8;
		dst = d + off + 24;
		alen = 16;
	} else {
		return;
	}
	if (len < tcp + 20)
		return;
	unsigned thl = (d[tcp + 12] >> 4) * 4u;
	t->is_tcp = 1;
	t->payload = (int)plen - (int)thl;
	t->flags = d[tcp + 13];
	t->seq = be32(d + tcp + 4);
	t->ack = be32(d + tcp + 8);
	memcpy(t->key, src, alen);
	memcpy(t->key + 16, dst, alen);
	memcpy(t->key + 32, d + tcp, 4);
	memcpy(t->revkey, dst, alen);
	memcpy(t->revkey + 16, src, alen);
	memcpy(t->revkey + 32, d + tcp + 2, 2);
	memcpy(t->revkey + 34, d + tcp, 2);
}

static struct isn_entry isn_table[ISN_SLOTS];
static unsigned isn_next;

static void isn_learn(const uint8_t *key, uint32_t isn)
{
	for (int i = 0; i < ISN_SLOTS; i++)
		if (isn_table[i].used && !memcmp(isn_table[i].key, key, 36)) {
			isn_table[i].isn = isn;
			return;
		}
	struct isn_entry *e = &isn_table[isn_next++ % ISN_SLOTS];
	e->used = 1;
	memcpy(e->key, key, 36);
	e->isn = isn;
}

static int isn_find(const uint8_t *key, uint32_t *isn)
{
	for (int i = 0; i < ISN_SLOTS; i++)
		if (isn_table[i].used && !memcmp(isn_table[i].key, key, 36)) {
			*isn = isn_table[i].isn;
			return 1;
		}
	return 0;
}

static int parse_dir(const char *s, const char **rest)
{
	if (!strncmp(s, "a2b:", 4) || !strncmp(s, "b2a:", 4)) {
		*rest = s + 4;
		return s[0] == 'a' ? 0 : 1;
	}
	return -1;
}

static uint64_t parse_num(const char *s, const char *what)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || (*end && *end != ':' && *end != ',')) {
		fprintf(stderr, "delayline: bad number in %s: %s\n", what, s);
		exit(1);
	}
	return v;
}

static void usage(void)
{
	fprintf(stderr, "usage: delayline IF_A IF_B DELAY_US [--drop a2b|b2a:N[,M...]] "
	                "[--synack-delay [DIR:]US] [--hold-acks DIR:US] [--hold-tail DIR:K:US[:GAP_US]] "
	                "[--rate DIR:BPS[:QBYTES]] [--jitter US] [--seed N] [--vnet]\n");
	exit(1);
}

static void send_pkt(int fd, int ifindex, struct pkt *p)
{
	struct sockaddr_ll to;
	memset(&to, 0, sizeof(to));
	to.sll_family = AF_PACKET;
	to.sll_ifindex = ifindex;
	to.sll_halen = 6;
	memcpy(to.sll_addr, p->data + vnet, 6);
	if (sendto(fd, p->data, p->len, 0, (struct sockaddr *)&to, sizeof(to)) < 0 && errno != ENOBUFS)
		perror("delayline: sendto");
	free(p->data);
	p->data = NULL;
}

int main(int argc, char **argv)
{
	if (argc < 4)
		usage();
	uint64_t delay_ns = parse_num(argv[3], "DELAY_US") * 1000u;
	uint64_t jitter_us = 0;
	struct dir dirs[2];
	memset(dirs, 0, sizeof(dirs));
	for (int i = 0; i < 2; i++)
		dirs[i].qbytes = 262144;
	for (int a = 4; a < argc; a++) {
		const char *opt = argv[a], *v, *rest;
		if (!strcmp(opt, "--vnet")) {
			vnet = sizeof(struct virtio_net_hdr);
			continue;
		}
		if (a + 1 >= argc)
			usage();
		v = argv[++a];
		int d = parse_dir(v, &rest);
		if (!strcmp(opt, "--drop")) {
			if (d < 0)
				usage();
			for (const char *p = rest; *p;) {
				if (dirs[d].ndrops == MAX_DROPS) {
					fprintf(stderr, "delayline: more than %d drops\n", MAX_DROPS);
					return 1;
				}
				dirs[d].drops[dirs[d].ndrops++] = (long)parse_num(p, "--drop");
				p = strchr(p, ',');
				p = p ? p + 1 : "";
			}
		} else if (!strcmp(opt, "--synack-delay")) {
			uint64_t us = parse_num(d < 0 ? v : rest, "--synack-delay");
			for (int i = 0; i < 2; i++)
				if (d < 0 || d == i)
					dirs[i].synack_ns = us * 1000u;
		} else if (!strcmp(opt, "--hold-acks")) {
			if (d < 0)
				usage();
			dirs[d].hold_ns = parse_num(rest, "--hold-acks") * 1000u;
			if (!dirs[d].hold_ns)
				usage();
		} else if (!strcmp(opt, "--hold-tail")) {
			const char *us = d < 0 ? NULL : strchr(rest, ':');
			if (!us)
				usage();
			dirs[d].tail_k = (long)parse_num(rest, "--hold-tail K");
			dirs[d].tail_ns = parse_num(us + 1, "--hold-tail US") * 1000u;
			const char *gap = strchr(us + 1, ':');
			dirs[d].tail_gap_ns = (gap ? parse_num(gap + 1, "--hold-tail GAP_US") : 2000u) * 1000u;
			if (!dirs[d].tail_k || !dirs[d].tail_ns || !dirs[d].tail_gap_ns)
				usage();
		} else if (!strcmp(opt, "--rate")) {
			if (d < 0)
				usage();
			dirs[d].rate_bps = parse_num(rest, "--rate");
			const char *q = strchr(rest, ':');
			if (q)
				dirs[d].qbytes = parse_num(q + 1, "--rate queue");
			if (!dirs[d].rate_bps)
				usage();
		} else if (!strcmp(opt, "--jitter")) {
			jitter_us = parse_num(v, "--jitter");
		} else if (!strcmp(opt, "--seed")) {
			rng_state = parse_num(v, "--seed");
		} else {
			usage();
		}
	}
	int idx[2], fd[2];
	fd[0] = open_if(argv[1], &idx[0]);
	fd[1] = open_if(argv[2], &idx[1]);
	for (int i = 0; i < 2; i++) {
		dirs[i].q = calloc(QLEN, sizeof(struct pkt));
		if (!dirs[i].q) {
			fprintf(stderr, "delayline: out of memory\n");
			return 2;
		}
	}
	static uint8_t buf[FRAME_MAX + sizeof(struct virtio_net_hdr)];
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	while (!done) {
		uint64_t now = now_ns(), wait = 50000000u; /* 50 ms when idle */
		for (int i = 0; i < 2; i++) {
			struct dir *D = &dirs[i];
			for (;;) { /* the earliest due frame: FIFO head or a delayed SYN-ACK */
				struct pkt *best = NULL;
				int side = -1;
				if (D->head != D->tail && D->q[D->head % QLEN].release_ns <= now)
					best = &D->q[D->head % QLEN];
				for (int k = 0; k < D->nside; k++)
					if (D->side[k].release_ns <= now &&
					    (!best || D->side[k].release_ns < best->release_ns)) {
						best = &D->side[k];
						side = k;
					}
				if (!best)
					break;
				send_pkt(fd[1 - i], idx[1 - i], best);
				D->fwd++;
				if (side >= 0)
					D->side[side] = D->side[--D->nside];
				else
					D->head++;
			}
			if (D->head != D->tail) {
				uint64_t w = D->q[D->head % QLEN].release_ns - now;
				if (w < wait)
					wait = w;
			}
			for (int k = 0; k < D->nside; k++) {
				uint64_t w = D->side[k].release_ns - now;
				if (w < wait)
					wait = w;
			}
		}
		struct pollfd pfd[2] = { { fd[0], POLLIN, 0 }, { fd[1], POLLIN, 0 } };
		struct timespec ts = { (time_t)(wait / 1000000000u), (long)(wait % 1000000000u) };
		int n = ppoll(pfd, 2, &ts, NULL);
		if (n <= 0)
			continue;
		for (int i = 0; i < 2; i++) {
			struct dir *D = &dirs[i];
			if (!(pfd[i].revents & POLLIN))
				continue;
			for (;;) {
				if (D->tail - D->head >= QLEN)
					break; /* full: leave it in the socket */
				struct sockaddr_ll from;
				socklen_t fl = sizeof(from);
				ssize_t len = recvfrom(fd[i], buf, FRAME_MAX + vnet, MSG_DONTWAIT | MSG_TRUNC,
				                       (struct sockaddr *)&from, &fl);
				if (len <= (ssize_t)vnet)
					break;
				if (len > (ssize_t)(FRAME_MAX + vnet)) { /* cut: never forwarded half */
					D->oversize++;
					continue;
				}
				if (from.sll_pkttype == PACKET_OUTGOING)
					continue;
				uint64_t t = now_ns();
				struct tcpinfo ti;
				parse(buf + vnet, (unsigned)len - vnet, &ti);
				if (ti.payload > 0) {
					long nth = ++D->data_seen;
					int drop = 0;
					for (int k = 0; k < D->ndrops; k++)
						drop |= D->drops[k] == nth;
					if (drop) {
						D->dropped++;
						continue;
					}
				}
				uint64_t extra = jitter_us ? rng_next() % (jitter_us + 1) * 1000u : 0;
				if (D->tail_ns && ti.payload > 0) {
					if (!D->burst_frames || t - D->last_data_ns > D->tail_gap_ns)
						D->burst_frames = 0;
					D->last_data_ns = t;
					if (++D->burst_frames > D->tail_k) {
						extra += D->tail_ns;
						D->tails_held++;
					}
				}
				int synack = ti.is_tcp && (ti.flags & 0x12) == 0x12;
				if (synack) /* the ACK of this SYN-ACK comes the other way: its key is revkey */
					isn_learn(ti.revkey, ti.seq);
				if (synack && D->synack_ns) {
					if (D->nside == SIDE_MAX) {
						D->taildrop++;
						continue;
					}
					struct pkt *p = &D->side[D->nside];
					p->data = malloc((size_t)len);
					if (!p->data)
						continue;
					memcpy(p->data, buf, (size_t)len);
					p->len = (uint32_t)len;
					p->release_ns = t + delay_ns + extra + D->synack_ns;
					D->nside++;
					D->synack_delayed++;
					continue;
				}
				uint64_t base = t;
				if (D->hold_ns && ti.is_tcp && ti.payload == 0 && (ti.flags & 0x17) == 0x10) {
					uint32_t isn;
					if (isn_find(ti.key, &isn) && ti.ack == isn + 1) {
						D->handshake_acks++;
					} else {
						if (!D->hold_started) {
							D->hold_started = 1;
							D->hold_t0 = t;
						}
						base = D->hold_t0 + ((t - D->hold_t0) / D->hold_ns + 1) * D->hold_ns;
						D->held++;
					}
				}
				uint64_t release = base + delay_ns + extra;
				if (release < D->last_release)
					release = D->last_release;
				if (D->rate_bps) {
					uint64_t entry = base + delay_ns + extra;
					uint64_t backlog = D->last_release > entry
					                       ? (D->last_release - entry) * D->rate_bps / 8000000000u
					                       : 0;
					if (backlog + (uint64_t)len > D->qbytes) {
						D->taildrop++;
						continue;
					}
					release += (uint64_t)len * 8u * 1000000000u / D->rate_bps;
				}
				struct pkt *p = &D->q[D->tail % QLEN];
				p->data = malloc((size_t)len);
				if (!p->data)
					continue;
				memcpy(p->data, buf, (size_t)len);
				p->len = (uint32_t)len;
				p->release_ns = release;
				D->last_release = release;
				D->tail++;
			}
		}
	}
	for (int i = 0; i < 2; i++) {
		struct dir *D = &dirs[i];
		fprintf(stderr,
		        "delayline %s->%s: %lu frames forwarded, %lu dropped, %lu tail-dropped, "
		        "%lu ACKs held (%lu handshake ACKs passed), %lu SYN-ACKs delayed, "
		        "%lu burst tails held, %lu oversize\n",
		        argv[1 + i], argv[2 - i], D->fwd, D->dropped, D->taildrop, D->held,
		        D->handshake_acks, D->synack_delayed, D->tails_held, D->oversize);
	}
	return 0;
}
