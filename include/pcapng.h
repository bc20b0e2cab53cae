/* pcapng: a pcapng file read block by block from fileread's buffer, each packet with the link
 * type of the interface it was captured on. libpcap refuses a file whose interfaces differ in
 * link type or snapshot length (mergecap's output, a multi-interface dumpcap); this reader takes
 * every such file whole, and gives exactly libpcap's records on every file libpcap reads
 * (tests/fuzz/fuzz_pcapng.c checks that). */
#ifndef IWSCOPE_PCAPNG_H
#define IWSCOPE_PCAPNG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fileread.h"

struct capture_rec; /* one frame (capture.h): what pcapng_next fills */

typedef struct pcapng pcapng;

/* Whether the file starts with a pcapng Section Header Block (its type and byte-order magic,
 * in either byte order). */
bool pcapng_probe(fileread *m);

/* Reads the first section header and the blocks up to the first interface description, as
 * libpcap does when it opens a file. NULL with the reason in err (m stays the caller's). */
pcapng *pcapng_open(fileread *m, char *err, size_t errlen);

/* The first interface's link type (DLT_*), as libpcap's pcap_datalink would say. */
int pcapng_first_dlt(const pcapng *ng);

/* The link types (DLT_*) of the interfaces described before the first packet, the first
 * interface's included, each once: up to max of them in dlts, their number returned. Right
 * after pcapng_open; a look ahead that changes nothing (a problem it meets is left for
 * pcapng_next to report). */
unsigned pcapng_link_types(pcapng *ng, int *dlts, unsigned max);

/* The next packet: 1 with *r filled (r->data valid until the next call; r->dlt its interface's
 * link type), 0 at the end of the file, -1 on a malformed or cut block (pcapng_error says what
 * and where). */
int pcapng_next(pcapng *ng, struct capture_rec *r);

const char *pcapng_error(const pcapng *ng);
void pcapng_close(pcapng *ng);

#endif
