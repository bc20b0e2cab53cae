/* delayline: a user-space delay line for the ground-truth harness (this kernel has no netem).
 * Bridges two interfaces with AF_PACKET sockets and releases every frame a fixed one-way delay
 * after it arrived, in order. Optionally drops the Nth TCP data frame in one direction, to
 * make a first flight with a loss.
 *
 *   delayline IF_A IF_B DELAY_US [--drop a2b|b2a:N]
 *
 * Runs until SIGTERM/SIGINT. Interfaces should have offloads off so frames stay MTU-sized. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
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
#define FRAME_MAX 2048

struct frame {
	uint64_t release_ns;
	uint16_t len;
	uint8_t data[FRAME_MAX];
};

struct queue {
	struct frame *f;
	unsigned head, tail; /* head = next to send */
};

static volatile sig_atomic_t done;
static void on_signal(int s) { (void)s; done = 1; }

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
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
	int buf = 8 << 20;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	return fd;
}

/* TCP payload length of an Ethernet frame carrying IPv4/IPv6 + TCP, else -1. */
static int tcp_payload(const uint8_t *d, unsigned len)
{
	if (len < 14)
		return -1;
	unsigned type = (unsigned)(d[12] << 8 | d[13]), off = 14;
	if (type == 0x0800 && len >= off + 20 && d[off + 9] == 6) {
		unsigned ihl = (d[off] & 15u) * 4, tot = (unsigned)(d[off + 2] << 8 | d[off + 3]);
		if (len < off + ihl + 13)
			return -1;
		unsigned thl = (d[off + ihl + 12] >> 4) * 4u;
		return (int)tot - (int)ihl - (int)thl;
	}
	if (type == 0x86dd && len >= off + 40 + 13 && d[off + 6] == 6) {
		unsigned plen = (unsigned)(d[off + 4] << 8 | d[off + 5]);
		unsigned thl = (d[off + 40 + 12] >> 4) * 4u;
		return (int)plen - (int)thl;
	}
	return -1;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: delayline IF_A IF_B DELAY_US [--drop a2b|b2a:N]\n");
		return 1;
	}
	uint64_t delay_ns = strtoull(argv[3], NULL, 10) * 1000u;
	int drop_dir = -1;
	long drop_nth = 0;
	if (argc >= 6 && !strcmp(argv[4], "--drop")) {
		drop_dir = !strncmp(argv[5], "a2b", 3) ? 0 : 1;
		drop_nth = strtol(argv[5] + 4, NULL, 10);
	}
	int idx[2], fd[2];
	fd[0] = open_if(argv[1], &idx[0]);
	fd[1] = open_if(argv[2], &idx[1]);
	struct queue q[2];
	for (int i = 0; i < 2; i++) {
		q[i].f = calloc(QLEN, sizeof(struct frame));
		q[i].head = q[i].tail = 0;
		if (!q[i].f) {
			fprintf(stderr, "delayline: out of memory\n");
			return 2;
		}
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	long data_seen[2] = { 0, 0 };
	unsigned long dropped = 0, forwarded = 0;
	while (!done) {
		uint64_t now = now_ns(), wait = 50000000u; /* 50 ms when idle */
		for (int i = 0; i < 2; i++) {
			while (q[i].head != q[i].tail && q[i].f[q[i].head % QLEN].release_ns <= now) {
				struct frame *f = &q[i].f[q[i].head % QLEN];
				struct sockaddr_ll to;
				memset(&to, 0, sizeof(to));
				to.sll_family = AF_PACKET;
				to.sll_ifindex = idx[1 - i];
				to.sll_halen = 6;
				memcpy(to.sll_addr, f->data, 6);
				if (sendto(fd[1 - i], f->data, f->len, 0, (struct sockaddr *)&to, sizeof(to)) < 0 &&
				    errno != ENOBUFS)
					perror("delayline: sendto");
				forwarded++;
				q[i].head++;
			}
			if (q[i].head != q[i].tail) {
				uint64_t w = q[i].f[q[i].head % QLEN].release_ns - now;
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
			if (!(pfd[i].revents & POLLIN))
				continue;
			for (;;) {
				struct frame *f = &q[i].f[q[i].tail % QLEN];
				if (q[i].tail - q[i].head >= QLEN)
					break; /* full: leave it in the socket */
				struct sockaddr_ll from;
				socklen_t fl = sizeof(from);
				ssize_t len = recvfrom(fd[i], f->data, FRAME_MAX, MSG_DONTWAIT,
				                       (struct sockaddr *)&from, &fl);
				if (len <= 0)
					break;
				if (from.sll_pkttype == PACKET_OUTGOING)
					continue;
				if (drop_dir == i && tcp_payload(f->data, (unsigned)len) > 0 &&
				    ++data_seen[i] == drop_nth) {
					dropped++;
					continue;
				}
				f->len = (uint16_t)len;
				f->release_ns = now_ns() + delay_ns;
				q[i].tail++;
			}
		}
	}
	fprintf(stderr, "delayline %s<->%s: %lu frames forwarded, %lu dropped\n", argv[1], argv[2],
	        forwarded, dropped);
	return 0;
}
