/* chsink: the ClickHouse sink, with the same local SQLite spool as PostgreSQL's (pgsink.h). */
#ifndef IWSCOPE_CHSINK_H
#define IWSCOPE_CHSINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pgsink.h" /* struct pgsink_stats: the same counters */
#include "sink.h"

typedef struct chsink chsink;

struct chsink_opts {
	const char *uri;   /* clickhouse://... */
	const char *spool; /* the SQLite spool file */
	bool quiet;        /* no outage / recovery lines on stderr */
};

/* Opens the spool and connects. An unknown host, nothing listening at the start, a refused
 * login, a missing database or one that is not iwscope's: NULL with one line in err, and no
 * spool made. A server lost later is not an error: rows spool until it is back. */
chsink *chsink_open(const struct chsink_opts *o, char *err, size_t errlen);

struct sink chsink_sink(chsink *c);

void chsink_stats(const chsink *c, struct pgsink_stats *st);

void chsink_close(chsink *c);

#endif
