/*
 * isc_stats.h - the stats stage (lib/stats), for the stages above it and
 * the tests, not the tools: order statistics and histograms (quantile.c),
 * a streaming least-squares slope (lsq.c), both used by the analysis pass,
 * and the distribution-free two-sample statistics and robust summaries of
 * run comparison and history (stats.c).
 *
 * Samples are int64 (nanoseconds).  Nothing here allocates more than
 * O(nx + ny) (the exact U distribution: O(nx * ny) doubles, for small
 * samples only) or returns owned memory.
 */
#ifndef ISC_STATS_H
#define ISC_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The exact null distribution of U is used up to this many per side, without ties. */
#define ISC_MWU_EXACT_MAX 50

/* Mann-Whitney U test of y against x (two-sided). */
struct isc_mwu {
	double u;     /* pairs with y > x, ties counted 1/2 (0 .. nx*ny) */
	double z;     /* |U - nx ny / 2| - 1/2 over the tie-corrected sigma; 0 when exact */
	double p;     /* two-sided p-value */
	bool exact;   /* p from the exact distribution (no ties, both sides <= ISC_MWU_EXACT_MAX) */
};

/*
 * U of y over x, its two-sided p-value: exact (counting all rank splits by
 * the recurrence f(m, n, u) = f(m-1, n, u-n) + f(m, n-1, u)) when there are
 * no ties and both sides have at most ISC_MWU_EXACT_MAX samples, else the
 * normal approximation with tie correction and continuity correction.
 * xs and ys must be sorted ascending.  Returns 0, -EINVAL (an empty side)
 * or -ENOMEM.
 */
int isc_mwu_test(const int64_t *xs, size_t nx, const int64_t *ys, size_t ny, struct isc_mwu *r);

/* Hodges-Lehmann shift of y against x and its distribution-free interval. */
struct isc_hl {
	double shift;          /* median of the nx*ny differences y_j - x_i */
	double low, high;      /* the interval's bounds */
	bool have_low, have_high; /* false when the samples are too few for the level */
};

/*
 * Hodges-Lehmann estimate and the interval [D(C), D(N+1-C)] over the N =
 * nx*ny sorted differences, C the largest integer with P(U <= C-1) <= a/2
 * (exact distribution in the same cases as isc_mwu_test: no ties, otherwise
 * floor(N/2 - z(1-a/2) sqrt(nx ny (nx+ny+1)/12))); the k-th difference is
 * found by bisection over integers with a linear count per step, so no
 * N-sized array is built.  xs, ys sorted.  0, -EINVAL or -ENOMEM.
 */
int isc_hl_shift(const int64_t *xs, size_t nx, const int64_t *ys, size_t ny, double level, struct isc_hl *r);

/* k-th smallest (1-based) of the differences ys[j] - xs[i]; xs, ys sorted, 1 <= k <= nx*ny. */
int64_t isc_pairdiff_kth(const int64_t *xs, size_t nx, const int64_t *ys, size_t ny, uint64_t k);

/* Median of n > 0 sorted values (mean of the middle two when n is even). */
double isc_median_sorted(const int64_t *x, size_t n);

/* Median and MAD (median absolute deviation, unscaled) of n > 0 doubles; v is reordered. */
void isc_median_mad(double *v, size_t n, double *median, double *mad);

/* Standard normal upper quantile: z with P(Z > z) = q, 0 < q < 1. */
double isc_norm_isf(double q);

/*
 * Student t upper quantile: t with P(T > t) = q for df degrees of freedom
 * (0 < q < 0.5), by bisection on the exact two-sided distribution function
 * (Abramowitz & Stegun 26.7.3/4) for whole df, linear in 1/df between them
 * (Welch-Satterthwaite df are fractional); the normal quantile above 1000
 * df, infinity below 1.
 */
double isc_t_isf(double q, double df);

/*
 * Standard error of the median of n sorted values, distribution-free: the
 * width of the order-statistic interval for the median, ranks floor(n/2 -
 * 1.96 sqrt(n)/2) and ceil(n/2 + 1.96 sqrt(n)/2), over 2 x 1.96.  0 when n
 * is too small for those ranks (n < 8).
 */
double isc_median_se(const int64_t *x, size_t n);

/* Sorts n int64 in place, ascending. */
void isc_sort_i64(int64_t *v, size_t n);

/* ---- order statistics (stats/quantile.c) --------------------------------- */
/*
 * Nearest-rank quantile of n sorted values: x[k-1] with k = ceil(p*n),
 * 1 <= k <= n.  n must be > 0.
 */
uint64_t isc_quantile_sorted(const uint64_t *x, size_t n, double p);

/*
 * Distribution-free confidence interval for the p-quantile from n samples:
 * 1-based ranks (lo, hi) of the order statistics with
 * P(x_(lo) <= q_p <= x_(hi)) >= level, from the exact binomial Bin(n, p).
 * lo = max{k : F(k-1) <= a/2}, hi = min{k : F(k-1) >= 1-a/2}, a = 1-level;
 * a bound that needs more samples than n is returned as 0.
 */
void isc_quantile_ci(size_t n, double p, double level, size_t *lo, size_t *hi);

/*
 * Linear histogram of n > 0 sorted values: k bins of equal width from x[0]
 * to x[n-1] (one bin when they are equal or k < 2).  edges (k+1 entries,
 * integers rounded up) and counts (k entries) are the caller's; bin i holds
 * edges[i] <= x < edges[i+1], the last one also x[n-1].  Returns the number
 * of bins filled in.
 */
unsigned isc_histogram_linear(const uint64_t *x, size_t n, unsigned k, uint64_t *edges, uint64_t *counts);

/* ---- streaming least squares (stats/lsq.c) --------------------------- */
/*
 * Least-squares slope of (t, y) points arriving in time order, restricted at
 * the end to a time range chosen then (after the first 10 % of the run),
 * in memory independent of the number of points: points are kept as
 * per-bucket moments in ISC_LSQ_BUCKETS time buckets whose width doubles
 * whenever the run outgrows them.  The range is rounded inwards to bucket
 * boundaries, so no point outside it is used (and at most 2/ISC_LSQ_BUCKETS
 * of the run inside it is dropped at each end).
 */
#define ISC_LSQ_BUCKETS 512
struct isc_lsq;
int isc_lsq_new(struct isc_lsq **l);
/* t in ns, non-decreasing; y any unit.  Returns 0 or -EINVAL for t going back. */
int isc_lsq_add(struct isc_lsq *l, uint64_t t_ns, double y);
/*
 * Slope in y units per second of the points with from_ns <= t < to_ns
 * (UINT64_MAX: no end), both rounded inwards to bucket boundaries; false
 * when fewer than 2 distinct times remain.  *npoints gets the points used.
 */
bool isc_lsq_slope(const struct isc_lsq *l, uint64_t from_ns, uint64_t to_ns, double *per_s, uint64_t *npoints);
void isc_lsq_free(struct isc_lsq *l);

#endif
