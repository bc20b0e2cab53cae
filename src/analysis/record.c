/* The flow record: built from a flow when it is written (verdicts become labels, classify.c),
 * and the flows table's columns as data. */
#include "record.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "classify.h"
#include "flight.h"
#include "handshake.h"
#include "quicflow.h"
#include "record_columns.h"

static int64_t opt_val(bool known, int64_t v) { return known ? v : NULL64; }

/* A SYN option the capture did not show: absent (0) when the options were whole, else
 * unknown. */
static int64_t opt_flag(const struct syn_info *si, uint8_t bit)
{
	if (si->present & bit)
		return 1;
	return (si->quirks & Q_OPT_CUT) ? NULL64 : 0;
}

static void side_syn_record(const flow_table *t, const struct flow *f, int dir,
                            struct side_record *r)
{
	const struct side *sd = dir == 0 ? &f->c : &f->s;
	const struct syn_info *si = &sd->syn;
	bool seen = sd->syn_seen;
	r->syn_win = opt_val(seen, si->win);
	r->mss = opt_val(seen && (si->present & OPT_MSS), si->mss);
	r->wscale = opt_val(seen && (si->present & OPT_WS), si->wscale);
	r->sack = seen ? opt_flag(si, OPT_SACKOK) : NULL64;
	r->ts = opt_val(seen && (si->present & OPT_TS), si->tsval);
	r->tfo = seen ? opt_flag(si, OPT_TFO) : NULL64;
	r->ttl = opt_val(seen, si->ttl);
	r->ittl = opt_val(seen, classify_ittl(si->ttl));
	r->syn_bytes = opt_val(seen, si->payload);
	r->syn_retx = opt_val(seen, si->retx);
	r->quirks = opt_val(seen, si->quirks);
	/* not seen, or cut by the snaplen (or not kept for want of memory): unknown */
	const struct syn_layout *l = seen ? flow_layout(t, f, dir) : NULL;
	r->olayout_known = l && !(si->quirks & Q_OPT_CUT);
	if (r->olayout_known)
		classify_olayout(r->olayout, sizeof(r->olayout), l);
	else
		r->olayout[0] = '\0';
	r->rwnd_class = (uint8_t)(seen ? classify_rwnd_class(si->win, (si->present & OPT_MSS) ? si->mss : 0)
	                               : RWND_NULL);
	r->pkts = f->lost ? NULL64 : (int64_t)flow_pkts(f, sd);
	r->bytes = f->lost ? NULL64 : (int64_t)flow_bytes(f, sd);
}

/* The verdict on a first flight and its evidence, and its labels (classify_flight). */
static void side_flight_record(const struct flow *f, int sender, struct side_record *r)
{
	struct ff_verdict v;
	if (f->transport == 17)
		quicflow_verdict(f, sender, &v);
	else
		flight_verdict(f, sender, &v);
	bool data = v.limit != LIMIT_UNKNOWN && v.limit != LIMIT_NONE;
	const struct first_flight *ff = sender == 0 ? &f->c.ff : &f->s.ff;
	r->iw_limit = (uint8_t)v.limit;
	r->iw_bytes = data ? v.bytes : (v.limit == LIMIT_NONE ? 0 : NULL64);
	r->iw_segs = data ? v.segs : (v.limit == LIMIT_NONE ? 0 : NULL64);
	r->smss = data && v.smss ? v.smss : NULL64;
	r->ff_start_us = data ? (int64_t)ff_first_us(f, ff) : NULL64;
	r->ff_end_us = data ? (int64_t)ff_last_us(f, ff) : NULL64;
	/* a flight seen from one direction whose end the packets do not show keeps its rule (echo):
	 * no verdict, and the row says why */
	r->iw_rule = (uint8_t)(data || v.limit == LIMIT_UNKNOWN ? v.rule : RULE_NONE);
	r->iw_end = (uint8_t)v.end;
	r->iw_next = (uint8_t)(data ? v.next : FF_NEXT_NONE);
	r->iw_pause_us = data && v.pause_us >= 0 ? v.pause_us : NULL64;
	r->iw_std = (uint8_t)classify_flight(v.limit, v.segs, v.bytes, v.smss, r->iw_class,
	                                     sizeof(r->iw_class));
}

/* Dotted quad by hand (glibc's inet_ntop formats IPv4 with sprintf; this runs twice per flow
 * on the reading thread), IPv6 by inet_ntop. */
static void addr_text(int ver, const struct ip_addr *a, char *buf, size_t len)
{
	if (ver == 4 && len >= 16) {
		char *p = buf;
		for (int i = 0; i < 4; i++) {
			unsigned v = a->b[i];
			if (i)
				*p++ = '.';
			if (v >= 100)
				*p++ = (char)('0' + v / 100);
			if (v >= 10)
				*p++ = (char)('0' + v / 10 % 10);
			*p++ = (char)('0' + v % 10);
		}
		*p = '\0';
		return;
	}
	if (!inet_ntop(ver == 6 ? AF_INET6 : AF_INET, a->b, buf, (socklen_t)len))
		buf[0] = '\0';
}

void record_build(const flow_table *t, const struct flow *f, const char *asked_name,
                  struct flow_record *r)
{
	r->ts_us = (int64_t)f->first_us;
	r->ip_ver = f->ip_ver;
	struct ip_addr c = flow_addr(t, f, 0), s = flow_addr(t, f, 1);
	addr_text(f->ip_ver, &c, r->client_ip, sizeof(r->client_ip));
	addr_text(f->ip_ver, &s, r->server_ip, sizeof(r->server_ip));
	r->client_port = f->c_port;
	r->server_port = f->s_port;
	r->handshake = (uint8_t)handshake_kind(f);
	uint64_t syn = flow_time(f, FT_SYN), synack = flow_time(f, FT_SYNACK), ack = flow_time(f, FT_ACK);
	r->syn_us = syn ? (int64_t)syn : NULL64;
	r->synack_us = synack ? (int64_t)synack : NULL64;
	r->ack_us = ack ? (int64_t)ack : NULL64;
	int64_t lc = handshake_leg(f, 0), ls = handshake_leg(f, 1);
	int64_t rtt = lc >= 0 && ls >= 0 ? lc + ls : -1;
	r->rtt_us = rtt >= 0 ? rtt : NULL64;
	r->rtt_c_us = lc >= 0 ? lc : NULL64;
	r->rtt_s_us = ls >= 0 ? ls : NULL64;
	side_syn_record(t, f, 0, &r->c);
	side_syn_record(t, f, 1, &r->s);
	side_flight_record(f, 0, &r->c);
	side_flight_record(f, 1, &r->s);
	r->c.acked_unseen = f->lost ? NULL64 : flow_acked_unseen(f, 0);
	r->s.acked_unseen = f->lost ? NULL64 : flow_acked_unseen(f, 1);
	r->duration_us = f->lost ? NULL64 : (int64_t)(flow_last_us(f) - f->first_us);
	r->end_reason = f->end_reason;
	r->dpi_method = RDPI_OFF;
	r->app_proto[0] = r->app_category[0] = '\0';
	if (asked_name) /* the name the client asked for comes before nDPI's (dpi_finish) */
		snprintf(r->server_name, sizeof(r->server_name), "%s", asked_name);
	else
		r->server_name[0] = '\0';
	r->flow_key = (int64_t)f->key;
	r->update = f->written;
	if (f->transport == 17) {
		quicflow_record(f, r);
		return;
	}
	r->transport = 6;
	r->quic_version = r->quic_retry = r->quic_vn = r->quic_0rtt = r->quic_spin = NULL64;
	r->quic_c_initial = r->quic_c_preval = r->quic_s_preval = NULL64;
	r->quic_amp_limited = r->quic_hs_rtts = NULL64;
	r->alpn[0] = '\0';
}

/* ---- the columns --------------------------------------------------------------------------- */

#define ENTRY(name, type, value) { #name, COL_##type },
#define SIDE_ENTRIES(name, type, value) { "c_" #name, COL_##type }, { "s_" #name, COL_##type },
const struct record_column record_columns[] = {
	FLOW_HEAD(ENTRY) SIDE(SIDE_ENTRIES) FLOW_TAIL(ENTRY) SIDE_TAIL(SIDE_ENTRIES) FLOW_TAIL5(ENTRY)
};
const unsigned record_ncolumns = sizeof(record_columns) / sizeof(record_columns[0]);

#define ID(name, type, value) ID_##name,
enum { FLOW_HEAD(ID) N_HEAD };
enum { SIDE(ID) N_SIDE };
enum { FLOW_TAIL(ID) N_TAIL };
enum { SIDE_TAIL(ID) N_SIDE_TAIL };
enum { FLOW_TAIL5(ID) N_TAIL5 };

#define PUT_INT(value) (*i = (int64_t)(value), COL_INT)
#define PUT_TEXT(value) (*s = (value), COL_TEXT)
#define CASE(name, type, value) case ID_##name: return PUT_##type(value);

int record_value(const struct flow_record *r, unsigned col, int64_t *i, const char **s)
{
	if (col < N_HEAD) {
		switch (col) {
		FLOW_HEAD(CASE)
		}
	} else if (col < N_HEAD + 2 * N_SIDE) {
		unsigned k = col - N_HEAD;
		const struct side_record *sd = k % 2 ? &r->s : &r->c;
		switch (k / 2) {
		SIDE(CASE)
		}
	} else if (col < N_HEAD + 2 * N_SIDE + N_TAIL) {
		switch (col - N_HEAD - 2 * N_SIDE) {
		FLOW_TAIL(CASE)
		}
	} else if (col < N_HEAD + 2 * N_SIDE + N_TAIL + 2 * N_SIDE_TAIL) {
		unsigned k = col - N_HEAD - 2 * N_SIDE - N_TAIL;
		const struct side_record *sd = k % 2 ? &r->s : &r->c;
		switch (k / 2) {
		SIDE_TAIL(CASE)
		}
	} else {
		switch (col - N_HEAD - 2 * N_SIDE - N_TAIL - 2 * N_SIDE_TAIL) {
		FLOW_TAIL5(CASE)
		}
	}
	*i = NULL64;
	return COL_INT;
}
