/* libFuzzer target, differential: a capture file read by capture_file_next (records taken in
 * place from the read buffer, libpcap for the rest) must give exactly what libpcap alone gives:
 * the same records (time stamp, lengths, bytes) and the same end (clean, or the same error).
 * A pcapng file is read by pcapng.c, which gives libpcap's records and end, but in its own
 * words, and may read on where libpcap gives up (tests/fuzz/fuzz_pcapng.c says more).
 * Built with a one-page window, so records straddle windows all the time. */
#define _GNU_SOURCE
#include <pcap/pcap.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture.h"
#include "decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	int fd = memfd_create("fuzz.pcap", 0);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);

	FILE *f = fmemopen((void *)data, size, "rb");
	char errbuf[PCAP_ERRBUF_SIZE];
	pcap_t *ref = f ? pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_MICRO, errbuf)
	                : NULL;
	if (!ref && f)
		fclose(f);
	/* silence capture_file_open's one line for files libpcap refuses */
	int err_fd = dup(2), null_fd = open("/dev/null", O_WRONLY);
	dup2(null_fd, 2);
	int filter_error = 0;
	char why[256];
	capture_file *cf = capture_file_open(path, NULL, &filter_error, why, sizeof(why));
	dup2(err_fd, 2);
	close(err_fd);
	close(null_fd);
	if (!ref || !decode_link_supported(pcap_datalink(ref))) {
		if (cf) /* iwscope opened what libpcap refuses, or a link type it cannot decode */
			abort();
		goto done;
	}
	if (!cf || capture_file_dlt(cf) != pcap_datalink(ref))
		abort();
	bool pcapng = size >= 4 && !memcmp(data, "\x0a\x0d\x0d\x0a", 4);
	for (unsigned n = 0;; n++) {
		struct pcap_pkthdr *h;
		const u_char *want;
		int a = pcap_next_ex(ref, &h, &want);
		struct capture_rec r;
		int b = capture_file_next(cf, &r);
		if (a == 1) {
			if (b != 1 || r.caplen != h->caplen || r.len != h->len ||
			    r.ts_us != (uint64_t)h->ts.tv_sec * 1000000u + (uint64_t)h->ts.tv_usec ||
			    memcmp(r.data, want, h->caplen) != 0) {
				fprintf(stderr, "record %u: libpcap caplen %u len %u ts %lld.%06ld; iwscope %d caplen %u len %u ts_us %llu\n",
				        n, h->caplen, h->len, (long long)h->ts.tv_sec, (long)h->ts.tv_usec, b,
				        b == 1 ? r.caplen : 0, b == 1 ? r.len : 0,
				        b == 1 ? (unsigned long long)r.ts_us : 0ull);
				abort();
			}
			continue;
		}
		if (a == PCAP_ERROR_BREAK) {
			if (b != 0) {
				fprintf(stderr, "record %u: libpcap ends; iwscope %d\n", n, b);
				abort();
			}
		} else if (pcapng) {
			while (b == 1) /* pcapng.c may read on: interfaces libpcap refuses */
				b = capture_file_next(cf, &r);
		} else if (b != -1 || strcmp(pcap_geterr(ref), capture_file_error(cf)) != 0) {
			fprintf(stderr, "record %u: libpcap error \"%s\"; iwscope %d \"%s\"\n", n,
			        pcap_geterr(ref), b, b < 0 ? capture_file_error(cf) : "");
			abort();
		}
		break;
	}
done:
	capture_file_close(cf);
	if (ref)
		pcap_close(ref);
	close(fd);
	return 0;
}
