/* Packets a capture holds twice (copies.h): a fingerprint of what the network leaves alone,
 * in a small set-associative table of recent ones. */
#include "copies.h"

#include <string.h>

#include "quic.h"

/* One round of a 64-bit mix (the finaliser of MurmurHash3 over a running xor). */
static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

static uint64_t word(const uint8_t *b, unsigned n)
{
	uint64_t v = 0;
	memcpy(&v, b, n < 8 ? n : 8);
	return v;
}

/* Mixes bytes [from, to) of b into h, 8 at a time. */
static uint64_t mix_bytes(uint64_t h, const uint8_t *b, uint32_t from, uint32_t to)
{
	for (uint32_t i = from; i < to; i += 8)
		h = mix(h, word(b + i, to - i));
	return h;
}

/* How far into a QUIC datagram its bytes are its own: a datagram sent again carries another
 * packet number and so other protected bytes, while what comes before them (flags, version,
 * connection IDs, token, length) is alike across a connection's datagrams. The whole datagram
 * where the capture holds it (its last bytes are an AEAD tag); else past the first packet's
 * protected packet number (RFC 9000 17.2: 4 bytes at most) and 16 bytes of what it encrypts:
 * a long header says where that is, a short one's is within the first 41 bytes (a connection
 * ID of 20 at most). 0 where the capture stops before. */
static uint32_t quic_own_end(const struct pkt *p)
{
	if (p->payload_cap >= p->payload_len)
		return p->payload_len >= 16 ? p->payload_len : 0;
	struct quic_hdr q;
	uint32_t end = 0;
	enum quic_parse r = quic_header(p->payload, p->payload_len, p->payload_cap, &q);
	if ((r == QUIC_OK || r == QUIC_CUT) && q.pn_offset)
		end = q.pn_offset + 4 + 16;
	else if (r == QUIC_OK && q.type == QUIC_SHORT)
		end = 1 + QUIC_CID_MAX + 4 + 16;
	return end <= p->payload_cap ? end : 0;
}

enum identity {
	ALIKE,  /* a QUIC datagram cut before its own bytes, no IP ID: one of many alike */
	WEAK,   /* a segment (IPv6, ID 0): sent again within a round trip, it would be the same */
	STRONG  /* an IP ID, a QUIC datagram's own bytes: one transmission */
};

/* The fingerprint, and how well it names one transmission (*id). */
static uint64_t fingerprint(const struct pkt *p, enum identity *id)
{
	uint64_t h = mix(0x9e3779b97f4a7c15ull, (uint64_t)p->ip_ver << 56 | (uint64_t)p->transport << 48 |
	                                         (uint64_t)p->sport << 16 | p->dport);
	for (unsigned i = 0; i < (p->ip_ver == 4 ? 4u : 16u); i += 8) {
		h = mix(h, word(p->src.b + i, p->ip_ver == 4 ? 4 : 8));
		h = mix(h, word(p->dst.b + i, p->ip_ver == 4 ? 4 : 8));
	}
	h = mix(h, (uint64_t)p->ipid << 32 | p->payload_len);
	*id = p->ipid ? STRONG : WEAK;
	if (p->transport != 6) {
		/* a QUIC datagram: the bytes that are its own name one transmission. Without them
		 * (cut) and without an IP ID, a burst of equal datagrams is all alike: none is a
		 * copy */
		uint32_t end = quic_own_end(p);
		if (end) {
			h = mix_bytes(h, p->payload, 0, end < 64 ? end : 64);
			if (end > 64)
				h = mix_bytes(h, p->payload, end - 32 > 64 ? end - 32 : 64, end);
		}
		if (end)
			*id = STRONG;
		else if (!p->ipid)
			*id = ALIKE;
		return h;
	}
	/* a segment's first 16 payload bytes, or all of a shorter payload, where the capture holds
	 * them (a snaplen may cut one copy a few bytes shorter than the other: a longer link
	 * header): a crafted capture sends other bytes again at the same numbers */
	uint32_t n = p->payload_len < 16 ? p->payload_len : 16;
	if (n && p->payload_cap >= n)
		h = mix_bytes(h, p->payload, 0, n);
	h = mix(h, (uint64_t)p->seq << 32 | p->ack);
	h = mix(h, (uint64_t)p->flags << 40 | (uint64_t)p->win << 24 | (uint64_t)p->tcp_hlen << 8 |
	           p->opt.present);
	if (p->opt.present & OPT_TS)
		h = mix(h, (uint64_t)p->opt.tsval << 32 | p->opt.tsecr);
	for (unsigned i = 0; i < p->opt.nsack; i++)
		h = mix(h, (uint64_t)p->opt.sack_left[i] << 32 | p->opt.sack_right[i]);
	return h;
}

bool copies_seen(struct copies *c, const struct pkt *p, bool doubled)
{
	enum identity id = STRONG;
	uint64_t h = fingerprint(p, &id) | 1; /* never 0, an empty slot's */
	if (id == ALIKE && !doubled)
		return false; /* nothing tells this datagram from another like it */
	uint64_t window = id == STRONG ? COPY_STRONG_US : COPY_WEAK_US;
	struct copy_slot *set = c->set[h >> (64 - COPY_SLOTS_LOG2 + 2)];
	struct copy_slot *old = &set[0];
	for (unsigned i = 0; i < 4; i++) {
		struct copy_slot *s = &set[i];
		if (s->key == h) {
			uint64_t at = s->at;
			uint64_t gap = p->ts_us >= at ? p->ts_us - at : at - p->ts_us;
			if (gap <= window && !s->paired) {
				s->paired = id == ALIKE; /* the next alike is a datagram again */
				return true;
			}
			old = s; /* the same packet long ago, or an alike one's pair done */
			break;
		}
		if (s->at < old->at || !s->key)
			old = s;
	}
	old->key = h;
	old->at = p->ts_us;
	old->paired = 0;
	return false;
}
