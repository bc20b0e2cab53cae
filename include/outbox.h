/* outbox: a sink that writes a remote server through a local SQLite spool (an outbox). Rows go
 * into the spool first, which drains to the server in batches every tick; while the server
 * cannot take a batch the spool keeps it and reconnects back off (1, 2, 4 ... PG_BACKOFF_MAX_S
 * s); a batch leaves the spool only once the server took it, and the server makes a batch sent
 * twice land once. One per server kind: pgsink.c (PostgreSQL), chsink.c (ClickHouse) say how
 * to connect, send a batch and find a capture's earlier runs. */
#ifndef IWSCOPE_OUTBOX_H
#define IWSCOPE_OUTBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dbrows.h"
#include "sink.h"

typedef struct outbox outbox;

struct outbox_stats {
	uint64_t delivered; /* flow rows the server committed */
	uint64_t spooled;   /* flow rows that waited in the spool for the server: drained + remaining */
	uint64_t drained;   /* of them, delivered once it was back */
	uint64_t remaining; /* still in the spool at the end */
	uint64_t backlog;   /* found in the spool at the start, left by an earlier run */
	int64_t replaced_runs, replaced_flows; /* --replace: the server's earlier runs of the source */
};

/* What a server kind brings. */
struct outbox_server {
	const char *name;  /* the sink's name */
	/* a connection, or NULL with err set and *fatal when no retry can help (a bad URI or
	 * login: the run refuses it) */
	void *(*open)(const char *uri, bool *fatal, char *err, size_t errlen);
	void (*close)(void *db);
	db_batch_fn send;  /* one batch of the spool's rows */
	const char *(*error)(void *db);
	/* the server's earlier runs of run's capture: 0 to go on, -1 refused (outbox_fail said
	 * why); called only while connected */
	int (*earlier_runs)(outbox *ob, void *db, const struct run_info *run);
	bool named_errors;    /* a failed batch's error is prefixed with the server's name */
	bool back_on_batch;   /* "is back" once a batch went through, not on connecting (a
	                       * cluster node answers while a shard is down) */
};

/* Connects to uri (shown: uri without its password) and opens the spool file; a server that
 * is unreachable but may come back starts an outage (rows spool). NULL with err set when the
 * server can never be written or the spool cannot be opened (no spool file left then). */
outbox *outbox_open(const struct outbox_server *srv, const char *uri, const char *shown,
                    const char *spool, bool quiet, char *err, size_t errlen);

struct sink outbox_sink(outbox *ob);
void outbox_stats(const outbox *ob, struct outbox_stats *st);
void outbox_close(outbox *ob);

/* For a server kind's earlier_runs: the server as shown, the reason the run is refused, and
 * what --replace removed. */
const char *outbox_shown(const outbox *ob);
void outbox_fail(outbox *ob, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void outbox_replaced(outbox *ob, int64_t runs, int64_t flows);

/* For a server kind's struct sink_kind (sink.h), self an outbox: what --replace removed, and
 * the lines after the run's summary (rows sent, what waited in the spool, what still does). */
void outbox_kind_replaced(void *self, int64_t *runs, int64_t *flows);
void outbox_kind_summary(void *self, const struct sink_conf *c);

#endif
