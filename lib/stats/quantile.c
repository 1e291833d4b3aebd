/*
 * quantile.c - order statistics for per-iteration latencies: the
 * nearest-rank quantile and its distribution-free confidence interval.
 *
 * Why order statistics: latencies are skewed (GC pauses, allocator growth)
 * and the iteration count can be small, so neither a normal approximation
 * nor a bootstrap is trustworthy.  The number of samples below the true
 * p-quantile q_p is Bin(n, p) whatever the distribution, which gives exact
 * ranks for the interval:
 *
 *   P(x_(lo) <= q_p <= x_(hi)) >= F(hi-1) - F(lo-1),  F = Bin(n,p) CDF
 */
#include <math.h>
#include <string.h>

#include "isc_stats.h"

uint64_t isc_quantile_sorted(const uint64_t *x, size_t n, double p)
{
	double r = ceil(p * (double)n);
	size_t k = r < 1 ? 1 : r > (double)n ? n : (size_t)r;
	return x[k - 1];
}

/* log of the Bin(n,p) probability mass at k. */
static double log_pmf(size_t n, size_t k, double p)
{
	return lgamma((double)n + 1) - lgamma((double)k + 1) - lgamma((double)(n - k) + 1) +
	       (double)k * log(p) + (double)(n - k) * log1p(-p);
}

void isc_quantile_ci(size_t n, double p, double level, size_t *lo, size_t *hi)
{
	double a = 1 - level, cdf = 0;
	*lo = *hi = 0;
	if (n == 0 || !(p > 0 && p < 1) || !(a > 0 && a < 1))
		return;
	for (size_t k = 1; k <= n; k++) {
		cdf += exp(log_pmf(n, k - 1, p)); /* now cdf = F(k-1) */
		if (cdf <= a / 2)
			*lo = k;
		if (cdf >= 1 - a / 2) {
			*hi = k;
			return;
		}
	}
}

/*
 * Edges are rounded up, edge_i = min + ceil(i R / k) with R = max - min,
 * computed as i q + ceil(i r / k) (R = q k + r) so nothing overflows; the
 * sorted values are then dealt into bins in one sweep.
 */
unsigned isc_histogram_linear(const uint64_t *x, size_t n, unsigned k, uint64_t *edges, uint64_t *counts)
{
	uint64_t range = x[n - 1] - x[0];
	if (range == 0 || k < 2)
		k = 1;
	uint64_t q = range / k, r = range % k;
	for (unsigned i = 0; i <= k; i++)
		edges[i] = x[0] + i * q + (i * r + k - 1) / k;
	memset(counts, 0, k * sizeof(*counts));
	unsigned b = 0;
	for (size_t j = 0; j < n; j++) {
		while (b + 1 < k && x[j] >= edges[b + 1])
			b++;
		counts[b]++;
	}
	return k;
}
