/* decode: link layer -> IP -> TCP into struct pkt, bounds-checked, one function per layer. */
#ifndef IWSCOPE_DECODE_H
#define IWSCOPE_DECODE_H

#include "pkt.h"

struct decode_cursor; /* a position in one frame's captured bytes (decode.c's own) */

/* The link types iwscope decodes, one entry each in decode.c (adding one is a line there); the
 * last entry has a NULL name. */
struct decode_link_type {
	int dlt;          /* libpcap's DLT_* value */
	const char *name; /* libpcap's name, without DLT_ */
	enum decode_result (*decode)(struct decode_cursor *c, struct pkt *out); /* the link layer on */
};
extern const struct decode_link_type decode_link_types[];

/* Returns true when iwscope can decode the libpcap link type (DLT_*): it is in decode_link_types. */
bool decode_link_supported(int dlt);

/* Decodes one captured frame of link type dlt; caplen bytes at data are valid. On DECODE_OK
 * *out is filled; out->payload points into data. */
enum decode_result decode_packet(int dlt, const uint8_t *data, uint32_t caplen, uint64_t ts_us,
                                 struct pkt *out);

/* The 5-tuple of an Ethernet frame carrying IPv4 TCP or UDP, read without decoding the rest
 * (no VLAN, tunnel or IP options): ip_ver, transport, src, dst, sport and dport of *out. For
 * prefetching only (engine_prefetch): false for anything else, which decode_packet reads in
 * full as ever. */
bool decode_peek_tuple(int dlt, const uint8_t *data, uint32_t caplen, struct pkt *out);

/* Parses TCP options (RFC 9293 3.1) from opt[0..len); cut says the captured bytes ended before
 * the header's option area did. Fills *o; returns Q_* quirks. Exposed for the option fuzzer. */
uint8_t decode_tcp_options(const uint8_t *opt, size_t len, bool cut, struct tcp_opts *o);

#endif
