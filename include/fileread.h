/* fileread: a capture file read into one buffer, FILEREAD_WINDOW bytes per pread(2). libpcap
 * opens it as a stdio stream over that buffer; the records of a classic pcap file can also be
 * taken in place from the buffer, with no further copy, handing any record libpcap would treat
 * specially back to libpcap. */
#ifndef IWSCOPE_FILEREAD_H
#define IWSCOPE_FILEREAD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct capture_rec; /* one frame (capture.h): what fileread_next fills */

typedef struct fileread fileread;

/* A read-only stream over the regular file at path, read FILEREAD_WINDOW bytes at a time (so
 * memory stays one buffer, whatever the file's size); *m is its handle for the in-place reads
 * and lives until the stream is closed. NULL when path is not a non-empty regular file or
 * cannot be opened: the caller then uses fopen(), which reports why. */
FILE *fileread_open(const char *path, fileread **m);

/* Called right after libpcap opened the stream (which then stands after the file header):
 * whether the records can be read in place. True for a classic pcap file (microsecond or
 * nanosecond magic, version 2.4 or later, 16-byte record headers) whose records libpcap passes
 * on unchanged; false for pcapng and for byte-swapped files of a link type whose pseudo-header
 * libpcap would rewrite. dlt and snapshot are libpcap's pcap_datalink and pcap_snapshot. */
bool fileread_direct(fileread *m, int dlt, int snapshot);

/* The next record, in place (r->data valid until the next call; ts_us as libpcap would give
 * it, tv_sec * 10^6 + tv_usec with its signed fields): 1 with *r filled, 0 at the end of the
 * file, -1 when the record is one libpcap must read (cut short, or captured beyond the
 * snapshot length): the stream is then positioned at that record, and every later record
 * must come from libpcap too. */
int fileread_next(fileread *m, struct capture_rec *r);

/* The file's size in bytes. */
uint64_t fileread_size(const fileread *m);

/* The bytes [off, off + n) of the file, read into the buffer if it does not hold them: valid
 * until the next call on m or a read of its stream. NULL when they are not all in the file
 * or reading failed. (For readers of other formats: pcapng.c.) */
const uint8_t *fileread_bytes(fileread *m, uint64_t off, size_t n);

/* Whether the regular file at path begins with gzip's magic (1f 8b): a capture someone
 * compressed; false for "-" and for a FIFO, which is never opened a second time. */
bool fileread_gzipped(const char *path);

/* A 32- or 16-bit field of a capture file's header or block at p, in the file's byte order
 * (swapped: the other order from this machine's); the readers of pcap and pcapng share them. */
static inline uint32_t fileread_u32(const uint8_t *p, bool swapped)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return swapped ? __builtin_bswap32(v) : v;
}

static inline uint16_t fileread_u16(const uint8_t *p, bool swapped)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return swapped ? __builtin_bswap16(v) : v;
}

#endif
