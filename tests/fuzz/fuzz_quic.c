/* libFuzzer target: the QUIC parsers of quic.c. The first byte picks what the rest is: 0, a UDP
 * datagram (its packets split as coalesced, each Initial opened with the client's and the
 * server's keys of its DCID, the frames read and the hello they carry parsed); 1, the
 * plaintext frames of an Initial (a fuzzer cannot forge an AEAD tag, so they are fed
 * directly); 3, Google QUIC's public header before Q046; else a ClientHello handshake
 * message. Nothing may read out of bounds (ASan), and
 * what the parsers return must stay inside the input. */
#include <stdlib.h>
#include <string.h>

#include "quic.h"

struct hello {
	uint8_t buf[QUIC_HELLO_MAX];
	size_t have;
};

static void on_crypto(void *arg, uint64_t off, const uint8_t *d, size_t n)
{
	struct hello *h = arg;
	if (off < sizeof(h->buf) && n <= sizeof(h->buf) - off) {
		memcpy(h->buf + off, d, n);
		if (off + n > h->have)
			h->have = off + n;
	}
}

static void frames(const uint8_t *p, size_t n)
{
	struct hello h = {.have = 0};
	struct quic_frames f;
	quic_read_frames(p, n, &f, on_crypto, &h);
	char sni[128], alpn[QUIC_ALPN_MAX];
	quic_hello(h.buf, h.have, sni, alpn);
	if (strlen(sni) >= 128 || strlen(alpn) >= QUIC_ALPN_MAX)
		abort();
}

static void datagram(const uint8_t *d, size_t n)
{
	uint8_t *copy = malloc(n ? n : 1);
	size_t pos = 0;
	while (pos < n) {
		struct quic_hdr h;
		size_t cap = (n - pos) - (d[0] & 1); /* sometimes one byte short of the datagram */
		if (quic_header(d + pos, n - pos, cap, &h) != QUIC_OK)
			break;
		if (h.size == 0 || h.size > n - pos)
			abort();
		if (h.type == QUIC_INITIAL) {
			for (int side = 0; side < 2; side++) {
				struct quic_keys k;
				if (!quic_initial_keys(h.version, h.dcid, h.dcid_len, side, &k))
					break;
				memcpy(copy, d + pos, h.size);
				uint32_t pn;
				const uint8_t *fr;
				size_t fl;
				if (quic_initial_open(copy, &h, &k, &pn, &fr, &fl) == QUIC_OK) {
					if (fr < copy || fr + fl > copy + h.size)
						abort();
					frames(fr, fl);
				}
			}
		}
		if (h.type != QUIC_INITIAL && h.type != QUIC_0RTT && h.type != QUIC_HANDSHAKE)
			break;
		pos += h.size;
	}
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] == 0)
		datagram(data + 1, size - 1);
	else if (data[0] == 1)
		frames(data + 1, size - 1);
	else if (data[0] == 3) {
		/* Google QUIC's public header before Q046: reads no further than its cap */
		uint32_t v;
		if (quic_gquic_public(data + 1, size - 1, &v) && !quic_is_gquic(v))
			abort();
	} else {
		char sni[128], alpn[QUIC_ALPN_MAX];
		quic_hello(data + 1, size - 1, sni, alpn);
	}
	return 0;
}
