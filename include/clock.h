/* clock: monotonic wall time for idle timers, commits and redraws (never capture time, which
 * comes from the packets). One helper instead of one per file. */
#ifndef IWSCOPE_CLOCK_H
#define IWSCOPE_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Microseconds on CLOCK_MONOTONIC: only differences mean anything. */
static inline uint64_t clock_mono_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

#endif
