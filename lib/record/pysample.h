/* pysample.h - the recorder's out-of-process Python stack sampler (pysample.c). */
#ifndef ISC_PYSAMPLE_H
#define ISC_PYSAMPLE_H

#include <sys/types.h>

#include "isc.h"

struct isc_pysampler;

struct isc_pysampler_hooks {
	void *ctx;
	/* STRING_DEF records of pid, to be written before the tick's samples. */
	void (*strings)(void *ctx, pid_t pid, const void *records, size_t len);
	/* A process whose stacks cannot be read: the one-line reason (the
	 * recorder prints it once and writes a WARNING record). */
	void (*warn)(void *ctx, pid_t pid, const char *msg);
};

int isc_pysampler_new(struct isc_pysampler **s, const struct isc_pysampler_hooks *h);
/*
 * Samples the Python threads of the given processes, appending one
 * PY_SAMPLE record per thread (ts = now) to b.  Processes are probed on
 * first sight (ELF symbols, version, layout check) and then sampled each
 * tick; a process that exits mid-read is dropped quietly.
 */
void isc_pysampler_tick(struct isc_pysampler *s, const pid_t *pids, size_t n, uint64_t now,
			struct isc_buf *b, uint64_t *last_ts);
/* The sampler's totals for the PY_SAMPLER record: ticks, stacks written,
 * remote reads, reads that failed. */
void isc_pysampler_stats(const struct isc_pysampler *s, uint64_t v[4]);
void isc_pysampler_free(struct isc_pysampler *s);

#endif
