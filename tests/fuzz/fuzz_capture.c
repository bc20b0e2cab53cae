/* libFuzzer target: a whole capture file -> flows -> SQLite, through iwscope's file reader
 * (the file mapped, libpcap), the engine with nDPI and the SQLite sink (an in-memory database
 * opened once). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture.h"

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
	int fd = memfd_create("fuzz.pcap", 0);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	int err_fd = dup(2), null_fd = open("/dev/null", O_WRONLY);
	dup2(null_fd, 2); /* the one line for a file that cannot be read */
	int filter_error = 0;
	char why[256];
	capture_file *cf = capture_file_open(path, NULL, &filter_error, why, sizeof(why));
	dup2(err_fd, 2);
	close(err_fd);
	close(null_fd);
	if (cf) {
		struct engine_opts eo = { .flow_cap = 64, .force_timing = size & 1,
		                          .early_rows = (size & 2) != 0 };
		engine *e = engine_new(&eo, &sink, 1, dpi);
		int dlt = capture_file_dlt(cf);
		struct capture_rec r;
		while (capture_file_next(cf, &r) == 1)
			if (engine_packet(e, dlt, r.data, r.caplen, r.len, r.ts_us) != 0)
				abort(); /* an in-memory database must not fail */
		if (engine_flush(e, END_CAPTURE) != 0)
			abort();
		engine_free(e);
		capture_file_close(cf);
	}
	close(fd);
	sink.ops->tick(sink.self);
	return 0;
}
