/* clock.c - CLOCK_MONOTONIC ns and (realtime, monotonic) pairs. */
#include <time.h>

#include "isc_record.h"

uint64_t isc_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Reads CLOCK_REALTIME between two CLOCK_MONOTONIC reads, keeps the
 * narrowest of a few tries; mono is the bracket's midpoint and bracket its
 * width, an upper bound on the pair's error.
 */
void isc_clock_pair(struct isc_clock_pair *p)
{
	p->bracket_ns = UINT64_MAX;
	for (int i = 0; i < 5; i++) {
		uint64_t a = isc_now_ns();
		uint64_t r = realtime_ns();
		uint64_t b = isc_now_ns();
		if (b - a < p->bracket_ns) {
			p->bracket_ns = b - a;
			p->mono_ns = a + (b - a) / 2;
			p->realtime_ns = r;
		}
	}
}
