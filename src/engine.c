/* The per-packet pipeline: decode -> flow table -> handshake -> first flights -> nDPI, and
 * the hand-over of finished flows to the sinks. No allocation per packet. */
#include "engine.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "classify.h"
#include "config.h"
#include "decode.h"
#include "flight.h"
#include "handshake.h"
#include "stage.h"

struct engine {
	struct engine_opts opts;
	struct flight_opts fopts;
	flow_table *flows;
	struct sink *sinks;
	unsigned nsinks;
	dpi_ctx *dpi;              /* nDPI on this thread, or NULL */
	stage *stage;              /* or nDPI and the sinks on the stage's thread */
	dpi_ctx *dpi_local;        /* with a stage: nDPI of its own for a share of the flows, opened
	                            * for the first of them (a small capture never needs it) */
	bool dpi_local_failed;     /* ... and it could not be: the stage does all */
	uint64_t dpi_local_peak;   /* its peak of flow states, kept when it is closed */
	unsigned stage_dpi_max;    /* payload packets per flow the stage's nDPI may see; 0: no nDPI */
	uint64_t now_us;           /* latest capture time seen (time never runs backwards here) */
	uint64_t next_expire_us;
	uint64_t packets, bytes, tcp_packets, flows_out, evicted;
	uint64_t next_key;         /* flow_key of the next flow */
	uint64_t backlog;          /* the stage's modelled backlog, cycles (config.h) */
	uint64_t dpi_cost_sum;     /* modelled cycles of every nDPI call so far: their mean per flow
	                            * is what a new flow is expected to cost */
	uint64_t reasons[DECODE_NREASONS];
	int failed;                /* a sink failed: stop writing */
};

/* The nDPI context this thread runs for f: all flows without a stage; with one, the flows
 * given to this thread when they began. NULL: the stage. */
static dpi_ctx *flow_dpi(const engine *e, const struct flow *f)
{
	if (!e->stage)
		return e->dpi;
	return f->dpi_here ? e->dpi_local : NULL;
}

/* Whether this thread has an nDPI context, opening it when it first takes a flow (false if
 * it cannot be opened). */
static bool local_dpi(engine *e)
{
	if (!e->dpi_local && !e->dpi_local_failed) {
		stage_dpi_wait(e->stage); /* one nDPI start-up at a time */
		if (!(e->dpi_local = dpi_open(e->stage_dpi_max)))
			e->dpi_local_failed = true;
	}
	return e->dpi_local != NULL;
}

/* The stage's backlog model: work handed to it, and work this thread does meanwhile. */
static void stage_work(engine *e, uint64_t cycles)
{
	e->backlog += cycles;
	if (e->backlog > STAGE_BACKLOG_MAX)
		e->backlog = STAGE_BACKLOG_MAX;
}

static void own_work(engine *e, uint64_t cycles)
{
	e->backlog = e->backlog > cycles ? e->backlog - cycles : 0;
}

static uint64_t dpi_cost(const struct pkt *p)
{
	return COST_DPI + (uint64_t)COST_DPI_BYTE * p->payload_cap;
}

engine *engine_new(const struct engine_opts *o, struct sink *sinks, unsigned nsinks, dpi_ctx *dpi)
{
	engine *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->opts = *o;
	e->opts.early_rows = o->early_rows && !o->threaded; /* the stage writes at flows' ends */
	e->fopts.force_timing = o->force_timing;
	e->flows = flow_table_new(o->flow_cap ? o->flow_cap : FLOW_CAP_DEFAULT);
	if (!e->flows) {
		free(e);
		return NULL;
	}
	e->sinks = sinks;
	e->nsinks = nsinks;
	if (o->threaded) {
		e->stage = stage_start(dpi, sinks, nsinks);
		if (!e->stage) {
			flow_table_free(e->flows);
			free(e);
			return NULL;
		}
		e->stage_dpi_max = dpi ? dpi_max_packets(dpi) : 0;
	} else {
		e->dpi = dpi;
	}
	return e;
}

/* This thread's nDPI, once no flow of it is left: closed while the stage still drains. */
static void close_local(engine *e)
{
	if (!e->dpi_local || flow_count(e->flows))
		return;
	uint64_t live, inspected;
	dpi_stats(e->dpi_local, &live, &e->dpi_local_peak, &inspected);
	dpi_close(e->dpi_local);
	e->dpi_local = NULL;
}

int engine_finish(engine *e)
{
	if (!e->stage)
		return e->failed ? -1 : 0;
	close_local(e);
	int rc = stage_stop(e->stage);
	e->stage = NULL;
	if (rc != 0)
		e->failed = 1;
	return e->failed ? -1 : 0;
}

int engine_tick(engine *e)
{
	if (e->failed)
		return -1;
	if (e->stage) {
		if (stage_tick(e->stage) != 0)
			e->failed = 1;
		return e->failed ? -1 : 0;
	}
	for (unsigned i = 0; i < e->nsinks; i++)
		if (e->sinks[i].ops->tick(e->sinks[i].self) != 0) {
			e->failed = 1;
			return -1;
		}
	return 0;
}

void engine_free(engine *e)
{
	if (!e)
		return;
	engine_finish(e);
	struct flow *f;
	while ((f = flow_oldest(e->flows))) { /* only after a failure: drop without writing */
		dpi_ctx *d = flow_dpi(e, f);
		if (d)
			dpi_finish(d, &f->dpi, NULL);
		dpi_state_free(&f->dpi);
		flow_remove(e->flows, f);
	}
	dpi_close(e->dpi_local);
	flow_table_free(e->flows);
	free(e);
}

static int64_t opt_val(bool known, int64_t v) { return known ? v : NULL64; }

/* A SYN option the capture did not show: absent (0) when the options were whole, else
 * unknown. */
static int64_t opt_flag(const struct syn_info *si, uint8_t bit)
{
	if (si->present & bit)
		return 1;
	return (si->quirks & Q_OPT_CUT) ? NULL64 : 0;
}

static void side_syn_record(const struct side *sd, struct side_record *r)
{
	const struct syn_info *si = &sd->syn;
	bool seen = si->ts_us != 0;
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
	if (seen && !(si->quirks & Q_OPT_CUT)) {
		classify_olayout(r->olayout_buf, sizeof(r->olayout_buf), si);
		r->olayout = r->olayout_buf;
	} else {
		r->olayout = NULL; /* not seen, or cut by the snaplen: unknown */
	}
	r->rwnd_class = seen ? classify_rwnd(si->win, (si->present & OPT_MSS) ? si->mss : 0) : NULL;
	r->pkts = (int64_t)sd->pkts;
	r->bytes = (int64_t)sd->bytes;
}

static void side_flight_record(const struct flow *f, int sender, struct side_record *r)
{
	struct ff_verdict v;
	flight_verdict(f, sender, &v);
	r->iw_limit = classify_limit_name(v.limit);
	r->iw_class = NULL;
	r->iw_std = NULL;
	r->iw_rule = NULL;
	r->iw_end = NULL;
	r->iw_next = NULL;
	r->iw_pause_us = NULL64;
	bool data = v.limit != LIMIT_UNKNOWN && v.limit != LIMIT_NONE;
	r->iw_bytes = data ? v.bytes : (v.limit == LIMIT_NONE ? 0 : NULL64);
	r->iw_segs = data ? v.segs : (v.limit == LIMIT_NONE ? 0 : NULL64);
	r->smss = data && v.smss ? v.smss : NULL64;
	const struct first_flight *ff = sender == 0 ? &f->c.ff : &f->s.ff;
	r->ff_start_us = data ? (int64_t)ff->first_us : NULL64;
	r->ff_end_us = data ? (int64_t)ff->last_us : NULL64;
	if (data) {
		r->iw_rule = classify_rule_name(v.rule);
		r->iw_end = classify_end_rule_name(v.end);
		r->iw_next = classify_next_name(v.next);
		r->iw_pause_us = v.pause_us >= 0 ? v.pause_us : NULL64;
	}
	if (v.limit == LIMIT_CWND) {
		classify_iw_class(r->iw_class_buf, sizeof(r->iw_class_buf), v.segs, 1);
		r->iw_class = r->iw_class_buf;
		r->iw_std = classify_iw_std(v.segs, v.smss);
	} else if (v.limit == LIMIT_APP || v.limit == LIMIT_RWND || v.limit == LIMIT_NAGLE ||
	           v.limit == LIMIT_AMBIGUOUS) {
		classify_iw_class(r->iw_class_buf, sizeof(r->iw_class_buf), v.segs, 0);
		r->iw_class = r->iw_class_buf;
	}
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

static void record_build(const struct flow *f, struct flow_record *r)
{
	r->ts_us = (int64_t)f->first_us;
	r->ip_ver = f->ip_ver;
	addr_text(f->ip_ver, &f->c_addr, r->client_ip, sizeof(r->client_ip));
	addr_text(f->ip_ver, &f->s_addr, r->server_ip, sizeof(r->server_ip));
	r->client_port = f->c_port;
	r->server_port = f->s_port;
	r->handshake = classify_handshake_name(handshake_kind(f));
	r->syn_us = f->syn_us ? (int64_t)f->syn_us : NULL64;
	r->synack_us = f->synack_us ? (int64_t)f->synack_us : NULL64;
	r->ack_us = f->ack_us ? (int64_t)f->ack_us : NULL64;
	int64_t rtt = flight_rtt(f), lc = flight_rtt_leg(f, 0), ls = flight_rtt_leg(f, 1);
	r->rtt_us = rtt >= 0 ? rtt : NULL64;
	r->rtt_c_us = lc >= 0 ? lc : NULL64;
	r->rtt_s_us = ls >= 0 ? ls : NULL64;
	side_syn_record(&f->c, &r->c);
	side_syn_record(&f->s, &r->s);
	side_flight_record(f, 0, &r->c);
	side_flight_record(f, 1, &r->s);
	r->duration_us = (int64_t)(f->last_us - f->first_us);
	r->end_reason = classify_end_name((enum end_reason)f->end_reason);
	r->app_proto = r->app_category = r->server_name = r->dpi_method = NULL;
	r->flow_key = (int64_t)f->key;
	r->update = f->written;
}

/* Hands f's record to every sink (or to the stage, which adds nDPI's fields). 0 or -1 when a
 * sink failed. */
static int write_record(engine *e, struct flow *f)
{
	struct flow_record rec;
	record_build(f, &rec);
	dpi_ctx *d = flow_dpi(e, f);
	if (d)
		dpi_finish(d, &f->dpi, &rec);
	if (e->stage) {
		stage_work(e, COST_ROW);
		if ((d ? stage_row(e->stage, &rec) : stage_record(e->stage, f->self, &rec)) != 0)
			e->failed = 1;
		return e->failed ? -1 : 0;
	}
	for (unsigned i = 0; i < e->nsinks && !e->failed; i++)
		if (e->sinks[i].ops->flow(e->sinks[i].self, &rec) != 0)
			e->failed = 1;
	return e->failed ? -1 : 0;
}

/* Both first flights have been followed by the next data and nDPI has decided: the row can be
 * written now, long before a persistent connection ends (its end updates it). The stage waits
 * for its nDPI itself. */
static bool verdicts_final(const engine *e, const struct flow *f)
{
	return !f->written && !f->roles_guessed && f->c.ff.state == FF_CLOSED &&
	       f->s.ff.state == FF_CLOSED && (!flow_dpi(e, f) || dpi_decided(&f->dpi));
}

/* Writes f to every sink and frees its slot. */
static int emit(engine *e, struct flow *f, enum end_reason why)
{
	if (!f->end_reason)
		f->end_reason = (uint8_t)why;
	int rc = write_record(e, f);
	dpi_state_free(&f->dpi);
	flow_remove(e->flows, f);
	e->flows_out++;
	return rc;
}

/* Why a flow that timed out ended: its closing handshake if it had one. */
static enum end_reason timeout_reason(const struct flow *f)
{
	if (f->c.rst || f->s.rst)
		return END_RST;
	if (f->c.fin && f->s.fin)
		return END_FIN;
	return END_IDLE;
}

static int expire(engine *e)
{
	struct flow *f;
	while ((f = flow_expired(e->flows, e->now_us)))
		if (emit(e, f, timeout_reason(f)) != 0)
			return -1;
	return 0;
}

static struct flow *new_flow(engine *e, const struct pkt *p)
{
	struct flow *f = flow_insert(e->flows, p, handshake_src_is_client(p));
	if (!f) { /* full: evict the stalest flow, counted */
		struct flow *old = flow_oldest(e->flows);
		if (!old)
			return NULL;
		e->evicted++;
		if (emit(e, old, END_EVICTED) != 0)
			return NULL;
		f = flow_insert(e->flows, p, handshake_src_is_client(p));
		if (!f)
			return NULL;
	}
	f->first_us = p->ts_us;
	f->roles_guessed = !(p->flags & TH_SYN);
	f->key = ++e->next_key;
	return f;
}

int engine_packet(engine *e, int dlt, const uint8_t *data, uint32_t caplen, uint32_t wirelen,
                  uint64_t ts_us)
{
	struct pkt p;
	if (e->failed)
		return -1;
	e->packets++;
	e->bytes += wirelen;
	if (ts_us > e->now_us)
		e->now_us = ts_us;
	if (e->now_us >= e->next_expire_us) {
		e->next_expire_us = e->now_us + EXPIRE_INTERVAL_US;
		if (expire(e) != 0)
			return -1;
	}
	enum decode_result dr = decode_packet(dlt, data, caplen, ts_us, &p);
	if (dr != DECODE_OK) {
		e->reasons[dr]++;
		return 0;
	}
	e->tcp_packets++;
	if (e->stage)
		own_work(e, COST_PACKET);
	int dir = 0;
	struct flow *f = flow_lookup(e->flows, &p, &dir);
	if (f && (p.flags & TH_SYN) && handshake_is_reuse(f, &p, dir)) {
		if (emit(e, f, END_REUSE) != 0)
			return -1;
		f = NULL;
	}
	if (!f) {
		f = new_flow(e, &p);
		if (!f)
			return e->failed ? -1 : 0;
		dir = memcmp(&f->c_addr, &p.src, sizeof(p.src)) == 0 && f->c_port == p.sport ? 0 : 1;
		/* while the stage has work queued, this thread inspects the new flow itself; the
		 * flow's expected nDPI work counts at once, where it will run */
		if (e->stage_dpi_max) {
			uint64_t expect = e->dpi_cost_sum / e->next_key;
			f->dpi_here = e->backlog > STAGE_BACKLOG_BUSY && e->packets > STAGE_LOCAL_AFTER &&
			              local_dpi(e);
			if (f->dpi_here)
				own_work(e, expect);
			else
				stage_work(e, expect);
		}
	}
	if (ts_us > f->last_us)
		f->last_us = ts_us;
	handshake_update(f, &p, dir);
	flight_update(f, &p, dir, &e->fopts);
	dpi_ctx *d = flow_dpi(e, f);
	if (d) {
		if (dpi_wants(&p) && !dpi_decided(&f->dpi)) {
			dpi_packet(d, &f->dpi, p.ip_hdr, p.ip_cap, p.ts_us);
			if (e->stage)
				e->dpi_cost_sum += dpi_cost(&p);
		}
	} else if (e->stage_dpi_max && f->dpi_sent < e->stage_dpi_max && dpi_wants(&p)) {
		f->dpi_sent++;
		e->dpi_cost_sum += dpi_cost(&p);
		if (stage_packet(e->stage, f->self, p.ip_hdr, p.ip_cap, p.ts_us) != 0) {
			e->failed = 1;
			return -1;
		}
	}
	flow_side_update(dir == 0 ? &f->c : &f->s, &p);
	flow_touch(e->flows, f);
	if (e->opts.early_rows && verdicts_final(e, f)) {
		if (write_record(e, f) != 0)
			return -1;
		f->written = true;
	}
	return 0;
}

int engine_flush(engine *e, enum end_reason why)
{
	struct flow *f;
	while ((f = flow_oldest(e->flows))) {
		enum end_reason r = timeout_reason(f);
		if (emit(e, f, r == END_IDLE ? why : r) != 0)
			return -1;
	}
	return 0;
}

void engine_stats(const engine *e, struct run_info *run)
{
	run->packets = e->packets;
	run->bytes = e->bytes;
	run->tcp_packets = e->tcp_packets;
	run->flows = e->flows_out;
	run->evicted = e->evicted;
	run->decode_errors = 0;
	run->nreasons = 0;
	for (unsigned r = 1; r < DECODE_NREASONS && run->nreasons < 16; r++) {
		if (!e->reasons[r])
			continue;
		run->reasons[run->nreasons] = e->reasons[r];
		run->reason_names[run->nreasons] = decode_reason_name((enum decode_result)r);
		run->nreasons++;
		if (r != DECODE_NOT_IP && r != DECODE_NOT_TCP && r != DECODE_FRAGMENT)
			run->decode_errors += e->reasons[r];
	}
}

uint64_t engine_flows(const engine *e) { return e->flows_out; }

int engine_expire_at(engine *e, uint64_t now_us)
{
	if (now_us > e->now_us)
		e->now_us = now_us;
	return e->failed ? -1 : expire(e);
}

uint32_t engine_open_flows(const engine *e) { return flow_count(e->flows); }

uint64_t engine_packets(const engine *e) { return e->packets; }

uint64_t engine_dpi_peak(const engine *e)
{
	uint64_t live = 0, peak = e->dpi_local_peak, inspected = 0;
	if (e->dpi_local)
		dpi_stats(e->dpi_local, &live, &peak, &inspected);
	return peak;
}
