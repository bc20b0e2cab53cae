/* record: one finished flow as the sinks see it, every field final and formatted. */
#ifndef IWSCOPE_RECORD_H
#define IWSCOPE_RECORD_H

#include <stdint.h>

#define NULL64 INT64_MIN /* "unknown": written as SQL NULL, never as 0 */

/* What one side advertised and sent; the first-flight fields describe it as a sender. */
struct side_record {
	int64_t syn_win, mss, wscale, sack, ts, tfo, ttl, ittl, syn_bytes, syn_retx, quirks;
	const char *olayout;    /* p0f notation, NULL when the SYN was not seen */
	const char *rwnd_class; /* receiver class from this side's SYN */
	int64_t pkts, bytes;
	int64_t iw_bytes, iw_segs, smss, ff_start_us, ff_end_us;
	const char *iw_limit, *iw_class, *iw_rule, *iw_std;
	const char *iw_end;     /* what located the flight's end: tsecr | timing | pause | none */
	const char *iw_next;    /* what the next new data came after: ack | timer | request | late */
	int64_t iw_pause_us;    /* silence before that next new data */
	char olayout_buf[128];
	char iw_class_buf[16];
};

struct flow_record {
	int64_t ts_us;
	int ip_ver;
	char client_ip[46], server_ip[46];
	int client_port, server_port;
	const char *handshake;
	int64_t syn_us, synack_us, ack_us, rtt_us, rtt_c_us, rtt_s_us;
	struct side_record c, s;
	int64_t duration_us;
	const char *end_reason;
	const char *app_proto, *app_category, *server_name, *dpi_method;
	int64_t flow_key;     /* unique within the run */
	int update;           /* 1: the flow's row was written before; this is its final state */
	char app_proto_buf[64];
};

/* The run as the sinks see it; counters are final only in run_end. */
struct run_info {
	const char *probe;    /* capture point: --probe, default the host name */
	int64_t started_us, finished_us;
	const char *source;   /* files or interface, as given */
	const char *filter;   /* BPF expression or NULL */
	const char *status;   /* running, complete, interrupted, failed */
	const char *options;  /* other options that change results, e.g. "timing" */
	const char *libpcap_version, *ndpi_version;
	uint64_t packets, bytes, tcp_packets, decode_errors, flows, evicted, skipped_files;
	int64_t pcap_received, pcap_dropped; /* live capture only, else NULL64 */
	int64_t dpi_peak_states;              /* most nDPI flow states alive at once; NULL64 without nDPI */
	uint64_t reasons[16];  /* per decode_result */
	const char *reason_names[16];
	unsigned nreasons;
};

#endif
