/* nDPI: the application protocol of each flow, and a server name where names.c (the name the
 * client asked for) found none. nDPI sees a flow from its first
 * payload packet only until it has decided (or after max_pkts packets, when it guesses from ports); then its state is freed,
 * so a decided flow holds three protocol ids and its server name, nothing of nDPI's. */
#include "dpi.h"
#include "names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ndpi/ndpi_api.h>

struct dpi_ctx {
	struct ndpi_detection_module_struct *ndpi;
	unsigned max_pkts;
	uint64_t live, peak, inspected; /* nDPI flow states alive now, at most, ever */
};

/* nDPI's flow state, opaque to the rest of iwscope. */
struct dpi_flow {
	struct ndpi_flow_struct *nf;
};

const char *dpi_version(void) { return ndpi_revision(); }

size_t dpi_flow_bytes(void)
{
	return ndpi_detection_get_sizeof_ndpi_flow_struct() + sizeof(struct dpi_flow);
}

dpi_ctx *dpi_new(unsigned max_pkts)
{
	dpi_ctx *d = calloc(1, sizeof(*d));
	if (d)
		d->max_pkts = max_pkts;
	return d;
}

bool dpi_start(dpi_ctx *d)
{
	if (d->ndpi)
		return true;
	d->ndpi = ndpi_init_detection_module(ndpi_no_prefs);
	if (!d->ndpi)
		return false;
	NDPI_PROTOCOL_BITMASK all;
	NDPI_BITMASK_SET_ALL(all);
	ndpi_set_protocol_detection_bitmask2(d->ndpi, &all);
	ndpi_finalize_initialization(d->ndpi);
	return true;
}

bool dpi_ready(const dpi_ctx *d) { return d && d->ndpi; }

dpi_ctx *dpi_open(unsigned max_pkts)
{
	dpi_ctx *d = dpi_new(max_pkts);
	if (d && !dpi_start(d)) {
		free(d);
		return NULL;
	}
	return d;
}

void dpi_close(dpi_ctx *d)
{
	if (!d)
		return;
	if (d->ndpi)
		ndpi_exit_detection_module(d->ndpi);
	free(d);
}

/* nDPI's state of a flow still deciding, freed (a decided flow's pointer is its name's). */
static void release(dpi_ctx *d, struct dpi_state *st)
{
	if (st->method != DPI_NONE || !st->u.nf)
		return;
	d->live--;
	ndpi_flow_free(st->u.nf->nf); /* pairs with ndpi_flow_malloc: frees its data too */
	free(st->u.nf);
	st->u.nf = NULL;
}

/* Keeps what nDPI decided and its server name, then frees nDPI's state. */
static void settle(dpi_ctx *d, struct dpi_state *st, ndpi_protocol pr, enum dpi_method m)
{
	/* the server's name: TLS SNI and HTTP Host land in host_server_name; for SSH the server's
	 * banner is what nDPI extracted (ndpiReader shows it in the same place) */
	const struct ndpi_flow_struct *nf = st->u.nf->nf;
	const char *name = nf->host_server_name;
	size_t cap = sizeof(nf->host_server_name);
	if (!name[0] && (pr.master_protocol == NDPI_PROTOCOL_SSH || pr.app_protocol == NDPI_PROTOCOL_SSH)) {
		name = nf->protos.ssh.server_signature;
		cap = sizeof(nf->protos.ssh.server_signature);
	}
	/* nDPI 4.2 cuts an HTTP Host at its first ':', so an IPv6 literal becomes "[2001": no name
	 * rather than a piece of one (names.c reads the whole Host) */
	if (name[0] == '[' && !memchr(name, ']', strnlen(name, cap)))
		name = "";
	/* a greeting's filler ("220---------", an FTP banner's " ") is no server's name */
	if (names_placeholder(name, strnlen(name, cap)))
		name = "";
	char *copy = NULL;
	if (name[0]) {
		size_t n = strnlen(name, cap);
		copy = malloc(n + 1);
		if (copy) {
			memcpy(copy, name, n);
			copy[n] = '\0';
		}
	}
	release(d, st);
	st->app_master = pr.master_protocol;
	st->app_proto = pr.app_protocol;
	st->app_category = (uint8_t)pr.category;
	st->method = (uint8_t)m;
	st->u.server_name = copy;
}

static bool detected(ndpi_protocol pr)
{
	return pr.app_protocol != NDPI_PROTOCOL_UNKNOWN || pr.master_protocol != NDPI_PROTOCOL_UNKNOWN;
}

/* How sure nDPI is of a protocol it detected (pr), from its own confidence (nDPI 4.x: the flow's
 * ndpi_confidence_t) and risks: read in the payload, read in the payload but on another
 * protocol's port, or matched by port or address only. guessed: nDPI's giveup said it guessed. */
static enum dpi_method how_sure(const struct ndpi_flow_struct *nf, bool guessed)
{
	if (guessed)
		return DPI_GUESS;
	switch (nf->confidence) {
	case NDPI_CONFIDENCE_DPI:
	case NDPI_CONFIDENCE_DPI_CACHE:
		break;
	default: /* by port, by IP, unknown: nothing in the payload said it */
		return DPI_GUESS;
	}
	if (NDPI_ISSET_BIT(nf->risk, NDPI_KNOWN_PROTOCOL_ON_NON_STANDARD_PORT))
		return DPI_OFFPORT;
	return DPI_PAYLOAD;
}

bool dpi_wants(const struct pkt *p)
{
	/* segments without payload teach nDPI nothing, and skipping them means a SYN flood costs
	 * no nDPI state at all */
	return p->ip_hdr && p->ip_cap && p->payload_len > 0;
}

bool dpi_decided(const struct dpi_state *st) { return st->method != DPI_NONE; }

unsigned dpi_max_packets(const dpi_ctx *d) { return d->max_pkts; }

void dpi_packet(dpi_ctx *d, struct dpi_state *st, const uint8_t *ip, uint32_t ip_cap,
                uint64_t ts_us)
{
	if (st->method != DPI_NONE)
		return;
	if (!st->u.nf) {
		st->u.nf = calloc(1, sizeof(*st->u.nf));
		if (!st->u.nf)
			return;
		st->u.nf->nf = ndpi_flow_malloc(ndpi_detection_get_sizeof_ndpi_flow_struct());
		if (!st->u.nf->nf) {
			free(st->u.nf);
			st->u.nf = NULL;
			return;
		}
		memset(st->u.nf->nf, 0, ndpi_detection_get_sizeof_ndpi_flow_struct());
		d->inspected++;
		if (++d->live > d->peak)
			d->peak = d->live;
	}
	uint16_t len = ip_cap > 0xffff ? 0xffff : (uint16_t)ip_cap;
	ndpi_protocol pr = ndpi_detection_process_packet(d->ndpi, st->u.nf->nf, ip, len, ts_us / 1000);
	st->pkts++;
	if (detected(pr) && !ndpi_extra_dissection_possible(d->ndpi, st->u.nf->nf)) {
		settle(d, st, pr, how_sure(st->u.nf->nf, false));
		return;
	}
	if (st->pkts >= d->max_pkts) {
		uint8_t guessed = 0;
		if (!detected(pr))
			pr = ndpi_detection_giveup(d->ndpi, st->u.nf->nf, 1, &guessed);
		settle(d, st, pr, !detected(pr) ? DPI_UNDETECTED : how_sure(st->u.nf->nf, guessed));
	}
}

void dpi_finish(dpi_ctx *d, struct dpi_state *st, struct flow_record *rec)
{
	if (st->method == DPI_NONE && st->u.nf) {
		uint8_t guessed = 0;
		ndpi_protocol pr = ndpi_detection_giveup(d->ndpi, st->u.nf->nf, 1, &guessed);
		settle(d, st, pr, !detected(pr) ? DPI_UNDETECTED : how_sure(st->u.nf->nf, guessed));
	}
	release(d, st);
	if (!rec)
		return;
	ndpi_protocol pr = { st->app_master, st->app_proto, (ndpi_protocol_category_t)st->app_category };
	if (detected(pr)) {
		ndpi_protocol2name(d->ndpi, pr, rec->app_proto, sizeof(rec->app_proto));
		const char *cat = ndpi_category_get_name(d->ndpi, pr.category);
		snprintf(rec->app_category, sizeof(rec->app_category), "%s", cat ? cat : "");
	} else {
		snprintf(rec->app_proto, sizeof(rec->app_proto), "Unknown");
		snprintf(rec->app_category, sizeof(rec->app_category), "Unspecified");
	}
	const char *name = st->method != DPI_NONE ? st->u.server_name : NULL;
	if (!rec->server_name[0] && name) /* names.c's, read from the client, come first */
		snprintf(rec->server_name, sizeof(rec->server_name), "%s", name);
	rec->dpi_method = st->method == DPI_PAYLOAD   ? RDPI_PAYLOAD
	                  : st->method == DPI_OFFPORT ? RDPI_OFFPORT
	                  : st->method == DPI_GUESS   ? RDPI_GUESS
	                                              : RDPI_NONE;
}

void dpi_state_free(struct dpi_state *st)
{
	if (st->method != DPI_NONE) /* still deciding: dpi_finish frees nDPI's state */
		free(st->u.server_name);
	st->u.server_name = NULL;
}

void dpi_stats(const dpi_ctx *d, uint64_t *live, uint64_t *peak, uint64_t *inspected)
{
	*live = d->live;
	*peak = d->peak;
	*inspected = d->inspected;
}
