/* quic: what a passive observer can read of a QUIC datagram without keys (RFC 8999, 9000,
 * 9001, 9369): the long headers in clear, coalesced packets split, and the Initial packets
 * opened with the version's public salt, whose CRYPTO frames carry the ClientHello (server
 * name, ALPN) and whose ACK frames show what each side had received. Stateless: quicflow.c
 * keeps the per-connection state. */
#ifndef IWSCOPE_QUIC_H
#define IWSCOPE_QUIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QUIC_CID_MAX 20      /* RFC 9000 17.2: a v1 connection ID is at most 20 bytes */
#define QUIC_ALPN_MAX 32     /* the first ALPN protocol offered, with its NUL */
#define QUIC_HELLO_MAX 4096  /* ClientHello bytes reassembled from CRYPTO frames, at most */

/* Versions named by the code (wire values) */
#define QUIC_V1 0x00000001u
#define QUIC_V2 0x6b3343cfu

/* Long-header packet types, the same for every version (v2's wire codes are mapped) */
enum quic_type {
	QUIC_INITIAL = 0,
	QUIC_0RTT,
	QUIC_HANDSHAKE,
	QUIC_RETRY,
	QUIC_VN,        /* version negotiation (version 0) */
	QUIC_SHORT,     /* a 1-RTT packet: the rest of the datagram */
	QUIC_GQUIC      /* a Google QUIC long header (Q046-Q050, T050/T051): no further parse */
};

enum quic_parse {
	QUIC_OK = 0,
	QUIC_NOT,       /* not a QUIC packet (fixed bit clear, impossible lengths) */
	QUIC_CUT,       /* the packet continues past the captured bytes */
	QUIC_UNKNOWN_VERSION, /* a long header of a version whose layout is not known */
	QUIC_BAD_AUTH   /* an Initial that does not open with the version's keys */
};

/* One packet of a datagram. For a long header of a known version, every field; for a short
 * header, type and size (the rest of the datagram). */
struct quic_hdr {
	uint8_t type;           /* enum quic_type */
	uint8_t first;          /* the first byte as on the wire (protected bits included) */
	uint8_t dcid_len, scid_len;
	uint32_t version;
	uint8_t dcid[QUIC_CID_MAX], scid[QUIC_CID_MAX];
	uint32_t token_len;     /* Initial: the token's length (a Retry's or NEW_TOKEN's) */
	uint32_t pn_offset;     /* Initial, 0-RTT, Handshake: where the packet number starts */
	uint32_t size;          /* bytes of this packet in the datagram (coalesced packets) */
	bool spin;              /* short header: the spin bit (RFC 9000 17.3.1) */
};

/* Reads the packet at d (n bytes left in the datagram, cap of them captured). A short header
 * needs the connection ID length known from the long headers (0 if none). */
enum quic_parse quic_header(const uint8_t *d, size_t n, size_t cap, struct quic_hdr *h);

/* Whether d begins with Google QUIC's old public header carrying a version (a client's
 * packets before Q046: flags with 0x01 and an 8-byte connection ID, then 'Q0nn'); *version the
 * version's four bytes as an integer. */
bool quic_gquic_public(const uint8_t *d, size_t cap, uint32_t *version);

/* Whether a datagram's first byte and version look like QUIC's start (a client's first
 * Initial or any long header of a version iwscope knows, or a Google QUIC one). */
bool quic_looks_long(const uint8_t *d, size_t cap);

/* Initialises libgcrypt once, if nothing did before. Call before any thread that may use it
 * starts (nDPI decrypts QUIC Initials with it too, on the DPI stage's thread): libgcrypt is
 * thread-safe only once initialised. quic_initial_keys calls it as well. */
void quic_init(void);

/* The Initial keys of one direction (RFC 9001 5.2), from the client's first Destination
 * Connection ID. */
struct quic_keys {
	uint8_t key[16], iv[12], hp[16];
	uint8_t label_v2;       /* v2's labels ("quicv2 key") */
};
bool quic_initial_keys(uint32_t version, const uint8_t *dcid, uint8_t dcid_len, bool server,
                       struct quic_keys *k);

/* Opens an Initial packet: pkt holds h->size bytes, all captured, and is changed in place
 * (header protection removed, payload decrypted). On QUIC_OK, *pn is the packet number's
 * truncated value and [*frames, *frames + *frames_len) the plaintext frames. */
enum quic_parse quic_initial_open(uint8_t *pkt, const struct quic_hdr *h, const struct quic_keys *k,
                                  uint32_t *pn, const uint8_t **frames, size_t *frames_len);

/* What the frames of an Initial packet carry (RFC 9000 19): CRYPTO data and ACKs. */
struct quic_frames {
	bool ack;               /* an ACK frame: largest acknowledged packet number */
	uint64_t ack_largest;
	uint32_t crypto_frames;
	bool bad;               /* a frame that could not be read: the rest ignored */
};
/* Calls crypto(arg, offset, data, len) for every CRYPTO frame. */
void quic_read_frames(const uint8_t *p, size_t n, struct quic_frames *out,
                      void (*crypto)(void *arg, uint64_t off, const uint8_t *data, size_t len),
                      void *arg);

/* The server name and first ALPN protocol of a ClientHello handshake message (type 1, its
 * 4-byte header first); n bytes of it are here. true when the whole message was there to read
 * (a name or ALPN absent then stays ""). */
bool quic_hello(const uint8_t *h, size_t n, char sni[128], char alpn[QUIC_ALPN_MAX]);

/* A variable-length integer (RFC 9000 16): its length in bytes, 0 when cut. */
size_t quic_varint(const uint8_t *p, size_t n, uint64_t *v);

/* Google QUIC version names (Q046..Q050, T050, T051): true for a version such as 'Q050'. */
bool quic_is_gquic(uint32_t version);

#endif
