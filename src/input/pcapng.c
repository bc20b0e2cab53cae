/* pcapng files, block by block (the format: draft-ietf-opsawg-pcapng), each packet with its own
 * interface's link type and time stamp resolution. Blocks are taken in place from fileread's
 * buffer; every length is checked against the block, and every block against the file, before
 * a byte of it is read.
 *
 * On the files libpcap reads, this gives what libpcap gives (the same records, time stamps in
 * microseconds converted as libpcap converts them, the same pseudo-header fix-ups), and fails
 * where libpcap fails, block for block; tests/fuzz/fuzz_pcapng.c holds it to that. Beyond
 * libpcap, it reads files whose interfaces differ in link type or snapshot length, and sections
 * written in another byte order than the first. */
#include "pcapng.h"

#include <pcap/pcap.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h" /* struct capture_rec */

#define BT_SHB 0x0A0D0D0Au   /* section header (the same in both byte orders) */
#define BT_IDB 0x00000001u   /* interface description */
#define BT_PB 0x00000002u    /* packet (obsolete) */
#define BT_SPB 0x00000003u   /* simple packet */
#define BT_EPB 0x00000006u   /* enhanced packet */
#define BYTE_ORDER_MAGIC 0x1A2B3C4Du

#define SHB_MIN 28u               /* header, magic, versions, section length, trailer */
#define SHB_MAX (1u << 20)        /* libpcap calls a longer first section header insane */
#define BLOCK_MAX (16u << 20)     /* libpcap's largest block for the link types iwscope reads */
#define SNAPLEN_MAX 262144u       /* libpcap's MAXIMUM_SNAPLEN */
#define IFACES_MAX (1u << 20)     /* interfaces in one section at most */
#define LOOKAHEAD_BLOCKS 256      /* blocks pcapng_link_types looks at, at most */

#define OPT_ENDOFOPT 0
#define IF_TSRESOL 9
#define IF_TSOFFSET 14

/* SocketCAN frames under Linux cooked headers keep their CAN ID in the writer's byte order */
#define SLL_P_CAN 0x000C
#define SLL_P_CANFD 0x000D

struct iface {
	int dlt;
	uint32_t snaplen;    /* as libpcap adjusts it: 0 or too large means the link type's largest */
	uint64_t tsresol;    /* time stamp units per second */
	bool binary;         /* tsresol is a power of 2 (else of 10) */
	int64_t tsoffset;    /* seconds added to every time stamp */
};

struct pcapng {
	fileread *m;
	uint64_t size;        /* of the file */
	uint64_t off;         /* of the next block */
	bool swapped;         /* this section was written in the other byte order */
	struct iface *ifaces; /* this section's interfaces, by id */
	uint32_t nifaces, cap;
	int first_dlt;
	uint8_t *scratch;     /* a packet whose pseudo-header had to be put in this host's order */
	size_t scratch_cap;
	char err[256];
};

/* One block: type, and the body between the 8-byte header and the 4-byte trailer. */
struct block {
	uint32_t type;
	const uint8_t *body;
	uint32_t len;
	uint64_t at;          /* file offset */
};

static int fail(pcapng *ng, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(pcapng *ng, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ng->err, sizeof(ng->err), fmt, ap);
	va_end(ap);
	return -1;
}

static int cut(pcapng *ng, uint64_t at, uint64_t need)
{
	return fail(ng, "truncated pcapng file: the block at byte %llu needs %llu bytes, the file "
	            "ends %llu bytes into it", (unsigned long long)at, (unsigned long long)need,
	            (unsigned long long)(ng->size - at));
}

static int too_short(pcapng *ng, const struct block *b, const char *what)
{
	return fail(ng, "pcapng block of type %u at byte %llu is too short for its %s",
	            (unsigned)b->type, (unsigned long long)b->at, what);
}

/* As libpcap's linktype_to_dlt: the LINKTYPE_ values a file holds are the DLT_ values but for
 * a few (only raw IP, 101, matters to the decoder). */
static int dlt_of(uint32_t linktype)
{
	switch (linktype) {
	case 100: return DLT_ATM_RFC1483;
	case 101: return DLT_RAW;
	case 102: return DLT_SLIP_BSDOS;
	case 103: return DLT_PPP_BSDOS;
	case 106: return DLT_ATM_CLIP;
	default: return (int)linktype;
	}
}

/* As libpcap's pcap_adjust_snapshot: 0, or more than the link type allows, is the most it allows. */
static uint32_t snaplen_of(int dlt, uint32_t snaplen)
{
	uint32_t most = dlt == DLT_DBUS ? 128u << 20 : dlt == DLT_EBHSCR ? 8u << 20
	                : dlt == DLT_USBPCAP ? 1u << 20 : SNAPLEN_MAX;
	return snaplen == 0 || snaplen > most ? most : snaplen;
}

/* Reads the block at ng->off and moves past it: 1, 0 at the end of the file, -1 (ng->err).
 * With sections set, a section header's byte order is read from its own magic before its
 * length; else (opening, as libpcap does then) the current section's order reads it. */
static int read_block(pcapng *ng, struct block *b, bool sections)
{
	uint64_t at = ng->off, left = ng->size - at;
	if (left == 0)
		return 0;
	if (left < 8)
		return cut(ng, at, 8);
	const uint8_t *h = fileread_bytes(ng->m, at, left < 12 ? 8 : 12);
	if (!h)
		return fail(ng, "cannot read the block at byte %llu", (unsigned long long)at);
	uint32_t type = fileread_u32(h, ng->swapped);
	if (sections && type == BT_SHB && left >= 12) {
		uint32_t magic = fileread_u32(h + 8, false);
		if (magic != BYTE_ORDER_MAGIC && magic != __builtin_bswap32(BYTE_ORDER_MAGIC))
			return fail(ng, "pcapng section header at byte %llu has no byte-order magic",
			            (unsigned long long)at);
		ng->swapped = magic != BYTE_ORDER_MAGIC;
	}
	uint32_t total = fileread_u32(h + 4, ng->swapped);
	if (total < 12 || total % 4)
		return fail(ng, "pcapng block at byte %llu has a length of %u (at least 12, a multiple "
		            "of 4)", (unsigned long long)at, total);
	if (total > BLOCK_MAX)
		return fail(ng, "pcapng block at byte %llu has a length of %u, more than %u",
		            (unsigned long long)at, total, BLOCK_MAX);
	if (total > left)
		return cut(ng, at, total);
	const uint8_t *p = fileread_bytes(ng->m, at, total);
	if (!p)
		return fail(ng, "cannot read the block at byte %llu", (unsigned long long)at);
	uint32_t trailer = fileread_u32(p + total - 4, ng->swapped);
	if (trailer != total)
		return fail(ng, "pcapng block at byte %llu has a length of %u in its header and %u in "
		            "its trailer", (unsigned long long)at, total, trailer);
	b->type = type;
	b->body = p + 8;
	b->len = total - 12;
	b->at = at;
	ng->off = at + total;
	return 1;
}

/* The interface an IDB describes: link type, snapshot length and the time stamp options
 * (if_tsresol, if_tsoffset), with libpcap's checks. 0, or -1 (ng->err). */
static int parse_idb(pcapng *ng, const struct block *b, struct iface *f)
{
	if (b->len < 8)
		return too_short(ng, b, "interface description");
	f->dlt = dlt_of(fileread_u16(b->body, ng->swapped));
	f->snaplen = snaplen_of(f->dlt, fileread_u32(b->body + 4, ng->swapped));
	f->tsresol = 1000000; /* microseconds unless said otherwise */
	f->binary = false;
	f->tsoffset = 0;
	bool saw_resol = false, saw_offset = false;
	const uint8_t *o = b->body + 8, *end = b->body + b->len;
	while (o < end) {
		if (end - o < 4)
			return too_short(ng, b, "options");
		uint16_t code = fileread_u16(o, ng->swapped), olen = fileread_u16(o + 2, ng->swapped);
		size_t padded = ((size_t)olen + 3) & ~(size_t)3;
		if ((size_t)(end - o - 4) < padded)
			return too_short(ng, b, "options");
		const uint8_t *v = o + 4;
		o += 4 + padded;
		if (code == OPT_ENDOFOPT) {
			if (olen != 0)
				return fail(ng, "interface description at byte %llu: end of options with a "
				            "length of %u", (unsigned long long)b->at, olen);
			break;
		}
		if (code == IF_TSRESOL) {
			if (olen != 1 || saw_resol)
				return fail(ng, "interface description at byte %llu: if_tsresol %s",
				            (unsigned long long)b->at, saw_resol ? "given twice" : "not 1 byte long");
			saw_resol = true;
			unsigned exp = v[0] & 0x7f;
			f->binary = v[0] & 0x80;
			if (exp > (f->binary ? 63u : 19u)) /* 2^-63 and 10^-19 are the finest in 64 bits */
				return fail(ng, "interface description at byte %llu: if_tsresol %s-%u is finer "
				            "than 64 bits hold", (unsigned long long)b->at,
				            f->binary ? "2^" : "10^", exp);
			f->tsresol = 1;
			for (unsigned i = 0; i < exp; i++)
				f->tsresol *= f->binary ? 2 : 10;
		} else if (code == IF_TSOFFSET) {
			if (olen != 8 || saw_offset)
				return fail(ng, "interface description at byte %llu: if_tsoffset %s",
				            (unsigned long long)b->at, saw_offset ? "given twice" : "not 8 bytes long");
			saw_offset = true;
			uint64_t u;
			memcpy(&u, v, 8);
			if (ng->swapped)
				u = __builtin_bswap64(u);
			memcpy(&f->tsoffset, &u, 8);
		}
	}
	return 0;
}

static int add_interface(pcapng *ng, const struct block *b)
{
	struct iface f;
	if (parse_idb(ng, b, &f) != 0)
		return -1;
	if (ng->nifaces == ng->cap) {
		if (ng->cap >= IFACES_MAX)
			return fail(ng, "more than %u interfaces in one pcapng section", IFACES_MAX);
		uint32_t cap = ng->cap ? ng->cap * 2 : 4;
		struct iface *grown = realloc(ng->ifaces, cap * sizeof(*grown));
		if (!grown)
			return fail(ng, "out of memory for %u interfaces", cap);
		ng->ifaces = grown;
		ng->cap = cap;
	}
	ng->ifaces[ng->nifaces++] = f;
	return 0;
}

bool pcapng_probe(fileread *m)
{
	const uint8_t *h = fileread_bytes(m, 0, 12);
	if (!h || fileread_u32(h, false) != BT_SHB)
		return false;
	uint32_t magic = fileread_u32(h + 8, false);
	return magic == BYTE_ORDER_MAGIC || magic == __builtin_bswap32(BYTE_ORDER_MAGIC);
}

pcapng *pcapng_open(fileread *m, char *err, size_t errlen)
{
	pcapng *ng = calloc(1, sizeof(*ng));
	if (!ng) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	ng->m = m;
	ng->size = fileread_size(m);
	const uint8_t *h = fileread_bytes(m, 0, 12);
	if (!h) {
		snprintf(err, errlen, "not a pcapng file");
		free(ng);
		return NULL;
	}
	/* the first section header: as libpcap reads it (its length checked, no trailer check) */
	ng->swapped = fileread_u32(h + 8, false) != BYTE_ORDER_MAGIC;
	uint32_t total = fileread_u32(h + 4, ng->swapped);
	if (total < SHB_MIN || total > SHB_MAX) {
		fail(ng, "pcapng section header has a length of %u (%u to %u)", total, SHB_MIN, SHB_MAX);
		goto fail;
	}
	if (total > ng->size) {
		cut(ng, 0, total);
		goto fail;
	}
	if (!(h = fileread_bytes(m, 0, 16))) {
		fail(ng, "cannot read the section header");
		goto fail;
	}
	uint16_t major = fileread_u16(h + 12, ng->swapped), minor = fileread_u16(h + 14, ng->swapped);
	if (major != 1 || (minor != 0 && minor != 2)) {
		fail(ng, "unsupported pcapng version %u.%u", major, minor);
		goto fail;
	}
	ng->off = total;
	for (;;) { /* to the first interface: blocks of other types are skipped */
		struct block b;
		int rc = read_block(ng, &b, false);
		if (rc == 0)
			fail(ng, "the pcapng file describes no interface");
		if (rc <= 0)
			goto fail;
		if (b.type == BT_EPB || b.type == BT_SPB || b.type == BT_PB) {
			fail(ng, "a packet at byte %llu comes before any interface description",
			     (unsigned long long)b.at);
			goto fail;
		}
		if (b.type == BT_IDB) {
			if (add_interface(ng, &b) != 0)
				goto fail;
			break;
		}
	}
	ng->first_dlt = ng->ifaces[0].dlt;
	return ng;
fail:
	snprintf(err, errlen, "%s", ng->err);
	pcapng_close(ng);
	return NULL;
}

int pcapng_first_dlt(const pcapng *ng) { return ng->first_dlt; }

unsigned pcapng_link_types(pcapng *ng, int *dlts, unsigned max)
{
	unsigned n = 0;
	if (max == 0)
		return 0;
	dlts[n++] = ng->first_dlt; /* the only interface read so far (pcapng_open) */
	uint64_t off = ng->off;
	char err[sizeof(ng->err)];
	memcpy(err, ng->err, sizeof(err));
	for (int k = 0; k < LOOKAHEAD_BLOCKS && n < max; k++) {
		struct block b;
		if (read_block(ng, &b, false) != 1 || b.type == BT_SHB || b.type == BT_EPB ||
		    b.type == BT_SPB || b.type == BT_PB)
			break;
		if (b.type != BT_IDB || b.len < 8)
			continue;
		int dlt = dlt_of(fileread_u16(b.body, ng->swapped));
		unsigned j = 0;
		while (j < n && dlts[j] != dlt)
			j++;
		if (j == n)
			dlts[n++] = dlt;
	}
	ng->off = off;
	memcpy(ng->err, err, sizeof(err));
	return n;
}

/* The writer's byte order of the fields some link types keep in it turned into this host's, as
 * libpcap does for sections written in the other byte order (pcap-util.c): NFLOG's TLV headers,
 * the CAN ID of SocketCAN frames under Linux cooked headers. On a copy; the packet otherwise. */
static const uint8_t *host_order(pcapng *ng, int dlt, const uint8_t *data, uint32_t caplen,
                                 uint32_t len)
{
	if ((dlt != DLT_NFLOG && dlt != DLT_LINUX_SLL && dlt != DLT_LINUX_SLL2) || caplen < 4)
		return data; /* nothing to turn */
	if (caplen > ng->scratch_cap) {
		uint8_t *grown = realloc(ng->scratch, caplen);
		if (!grown)
			return NULL;
		ng->scratch = grown;
		ng->scratch_cap = caplen;
	}
	uint8_t *p = ng->scratch;
	memcpy(p, data, caplen);
	if (dlt == DLT_NFLOG) {
		/* a 4-byte header (version 0), then TLVs whose type and length are host-ordered */
		if (caplen < 4 || len < 4 || p[1] != 0)
			return p;
		for (uint32_t at = 4, cap_left = caplen - 4, len_left = len - 4; cap_left >= 4;) {
			uint8_t t;
			t = p[at], p[at] = p[at + 1], p[at + 1] = t;         /* tlv_length */
			t = p[at + 2], p[at + 2] = p[at + 3], p[at + 3] = t; /* tlv_type */
			uint32_t size = ((uint32_t)fileread_u16(p + at, false) + 3) & ~3u; /* now in this host's order */
			if (size < 4 || cap_left < size || len_left < size)
				break;
			at += size;
			cap_left -= size;
			len_left -= size;
		}
		return p;
	}
	uint32_t hdr = dlt == DLT_LINUX_SLL ? 16 : 20;
	if (caplen < hdr || len < hdr)
		return p;
	const uint8_t *proto = dlt == DLT_LINUX_SLL ? p + 14 : p; /* big-endian in both */
	unsigned protocol = (unsigned)proto[0] << 8 | proto[1];
	if ((protocol == SLL_P_CAN || protocol == SLL_P_CANFD) && caplen - hdr >= 4 && len - hdr >= 4) {
		uint8_t *id = p + hdr;
		uint8_t t;
		t = id[0], id[0] = id[3], id[3] = t;
		t = id[1], id[1] = id[2], id[2] = t;
	}
	return p;
}

/* A time stamp in the interface's units as microseconds, converted as libpcap converts it to a
 * struct timeval (tv_sec, then tv_usec through an int) and capture.c to microseconds. */
static uint64_t micros(const struct iface *f, uint64_t t)
{
	const uint64_t us = 1000000u;
	uint64_t sec = t / f->tsresol + (uint64_t)f->tsoffset;
	uint64_t frac = t % f->tsresol;
	if (f->tsresol > us)
		frac = f->binary ? frac * us / f->tsresol : frac / (f->tsresol / us);
	else if (f->tsresol < us)
		frac = f->binary ? frac * us / f->tsresol : frac * (us / f->tsresol);
	int32_t usec = (int32_t)(uint32_t)frac; /* libpcap's (int) cast */
	return sec * us + (uint64_t)(int64_t)usec;
}

int pcapng_next(pcapng *ng, struct capture_rec *r)
{
	for (;;) {
		struct block b;
		int rc = read_block(ng, &b, true);
		if (rc <= 0)
			return rc;
		uint32_t ifc, caplen, len, fixed;
		uint64_t t;
		const uint8_t *p = b.body;
		switch (b.type) {
		case BT_EPB:
		case BT_PB:
			fixed = 20;
			if (b.len < fixed)
				return too_short(ng, &b, "packet header");
			ifc = b.type == BT_EPB ? fileread_u32(p, ng->swapped) : fileread_u16(p, ng->swapped);
			t = (uint64_t)fileread_u32(p + 4, ng->swapped) << 32 | fileread_u32(p + 8, ng->swapped);
			caplen = fileread_u32(p + 12, ng->swapped);
			len = fileread_u32(p + 16, ng->swapped);
			break;
		case BT_SPB:
			fixed = 4;
			if (b.len < fixed)
				return too_short(ng, &b, "packet header");
			ifc = 0; /* the section's first interface, with no time stamp */
			t = 0;
			len = fileread_u32(p, ng->swapped);
			caplen = ng->nifaces && len > ng->ifaces[0].snaplen ? ng->ifaces[0].snaplen : len;
			break;
		case BT_IDB:
			if (add_interface(ng, &b) != 0)
				return -1;
			continue;
		case BT_SHB:
			if (b.len < 16)
				return too_short(ng, &b, "section header");
			if (fileread_u16(p + 4, ng->swapped) != 1)
				return fail(ng, "pcapng section at byte %llu has major version %u",
				            (unsigned long long)b.at, fileread_u16(p + 4, ng->swapped));
			ng->nifaces = 0; /* a section describes its own interfaces */
			continue;
		default:
			continue; /* statistics, name resolution, comments, ... */
		}
		if (ifc >= ng->nifaces)
			return fail(ng, "the packet at byte %llu is on interface %u, which its section does "
			            "not describe", (unsigned long long)b.at, ifc);
		const struct iface *f = &ng->ifaces[ifc];
		if (caplen > f->snaplen)
			return fail(ng, "the packet at byte %llu has %u bytes captured, more than its "
			            "interface's snapshot length %u", (unsigned long long)b.at, caplen,
			            f->snaplen);
		if (caplen > b.len - fixed)
			return too_short(ng, &b, "packet");
		const uint8_t *data = p + fixed;
		if (ng->swapped && !(data = host_order(ng, f->dlt, data, caplen, len)))
			return fail(ng, "out of memory");
		r->data = data;
		r->caplen = caplen;
		r->len = len;
		r->ts_us = micros(f, t);
		r->dlt = f->dlt;
		return 1;
	}
}

const char *pcapng_error(const pcapng *ng) { return ng->err; }

void pcapng_close(pcapng *ng)
{
	if (!ng)
		return;
	free(ng->ifaces);
	free(ng->scratch);
	free(ng);
}
