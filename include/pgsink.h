/* pgsink: the PostgreSQL sink, an outbox (outbox.h) with its local SQLite spool. */
#ifndef IWSCOPE_PGSINK_H
#define IWSCOPE_PGSINK_H

#include <stdbool.h>
#include <stddef.h>

#include "outbox.h"

struct pgsink_opts {
	const char *uri;   /* postgresql://... */
	const char *spool; /* the SQLite spool file */
	bool quiet;        /* no outage / recovery lines on stderr */
};

/* NULL with err set when the server can never be written (outbox_open). */
outbox *pgsink_open(const struct pgsink_opts *o, char *err, size_t errlen);

#endif
