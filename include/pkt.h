/* struct pkt: one decoded TCP segment, host byte order. Nothing after decode_* reads the headers'
 * raw bytes; two readers take borrowed bytes on: names.c reads the payload (Host, SNI) with
 * bytes.h's bounded readers, and dpi.c hands nDPI the IP packet (ip_hdr, ip_cap). */
#ifndef IWSCOPE_PKT_H
#define IWSCOPE_PKT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* TCP flags (RFC 9293 3.1) */
#define TH_FIN 0x01
#define TH_SYN 0x02
#define TH_RST 0x04
#define TH_PSH 0x08
#define TH_ACK 0x10
#define TH_URG 0x20
#define TH_ECE 0x40
#define TH_CWR 0x80

/* Which TCP options were seen (bits of tcp_opts.present) */
#define OPT_MSS 0x01
#define OPT_WS 0x02
#define OPT_SACKOK 0x04
#define OPT_TS 0x08
#define OPT_SACK 0x10
#define OPT_TFO 0x20

/* Quirks of the options or headers (bits of pkt.quirks), in the spirit of p0f */
#define Q_OPT_BAD 0x01   /* an option's length was impossible; parsing stopped there */
#define Q_OPT_CUT 0x02   /* options continue past the captured bytes: absent means unknown */
#define Q_OPT_TAIL 0x04  /* non-zero bytes after EOL */
#define Q_IP_OPTS 0x08   /* IPv4 options present */
#define Q_TRUNC 0x10     /* payload cut by the snaplen */

#define OPT_LAYOUT_MAX 40 /* at most 40 option bytes, so at most 40 options */

struct tcp_opts {
	/* up to sack_left, zeroed for every segment (16 bytes: two stores); the arrays after it
	 * are valid up to nsack and layout_len only, and are not cleared */
	uint8_t present;    /* OPT_* */
	uint8_t wscale;     /* valid with OPT_WS (RFC 7323 2.3) */
	uint16_t mss;       /* valid with OPT_MSS (RFC 9293 3.7.1) */
	uint32_t tsval;     /* valid with OPT_TS (RFC 7323 3.2) */
	uint32_t tsecr;
	uint8_t nsack;      /* SACK blocks (RFC 2018), at most 4 */
	uint8_t layout_len; /* option kinds in wire order, for the p0f-style layout */
	uint8_t eol_pad;    /* bytes after an EOL (p0f "eol+N") */
	uint32_t sack_left[4], sack_right[4];
	uint8_t layout[OPT_LAYOUT_MAX];
};

struct ip_addr {
	uint8_t b[16]; /* IPv4 in the first 4 bytes, rest zero */
};

struct pkt {
	uint64_t ts_us;        /* capture time, microseconds since the epoch */
	uint8_t ip_ver;        /* 4 or 6 */
	uint8_t transport;     /* 6 (TCP) or 17 (UDP: DECODE_UDP) */
	uint8_t ttl;           /* TTL or hop limit */
	uint8_t flags;         /* TH_* */
	uint8_t quirks;        /* Q_* */
	uint16_t ipid;         /* IPv4's identification (RFC 791), 0 for IPv6 */
	struct ip_addr src, dst;
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint16_t win;          /* unscaled window field */
	uint16_t tcp_hlen;     /* TCP header length in bytes, options included */
	uint32_t payload_len;  /* from the IP header, not the captured length */
	const uint8_t *ip_hdr; /* innermost IP header, borrowed from libpcap (for nDPI) */
	uint32_t ip_cap;       /* captured bytes from ip_hdr, clamped to the IP length */
	const uint8_t *payload;/* captured part of the payload, borrowed from libpcap */
	uint32_t payload_cap;  /* captured payload bytes (<= payload_len) */
	struct tcp_opts opt;
};

/* Why a packet could not be decoded; counted per run, stored in run_decode. */
enum decode_result {
	DECODE_OK = 0,
	DECODE_NOT_IP,        /* ARP, LLDP, ... : not an error, counted */
	DECODE_NOT_TCP,       /* UDP, ICMP, ... : counted */
	DECODE_TRUNC_LINK,    /* captured bytes end inside the link header */
	DECODE_TRUNC_IP,      /* ... inside the IP header */
	DECODE_TRUNC_TCP,     /* ... inside the fixed TCP header */
	DECODE_BAD_IP,        /* impossible IP version / header length / total length */
	DECODE_BAD_TCP,       /* impossible data offset */
	DECODE_FRAGMENT,      /* IP fragment: counted and skipped */
	DECODE_IPV6_EXT,      /* extension header chain we cannot walk (ESP, too long) */
	DECODE_UNSUP_ENCAP,   /* encapsulation not decoded (e.g. an unknown ethertype) */
	DECODE_COPY,          /* a second copy of a packet just seen (copies.h): not an error */
	DECODE_NREASONS,
	/* not a reason: a UDP datagram no tunnel claimed, decoded as far as its payload (addresses,
	 * ports, payload; no TCP fields): the engine's QUIC tracker looks at it, and counts it as
	 * DECODE_NOT_TCP when it is not QUIC */
	DECODE_UDP
};

const char *decode_reason_name(enum decode_result r);

#endif
