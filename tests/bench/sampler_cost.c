/*
 * sampler_cost.c - what reading why threads block adds to a sampler tick
 * (tests/bench/sampler_cost.sh runs it; prints numbers, not a pass/fail
 * test).
 *
 *   sampler_cost PID [TICKS]
 *
 * Samples process PID (threads blocked in a pipe read, a futex, a sleep:
 * see sampler_cost.sh) TICKS times (default 400) with THREAD_WAIT records
 * on and off, alternating in pairs so that machine load hits both alike,
 * and prints the median and 90th percentile of the tick time in us for
 * each, their ratio, and the THREAD_WAIT records of one tick.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "isc.h"
#include "sampler.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: sampler_cost PID [TICKS]\n");
		return 2;
	}
	pid_t pid = (pid_t)atoi(argv[1]);
	int ticks = argc > 2 ? atoi(argv[2]) : 400;
	if (ticks < 2 || ticks > 100000)
		ticks = 400;
	struct isc_sampler *s;
	if (isc_sampler_new(&s))
		return 1;
	double *t[2] = { calloc((size_t)ticks, sizeof(double)), calloc((size_t)ticks, sizeof(double)) };
	size_t bytes[2] = { 0, 0 };
	if (!t[0] || !t[1])
		return 1;
	struct isc_buf b = { 0 };
	uint64_t last = 0;
	isc_sampler_tick(s, &pid, 1, now_ns(), false, &b, &last); /* open the files once */
	for (int i = 0; i < ticks; i++)
		for (int k = 0; k < 2; k++) {
			int on = (i + k) % 2; /* alternate which goes first */
			isc_sampler_set_waits(s, on);
			b.len = 0;
			uint64_t t0 = now_ns();
			isc_sampler_tick(s, &pid, 1, t0, false, &b, &last);
			t[on][i] = (double)(now_ns() - t0) / 1e3;
			bytes[on] += b.len;
		}
	for (int k = 0; k < 2; k++)
		qsort(t[k], (size_t)ticks, sizeof(double), cmp);
	double m0 = t[0][ticks / 2], m1 = t[1][ticks / 2];
	printf("tick without THREAD_WAIT: median %.1f us, p90 %.1f us, %.0f bytes\n", m0, t[0][ticks * 9 / 10],
	       (double)bytes[0] / ticks);
	printf("tick with THREAD_WAIT:    median %.1f us, p90 %.1f us, %.0f bytes\n", m1, t[1][ticks * 9 / 10],
	       (double)bytes[1] / ticks);
	printf("ratio with/without (median): %.2f\n", m0 > 0 ? m1 / m0 : 0);
	free(t[0]);
	free(t[1]);
	free(b.data);
	isc_sampler_free(s);
	return 0;
}
