/* pcapgen: rewrites an Ethernet pcap (IPv4 or IPv6 inside) into another link type or
 * encapsulation, so one real capture yields a test capture for every decoder path. The flows
 * inside are unchanged, so iwscope must produce the same rows from every variant.
 *
 *   pcapgen MODE IN.pcap OUT.pcap
 *
 * MODE: ether vlan qinq sll sll2 raw101 raw12 raw14 ipv4 ipv6 null loop pppoe ppp chdlc mpls
 *       ipopts v6ext gre vxlan ipip
 * Written without libpcap: the classic pcap format is 24 + 16 bytes of headers. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXF 70000

static void be16(uint8_t *p, unsigned v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static void be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

static unsigned ip_csum(const uint8_t *h, unsigned len)
{
	uint32_t s = 0;
	for (unsigned i = 0; i + 1 < len; i += 2)
		s += (uint32_t)(h[i] << 8 | h[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (~s) & 0xffff;
}

/* A minimal outer IPv4 header for tunnels. */
static unsigned outer_ipv4(uint8_t *o, unsigned inner_len, unsigned proto)
{
	memset(o, 0, 20);
	o[0] = 0x45;
	be16(o + 2, 20 + inner_len);
	o[8] = 64;
	o[9] = (uint8_t)proto;
	be32(o + 12, 0xc0000201); /* 192.0.2.1 -> 192.0.2.2 (documentation range) */
	be32(o + 16, 0xc0000202);
	be16(o + 10, ip_csum(o, 20));
	return 20;
}

static const uint8_t MAC_A[6] = { 2, 0, 0, 0, 0, 1 }, MAC_B[6] = { 2, 0, 0, 0, 0, 2 };

static unsigned eth(uint8_t *o, unsigned type)
{
	memcpy(o, MAC_B, 6);
	memcpy(o + 6, MAC_A, 6);
	be16(o + 12, type);
	return 14;
}

struct mode {
	const char *name;
	unsigned linktype;
};

static const struct mode modes[] = {
	{ "ether", 1 }, { "vlan", 1 }, { "qinq", 1 }, { "sll", 113 }, { "sll2", 276 },
	{ "raw101", 101 }, { "raw12", 12 }, { "raw14", 14 }, { "ipv4", 228 }, { "ipv6", 229 },
	{ "null", 0 }, { "loop", 108 }, { "pppoe", 1 }, { "ppp", 9 }, { "chdlc", 104 },
	{ "mpls", 1 }, { "ipopts", 1 }, { "v6ext", 1 }, { "gre", 1 }, { "vxlan", 1 }, { "ipip", 1 },
};

/* Builds the new frame for IP packet ip (len bytes captured of wire bytes) in out; returns
 * the number of bytes added in front of (or inside) the IP packet. */
static unsigned build(const char *m, const uint8_t *frame, const uint8_t *ip, unsigned len,
                      uint8_t *out, unsigned *outlen)
{
	int v6 = (ip[0] >> 4) == 6;
	unsigned et = v6 ? 0x86dd : 0x0800, n = 0;
	if (!strcmp(m, "ether")) {
		memcpy(out, frame, 14);
		n = 14;
	} else if (!strcmp(m, "vlan")) {
		n = eth(out, 0x8100);
		be16(out + n, 100); be16(out + n + 2, et); n += 4;
	} else if (!strcmp(m, "qinq")) {
		n = eth(out, 0x88a8);
		be16(out + n, 10); be16(out + n + 2, 0x8100); be16(out + n + 4, 20); be16(out + n + 6, et);
		n += 8;
	} else if (!strcmp(m, "sll")) {
		memset(out, 0, 16);
		be16(out, 0); be16(out + 2, 1); be16(out + 4, 6); memcpy(out + 6, MAC_A, 6);
		be16(out + 14, et);
		n = 16;
	} else if (!strcmp(m, "sll2")) {
		memset(out, 0, 20);
		be16(out, et); be32(out + 4, 2); be16(out + 8, 1); out[10] = 0; out[11] = 6;
		memcpy(out + 12, MAC_A, 6);
		n = 20;
	} else if (!strcmp(m, "null")) {
		le32(out, v6 ? 30 : 2);
		n = 4;
	} else if (!strcmp(m, "loop")) {
		be32(out, v6 ? 24 : 2);
		n = 4;
	} else if (!strcmp(m, "pppoe")) {
		n = eth(out, 0x8864);
		out[n] = 0x11; out[n + 1] = 0; be16(out + n + 2, 0x1234); be16(out + n + 4, len + 2);
		be16(out + n + 6, v6 ? 0x0057 : 0x0021);
		n += 8;
	} else if (!strcmp(m, "ppp")) {
		out[0] = 0xff; out[1] = 0x03; be16(out + 2, v6 ? 0x0057 : 0x0021);
		n = 4;
	} else if (!strcmp(m, "chdlc")) {
		out[0] = 0x0f; out[1] = 0; be16(out + 2, et);
		n = 4;
	} else if (!strcmp(m, "mpls")) {
		n = eth(out, 0x8847);
		be32(out + n, (16u << 12) | 64); be32(out + n + 4, (17u << 12) | 0x100 | 64);
		n += 8;
	} else if (!strcmp(m, "gre")) {
		n = eth(out, 0x0800);
		n += outer_ipv4(out + n, 4 + len, 47);
		be16(out + n, 0); be16(out + n + 2, et);
		n += 4;
	} else if (!strcmp(m, "ipip")) {
		n = eth(out, 0x0800);
		n += outer_ipv4(out + n, len, v6 ? 41 : 4);
	} else if (!strcmp(m, "vxlan")) {
		n = eth(out, 0x0800);
		n += outer_ipv4(out + n, 8 + 8 + 14 + len, 17);
		be16(out + n, 49152); be16(out + n + 2, 4789); be16(out + n + 4, 8 + 8 + 14 + len);
		be16(out + n + 6, 0);
		n += 8;
		memset(out + n, 0, 8); out[n] = 0x08; out[n + 6] = 1;
		n += 8;
		n += eth(out + n, et);
	} else if (!strcmp(m, "ipopts") && !v6) {
		/* 4 bytes of IPv4 options (NOP NOP NOP EOL) */
		n = eth(out, 0x0800);
		unsigned ihl = (ip[0] & 15u) * 4;
		memcpy(out + n, ip, ihl);
		out[n] = (uint8_t)(0x40 | (ihl / 4 + 1));
		be16(out + n + 2, (unsigned)(ip[2] << 8 | ip[3]) + 4);
		out[n + ihl] = 1; out[n + ihl + 1] = 1; out[n + ihl + 2] = 1; out[n + ihl + 3] = 0;
		be16(out + n + 10, 0);
		be16(out + n + 10, ip_csum(out + n, ihl + 4));
		memcpy(out + n + ihl + 4, ip + ihl, len - ihl);
		*outlen = n + len + 4;
		return 14 + 4;
	} else if (!strcmp(m, "v6ext") && v6) {
		/* hop-by-hop and destination options headers, 8 bytes each (RFC 8200 4.3, 4.6) */
		n = eth(out, 0x86dd);
		memcpy(out + n, ip, 40);
		uint8_t next = ip[6];
		out[n + 6] = 0; /* hop-by-hop */
		be16(out + n + 4, (unsigned)(ip[4] << 8 | ip[5]) + 16);
		uint8_t *h = out + n + 40;
		memset(h, 0, 16);
		h[0] = 60; h[1] = 0; h[2] = 1; h[3] = 4;      /* next: dest opts; PadN 4 */
		h[8] = next; h[9] = 0; h[10] = 1; h[11] = 4;  /* next: TCP; PadN 4 */
		memcpy(out + n + 56, ip + 40, len - 40);
		*outlen = n + len + 16;
		return 14 + 16;
	} else if (!strncmp(m, "raw", 3) || !strcmp(m, "ipv4") || !strcmp(m, "ipv6")) {
		n = 0;
	} else {
		return (unsigned)-1;
	}
	memcpy(out + n, ip, len);
	*outlen = n + len;
	return n;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: pcapgen MODE IN.pcap OUT.pcap\n");
		return 1;
	}
	const struct mode *md = NULL;
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(modes[i].name, argv[1]))
			md = &modes[i];
	if (!md) {
		fprintf(stderr, "pcapgen: unknown mode %s\n", argv[1]);
		return 1;
	}
	FILE *in = fopen(argv[2], "rb"), *out = fopen(argv[3], "wb");
	if (!in || !out) {
		perror("pcapgen");
		return 2;
	}
	uint8_t gh[24];
	if (fread(gh, 1, 24, in) != 24 || gh[0] != 0xd4 || gh[1] != 0xc3 || gh[20] != 1) {
		fprintf(stderr, "pcapgen: %s: want a little-endian microsecond Ethernet pcap\n", argv[2]);
		return 2;
	}
	le32(gh + 16, 262144);
	le32(gh + 20, md->linktype);
	fwrite(gh, 1, 24, out);
	static uint8_t frame[MAXF], nf[MAXF + 256];
	uint8_t rh[16];
	while (fread(rh, 1, 16, in) == 16) {
		uint32_t cap = (uint32_t)(rh[8] | rh[9] << 8 | rh[10] << 16 | (uint32_t)rh[11] << 24);
		uint32_t wire = (uint32_t)(rh[12] | rh[13] << 8 | rh[14] << 16 | (uint32_t)rh[15] << 24);
		if (cap > MAXF || fread(frame, 1, cap, in) != cap) {
			fprintf(stderr, "pcapgen: %s: bad record\n", argv[2]);
			return 2;
		}
		if (cap < 14 + 20)
			continue;
		unsigned outlen;
		unsigned added = build(argv[1], frame, frame + 14, cap - 14, nf, &outlen);
		if (added == (unsigned)-1) {
			fprintf(stderr, "pcapgen: mode %s does not fit this capture\n", argv[1]);
			return 1;
		}
		int grow = (int)outlen - (int)cap;
		le32(rh + 8, outlen);
		le32(rh + 12, (uint32_t)((int)wire + grow));
		fwrite(rh, 1, 16, out);
		fwrite(nf, 1, outlen, out);
	}
	fclose(in);
	return fclose(out) == 0 ? 0 : 2;
}
