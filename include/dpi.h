/* dpi: application protocol and server name per flow through nDPI. The only nDPI user. */
#ifndef IWSCOPE_DPI_H
#define IWSCOPE_DPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flow.h"
#include "record.h"

/* DPI_NONE: still undecided; DPI_UNDETECTED: nDPI gave up without an answer. */
enum dpi_method { DPI_NONE = 0, DPI_PAYLOAD, DPI_GUESS, DPI_UNDETECTED };

typedef struct dpi_ctx dpi_ctx;

/* Opens nDPI with every protocol enabled; NULL with a message on failure. max_pkts is how many
 * packets of a flow nDPI sees at most before the flow is guessed from ports. */
dpi_ctx *dpi_open(unsigned max_pkts);
void dpi_close(dpi_ctx *d);

/* Feeds one packet of f (raw IP header at ip, ip_len captured bytes). Frees the flow's nDPI
 * state once detection is final. */
void dpi_packet(dpi_ctx *d, struct flow *f, const struct pkt *p, int dir);

/* Fills rec's application fields for f and frees any nDPI state left. */
void dpi_finish(dpi_ctx *d, struct flow *f, struct flow_record *rec);

/* nDPI flow states alive now, the most alive at once, and flows inspected in all. */
void dpi_stats(const dpi_ctx *d, uint64_t *live, uint64_t *peak, uint64_t *inspected);

/* nDPI's version string. */
const char *dpi_version(void);

/* Bytes nDPI allocates per flow while it inspects it. */
size_t dpi_flow_bytes(void);

#endif
