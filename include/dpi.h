/* dpi: application protocol and server name per flow through nDPI. The only nDPI user. */
#ifndef IWSCOPE_DPI_H
#define IWSCOPE_DPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flow.h"
#include "record.h"

/* DPI_NONE: still undecided; DPI_PAYLOAD: read in the payload (nDPI's confidence DPI or its
 * cache); DPI_OFFPORT: read in the payload, but nDPI flags the protocol as off its usual port (MQTT's
 * pattern in an LDAP flow on 389): weak; DPI_GUESS: from the ports or addresses only (nDPI's
 * confidence "match by port" or "by IP", or a guess when it gave up); DPI_UNDETECTED: nDPI gave
 * up without an answer. */
enum dpi_method { DPI_NONE = 0, DPI_PAYLOAD, DPI_GUESS, DPI_UNDETECTED, DPI_OFFPORT };

typedef struct dpi_ctx dpi_ctx;

/* Opens nDPI with every protocol enabled; NULL on failure. max_pkts is how many packets of a
 * flow nDPI sees at most before the flow is guessed from ports. */
dpi_ctx *dpi_open(unsigned max_pkts);
void dpi_close(dpi_ctx *d);

/* dpi_open in two steps, so that nDPI's start-up (15 ms) can run on the thread that will use
 * the context while another gets on with its work: dpi_new allocates (NULL when out of
 * memory), dpi_start initialises nDPI (false on failure; then the context may only be
 * closed). dpi_ready says whether it started. */
dpi_ctx *dpi_new(unsigned max_pkts);
bool dpi_start(dpi_ctx *d);
bool dpi_ready(const dpi_ctx *d);

/* Whether p is one nDPI would inspect: a payload packet with its IP header captured. */
bool dpi_wants(const struct pkt *p);

/* Feeds one packet of a flow (its IP header at ip, ip_cap bytes captured) to st, unless st is
 * decided. Frees the flow's nDPI state once detection is final. */
void dpi_packet(dpi_ctx *d, struct dpi_state *st, const uint8_t *ip, uint32_t ip_cap,
                uint64_t ts_us);

/* Whether st's protocol is decided (nDPI is done with the flow). */
bool dpi_decided(const struct dpi_state *st);

/* Decides st if it is not (nDPI guesses), frees nDPI's state, and fills rec's application
 * fields (rec may be NULL); server_name only when rec has none yet (the name the client asked
 * for, names.c, comes first). st->server_name stays until dpi_state_free. */
void dpi_finish(dpi_ctx *d, struct dpi_state *st, struct flow_record *rec);

/* Frees what st holds (after dpi_finish). */
void dpi_state_free(struct dpi_state *st);

/* Payload packets nDPI inspects per flow at most. */
unsigned dpi_max_packets(const dpi_ctx *d);

/* nDPI flow states alive now, the most alive at once, and flows inspected in all. */
void dpi_stats(const dpi_ctx *d, uint64_t *live, uint64_t *peak, uint64_t *inspected);

/* nDPI's version string. */
const char *dpi_version(void);

/* Bytes nDPI allocates per flow while it inspects it. */
size_t dpi_flow_bytes(void);

#endif
