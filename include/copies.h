/* copies: packets a capture holds twice. A SPAN port given both directions of two ports, `-i any`
 * over a bridge and its members (or a VLAN and its parent), two taps around a router: each
 * packet comes again microseconds later, its TTL perhaps one lower, its link header and
 * checksums perhaps other. Read as packets, every segment looks retransmitted and every first
 * flight twice its size. A copy is a packet equal to one of the same flow and direction
 * seen within COPY_STRONG_US (COPY_WEAK_US where nothing in the packet names its transmission:
 * IPv6 and IPv4 ID 0 TCP, whose retransmission of the same bytes is equal to it) in everything
 * but TTL and checksums: addresses, ports, IP ID, lengths, TCP's numbers, flags, window and
 * option values, a UDP datagram's first payload bytes (QUIC's header and protected packet
 * number: no two datagrams of a connection share them). docs/METHOD.md "Copies". */
#ifndef IWSCOPE_COPIES_H
#define IWSCOPE_COPIES_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "pkt.h"

struct copy_slot {
	uint64_t key; /* a packet's fingerprint, 0: empty */
	uint64_t at;  /* when it was first seen (capture time, us) times 2, plus 1 once it was
	               * paired (a datagram alike to others whose copy came: see copies_seen) */
};

/* Zeroed: empty. Four slots a set, a set one cache line: a copy is missed only when four
 * other packets of its set came between it and the first, not one. */
struct copies {
	_Alignas(64) struct copy_slot set[(1u << COPY_SLOTS_LOG2) / 4][4];
};

/* Whether p is a copy of a packet seen shortly before; remembers p when it is not, in place of
 * the oldest of its set: a packet forgotten that way costs a copy missed, never a packet
 * dropped. A QUIC datagram whose own bytes the capture cut (and with no IP ID) is alike to
 * the others of its size: never a copy, unless its connection is known to come twice
 * (doubled: one of its datagrams was a copy), where such datagrams pair off: within
 * COPY_WEAK_US, the second of two alike is the first's copy, the third a datagram again, the
 * fourth its copy, ..., so that their count is right whatever the order. */
bool copies_seen(struct copies *c, const struct pkt *p, bool doubled);

#endif
