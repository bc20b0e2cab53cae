/* The flows table's columns, in schema/sqlite.sql's order (without probe and run_id, the
 * sink's own), as X-macros over a flow_record: record.c makes the column list and
 * record_value() from them, store.c its binds (one direct call per column). */
#ifndef IWSCOPE_RECORD_COLUMNS_H
#define IWSCOPE_RECORD_COLUMNS_H

#include <stddef.h>

#include "classify.h"
#include "record.h"

static inline const char *record_text(const char *s) { return s[0] ? s : NULL; }

static inline const char *record_dpi_name(uint8_t m)
{
	switch (m) {
	case RDPI_PAYLOAD: return "payload";
	case RDPI_OFFPORT: return "offport";
	case RDPI_GUESS: return "guess";
	case RDPI_NONE: return "none";
	default: return NULL;
	}
}

/* X(name, type, value): the flows table's columns in schema order; value is an expression over
 * r (the record) or, for a side's columns, sd (its side_record), written c_NAME and s_NAME.
 * Order: FLOW_HEAD, SIDE, FLOW_TAIL, then SIDE_TAIL and FLOW_TAIL5 (columns added by
 * migrations, which put new columns last: a fresh table has them where an upgraded one does). */
#define FLOW_HEAD(X)                                                        \
	X(ts_us, INT, r->ts_us)                                                 \
	X(ip_ver, INT, r->ip_ver)                                               \
	X(client_ip, TEXT, r->client_ip)                                        \
	X(client_port, INT, r->client_port)                                     \
	X(server_ip, TEXT, r->server_ip)                                        \
	X(server_port, INT, r->server_port)                                     \
	X(handshake, TEXT, classify_handshake_name((enum handshake_kind)r->handshake)) \
	X(syn_us, INT, r->syn_us)                                               \
	X(synack_us, INT, r->synack_us)                                         \
	X(ack_us, INT, r->ack_us)                                               \
	X(rtt_us, INT, r->rtt_us)                                               \
	X(rtt_c_us, INT, r->rtt_c_us)                                           \
	X(rtt_s_us, INT, r->rtt_s_us)

#define SIDE(X)                                                             \
	X(syn_win, INT, sd->syn_win)                                            \
	X(mss, INT, sd->mss)                                                    \
	X(wscale, INT, sd->wscale)                                              \
	X(sack, INT, sd->sack)                                                  \
	X(ts, INT, sd->ts)                                                      \
	X(tfo, INT, sd->tfo)                                                    \
	X(ttl, INT, sd->ttl)                                                    \
	X(ittl, INT, sd->ittl)                                                  \
	X(olayout, TEXT, sd->olayout_known ? sd->olayout : NULL)                \
	X(quirks, INT, sd->quirks)                                              \
	X(syn_bytes, INT, sd->syn_bytes)                                        \
	X(syn_retx, INT, sd->syn_retx)                                          \
	X(rwnd_class, TEXT, classify_rwnd_name((enum rwnd_class)sd->rwnd_class)) \
	X(pkts, INT, sd->pkts)                                                  \
	X(bytes, INT, sd->bytes)                                                \
	X(iw_bytes, INT, sd->iw_bytes)                                          \
	X(iw_segs, INT, sd->iw_segs)                                            \
	X(smss, INT, sd->smss)                                                  \
	X(iw_limit, TEXT, classify_limit_name((enum ff_limit)sd->iw_limit))     \
	X(iw_class, TEXT, record_text(sd->iw_class))                           \
	X(iw_rule, TEXT, classify_rule_name((enum ff_rule)sd->iw_rule))         \
	X(iw_std, TEXT, classify_iw_std_name((enum iw_std)sd->iw_std))          \
	X(ff_start_us, INT, sd->ff_start_us)                                    \
	X(ff_end_us, INT, sd->ff_end_us)                                        \
	X(iw_end, TEXT, sd->iw_rule ? classify_end_rule_name((enum ff_end)sd->iw_end) : NULL) \
	X(iw_next, TEXT, classify_next_name((enum ff_next)sd->iw_next))         \
	X(iw_pause_us, INT, sd->iw_pause_us)

#define FLOW_TAIL(X)                                                        \
	X(duration_us, INT, r->duration_us)                                     \
	X(end_reason, TEXT, classify_end_name((enum end_reason)r->end_reason))  \
	X(app_proto, TEXT, record_text(r->app_proto))                          \
	X(app_category, TEXT, record_text(r->app_category))                    \
	X(server_name, TEXT, record_text(r->server_name))                      \
	X(dpi_method, TEXT, record_dpi_name(r->dpi_method))                     \
	X(flow_key, INT, r->flow_key)

#define SIDE_TAIL(X)                                                        \
	X(acked_unseen, INT, sd->acked_unseen)

/* version 5: the transport and QUIC's own (NULL for TCP) */
#define FLOW_TAIL5(X)                                                       \
	X(transport, TEXT, r->transport == 17 ? "quic" : "tcp")                 \
	X(quic_version, INT, r->quic_version)                                   \
	X(alpn, TEXT, record_text(r->alpn))                                     \
	X(quic_retry, INT, r->quic_retry)                                       \
	X(quic_vn, INT, r->quic_vn)                                             \
	X(quic_0rtt, INT, r->quic_0rtt)                                         \
	X(quic_spin, INT, r->quic_spin)                                         \
	X(quic_c_initial, INT, r->quic_c_initial)                               \
	X(quic_c_preval, INT, r->quic_c_preval)                                 \
	X(quic_s_preval, INT, r->quic_s_preval)                                 \
	X(quic_amp_limited, INT, r->quic_amp_limited)                           \
	X(quic_hs_rtts, INT, r->quic_hs_rtts)                                   \
	X(source_file, TEXT, r->source_file)

#endif
