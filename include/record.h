/* record: one finished flow as the sinks see it, and the flows table's columns. */
#ifndef IWSCOPE_RECORD_H
#define IWSCOPE_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#define NULL64 INT64_MIN /* "unknown": written as SQL NULL, never as 0 */

/* a p0f option layout of the SYN's first SYN_LAYOUT_MAX (16) options (flow.h): options past
 * the 16th are cut silently, olayout still counts as known and no counter records it (the runs'
 * syn_opts_cut counts SYNs whose options the snaplen cut, not these); an option whose text would
 * not fit in the 128 bytes ends the layout there (classify_olayout) */
#define OLAYOUT_MAX 128
#define IW_CLASS_MAX 16      /* ">=IW4294967295" */
#define APP_PROTO_MAX 64     /* nDPI's "master.app" name */
#define APP_CATEGORY_MAX 48  /* nDPI's category names (the longest is 33) */
#define SERVER_NAME_MAX 128  /* nDPI keeps at most 80 bytes of SNI / Host, 48 of an SSH banner */

/* What one side advertised and sent; the first-flight fields describe it as a sender. Labels
 * are enums (classify.h, flow.h) that become names at the sinks (record_value). */
struct side_record {
	int64_t syn_win, mss, wscale, sack, ts, tfo, ttl, ittl, syn_bytes, syn_retx, quirks;
	int64_t pkts, bytes;
	int64_t iw_bytes, iw_segs, smss, ff_start_us, ff_end_us, iw_pause_us;
	int64_t acked_unseen; /* its sequence numbers the peer acknowledged, never captured */
	uint8_t rwnd_class;  /* enum rwnd_class, from this side's SYN */
	uint8_t iw_limit;    /* enum ff_limit */
	uint8_t iw_rule;     /* enum ff_rule; RULE_NONE without a first flight */
	uint8_t iw_end;      /* enum ff_end, valid with iw_rule */
	uint8_t iw_next;     /* enum ff_next */
	uint8_t iw_std;      /* enum iw_std */
	bool olayout_known;  /* the SYN was seen with its options whole */
	char olayout[OLAYOUT_MAX];   /* p0f notation */
	char iw_class[IW_CLASS_MAX]; /* "IWn", ">=IWn" or "" */
};

/* How nDPI named the flow: not run (--no-dpi), from the payload, guessed, or nothing. */
/* How nDPI named the application (flows.dpi_method): RDPI_OFFPORT is a payload match nDPI itself
 * doubts (its protocol is off its usual port, nDPI's "known protocol on non-standard port" risk). */
enum record_dpi { RDPI_OFF = 0, RDPI_PAYLOAD, RDPI_GUESS, RDPI_NONE, RDPI_OFFPORT };

/* Whether nDPI's answer is weak: a pattern it doubts itself (offport: MQTT's in an LDAP flow on
 * 389) or ports and addresses only (guess). Text outputs (report tables, -v lines, the
 * dashboard) show such an application with RECORD_WEAK_MARK after it ("MQTT?") and say what
 * the mark means once (RECORD_WEAK_LEGEND); the report's SQL asks the same of dpi_method. */
static inline bool record_dpi_weak(uint8_t m) { return m == RDPI_OFFPORT || m == RDPI_GUESS; }
#define RECORD_WEAK_MARK "?"
#define RECORD_WEAK_LEGEND "app?: nDPI's guess is weak (dpi_method offport: off its port; guess: by port)"

/* One finished flow as the sinks see it, every field final. Self-contained (numbers, enums,
 * fixed-size text): a plain copy is valid on any thread. Empty text is NULL. */
struct flow_record {
	int64_t ts_us;
	int ip_ver;
	char client_ip[46], server_ip[46];
	int client_port, server_port;
	uint8_t handshake;   /* enum handshake_kind */
	uint8_t end_reason;  /* enum end_reason */
	uint8_t dpi_method;  /* enum record_dpi */
	int64_t syn_us, synack_us, ack_us, rtt_us, rtt_c_us, rtt_s_us;
	struct side_record c, s;
	int64_t duration_us;
	char app_proto[APP_PROTO_MAX], app_category[APP_CATEGORY_MAX], server_name[SERVER_NAME_MAX];
	int64_t flow_key;     /* unique within the run */
	/* the transport, and what only QUIC has (NULL64 / empty for TCP): docs/METHOD.md "QUIC" */
	uint8_t transport;    /* 6 TCP, 17 QUIC */
	int64_t quic_version; /* as on the wire, after any version negotiation */
	int64_t quic_retry, quic_vn, quic_0rtt, quic_spin; /* 0 or 1: seen */
	int64_t quic_c_initial;   /* bytes of the client's first Initial datagram (UDP payload) */
	int64_t quic_c_preval, quic_s_preval; /* each side's bytes before the client's address was
	                                       * validated, as seen here */
	int64_t quic_amp_limited; /* 1: the server's first flight stopped at 3 x the client's bytes */
	int64_t quic_hs_rtts;     /* round trips before the client's first 1-RTT packet */
	char alpn[32];            /* the first ALPN protocol the client offered */
	const char *source_file;  /* the capture file the flow began in (a name the run keeps
	                           * for its whole length), NULL live */
	int update;           /* 1: the flow's row was written before; this is its final state */
};

/* The flows table's columns as the record fills them, in schema/sqlite.sql's order, without
 * probe and run_id (the sink's own): the one list the SQL insert, its binds, the JSON lines and
 * the schema test come from. */
enum column_type { COL_INT, COL_TEXT };
struct record_column {
	const char *name;
	uint8_t type;        /* enum column_type */
};
extern const struct record_column record_columns[];
extern const unsigned record_ncolumns;

/* Column col of r: an integer (*i, NULL64 for NULL) or a text (*s, NULL for NULL; static or
 * inside r). Returns the column's type. */
int record_value(const struct flow_record *r, unsigned col, int64_t *i, const char **s);

struct flow;
struct flow_table;
/* Fills r from flow f, open in t (DPI fields empty: dpi_finish adds them); asked_name (names.c:
 * the server name the client asked for, or NULL) is the server name. */
void record_build(const struct flow_table *t, const struct flow *f, const char *asked_name,
                  struct flow_record *r);

/* The run as the sinks see it; counters are final only in run_end. */
struct run_info {
	const char *probe;    /* capture point: --probe, default the host name */
	int64_t started_us, finished_us;
	const char *source;   /* files or interface, as given */
	/* a capture file's run where an earlier run of the same probe and source is: refused
	 * (the default: its flows would count twice), added beside it (--append), or put in its
	 * place (--replace). Interfaces are never checked. */
	enum { RUN_NEW_ONLY = 0, RUN_APPEND, RUN_REPLACE, RUN_LIVE } again;
	/* at the end, when an earlier run read the same capture (its digest, under another name or
	 * through a pipe): RUN_NEW_ONLY warns, RUN_APPEND says nothing, RUN_REPLACE takes its
	 * place; RUN_LIVE: not checked */
	int again_same;
	const char *filter;   /* BPF expression or NULL */
	const char *status;   /* running, complete, partial, interrupted, failed */
	const char *options;  /* other options that change results, e.g. "timing" */
	const char *libpcap_version, *ndpi_version;
	uint64_t packets, bytes, tcp_packets, decode_errors, flows, evicted, skipped_files;
	uint64_t quic_packets; /* UDP datagrams of QUIC connections */
	/* what eviction cost: evicted flows whose verdicts were not final yet, and packets of
	 * evicted connections that came after (known as theirs: no second row) */
	uint64_t evicted_unsettled, evicted_later;
	/* what the capture lacks (docs/METHOD.md): flows with one side's packets only, SYN and
	 * SYN-ACK frames whose options the snaplen cut, bytes acknowledged but never captured */
	uint64_t one_direction, syn_opts_cut, acked_unseen;
	int64_t pcap_received, pcap_dropped; /* live capture only, else NULL64 */
	const char *skipped;  /* the input files skipped, a line each ("FILE: why"), or NULL */
	const char *digest;   /* the capture's first records, digested (hex), or NULL (live) */
	int64_t dpi_peak_states;              /* most nDPI flow states alive at once; NULL64 without nDPI */
	uint64_t reasons[16];  /* per decode_result */
	const char *reason_names[16];
	unsigned nreasons;
};

#endif
