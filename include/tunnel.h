/* tunnel: the encapsulations inside UDP and GRE that carry IP or Ethernet (VXLAN, GTP-U,
 * Teredo, AYIYA, Geneve, GRE in UDP, CAPWAP, ERSPAN), split from decode.c; and the cursor and
 * layer decoders the two share. Internal to the analysis layer: decode.h is the interface. */
#ifndef IWSCOPE_TUNNEL_H
#define IWSCOPE_TUNNEL_H

#include <stddef.h>
#include <stdint.h>

#include "pkt.h"

#define MAX_ENCAP_DEPTH 8 /* tunnels inside tunnels: stop a crafted loop */

/* A cursor over the captured bytes of one frame. */
struct decode_cursor {
	const uint8_t *p, *end;
	int depth;
};

static inline size_t avail(const struct decode_cursor *c) { return (size_t)(c->end - c->p); }

/* decode.c's layers, for the tunnels to hand their inner frame back to */
enum decode_result decode_ether(struct decode_cursor *c, struct pkt *out);
enum decode_result decode_ethertype(struct decode_cursor *c, uint16_t type, struct pkt *out);
enum decode_result decode_ip(struct decode_cursor *c, struct pkt *out);
enum decode_result decode_80211_fc(struct decode_cursor *c, uint8_t fc0, uint8_t fc1, struct pkt *out);

/* A UDP datagram (the cursor on its header; len: the IP payload length): a tunnel's inner
 * frame decoded, or DECODE_UDP with the datagram's ports and payload (the QUIC tracker's). */
enum decode_result tunnel_udp(struct decode_cursor *c, uint32_t len, struct pkt *out);

/* GRE (RFC 2784/2890), ERSPAN inside it included. */
enum decode_result tunnel_gre(struct decode_cursor *c, struct pkt *out);

#endif
