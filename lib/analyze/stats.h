/*
 * stats.h - distribution-free two-sample statistics and robust summaries
 * for run comparison (compare.c) and history (history.c).  Library-internal;
 * the unit tests include it directly.
 *
 * Samples are int64 (nanoseconds).  Nothing here allocates more than
 * O(nx + ny) (the exact U distribution: O(nx * ny) doubles, for small
 * samples only) or returns owned memory.
 */
#ifndef ISC_ANALYZE_STATS_H
#define ISC_ANALYZE_STATS_H

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

#endif
