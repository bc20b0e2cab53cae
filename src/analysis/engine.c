/* The per-packet pipeline: decode -> flow table -> handshake -> first flights -> nDPI, and
 * the hand-over of finished flows to the sinks. No allocation per packet. */
#include "engine.h"

#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "copies.h"
#include "decode.h"
#include "flight.h"
#include "handshake.h"
#include "quic.h"
#include "quicflow.h"
#include "stage.h"

struct engine {
	struct engine_opts opts;
	struct flight_opts fopts;
	flow_table *flows;
	struct sink *sinks;
	unsigned nsinks;
	dpi_ctx *dpi;              /* nDPI on this thread, or NULL */
	stage *stage;              /* or nDPI and the sinks on the stage's thread (and a share of
	                            * the flows' nDPI on this one: stage.c) */
	uint64_t now_us;           /* latest capture time seen (time never runs backwards here) */
	uint64_t next_expire_us;
	uint64_t packets, bytes, tcp_packets, quic_packets, flows_out, evicted;
	uint64_t evicted_unsettled, evicted_later; /* what eviction cost: flows written before their
	                                             * verdicts were final, packets of evicted
	                                             * connections that came after (not analysed) */
	uint64_t one_direction, syn_opts_cut, acked_unseen; /* what the capture lacks (flow.h) */
	uint64_t next_key;         /* flows begun so far: the next one's key follows from it */
	struct names_pool names;   /* requests held while incomplete (names.c) */
	bool hunt;                 /* nDPI is on: look for the names clients ask for */
	uint64_t reasons[DECODE_NREASONS];
	int failed;                /* a sink failed: stop writing */
	uint16_t source_file;      /* opts.source_files' index of the packets now read */
	struct copies *copies;     /* packets just seen, to know one the capture holds twice */
};

void engine_source_file(engine *e, unsigned i) { e->source_file = (uint16_t)i; }

/* The nDPI context this thread runs: every flow's without a stage; with one, none (NULL: the
 * stage inspects them all). */
static dpi_ctx *here_dpi(const engine *e)
{
	return e->stage ? NULL : e->dpi;
}

/* f's nDPI state on this thread (allocated beside the table as nDPI starts on it), or NULL: its
 * nDPI runs on the stage, is off, or there was no memory for it. */
static struct dpi_state *here_state(engine *e, struct flow *f)
{
	return here_dpi(e) ? flow_dpi_state(e->flows, f) : NULL;
}

/* Whether nDPI on this thread has decided f (no state yet: it has not). */
static bool here_decided(const engine *e, const struct flow *f)
{
	const struct dpi_state *st = flow_dpi_peek(e->flows, f);
	return st && dpi_decided(st);
}

/* Frees what f's nDPI state on this thread holds, if it has one. */
static void here_free(engine *e, const struct flow *f)
{
	struct dpi_state *st = flow_dpi_peek(e->flows, f);
	if (st)
		dpi_state_free(st);
}

/* Frees what f holds of its transport's own: a TCP flow's name hunt, a QUIC flow's connection
 * state (they share a pointer). */
static void transport_free(engine *e, struct flow *f)
{
	if (f->transport == 17)
		quicflow_free(f);
	else
		names_free(&f->hunt, &e->names);
}

engine *engine_new(const struct engine_opts *o, struct sink *sinks, unsigned nsinks, dpi_ctx *dpi)
{
	quic_init(); /* libgcrypt, before the DPI stage's thread can use it */
	engine *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->copies = aligned_alloc(_Alignof(struct copies), sizeof(struct copies));
	if (!e->copies) {
		free(e);
		return NULL;
	}
	memset(e->copies, 0, sizeof(*e->copies));
	e->opts = *o;
	e->opts.early_rows = o->early_rows && !o->threaded; /* the stage writes at flows' ends */
	e->fopts.force_timing = o->force_timing;
	e->flows = flow_table_new(o->flow_cap ? o->flow_cap : flow_default_cap());
	if (!e->flows) {
		free(e->copies);
		free(e);
		return NULL;
	}
	e->sinks = sinks;
	e->nsinks = nsinks;
	if (o->threaded) {
		e->stage = stage_start(dpi, sinks, nsinks);
		if (!e->stage) {
			flow_table_free(e->flows);
			free(e->copies);
			free(e);
			return NULL;
		}
	} else {
		e->dpi = dpi;
	}
	e->hunt = dpi != NULL;
	return e;
}

int engine_finish(engine *e)
{
	if (!e->stage)
		return e->failed ? -1 : 0;
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
	if (sinks_tick(e->sinks, e->nsinks) != 0)
		e->failed = 1;
	return e->failed ? -1 : 0;
}

void engine_free(engine *e)
{
	if (!e)
		return;
	engine_finish(e);
	struct flow *f;
	while ((f = flow_oldest(e->flows))) { /* only after a failure: drop without writing */
		dpi_ctx *d = here_dpi(e);
		struct dpi_state *st = flow_dpi_peek(e->flows, f);
		if (d && st)
			dpi_finish(d, st, NULL);
		here_free(e, f);
		transport_free(e, f);
		flow_remove(e->flows, f);
	}
	flow_table_free(e->flows);
	free(e->copies);
	free(e);
}

/* Hands f's record to every sink (or to the stage, which adds nDPI's fields). 0 or -1 when a
 * sink failed. */
static int write_record(engine *e, struct flow *f)
{
	struct flow_record rec;
	record_build(e->flows, f, e->hunt && f->transport != 17 ? names_name(&f->hunt) : NULL, &rec);
	rec.source_file = e->opts.source_files ? e->opts.source_files[f->source_file] : NULL;
	struct dpi_state *st = flow_dpi_peek(e->flows, f), none = { 0 };
	if (e->stage) {
		if (stage_flow_end(e->stage, f, &rec) != 0)
			e->failed = 1;
	} else {
		if (e->dpi)
			dpi_finish(e->dpi, st ? st : &none, &rec);
		if (!e->failed && sinks_flow(e->sinks, e->nsinks, &rec) != 0)
			e->failed = 1;
	}
	return e->failed ? -1 : 0;
}

/* Both first flights have been followed by the next data and nDPI has decided: the row can be
 * written now, long before a persistent connection ends (its end updates it). The stage waits
 * for its nDPI itself. */
static bool verdicts_final(const engine *e, const struct flow *f)
{
	/* both flights closed, and the next flight of each counted (the burst rule may still
	 * turn an exact verdict into a lower bound until then) */
	return !f->written && !f->roles_guessed && f->c.ff.state == FF_CLOSED &&
	       f->s.ff.state == FF_CLOSED && f->c.ff.f2_done && f->s.ff.f2_done &&
	       (!here_dpi(e) || here_decided(e, f));
}

/* Writes f to every sink and frees its slot. */
static int emit(engine *e, struct flow *f, enum end_reason why)
{
	if (!f->end_reason)
		f->end_reason = (uint8_t)why;
	e->one_direction += flow_one_direction(f);
	e->syn_opts_cut += flow_syn_opts_cut(f);
	e->acked_unseen += flow_acked_unseen(f, 0) + (uint64_t)flow_acked_unseen(f, 1);
	int rc = write_record(e, f);
	here_free(e, f);
	transport_free(e, f);
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

static struct flow *new_flow(engine *e, const struct pkt *p, bool src_is_client)
{
	struct flow *f = flow_insert(e->flows, p, src_is_client);
	if (!f) { /* full: evict the stalest flow, counted */
		struct flow *old = flow_oldest(e->flows);
		if (!old)
			return NULL;
		e->evicted++;
		e->evicted_unsettled += !old->written && !verdicts_final(e, old);
		flow_evicted_add(e->flows, old);
		if (emit(e, old, END_EVICTED) != 0)
			return NULL;
		f = flow_insert(e->flows, p, src_is_client);
		if (!f)
			return NULL;
	}
	f->first_us = p->ts_us;
	f->source_file = e->source_file;
	f->roles_guessed = p->transport == 6 && !(p->flags & TH_SYN);
	f->key = e->next_key++ * (e->opts.key_step ? e->opts.key_step : 1) + e->opts.key_first + 1;
	return f;
}

/* Hands p to nDPI on this thread or to the stage. 0, or -1 when the stage failed. */
static int inspect(engine *e, struct flow *f, const struct pkt *p)
{
	if (e->stage) {
		if (stage_inspect(e->stage, f, p) != 0) {
			e->failed = 1;
			return -1;
		}
	} else if (e->dpi && dpi_wants(p)) {
		struct dpi_state *st = here_state(e, f);
		if (st && !dpi_decided(st))
			dpi_packet(e->dpi, st, p->ip_hdr, p->ip_cap, p->ts_us);
	}
	return 0;
}

/* The frames' order is the order they came: one of f stamped a little before f's latest time
 * (a multi-queue NIC, `-i any` on several CPUs) takes that time, so that no gap in a flight
 * comes out negative and no pause is made up; a larger step back is taken as it is
 * (docs/METHOD.md "A clock that steps back"). Per flow, so that a live worker, which sees
 * its flows' frames only, reads the times an offline run of the whole capture does. */
static void steady_clock(const struct flow *f, struct pkt *p)
{
	uint64_t last = flow_last_us(f);
	if (p->ts_us < last && last - p->ts_us <= CLOCK_STEP_BACK_US)
		p->ts_us = last;
}

/* A UDP datagram: a QUIC connection's (one it starts, or one of an open one), else counted
 * as not TCP. */
static int udp_datagram(engine *e, struct pkt *p)
{
	int dir = 0;
	struct flow *f = flow_lookup(e->flows, p, &dir);
	if (!f && flow_evicted_seen(e->flows, p) && !quicflow_client_initial(p)) {
		/* an evicted connection's datagram (its later Handshake packets would otherwise
		 * start a second row): its row is written, no second one. A client's Initial starts
		 * a new connection (a client reusing its socket), as a SYN does */
		e->quic_packets++;
		e->evicted_later++;
		return 0;
	}
	bool client = false;
	if (!f && !quicflow_starts(p, &client)) {
		e->reasons[DECODE_NOT_TCP]++;
		return 0;
	}
	if (copies_seen(e->copies, p, f && quicflow_doubled(f), false)) {
		/* a QUIC datagram's second copy (other UDP: not TCP) */
		if (f)
			quicflow_saw_copy(f);
		e->reasons[DECODE_COPY]++;
		return 0;
	}
	if (!f) {
		f = new_flow(e, p, client);
		if (!f)
			return e->failed ? -1 : 0;
		dir = client ? 0 : 1;
	} else {
		steady_clock(f, p);
	}
	e->quic_packets++;
	flow_saw(f, p->ts_us);
	quicflow_update(f, p, dir);
	if (inspect(e, f, p) != 0)
		return -1;
	flow_touch(e->flows, f);
	return 0;
}

/* Whether sd's IPv4 IDs change from packet to packet (copies.h: then an ID names one
 * transmission). */
static void ids_seen(struct side *sd, const struct pkt *p)
{
	if (!p->ipid)
		return;
	if (sd->id_seen && sd->id_low != (p->ipid & 7))
		sd->ids_vary = true;
	sd->id_seen = true;
	sd->id_low = p->ipid & 7;
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
	if (dr == DECODE_UDP)
		return udp_datagram(e, &p);
	if (dr != DECODE_OK) {
		e->reasons[dr]++;
		return 0;
	}
	int dir = 0;
	struct flow *f = flow_lookup(e->flows, &p, &dir);
	struct side *sd = f ? (dir ? &f->s : &f->c) : NULL;
	if (copies_seen(e->copies, &p, sd && sd->doubled, sd && sd->ids_vary)) {
		if (sd)
			sd->doubled = true;
		e->reasons[DECODE_COPY]++;
		return 0;
	}
	e->tcp_packets++;
	if (f)
		steady_clock(f, &p);
	if (f && (p.flags & TH_SYN) && handshake_is_reuse(f, &p, dir)) {
		if (emit(e, f, END_REUSE) != 0)
			return -1;
		f = NULL;
	}
	if (!f && (p.flags & (TH_SYN | TH_ACK)) != TH_SYN && flow_evicted_seen(e->flows, &p)) {
		/* an evicted connection's (a SYN alone starts a new one): its row is written, no
		 * second one */
		e->evicted_later++;
		return 0;
	}
	if (!f) {
		bool client = handshake_src_is_client(&p);
		f = new_flow(e, &p, client);
		if (!f)
			return e->failed ? -1 : 0;
		/* the client's end is p's source (a packet from an end to itself: both) */
		dir = client || (p.sport == p.dport && memcmp(&p.src, &p.dst, sizeof(p.src)) == 0) ? 0 : 1;
	}
	flow_saw(f, p.ts_us);
	ids_seen(dir ? &f->s : &f->c, &p);
	handshake_update(e->flows, f, &p, dir);
	flight_update(f, &p, dir, &e->fopts);
	if (inspect(e, f, &p) != 0)
		return -1;
	if (e->hunt && dir == 0 && !f->hunt.done) { /* data on a SYN follows its number */
		uint32_t seq = p.seq + ((p.flags & TH_SYN) != 0);
		if (p.flags & TH_SYN)
			names_start(&f->hunt, seq);
		if (p.payload_cap)
			names_segment(&f->hunt, &e->names, p.payload, p.payload_cap, seq);
		if (p.payload_cap < p.payload_len && !f->hunt.done) {
			/* cut by the snaplen: the rest of the request never comes, hold nothing */
			names_free(&f->hunt, &e->names);
			f->hunt.done = true;
		}
	}
	flow_side_update(f, dir, &p);
	flow_touch(e->flows, f);
	if (e->opts.early_rows && verdicts_final(e, f)) {
		if (write_record(e, f) != 0)
			return -1;
		f->written = true;
	}
	return 0;
}

void engine_prefetch(engine *e, int dlt, const uint8_t *data, uint32_t caplen)
{
	struct pkt p;
	if (decode_peek_tuple(dlt, data, caplen, &p))
		flow_prefetch(e->flows, &p);
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
	run->quic_packets = e->quic_packets;
	run->flows = e->flows_out;
	run->evicted = e->evicted;
	run->evicted_unsettled = e->evicted_unsettled;
	run->evicted_later = e->evicted_later;
	run->one_direction = e->one_direction;
	run->syn_opts_cut = e->syn_opts_cut;
	run->acked_unseen = e->acked_unseen;
	run->decode_errors = 0;
	run->nreasons = 0;
	for (unsigned r = 1; r < DECODE_NREASONS && run->nreasons < 16; r++) {
		if (!e->reasons[r])
			continue;
		run->reasons[run->nreasons] = e->reasons[r];
		run->reason_names[run->nreasons] = decode_reason_name((enum decode_result)r);
		run->nreasons++;
		if (r != DECODE_NOT_IP && r != DECODE_NOT_TCP && r != DECODE_FRAGMENT && r != DECODE_COPY)
			run->decode_errors += e->reasons[r];
	}
}

int engine_expire_at(engine *e, uint64_t now_us)
{
	if (now_us > e->now_us)
		e->now_us = now_us;
	return e->failed ? -1 : expire(e);
}

uint32_t engine_open_flows(const engine *e) { return flow_count(e->flows); }

uint64_t engine_packets(const engine *e) { return e->packets; }

uint64_t engine_now(const engine *e) { return e->now_us; }
