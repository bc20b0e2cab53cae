/* copies: packets a capture holds twice. A SPAN port given both ports of a link, `-i any` over
 * a bridge and its members (or a VLAN and its parent), two taps around a router, a file given
 * twice: each packet comes again microseconds later, its TTL perhaps one lower, its link
 * header and checksums perhaps other. Read as packets, every segment looks retransmitted and
 * every QUIC flight twice its size. A copy is a packet equal to one seen before in everything
 * the network leaves alone (addresses, ports, IP ID, lengths, TCP's numbers, flags, window and
 * option values, the payload's first bytes; a QUIC datagram's own bytes, past its protected
 * packet number), within COPY_STRONG_US where the packet names its transmission, COPY_WEAK_US
 * where it does not, on a connection known to come twice (copies_seen). docs/METHOD.md
 * "Packets the capture holds twice". */
#ifndef IWSCOPE_COPIES_H
#define IWSCOPE_COPIES_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "pkt.h"

struct copy_slot {
	uint64_t key; /* a packet's fingerprint, 0: empty */
	uint64_t at;  /* when it was first seen (capture time, us) times 2, plus 1 once its copy
	               * came on a connection known to come twice (see copies_seen) */
};

/* Zeroed: empty. Four slots a set, a set one cache line: a copy is missed only when four
 * other packets of its set came between it and the first, not one. */
struct copies {
	_Alignas(64) struct copy_slot set[(1u << COPY_SLOTS_LOG2) / 4][4];
};

/* Whether p is a copy of a packet seen shortly before; remembers p either way, in place of
 * the oldest of its set (a packet forgotten that way costs a copy missed, never a packet
 * dropped). doubled: p's connection (its side, for TCP) is known to come twice; ids_vary: its
 * side's IPv4 IDs change from one packet to the next (the caller keeps both, doubled from
 * this function's answers). Until the connection is known to come twice, only what proves it
 * can be a copy: a TCP SYN or SYN-ACK (none is sent again within 10 ms), a TCP packet whose
 * IP ID names it (ids_vary), a QUIC datagram whose own bytes the capture holds; once it is,
 * any packet can, and packets alike pair off: within the window, the second of two alike is
 * the first's copy, the third a packet again, the fourth its copy, so that two equal
 * duplicate ACKs, or QUIC datagrams cut before their own bytes, count right in whatever order
 * they and their copies came. */
bool copies_seen(struct copies *c, const struct pkt *p, bool doubled, bool ids_vary);

#endif
