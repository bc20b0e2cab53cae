/* flow: per-connection state and the bounded bidirectional flow table. */
#ifndef IWSCOPE_FLOW_H
#define IWSCOPE_FLOW_H

#include <stdbool.h>
#include <stdint.h>

#include "names.h"
#include "pkt.h"

/* option kinds kept from a SYN or SYN-ACK for its layout: handshake.c keeps the first 16 and
 * drops the rest without a mark or a counter (40 option bytes hold up to 40 options, e.g.
 * NOPs; the record's olayout says so too) */
#define SYN_LAYOUT_MAX 16

/* A SYN's option layout (the record's olayout, classify_olayout). Few distinct ones are open at
 * once, so a flow keeps an index into its table's set of them (flow_set_layout). */
struct syn_layout {
	uint8_t len;
	uint8_t eol_pad;                /* bytes after an EOL (p0f "eol+N") */
	uint8_t kinds[SYN_LAYOUT_MAX];  /* option kinds in wire order, the first len */
};

/* syn_info.layout: an index + 1 into the flow table's layouts, or one of these */
#define SYN_LAYOUT_EMPTY 0         /* no options */
#define SYN_LAYOUT_TABLE_MAX 0xfffdu /* distinct layouts a table holds at once, 1 .. this */
#define SYN_LAYOUT_LOST 0xfffeu    /* not kept: the table full and no memory for the flow's own
                                    * copy; the olayout is unknown */
#define SYN_LAYOUT_WIDE 0xffffu    /* the table full: the flow's own copy, in wide->layout */

/* What one side advertised in its SYN (client) or SYN-ACK (server); valid with its side's
 * syn_seen, its time is the side's syn_off (flow_time). */
struct syn_info {
	uint32_t tsval;      /* valid with OPT_TS */
	uint32_t tsecr;      /* ... and what it echoed (a SYN-ACK: the client's SYN's TSval) */
	uint32_t payload;    /* data bytes carried on the SYN (TFO) */
	uint16_t win;        /* unscaled, as in every SYN (RFC 7323 2.2) */
	uint16_t mss;        /* valid with OPT_MSS */
	uint16_t retx;       /* retransmissions of this SYN / SYN-ACK */
	uint8_t present;     /* OPT_* seen in it */
	uint8_t wscale;      /* valid with OPT_WS */
	uint8_t ttl;
	uint8_t quirks;      /* Q_*; Q_OPT_CUT means absent options are unknown */
	uint16_t layout;     /* SYN_LAYOUT_*, or its index + 1 in the flow table (flow_layout) */
};

enum ff_state { FF_WAIT = 0, FF_OPEN, FF_CLOSED };
/* Why a first flight stopped (docs/METHOD.md "Why the flight stopped"). */
enum ff_limit {
	LIMIT_UNKNOWN = 0, LIMIT_NONE, LIMIT_CWND, LIMIT_RWND, LIMIT_APP, LIMIT_LOSS, LIMIT_NAGLE,
	LIMIT_AMBIGUOUS,
	LIMIT_AMPLIFICATION /* QUIC: the server's 3x limit before the client's address was validated */
};
/* Which rule decided flight membership: the TSecr echo or timing against the handshake. */
/* RULE_ECHO: the receiver's packets are not in the capture (one direction only): the sender's
 * own TSecr and ACK field show what it had processed. */
enum ff_rule { RULE_NONE = 0, RULE_TSECR, RULE_TIMING, RULE_ECHO };
/* What located the flight's end: the first new data after it was excluded by TSecr, by
 * timing, or came after a pause (rule 3); END_NONE: no new data followed. */
enum ff_end { FF_END_NONE = 0, FF_END_TSECR, FF_END_TIMING, FF_END_PAUSE };
/* What the sender's next new data came after. */
enum ff_next {
	FF_NEXT_NONE = 0, /* nothing new followed */
	FF_NEXT_ACK,      /* on the heels of an ACK of its data: released by it */
	FF_NEXT_TIMER,    /* after a pause with the flight's TSecr: no ACK processed (TLP, RTO) */
	FF_NEXT_REQUEST,  /* after the receiver sent new data or a FIN of its own */
	FF_NEXT_LATE,     /* later than 1.5 handshake RTTs, or with no ACK seen before it */
	FF_NEXT_BURST,    /* on the heels of an ACK, as a flight more than twice this one: slow
	                   * start at most doubles, so the window had not stopped this one */
	FF_NEXT_PACED     /* on the heels of an ACK, but S's clock shows no pause before it: S was
	                   * still sending (paced, or a slow link at S) when the ACK came */
};

/* One sender's first flight (docs/METHOD.md). Sequence numbers are relative to the sender's
 * ISN + 1. */
struct first_flight {
	/* its first packet at the vantage point, in us after the flow's first_us: read and set it
	 * with ff_first_us and ff_set_first_us (one that does not fit goes to the flow's wide,
	 * exact: first_wide) */
	int32_t first_off;
	/* the flight's own times, in us after its first packet (set only once it is; a capture's
	 * time may step back): read and set them with ff_last_us and ff_a1_us, which saturate past
	 * +-35 minutes and then mark time_cut. */
	int32_t last_off;           /* last flight-1 packet */
	int32_t a1_off;             /* first ACK of this sender's data from the receiver */
	uint32_t bytes;             /* new payload bytes in flight 1 */
	uint32_t segs;              /* sum of ceil(payload / smss) over flight-1 packets */
	uint32_t snd_nxt;           /* highest relative sequence sent so far (new data end) */
	uint32_t a1_segs, a1_bytes; /* the flight's count when A1 passed the vantage point */
	uint16_t rwnd_field;        /* receiver's window field in its last segment before data (a
	                             * side's last_win: 16 bits) */
	uint16_t min_inside;        /* smallest payload of a flight packet that another followed */
	uint16_t smss;              /* nominal: receiver MSS minus the sender's per-segment options */
	uint16_t max_payload;       /* largest flight-1 packet payload */
	uint16_t n_max;             /* flight-1 packets of exactly max_payload */
	uint16_t last_payload;      /* payload of the flight's last packet */
	uint8_t state : 2;          /* enum ff_state */
	uint8_t rule : 2;           /* enum ff_rule */
	uint8_t end : 2;            /* enum ff_end, once closed */
	bool a1_seen : 1;
	bool a1_before_next : 1;        /* A1 was seen before the next new data */
	bool next_pause : 1;            /* the next new data came after a pause (rule 3) */
	bool next_timer : 1;            /* ... and echoed the flight's TSecr: a timer send */
	bool last_ts : 1;               /* last_tsecr valid */
	bool r_ts_before : 1;           /* r_tsval, before A1, valid */
	bool rwnd_from_syn : 1;         /* rwnd_field came from the receiver's SYN: never scaled */
	bool rwnd_known : 1;
	bool loss : 1;                  /* hole or retransmission inside flight 1 */
	bool r_data_before_next : 1;    /* receiver sent new data or a FIN before the next data */
	bool f2_done : 1;               /* f2_segs is final */
	bool f2_last_ts : 1;
	bool one_dir : 1;               /* the receiver had sent nothing when the flight began */
	bool next_unsure : 1;           /* the end was located by a pause that a late tail, not the
	                             * sender, may have made: no exact verdict */
	bool paced_end : 1;             /* S's clock shows the flight spread over ticks and no
	                                 * pause before the next data: not the window's stop */
	bool timer_gap : 1;             /* one direction: a silence inside the flight that S's clock
	                             * does not show as a hold on the way (a timer may have sent
	                             * what followed it) */
	bool time_cut : 1;              /* a time below did not fit its offset: no exact verdict */
	bool probe_sent : 1;            /* S sent a segment below its data's end without data (a
	                                 * keep-alive) since R's last ACK: R's answer repeats it */
	bool first_wide : 1;            /* its first packet's time is in the flow's wide */
	bool next_wide : 1;             /* ... and the next data's */
	bool gapped : 1;                /* a silence inside it was marked: the segments and bytes
	                                 * before it are in the flow's wide (ff_gap) */
	bool ragged : 1;                /* a packet of it not a multiple of S's own full segment
	                                 * (its SYN's MSS less its options), or none known */
	bool f2_ragged : 1;             /* ... of the next flight (f2_segs, f2_bytes) */
	/* What membership is decided by while the flight is open, and what is counted once it
	 * closed (the next data, the next flight), never both: they share their bytes (the first
	 * 28, not 48). A field of the other state reads as garbage, so each is read only in its
	 * own (the state, or what implies it: the verdict's next kind other than none). */
	union {
		struct { /* FF_OPEN (and flight_close, which reads them before it writes the others) */
			/* R's TSval: the last one before S's data (with r_ts_before) until A1, then A1's;
			 * one direction (rule echo, R not seen yet), S's ACK field on its first data */
			uint32_t r_tsval;
			uint32_t first_tsecr;       /* the sender's TSecr on its first data */
			uint32_t first_tsval, last_tsval; /* the sender's TSval on the flight's first and last */
			uint32_t last_tsecr;        /* TSecr of the flight's last packet (valid with last_ts) */
			uint32_t max_gap_us;        /* the flight's own spacing: largest silence inside it */
			uint16_t max_tsstep;        /* largest step of S's TSval between two flight-1 packets */
		};
		struct { /* FF_CLOSED */
			/* the first new data after the flight, in us after its first packet (any time
			 * later, an idle connection's next data hours on: read and set it with
			 * ff_next_us, ff_set_next_us, which keep one that does not fit in the flow's
			 * wide, exact: next_wide) */
			int32_t next_off;
			uint32_t fl_end;            /* relative sequence where flight 1 ended */
			uint32_t f2_last_tsval;     /* the next flight's last TSval (valid with f2_last_ts) */
			uint16_t next_payload;      /* payload of the first new data after the flight */
			uint16_t echo_adv;          /* one direction: how far the echo had moved on the
			                             * next data (ticks, saturating) */
			uint16_t f2_segs;           /* segments of the next flight, until an ACK of its
			                             * data or a pause (a lower bound at any vantage point);
			                             * saturates */
			uint16_t f2_last_64us;      /* its last packet, in 64 us after next (4.2 s at most) */
			uint32_t f2_bytes;          /* its new bytes (saturates): with super-packets, more
			                             * segments than f2_segs counts while smss is unknown */
		};
	};
};

/* The sequence a side skipped in the capture (valid with its isn_known): the newest hole [lo,
 * hi) as later segments fill it, where that hole opened (mark), and what is left of older holes,
 * all below it (unseen). All zero until the capture first skips some (flow_side_update): then
 * out of line, in the flow's wide (flow_holes). */
struct side_holes {
	uint32_t lo, hi, mark, unseen;
};

/* One endpoint of a flow and everything it sent (its address and port are in struct flow,
 * next to the hash chain, so a lookup reads one cache line of the flow). */
struct side {
	bool isn_known : 1;
	bool fin : 1; bool rst : 1;
	bool ts_seen : 1;          /* last_tsval valid */
	bool win_known : 1;
	bool win_is_syn : 1;       /* last_win came from its SYN */
	bool ack_seen : 1;         /* it sent a segment with ACK: ack_max valid */
	bool syn_seen : 1;         /* its SYN (client) or SYN-ACK (server) was seen: syn valid */
	bool holed : 1;            /* the capture skipped some of its sequence: wide->holes */
	bool counts_wide : 1;      /* its counts passed 32 bits: wide->pkts, wide->bytes */
	bool doubled : 1;          /* the capture holds its packets twice (a copy of its SYN, or
	                            * of a packet whose IPv4 ID names it: copies.h) */
	bool id_seen : 1;          /* it sent an IPv4 packet with an ID other than 0: id_low */
	bool ids_vary : 1;         /* ... and its IDs changed from one to the next: an ID names a
	                            * transmission (a stack may keep one ID for all) */
	uint8_t id_low : 3;        /* the low bits of its last such ID */
	uint16_t last_win;
	uint32_t isn;
	uint32_t snd_max;      /* highest absolute sequence end it sent (valid with isn_known) */
	uint32_t ack_max;      /* highest ACK it sent, absolute, in the peer's sequence space */
	uint32_t last_tsval;
	struct syn_info syn;
	/* packets and payload bytes it sent (flow_count_sent): 32 bits here, 8 bytes less than
	 * 64; past that in wide (counts_wide), exact: read them with flow_pkts, flow_bytes. pkts is
	 * nonzero once it sent anything, either way. */
	uint32_t pkts, bytes;
	struct first_flight ff;
};

enum handshake_kind {
	HS_NONE = 0,   /* first seen mid-stream */
	HS_SYN_ONLY,   /* SYN unanswered */
	HS_REFUSED,    /* SYN answered by RST */
	HS_NO_ACK,     /* SYN and SYN-ACK, no ACK seen */
	HS_COMPLETE,   /* SYN, SYN-ACK, ACK */
	HS_NO_SYN,     /* began with the SYN-ACK */
	HS_SIMULTANEOUS,
	HS_NO_SYNACK   /* SYN, then the client's ACKs or QUIC Handshake packets: answered, the
	                * SYN-ACK not in the capture (one direction only) */
};

enum end_reason { END_NONE = 0, END_FIN, END_RST, END_IDLE, END_EVICTED, END_REUSE, END_CAPTURE };

/* The times of a flow's handshake at the vantage point. A time of 0 is "not seen", as a capture's
 * time 0 always was. QUIC's are its handshake's (quicflow.c). */
enum flow_time {
	FT_SYN = 0, /* the client's first SYN */
	FT_SYNACK,  /* the server's first SYN-ACK */
	FT_ACK,     /* the client's segment completing the handshake */
	FT_C_SYN,   /* what the client's syn_info was taken from: its first SYN (= FT_SYN) */
	FT_S_SYN,   /* ... and the server's: its SYN-ACK (= FT_SYNACK), or its SYN in a
	             * simultaneous open */
	FT_N
};

/* What a flow holds out of line, allocated (zeroed, about 200 bytes) the first time one of these
 * does not fit inline, and freed with the flow (flow_release): a time past its offset
 * (flow_set_time, flow_saw, ff_set_first_us, ff_set_next_us), a SYN layout the table has no
 * room for (flow_set_layout), counts past 32 bits (flow_count_sent), the capture's first hole in
 * a side's sequence (flow_side_update), a marked silence in a first flight (ff_set_gap). Each
 * part is valid with its bit in the flow; arrays of two are the client's and the server's. An
 * IPv6 flow's addresses are not here but in its table's pool (flow_addr). */
struct flow_wide {
	uint64_t us[FT_N]; /* every time of the flow, exact, once one did not fit its offset */
	struct syn_layout layout[2]; /* with SYN_LAYOUT_WIDE */
	uint64_t last_us;            /* with last_wide */
	uint64_t ff_first_us[2], ff_next_us[2]; /* with the first flight's first_wide, next_wide */
	/* the segments and bytes of a first flight before its first marked silence (docs/METHOD.md
	 * "ambiguous"), with its gapped */
	uint32_t gap_segs[2], gap_bytes[2];
	uint64_t pkts[2], bytes[2];  /* with the side's counts_wide */
	struct side_holes holes[2];  /* with the side's holed */
};

struct dpi_flow; /* nDPI's state, owned by dpi.c, NULL once decided */
struct quic_conn; /* quicflow.c */

/* What nDPI made of a flow so far (dpi.c fills it): 16 bytes, held by the DPI stage for its
 * slot, or, for a flow nDPI inspects on the table's own thread (no stage), by the flow table's
 * pool (flow_dpi_state). nDPI's state and the name it found are never held at once (the name is
 * copied out as nDPI's state is freed), so they share a pointer. */
struct dpi_state {
	union {
		struct dpi_flow *nf;    /* method == DPI_NONE: nDPI's flow state while it decides, or NULL */
		char *server_name;      /* once decided: malloc'd, or NULL */
	} u;
	uint16_t app_master, app_proto; /* nDPI protocol ids */
	uint16_t pkts;                  /* payload packets inspected */
	uint8_t app_category;           /* ndpi_protocol_category_t: all below 256 */
	uint8_t method;                 /* enum dpi_method */
};

/* One connection, 352 bytes (the first cache line: the key, links, times and the nDPI index;
 * then each side in two, of which its first flight 76 and its SYN 24; then the name hunt or
 * QUIC pointer, wide and the row's key). What is rare lives out of line (wide), what one phase
 * of a first flight needs shares bytes with what the other does; every field is exact. */
struct flow {
	/* what flow_lookup and flow_touch read, first */
	uint32_t self;             /* own slot: index + 1 */
	uint32_t hnext;            /* hash chain: index + 1, 0 = end */
	uint16_t c_port, s_port;   /* client's and server's */
	uint8_t ip_ver;
	uint8_t transport;         /* 6 TCP, 17 UDP (a QUIC connection: quic below) */
	uint8_t list : 2;          /* which expiry list holds it */
	uint8_t end_reason : 3;    /* enum end_reason */
	bool simultaneous : 1;
	bool roles_guessed : 1;    /* client/server chosen by ports: no SYN seen */
	bool in_use : 1;
	bool written : 1;          /* its row was written early (verdicts final before its end) */
	uint8_t hs_seen : 3;       /* FT_SYN, FT_SYNACK, FT_ACK seen: a bit each */
	bool times_wide : 1;       /* every time is in wide->us, exact: one did not fit its offset */
	bool times_lost : 1;       /* one did not fit, and there was no memory to keep it: every
	                            * time reads as unknown (0), whether each was seen still holds */
	bool last_wide : 1;        /* the last packet's time is in wide->last_us */
	bool lost : 1;             /* something else did not fit inline, and there was no memory
	                            * for wide: the row's counts, duration, acked_unseen and
	                            * first-flight verdicts are unknown (NULL) */
	/* the client's and the server's address: IPv4's here, as on the wire (8 bytes, not 32); an
	 * IPv6 flow's pair is in its table's pool, addr[0] its index there + 1 (read them with
	 * flow_addr) */
	uint32_t addr[2];
	uint32_t lprev, lnext;     /* expiry list links: index + 1 */
	uint64_t first_us;         /* its first packet */
	/* its last packet (the latest time seen), in us after first_us: read it with
	 * flow_last_us; 71 minutes fit, a flow longer than that keeps it in wide (last_wide) */
	uint32_t last_off;
	/* FT_SYN, FT_SYNACK, FT_ACK in us after first_us (a capture's time may step back); FT_C_SYN
	 * and FT_S_SYN share FT_SYN's and FT_SYNACK's, the same times but in a simultaneous open:
	 * 28 bytes less than five uint64_t. Read and set them with flow_time and flow_set_time,
	 * which keep a time that does not fit (or does not share) in wide, exact. */
	int32_t hs_off[3];
	uint32_t dpi_idx;          /* its nDPI state in the table's pool (flow_dpi_state), + 1; 0 =
	                            * none */
	uint16_t dpi_sent;         /* payload packets handed to the DPI stage */
	uint16_t source_file;      /* the capture file it began in (engine_opts.source_files) */
	struct side c, s;          /* client (sent the SYN) and server */
	/* what a TCP flow needs and what a QUIC one does, never both (transport says which):
	 * 8 bytes less than the two */
	union {
		struct name_hunt hunt;  /* TCP: the name the client asks for (names.c), on this
		                         * thread always */
		struct quic_conn *quic; /* QUIC: the connection's own state (quicflow.c), or NULL */
	};
	struct flow_wide *wide;    /* what does not fit above, rarely (struct flow_wide), else NULL */
	uint64_t key;              /* serial number within the run: the row's flow_key */
};

/* f's wide, allocated (zeroed) if it has none; NULL without memory, and f is lost. */
struct flow_wide *flow_wide(struct flow *f);

/* Which side of f sd is: 0 the client, 1 the server. */
static inline int flow_end(const struct flow *f, const struct side *sd)
{
	return sd == &f->s;
}

/* The packets and payload bytes side sd of f sent. */
static inline uint64_t flow_pkts(const struct flow *f, const struct side *sd)
{
	return sd->counts_wide ? f->wide->pkts[flow_end(f, sd)] : sd->pkts;
}
static inline uint64_t flow_bytes(const struct flow *f, const struct side *sd)
{
	return sd->counts_wide ? f->wide->bytes[flow_end(f, sd)] : sd->bytes;
}

void flow_count_wide(struct flow *f, struct side *sd, uint32_t len);

/* Counts a packet of len payload bytes sent by side sd of f: in 32 bits, past that in wide,
 * exact (without memory for it f is lost, and they stop at their 32-bit maximum). */
static inline void flow_count_sent(struct flow *f, struct side *sd, uint32_t len)
{
	if (!sd->counts_wide && sd->pkts < UINT32_MAX && sd->bytes <= UINT32_MAX - len) {
		sd->pkts++;
		sd->bytes += len;
		return;
	}
	flow_count_wide(f, sd, len);
}

/* The sequence side sd of f skipped in the capture (all zero: none). */
static inline const struct side_holes *flow_holes(const struct flow *f, const struct side *sd)
{
	static const struct side_holes none;
	return sd->holed ? &f->wide->holes[flow_end(f, sd)] : &none;
}

/* Whether time w of f was seen. */
static inline bool flow_seen(const struct flow *f, enum flow_time w)
{
	if (w == FT_C_SYN)
		return f->c.syn_seen;
	if (w == FT_S_SYN)
		return f->s.syn_seen;
	return (f->hs_seen >> w & 1u) != 0;
}

/* Time w of f in us: 0 when not seen, or when it was lost (times_lost: unknown). */
static inline uint64_t flow_time(const struct flow *f, enum flow_time w)
{
	if (!flow_seen(f, w) || f->times_lost)
		return 0;
	if (f->times_wide)
		return f->wide->us[w];
	int32_t off = f->hs_off[w == FT_C_SYN ? FT_SYN : w == FT_S_SYN ? FT_SYNACK : w];
	return f->first_us + (uint64_t)(int64_t)off;
}

/* The time of side sd's SYN (f->c's or f->s's), as flow_time. */
static inline uint64_t flow_syn_time(const struct flow *f, const struct side *sd)
{
	return flow_time(f, sd == &f->c ? FT_C_SYN : FT_S_SYN);
}

/* Sets time w of f to t (f->first_us set before), 0 = not seen. A time more than 35 minutes
 * from first_us (a handshake long after the flow's first packet, a capture's clock stepping
 * back), or another than the one it shares an offset with (a simultaneous open's), moves every
 * time of f to f->wide, exact; without memory for it they read as unknown (times_lost). */
void flow_set_time(struct flow *f, enum flow_time w, uint64_t t);

/* The time of f's last packet (the latest seen). */
static inline uint64_t flow_last_us(const struct flow *f)
{
	return f->last_wide ? f->wide->last_us : f->first_us + f->last_off;
}

void flow_set_last_wide(struct flow *f, uint64_t t);

/* A packet of f at time t: its last packet's time, if later than the latest so far (never
 * before first_us). */
static inline void flow_saw(struct flow *f, uint64_t t)
{
	if (t <= flow_last_us(f))
		return;
	uint64_t d = t - f->first_us;
	if (!f->last_wide && d <= UINT32_MAX)
		f->last_off = (uint32_t)d;
	else
		flow_set_last_wide(f, t);
}

/* The first flight ff of f (f->c.ff or f->s.ff): its first packet's time, and the first new data
 * after it (valid once closed). */
static inline uint64_t ff_first_us(const struct flow *f, const struct first_flight *ff)
{
	if (ff->first_wide)
		return f->wide->ff_first_us[ff == &f->s.ff];
	return f->first_us + (uint64_t)(int64_t)ff->first_off;
}
static inline uint64_t ff_next_us(const struct flow *f, const struct first_flight *ff)
{
	if (ff->next_wide)
		return f->wide->ff_next_us[ff == &f->s.ff];
	return ff_first_us(f, ff) + (uint64_t)(int64_t)ff->next_off;
}

/* A time of the flight from its offset to its first packet's. */
static inline uint64_t ff_time(const struct flow *f, const struct first_flight *ff, int32_t off)
{
	return ff_first_us(f, ff) + (uint64_t)(int64_t)off;
}
static inline uint64_t ff_last_us(const struct flow *f, const struct first_flight *ff)
{
	return ff_time(f, ff, ff->last_off);
}
static inline uint64_t ff_a1_us(const struct flow *f, const struct first_flight *ff)
{
	return ff_time(f, ff, ff->a1_off);
}

/* The segments and bytes of ff (f's) before its first marked silence; 0: none marked. */
static inline uint32_t ff_gap_segs(const struct flow *f, const struct first_flight *ff)
{
	return ff->gapped ? f->wide->gap_segs[ff == &f->s.ff] : 0;
}
static inline uint32_t ff_gap_bytes(const struct flow *f, const struct first_flight *ff)
{
	return ff->gapped ? f->wide->gap_bytes[ff == &f->s.ff] : 0;
}

/* Marks ff's first silence, after segs segments and bytes bytes (segs > 0): in f's wide
 * (without memory for it f is lost: no verdict). */
void ff_set_gap(struct flow *f, struct first_flight *ff, uint32_t segs, uint32_t bytes);

/* Sets the time of ff's first packet (when it opens) and of the next new data after it (as it
 * closes): an offset where it fits, else in f's wide, exact (without memory for that f is lost:
 * no verdict). */
void ff_set_first_us(struct flow *f, struct first_flight *ff, uint64_t t);
void ff_set_next_us(struct flow *f, struct first_flight *ff, uint64_t t);

/* The offset of time t from ff's first packet, saturating: a flight (or its first ACK) over
 * 35 minutes long, or a capture's clock stepping back as far, marks time_cut (its times are
 * bounds, not exact). */
static inline int32_t ff_offset(const struct flow *f, struct first_flight *ff, uint64_t t)
{
	int64_t d = (int64_t)(t - ff_first_us(f, ff));
	if (d > INT32_MAX || d < INT32_MIN) {
		ff->time_cut = true;
		return d > 0 ? INT32_MAX : INT32_MIN;
	}
	return (int32_t)d;
}
static inline void ff_set_last_us(const struct flow *f, struct first_flight *ff, uint64_t t)
{
	ff->last_off = ff_offset(f, ff, t);
}
static inline void ff_set_a1_us(const struct flow *f, struct first_flight *ff, uint64_t t)
{
	ff->a1_off = ff_offset(f, ff, t);
}

typedef struct flow_table flow_table;

/* Creates a table holding at most cap flows; NULL on allocation failure. */
flow_table *flow_table_new(uint32_t cap);
void flow_table_free(flow_table *t);

/* Keeps l as the option layout of side dir's SYN (0 the client's, 1 the server's): shared with
 * every open flow of t with the same (SYN_LAYOUT_TABLE_MAX distinct ones at most), else f's own
 * copy in f->wide; without memory for that, unknown (SYN_LAYOUT_LOST). */
void flow_set_layout(flow_table *t, struct flow *f, int dir, const struct syn_layout *l);

/* The option layout of side dir's SYN (valid with its syn_seen), as long as f is open in t;
 * NULL: unknown (SYN_LAYOUT_LOST). */
const struct syn_layout *flow_layout(const flow_table *t, const struct flow *f, int dir);

/* Lets go of what f holds beside its slot (its layouts in t, wide): its times and layouts are not
 * to be read after. flow_remove calls it; a flow outside a table (a test's) calls it itself. */
void flow_release(flow_table *t, struct flow *f);

/* The address of f's client (end 0) or server (end 1), f open in t. */
struct ip_addr flow_addr(const flow_table *t, const struct flow *f, int end);

/* Finds the flow of p's 5-tuple (either direction); *dir = 0 when p was sent by the client. */
struct flow *flow_lookup(flow_table *t, const struct pkt *p, int *dir);

/* Prefetching for a packet soon to come (its tuple in p): the bucket its lookup will read,
 * and the flows of the bucket asked about one call before (by then that bucket is in cache).
 * Nothing changes; a lookup is as fast without it, only not sooner. */
void flow_prefetch(flow_table *t, const struct pkt *p);

/* Inserts a new flow for p's 5-tuple; src_is_client says which end is the client. Returns
 * NULL when the table is full (or without memory for a slot, or an IPv6 flow's addresses): the
 * caller evicts one (flow_oldest) and retries. */
struct flow *flow_insert(flow_table *t, const struct pkt *p, bool src_is_client);

/* Removes f from the table; the memory returns to the pool. */
void flow_remove(flow_table *t, struct flow *f);

/* Marks f active at time now and files it in the expiry list matching its state. */
void flow_touch(flow_table *t, struct flow *f);

/* The flow whose timeout ran out first at time now, or NULL. Call repeatedly to drain. */
struct flow *flow_expired(flow_table *t, uint64_t now_us);

/* The flow to evict when full: closed first, then half-open, then least recently active. */
struct flow *flow_oldest(flow_table *t);

/* Counts p, sent by side dir of f (0 the client), into that side's state (packets, bytes,
 * last TSval and window, highest sequence, holes). Call after handshake_update and
 * flight_update, which read the state before p. */
void flow_side_update(struct flow *f, int dir, const struct pkt *p);

/* Sequence numbers of side dir of f (0 the client) that its peer acknowledged but the capture
 * never showed (bytes, and 1 for a FIN it missed): the peer's highest ACK beyond the side's
 * highest sequence seen, and the holes below it that nothing filled. 0 when none, or when its
 * ISN is unknown (no SYN or SYN-ACK of it seen). */
uint32_t flow_acked_unseen(const struct flow *f, int dir);

/* Whether the rows show packets from one side only, and that side acknowledged something of
 * the other (an unanswered SYN is not a flow seen in one direction). */
bool flow_one_direction(const struct flow *f);

/* SYN and SYN-ACK frames of f whose options the snaplen cut (Q_OPT_CUT), retransmissions
 * included. */
unsigned flow_syn_opts_cut(const struct flow *f);

/* Remembers evicted flow f's connection, so that its later packets are known as its
 * continuation rather than a new connection (a bounded memory: the oldest may be forgotten). */
void flow_evicted_add(flow_table *t, const struct flow *f);

/* Whether p belongs to a connection evicted before (flow_evicted_add). */
bool flow_evicted_seen(const flow_table *t, const struct pkt *p);

/* The default cap: FLOW_MEM_PERCENT of the memory available now (MemAvailable) in flows, within
 * FLOW_CAP_MIN .. FLOW_CAP_MAX (config.h). Slots are allocated as flows open, so a large cap
 * costs nothing until that many flows are open at once. */
uint32_t flow_default_cap(void);

/* nDPI's state of f when nDPI inspects it on the table's thread (without a DPI stage: one
 * thread, or a live worker): taken from the table's pool as nDPI starts on the flow, so a flow
 * the DPI stage inspects holds none (16 bytes less a flow). flow_dpi_state takes one, zeroed, if f has none (NULL without
 * memory); flow_dpi_peek does not (NULL: none, i.e. all zero). flow_remove returns it to the
 * pool (free what it holds first: dpi_state_free). */
struct dpi_state *flow_dpi_state(flow_table *t, struct flow *f);
struct dpi_state *flow_dpi_peek(const flow_table *t, const struct flow *f);

uint32_t flow_count(const flow_table *t);
/* Bytes held per open flow (struct flow, its share of the buckets, the DPI stage's state of
 * it), for --version and the README figure. */
size_t flow_slot_bytes(void);

#endif
