/* names: the server name a client asks for, read from the first bytes it sends (an HTTP/1.x
 * request's Host, a TLS ClientHello's SNI), also when the request spans several segments or
 * follows a proxy or STARTTLS exchange. nDPI sees one packet at a time; this reassembles. */
#ifndef IWSCOPE_NAMES_H
#define IWSCOPE_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef NAMES_HUNT_SEGS
#define NAMES_HUNT_SEGS 8      /* client payload segments looked at per flow, at most */
#endif
#ifndef NAMES_HUNT_BYTES
#define NAMES_HUNT_BYTES 4096  /* bytes of one request held while it is incomplete */
#endif
#ifndef NAMES_HUNT_BUFS
#define NAMES_HUNT_BUFS 1024   /* requests held at once per reading thread (4 MiB at most) */
#endif
#define NAMES_MAX 128          /* a name's bytes with its NUL (record.h SERVER_NAME_MAX) */

struct names_buf; /* one incomplete request, owned by names.c */

/* One flow's search. All zero: not started. While it goes on it may hold a request; once done,
 * the name found, if any (malloc'd): names_name reads it. */
struct name_hunt {
	union {
		struct names_buf *buf; /* !done: the request being reassembled, or NULL */
		char *name;            /* done: the host part, lower case, or NULL */
	} u;
	uint32_t next;             /* sequence number of the first client byte not seen in order */
	uint8_t segs;              /* client payload segments looked at */
	bool known;                /* next is */
	bool done;                 /* found, or NAMES_HUNT_SEGS looked at: nothing more to do */
};

/* The buffers of one thread's flows: how many are held now, at most, and refused. */
struct names_pool {
	uint32_t live, peak;
	uint64_t refused;
};

/* The client's first byte has sequence number seq (its SYN's plus one). Call before its first
 * payload segment, when the SYN was seen: a first segment that came out of order is then held. */
void names_start(struct name_hunt *h, uint32_t seq);

/* Looks at one client payload segment: cap captured bytes at payload, the first at sequence
 * number seq (the SYN's own number comes before). Call only while !h->done. */
void names_segment(struct name_hunt *h, struct names_pool *pool, const uint8_t *payload,
                   uint32_t cap, uint32_t seq);

/* The name the client asked for, or NULL (none found, or not yet). */
static inline const char *names_name(const struct name_hunt *h) { return h->done ? h->u.name : NULL; }

/* Frees what h holds and zeroes it. */
void names_free(struct name_hunt *h, struct names_pool *pool);

/* Whether the n bytes at s are a placeholder rather than a name: empty, without a single letter
 * or digit (" ", "---------", "?"), or holding a control character. Never stored as a name. */
bool names_placeholder(const char *s, size_t n);

/* The parsers, for the tests. Each reads n bytes from p, the start of a message: */
enum names_parse {
	NAMES_NOT = 0, /* not that kind of message */
	NAMES_MORE,    /* it is, and its name may be in bytes not there yet */
	NAMES_NONE,    /* the whole message is there and it names no server */
	NAMES_FOUND    /* out holds the host part (lower case, NUL-terminated) */
};
/* An HTTP/1.x request's Host header ("[v6]:port" -> "[v6]", "host:port" -> "host"). */
enum names_parse names_http_host(const uint8_t *p, size_t n, char out[NAMES_MAX]);
/* A TLS ClientHello's server_name (host_name type), over several records if need be. */
enum names_parse names_tls_sni(const uint8_t *p, size_t n, char out[NAMES_MAX]);

#endif
