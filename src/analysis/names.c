/* The server name a client asks for: an HTTP/1.x request's Host or a TLS ClientHello's SNI,
 * read from the client's first payload segments. Each segment that could begin a request is
 * parsed where it lies; a request cut by a segment end is copied into a buffer of its own
 * (bounded, one per flow, freed once it is parsed) and completed from the following segments
 * by their sequence numbers, so retransmissions and segments out of order land where they
 * belong, and a segment past a hole is held until the hole fills. A flow is looked at for
 * NAMES_HUNT_SEGS client segments at most; after that, or once its name is found, each of its
 * packets costs the engine one test of a flag. */
#include "names.h"

#include <stdlib.h>
#include <string.h>

#define RANGES 4 /* segments held past a hole, at most */

struct names_buf {
	uint32_t start;          /* sequence number of data[0] */
	uint32_t have;           /* bytes from data[0] without a hole */
	uint32_t nr;             /* ranges held past the hole */
	uint32_t from[RANGES], to[RANGES];
	uint8_t data[NAMES_HUNT_BYTES];
};

/* ---- parsers -------------------------------------------------------------------------------- */

/* Copies a name into out as stored: lower case, bytes outside printable ASCII as '?'. */
static enum names_parse keep(const uint8_t *s, size_t n, char out[NAMES_MAX])
{
	if (n == 0)
		return NAMES_NONE;
	if (n > NAMES_MAX - 1)
		n = NAMES_MAX - 1;
	for (size_t i = 0; i < n; i++) {
		uint8_t c = s[i];
		if (c >= 'A' && c <= 'Z')
			c = (uint8_t)(c - 'A' + 'a');
		else if (c < 0x21 || c > 0x7e)
			c = '?';
		out[i] = (char)c;
	}
	out[n] = '\0';
	return names_placeholder(out, n) ? NAMES_NONE : NAMES_FOUND;
}

bool names_placeholder(const char *s, size_t n)
{
	bool alnum = false;
	for (size_t i = 0; i < n && s[i]; i++) {
		uint8_t c = (uint8_t)s[i];
		if (c < 0x20 || c == 0x7f)
			return true;
		if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
			alnum = true;
	}
	return !alnum;
}

static bool method_char(uint8_t c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'; }

/* The host part of a Host value: an IPv6 literal with its brackets, else up to a ':port'. */
static enum names_parse host_part(const uint8_t *v, size_t n, char out[NAMES_MAX])
{
	size_t end = 0;
	if (n && v[0] == '[') {
		const uint8_t *close = memchr(v, ']', n);
		end = close ? (size_t)(close - v) + 1 : n;
	} else {
		while (end < n && v[end] != ':')
			end++;
	}
	return keep(v, end, out);
}

/* Whether the line [i, e) is a header field: a token, optional blanks, ':'. */
static bool header_line(const uint8_t *p, size_t i, size_t e)
{
	size_t t = i;
	while (i < e && p[i] > 0x20 && p[i] < 0x7f && p[i] != ':')
		i++;
	while (i < e && (p[i] == ' ' || p[i] == '\t'))
		i++;
	return i > t && i < e && p[i] == ':';
}

enum names_parse names_http_host(const uint8_t *p, size_t n, char out[NAMES_MAX])
{
	/* request line: METHOD SP target SP HTTP/1.x (CR)LF. Lenient as tshark is: the target may
	 * be missing ("OPTIONS HTTP/1.1"), the version end oddly ("HTTP/1.0.8") or be cut from the
	 * target ("GET /HTTP/1.1"), the line be the method alone; without " HTTP/1." every line up
	 * to the Host must be a header field, and one must be there before more is waited for */
	size_t i = 0;
	while (i < n && i < 24 && method_char(p[i]))
		i++;
	if (i == 0 || !(p[0] >= 'A' && p[0] <= 'Z'))
		return NAMES_NOT;
	if (i == n)
		return NAMES_MORE;
	if (p[i] != ' ' && p[i] != '\r' && p[i] != '\n')
		return NAMES_NOT;
	size_t sp = i;
	while (i < n && p[i] >= 0x20 && p[i] != 0x7f)
		i++;
	if (i == n)
		return NAMES_MORE;
	size_t le = i; /* the line's end, before its (CR)LF */
	if (p[i] == '\r' && ++i == n)
		return NAMES_MORE;
	if (p[i] != '\n')
		return NAMES_NOT;
	static const char ver[] = " HTTP/1.";
	const size_t vl = sizeof(ver) - 1;
	bool strict = false; /* the line has " HTTP/1." with 4 bytes at most after it */
	for (size_t v = le >= sp + vl ? le - vl + 1 : sp; v-- > sp && v + vl + 4 >= le;)
		if (memcmp(p + v, ver, vl) == 0) {
			strict = true;
			break;
		}
	bool fields = false; /* a header field seen */
	/* header lines, ended by (CR)LF; an empty line ends them */
	for (i++; i < n;) {
		const uint8_t *lf = memchr(p + i, '\n', n - i);
		size_t end = lf ? (size_t)(lf - p) : n;
		size_t e = end;
		if (lf && e > i && p[e - 1] == '\r')
			e--;
		if (lf && e == i)
			return NAMES_NONE;
		if (e - i >= 5 && (p[i] | 0x20) == 'h' && (p[i + 1] | 0x20) == 'o' &&
		    (p[i + 2] | 0x20) == 's' && (p[i + 3] | 0x20) == 't') {
			size_t c = i + 4;
			while (c < e && (p[c] == ' ' || p[c] == '\t'))
				c++;
			if (c < e && p[c] == ':') {
				if (!lf)
					return NAMES_MORE; /* the value may go on */
				c++;
				while (c < e && (p[c] == ' ' || p[c] == '\t'))
					c++;
				while (e > c && (p[e - 1] == ' ' || p[e - 1] == '\t'))
					e--;
				return host_part(p + c, e - c, out);
			}
		}
		if (!lf)
			return strict || fields ? NAMES_MORE : NAMES_NOT;
		if (!strict && !header_line(p, i, e))
			return NAMES_NOT;
		fields = true;
		i = end + 1;
	}
	return strict || fields ? NAMES_MORE : NAMES_NOT;
}

static uint32_t be16(const uint8_t *p) { return (uint32_t)p[0] << 8 | p[1]; }
static uint32_t be24(const uint8_t *p) { return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2]; }

/* The server_name in a ClientHello handshake message (its 4-byte header first), of which avail
 * bytes are here; whole is its full length. */
static enum names_parse hello_sni(const uint8_t *h, size_t avail, size_t whole, char out[NAMES_MAX])
{
	enum names_parse short_of = avail < whole ? NAMES_MORE : NAMES_NOT;
	if (avail > whole)
		avail = whole;
	size_t i = 4 + 2 + 32; /* header, client_version, random */
	if (i + 1 > avail)
		return short_of;
	i += 1 + h[i]; /* session id */
	if (i + 2 > avail)
		return short_of;
	i += 2 + be16(h + i); /* cipher suites */
	if (i + 1 > avail)
		return short_of;
	i += 1 + h[i]; /* compression methods */
	if (i == whole)
		return NAMES_NONE; /* no extensions */
	if (i + 2 > avail)
		return short_of;
	size_t ext_end = i + 2 + be16(h + i);
	if (ext_end > whole)
		return NAMES_NOT;
	for (i += 2; i < ext_end;) {
		if (i + 4 > avail)
			return short_of;
		uint32_t type = be16(h + i), len = be16(h + i + 2);
		i += 4;
		if (i + len > ext_end)
			return NAMES_NOT;
		if (type == 0) { /* server_name: list length, then (type, length, name) entries */
			if (i + len > avail)
				return short_of;
			size_t j = i + 2, lend = i + len;
			if (len < 2 || i + 2 + be16(h + i) > lend)
				return NAMES_NOT;
			lend = i + 2 + be16(h + i);
			while (j + 3 <= lend) {
				uint32_t nt = h[j], nl = be16(h + j + 1);
				if (j + 3 + nl > lend)
					return NAMES_NOT;
				if (nt == 0)
					return keep(h + j + 3, nl, out);
				j += 3 + nl;
			}
			return NAMES_NONE;
		}
		i += len;
	}
	return NAMES_NONE;
}

enum names_parse names_tls_sni(const uint8_t *p, size_t n, char out[NAMES_MAX])
{
	/* record: type 22 (handshake), version 3.x, length; its first message a ClientHello (1) */
	if (n < 1 || p[0] != 0x16)
		return NAMES_NOT;
	if (n < 3)
		return n == 2 && p[1] != 3 ? NAMES_NOT : NAMES_MORE;
	if (p[1] != 3 || p[2] > 4)
		return NAMES_NOT;
	if (n < 6)
		return NAMES_MORE;
	uint32_t rlen = be16(p + 3);
	if (p[5] != 1 || rlen == 0 || rlen > 16384 + 2048)
		return NAMES_NOT;
	if (n < 9)
		return NAMES_MORE;
	size_t whole = 4 + (size_t)be24(p + 6);
	if (whole <= rlen) /* the usual case: the whole hello in its first record */
		return hello_sni(p + 5, n - 5 < rlen ? n - 5 : rlen, whole, out);
	/* the hello spans records: their bodies put end to end */
	uint8_t joined[NAMES_HUNT_BYTES];
	size_t got = 0, off = 0;
	while (got < whole && got < sizeof(joined) && off + 5 <= n) {
		if (p[off] != 0x16 || p[off + 1] != 3)
			return NAMES_NOT;
		size_t len = be16(p + off + 3), take = len;
		if (take > n - off - 5)
			take = n - off - 5;
		if (take > sizeof(joined) - got)
			take = sizeof(joined) - got;
		memcpy(joined + got, p + off + 5, take);
		got += take;
		if (take < len)
			break;
		off += 5 + len;
	}
	return hello_sni(joined, got, whole, out);
}

/* ---- one flow's search ----------------------------------------------------------------------- */

static enum names_parse parse(const uint8_t *p, size_t n, char out[NAMES_MAX])
{
	if (n == 0)
		return NAMES_NOT;
	return p[0] == 0x16 ? names_tls_sni(p, n, out) : names_http_host(p, n, out);
}

static void drop_buf(struct name_hunt *h, struct names_pool *pool)
{
	if (!h->u.buf)
		return;
	free(h->u.buf);
	h->u.buf = NULL;
	pool->live--;
}

static void found(struct name_hunt *h, struct names_pool *pool, const char *name)
{
	drop_buf(h, pool);
	h->u.name = strdup(name); /* without memory the flow keeps nDPI's name */
	h->done = true;
}

static bool place(struct names_buf *b, const uint8_t *payload, uint32_t cap, uint32_t seq, bool *outside);

/* Starts holding the client's bytes from sequence number start, with a segment's in place. */
static void hold(struct name_hunt *h, struct names_pool *pool, uint32_t start, const uint8_t *payload,
                 uint32_t cap, uint32_t seq)
{
	if (pool->live >= NAMES_HUNT_BUFS || !(h->u.buf = malloc(sizeof(*h->u.buf)))) {
		pool->refused++;
		return;
	}
	if (++pool->live > pool->peak)
		pool->peak = pool->live;
	struct names_buf *b = h->u.buf;
	b->start = start;
	b->have = b->nr = 0;
	bool outside;
	place(b, payload, cap, seq, &outside);
}

/* Puts a segment where it belongs in b. Whether the bytes without a hole grew; *outside: the
 * segment lies wholly past the buffer's end. */
static bool place(struct names_buf *b, const uint8_t *payload, uint32_t cap, uint32_t seq, bool *outside)
{
	int32_t off = (int32_t)(seq - b->start);
	*outside = false;
	if (off < 0) { /* begins before the request: a retransmission, maybe with new bytes */
		uint32_t back = 0u - (uint32_t)off; /* no signed negation: off may be INT32_MIN */
		if (back >= cap)
			return false;
		payload += back;
		cap -= back;
		off = 0;
	}
	if ((uint32_t)off >= sizeof(b->data)) {
		*outside = true;
		return false;
	}
	uint32_t end = (uint32_t)off + cap;
	if (end > sizeof(b->data))
		end = sizeof(b->data);
	memcpy(b->data + off, payload, end - (uint32_t)off);
	if ((uint32_t)off > b->have) { /* past a hole: kept for when it fills */
		if (b->nr < RANGES) {
			b->from[b->nr] = (uint32_t)off;
			b->to[b->nr++] = end;
		}
		return false;
	}
	if (end <= b->have)
		return false;
	b->have = end;
	for (bool more = true; more;) { /* ranges the new bytes reach */
		more = false;
		for (uint32_t r = 0; r < b->nr; r++)
			if (b->from[r] <= b->have) {
				if (b->to[r] > b->have)
					b->have = b->to[r];
				b->from[r] = b->from[--b->nr];
				b->to[r] = b->to[b->nr];
				more = true;
				break;
			}
	}
	return true;
}

void names_start(struct name_hunt *h, uint32_t seq)
{
	if (!h->known && !h->done) {
		h->next = seq;
		h->known = true;
	}
}

void names_segment(struct name_hunt *h, struct names_pool *pool, const uint8_t *payload,
                   uint32_t cap, uint32_t seq)
{
	if (h->done || cap == 0)
		return;
	h->segs++;
	char out[NAMES_MAX];
	int32_t ahead = h->known ? (int32_t)(seq - h->next) : 0; /* > 0: bytes before it not seen */
	bool fresh = !h->u.buf;
	if (h->u.buf) {
		bool outside;
		struct names_buf *b = h->u.buf;
		if (place(b, payload, cap, seq, &outside)) {
			enum names_parse r = parse(b->data, b->have, out);
			if (r == NAMES_FOUND) {
				found(h, pool, out);
				return;
			}
			if (r != NAMES_MORE || b->have == sizeof(b->data))
				drop_buf(h, pool); /* no name in it, or too long to hold */
		} else if (outside) {
			drop_buf(h, pool); /* the client went on past it: this may begin another */
			fresh = true;
		}
	}
	if (fresh) {
		enum names_parse r = parse(payload, cap, out);
		if (r == NAMES_FOUND) {
			found(h, pool, out);
			return;
		}
		if (r == NAMES_MORE)
			hold(h, pool, seq, payload, cap, seq);
		else if (ahead > 0 && ahead < NAMES_HUNT_BYTES)
			/* out of order: what fills the hole may begin a request this segment goes on */
			hold(h, pool, h->next, payload, cap, seq);
	}
	if (!h->known || (ahead <= 0 && (int32_t)(seq + cap - h->next) > 0)) {
		h->next = seq + cap;
		h->known = true;
	}
	if (h->u.buf && (int32_t)(h->u.buf->start + h->u.buf->have - h->next) > 0)
		h->next = h->u.buf->start + h->u.buf->have; /* a hole filled: what was held past it */
	if (h->segs >= NAMES_HUNT_SEGS) {
		drop_buf(h, pool);
		h->done = true;
	}
}

void names_free(struct name_hunt *h, struct names_pool *pool)
{
	if (h->done)
		free(h->u.name);
	else
		drop_buf(h, pool);
	memset(h, 0, sizeof(*h));
}
