/* Link layer -> IP -> TCP. Every read is checked against the captured end; lengths come from
 * the IP header (clamped to what was captured only for reading bytes, never for sizes). */
#include "decode.h"

#include <string.h>

#include "bytes.h"
#include "tunnel.h"

enum { ET_IPV4 = 0x0800, ET_IPV6 = 0x86dd, ET_VLAN = 0x8100, ET_QINQ = 0x88a8, ET_QINQ_OLD = 0x9100,
       ET_PPPOE_SESS = 0x8864, ET_MPLS = 0x8847, ET_MPLS_MC = 0x8848, ET_TEB = 0x6558 };


static enum decode_result decode_llc(struct decode_cursor *c, struct pkt *out);

static const char *const reason_names[DECODE_NREASONS] = {
	[DECODE_OK] = "ok",
	[DECODE_NOT_IP] = "not_ip",
	[DECODE_NOT_TCP] = "not_tcp",
	[DECODE_TRUNC_LINK] = "truncated_link",
	[DECODE_TRUNC_IP] = "truncated_ip",
	[DECODE_TRUNC_TCP] = "truncated_tcp",
	[DECODE_BAD_IP] = "bad_ip_header",
	[DECODE_BAD_TCP] = "bad_tcp_header",
	[DECODE_FRAGMENT] = "ip_fragment",
	[DECODE_IPV6_EXT] = "ipv6_ext_unsupported",
	[DECODE_UNSUP_ENCAP] = "unsupported_encapsulation",
	[DECODE_COPY] = "copy",
};

const char *decode_reason_name(enum decode_result r)
{
	return (unsigned)r < DECODE_NREASONS ? reason_names[r] : "unknown";
}

bool decode_link_supported(int dlt)
{
	for (const struct decode_link_type *l = decode_link_types; l->name; l++)
		if (l->dlt == dlt)
			return true;
	return false;
}

/* PPP protocol field (RFC 1661): IPv4 0x0021, IPv6 0x0057. */
static enum decode_result decode_ppp_proto(struct decode_cursor *c, uint16_t proto, struct pkt *out)
{
	if (proto == 0x0021)
		return decode_ip(c, out);
	if (proto == 0x0057)
		return decode_ip(c, out);
	return DECODE_NOT_IP;
}

/* PPP frame, with or without the HDLC address/control bytes FF 03 and with a 1- or 2-byte
 * protocol field (RFC 1661 6.5 protocol-field compression). */
static enum decode_result decode_chdlc(struct decode_cursor *c, struct pkt *out);

static enum decode_result decode_ppp(struct decode_cursor *c, struct pkt *out)
{
	/* Cisco HDLC framing under the PPP link type (address 0x0f unicast, 0x8f broadcast), as
	 * tcpdump's ppp_hdlc_if_print accepts */
	if (avail(c) >= 4 && (c->p[0] == 0x0f || c->p[0] == 0x8f) && c->p[1] == 0x00)
		return decode_chdlc(c, out);
	if (avail(c) >= 2 && c->p[0] == 0xff && c->p[1] == 0x03)
		c->p += 2;
	if (avail(c) < 1)
		return DECODE_TRUNC_LINK;
	uint16_t proto;
	if (c->p[0] & 1) { /* compressed: one byte, odd */
		proto = c->p[0];
		c->p += 1;
	} else {
		if (avail(c) < 2)
			return DECODE_TRUNC_LINK;
		proto = rd_be16(c->p);
		c->p += 2;
	}
	return decode_ppp_proto(c, proto, out);
}

/* PPPoE session stage (RFC 2516): 6-byte header then PPP protocol. */
static enum decode_result decode_pppoe(struct decode_cursor *c, struct pkt *out)
{
	if (avail(c) < 8)
		return DECODE_TRUNC_LINK;
	uint16_t proto = rd_be16(c->p + 6);
	c->p += 8;
	return decode_ppp_proto(c, proto, out);
}

/* MPLS label stack (RFC 3032), then IP guessed from the version nibble, as tcpdump does. */
static enum decode_result decode_mpls(struct decode_cursor *c, struct pkt *out)
{
	for (int labels = 0;; labels++) {
		if (avail(c) < 4)
			return DECODE_TRUNC_LINK;
		uint32_t e = rd_be32(c->p);
		c->p += 4;
		if (e & 0x100)
			break; /* bottom of stack */
		if (labels > 16)
			return DECODE_UNSUP_ENCAP;
	}
	if (avail(c) < 1)
		return DECODE_TRUNC_LINK;
	uint8_t v = c->p[0] >> 4;
	if (v == 4 || v == 6)
		return decode_ip(c, out);
	if (v == 0 && avail(c) >= 4 + 14) { /* pseudowire control word, then Ethernet */
		c->p += 4;
		return decode_ether(c, out);
	}
	return DECODE_UNSUP_ENCAP;
}

enum decode_result decode_ethertype(struct decode_cursor *c, uint16_t type, struct pkt *out)
{
	for (;;) {
		switch (type) {
		case ET_IPV4:
		case ET_IPV6:
			return decode_ip(c, out);
		case ET_VLAN:
		case ET_QINQ:
		case ET_QINQ_OLD: /* 802.1Q / 802.1ad tag: TCI then the inner type */
			if (avail(c) < 4)
				return DECODE_TRUNC_LINK;
			type = rd_be16(c->p + 2);
			c->p += 4;
			continue;
		case ET_PPPOE_SESS:
			return decode_pppoe(c, out);
		case ET_MPLS:
		case ET_MPLS_MC:
			return decode_mpls(c, out);
		case ET_TEB:
			return decode_ether(c, out);
		default:
			return DECODE_NOT_IP; /* ARP, LLDP, ... */
		}
	}
}

/* IEEE 802.2 LLC: with SNAP (AA AA 03, an OUI, then an ethertype: RFC 1042, as 802.3 length
 * frames, FDDI, 802.11 and ATM carry IP) or IP's own SAP (06 06 03, RFC 948). Other SAPs (STP,
 * NetBIOS, IPX) and I/S frames carry no IP. */
static enum decode_result decode_llc(struct decode_cursor *c, struct pkt *out)
{
	if (avail(c) < 3)
		return DECODE_TRUNC_LINK;
	const uint8_t *l = c->p;
	if (l[0] == 0xaa && l[1] == 0xaa && l[2] == 0x03) {
		if (avail(c) < 8)
			return DECODE_TRUNC_LINK;
		uint32_t oui = (uint32_t)l[3] << 16 | (uint32_t)l[4] << 8 | l[5];
		uint16_t type = rd_be16(l + 6);
		c->p += 8;
		if (oui != 0 && oui != 0xf8) /* a vendor's own protocol ids (Cisco CDP, ...) */
			return DECODE_NOT_IP;
		return decode_ethertype(c, type, out);
	}
	if (l[0] == 0x06 && l[1] == 0x06 && l[2] == 0x03) {
		c->p += 3;
		return decode_ip(c, out);
	}
	return DECODE_NOT_IP;
}

enum decode_result decode_ether(struct decode_cursor *c, struct pkt *out)
{
	if (++c->depth > MAX_ENCAP_DEPTH)
		return DECODE_UNSUP_ENCAP;
	if (avail(c) < 14)
		return DECODE_TRUNC_LINK;
	uint16_t type = rd_be16(c->p + 12);
	c->p += 14;
	if (type <= 1500) { /* 802.3: a length, then LLC (Ethernet padding is not the frame's) */
		if (avail(c) > type)
			c->end = c->p + type;
		return decode_llc(c, out);
	}
	return decode_ethertype(c, type, out);
}

/* FDDI (ANSI X3.139): frame control, destination, source (13 bytes), then LLC when the frame
 * control says an LLC frame (asynchronous 0x50-0x57 or synchronous 0xd0-0xd7). */
static enum decode_result decode_fddi(struct decode_cursor *c, struct pkt *out)
{
	if (avail(c) < 13)
		return DECODE_TRUNC_LINK;
	uint8_t fc = c->p[0];
	c->p += 13;
	if ((fc & 0x70) != 0x50)
		return DECODE_NOT_IP; /* SMT, MAC and void frames */
	return decode_llc(c, out);
}

/* IEEE 802.11 data frames (IEEE 802.11-2020 9.3.2.1), frame control fc0 (protocol version,
 * type, subtype) and fc1 (flags): a 24-byte header, the fourth address between access points
 * (To DS and From DS), a QoS control field (QoS subtypes), an HT control field (QoS with the
 * +HTC/Order bit), then LLC/SNAP. Management, control, null and protected (encrypted) frames
 * carry no readable IP. */
enum decode_result decode_80211_fc(struct decode_cursor *c, uint8_t fc0, uint8_t fc1,
                                          struct pkt *out)
{
	if (avail(c) < 24)
		return DECODE_TRUNC_LINK;
	if ((fc0 & 0x0f) != 0x08)
		return DECODE_NOT_IP; /* not a data frame of protocol version 0 */
	if (fc0 & 0x40)
		return DECODE_NOT_IP; /* null function: no body */
	if (fc1 & 0x40)
		return DECODE_UNSUP_ENCAP; /* protected: WEP, TKIP, CCMP */
	size_t hl = 24;
	if ((fc1 & 0x03) == 0x03)
		hl += 6;
	if (fc0 & 0x80) { /* QoS data */
		hl += 2;
		if (fc1 & 0x80)
			hl += 4;
	}
	if (avail(c) < hl)
		return DECODE_TRUNC_LINK;
	c->p += hl;
	return decode_llc(c, out);
}

/* ARCnet packet types carrying IP (RFC 1201 212 and 196 for IPv6, RFC 1051's 240). */
static enum decode_result decode_arcnet_type(struct decode_cursor *c, uint8_t type, struct pkt *out)
{
	switch (type) {
	case 212: case 196: case 240:
		return decode_ip(c, out);
	default:
		return DECODE_NOT_IP; /* ARP, RARP, IPX, diagnostics */
	}
}

/* ARCnet as Linux captures it (DLT_ARCNET_LINUX): source, destination, a 2-byte offset, the
 * type, then RFC 1201's flag and sequence number (8 bytes), or without them for RFC 1051's
 * types (5 bytes), as tcpdump's arcnet_linux_if_print reads it. Linux hands over whole packets. */
static enum decode_result decode_arcnet_linux(struct decode_cursor *c, struct pkt *out)
{
	if (avail(c) < 5)
		return DECODE_TRUNC_LINK;
	uint8_t type = c->p[4];
	size_t hl = (type == 240 || type == 241 || type == 0x80) ? 5 : 8;
	if (avail(c) < hl)
		return DECODE_TRUNC_LINK;
	c->p += hl;
	return decode_arcnet_type(c, type, out);
}

/* ARCnet as BSD captures it (DLT_ARCNET): source, destination, type, then for RFC 1201's types
 * the split flag and sequence number (6 bytes; 10 with an exception packet's flag 0xff). A
 * packet split by RFC 1201 (a non-zero flag) is a fragment: not analysed. */
static enum decode_result decode_arcnet(struct decode_cursor *c, struct pkt *out)
{
	if (avail(c) < 3)
		return DECODE_TRUNC_LINK;
	uint8_t type = c->p[2];
	if (type == 240 || type == 241 || type == 0x80) {
		c->p += 3;
		return decode_arcnet_type(c, type, out);
	}
	if (avail(c) < 6)
		return DECODE_TRUNC_LINK;
	size_t hl = 6;
	uint8_t flag = c->p[3];
	if (flag == 0xff) {
		if (avail(c) < 10)
			return DECODE_TRUNC_LINK;
		flag = c->p[7];
		hl = 10;
	}
	if (flag)
		return DECODE_FRAGMENT;
	c->p += hl;
	return decode_arcnet_type(c, type, out);
}

/* Linux cooked capture v1: 16 bytes, protocol at offset 14. */
static enum decode_result decode_sll(struct decode_cursor *c, struct pkt *out)
{
	if (avail(c) < 16)
		return DECODE_TRUNC_LINK;
	uint16_t type = rd_be16(c->p + 14);
	c->p += 16;
	if (type == 0x0004) /* LINUX_SLL_P_802_2: an LLC header follows */
		return decode_llc(c, out);
	return decode_ethertype(c, type, out);
}

/* Linux cooked capture v2: 20 bytes, protocol first. */
static enum decode_result decode_sll2(struct decode_cursor *c, struct pkt *out)
{
	if (avail(c) < 20)
		return DECODE_TRUNC_LINK;
	uint16_t type = rd_be16(c->p);
	c->p += 20;
	if (type == 0x0004)
		return decode_llc(c, out);
	return decode_ethertype(c, type, out);
}

/* BSD loopback: a 4-byte address family in the writer's byte order (NULL) or network order
 * (LOOP). AF_INET is 2 everywhere; AF_INET6 is 10 (Linux), 24, 28 or 30 (BSDs, macOS). */
static enum decode_result decode_null(struct decode_cursor *c, bool network_order, struct pkt *out)
{
	if (avail(c) < 4)
		return DECODE_TRUNC_LINK;
	uint32_t fam = network_order ? rd_be32(c->p) : rd_le32(c->p);
	if (!network_order && fam > 0xffff)
		fam = rd_be32(c->p); /* written on a big-endian host */
	c->p += 4;
	switch (fam) {
	case 2: case 10: case 24: case 28: case 30:
		return decode_ip(c, out);
	default:
		return DECODE_NOT_IP;
	}
}

/* Cisco HDLC: address, control, ethertype. */
static enum decode_result decode_chdlc(struct decode_cursor *c, struct pkt *out)
{
	if (avail(c) < 4)
		return DECODE_TRUNC_LINK;
	uint16_t type = rd_be16(c->p + 2);
	c->p += 4;
	return decode_ethertype(c, type, out);
}

/* Linux NFLOG: 4-byte header, then type-length-value attributes (host byte order, here
 * little-endian as written by Linux on x86 and ARM), padded to 4; NFULA_PAYLOAD (9) holds the
 * IP packet. */
static enum decode_result decode_nflog(struct decode_cursor *c, struct pkt *out)
{
	if (avail(c) < 4)
		return DECODE_TRUNC_LINK;
	c->p += 4;
	while (avail(c) >= 4) {
		uint16_t len = (uint16_t)(c->p[0] | c->p[1] << 8);
		uint16_t type = (uint16_t)(c->p[2] | c->p[3] << 8) & 0x7fff;
		if (len < 4)
			return DECODE_UNSUP_ENCAP;
		if (type == 9) {
			if (avail(c) > len)
				c->end = c->p + len;
			c->p += 4;
			return decode_ip(c, out);
		}
		size_t step = ((size_t)len + 3) & ~(size_t)3;
		if (step > avail(c))
			return DECODE_TRUNC_LINK;
		c->p += step;
	}
	return DECODE_NOT_IP;
}

uint8_t decode_tcp_options(const uint8_t *opt, size_t len, bool cut, struct tcp_opts *o)
{
	uint8_t quirks = 0;
	size_t i = 0;
	/* the scalars only: the arrays after them (SACK blocks and the layout, 72 bytes) are valid up
	 * to nsack and layout_len (pkt.h), and clearing them for every segment is work nobody reads */
	memset(o, 0, offsetof(struct tcp_opts, sack_left));
	/* NOP, NOP, timestamps: what almost every segment after the SYNs carries (RFC 7323
	 * appendix A), taken in one step with what the loop below would make of it */
	if (len == 12 && !cut && opt[0] == 1 && opt[1] == 1 && opt[2] == 8 && opt[3] == 10) {
		o->layout[0] = o->layout[1] = 1;
		o->layout[2] = 8;
		o->layout_len = 3;
		o->tsval = rd_be32(opt + 4);
		o->tsecr = rd_be32(opt + 8);
		o->present = OPT_TS;
		return 0;
	}
	while (i < len) {
		uint8_t kind = opt[i];
		if (o->layout_len < OPT_LAYOUT_MAX)
			o->layout[o->layout_len++] = kind;
		if (kind == 0) { /* EOL: the rest is padding, which should be zero */
			o->eol_pad = (uint8_t)(len - i - 1);
			for (size_t j = i + 1; j < len; j++)
				if (opt[j])
					quirks |= Q_OPT_TAIL;
			return quirks;
		}
		if (kind == 1) { /* NOP */
			i++;
			continue;
		}
		if (i + 1 >= len)
			return quirks | (cut ? Q_OPT_CUT : Q_OPT_BAD);
		uint8_t olen = opt[i + 1];
		if (olen < 2)
			return quirks | Q_OPT_BAD; /* would never end */
		if (i + olen > len)
			return quirks | (cut ? Q_OPT_CUT : Q_OPT_BAD);
		const uint8_t *v = opt + i + 2;
		switch (kind) {
		case 2: /* MSS, RFC 9293 3.2 */
			if (olen == 4) {
				o->mss = rd_be16(v);
				o->present |= OPT_MSS;
			} else {
				quirks |= Q_OPT_BAD;
			}
			break;
		case 3: /* window scale, RFC 7323 2.2 */
			if (olen == 3) {
				o->wscale = v[0];
				o->present |= OPT_WS;
			} else {
				quirks |= Q_OPT_BAD;
			}
			break;
		case 4: /* SACK permitted, RFC 2018 */
			if (olen == 2)
				o->present |= OPT_SACKOK;
			else
				quirks |= Q_OPT_BAD;
			break;
		case 5: /* SACK blocks, RFC 2018 3 */
			if ((olen - 2) % 8 == 0 && olen > 2) {
				o->present |= OPT_SACK;
				for (unsigned b = 0; b < (unsigned)(olen - 2) / 8 && o->nsack < 4; b++) {
					o->sack_left[o->nsack] = rd_be32(v + 8 * b);
					o->sack_right[o->nsack] = rd_be32(v + 8 * b + 4);
					o->nsack++;
				}
			} else {
				quirks |= Q_OPT_BAD;
			}
			break;
		case 8: /* timestamps, RFC 7323 3.2 */
			if (olen == 10) {
				o->tsval = rd_be32(v);
				o->tsecr = rd_be32(v + 4);
				o->present |= OPT_TS;
			} else {
				quirks |= Q_OPT_BAD;
			}
			break;
		case 34: /* TCP Fast Open cookie, RFC 7413 4.1.1 */
			o->present |= OPT_TFO;
			break;
		default:
			break;
		}
		i += olen;
	}
	if (cut)
		quirks |= Q_OPT_CUT;
	return quirks;
}

/* TCP (RFC 9293 3.1). seglen = TCP header + payload length from the IP header. */
static enum decode_result decode_tcp(struct decode_cursor *c, uint32_t seglen, struct pkt *out)
{
	if (seglen < 20)
		return DECODE_BAD_TCP;
	if (avail(c) < 20)
		return DECODE_TRUNC_TCP;
	const uint8_t *t = c->p;
	uint16_t hlen = (uint16_t)((t[12] >> 4) * 4);
	if (hlen < 20 || hlen > seglen)
		return DECODE_BAD_TCP;
	out->transport = 6;
	out->sport = rd_be16(t);
	out->dport = rd_be16(t + 2);
	out->seq = rd_be32(t + 4);
	out->ack = rd_be32(t + 8);
	out->flags = t[13];
	out->win = rd_be16(t + 14);
	out->tcp_hlen = hlen;
	size_t have = avail(c);
	bool cut = have < hlen;
	size_t optlen = (cut ? have : hlen) - 20;
	out->quirks |= decode_tcp_options(t + 20, optlen, cut, &out->opt);
	out->payload_len = seglen - hlen;
	if (cut) {
		out->payload = NULL;
		out->payload_cap = 0;
	} else {
		out->payload = t + hlen;
		size_t cap = have - hlen;
		out->payload_cap = (uint32_t)(cap < out->payload_len ? cap : out->payload_len);
	}
	if (out->payload_cap < out->payload_len)
		out->quirks |= Q_TRUNC;
	return DECODE_OK;
}

/* The transport after an IP header: TCP, or a tunnel that carries IP. */
static enum decode_result decode_transport(struct decode_cursor *c, uint8_t proto, uint32_t len,
                                           struct pkt *out)
{
	switch (proto) {
	case 6:
		return decode_tcp(c, len, out);
	case 4: /* IP in IP */
	case 41: /* IPv6 in IP */
		if (avail(c) > len)
			c->end = c->p + len;
		return decode_ip(c, out);
	case 47:
		if (avail(c) > len)
			c->end = c->p + len;
		return tunnel_gre(c, out);
	case 17:
		if (avail(c) > len)
			c->end = c->p + len;
		return tunnel_udp(c, len, out);
	default:
		return DECODE_NOT_TCP;
	}
}

/* IPv4 (RFC 791): options skipped, fragments refused. Total length 0 (TSO on the sending host)
 * falls back to the captured length. */
static enum decode_result decode_ipv4(struct decode_cursor *c, struct pkt *out)
{
	if (avail(c) < 20)
		return DECODE_TRUNC_IP;
	const uint8_t *h = c->p;
	uint32_t ihl = (uint32_t)(h[0] & 0x0f) * 4;
	uint32_t tot = rd_be16(h + 2);
	if (ihl < 20)
		return DECODE_BAD_IP;
	if (avail(c) < ihl)
		return DECODE_TRUNC_IP;
	if (tot == 0)
		tot = (uint32_t)avail(c);
	if (tot < ihl)
		return DECODE_BAD_IP;
	if (rd_be16(h + 6) & 0x3fff)
		return DECODE_FRAGMENT; /* MF set or offset non-zero */
	if (ihl > 20)
		out->quirks |= Q_IP_OPTS;
	out->ip_ver = 4;
	out->ttl = h[8];
	out->ipid = rd_be16(h + 4);
	memset(&out->src, 0, sizeof(out->src));
	memset(&out->dst, 0, sizeof(out->dst));
	memcpy(out->src.b, h + 12, 4);
	memcpy(out->dst.b, h + 16, 4);
	uint8_t proto = h[9];
	if (avail(c) > tot)
		c->end = c->p + tot; /* Ethernet padding is not payload */
	out->ip_hdr = h;
	out->ip_cap = (uint32_t)avail(c);
	c->p += ihl;
	return decode_transport(c, proto, tot - ihl, out);
}

/* IPv6 (RFC 8200) with its extension-header chain (section 4). */
static enum decode_result decode_ipv6(struct decode_cursor *c, struct pkt *out)
{
	if (avail(c) < 40)
		return DECODE_TRUNC_IP;
	const uint8_t *h = c->p;
	uint32_t plen = rd_be16(h + 4);
	uint8_t next = h[6];
	out->ip_ver = 6;
	out->ttl = h[7];
	out->ipid = 0;
	memcpy(out->src.b, h + 8, 16);
	memcpy(out->dst.b, h + 24, 16);
	c->p += 40;
	if (plen == 0) /* jumbogram or TSO: take what was captured */
		plen = (uint32_t)avail(c);
	if (avail(c) > plen)
		c->end = c->p + plen;
	out->ip_hdr = h;
	out->ip_cap = (uint32_t)(c->end - h);
	for (int n = 0; n < 16; n++) {
		uint32_t hl;
		switch (next) {
		case 0: case 43: case 60: case 135: case 139: case 140: /* hop-by-hop, routing, dest... */
			if (avail(c) < 2)
				return DECODE_TRUNC_IP;
			hl = ((uint32_t)c->p[1] + 1) * 8;
			break;
		case 44: /* fragment: only an atomic fragment (offset 0, M clear) is whole */
			if (avail(c) < 8)
				return DECODE_TRUNC_IP;
			if (rd_be16(c->p + 2) & 0xfff9)
				return DECODE_FRAGMENT;
			hl = 8;
			break;
		case 51: /* AH, RFC 4302: length in 4-byte units minus 2 */
			if (avail(c) < 2)
				return DECODE_TRUNC_IP;
			hl = ((uint32_t)c->p[1] + 2) * 4;
			break;
		case 50: /* ESP: encrypted from here on */
			return DECODE_IPV6_EXT;
		case 59:
			return DECODE_NOT_TCP;
		default:
			return decode_transport(c, next, plen, out);
		}
		if (hl > plen)
			return DECODE_BAD_IP;
		if (avail(c) < hl)
			return DECODE_TRUNC_IP;
		next = c->p[0];
		c->p += hl;
		plen -= hl;
	}
	return DECODE_IPV6_EXT;
}

enum decode_result decode_ip(struct decode_cursor *c, struct pkt *out)
{
	if (++c->depth > MAX_ENCAP_DEPTH)
		return DECODE_UNSUP_ENCAP;
	if (avail(c) < 1)
		return DECODE_TRUNC_IP;
	switch (c->p[0] >> 4) {
	case 4:
		return decode_ipv4(c, out);
	case 6:
		return decode_ipv6(c, out);
	default:
		return DECODE_BAD_IP;
	}
}

static enum decode_result decode_null_host(struct decode_cursor *c, struct pkt *out)
{
	return decode_null(c, false, out);
}

static enum decode_result decode_loop(struct decode_cursor *c, struct pkt *out)
{
	return decode_null(c, true, out);
}

/* libpcap's DLT_* values, spelled out so that the decoder does not depend on pcap.h; Ethernet
 * first, as decode_packet() looks them up in order. One line per link type: the capture
 * readers, the fuzz target and tests/fuzz/run.py (which parses these lines) take it from here. */
const struct decode_link_type decode_link_types[] = {
	{ 1, "EN10MB", decode_ether },
	{ 0, "NULL", decode_null_host },     /* BSD loopback: a host-order address family */
	{ 108, "LOOP", decode_loop },        /* OpenBSD loopback: the family in network order */
	{ 12, "RAW", decode_ip },            /* raw IP, as most systems number it */
	{ 14, "RAW", decode_ip },            /* raw IP, as OpenBSD numbers it */
	{ 228, "IPV4", decode_ip },
	{ 229, "IPV6", decode_ip },
	{ 9, "PPP", decode_ppp },
	{ 50, "PPP_SERIAL", decode_ppp },
	{ 51, "PPP_ETHER", decode_pppoe },
	{ 104, "C_HDLC", decode_chdlc },
	{ 113, "LINUX_SLL", decode_sll },
	{ 276, "LINUX_SLL2", decode_sll2 },
	{ 239, "NFLOG", decode_nflog },
	{ 10, "FDDI", decode_fddi },                  /* then 802.2 LLC/SNAP */
	{ 7, "ARCNET", decode_arcnet },               /* BSD's ARCnet header */
	{ 129, "ARCNET_LINUX", decode_arcnet_linux }, /* Linux's ARCnet header */
	{ 0, NULL, NULL },
};

bool decode_peek_tuple(int dlt, const uint8_t *data, uint32_t caplen, struct pkt *out)
{
	/* Ethernet (14), IPv4 without options (20), the ports (4) */
	if (dlt != 1 || caplen < 14 + 20 + 4 || rd_be16(data + 12) != 0x0800 || data[14] != 0x45)
		return false;
	const uint8_t *ip = data + 14;
	if ((ip[9] != 6 && ip[9] != 17) || (rd_be16(ip + 6) & 0x3fff)) /* fragments: not here */
		return false;
	out->ip_ver = 4;
	out->transport = ip[9];
	memset(&out->src, 0, sizeof(out->src));
	memset(&out->dst, 0, sizeof(out->dst));
	memcpy(out->src.b, ip + 12, 4);
	memcpy(out->dst.b, ip + 16, 4);
	out->sport = rd_be16(ip + 20);
	out->dport = rd_be16(ip + 22);
	return true;
}

enum decode_result decode_packet(int dlt, const uint8_t *data, uint32_t caplen, uint64_t ts_us,
                                 struct pkt *out)
{
	struct decode_cursor c = { data, data + caplen, 0 };
	out->ts_us = ts_us;
	out->quirks = 0;
	for (const struct decode_link_type *l = decode_link_types; l->name; l++)
		if (l->dlt == dlt)
			return l->decode(&c, out);
	return DECODE_UNSUP_ENCAP;
}
