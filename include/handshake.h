/* handshake: SYN / SYN-ACK / ACK, what each SYN advertised, RTT legs at the vantage point. */
#ifndef IWSCOPE_HANDSHAKE_H
#define IWSCOPE_HANDSHAKE_H

#include <stdbool.h>

#include "flow.h"

/* Which end of a first packet on a new 5-tuple is the client: the SYN's sender, the SYN-ACK's
 * receiver, or for a flow first seen mid-stream the end with the ephemeral-looking port. */
bool handshake_src_is_client(const struct pkt *p);

/* True when p, sent in direction dir (0 = client to server) on f, opens a new connection on
 * the same 5-tuple (port reuse: a SYN with a new ISN), so f must end first. */
bool handshake_is_reuse(const struct flow *f, const struct pkt *p, int dir);

/* Updates f's handshake state with p (a SYN's option layout kept in t, f's table); call before
 * the per-side counters are updated. */
void handshake_update(flow_table *t, struct flow *f, const struct pkt *p, int dir);

/* The handshake outcome of f so far. */
enum handshake_kind handshake_kind(const struct flow *f);

#endif
