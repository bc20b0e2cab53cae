/* tunnel: the encapsulations inside UDP and GRE that carry IP or Ethernet, each inner frame
 * handed back to decode.c's layers. Every read is checked against the captured end. */
#include "tunnel.h"

#include <stdbool.h>

#include "bytes.h"

/* GTP-U (3GPP TS 29.281) T-PDU: 8-byte header, 4 more when E/S/PN is set, then extension
 * headers (length in 4-byte units, next type in the last byte), then the user's IP packet. */
static enum decode_result decode_gtpu(struct decode_cursor *c, struct pkt *out)
{
	if (avail(c) < 8 || (c->p[0] >> 5) != 1 || !(c->p[0] & 0x10) || c->p[1] != 0xff)
		return DECODE_NOT_TCP;
	uint8_t fl = c->p[0];
	c->p += 8;
	if (fl & 0x07) {
		if (avail(c) < 4)
			return DECODE_TRUNC_IP;
		uint8_t next = c->p[3];
		c->p += 4;
		for (int n = 0; next && n < 8; n++) {
			if (avail(c) < 1 || c->p[0] == 0)
				return DECODE_TRUNC_IP;
			size_t len = (size_t)c->p[0] * 4;
			if (avail(c) < len)
				return DECODE_TRUNC_IP;
			next = c->p[len - 1];
			c->p += len;
		}
	}
	return decode_ip(c, out);
}

/* Teredo (RFC 4380 5.1.1): IPv6 in UDP, after an optional authentication indicator (0x0001: id
 * and value lengths, id, value, 8-byte nonce, confirmation byte) and an optional origin
 * indication (0x0000, 8 bytes). Anything else on the port (a bubble is IPv6 too) is not TCP. */
static enum decode_result decode_teredo(struct decode_cursor *c, struct pkt *out)
{
	if (avail(c) >= 4 && c->p[0] == 0x00 && c->p[1] == 0x01) {
		size_t hl = 4 + (size_t)c->p[2] + c->p[3] + 9;
		if (avail(c) < hl)
			return DECODE_TRUNC_IP;
		c->p += hl;
	}
	if (avail(c) >= 8 && c->p[0] == 0x00 && c->p[1] == 0x00)
		c->p += 8;
	if (avail(c) < 40 || (c->p[0] >> 4) != 6)
		return DECODE_NOT_TCP;
	return decode_ip(c, out);
}

/* AYIYA (draft-massar-v6ops-ayiya): identity length 2^n and type, signature length in 4-byte
 * words and hash, authentication and opcode, next header, epoch time (8 bytes), identity,
 * signature, then the packet when the opcode is 1 (forward): IPv6 (41) or IPv4 (4). */
static enum decode_result decode_ayiya(struct decode_cursor *c, struct pkt *out)
{
	if (avail(c) < 8)
		return DECODE_NOT_TCP;
	size_t hl = 8 + ((size_t)1 << (c->p[0] >> 4)) + (size_t)(c->p[1] >> 4) * 4;
	uint8_t next = c->p[3];
	if ((c->p[2] & 0x0f) != 1 || (next != 41 && next != 4))
		return DECODE_NOT_TCP;
	if (avail(c) < hl)
		return DECODE_TRUNC_IP;
	c->p += hl;
	return decode_ip(c, out);
}

/* Geneve (RFC 8926 3.4): version 0, options length in 4-byte words, flags, the inner protocol
 * as an ethertype (0x6558: Ethernet), VNI; the options are skipped. */
static enum decode_result decode_geneve(struct decode_cursor *c, struct pkt *out)
{
	if (avail(c) < 8)
		return DECODE_NOT_TCP;
	if (c->p[0] >> 6)
		return DECODE_UNSUP_ENCAP; /* a version RFC 8926 does not define */
	size_t hl = 8 + (size_t)(c->p[0] & 0x3f) * 4;
	uint16_t type = rd_be16(c->p + 2);
	if (avail(c) < hl)
		return DECODE_TRUNC_IP;
	c->p += hl;
	return decode_ethertype(c, type, out);
}

/* CAPWAP data channel (RFC 5415 4.3): preamble (version 0, type 0; type 1 is DTLS, encrypted),
 * HLEN in 4-byte words, WBID, T (the frame is in the binding's native format: WBID 1 is IEEE
 * 802.11) and F (a fragment). Without T the frame is 802.3. */
static enum decode_result decode_capwap(struct decode_cursor *c, struct pkt *out)
{
	if (avail(c) < 8)
		return DECODE_NOT_TCP;
	uint32_t w = rd_be32(c->p);
	if (w >> 24)
		return (w >> 24) == 1 ? DECODE_UNSUP_ENCAP : DECODE_NOT_TCP; /* DTLS; not CAPWAP */
	size_t hl = ((w >> 19) & 0x1f) * 4;
	unsigned wbid = (w >> 9) & 0x1f;
	bool native = (w >> 8) & 1, fragment = (w >> 7) & 1;
	if (fragment)
		return DECODE_FRAGMENT;
	if (hl < 8)
		return DECODE_NOT_TCP;
	if (avail(c) < hl)
		return DECODE_TRUNC_IP;
	c->p += hl;
	if (!native)
		return decode_ether(c, out);
	if (wbid != 1 || avail(c) < 2)
		return DECODE_UNSUP_ENCAP;
	/* Cisco's access points send the frame control's two bytes swapped (Wireshark's
	 * capwap.swap_fc, on by default): the order whose first byte is a data frame's is taken,
	 * RFC 5416's own first */
	uint8_t b0 = c->p[0], b1 = c->p[1];
	if ((b0 & 0x0f) != 0x08 && (b1 & 0x0f) == 0x08)
		return decode_80211_fc(c, b1, b0, out);
	return decode_80211_fc(c, b0, b1, out);
}

/* UDP tunnels, by port (a datagram that is not one falls through quickly: this runs only for
 * UDP): VXLAN (RFC 7348, 4789), GTP-U (2152), Teredo (RFC 4380, 3544), AYIYA (5072), Geneve
 * (RFC 8926, 6081), GRE in UDP (RFC 8086, 4754), CAPWAP data (RFC 5415, 5247). Any other
 * datagram is DECODE_UDP, its payload for the QUIC tracker (len: the IP payload length). */
enum decode_result tunnel_udp(struct decode_cursor *c, uint32_t len, struct pkt *out)
{
	if (avail(c) < 8)
		return DECODE_NOT_TCP;
	uint16_t sport = rd_be16(c->p), dport = rd_be16(c->p + 2);
	if (dport == 4789 && avail(c) >= 16 && (c->p[8] & 0x08)) {
		c->p += 16;
		return decode_ether(c, out);
	}
	if (dport == 2152 || sport == 2152) {
		c->p += 8;
		return decode_gtpu(c, out);
	}
	enum decode_result (*tunnel)(struct decode_cursor *, struct pkt *) = NULL;
	if (dport == 3544 || sport == 3544)
		tunnel = decode_teredo;
	else if (dport == 5072 || sport == 5072)
		tunnel = decode_ayiya;
	else if (dport == 6081)
		tunnel = decode_geneve;
	else if (dport == 4754)
		tunnel = tunnel_gre;
	else if (dport == 5247 || sport == 5247)
		tunnel = decode_capwap;
	if (tunnel) {
		c->p += 8;
		return tunnel(c, out);
	}
	uint32_t ulen = rd_be16(c->p + 4);
	if (ulen < 8 || ulen > len)
		ulen = len; /* zero (jumbogram, offload) or impossible: the IP length decides */
	out->transport = 17;
	out->sport = sport;
	out->dport = dport;
	out->flags = 0;
	out->seq = out->ack = 0;
	out->win = 0;
	out->tcp_hlen = 0;
	out->opt.present = 0;
	out->payload_len = ulen >= 8 ? ulen - 8 : 0;
	out->payload = c->p + 8;
	size_t cap = avail(c) - 8;
	out->payload_cap = (uint32_t)(cap < out->payload_len ? cap : out->payload_len);
	return DECODE_UDP;
}

/* GRE (RFC 2784/2890): flags, protocol, then optional checksum, key and sequence words. */
enum decode_result tunnel_gre(struct decode_cursor *c, struct pkt *out)
{
	if (avail(c) < 4)
		return DECODE_NOT_TCP;
	uint16_t fl = rd_be16(c->p);
	uint16_t proto = rd_be16(c->p + 2);
	if (fl & 0x0007) /* version 1 (PPTP) and others: not decoded */
		return DECODE_UNSUP_ENCAP;
	size_t hl = 4 + ((fl & 0x8000) ? 4 : 0) + ((fl & 0x2000) ? 4 : 0) + ((fl & 0x1000) ? 4 : 0);
	if (avail(c) < hl)
		return DECODE_TRUNC_IP;
	c->p += hl;
	if (proto == 0x88be || proto == 0x22eb) { /* ERSPAN type II / III, then Ethernet */
		size_t eh = 8;
		if (proto == 0x22eb) {
			if (avail(c) < 12)
				return DECODE_TRUNC_IP;
			eh = (c->p[11] & 0x01) ? 20 : 12; /* O bit: platform-specific subheader */
		}
		if (avail(c) < eh)
			return DECODE_TRUNC_IP;
		c->p += eh;
		return decode_ether(c, out);
	}
	return decode_ethertype(c, proto, out);
}

