/* Unit tests of names.c: the Host and SNI parsers on whole, cut and malformed requests, and one
 * flow's search over segments in order, out of order, retransmitted and past its bounds. */
#define _GNU_SOURCE /* memmem */
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "unit.h"

static enum names_parse host(const char *req, char out[NAMES_MAX])
{
	return names_http_host((const uint8_t *)req, strlen(req), out);
}

/* The Host req names, in out, or NULL when it names none (for CHECK_EQ_STR). */
static const char *host_found(const char *req, char out[NAMES_MAX])
{
	return host(req, out) == NAMES_FOUND ? out : NULL;
}

static void test_http(void)
{
	char out[NAMES_MAX];
	CHECK_EQ_STR(host_found("GET / HTTP/1.1\r\nHost: Example.COM\r\n\r\n", out), "example.com");
	CHECK_EQ_STR(host_found("GET / HTTP/1.1\r\nUser-Agent: x\r\nhost:www.a.test:8080\r\n\r\n", out), "www.a.test");
	CHECK_EQ_STR(host_found("GET / HTTP/1.1\r\nHost: [2001:db8::1]:8080\r\n\r\n", out), "[2001:db8::1]");
	CHECK_EQ_STR(host_found("GET / HTTP/1.1\r\nHost: [2001:DB8::1]\r\n\r\n", out), "[2001:db8::1]");
	CHECK_EQ_STR(host_found("GET / HTTP/1.1\r\nHost: 192.0.2.1:80 \r\n\r\n", out), "192.0.2.1");
	/* as tshark reads them: bare LF, no target, target and version run together, odd version,
	 * any method */
	CHECK_EQ_STR(host_found("GET /bar/ HTTP/1.1\nHost: testmyids.org\nGET /foo/ HTTP/1.1\n", out), "testmyids.org");
	CHECK_EQ_STR(host_found("OPTIONS HTTP/1.1\nHost: www.google.com\n\n", out), "www.google.com");
	CHECK_EQ_STR(host_found("OPTIONS\nHost: www.google.com\n\n", out), "www.google.com");
	CHECK_EQ_STR(host_found("GET /HTTP/1.1\nHost: www.google.com\n\n", out), "www.google.com");
	CHECK_EQ_STR(host_found("GET /w?x=1 HTTP/1.0.8\r\nAccept: */*\r\nHost: 38.102.136.125\r\n\r\n", out), "38.102.136.125");
	CHECK_EQ_STR(host_found("CCM_POST / HTTP/1.1\r\nHost: h\r\n\r\n", out), "h");
	/* cut: more may come */
	CHECK_EQ_INT(host("GE", out), NAMES_MORE);
	CHECK_EQ_INT(host("GET /very/long/path", out), NAMES_MORE);
	CHECK_EQ_INT(host("GET / HTTP/1.1\r", out), NAMES_MORE);
	CHECK_EQ_INT(host("GET / HTTP/1.1\r\nAccept: */*\r\n", out), NAMES_MORE);
	CHECK_EQ_INT(host("GET / HTTP/1.1\r\nHo", out), NAMES_MORE);
	CHECK_EQ_INT(host("GET / HTTP/1.1\r\nHost: www.exa", out), NAMES_MORE);
	CHECK_EQ_INT(host("OPTIONS\nAccept: */*\n", out), NAMES_MORE);
	/* whole, without a Host */
	CHECK_EQ_INT(host("GET / HTTP/1.0\r\n\r\n", out), NAMES_NONE);
	CHECK_EQ_INT(host("GET / HTTP/1.1\r\nHost:\r\n\r\n", out), NAMES_NONE);
	/* a placeholder is no name: all dashes, only punctuation or bytes outside ASCII */
	CHECK_EQ_INT(host("GET / HTTP/1.1\r\nHost: ---------\r\n\r\n", out), NAMES_NONE);
	CHECK_EQ_INT(host("GET / HTTP/1.1\r\nHost: \x01\x02:80\r\n\r\n", out), NAMES_NONE);
	CHECK(names_placeholder("", 0));
	CHECK(names_placeholder(" ", 1));
	CHECK(names_placeholder("---------", 9));
	CHECK(names_placeholder("?.?", 3));
	CHECK(names_placeholder("mail\x01host", 9));
	CHECK(!names_placeholder("_4.3.2.1_", 9));
	CHECK(!names_placeholder("SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u10", 38));
	CHECK(!names_placeholder("[2001:db8::1]", 13));
	/* not HTTP */
	CHECK_EQ_INT(host("", out), NAMES_NOT);
	CHECK_EQ_INT(host("SSH-2.0-OpenSSH_9.2\r\n", out), NAMES_NOT);
	CHECK_EQ_INT(host("EHLO client.example\r\n", out), NAMES_NOT);
	CHECK_EQ_INT(host("USER anonymous\r\n", out), NAMES_NOT);
	CHECK_EQ_INT(host("USER anonymous\r\nPASS x\r\n", out), NAMES_NOT);
	CHECK_EQ_INT(host("get / HTTP/1.1\r\nHost: a\r\n\r\n", out), NAMES_NOT);
	CHECK_EQ_INT(host("\x05\x01\x00", out), NAMES_NOT);
	/* a long name is cut, bytes outside printable ASCII become '?' */
	char req[400];
	char name[300];
	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", name);
	CHECK_EQ_INT(host(req, out), NAMES_FOUND);
	CHECK_EQ_INT(strlen(out), NAMES_MAX - 1);
	CHECK_EQ_STR(host_found("GET / HTTP/1.1\r\nHost: a\x01\xe9" "b\r\n\r\n", out), "a??b");
}

/* A ClientHello (record header first) naming sni, or without a server_name when sni is NULL;
 * pad bytes of another extension before it. Its length. */
static size_t hello(uint8_t *b, const char *sni, size_t pad)
{
	size_t i = 0, n = sni ? strlen(sni) : 0;
	b[i++] = 0x16, b[i++] = 3, b[i++] = 1, i += 2; /* record, length later */
	b[i++] = 1, i += 3;                            /* ClientHello, length later */
	b[i++] = 3, b[i++] = 3;
	memset(b + i, 0x42, 32), i += 32;              /* random */
	b[i++] = 32, memset(b + i, 7, 32), i += 32;    /* session id */
	b[i++] = 0, b[i++] = 4, b[i++] = 0x13, b[i++] = 1, b[i++] = 0xc0, b[i++] = 0x2f;
	b[i++] = 1, b[i++] = 0;                        /* compression: null */
	size_t ext = i;
	i += 2;
	b[i++] = 0, b[i++] = 21, b[i++] = (uint8_t)(pad >> 8), b[i++] = (uint8_t)pad; /* padding */
	memset(b + i, 0, pad), i += pad;
	if (sni) {
		b[i++] = 0, b[i++] = 0, b[i++] = (uint8_t)((n + 5) >> 8), b[i++] = (uint8_t)(n + 5);
		b[i++] = (uint8_t)((n + 3) >> 8), b[i++] = (uint8_t)(n + 3);
		b[i++] = 0, b[i++] = (uint8_t)(n >> 8), b[i++] = (uint8_t)n;
		memcpy(b + i, sni, n), i += n;
	}
	b[i++] = 0, b[i++] = 43, b[i++] = 0, b[i++] = 3, b[i++] = 2, b[i++] = 3, b[i++] = 4;
	size_t el = i - ext - 2, hl = i - 9, rl = i - 5;
	b[ext] = (uint8_t)(el >> 8), b[ext + 1] = (uint8_t)el;
	b[6] = 0, b[7] = (uint8_t)(hl >> 8), b[8] = (uint8_t)hl;
	b[3] = (uint8_t)(rl >> 8), b[4] = (uint8_t)rl;
	return i;
}

static void test_tls(void)
{
	uint8_t b[4096], two[4200];
	char out[NAMES_MAX];
	size_t n = hello(b, "Tls.Example", 100);
	CHECK_EQ_INT(names_tls_sni(b, n, out), NAMES_FOUND);
	CHECK_EQ_STR(out, "tls.example");
	/* every cut of it waits for more until the name is there whole, then names it */
	const uint8_t *at = memmem(b, n, "Tls.Example", 11);
	size_t sni_end = (size_t)(at - b) + 11;
	bool cut_ok = at != NULL;
	for (size_t k = 0; k < n; k++) {
		enum names_parse r = names_tls_sni(b, k, out);
		if (k == 0 ? r != NAMES_NOT : k < sni_end ? r != NAMES_MORE : r != NAMES_FOUND || strcmp(out, "tls.example"))
			cut_ok = false;
	}
	CHECK(cut_ok);
	/* the same hello in two records: their bodies are joined */
	size_t first = 60;
	memcpy(two, b, 5 + first);
	two[3] = 0, two[4] = (uint8_t)first;
	size_t rest = n - 5 - first;
	two[5 + first] = 0x16, two[6 + first] = 3, two[7 + first] = 1;
	two[8 + first] = (uint8_t)(rest >> 8), two[9 + first] = (uint8_t)rest;
	memcpy(two + 10 + first, b + 5 + first, rest);
	CHECK_EQ_INT(names_tls_sni(two, n + 5, out), NAMES_FOUND);
	CHECK_EQ_STR(out, "tls.example");
	CHECK_EQ_INT(names_tls_sni(two, 150, out), NAMES_MORE); /* cut before the name */
	/* no server_name; a name after a large extension */
	n = hello(b, NULL, 10);
	CHECK_EQ_INT(names_tls_sni(b, n, out), NAMES_NONE);
	n = hello(b, "late.example", 1800);
	CHECK_EQ_INT(names_tls_sni(b, n, out), NAMES_FOUND);
	CHECK_EQ_STR(out, "late.example");
	CHECK_EQ_INT(names_tls_sni(b, 1500, out), NAMES_MORE);
	/* not a ClientHello, or lengths that cannot be */
	n = hello(b, "x.example", 0);
	b[5] = 2; /* ServerHello */
	CHECK_EQ_INT(names_tls_sni(b, n, out), NAMES_NOT);
	b[5] = 1;
	b[1] = 2;
	CHECK_EQ_INT(names_tls_sni(b, n, out), NAMES_NOT);
	b[1] = 3;
	CHECK_EQ_INT(names_tls_sni((const uint8_t *)"\x17\x03\x03\x00\x10", 5, out), NAMES_NOT);
	uint8_t bad[4096];
	memcpy(bad, b, n);
	bad[9 + 2 + 32] = 200; /* session id longer than the hello */
	CHECK_EQ_INT(names_tls_sni(bad, n, out), NAMES_NOT);
	bool flips_ok = true; /* any one byte changed: no crash, and a name only if it is printable */
	for (size_t k = 0; k < n; k++)
		for (int v = 0; v < 256; v += 37) {
			memcpy(bad, b, n);
			bad[k] = (uint8_t)v;
			if (names_tls_sni(bad, n, out) == NAMES_FOUND && strlen(out) >= NAMES_MAX)
				flips_ok = false;
		}
	CHECK(flips_ok);
}

/* Feeds n bytes of msg from offset at to h as one segment (sequence numbers from isn). */
static void seg(struct name_hunt *h, struct names_pool *pool, const uint8_t *msg, size_t at, size_t n,
                uint32_t isn)
{
	names_segment(h, pool, msg + at, (uint32_t)n, isn + (uint32_t)at);
}

static void test_hunt(void)
{
	struct names_pool pool = { 0 };
	struct name_hunt h = { 0 };
	uint8_t b[4096];
	size_t n = hello(b, "split.example", 300);
	uint32_t isn = 0xfffffff0u; /* the sequence numbers wrap inside the request */

	/* in order: held after the first half, found with the second, the buffer freed */
	seg(&h, &pool, b, 0, 100, isn);
	CHECK(!h.done);
	CHECK_EQ_INT(pool.live, 1);
	CHECK_EQ_STR(names_name(&h), NULL);
	seg(&h, &pool, b, 100, n - 100, isn);
	CHECK(h.done);
	CHECK_EQ_INT(pool.live, 0);
	CHECK_EQ_STR(names_name(&h), "split.example");
	names_free(&h, &pool);

	/* three parts, the last first, the first retransmitted with a few more bytes */
	seg(&h, &pool, b, 0, 80, isn);
	seg(&h, &pool, b, 200, n - 200, isn);
	CHECK(!h.done);
	CHECK_EQ_INT(pool.live, 1);
	seg(&h, &pool, b, 0, 120, isn);
	CHECK(!h.done);
	seg(&h, &pool, b, 120, 80, isn);
	CHECK(h.done);
	CHECK_EQ_INT(pool.live, 0);
	CHECK_EQ_STR(names_name(&h), "split.example");
	names_free(&h, &pool);

	/* the second half before the first (the SYN seen): held past the hole until it fills */
	names_start(&h, isn);
	seg(&h, &pool, b, 100, n - 100, isn);
	CHECK(!h.done);
	CHECK_EQ_INT(pool.live, 1);
	seg(&h, &pool, b, 0, 100, isn);
	CHECK(h.done);
	CHECK_EQ_INT(pool.live, 0);
	CHECK_EQ_STR(names_name(&h), "split.example");
	names_free(&h, &pool);
	/* ... and without the SYN the first segment seen is where the stream begins for it */
	seg(&h, &pool, b, 100, n - 100, isn);
	seg(&h, &pool, b, 0, 100, isn);
	CHECK(!h.done);
	CHECK_EQ_INT(pool.live, 1);
	names_free(&h, &pool);

	/* a hole that begins with something else than a request: nothing held any more */
	names_start(&h, 500);
	seg(&h, &pool, b, 100, 50, 500);
	CHECK_EQ_INT(pool.live, 1);
	seg(&h, &pool, (const uint8_t *)"\x05\x01\x00", 0, 3, 500);
	CHECK(!h.done);
	CHECK_EQ_INT(pool.live, 0);
	names_free(&h, &pool);

	/* after other messages (a proxy's or STARTTLS exchange): found in the third segment */
	seg(&h, &pool, (const uint8_t *)"\x05\x01\x00", 0, 3, 1);
	seg(&h, &pool, (const uint8_t *)"\x05\x01\x00\x03\x0bwww.x.example\x01\xbb", 0, 20, 4);
	CHECK(!h.done);
	CHECK_EQ_INT(pool.live, 0);
	seg(&h, &pool, b, 0, n, 24);
	CHECK(h.done);
	CHECK_EQ_STR(names_name(&h), "split.example");
	names_free(&h, &pool);

	/* a request that never ends: given up after NAMES_HUNT_SEGS segments, nothing held */
	for (unsigned k = 0; k < NAMES_HUNT_SEGS; k++)
		seg(&h, &pool, b, 10 * k, 10, isn);
	CHECK(h.done);
	CHECK_EQ_INT(pool.live, 0);
	CHECK_EQ_STR(names_name(&h), NULL);
	names_free(&h, &pool);

	/* the client goes on past what is held: a new request is read */
	const char *req = "GET / HTTP/1.1\r\nHost: after.example\r\n\r\n";
	seg(&h, &pool, b, 0, 50, 1000);
	CHECK_EQ_INT(pool.live, 1);
	names_segment(&h, &pool, (const uint8_t *)req, (uint32_t)strlen(req), 1000 + NAMES_HUNT_BYTES + 10);
	CHECK(h.done);
	CHECK_EQ_INT(pool.live, 0);
	CHECK_EQ_STR(names_name(&h), "after.example");
	names_free(&h, &pool);

	/* held requests are bounded: past NAMES_HUNT_BUFS, refused and counted */
	struct name_hunt *many = calloc(NAMES_HUNT_BUFS + 3, sizeof(*many));
	for (unsigned k = 0; many && k < NAMES_HUNT_BUFS + 3; k++)
		seg(&many[k], &pool, b, 0, 50, 0);
	CHECK_EQ_INT(pool.live, NAMES_HUNT_BUFS);
	CHECK_EQ_INT(pool.peak, NAMES_HUNT_BUFS);
	CHECK_EQ_INT(pool.refused, 3);
	for (unsigned k = 0; many && k < NAMES_HUNT_BUFS + 3; k++)
		names_free(&many[k], &pool);
	CHECK_EQ_INT(pool.live, 0);
	free(many);
}

void test_names(void)
{
	test_http();
	test_tls();
	test_hunt();
}
