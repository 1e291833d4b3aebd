/*
 * analyze_series.c - bucketed channels over time (analyze_series.h).
 *
 * Doubling: with origin t0 and width w, a time t belongs to bucket
 * (t - t0) / w.  When that index reaches ISC_SERIES_BUCKETS, buckets 2i and
 * 2i+1 merge into i and w doubles, until it fits:
 *
 *     w:  |a|b|c|d|e|f|...        2w: |a+b|c+d|e+f|...
 *
 * Sums and counts add, max takes the larger, last takes the later bucket's
 * value when it has one.  No bucket ever straddles a boundary of the
 * previous width, so no value is split or lost by a merge.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "analyze_series.h"

enum agg { AGG_TIME, AGG_MEAN, AGG_MAX, AGG_LAST };

static const struct {
	const char *key;
	enum agg agg;
	double scale; /* applied to time-weighted values */
	bool cap_ncpu; /* at most ncpu: /proc CPU times advance by whole clock ticks
			  (10 ms), so a short interval can read a little above */
} chans[ISC_SER_NCHAN] = {
	[ISC_SER_CPU_CORES] = { "cpu_cores", AGG_TIME, 1, true },
	[ISC_SER_RUNNABLE] = { "runnable_threads", AGG_MEAN, 1 },
	[ISC_SER_RSS] = { "rss_bytes", AGG_LAST, 1 },
	[ISC_SER_GPU_BUSY] = { "gpu_busy_pct", AGG_TIME, 1 },
	[ISC_SER_GPU_UTIL] = { "gpu_util_pct", AGG_MEAN, 1 },
	[ISC_SER_GPU_MEM] = { "gpu_mem_used_bytes", AGG_MAX, 1 },
};

struct bucket {
	double sum, max, last;
	uint32_t n;
};

struct isc_series {
	bool have_origin;
	uint64_t t0, w;
	bool have[ISC_SER_NCHAN];
	struct bucket b[ISC_SER_NCHAN][ISC_SERIES_BUCKETS];
};

int isc_series_new(struct isc_series **s)
{
	if (!(*s = calloc(1, sizeof(**s))))
		return -ENOMEM;
	(*s)->w = ISC_SERIES_MIN_NS;
	return 0;
}

void isc_series_origin(struct isc_series *s, uint64_t t0)
{
	if (!s->have_origin) {
		s->have_origin = true;
		s->t0 = t0;
	}
}

static void merge(struct bucket *to, const struct bucket *x, const struct bucket *y)
{
	struct bucket m = *x;
	m.sum += y->sum;
	if (y->n) {
		m.max = x->n && x->max > y->max ? x->max : y->max;
		m.last = y->last;
	}
	m.n += y->n;
	*to = m;
}

/* Bucket index of t, widening the buckets as needed; t before t0 is bucket 0. */
static size_t slot(struct isc_series *s, uint64_t t)
{
	isc_series_origin(s, t);
	uint64_t off = t > s->t0 ? t - s->t0 : 0;
	while (off / s->w >= ISC_SERIES_BUCKETS) {
		for (int c = 0; c < ISC_SER_NCHAN; c++) {
			struct bucket *b = s->b[c];
			for (size_t i = 0; i < ISC_SERIES_BUCKETS / 2; i++)
				merge(&b[i], &b[2 * i], &b[2 * i + 1]);
			memset(&b[ISC_SERIES_BUCKETS / 2], 0, sizeof(*b) * (ISC_SERIES_BUCKETS / 2));
		}
		s->w *= 2;
	}
	return (size_t)(off / s->w);
}

int isc_series_interval(struct isc_series *s, enum isc_series_chan c, uint64_t from, uint64_t to, double v)
{
	if ((unsigned)c >= ISC_SER_NCHAN || chans[c].agg != AGG_TIME || !isfinite(v))
		return -EINVAL;
	if (to <= from)
		return 0;
	s->have[c] = true;
	slot(s, to - 1); /* widen first: indices below stay valid */
	if (from < s->t0)
		from = s->t0;
	if (to <= from)
		return 0;
	for (size_t i = slot(s, from); from < to; i++) {
		uint64_t end = s->t0 + (i + 1) * s->w;
		uint64_t part = (end < to ? end : to) - from;
		s->b[c][i].sum += v * (double)part;
		s->b[c][i].n = 1;
		from += part;
	}
	return 0;
}

int isc_series_point(struct isc_series *s, enum isc_series_chan c, uint64_t t, double v)
{
	if ((unsigned)c >= ISC_SER_NCHAN || chans[c].agg == AGG_TIME || !isfinite(v))
		return -EINVAL;
	struct bucket *b = &s->b[c][slot(s, t)];
	s->have[c] = true;
	b->sum += v;
	if (!b->n || v > b->max)
		b->max = v;
	b->last = v;
	b->n++;
	return 0;
}

int isc_series_emit(const struct isc_series *s, uint64_t start_ts, uint64_t end_ts, unsigned ncpu, cJSON *root)
{
	/* emitting never widens: a copy takes the end time into account */
	struct isc_series *e = malloc(sizeof(*e));
	cJSON *ts = cJSON_CreateObject();
	if (!e || !ts)
		goto oom;
	*e = *s;
	isc_series_origin(e, start_ts);
	size_t n = end_ts > e->t0 ? slot(e, end_ts - 1) + 1 : 1;
	if (!cJSON_AddNumberToObject(ts, "t0_ns", (double)(e->t0 > start_ts ? e->t0 - start_ts : 0)) ||
	    !cJSON_AddNumberToObject(ts, "bucket_ns", (double)e->w) ||
	    !cJSON_AddNumberToObject(ts, "buckets", (double)n) || !cJSON_AddNumberToObject(ts, "ncpu", ncpu))
		goto oom;
	for (int c = 0; c < ISC_SER_NCHAN; c++) {
		cJSON *arr = cJSON_AddArrayToObject(ts, chans[c].key);
		if (!arr)
			goto oom;
		for (size_t i = 0; i < n; i++) {
			const struct bucket *b = &e->b[c][i];
			cJSON *x;
			if (!e->have[c] || (chans[c].agg != AGG_TIME && !b->n)) {
				x = cJSON_CreateNull();
			} else {
				double v;
				uint64_t lo = e->t0 + i * e->w, hi = lo + e->w;
				if (i == n - 1 && end_ts > lo && end_ts < hi)
					hi = end_ts; /* the last bucket is cut at the end of the run */
				switch (chans[c].agg) {
				case AGG_TIME: v = chans[c].scale * b->sum / (double)(hi - lo); break;
				case AGG_MEAN: v = b->sum / b->n; break;
				case AGG_MAX: v = b->max; break;
				default: v = b->last; break;
				}
				if (chans[c].cap_ncpu && ncpu && v > ncpu)
					v = ncpu;
				x = cJSON_CreateNumber(round(v * 1000) / 1000);
			}
			if (!x)
				goto oom;
			cJSON_AddItemToArray(arr, x);
		}
	}
	free(e);
	cJSON_DeleteItemFromObjectCaseSensitive(root, "timeseries");
	cJSON_AddItemToObject(root, "timeseries", ts);
	return 0;
oom:
	free(e);
	cJSON_Delete(ts);
	return -ENOMEM;
}

void isc_series_free(struct isc_series *s)
{
	free(s);
}
