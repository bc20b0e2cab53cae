/* quicflow: a QUIC connection followed from its datagrams, on a struct flow of transport 17.
 * The flow's handshake times are the QUIC handshake's (FT_SYN: the client's first Initial,
 * FT_SYNACK: the server's first datagram, FT_ACK: the client's first datagram after it), its
 * sides count datagrams and UDP payload bytes, and each side's struct first_flight holds its
 * first flight in datagrams (docs/METHOD.md "QUIC"). */
#include "quicflow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "config.h"
#include "quic.h"

struct quic_conn {
	uint32_t version;             /* the last long header's (after version negotiation) */
	uint8_t cid_len[2];           /* the DCID each direction's latest long header carried (what
	                               * its short headers carry too): where a GSO super-datagram's
	                               * next packet begins */
	uint8_t cid[2][QUIC_CID_MAX];
	uint8_t dcid_len;             /* the client's Initial DCID, which the keys come from */
	uint8_t dcid[QUIC_CID_MAX];
	bool keys;                    /* ck valid for dcid */
	bool keys_retry;              /* ... the DCID that followed a Retry */
	bool retry, vn, zero_rtt, spin;
	bool gquic;                   /* Google QUIC's own packets (Q046-Q050): not read past their
	                               * long header, so no Retry, 0-RTT or spin bit is known */
	bool gquic_old;               /* ... before Q046 (the public header): nor when the client's
	                               * address was validated */
	bool validated;               /* the client sent a Handshake or 1-RTT packet */
	bool answered;                /* the client moved off its first DCID: the server sent */
	bool c_short;                 /* the client sent a 1-RTT packet */
	bool hello_done;              /* sni and alpn final (found, or no longer looked for) */
	bool s_went_on;               /* the server sent after its first flight closed */
	bool s_resumed_late;          /* ... its first such datagram half the handshake's round
	                               * trip or more after the flight's last: it had stopped */
	bool doubled;                 /* a datagram came twice: the capture holds this connection's
	                               * datagrams twice (copies.h) */
	uint8_t hello_tries;          /* client Initial packets looked at for the hello */
	struct quic_keys ck;
	uint32_t c_initial;           /* the client's first Initial datagram's bytes */
	uint64_t c_preval, s_preval;  /* bytes before the client's address was validated */
	uint16_t s_max_dgram;         /* largest server datagram of its first flight */
	uint16_t s_last_dgram;        /* its last */
	uint64_t amp_budget;          /* 3 x the client's bytes before the datagram that ended the
	                               * server's first flight, its address unvalidated; 0: none */
	uint8_t *hello;               /* CRYPTO bytes of the client's Initials, while looked for */
	uint8_t *filled;              /* one bit per hello byte received */
	char sni[128];
	char alpn[QUIC_ALPN_MAX];
};

#define HELLO_TRIES 8 /* client Initial packets looked at for the ClientHello, at most */

/* The UDP ports QUIC servers listen on: HTTP/3 (443, and 4433 and 8443 of test servers), DNS
 * over QUIC (853, and 784 of its drafts). */
static bool server_port(uint16_t port)
{
	return port == 443 || port == 4433 || port == 8443 || port == 853 || port == 784;
}

/* A copy of the Initial packet at pkt (h parsed) opened with k, its plaintext frames at
 * [*frames, *frames + *len); NULL when it does not open (or no memory). The caller frees it. */
static uint8_t *opened_copy(const uint8_t *pkt, const struct quic_hdr *h, const struct quic_keys *k,
                            const uint8_t **frames, size_t *len)
{
	uint8_t *copy = malloc(h->size);
	uint32_t pn;
	if (copy) {
		memcpy(copy, pkt, h->size);
		if (quic_initial_open(copy, h, k, &pn, frames, len) == QUIC_OK)
			return copy;
	}
	free(copy);
	return NULL;
}

/* A client's first Initial fills a datagram of at least 1200 bytes (RFC 9000 14.1), but servers
 * pad theirs too: one sent from a port QUIC serves on (HTTP/3, DNS over QUIC) to another port
 * is a server's. */
static bool padded_client_initial(const struct pkt *p, const struct quic_hdr *h)
{
	return h->type == QUIC_INITIAL && p->payload_len >= 1200 &&
	       !(server_port(p->sport) && !server_port(p->dport));
}

bool quicflow_client_initial(const struct pkt *p)
{
	struct quic_hdr h;
	struct quic_keys k;
	if (!quic_looks_long(p->payload, p->payload_cap) ||
	    quic_header(p->payload, p->payload_len, p->payload_cap, &h) != QUIC_OK ||
	    !padded_client_initial(p, &h) || h.size > p->payload_cap ||
	    !quic_initial_keys(h.version, h.dcid, h.dcid_len, false, &k))
		return false;
	/* a connection's first Initials open with the keys of their own DCID; its later ones
	 * carry the server's connection ID and keep the first keys (RFC 9001 5.2): they fail */
	const uint8_t *fr;
	size_t fl;
	uint8_t *copy = opened_copy(p->payload, &h, &k, &fr, &fl);
	bool first = copy != NULL;
	free(copy);
	return first;
}

bool quicflow_starts(const struct pkt *p, bool *client)
{
	uint32_t gv;
	if (quic_gquic_public(p->payload, p->payload_cap, &gv)) {
		/* Google QUIC's old public header: only a client's packets carry the version (a
		 * server's version negotiation too, from the port it serves on) */
		*client = !(server_port(p->sport) && !server_port(p->dport));
		return true;
	}
	if (!quic_looks_long(p->payload, p->payload_cap))
		return false;
	struct quic_hdr h;
	enum quic_parse r = quic_header(p->payload, p->payload_len, p->payload_cap, &h);
	if (r != QUIC_OK && r != QUIC_CUT) /* cut: the snaplen; the type is known */
		return false;
	/* a padded client Initial; otherwise the port says which side serves (443 first, else
	 * the lower one) */
	if (padded_client_initial(p, &h))
		*client = true;
	else if (p->dport == 443 || p->sport == 443)
		*client = p->dport == 443;
	else
		*client = p->dport < p->sport;
	return h.type != QUIC_VN && h.type != QUIC_SHORT;
}

/* ---- the ClientHello from the client's Initial packets --------------------------------------- */

static void on_crypto(void *arg, uint64_t off, const uint8_t *d, size_t n)
{
	struct quic_conn *q = arg;
	if (off >= QUIC_HELLO_MAX)
		return;
	if (n > QUIC_HELLO_MAX - off)
		n = (size_t)(QUIC_HELLO_MAX - off);
	memcpy(q->hello + off, d, n);
	for (size_t i = (size_t)off; i < off + n; i++)
		q->filled[i / 8] |= (uint8_t)(1u << (i % 8));
}

/* Bytes of the hello received from offset 0 on without a gap. */
static size_t hello_have(const struct quic_conn *q)
{
	size_t i = 0;
	while (i < QUIC_HELLO_MAX && (q->filled[i / 8] >> (i % 8) & 1))
		i++;
	return i;
}

static void hello_end(struct quic_conn *q)
{
	free(q->hello);
	free(q->filled);
	q->hello = q->filled = NULL;
	q->hello_done = true;
}

/* A client Initial packet (its bytes at pkt, h parsed): opened, its CRYPTO frames kept. */
static void client_initial(struct quic_conn *q, const uint8_t *pkt, const struct quic_hdr *h)
{
	if (!q->keys || (q->retry && !q->keys_retry &&
	                 (q->dcid_len != h->dcid_len || memcmp(q->dcid, h->dcid, h->dcid_len) != 0))) {
		/* the first Initial's DCID, or the one after a Retry: its keys (a client that moved
		 * to the server's connection ID keeps the keys of its first DCID, RFC 9001 5.2) */
		q->keys_retry = q->retry;
		q->dcid_len = h->dcid_len;
		memcpy(q->dcid, h->dcid, h->dcid_len);
		q->keys = quic_initial_keys(h->version, h->dcid, h->dcid_len, false, &q->ck);
	}
	if (q->hello_done || !q->keys || ++q->hello_tries > HELLO_TRIES) {
		if (!q->hello_done && q->hello_tries > HELLO_TRIES)
			hello_end(q);
		return;
	}
	if (!q->hello) {
		q->hello = malloc(QUIC_HELLO_MAX);
		q->filled = calloc(QUIC_HELLO_MAX / 8, 1);
		if (!q->hello || !q->filled) {
			hello_end(q);
			return;
		}
	}
	const uint8_t *fr;
	size_t fl;
	uint8_t *copy = opened_copy(pkt, h, &q->ck, &fr, &fl);
	if (copy) {
		struct quic_frames f;
		quic_read_frames(fr, fl, &f, on_crypto, q);
		size_t have = hello_have(q);
		if (have >= 4 && quic_hello(q->hello, have, q->sni, q->alpn))
			hello_end(q);
	}
	free(copy);
}

/* ---- datagrams ------------------------------------------------------------------------------- */

/* The packets of one datagram, coalesced (RFC 9000 12.2). Returns the type of its first. */
static enum quic_type read_packets(struct quic_conn *q, const struct pkt *p, int dir)
{
	enum quic_type first = QUIC_SHORT;
	uint32_t gv;
	if ((q->gquic || !q->version) && quic_gquic_public(p->payload, p->payload_cap, &gv)) {
		q->version = gv; /* Google QUIC before Q046: nothing after the version is read */
		q->gquic = q->gquic_old = true;
		return QUIC_GQUIC;
	}
	if (q->gquic_old && !(p->payload_len && p->payload[0] & 0x80))
		return QUIC_SHORT; /* its packets without a version: not IETF short headers */
	size_t pos = 0, n = p->payload_len, cap = p->payload_cap;
	while (pos < n) {
		struct quic_hdr h;
		if (quic_header(p->payload + pos, n - pos, cap > pos ? cap - pos : 0, &h) != QUIC_OK)
			return first; /* padding after the last packet, or cut by the snaplen */
		if (pos == 0)
			first = (enum quic_type)h.type;
		if (h.type == QUIC_VN) {
			q->vn = true;
			return first;
		}
		if (h.type == QUIC_SHORT) {
			q->spin |= h.spin;
			if (dir == 0)
				q->c_short = q->validated = true;
			return first;
		}
		if (h.type == QUIC_GQUIC) {
			q->version = h.version;
			q->gquic = true;
			return first;
		}
		q->version = h.version;
		q->cid_len[dir] = h.dcid_len;
		memcpy(q->cid[dir], h.dcid, h.dcid_len);
		if (h.type == QUIC_RETRY) {
			q->retry = true;
			return first;
		}
		if (dir == 0 && h.type == QUIC_0RTT)
			q->zero_rtt = true;
		if (dir == 0 && h.type == QUIC_HANDSHAKE)
			q->validated = true;
		if (dir == 0 && q->dcid_len && (h.dcid_len != q->dcid_len ||
		                                memcmp(h.dcid, q->dcid, h.dcid_len) != 0))
			q->answered = true; /* the server's connection ID, or a Retry's */
		if (dir == 0 && h.type == QUIC_INITIAL)
			client_initial(q, p->payload + pos, &h);
		pos += h.size;
	}
	return first;
}

/* Whether a packet of this connection's direction dir begins at off of datagram p: a short
 * header or a long one of the connection's version, carrying the DCID that direction's long
 * headers carried (at least 4 bytes of it: a shorter one proves nothing). */
static bool packet_at(const struct quic_conn *q, const struct pkt *p, int dir, size_t off)
{
	const uint8_t *d = p->payload + off;
	size_t n = q->cid_len[dir];
	if (n < 4 || off + 6 + n > p->payload_cap)
		return false;
	if (!(d[0] & 0x80))
		return memcmp(d + 1, q->cid[dir], n) == 0;
	return rd_be32(d + 1) == q->version && d[5] == n && memcmp(d + 6, q->cid[dir], n) == 0;
}

/* The datagrams a UDP payload carries: one, or for a GSO super-datagram (sent as one on the
 * host that captured it, split by its stack later) as many as segments of the size at which
 * the connection's next packet is seen to begin (1200 to 1472 bytes: an Ethernet path's). A
 * large datagram whose split the bytes do not show (a jumbo-frame path, a snaplen, a short
 * connection ID) counts one: never more than were sent. */
static uint32_t datagrams(const struct quic_conn *q, const struct pkt *p, int dir)
{
	if (p->payload_len <= QUIC_GSO_SEG_MAX)
		return 1;
	for (size_t seg = QUIC_GSO_SEG_MIN; seg <= QUIC_GSO_SEG_MAX; seg++)
		if (packet_at(q, p, dir, seg))
			return (p->payload_len + (uint32_t)seg - 1) / (uint32_t)seg;
	return 1;
}

/* Whether datagram p comes after a pause in its sender's flight ff: half the handshake's
 * round trip or more after the flight's last datagram (while the client's answer is still to
 * come, half the leg seen so far: shorter at the server, so a pause is found sooner, never
 * later). */
static bool paused(const struct flow *f, const struct first_flight *ff, const struct pkt *p)
{
	int64_t rtt = flight_rtt(f), gap = (int64_t)(p->ts_us - ff_last_us(f, ff));
	if (rtt <= 0)
		rtt = flight_rtt_leg(f, 1);
	return rtt > 0 && gap * 2 >= rtt;
}

/* The first flights, in datagrams (docs/METHOD.md "QUIC"): the client's, until the server's
 * first datagram; the server's, from its first datagram until the client's next one passes the
 * vantage point (nothing the server sent before could have been released by it) or a pause of
 * half the handshake's round trip. */
static void flights(struct flow *f, struct quic_conn *q, const struct pkt *p, int dir,
                    bool was_validated)
{
	struct first_flight *mine = dir == 0 ? &f->c.ff : &f->s.ff;
	struct first_flight *other = dir == 0 ? &f->s.ff : &f->c.ff;
	uint32_t len = p->payload_len;
	if (dir == 1 && mine->state == FF_CLOSED && !q->s_went_on) {
		/* the server's first datagram after its first flight closed: whether it had
		 * stopped (a pause) or went on (paced, or past the 3x limit) */
		q->s_went_on = true;
		q->s_resumed_late = paused(f, mine, p);
	}
	if (other->state == FF_OPEN) { /* this datagram answers the other side's flight */
		other->state = FF_CLOSED;
		other->end = FF_END_TIMING;
		ff_set_next_us(f, other, p->ts_us);
		/* what the server may have sent by then without the client's address validated (a
		 * Retry's token validates it) */
		if (dir == 0 && !was_validated && !q->retry)
			q->amp_budget = 3 * q->c_preval;
	}
	if (mine->state == FF_WAIT) {
		mine->state = FF_OPEN;
		mine->rule = RULE_TIMING;
		ff_set_first_us(f, mine, p->ts_us);
	} else if (mine->state == FF_OPEN) {
		/* the handshake's round trip, or while the client's answer is still to come the leg
		 * seen so far (shorter at the server: a pause found sooner, never later) */
		if (paused(f, mine, p)) {
			mine->state = FF_CLOSED;
			mine->end = FF_END_PAUSE;
			ff_set_next_us(f, mine, p->ts_us);
			mine->next_pause = true;
		}
	}
	if (mine->state == FF_OPEN) {
		/* a GSO super-datagram (captured on the sending host before the stack split it)
		 * counts as the datagrams it carries; its last one's size is unknown */
		bool super = len > QUIC_GSO_SEG_MAX;
		mine->segs += datagrams(q, p, dir);
		mine->bytes += len;
		ff_set_last_us(f, mine, p->ts_us);
		uint16_t l16 = super ? 0 : (uint16_t)len;
		if (dir == 1 && (super ? QUIC_GSO_SEG_MAX : l16) > q->s_max_dgram)
			q->s_max_dgram = super ? QUIC_GSO_SEG_MAX : l16;
		if (dir == 1)
			q->s_last_dgram = l16;
	}
}

bool quicflow_update(struct flow *f, const struct pkt *p, int dir)
{
	if (!f->quic && !(f->quic = calloc(1, sizeof(*f->quic))))
		return false;
	struct quic_conn *q = f->quic;
	struct side *sd = dir == 0 ? &f->c : &f->s;
	bool was_validated = q->validated;
	enum quic_type first = read_packets(q, p, dir);
	if (dir == 0 && !q->c_initial && first == QUIC_INITIAL)
		q->c_initial = p->payload_len;
	if (dir == 1 && (first == QUIC_VN || first == QUIC_RETRY)) {
		/* the server asks for another Initial: the handshake starts again with it */
		memset(&f->c.ff, 0, sizeof(f->c.ff));
		flow_set_time(f, FT_SYN, 0);
		flow_set_time(f, FT_SYNACK, 0);
		flow_set_time(f, FT_ACK, 0);
		q->c_preval = 0;
		flow_count_sent(f, sd, p->payload_len);
		return true;
	}
	if (dir == 0 && !flow_seen(f, FT_SYN))
		flow_set_time(f, FT_SYN, p->ts_us);
	if (dir == 1 && !flow_seen(f, FT_SYNACK))
		flow_set_time(f, FT_SYNACK, p->ts_us);
	if (dir == 0 && flow_seen(f, FT_SYNACK) && !flow_seen(f, FT_ACK))
		flow_set_time(f, FT_ACK, p->ts_us);
	flights(f, q, p, dir, was_validated);
	if (!was_validated) { /* what each side sent before the client's address was validated */
		if (dir == 0)
			q->c_preval += p->payload_len;
		else
			q->s_preval += p->payload_len;
	}
	flow_count_sent(f, sd, p->payload_len);
	return true;
}

/* ---- verdicts and the record ----------------------------------------------------------------- */

void quicflow_verdict(const struct flow *f, int sender, struct ff_verdict *v)
{
	const struct first_flight *ff = sender == 0 ? &f->c.ff : &f->s.ff;
	const struct quic_conn *q = f->quic;
	memset(v, 0, sizeof(*v));
	v->pause_us = -1;
	if (!q || ff->state == FF_WAIT) {
		/* none seen; but the other side shows this one sent: the server answered an
		 * Initial the client moved past, a client began what the server answers. One
		 * direction only: not "sent nothing", unknown */
		const struct side *mine = sender == 0 ? &f->c : &f->s;
		bool shown = q && !mine->pkts &&
		             (sender == 0 ? f->s.pkts > 0 : q->validated || q->answered);
		v->limit = shown ? LIMIT_UNKNOWN : LIMIT_NONE;
		return;
	}
	v->rule = RULE_TIMING;
	if (ff->state != FF_CLOSED || ff->time_cut || f->lost) {
		/* nothing ended it here: the peer's datagrams are not in the capture (one
		 * direction), or nothing followed; no verdict, however many datagrams it had (nor
		 * for a flight whose times passed their 32-bit offsets, or whose flow lost what did
		 * not fit inline) */
		v->limit = LIMIT_UNKNOWN;
		return;
	}
	v->end = (enum ff_end)ff->end;
	v->segs = ff->segs;
	v->bytes = ff->bytes;
	v->pause_us = (int64_t)(ff_next_us(f, ff) - ff_last_us(f, ff));
	/* the server before the client's address was validated: at most three times what it had
	 * received (RFC 9000 8.1); a flight that ended on a full datagram where one more would
	 * have taken it past that stopped there (not Google QUIC's, which RFC 9000 does not bind),
	 * if the server's own datagrams show it stopped: its next one came after a pause. Where
	 * the client's datagram that ended the flight is seen before the server had it (near the
	 * client), a server that went on (paced, or past the limit) sends its next datagram within
	 * the pause; none in the capture: nothing shows it stopped */
	if (sender == 1 && q->s_max_dgram && q->amp_budget && !quic_is_gquic(q->version) &&
	    q->s_went_on && q->s_resumed_late &&
	    q->s_last_dgram == q->s_max_dgram &&
	    ff->bytes + q->s_max_dgram > q->amp_budget && ff->bytes <= q->amp_budget) {
		v->limit = LIMIT_AMPLIFICATION;
		return;
	}
	/* what ended a flight the packets do not show (the datagrams' packet numbers and ACKs
	 * are encrypted): a lower bound */
	v->limit = LIMIT_AMBIGUOUS;
}

void quicflow_record(const struct flow *f, struct flow_record *r)
{
	const struct quic_conn *q = f->quic;
	r->transport = 17;
	/* the client moved to Handshake or 1-RTT packets, or off its first DCID: answered, the
	 * server not in sight */
	if (r->handshake == HS_SYN_ONLY && q && (q->validated || q->answered) && !f->s.pkts)
		r->handshake = HS_NO_SYNACK;
	r->quic_version = q ? (int64_t)q->version : NULL64;
	/* Google QUIC's packets (Q046-Q050) are not read: what they would show is unknown, not 0;
	 * a version negotiation is IETF's invariant packet, read for every version */
	bool read = q && !q->gquic;
	r->quic_retry = read ? q->retry : NULL64;
	r->quic_vn = q ? q->vn : NULL64;
	r->quic_0rtt = read ? q->zero_rtt : NULL64;
	r->quic_spin = read ? q->spin : NULL64;
	/* what the 3x limit compares needs both directions: with one alone (a span port, an
	 * asymmetric path) the other's bytes, and when the address was validated, are unknown */
	bool both = q && f->c.pkts && f->s.pkts && !q->gquic_old;
	r->quic_c_initial = q && q->c_initial ? (int64_t)q->c_initial : NULL64;
	r->quic_c_preval = both ? (int64_t)q->c_preval : NULL64;
	r->quic_s_preval = both ? (int64_t)q->s_preval : NULL64;
	struct ff_verdict v;
	quicflow_verdict(f, 1, &v);
	r->quic_amp_limited = both && f->s.ff.state == FF_CLOSED && !f->lost
	                              ? v.limit == LIMIT_AMPLIFICATION
	                              : NULL64;
	/* one round trip, one more for a Retry, for a version negotiation and for a server's
	 * flight the amplification limit stopped; known once the client sent 1-RTT data and the
	 * server's datagrams (a Retry, a version negotiation) are in sight, and not for Google
	 * QUIC's packets, whose Retry would go unseen */
	r->quic_hs_rtts = both && read && q->c_short && !f->lost
	                          ? 1 + q->retry + q->vn + (int64_t)(v.limit == LIMIT_AMPLIFICATION)
	                          : NULL64;
	snprintf(r->alpn, sizeof(r->alpn), "%s", q ? q->alpn : "");
	r->c.acked_unseen = r->s.acked_unseen = NULL64; /* no sequence numbers in sight */
	if (q && q->sni[0] && !r->server_name[0])
		snprintf(r->server_name, sizeof(r->server_name), "%s", q->sni);
}

void quicflow_free(struct flow *f)
{
	if (f->transport != 17 || !f->quic) /* a TCP flow's name hunt shares the pointer */
		return;
	free(f->quic->hello);
	free(f->quic->filled);
	free(f->quic);
	f->quic = NULL;
}

bool quicflow_doubled(const struct flow *f) { return f->quic && f->quic->doubled; }

void quicflow_saw_copy(struct flow *f)
{
	if (f->quic)
		f->quic->doubled = true;
}
