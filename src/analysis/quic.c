/* quic: QUIC long headers, Initial packets opened with the version's public salt, their frames
 * and the ClientHello they carry (RFC 8999, 9000, 9001, 9369). Every read is bounds-checked
 * against the captured bytes; nothing here keeps state between calls. */
#include "quic.h"

#include <gcrypt.h>
#include <pthread.h>
#include <string.h>

#include "bytes.h"

size_t quic_varint(const uint8_t *p, size_t n, uint64_t *v)
{
	if (n < 1)
		return 0;
	size_t len = (size_t)1 << (p[0] >> 6);
	if (n < len)
		return 0;
	uint64_t x = p[0] & 0x3f;
	for (size_t i = 1; i < len; i++)
		x = x << 8 | p[i];
	*v = x;
	return len;
}

bool quic_is_gquic(uint32_t version)
{
	uint8_t a = version >> 24, b = (version >> 16) & 0xff, c = (version >> 8) & 0xff, d = version & 0xff;
	return (a == 'Q' || a == 'T') && b >= '0' && b <= '9' && c >= '0' && c <= '9' && d >= '0' &&
	       d <= '9';
}

/* The Initial salt of a version (RFC 9001 5.2; RFC 9369 3.3.1; the drafts' own), or NULL for a
 * version whose Initial packets are not opened here. */
static const uint8_t *initial_salt(uint32_t version)
{
	static const uint8_t v1[20] = {0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17,
	                               0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a};
	static const uint8_t v2[20] = {0x0d, 0xed, 0xe3, 0xde, 0xf7, 0x00, 0xa6, 0xdb, 0x81, 0x93,
	                               0x81, 0xbe, 0x6e, 0x26, 0x9d, 0xcb, 0xf9, 0xbd, 0x2e, 0xd9};
	static const uint8_t d29[20] = {0xaf, 0xbf, 0xec, 0x28, 0x99, 0x93, 0xd2, 0x4c, 0x9e, 0x97,
	                                0x86, 0xf1, 0x9c, 0x61, 0x11, 0xe0, 0x43, 0x90, 0xa8, 0x99};
	static const uint8_t d23[20] = {0xc3, 0xee, 0xf7, 0x12, 0xc7, 0x2e, 0xbb, 0x5a, 0x11, 0xa7,
	                                0xd2, 0x43, 0x2b, 0xb4, 0x63, 0x65, 0xbe, 0xf9, 0xf5, 0x02};
	static const uint8_t t51[20] = {0x7a, 0x4e, 0xde, 0xf4, 0xe7, 0xcc, 0xee, 0x5f, 0xa4, 0x50,
	                                0x6c, 0x19, 0x12, 0x4f, 0xc8, 0xcc, 0xda, 0x6e, 0x03, 0x3d};
	static const uint8_t t50[20] = {0x7f, 0xf5, 0x79, 0xe5, 0xac, 0xd0, 0x72, 0x91, 0x55, 0x80,
	                                0x30, 0x4c, 0x43, 0xa2, 0x36, 0x7c, 0x60, 0x48, 0x83, 0x10};
	static const uint8_t d22[20] = {0x7f, 0xbc, 0xdb, 0x0e, 0x7c, 0x66, 0xbb, 0xe9, 0x19, 0x3a,
	                                0x96, 0xcd, 0x21, 0x51, 0x9e, 0xbd, 0x7a, 0x02, 0x64, 0x4a};
	if (version == QUIC_V1)
		return v1;
	if (version == QUIC_V2)
		return v2;
	if (version >= 0xff00001du && version <= 0xff000022u) /* drafts 29-34 */
		return d29;
	if (version >= 0xff000017u && version <= 0xff00001cu) /* drafts 23-28 */
		return d23;
	if (version == 0xfaceb002u || version == 0xfaceb00eu) /* mvfst on drafts 27, 29 */
		return version == 0xfaceb002u ? d23 : d29;
	if (version == 0xff000016u || version == 0xfaceb001u) /* draft 22, mvfst on it */
		return d22;
	if (version == 0x54303531u) /* Google's T051 and T050: TLS in the IETF long header */
		return t51;
	if (version == 0x54303530u)
		return t50;
	return NULL;
}

/* Whether the long header's layout of a version is RFC 9000's (v1, v2, the drafts from 22). */
static bool ietf_layout(uint32_t version)
{
	return initial_salt(version) != NULL || (version >> 8) == 0xff0000u;
}

bool quic_gquic_public(const uint8_t *d, size_t cap, uint32_t *version)
{
	/* Google QUIC before Q046: public flags (0x80 clear, 0x01 a version follows, 0x02 a reset,
	 * 0x08 an 8-byte connection ID; 0x0c too, as the oldest wrote it), the connection ID, the
	 * version's four bytes ('Q035') */
	if (cap < 13 || (d[0] & 0x83) != 0x01 || !(d[0] & 0x08))
		return false;
	uint32_t v = rd_be32(d + 9);
	if (!quic_is_gquic(v) || v >= 0x51303436u) /* Q046 and later: the invariant long header */
		return false;
	*version = v;
	return true;
}

bool quic_looks_long(const uint8_t *d, size_t cap)
{
	if (cap < 7 || !(d[0] & 0x80))
		return false;
	uint32_t v = rd_be32(d + 1);
	return v == 0 || ietf_layout(v) || quic_is_gquic(v);
}

/* v2 numbers the long-header types differently (RFC 9369 3.2). */
static uint8_t long_type(uint32_t version, uint8_t first)
{
	uint8_t t = (first >> 4) & 3;
	if (version == QUIC_V2) {
		static const uint8_t v2[4] = {QUIC_RETRY, QUIC_INITIAL, QUIC_0RTT, QUIC_HANDSHAKE};
		return v2[t];
	}
	return t; /* QUIC_INITIAL, QUIC_0RTT, QUIC_HANDSHAKE, QUIC_RETRY in wire order */
}

/* The connection IDs after the version: dcid_len, dcid, scid_len, scid. Returns the offset
 * after them, 0 when they do not fit. */
static size_t read_cids(const uint8_t *d, size_t n, size_t cap, struct quic_hdr *h)
{
	size_t i = 5;
	if (i + 1 > cap)
		return 0;
	h->dcid_len = d[i++];
	if (h->dcid_len > QUIC_CID_MAX || i + h->dcid_len + 1 > cap || i + h->dcid_len + 1 > n)
		return 0;
	memcpy(h->dcid, d + i, h->dcid_len);
	i += h->dcid_len;
	h->scid_len = d[i++];
	if (h->scid_len > QUIC_CID_MAX || i + h->scid_len > cap || i + h->scid_len > n)
		return 0;
	memcpy(h->scid, d + i, h->scid_len);
	return i + h->scid_len;
}

enum quic_parse quic_header(const uint8_t *d, size_t n, size_t cap, struct quic_hdr *h)
{
	memset(h, 0, sizeof(*h));
	if (cap > n)
		cap = n;
	if (cap < 1)
		return QUIC_CUT;
	h->first = d[0];
	/* the fixed bit (0x40) may be 0: a peer that saw grease_quic_bit clears it at will (RFC
	 * 9287), as ngtcp2 does in its packets after the first Initial; but a zero byte after a
	 * datagram's packets is padding (RFC 9000 12.2 lets senders pad with them), not a packet */
	if (!(d[0] & 0x80)) { /* short header: the rest of the datagram */
		if (d[0] == 0)
			return QUIC_NOT;
		h->type = QUIC_SHORT;
		h->spin = (d[0] & 0x20) != 0;
		h->size = (uint32_t)n;
		return QUIC_OK;
	}
	if (cap < 5)
		return n < 5 ? QUIC_NOT : QUIC_CUT;
	h->version = rd_be32(d + 1);
	h->size = (uint32_t)n;
	if (h->version == 0) {
		h->type = QUIC_VN;
		return read_cids(d, n, cap, h) ? QUIC_OK : QUIC_CUT;
	}
	if (quic_is_gquic(h->version) && !initial_salt(h->version)) {
		h->type = QUIC_GQUIC;
		return QUIC_OK;
	}
	if (!ietf_layout(h->version))
		return QUIC_UNKNOWN_VERSION;
	h->type = long_type(h->version, d[0]); /* known even when the rest is cut */
	size_t i = read_cids(d, n, cap, h);
	if (!i)
		return n < 7 || h->dcid_len > QUIC_CID_MAX || h->scid_len > QUIC_CID_MAX ? QUIC_NOT
		                                                                        : QUIC_CUT;
	if (h->type == QUIC_RETRY)
		return QUIC_OK; /* a token and a 16-byte tag: the rest of the datagram */
	uint64_t v;
	size_t k;
	if (h->type == QUIC_INITIAL) {
		if (!(k = quic_varint(d + i, cap - i, &v)))
			return QUIC_CUT;
		i += k;
		if (v > n - i)
			return QUIC_NOT;
		h->token_len = (uint32_t)v;
		i += (size_t)v;
	}
	if (!(k = quic_varint(d + i, cap > i ? cap - i : 0, &v)))
		return cap < n ? QUIC_CUT : QUIC_NOT;
	i += k;
	if (v > n - i || v < 1 + 16) /* a packet number and the AEAD tag at least */
		return QUIC_NOT;
	h->pn_offset = (uint32_t)i;
	h->size = (uint32_t)(i + v);
	return h->size > cap ? QUIC_CUT : QUIC_OK;
}

/* ---- Initial keys and packet protection (RFC 9001 5) ---------------------------------------- */

static pthread_once_t gcrypt_once = PTHREAD_ONCE_INIT;

static void gcrypt_start(void)
{
	if (!gcry_control(GCRYCTL_INITIALIZATION_FINISHED_P)) {
		gcry_check_version(NULL);
		gcry_control(GCRYCTL_DISABLE_SECMEM, 0);
		gcry_control(GCRYCTL_INITIALIZATION_FINISHED, 0);
	}
}

void quic_init(void)
{
	pthread_once(&gcrypt_once, gcrypt_start);
}

static bool hmac_sha256(const uint8_t *key, size_t klen, const uint8_t *a, size_t alen,
                        const uint8_t *b, size_t blen, uint8_t out[32])
{
	gcry_md_hd_t md;
	if (gcry_md_open(&md, GCRY_MD_SHA256, GCRY_MD_FLAG_HMAC))
		return false;
	bool ok = !gcry_md_setkey(md, key, klen);
	if (ok) {
		gcry_md_write(md, a, alen);
		if (blen)
			gcry_md_write(md, b, blen);
		const unsigned char *r = gcry_md_read(md, GCRY_MD_SHA256);
		ok = r != NULL;
		if (ok)
			memcpy(out, r, 32);
	}
	gcry_md_close(md);
	return ok;
}

/* HKDF-Expand-Label(secret, label, "", len) for len <= 32 (RFC 8446 7.1): one HMAC block. */
static bool expand_label(const uint8_t secret[32], const char *label, uint8_t *out, size_t len)
{
	uint8_t info[2 + 1 + 6 + 32 + 1 + 1];
	size_t ll = strlen(label), i = 0;
	if (ll > 32 || len > 32)
		return false;
	info[i++] = 0;
	info[i++] = (uint8_t)len;
	info[i++] = (uint8_t)(6 + ll);
	memcpy(info + i, "tls13 ", 6);
	i += 6;
	memcpy(info + i, label, ll);
	i += ll;
	info[i++] = 0;    /* empty context */
	info[i++] = 0x01; /* T(1) = HMAC(secret, info || 0x01) */
	uint8_t t[32];
	if (!hmac_sha256(secret, 32, info, i, NULL, 0, t))
		return false;
	memcpy(out, t, len);
	return true;
}

bool quic_initial_keys(uint32_t version, const uint8_t *dcid, uint8_t dcid_len, bool server,
                       struct quic_keys *k)
{
	const uint8_t *salt = initial_salt(version);
	if (!salt || dcid_len > QUIC_CID_MAX)
		return false;
	quic_init();
	uint8_t initial[32], secret[32];
	bool v2 = version == QUIC_V2;
	memset(k, 0, sizeof(*k));
	k->label_v2 = v2;
	return hmac_sha256(salt, 20, dcid, dcid_len, NULL, 0, initial) &&
	       expand_label(initial, server ? "server in" : "client in", secret, 32) &&
	       expand_label(secret, v2 ? "quicv2 key" : "quic key", k->key, 16) &&
	       expand_label(secret, v2 ? "quicv2 iv" : "quic iv", k->iv, 12) &&
	       expand_label(secret, v2 ? "quicv2 hp" : "quic hp", k->hp, 16);
}

static bool aes_ecb(const uint8_t key[16], const uint8_t in[16], uint8_t out[16])
{
	gcry_cipher_hd_t c;
	if (gcry_cipher_open(&c, GCRY_CIPHER_AES128, GCRY_CIPHER_MODE_ECB, 0))
		return false;
	bool ok = !gcry_cipher_setkey(c, key, 16) && !gcry_cipher_encrypt(c, out, 16, in, 16);
	gcry_cipher_close(c);
	return ok;
}

static bool aes_gcm_open(const struct quic_keys *k, const uint8_t nonce[12], const uint8_t *aad,
                         size_t aad_len, uint8_t *p, size_t n)
{
	gcry_cipher_hd_t c;
	if (n < 16 || gcry_cipher_open(&c, GCRY_CIPHER_AES128, GCRY_CIPHER_MODE_GCM, 0))
		return false;
	bool ok = !gcry_cipher_setkey(c, k->key, 16) && !gcry_cipher_setiv(c, nonce, 12) &&
	          !gcry_cipher_authenticate(c, aad, aad_len) &&
	          !gcry_cipher_decrypt(c, p, n - 16, NULL, 0) && !gcry_cipher_checktag(c, p + n - 16, 16);
	gcry_cipher_close(c);
	return ok;
}

enum quic_parse quic_initial_open(uint8_t *pkt, const struct quic_hdr *h, const struct quic_keys *k,
                                  uint32_t *pn, const uint8_t **frames, size_t *frames_len)
{
	size_t po = h->pn_offset;
	if (h->type != QUIC_INITIAL || !po || po + 4 + 16 > h->size)
		return QUIC_NOT;
	uint8_t mask[16];
	if (!aes_ecb(k->hp, pkt + po + 4, mask))
		return QUIC_BAD_AUTH;
	pkt[0] ^= mask[0] & 0x0f;
	size_t pn_len = (size_t)(pkt[0] & 3) + 1;
	uint32_t v = 0;
	for (size_t i = 0; i < pn_len; i++) {
		pkt[po + i] ^= mask[1 + i];
		v = v << 8 | pkt[po + i];
	}
	uint8_t nonce[12];
	memcpy(nonce, k->iv, 12);
	for (size_t i = 0; i < 4; i++)
		nonce[11 - i] ^= (uint8_t)(v >> (8 * i));
	size_t body = po + pn_len;
	if (body + 16 > h->size || !aes_gcm_open(k, nonce, pkt, body, pkt + body, h->size - body))
		return QUIC_BAD_AUTH;
	*pn = v;
	*frames = pkt + body;
	*frames_len = h->size - body - 16;
	return QUIC_OK;
}

/* ---- frames of the Initial space (RFC 9000 19) ----------------------------------------------- */

/* Reads a varint at *i and moves *i past it; false when cut. */
static bool next_varint(const uint8_t *p, size_t n, size_t *i, uint64_t *v)
{
	size_t k = quic_varint(p + *i, n - *i, v);
	*i += k;
	return k != 0;
}

void quic_read_frames(const uint8_t *p, size_t n, struct quic_frames *out,
                      void (*crypto)(void *arg, uint64_t off, const uint8_t *data, size_t len),
                      void *arg)
{
	memset(out, 0, sizeof(*out));
	size_t i = 0;
	uint64_t v, off, len, largest, count;
	while (i < n && !out->bad) {
		uint8_t type = p[i++];
		if (type == 0x00 || type == 0x01) /* PADDING, PING */
			continue;
		if (type == 0x02 || type == 0x03) { /* ACK: largest, delay, range count, first range */
			if (!next_varint(p, n, &i, &largest) || !next_varint(p, n, &i, &v) ||
			    !next_varint(p, n, &i, &count) || !next_varint(p, n, &i, &v) || count > n) {
				out->bad = true;
				break;
			}
			uint64_t more = 2 * count + (type == 0x03 ? 3u : 0u); /* gaps, lengths, ECN */
			uint64_t r = 0;
			while (r < more && next_varint(p, n, &i, &v))
				r++;
			if (r < more) {
				out->bad = true;
				break;
			}
			out->ack = true;
			if (largest > out->ack_largest)
				out->ack_largest = largest;
			continue;
		}
		/* CRYPTO: offset, length, data; Google's T050/T051 number it 0x08 (a STREAM frame
		 * in RFC 9000, which no Initial packet carries) */
		if (type == 0x06 || type == 0x08) {
			if (!next_varint(p, n, &i, &off) || !next_varint(p, n, &i, &len) || len > n - i) {
				out->bad = true;
				break;
			}
			out->crypto_frames++;
			if (crypto)
				crypto(arg, off, p + i, (size_t)len);
			i += (size_t)len;
			continue;
		}
		if (type == 0x1c || type == 0x1d) { /* CONNECTION_CLOSE: code, [frame type], reason */
			if (!next_varint(p, n, &i, &v) || (type == 0x1c && !next_varint(p, n, &i, &v)) ||
			    !next_varint(p, n, &i, &len) || len > n - i) {
				out->bad = true;
				break;
			}
			i += (size_t)len;
			continue;
		}
		out->bad = true; /* no other frame belongs in an Initial packet */
	}
}

/* ---- the ClientHello (RFC 8446 4.1.2) --------------------------------------------------------- */

/* Printable bytes of s into out (a host name lower case: names compare so). */
static void copy_text(char *out, size_t cap, const uint8_t *s, size_t n, bool lower)
{
	size_t j = 0;
	for (size_t i = 0; i < n && j + 1 < cap; i++)
		if (s[i] > 0x20 && s[i] < 0x7f)
			out[j++] = (char)(lower && s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
	out[j] = 0;
}

bool quic_hello(const uint8_t *h, size_t n, char sni[128], char alpn[QUIC_ALPN_MAX])
{
	sni[0] = alpn[0] = 0;
	if (n < 4 || h[0] != 1)
		return false;
	size_t whole = 4 + ((size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3]);
	if (n < whole)
		return false;
	size_t i = 4 + 2 + 32;
	if (i + 1 > whole)
		return true;
	i += 1 + h[i]; /* session id */
	if (i + 2 > whole)
		return true;
	i += 2 + rd_be16(h + i); /* cipher suites */
	if (i + 1 > whole)
		return true;
	i += 1 + h[i]; /* compression methods */
	if (i + 2 > whole)
		return true;
	size_t end = i + 2 + rd_be16(h + i);
	if (end > whole)
		end = whole;
	for (i += 2; i + 4 <= end;) {
		uint16_t type = rd_be16(h + i), len = rd_be16(h + i + 2);
		i += 4;
		if (i + len > end)
			break;
		if (type == 0 && len >= 5 && h[i + 2] == 0) { /* server_name: list, host_name entry */
			size_t nl = rd_be16(h + i + 3);
			if (5 + nl <= len)
				copy_text(sni, 128, h + i + 5, nl, true);
		} else if (type == 16 && len >= 3) { /* ALPN: list length, then length-prefixed names */
			size_t pl = h[i + 2];
			if (3 + pl <= len)
				copy_text(alpn, QUIC_ALPN_MAX, h + i + 3, pl, false);
		}
		i += len;
	}
	return true;
}
