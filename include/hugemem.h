/* hugemem: memory for large blocks that are used from end to end soon after they are
 * allocated (the flow table's chunks, the stage's batches), in whole 2 MiB pages the kernel
 * may back with transparent huge pages: one page fault per 2 MiB instead of 512. On the
 * benchmark's VM a fault costs 10-14 us; a 2 MiB page about half as much as its 512. */
#ifndef IWSCOPE_HUGEMEM_H
#define IWSCOPE_HUGEMEM_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGEMEM_PAGE ((size_t)2 << 20)

/* size bytes (zeroed when zero is set), 2 MiB-aligned, in whole 2 MiB pages advised
 * MADV_HUGEPAGE (advice only: without transparent huge pages they are plain pages); free()
 * frees them. NULL when out of memory. */
static inline void *huge_alloc(size_t size, bool zero)
{
	size_t whole = (size + HUGEMEM_PAGE - 1) & ~(HUGEMEM_PAGE - 1);
	void *p = aligned_alloc(HUGEMEM_PAGE, whole);
	if (!p)
		return NULL;
	madvise(p, whole, MADV_HUGEPAGE);
	if (zero)
		memset(p, 0, size);
	return p;
}

#endif
