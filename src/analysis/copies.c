/* Packets a capture holds twice (copies.h): a fingerprint of what the network leaves alone,
 * in a small set-associative table of recent ones. */
#include "copies.h"

#include <string.h>

#include "quic.h"

/* The fingerprint is a sum of products, each word times a constant of its position (a
 * multilinear hash: the products are independent, so the CPU makes them side by side; every
 * packet passes here), spread over every bit once at the end (finish). */
struct fp {
	uint64_t sum;
	unsigned n;
};

static void put(struct fp *f, uint64_t v)
{
	static const uint64_t k[16] = {
		0x9e3779b97f4a7c15ull, 0xbf58476d1ce4e5b9ull, 0x94d049bb133111ebull, 0xff51afd7ed558ccdull,
		0xc4ceb9fe1a85ec53ull, 0x2545f4914f6cdd1dull, 0xd6e8feb86659fd93ull, 0xa0761d6478bd642full,
		0xe7037ed1a0b428dbull, 0x8ebc6af09c88c6e3ull, 0x589965cc75374cc3ull, 0x1d8e4e27c47d124full,
		0xd1b54a32d192ed03ull, 0xaef17502108ef2d9ull, 0xf1357aea2e62a9c5ull, 0x9fb21c651e98df25ull,
	};
	f->sum += (v + k[(f->n + 5) & 15]) * k[f->n & 15];
	f->n++;
}

static uint64_t finish(const struct fp *f)
{
	uint64_t h = f->sum ^ f->n;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 33);
}

/* n (1 to 8) bytes at b as a word: fixed-size copies, which the compiler makes one load. */
static uint64_t word(const uint8_t *b, unsigned n)
{
	uint64_t v = 0;
	if (n >= 8) {
		memcpy(&v, b, 8);
	} else if (n >= 4) {
		uint32_t lo, hi;
		memcpy(&lo, b, 4);
		memcpy(&hi, b + n - 4, 4); /* overlapping: every byte read, none past the end */
		v = (uint64_t)hi << 32 | lo;
	} else {
		for (unsigned i = 0; i < n; i++)
			v = v << 8 | b[i];
	}
	return v;
}

/* Puts bytes [from, to) of b into f, 8 at a time. */
static void put_bytes(struct fp *f, const uint8_t *b, uint32_t from, uint32_t to)
{
	for (uint32_t i = from; i < to; i += 8)
		put(f, word(b + i, to - i));
}

/* How far into a QUIC datagram its bytes are its own: a datagram sent again carries another
 * packet number and so other protected bytes, while what comes before them (flags, version,
 * connection IDs, token, length) is alike across a connection's datagrams, and what comes
 * after the first packet may be zeros of padding. Up to 16 bytes past the first packet's
 * protected packet number (RFC 9000 17.2: 4 bytes at most), what it encrypts: a long header
 * says where that is, a short one's is within the first 41 bytes (a connection ID of 20 at
 * most); the datagram's end if sooner. A header of another layout (Google QUIC's own, a
 * version not known): the whole datagram less its trailing zeros, where the capture holds it.
 * 0 where the capture stops before. */
static uint32_t quic_own_end(const struct pkt *p)
{
	struct quic_hdr q;
	uint32_t end = 0, len = p->payload_len;
	enum quic_parse r = quic_header(p->payload, len, p->payload_cap, &q);
	if ((r == QUIC_OK || r == QUIC_CUT) && q.pn_offset) {
		end = q.pn_offset + 4 + 16;
	} else if (r == QUIC_OK && q.type == QUIC_SHORT) {
		end = 1 + QUIC_CID_MAX + 4 + 16;
	} else if (p->payload_cap >= len) {
		end = len;
		while (end > 0 && p->payload[end - 1] == 0)
			end--;
		return end >= 16 ? end : 0;
	}
	if (end > len)
		end = len;
	return end <= p->payload_cap ? end : 0;
}

enum identity {
	ALIKE,  /* a QUIC datagram cut before its own bytes: one of many alike */
	WEAK,   /* a segment (IPv6, ID 0): sent again within a round trip, it would be the same */
	STRONG  /* an IP ID, a QUIC datagram's own bytes: one transmission */
};

/* The fingerprint, and how well it names one transmission (*id). */
static uint64_t fingerprint(const struct pkt *p, enum identity *id)
{
	struct fp f = { 0, 0 };
	put(&f, (uint64_t)p->ip_ver << 56 | (uint64_t)p->transport << 48 | (uint64_t)p->sport << 16 |
	        p->dport);
	if (p->ip_ver == 4) {
		put(&f, word(p->src.b, 4) << 32 | word(p->dst.b, 4));
	} else {
		put_bytes(&f, p->src.b, 0, 16);
		put_bytes(&f, p->dst.b, 0, 16);
	}
	put(&f, (uint64_t)p->ipid << 32 | p->payload_len);
	*id = p->ipid ? STRONG : WEAK;
	if (p->transport != 6) {
		/* a QUIC datagram: its own bytes name one transmission. Without them (cut), a burst
		 * of equal datagrams is all alike, whatever the IP ID (a stack may keep one) */
		uint32_t end = quic_own_end(p);
		put_bytes(&f, p->payload, 0, end < 64 ? end : 64);
		if (end > 64)
			put_bytes(&f, p->payload, end - 32 > 64 ? end - 32 : 64, end);
		*id = end ? STRONG : ALIKE;
		return finish(&f);
	}
	/* a segment's first 16 payload bytes, or all of a shorter payload, where the capture holds
	 * them (a snaplen may cut one copy a few bytes shorter than the other: a longer link
	 * header): a crafted capture sends other bytes again at the same numbers */
	uint32_t n = p->payload_len < 16 ? p->payload_len : 16;
	if (n == 16 && p->payload_cap >= 16) { /* the common case, two loads */
		put(&f, word(p->payload, 8));
		put(&f, word(p->payload + 8, 8));
	} else if (n && p->payload_cap >= n) {
		put_bytes(&f, p->payload, 0, n);
	}
	put(&f, (uint64_t)p->seq << 32 | p->ack);
	put(&f, (uint64_t)p->flags << 40 | (uint64_t)p->win << 24 | (uint64_t)p->tcp_hlen << 8 |
	        p->opt.present);
	if (p->opt.present & OPT_TS)
		put(&f, (uint64_t)p->opt.tsval << 32 | p->opt.tsecr);
	for (unsigned i = 0; i < p->opt.nsack; i++)
		put(&f, (uint64_t)p->opt.sack_left[i] << 32 | p->opt.sack_right[i]);
	return finish(&f);
}

bool copies_seen(struct copies *c, const struct pkt *p, bool doubled, bool ids_vary)
{
	enum identity id = STRONG;
	uint64_t h = fingerprint(p, &id) | 1; /* never 0, an empty slot's */
	/* what shows that the capture holds a connection twice, before anything else of it may
	 * be a copy: a SYN or SYN-ACK (none is sent again within 10 ms), an IP ID where the side's
	 * IDs change, a QUIC datagram's own bytes (none is ever sent again). A duplicate ACK is
	 * equal to the ACK before it, and a stack may keep one IP ID: without that proof, packets
	 * alike are packets. */
	bool proves = p->transport == 6 ? (p->flags & TH_SYN) || (id == STRONG && ids_vary)
	                                : id == STRONG;
	uint64_t window = id == STRONG || proves ? COPY_STRONG_US : COPY_WEAK_US;
	struct copy_slot *set = c->set[h >> (64 - COPY_SLOTS_LOG2 + 2)];
	unsigned hit = 4, old = 0;
	uint64_t oldest = set[0].at;
	for (unsigned i = 0; i < 4; i++) {
		uint64_t at = set[i].at;
		hit = set[i].key == h ? i : hit;
		old = at < oldest ? i : old; /* an empty slot's time is 0: the oldest */
		oldest = at < oldest ? at : oldest;
	}
	if (hit < 4) {
		struct copy_slot *s = &set[hit];
		uint64_t at = s->at >> 1;
		uint64_t gap = p->ts_us >= at ? p->ts_us - at : at - p->ts_us;
		/* on a connection held twice, packets alike pair off: the second the first's copy,
		 * the third a packet again (two equal duplicate ACKs, each with its copy) */
		if (gap <= window && !(s->at & 1) && (doubled || proves)) {
			s->at |= doubled;
			return true;
		}
		old = hit; /* the same packet long ago, a pair done, or one alike before the proof
		            * (it is remembered all the same: the proof may come between a packet
		            * and its copy) */
	}
	set[old].key = h;
	set[old].at = p->ts_us << 1;
	return false;
}
