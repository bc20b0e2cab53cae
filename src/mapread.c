/* Capture files through mmap: a fopencookie() stream whose reads copy from a mapped window
 * of the file, moved forward (and the old one unmapped) as the reader goes. */
#define _GNU_SOURCE
#include "mapread.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"

struct mapread {
	int fd;
	off_t size, pos;   /* file size, next byte to read */
	off_t win_off;     /* file offset of the mapped window */
	size_t win_len;
	uint8_t *win;      /* NULL when nothing is mapped */
};

/* Maps the window holding pos. 0 or -1. */
static int map_window(struct mapread *m)
{
	if (m->win)
		munmap(m->win, m->win_len);
	m->win = NULL;
	long page = sysconf(_SC_PAGESIZE);
	m->win_off = m->pos - m->pos % (off_t)page;
	off_t left = m->size - m->win_off;
	m->win_len = left < (off_t)MAPREAD_WINDOW ? (size_t)left : MAPREAD_WINDOW;
	void *p = mmap(NULL, m->win_len, PROT_READ, MAP_PRIVATE, m->fd, m->win_off);
	if (p == MAP_FAILED)
		return -1;
	madvise(p, m->win_len, MADV_SEQUENTIAL | MADV_WILLNEED);
	m->win = p;
	return 0;
}

static ssize_t mr_read(void *cookie, char *buf, size_t len)
{
	struct mapread *m = cookie;
	size_t done = 0;
	while (done < len && m->pos < m->size) {
		if (!m->win || m->pos >= m->win_off + (off_t)m->win_len) {
			if (map_window(m) != 0)
				return done ? (ssize_t)done : -1;
		}
		size_t at = (size_t)(m->pos - m->win_off);
		size_t n = m->win_len - at;
		if (n > len - done)
			n = len - done;
		memcpy(buf + done, m->win + at, n);
		done += n;
		m->pos += (off_t)n;
	}
	return (ssize_t)done;
}

static int mr_seek(void *cookie, off64_t *off, int whence)
{
	struct mapread *m = cookie;
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
	struct mapread *m = cookie;
	if (m->win)
		munmap(m->win, m->win_len);
	close(m->fd);
	free(m);
	return 0;
}

FILE *mapread_open(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
		close(fd);
		return NULL;
	}
	struct mapread *m = calloc(1, sizeof(*m));
	if (!m) {
		close(fd);
		return NULL;
	}
	m->fd = fd;
	m->size = st.st_size;
	cookie_io_functions_t io = { .read = mr_read, .seek = mr_seek, .close = mr_close };
	FILE *f = fopencookie(m, "r", io);
	if (!f) {
		close(fd);
		free(m);
		return NULL;
	}
	/* a small buffer: the 16-byte record headers come from it, while fread hands a request
	 * larger than the buffer (a packet) straight to mr_read, so most bytes are copied once */
	setvbuf(f, NULL, _IOFBF, MAPREAD_STDIO_BUF);
	return f;
}
