/* Unit tests for quic.c: RFC 9001 Appendix A's Initial keys, and an Initial packet sealed here
 * (AES-128-GCM and header protection, with libgcrypt directly) that quic.c parses, opens and
 * reads back: its packet number, its CRYPTO frames and the ClientHello's name and ALPN. */
#include <gcrypt.h>
#include <string.h>

#include "quic.h"
#include "unit.h"

static void hex(const char *s, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		sscanf(s + 2 * i, "%2x", &v);
		out[i] = (uint8_t)v;
	}
}

static void test_keys(void)
{
	uint8_t dcid[8], want[16];
	hex("8394c8f03e515708", dcid, 8);
	struct quic_keys c, s;
	CHECK(quic_initial_keys(QUIC_V1, dcid, 8, false, &c));
	CHECK(quic_initial_keys(QUIC_V1, dcid, 8, true, &s));
	hex("1f369613dd76d5467730efcbe3b1a22d", want, 16);
	CHECK_EQ_MEM(c.key, want, 16);
	hex("fa044b2f42a3fd3b46fb255c", want, 12);
	CHECK_EQ_MEM(c.iv, want, 12);
	hex("9f50449e04a0e810283a1e9933adedd2", want, 16);
	CHECK_EQ_MEM(c.hp, want, 16);
	hex("cf3a5331653c364c88f0f379b6067e37", want, 16);
	CHECK_EQ_MEM(s.key, want, 16);
	hex("0ac1493ca1905853b0bba03e", want, 12);
	CHECK_EQ_MEM(s.iv, want, 12);
	hex("c206b8d9b9f0f37644430b490eeaa314", want, 16);
	CHECK_EQ_MEM(s.hp, want, 16);
	CHECK(!quic_initial_keys(0x12345678u, dcid, 8, false, &c)); /* no salt known */
}

/* A ClientHello with server_name and ALPN (the fields quic_hello reads; the rest minimal). */
static size_t hello(uint8_t *p)
{
	static const char name[] = "Www.Example.ORG", alpn[] = "h3";
	size_t nl = strlen(name), al = strlen(alpn), i = 0;
	size_t sni_ext = 4 + 2 + 3 + nl, alpn_ext = 4 + 2 + 1 + al;
	size_t body = 2 + 32 + 1 + 2 + 2 + 1 + 1 + 2 + sni_ext + alpn_ext;
	p[i++] = 1;
	p[i++] = 0;
	p[i++] = (uint8_t)(body >> 8);
	p[i++] = (uint8_t)body;
	p[i++] = 3, p[i++] = 3;
	memset(p + i, 0x11, 32), i += 32;
	p[i++] = 0;                           /* session id */
	p[i++] = 0, p[i++] = 2, p[i++] = 0x13, p[i++] = 0x01; /* one suite */
	p[i++] = 1, p[i++] = 0;               /* compression: null */
	p[i++] = (uint8_t)((sni_ext + alpn_ext) >> 8), p[i++] = (uint8_t)(sni_ext + alpn_ext);
	p[i++] = 0, p[i++] = 0, p[i++] = 0, p[i++] = (uint8_t)(2 + 3 + nl);
	p[i++] = 0, p[i++] = (uint8_t)(3 + nl), p[i++] = 0, p[i++] = 0, p[i++] = (uint8_t)nl;
	memcpy(p + i, name, nl), i += nl;
	p[i++] = 0, p[i++] = 16, p[i++] = 0, p[i++] = (uint8_t)(2 + 1 + al);
	p[i++] = 0, p[i++] = (uint8_t)(1 + al), p[i++] = (uint8_t)al;
	memcpy(p + i, alpn, al), i += al;
	return i;
}

/* Seals a client Initial of version v: 8-byte DCID, a 2-byte packet number pn, a CRYPTO frame
 * with the hello at offset 0, padding to 1200 bytes. Returns its size. */
static size_t seal(uint32_t v, uint16_t pn, uint8_t *pkt)
{
	uint8_t dcid[8] = {1, 2, 3, 4, 5, 6, 7, 8}, plain[1400];
	struct quic_keys k;
	CHECK(quic_initial_keys(v, dcid, 8, false, &k));
	size_t f = 0;
	plain[f++] = 0x06, plain[f++] = 0;        /* CRYPTO, offset 0 */
	size_t hl = hello(plain + f + 2);
	plain[f++] = (uint8_t)(0x40 | hl >> 8), plain[f++] = (uint8_t)hl;
	f += hl;
	plain[f++] = 0x02, plain[f++] = 7, plain[f++] = 0, plain[f++] = 0, plain[f++] = 3; /* ACK 7 */
	size_t hdr = 1 + 4 + 1 + 8 + 1 + 1 + 2, total = 1200;
	size_t len = total - hdr;                 /* packet number, payload, tag */
	memset(plain + f, 0, len - 2 - 16 - f);   /* PADDING */
	size_t i = 0;
	pkt[i++] = (uint8_t)(v == QUIC_V2 ? 0xd1 : 0xc1); /* Initial, 2-byte packet number */
	pkt[i++] = (uint8_t)(v >> 24), pkt[i++] = (uint8_t)(v >> 16), pkt[i++] = (uint8_t)(v >> 8),
	pkt[i++] = (uint8_t)v;
	pkt[i++] = 8, memcpy(pkt + i, dcid, 8), i += 8;
	pkt[i++] = 0;                             /* SCID */
	pkt[i++] = 0;                             /* token */
	pkt[i++] = (uint8_t)(0x40 | len >> 8), pkt[i++] = (uint8_t)len;
	size_t po = i;
	pkt[i++] = (uint8_t)(pn >> 8), pkt[i++] = (uint8_t)pn;
	uint8_t nonce[12];
	memcpy(nonce, k.iv, 12);
	nonce[10] ^= (uint8_t)(pn >> 8), nonce[11] ^= (uint8_t)pn;
	gcry_cipher_hd_t c;
	CHECK(!gcry_cipher_open(&c, GCRY_CIPHER_AES128, GCRY_CIPHER_MODE_GCM, 0));
	gcry_cipher_setkey(c, k.key, 16);
	gcry_cipher_setiv(c, nonce, 12);
	gcry_cipher_authenticate(c, pkt, i);
	gcry_cipher_encrypt(c, pkt + i, len - 2 - 16, plain, len - 2 - 16);
	gcry_cipher_gettag(c, pkt + total - 16, 16);
	gcry_cipher_close(c);
	uint8_t mask[16];
	CHECK(!gcry_cipher_open(&c, GCRY_CIPHER_AES128, GCRY_CIPHER_MODE_ECB, 0));
	gcry_cipher_setkey(c, k.hp, 16);
	gcry_cipher_encrypt(c, mask, 16, pkt + po + 4, 16);
	gcry_cipher_close(c);
	pkt[0] ^= mask[0] & 0x0f;
	pkt[po] ^= mask[1], pkt[po + 1] ^= mask[2];
	return total;
}

struct got {
	uint8_t buf[QUIC_HELLO_MAX];
	size_t have;
};

static void on_crypto(void *arg, uint64_t off, const uint8_t *d, size_t n)
{
	struct got *g = arg;
	if (off + n <= sizeof(g->buf)) {
		memcpy(g->buf + off, d, n);
		g->have = off + n > g->have ? off + n : g->have;
	}
}

static void test_open(uint32_t v)
{
	uint8_t pkt[1400];
	size_t n = seal(v, 0x1234, pkt);
	struct quic_hdr h;
	CHECK(quic_looks_long(pkt, n));
	CHECK_EQ_INT(quic_header(pkt, n, n, &h), QUIC_OK);
	CHECK_EQ_INT(h.type, QUIC_INITIAL);
	CHECK_EQ_INT(h.version, v);
	CHECK_EQ_INT(h.dcid_len, 8);
	CHECK_EQ_INT(h.size, 1200);
	CHECK_EQ_INT(quic_header(pkt, n, 40, &h), QUIC_CUT);
	CHECK_EQ_INT(quic_header(pkt, n, n, &h), QUIC_OK);
	struct quic_keys k;
	CHECK(quic_initial_keys(v, h.dcid, h.dcid_len, false, &k));
	uint8_t copy[1400];
	memcpy(copy, pkt, n);
	uint32_t pn = 0;
	const uint8_t *fr = NULL;
	size_t fl = 0;
	CHECK_EQ_INT(quic_initial_open(copy, &h, &k, &pn, &fr, &fl), QUIC_OK);
	CHECK_EQ_INT(pn, 0x1234);
	struct got g = {.have = 0};
	struct quic_frames f;
	quic_read_frames(fr, fl, &f, on_crypto, &g);
	CHECK(!f.bad);
	CHECK(f.ack);
	CHECK_EQ_INT(f.ack_largest, 7);
	CHECK_EQ_INT(f.crypto_frames, 1);
	char sni[128], alpn[QUIC_ALPN_MAX];
	CHECK(quic_hello(g.buf, g.have, sni, alpn));
	CHECK_EQ_STR(sni, "www.example.org");
	CHECK_EQ_STR(alpn, "h3");
	CHECK(!quic_hello(g.buf, g.have - 1, sni, alpn)); /* one byte short: not whole */
	/* one bit flipped in the payload: the tag does not match */
	memcpy(copy, pkt, n);
	copy[600] ^= 1;
	CHECK_EQ_INT(quic_initial_open(copy, &h, &k, &pn, &fr, &fl), QUIC_BAD_AUTH);
	/* the server's keys do not open the client's packet */
	CHECK(quic_initial_keys(v, h.dcid, h.dcid_len, true, &k));
	memcpy(copy, pkt, n);
	CHECK_EQ_INT(quic_initial_open(copy, &h, &k, &pn, &fr, &fl), QUIC_BAD_AUTH);
}

static void test_headers(void)
{
	uint64_t v = 0;
	const uint8_t one[] = {0x25}, two[] = {0x7b, 0xbd}, eight[] = {0xc2, 0x19, 0x7c, 0x5e,
	                                                            0xff, 0x14, 0xe8, 0x8c};
	CHECK_EQ_INT(quic_varint(one, 1, &v), 1);
	CHECK_EQ_INT(v, 37);
	CHECK_EQ_INT(quic_varint(two, 2, &v), 2);
	CHECK_EQ_INT(v, 15293);
	CHECK_EQ_INT(quic_varint(eight, 8, &v), 8);
	CHECK_EQ_INT(v, 151288809941952652ULL);
	CHECK_EQ_INT(quic_varint(eight, 7, &v), 0);
	struct quic_hdr h;
	const uint8_t shorthdr[] = {0x60, 1, 2, 3};
	CHECK_EQ_INT(quic_header(shorthdr, 4, 4, &h), QUIC_OK);
	CHECK_EQ_INT(h.type, QUIC_SHORT);
	CHECK(h.spin);
	const uint8_t vn[] = {0x80, 0, 0, 0, 0, 1, 9, 1, 7, 0, 0, 0, 1};
	CHECK_EQ_INT(quic_header(vn, sizeof(vn), sizeof(vn), &h), QUIC_OK);
	CHECK_EQ_INT(h.type, QUIC_VN);
	const uint8_t q50[] = {0xc3, 'Q', '0', '5', '0', 0x50, 0, 0};
	CHECK(quic_looks_long(q50, sizeof(q50)));
	CHECK_EQ_INT(quic_header(q50, sizeof(q50), sizeof(q50), &h), QUIC_OK);
	CHECK_EQ_INT(h.type, QUIC_GQUIC);
	/* the fixed bit greased (RFC 9287): ngtcp2 clears it in its later Handshake and 1-RTT
	 * packets; still the packets they are */
	const uint8_t hs_grease[] = {0xa0, 0, 0, 0, 1, 1, 7, 0, 0x11, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9,
	                             10, 11, 12, 13, 14, 15, 16};
	CHECK_EQ_INT(quic_header(hs_grease, sizeof(hs_grease), sizeof(hs_grease), &h), QUIC_OK);
	CHECK_EQ_INT(h.type, QUIC_HANDSHAKE);
	CHECK_EQ_INT(h.size, sizeof(hs_grease));
	const uint8_t short_grease[] = {0x20, 1, 2, 3};
	CHECK_EQ_INT(quic_header(short_grease, 4, 4, &h), QUIC_OK);
	CHECK_EQ_INT(h.type, QUIC_SHORT);
	const uint8_t zeros[] = {0, 0, 0, 0}; /* padding after coalesced packets */
	CHECK_EQ_INT(quic_header(zeros, 4, 4, &h), QUIC_NOT);
	const uint8_t other[] = {0xc0, 0x1a, 0x2a, 0x3a, 0x4a, 0, 0};
	CHECK(!quic_looks_long(other, sizeof(other)));
	CHECK_EQ_INT(quic_header(other, sizeof(other), sizeof(other), &h), QUIC_UNKNOWN_VERSION);
}

void test_quic(void)
{
	test_keys();
	test_headers();
	test_open(QUIC_V1);
	test_open(QUIC_V2);
	test_open(0xff00001du); /* draft-29 */
}
