/* libFuzzer target, differential: a pcapng file read by pcapng.c against libpcap. Where libpcap
 * opens the file, pcapng.c opens it, with the same first link type; where libpcap reads a
 * record, pcapng.c gives the same one (time stamp, lengths, bytes, link type); where libpcap
 * reaches the end, so does pcapng.c. Where libpcap fails mid-file, pcapng.c may fail too or
 * read on (interfaces of other link types or snapshot lengths, a section in the other byte
 * order: what it reads beyond libpcap), but it never reads out of bounds or leaks (ASan).
 * Built with a one-page window, so blocks straddle windows all the time. */
#define _GNU_SOURCE
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture.h"
#include "decode.h"
#include "fileread.h"
#include "pcapng.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 12)
		return 0;
	int fd = memfd_create("fuzz.pcapng", 0);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	fileread *m = NULL;
	FILE *stream = fileread_open(path, &m);
	if (!stream)
		abort();
	if (!pcapng_probe(m)) {
		fclose(stream);
		close(fd);
		return 0;
	}
	char err[256];
	pcapng *ng = pcapng_open(m, err, sizeof(err));

	FILE *f = fmemopen((void *)data, size, "rb");
	char errbuf[PCAP_ERRBUF_SIZE];
	pcap_t *ref = f ? pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_MICRO, errbuf)
	                : NULL;
	if (!ref && f)
		fclose(f);
	if (!ref != !ng) {
		fprintf(stderr, "open: libpcap %s; pcapng.c %s\n", ref ? "opens" : errbuf,
		        ng ? "opens" : err);
		abort();
	}
	if (!ng)
		goto done;
	if (pcapng_first_dlt(ng) != pcap_datalink(ref)) {
		fprintf(stderr, "link type: libpcap %d, pcapng.c %d\n", pcap_datalink(ref),
		        pcapng_first_dlt(ng));
		abort();
	}
	int dlts[8];
	unsigned ndlts = pcapng_link_types(ng, dlts, 8);
	if (ndlts < 1 || dlts[0] != pcapng_first_dlt(ng))
		abort();
	/* libpcap fixes up the pseudo-headers of link types iwscope does not decode (USB, pflog);
	 * those files are refused before reading, so only the others are compared */
	bool compare = decode_link_supported(pcap_datalink(ref));
	for (unsigned n = 0;; n++) {
		struct capture_rec r;
		int b = pcapng_next(ng, &r);
		if (b == 1 && r.caplen > size)
			abort(); /* more bytes than the whole input */
		if (!compare) {
			if (b != 1)
				break;
			continue;
		}
		struct pcap_pkthdr *h;
		const u_char *want;
		int a = pcap_next_ex(ref, &h, &want);
		if (a == 1) {
			if (b != 1 || r.caplen != h->caplen || r.len != h->len || r.dlt != pcap_datalink(ref) ||
			    r.ts_us != (uint64_t)h->ts.tv_sec * 1000000u + (uint64_t)h->ts.tv_usec ||
			    memcmp(r.data, want, h->caplen) != 0) {
				fprintf(stderr, "record %u: libpcap caplen %u len %u ts %lld.%06ld; pcapng.c %d "
				        "caplen %u len %u ts_us %llu dlt %d (%s)\n", n, h->caplen, h->len,
				        (long long)h->ts.tv_sec, (long)h->ts.tv_usec, b, b == 1 ? r.caplen : 0,
				        b == 1 ? r.len : 0, b == 1 ? (unsigned long long)r.ts_us : 0ull,
				        b == 1 ? r.dlt : -1, b < 0 ? pcapng_error(ng) : "");
				abort();
			}
			continue;
		}
		if (a == PCAP_ERROR_BREAK && b != 0) {
			fprintf(stderr, "record %u: libpcap ends; pcapng.c %d %s\n", n, b,
			        b < 0 ? pcapng_error(ng) : "");
			abort();
		}
		if (a != PCAP_ERROR_BREAK) /* libpcap failed: pcapng.c may read on */
			while (b == 1)
				b = pcapng_next(ng, &r);
		break;
	}
done:
	pcapng_close(ng);
	if (ref)
		pcap_close(ref);
	fclose(stream);
	close(fd);
	return 0;
}
