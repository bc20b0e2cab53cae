/* libpcap file sources (pcap and pcapng, stdin with "-"), one continuous stream. */
#include "capture.h"

#include <pcap/pcap.h>
#include <stdio.h>
#include <string.h>

#include "decode.h"

const char *capture_pcap_version(void) { return pcap_lib_version(); }

int capture_check_filter(const char *filter, char *err, size_t errlen)
{
	pcap_t *pc = pcap_open_dead(DLT_EN10MB, 262144);
	if (!pc) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	struct bpf_program prog;
	int rc = pcap_compile(pc, &prog, filter, 1, PCAP_NETMASK_UNKNOWN);
	if (rc != 0)
		snprintf(err, errlen, "%s", pcap_geterr(pc));
	else
		pcap_freecode(&prog);
	pcap_close(pc);
	return rc == 0 ? 0 : -1;
}

static void link_name(int dlt, char *buf, size_t len)
{
	const char *name = pcap_datalink_val_to_name(dlt);
	const char *desc = pcap_datalink_val_to_description(dlt);
	snprintf(buf, len, "%s%s%s%s (DLT %d)", name ? name : "unknown", desc ? " [" : "",
	         desc ? desc : "", desc ? "]" : "", dlt);
}

/* Reads one file; returns 0 when read to its end, -1 on a problem already reported. */
static int read_file(const char *path, const struct capture_opts *o, capture_fn fn, void *arg,
                     volatile sig_atomic_t *stop, struct capture_result *res)
{
	char errbuf[PCAP_ERRBUF_SIZE] = "";
	pcap_t *pc = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_MICRO,
	                                                     errbuf);
	if (!pc) {
		fprintf(stderr, "iwscope: %s: %s\n", path, errbuf);
		return -1;
	}
	int dlt = pcap_datalink(pc);
	if (!decode_link_supported(dlt)) {
		char name[160];
		link_name(dlt, name, sizeof(name));
		fprintf(stderr, "iwscope: %s: unsupported link type %s\n", path, name);
		pcap_close(pc);
		return -1;
	}
	if (o->filter) {
		struct bpf_program prog;
		if (pcap_compile(pc, &prog, o->filter, 1, PCAP_NETMASK_UNKNOWN) != 0 ||
		    pcap_setfilter(pc, &prog) != 0) {
			fprintf(stderr, "iwscope: filter \"%s\": %s\n", o->filter, pcap_geterr(pc));
			if (prog.bf_insns)
				pcap_freecode(&prog);
			res->filter_error = 1;
			pcap_close(pc);
			return -1;
		}
		pcap_freecode(&prog);
	}
	int rc = 0;
	for (;;) {
		if (*stop || (o->max_packets && res->packets >= o->max_packets))
			break;
		struct pcap_pkthdr *h;
		const u_char *data;
		int r = pcap_next_ex(pc, &h, &data);
		if (r == 1) {
			/* the dlt of this record: pcapng files may change it per interface */
			res->packets++;
			uint64_t ts = (uint64_t)h->ts.tv_sec * 1000000u + (uint64_t)h->ts.tv_usec;
			uint32_t cap = h->caplen;
			if (fn(arg, dlt, data, cap, h->len, ts) != 0) {
				res->stopped = 1;
				break;
			}
			continue;
		}
		if (r == PCAP_ERROR_BREAK)
			break; /* end of file */
		fprintf(stderr, "iwscope: %s: %s (after %llu packets)\n", path, pcap_geterr(pc),
		        (unsigned long long)res->packets);
		rc = -1;
		break;
	}
	pcap_close(pc);
	return rc;
}

void capture_files(const struct capture_opts *o, capture_fn fn, void *arg,
                   volatile sig_atomic_t *stop, struct capture_result *res)
{
	memset(res, 0, sizeof(*res));
	for (unsigned i = 0; i < o->nfiles && !*stop && !res->stopped; i++) {
		if (o->max_packets && res->packets >= o->max_packets)
			break;
		if (read_file(o->files[i], o, fn, arg, stop, res) != 0) {
			res->files_failed++;
			if (res->filter_error)
				break;
		}
	}
}
