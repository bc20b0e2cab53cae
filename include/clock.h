/* clock: monotonic time for idle timers, commits and redraws, and the wall clock for what is
 * compared with packets' times or stored (never capture time, which comes from the packets).
 * One helper of each instead of one per file. */
#ifndef IWSCOPE_CLOCK_H
#define IWSCOPE_CLOCK_H

#include <stdint.h>
#include <sys/time.h>
#include <time.h>

/* Microseconds on CLOCK_MONOTONIC: only differences mean anything. */
static inline uint64_t clock_mono_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

/* Microseconds since the epoch: the time a live packet is stamped with, and a run's start. */
static inline int64_t clock_wall_us(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

#endif
