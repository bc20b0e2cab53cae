/* quicflow: one QUIC connection followed from its datagrams (a struct flow with transport 17):
 * versions, Retry, version negotiation, 0-RTT, the spin bit, the ClientHello's name and ALPN
 * from the client's Initial packets, each side's first flight and the server's bytes before
 * the client's address was validated (RFC 9000 8.1). docs/METHOD.md "QUIC" says what each
 * field means and what the packets cannot show. */
#ifndef IWSCOPE_QUICFLOW_H
#define IWSCOPE_QUICFLOW_H

#include <stdbool.h>
#include <stdint.h>

#include "flight.h"
#include "flow.h"
#include "pkt.h"
#include "record.h"

/* Whether p (a DECODE_UDP datagram) starts a QUIC connection: a long header of a version
 * iwscope knows (or Google QUIC's); *client says whether its sender is the client (a
 * client's Initial, or the server port guessed where the first packet seen is the server's). */
bool quicflow_starts(const struct pkt *p, bool *client);

/* Whether p is a client's first Initial (padded, not from a QUIC server's port, and opened
 * by the keys of its own DCID): on the addresses and ports of an evicted connection it starts
 * a new one, as a SYN does for TCP. */
bool quicflow_client_initial(const struct pkt *p);

/* Follows datagram p of flow f, sent by the client (dir 0) or the server (1). false when the
 * connection's state could not be allocated (the datagram is counted, nothing else). */
bool quicflow_update(struct flow *f, const struct pkt *p, int dir);

/* The first-flight verdict of f's client (sender 0) or server (1), in datagrams. */
void quicflow_verdict(const struct flow *f, int sender, struct ff_verdict *v);

/* Fills the QUIC fields of r (transport, version, ALPN, flags, the amplification figures, the
 * handshake's round trips, the server name from the ClientHello when nDPI gives none). */
void quicflow_record(const struct flow *f, struct flow_record *r);

/* Whether a datagram of f came twice (a copy, copies.h), so that the capture holds f's
 * datagrams twice; quicflow_saw_copy says one did. */
bool quicflow_doubled(const struct flow *f);
void quicflow_saw_copy(struct flow *f);

/* Frees f's QUIC state (nothing for a flow of another transport). */
void quicflow_free(struct flow *f);

#endif
