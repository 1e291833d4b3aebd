/*
 * test_series.c - analyze_series.c: bucket placement, time-weighted values
 * across bucket edges, doubling without loss, null buckets, the cut last
 * bucket (TAP).
 */
#include <math.h>
#include <string.h>

#include "analyze_series.h"
#include "tap.h"

#define MS 1000000ull

static double at(const cJSON *ts, const char *key, int i)
{
	const cJSON *x = cJSON_GetArrayItem(cJSON_GetObjectItem(ts, key), i);
	return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

static cJSON *emit(const struct isc_series *s, uint64_t start, uint64_t end)
{
	cJSON *root = cJSON_CreateObject();
	if (isc_series_emit(s, start, end, 2, root))
		return NULL;
	return root;
}

int main(void)
{
	struct isc_series *s;
	if (!ok(isc_series_new(&s) == 0, "new"))
		return tap_done();
	isc_series_origin(s, 100 * MS);
	/* 1.5 ms busy starting at 0.5 ms: 50 % of bucket 0, 100 % of bucket 1 */
	ok(isc_series_interval(s, ISC_SER_GPU_BUSY, 100 * MS + MS / 2, 102 * MS, 100) == 0, "interval");
	ok(isc_series_interval(s, ISC_SER_GPU_BUSY, 0, 1, NAN) < 0, "NaN refused");
	ok(isc_series_point(s, ISC_SER_GPU_BUSY, 0, 1) < 0, "point on a time-weighted channel refused");
	ok(isc_series_interval(s, ISC_SER_RSS, 0, 1, 1) < 0, "interval on a point channel refused");
	isc_series_point(s, ISC_SER_RSS, 100 * MS + 10, 5);
	isc_series_point(s, ISC_SER_RSS, 100 * MS + 20, 7);
	isc_series_point(s, ISC_SER_GPU_MEM, 100 * MS + 10, 9);
	isc_series_point(s, ISC_SER_GPU_MEM, 100 * MS + 20, 3);
	isc_series_point(s, ISC_SER_RUNNABLE, 103 * MS, 1);
	isc_series_point(s, ISC_SER_RUNNABLE, 103 * MS + 1, 2);
	cJSON *root = emit(s, 100 * MS, 104 * MS);
	const cJSON *ts = cJSON_GetObjectItem(root, "timeseries");
	ok(ts && cJSON_GetObjectItem(ts, "buckets")->valuedouble == 4, "4 buckets of 1 ms for a 4 ms run");
	ok(at(ts, "gpu_busy_pct", 0) == 50 && at(ts, "gpu_busy_pct", 1) == 100 && at(ts, "gpu_busy_pct", 2) == 0,
	   "time-weighted: 50, 100, then 0 where untouched");
	ok(at(ts, "rss_bytes", 0) == 7 && isnan(at(ts, "rss_bytes", 1)), "last of the points; null without points");
	ok(at(ts, "gpu_mem_used_bytes", 0) == 9, "max of the points");
	ok(at(ts, "runnable_threads", 3) == 1.5, "mean of the points");
	ok(isnan(at(ts, "cpu_cores", 0)), "a channel without data is null everywhere");
	cJSON_Delete(root);

	/* 1 s later: buckets double to 4 ms... 1.024 s / 256 = 4 ms; nothing lost */
	isc_series_interval(s, ISC_SER_GPU_BUSY, 1099 * MS, 1100 * MS, 100);
	root = emit(s, 100 * MS, 1100 * MS);
	ts = cJSON_GetObjectItem(root, "timeseries");
	double w = cJSON_GetObjectItem(ts, "bucket_ns")->valuedouble, sum = 0;
	int n = cJSON_GetObjectItem(ts, "buckets")->valueint;
	for (int i = 0; i < n; i++)
		sum += at(ts, "gpu_busy_pct", i) / 100 * w;
	ok(w == 4 * MS && n == 250, "width doubled to 4 ms, 250 buckets for 1 s (got %.0f ns x %d)", w, n);
	ok(fabs(sum - 2.5 * MS) < 1e-3 * MS, "busy time kept across merges (%.0f ns)", sum);
	ok(at(ts, "rss_bytes", 0) == 7, "last survives merges");
	cJSON_Delete(root);
	isc_series_free(s);
	return tap_done();
}
