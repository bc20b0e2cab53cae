/* chsink: the ClickHouse sink, an outbox (outbox.h) with the same local SQLite spool as
 * PostgreSQL's. */
#ifndef IWSCOPE_CHSINK_H
#define IWSCOPE_CHSINK_H

#include <stdbool.h>
#include <stddef.h>

#include "outbox.h"

struct chsink_opts {
	const char *uri;   /* clickhouse://... */
	const char *spool; /* the SQLite spool file */
	bool quiet;        /* no outage / recovery lines on stderr */
};

/* NULL with err set when the server can never be written (outbox_open). */
outbox *chsink_open(const struct chsink_opts *o, char *err, size_t errlen);

#endif
