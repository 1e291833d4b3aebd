/*
 * analyze_series.h - timeseries.* of the findings document: a handful of
 * channels over at most ISC_SERIES_BUCKETS time buckets, in memory that does
 * not grow with the run.  Buckets start ISC_SERIES_MIN_NS wide and double
 * (neighbours merged pairwise) whenever the run outgrows them, so the width
 * is always ISC_SERIES_MIN_NS x 2^k.  Used by analyze.c and analyze_gpu.c.
 *
 * Each channel has one way of filling a bucket (the table in
 * analyze_series.c, and formats/findings.schema.json, timeseries):
 *   time-weighted  isc_series_interval(v over [from, to)): the bucket value
 *                  is the integral of v over the bucket / the bucket width
 *                  (cores busy, % busy); untouched buckets are 0 once the
 *                  channel has data anywhere
 *   mean / max / last of the points isc_series_point() put in the bucket;
 *                  a bucket without points is null
 */
#ifndef ANALYZE_SERIES_H
#define ANALYZE_SERIES_H

#include <stdint.h>

#include <cjson/cJSON.h>

#define ISC_SERIES_BUCKETS 256
#define ISC_SERIES_MIN_NS 1000000ull

enum isc_series_chan {
	ISC_SER_CPU_CORES,   /* time-weighted: CPU cores used by the traced processes */
	ISC_SER_RUNNABLE,    /* mean: traced threads in state R per sample round */
	ISC_SER_RSS,         /* last: RSS of the live traced processes, bytes */
	ISC_SER_GPU_BUSY,    /* time-weighted x 100: any GPU op running, % */
	ISC_SER_GPU_UTIL,    /* mean: NVML utilization % */
	ISC_SER_GPU_MEM,     /* max: NVML memory used, bytes (sum over devices) */
	ISC_SER_NCHAN
};

struct isc_series;

int isc_series_new(struct isc_series **s);
/* Time of the start of bucket 0; the first call wins.  Earlier times land in bucket 0. */
void isc_series_origin(struct isc_series *s, uint64_t t0);
/* Adds v for every ns of [from, to) (time-weighted channels).  0 or -EINVAL (other channel). */
int isc_series_interval(struct isc_series *s, enum isc_series_chan c, uint64_t from, uint64_t to, double v);
/* Adds the point (t, v) (mean / max / last channels).  0 or -EINVAL (time-weighted channel). */
int isc_series_point(struct isc_series *s, enum isc_series_chan c, uint64_t t, double v);
/*
 * Adds root.timeseries covering [origin, end_ts]; times relative to
 * start_ts (summary.start_ns).  ncpu is reported as is.  0 or -ENOMEM.
 */
int isc_series_emit(const struct isc_series *s, uint64_t start_ts, uint64_t end_ts, unsigned ncpu, cJSON *root);
void isc_series_free(struct isc_series *s);

#endif
