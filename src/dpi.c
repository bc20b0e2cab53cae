/* nDPI: the application protocol and server name of each flow. nDPI sees a flow from its first
 * payload packet only until it has decided (or after max_pkts packets, when it guesses from ports); then its state is freed,
 * so a decided flow holds three protocol ids and its server name, nothing of nDPI's. */
#include "dpi.h"

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

dpi_ctx *dpi_open(unsigned max_pkts)
{
	dpi_ctx *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->max_pkts = max_pkts;
	d->ndpi = ndpi_init_detection_module(ndpi_no_prefs);
	if (!d->ndpi) {
		free(d);
		return NULL;
	}
	NDPI_PROTOCOL_BITMASK all;
	NDPI_BITMASK_SET_ALL(all);
	ndpi_set_protocol_detection_bitmask2(d->ndpi, &all);
	ndpi_finalize_initialization(d->ndpi);
	return d;
}

void dpi_close(dpi_ctx *d)
{
	if (!d)
		return;
	ndpi_exit_detection_module(d->ndpi);
	free(d);
}

static void release(dpi_ctx *d, struct flow *f)
{
	if (!f->dpi)
		return;
	d->live--;
	ndpi_flow_free(f->dpi->nf); /* pairs with ndpi_flow_malloc: frees its data too */
	free(f->dpi);
	f->dpi = NULL;
}

/* Keeps what nDPI decided and its server name, then frees nDPI's state. */
static void settle(dpi_ctx *d, struct flow *f, ndpi_protocol pr, enum dpi_method m)
{
	f->app_master = pr.master_protocol;
	f->app_proto = pr.app_protocol;
	f->app_category = (uint16_t)pr.category;
	f->dpi_method = (uint8_t)m;
	/* the server's name: TLS SNI and HTTP Host land in host_server_name; for SSH the server's
	 * banner is what nDPI extracted (ndpiReader shows it in the same place) */
	const char *name = f->dpi->nf->host_server_name;
	size_t cap = sizeof(f->dpi->nf->host_server_name);
	if (!name[0] && (pr.master_protocol == NDPI_PROTOCOL_SSH || pr.app_protocol == NDPI_PROTOCOL_SSH)) {
		name = f->dpi->nf->protos.ssh.server_signature;
		cap = sizeof(f->dpi->nf->protos.ssh.server_signature);
	}
	if (name[0] && !f->server_name) {
		size_t n = strnlen(name, cap);
		f->server_name = malloc(n + 1);
		if (f->server_name) {
			memcpy(f->server_name, name, n);
			f->server_name[n] = '\0';
		}
	}
	release(d, f);
}

static bool detected(ndpi_protocol pr)
{
	return pr.app_protocol != NDPI_PROTOCOL_UNKNOWN || pr.master_protocol != NDPI_PROTOCOL_UNKNOWN;
}

void dpi_packet(dpi_ctx *d, struct flow *f, const struct pkt *p, int dir)
{
	(void)dir;
	/* decided already; or nothing to inspect: segments without payload teach nDPI nothing,
	 * and skipping them means a SYN flood costs no nDPI state at all */
	if (f->dpi_method != DPI_NONE || !p->ip_hdr || !p->ip_cap || p->payload_len == 0)
		return;
	if (!f->dpi) {
		f->dpi = calloc(1, sizeof(*f->dpi));
		if (!f->dpi)
			return;
		f->dpi->nf = ndpi_flow_malloc(ndpi_detection_get_sizeof_ndpi_flow_struct());
		if (!f->dpi->nf) {
			free(f->dpi);
			f->dpi = NULL;
			return;
		}
		memset(f->dpi->nf, 0, ndpi_detection_get_sizeof_ndpi_flow_struct());
		d->inspected++;
		if (++d->live > d->peak)
			d->peak = d->live;
	}
	uint16_t len = p->ip_cap > 0xffff ? 0xffff : (uint16_t)p->ip_cap;
	ndpi_protocol pr = ndpi_detection_process_packet(d->ndpi, f->dpi->nf, p->ip_hdr, len,
	                                                 p->ts_us / 1000);
	f->dpi_pkts++;
	if (detected(pr) && !ndpi_extra_dissection_possible(d->ndpi, f->dpi->nf)) {
		settle(d, f, pr, DPI_PAYLOAD);
		return;
	}
	if (f->dpi_pkts >= d->max_pkts) {
		uint8_t guessed = 0;
		if (!detected(pr))
			pr = ndpi_detection_giveup(d->ndpi, f->dpi->nf, 1, &guessed);
		settle(d, f, pr, !detected(pr) ? DPI_UNDETECTED : guessed ? DPI_GUESS : DPI_PAYLOAD);
	}
}

void dpi_finish(dpi_ctx *d, struct flow *f, struct flow_record *rec)
{
	if (f->dpi && f->dpi_method == DPI_NONE) {
		uint8_t guessed = 0;
		ndpi_protocol pr = ndpi_detection_giveup(d->ndpi, f->dpi->nf, 1, &guessed);
		settle(d, f, pr, !detected(pr) ? DPI_UNDETECTED : guessed ? DPI_GUESS : DPI_PAYLOAD);
	}
	release(d, f);
	if (!rec)
		return;
	ndpi_protocol pr = { f->app_master, f->app_proto, (ndpi_protocol_category_t)f->app_category };
	if (detected(pr)) {
		ndpi_protocol2name(d->ndpi, pr, rec->app_proto_buf, sizeof(rec->app_proto_buf));
		rec->app_proto = rec->app_proto_buf;
		rec->app_category = ndpi_category_get_name(d->ndpi, pr.category);
	} else {
		rec->app_proto = "Unknown";
		rec->app_category = "Unspecified";
	}
	rec->server_name = f->server_name;
	rec->dpi_method = f->dpi_method == DPI_PAYLOAD ? "payload"
	                  : f->dpi_method == DPI_GUESS ? "guess" : "none";
}

void dpi_stats(const dpi_ctx *d, uint64_t *live, uint64_t *peak, uint64_t *inspected)
{
	*live = d->live;
	*peak = d->peak;
	*inspected = d->inspected;
}
