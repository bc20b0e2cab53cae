/* libFuzzer target: a whole capture file -> flows -> SQLite, through libpcap, the engine with
 * nDPI and the SQLite sink (an in-memory database opened once). */
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>

#include "config.h"
#include "decode.h"
#include "dpi.h"
#include "engine.h"
#include "store.h"

static store *db;
static struct sink sink;
static dpi_ctx *dpi;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	char err[1100];
	db = store_open(":memory:", err, sizeof(err));
	dpi = dpi_open(DPI_MAX_PKTS);
	if (!db || !dpi)
		abort();
	sink = store_sink(db);
	struct run_info run = { 0 };
	run.source = "fuzz";
	run.status = "running";
	if (sink.ops->begin(sink.self, &run) != 0)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *f = fmemopen((void *)data, size, "rb");
	if (!f)
		return 0;
	char errbuf[PCAP_ERRBUF_SIZE];
	pcap_t *pc = pcap_fopen_offline(f, errbuf); /* owns f from here */
	if (!pc) {
		fclose(f);
		return 0;
	}
	struct engine_opts eo = { .flow_cap = 64, .force_timing = size & 1 };
	engine *e = engine_new(&eo, &sink, 1, dpi);
	int dlt = pcap_datalink(pc);
	struct pcap_pkthdr *h;
	const u_char *pkt;
	if (decode_link_supported(dlt)) {
		while (pcap_next_ex(pc, &h, &pkt) == 1)
			if (engine_packet(e, dlt, pkt, h->caplen, h->len,
			                  (uint64_t)h->ts.tv_sec * 1000000u + (uint64_t)h->ts.tv_usec) != 0)
				abort(); /* an in-memory database must not fail */
		if (engine_flush(e, END_CAPTURE) != 0)
			abort();
	}
	engine_free(e);
	pcap_close(pc);
	sink.ops->tick(sink.self);
	return 0;
}
