/* Bounds-free big-endian reads from a byte pointer; callers check bounds first (tcpdump
 * extract.h). Built on shifts: no unaligned casts. */
#ifndef IWSCOPE_BYTES_H
#define IWSCOPE_BYTES_H

#include <stdint.h>

static inline uint16_t rd_be16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }
static inline uint32_t rd_be32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint32_t rd_le32(const uint8_t *p)
{
	return ((uint32_t)p[3] << 24) | ((uint32_t)p[2] << 16) | ((uint32_t)p[1] << 8) | p[0];
}

#endif
