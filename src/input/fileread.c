/* Capture files through one buffer. A window of the file is read into it with pread(2) and
 * moved forward as the reader goes. The stream libpcap reads is a fopencookie() whose reads
 * copy from the window; records of a classic pcap file can also be taken straight from it,
 * with no further copy. Only records libpcap passes on unchanged are taken so; at the first
 * other one (cut short, or longer than the snapshot length) libpcap reads on from there and
 * reports or trims it in its own words.
 * Not mmap: page faults cost more than the copy (bench/RESULTS.md, History). */
#define _GNU_SOURCE
#include "fileread.h"

#include <errno.h>
#include <fcntl.h>
#include <pcap/pcap.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture.h" /* struct capture_rec */
#include "config.h"

#define PCAP_FILE_HDR 24
#define PCAP_REC_HDR 16

struct fileread {
	int fd;
	FILE *stream;      /* the stdio stream over this file */
	off_t size, pos;   /* file size, next byte the stream reads */
	off_t win_off;     /* file offset of the window */
	size_t win_len;    /* bytes of the file in the buffer; 0: none */
	uint8_t *win;      /* the buffer, buf_cap bytes */
	size_t buf_cap;
	size_t next_win;   /* bytes the next window reads (at least): FILEREAD_FIRST_WINDOW,
	                    * doubling up to FILEREAD_WINDOW */
	/* in-place records */
	bool direct;       /* records are read in place (fileread_direct said so) */
	bool swapped;      /* written in the other byte order */
	bool nsec;         /* nanosecond time stamps */
	uint32_t snapshot; /* libpcap's snapshot length for the file */
	off_t rec;         /* offset of the next record */
};

/* Reads a window holding [off, off + need), off < size, into the buffer; 0 or -1. */
static int map_window(struct fileread *m, off_t off, size_t need)
{
	/* the first windows are small: a file opened only to read its first records (a merge
	 * looks at every input's first packet) costs little */
	size_t want = need < m->next_win ? m->next_win : need;
	if (m->next_win < FILEREAD_WINDOW)
		m->next_win = m->next_win * 2 < FILEREAD_WINDOW ? m->next_win * 2 : FILEREAD_WINDOW;
	off_t left = m->size - off;
	if ((off_t)want > left)
		want = (size_t)left;
	if (want > m->buf_cap) {
		uint8_t *grown = realloc(m->win, want);
		if (!grown)
			return -1;
		m->win = grown;
		m->buf_cap = want;
	}
	m->win_len = 0;
	size_t got = 0;
	while (got < want) {
		ssize_t n = pread(m->fd, m->win + got, want - got, off + (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* an error, or the file shrank: what was read may still do */
		got += (size_t)n;
	}
	if (got < need)
		return -1;
	m->win_off = off;
	m->win_len = got;
	return 0;
}

/* The bytes [off, off + n) of the file (off + n <= size), read if the window does not hold
 * them; NULL when reading failed. */
static const uint8_t *bytes_at(struct fileread *m, off_t off, size_t n)
{
	if (!m->win_len || off < m->win_off || off + (off_t)n > m->win_off + (off_t)m->win_len) {
		if (map_window(m, off, n) != 0)
			return NULL;
	}
	return m->win + (off - m->win_off);
}

uint64_t fileread_size(const fileread *m) { return (uint64_t)m->size; }

const uint8_t *fileread_bytes(fileread *m, uint64_t off, size_t n)
{
	if (off > (uint64_t)m->size || n > (uint64_t)m->size - off)
		return NULL;
	return bytes_at(m, (off_t)off, n);
}

static ssize_t mr_read(void *cookie, char *buf, size_t len)
{
	struct fileread *m = cookie;
	size_t done = 0;
	while (done < len && m->pos < m->size) {
		off_t left = m->size - m->pos;
		size_t n = len - done;
		if ((off_t)n > left)
			n = (size_t)left;
		/* whatever of it the window holds, else a window starting here */
		if (m->win_len && m->pos >= m->win_off && m->pos < m->win_off + (off_t)m->win_len) {
			size_t in = (size_t)(m->win_off + (off_t)m->win_len - m->pos);
			if (n > in)
				n = in;
		} else if (n > FILEREAD_WINDOW) {
			n = FILEREAD_WINDOW;
		}
		const uint8_t *src = bytes_at(m, m->pos, n);
		if (!src)
			return done ? (ssize_t)done : -1;
		memcpy(buf + done, src, n);
		done += n;
		m->pos += (off_t)n;
	}
	return (ssize_t)done;
}

static int mr_seek(void *cookie, off64_t *off, int whence)
{
	struct fileread *m = cookie;
	off64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? m->pos : m->size;
	off64_t to = base + *off;
	if (to < 0) {
		errno = EINVAL;
		return -1;
	}
	m->pos = to;
	*off = to;
	return 0;
}

static int mr_close(void *cookie)
{
	struct fileread *m = cookie;
	free(m->win);
	close(m->fd);
	free(m);
	return 0;
}

/* Whether path names a regular file. A FIFO is never opened to find out: opening and closing
 * it would let its writer in and leave it writing into a pipe with no reader (EPIPE), or wait
 * for another writer. */
static bool regular_file(const char *path)
{
	struct stat st;
	return strcmp(path, "-") && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

FILE *fileread_open(const char *path, fileread **out)
{
	if (!regular_file(path))
		return NULL;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
		close(fd);
		return NULL;
	}
	struct fileread *m = calloc(1, sizeof(*m));
	if (!m) {
		close(fd);
		return NULL;
	}
	m->fd = fd;
	m->size = st.st_size;
	m->next_win = FILEREAD_FIRST_WINDOW < FILEREAD_WINDOW ? FILEREAD_FIRST_WINDOW : FILEREAD_WINDOW;
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	cookie_io_functions_t io = { .read = mr_read, .seek = mr_seek, .close = mr_close };
	FILE *f = fopencookie(m, "r", io);
	if (!f) {
		close(fd);
		free(m);
		return NULL;
	}
	/* a small buffer: libpcap's 16-byte record headers come from it, while fread hands a
	 * request larger than the buffer (a packet) straight to mr_read, so most bytes are
	 * copied once */
	setvbuf(f, NULL, _IOFBF, FILEREAD_STDIO_BUF);
	m->stream = f;
	*out = m;
	return f;
}

bool fileread_direct(fileread *m, int dlt, int snapshot)
{
	m->direct = false;
	if (m->size < PCAP_FILE_HDR || snapshot <= 0)
		return false;
	const uint8_t *h = bytes_at(m, 0, PCAP_FILE_HDR);
	if (!h)
		return false;
	uint32_t magic;
	memcpy(&magic, h, 4);
	bool swapped = false, nsec = false;
	switch (magic) {
	case 0xa1b2c3d4u: break;
	case 0xa1b23c4du: nsec = true; break;
	case 0xd4c3b2a1u: swapped = true; break;
	case 0x4d3cb2a1u: swapped = nsec = true; break;
	default: return false; /* pcapng, or a variant with longer record headers */
	}
	/* before 2.4, caplen and len may be swapped within a record: libpcap sorts that out */
	uint16_t major = fileread_u16(h + 4, swapped), minor = fileread_u16(h + 6, swapped);
	if (major != 2 || minor < 4)
		return false;
	/* libpcap rewrites the host-order pseudo-headers of some link types (Linux cooked,
	 * NFLOG, USB ...) in byte-swapped files; only types with none are taken in place */
	if (swapped && dlt != DLT_EN10MB && dlt != DLT_RAW && dlt != DLT_IPV4 && dlt != DLT_IPV6)
		return false;
	if (dlt == DLT_USB_LINUX || dlt == DLT_USB_LINUX_MMAPPED)
		return false; /* libpcap may correct their lengths */
	m->swapped = swapped;
	m->nsec = nsec;
	m->snapshot = (uint32_t)snapshot;
	m->rec = PCAP_FILE_HDR;
	m->direct = true;
	return true;
}

/* Hands the rest of the file to libpcap, starting at the record at m->rec. */
static int hand_over(struct fileread *m)
{
	m->direct = false;
	if (fseeko(m->stream, m->rec, SEEK_SET) != 0)
		m->pos = m->rec; /* cannot fail for this stream; keep the position right anyway */
	return -1;
}

int fileread_next(fileread *m, struct capture_rec *r)
{
	if (!m->direct)
		return -1;
	if (m->rec == m->size)
		return 0;
	if (m->size - m->rec < PCAP_REC_HDR)
		return hand_over(m); /* a cut header: libpcap says so */
	/* mostly the whole record is in the window already: no call to look it up */
	off_t win_end = m->win_off + (off_t)m->win_len;
	bool in_win = m->win_len && m->rec >= m->win_off && m->rec + PCAP_REC_HDR <= win_end;
	const uint8_t *h = in_win ? m->win + (m->rec - m->win_off) : bytes_at(m, m->rec, PCAP_REC_HDR);
	if (!h)
		return hand_over(m);
	uint32_t caplen = fileread_u32(h + 8, m->swapped);
	if (caplen > m->snapshot || (uint64_t)(m->size - m->rec - PCAP_REC_HDR) < caplen)
		return hand_over(m); /* libpcap trims it, refuses it or reports the cut */
	if (!in_win || m->rec + PCAP_REC_HDR + (off_t)caplen > win_end) {
		h = bytes_at(m, m->rec, PCAP_REC_HDR + (size_t)caplen);
		if (!h)
			return hand_over(m);
		win_end = m->win_off + (off_t)m->win_len;
	}
	/* as libpcap 1.10 widens them: its on-disk time stamp fields are signed 32-bit, but a
	 * byte swap yields them unsigned; nanoseconds are divided by 1000 */
	int64_t sec = m->swapped ? (int64_t)fileread_u32(h, true) : (int32_t)fileread_u32(h, false);
	int64_t frac = m->swapped ? (int64_t)fileread_u32(h + 4, true) : (int32_t)fileread_u32(h + 4, false);
	if (m->nsec)
		frac /= 1000;
	r->ts_us = (uint64_t)sec * 1000000u + (uint64_t)frac;
	r->caplen = caplen;
	r->len = fileread_u32(h + 12, m->swapped);
	r->data = h + PCAP_REC_HDR;
	m->rec += PCAP_REC_HDR + (off_t)caplen;
	/* two records ahead, the header and first lines of the packet: each record is new,
	 * cold memory, and one record ahead is too close to hide the miss. The next record's
	 * header, which says where that one starts, was fetched the same way one call ago. */
	r->next = NULL;
	if (m->rec + PCAP_REC_HDR <= win_end) {
		uint32_t next_cap = fileread_u32(m->win + (m->rec - m->win_off) + 8, m->swapped);
		off_t after = m->rec + PCAP_REC_HDR + (off_t)next_cap;
		if (next_cap <= m->snapshot && after <= win_end) { /* the next frame, whole: peeked */
			r->next = m->win + (m->rec - m->win_off) + PCAP_REC_HDR;
			r->next_caplen = next_cap;
		}
		if (next_cap <= m->snapshot && after + 3 * 64 <= win_end) {
			const uint8_t *p = m->win + (after - m->win_off);
			__builtin_prefetch(p);
			__builtin_prefetch(p + 64);
			__builtin_prefetch(p + 128);
		}
	}
	return 1;
}

bool fileread_gzipped(const char *path)
{
	unsigned char m[2];
	FILE *f = regular_file(path) ? fopen(path, "rb") : NULL;
	bool gz = f && fread(m, 1, 2, f) == 2 && m[0] == 0x1f && m[1] == 0x8b;
	if (f)
		fclose(f);
	return gz;
}
