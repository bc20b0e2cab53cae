/* pgsink: the PostgreSQL sink, with its local SQLite spool. */
#ifndef IWSCOPE_PGSINK_H
#define IWSCOPE_PGSINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sink.h"

typedef struct pgsink pgsink;

struct pgsink_opts {
	const char *uri;   /* postgresql://... */
	const char *spool; /* the SQLite spool file */
	bool quiet;        /* no outage / recovery lines on stderr */
};

struct pgsink_stats {
	uint64_t delivered; /* flow rows the server committed */
	uint64_t spooled;   /* flow rows that waited in the spool for the server: drained + remaining */
	uint64_t drained;   /* of them, delivered once it was back */
	uint64_t remaining; /* still in the spool at the end */
	uint64_t backlog;   /* found in the spool at the start, left by an earlier run */
	int64_t replaced_runs, replaced_flows; /* --replace: the server's earlier runs of the source */
};

/* Opens the spool and connects. A server that cannot be reached is not an error (rows spool
 * until it is back); an unknown host, a refused login, a bad URI or a database that is not
 * iwscope's is: NULL with one line in err. */
pgsink *pgsink_open(const struct pgsink_opts *o, char *err, size_t errlen);

struct sink pgsink_sink(pgsink *p);

void pgsink_stats(const pgsink *p, struct pgsink_stats *st);

void pgsink_close(pgsink *p);

#endif
