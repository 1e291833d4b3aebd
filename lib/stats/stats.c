/*
 * stats.c - Mann-Whitney U, Hodges-Lehmann shift and interval, medians,
 * MAD, the median's standard error, normal and t quantiles (see stats.h).  Checked against tests/unit/compare_ref.py, which
 * computes the same numbers by brute force.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "isc_stats.h"
#include "isc_util.h" /* isc_sort */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

void isc_sort_i64(int64_t *v, size_t n)
{
	isc_sort(v, n, sizeof(*v), cmp_i64);
}

double isc_median_sorted(const int64_t *x, size_t n)
{
	return n % 2 ? (double)x[n / 2] : ((double)x[n / 2 - 1] + (double)x[n / 2]) / 2;
}

void isc_median_mad(double *v, size_t n, double *median, double *mad)
{
	qsort(v, n, sizeof(*v), cmp_dbl);
	double m = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	for (size_t i = 0; i < n; i++)
		v[i] = fabs(v[i] - m);
	qsort(v, n, sizeof(*v), cmp_dbl);
	*median = m;
	*mad = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double isc_norm_isf(double q)
{
	double lo = -40, hi = 40;
	for (int i = 0; i < 200 && hi - lo > 1e-12; i++) {
		double mid = (lo + hi) / 2;
		if (0.5 * erfc(mid / M_SQRT2) > q)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

/*
 * P(|T| < t) for Student's t with df degrees of freedom, from the finite
 * series of Abramowitz & Stegun 26.7.3 / 26.7.4 (theta = atan(t / sqrt(df))):
 * odd df   (2/pi) (theta + sin theta (cos theta + 2/3 cos^3 theta + ...)),
 * even df  sin theta (1 + 1/2 cos^2 theta + 1*3/(2*4) cos^4 theta + ...),
 * each series up to the power df - 2.
 */
static double t_two_sided_cdf(double t, unsigned df)
{
	double th = atan(t / sqrt((double)df)), c = cos(th), s = sin(th), c2 = c * c;
	double term, sum;
	if (df % 2) {
		if (df == 1)
			return 2 * th / M_PI;
		term = c;
		sum = c;
		for (unsigned k = 3; k <= df - 2; k += 2) {
			term *= c2 * (double)(k - 1) / (double)k;
			sum += term;
		}
		return 2 / M_PI * (th + s * sum);
	}
	term = 1;
	sum = 1;
	for (unsigned k = 2; k <= df - 2; k += 2) {
		term *= c2 * (double)(k - 1) / (double)k;
		sum += term;
	}
	return s * sum;
}

static double t_isf_int(double q, unsigned df)
{
	if (df > 1000)
		return isc_norm_isf(q);
	double lo = 0, hi = 1;
	while (1 - t_two_sided_cdf(hi, df) > 2 * q && hi < 1e12)
		hi *= 2;
	for (int i = 0; i < 200 && hi - lo > 1e-10 * hi; i++) {
		double mid = (lo + hi) / 2;
		if (1 - t_two_sided_cdf(mid, df) > 2 * q)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

double isc_t_isf(double q, double df)
{
	if (!(df >= 1))
		return INFINITY;
	if (df > 1000)
		return isc_norm_isf(q);
	unsigned a = (unsigned)df;
	double ta = t_isf_int(q, a);
	if (df == (double)a)
		return ta;
	/* between whole degrees of freedom: linear in 1/df */
	double tb = t_isf_int(q, a + 1);
	return ta + (tb - ta) * (1 / (double)a - 1 / df) / (1 / (double)a - 1 / (double)(a + 1));
}

double isc_median_se(const int64_t *x, size_t n)
{
	double z = isc_norm_isf(0.025), h = z * sqrt((double)n) / 2;
	double j = floor((double)n / 2 - h), k = ceil((double)n / 2 + h);
	if (j < 1 || k > (double)n)
		return 0;
	return ((double)x[(size_t)k - 1] - (double)x[(size_t)j - 1]) / (2 * z);
}

/*
 * U of y over x and the tie term sum(t^3 - t) over groups of equal values
 * in the pooled sample, with one merge-like pass over the sorted inputs.
 */
static void u_and_ties(const int64_t *xs, size_t nx, const int64_t *ys, size_t ny, double *u, double *ties)
{
	size_t i = 0, j = 0;
	double uu = 0, tt = 0;
	while (i < nx || j < ny) {
		int64_t v = i < nx && (j >= ny || xs[i] <= ys[j]) ? xs[i] : ys[j];
		size_t ci = 0, cj = 0;
		while (i < nx && xs[i] == v)
			i++, ci++;
		while (j < ny && ys[j] == v)
			j++, cj++;
		/* the cj ys equal to v beat the (i - ci) xs below v and tie with ci */
		uu += (double)cj * ((double)(i - ci) + 0.5 * (double)ci);
		double t = (double)(ci + cj);
		tt += t * t * t - t;
	}
	*u = uu;
	*ties = tt;
}

/*
 * Exact null distribution of U (y over x) for sample sizes m = nx, n = ny
 * as a cumulative array cdf[0 .. m n]: cdf[k] = P(U <= k).  Counts follow
 * f(i, j, u) = f(i-1, j, u) + f(i, j-1, u-i) (the largest of the i + j
 * values is an x, or a y above all i xs), kept as doubles.  Caller frees.
 */
static double *exact_cdf(size_t m, size_t n)
{
	size_t umax = m * n, w = umax + 1;
	double *dp = calloc((n + 1) * w, sizeof(double)), *cdf = malloc(w * sizeof(double));
	if (!dp || !cdf) {
		free(dp);
		free(cdf);
		return NULL;
	}
	for (size_t j = 0; j <= n; j++)
		dp[j * w] = 1;
	for (size_t i = 1; i <= m; i++)
		for (size_t j = 1; j <= n; j++)
			for (size_t u = i; u <= i * j; u++)
				dp[j * w + u] += dp[(j - 1) * w + u - i];
	double total = 0, acc = 0;
	for (size_t u = 0; u <= umax; u++)
		total += dp[n * w + u];
	for (size_t u = 0; u <= umax; u++) {
		acc += dp[n * w + u];
		cdf[u] = acc / total;
	}
	free(dp);
	return cdf;
}

int isc_mwu_test(const int64_t *xs, size_t nx, const int64_t *ys, size_t ny, struct isc_mwu *r)
{
	double ties;
	if (!nx || !ny)
		return -EINVAL;
	u_and_ties(xs, nx, ys, ny, &r->u, &ties);
	double mn = (double)nx * (double)ny, n = (double)(nx + ny);
	r->z = 0;
	r->exact = ties == 0 && nx <= ISC_MWU_EXACT_MAX && ny <= ISC_MWU_EXACT_MAX;
	if (r->exact) {
		double *cdf = exact_cdf(nx, ny);
		if (!cdf)
			return -ENOMEM;
		size_t k = (size_t)r->u; /* an integer without ties */
		double lo = cdf[k], hi = 1 - (k ? cdf[k - 1] : 0);
		r->p = fmin(1, 2 * fmin(lo, hi));
		free(cdf);
		return 0;
	}
	double var = mn / 12 * ((n + 1) - ties / (n * (n - 1)));
	if (var <= 0) { /* every value equal */
		r->p = 1;
		return 0;
	}
	r->z = fmax(0, fabs(r->u - mn / 2) - 0.5) / sqrt(var);
	r->p = erfc(r->z / M_SQRT2);
	return 0;
}

/* Pairs with ys[j] - xs[i] <= d. */
static uint64_t count_le(const int64_t *xs, size_t nx, const int64_t *ys, size_t ny, int64_t d)
{
	uint64_t c = 0;
	size_t i = 0; /* first x with x >= y - d; moves right as y grows */
	for (size_t j = 0; j < ny; j++) {
		while (i < nx && xs[i] < ys[j] - d)
			i++;
		c += nx - i;
	}
	return c;
}

int64_t isc_pairdiff_kth(const int64_t *xs, size_t nx, const int64_t *ys, size_t ny, uint64_t k)
{
	int64_t lo = ys[0] - xs[nx - 1], hi = ys[ny - 1] - xs[0];
	while (lo < hi) { /* smallest d with count_le(d) >= k */
		int64_t mid = lo + (hi - lo) / 2 - ((hi - lo) % 2 < 0);
		if (count_le(xs, nx, ys, ny, mid) >= k)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

int isc_hl_shift(const int64_t *xs, size_t nx, const int64_t *ys, size_t ny, double level, struct isc_hl *r)
{
	if (!nx || !ny)
		return -EINVAL;
	uint64_t N = (uint64_t)nx * ny;
	r->shift = N % 2 ? (double)isc_pairdiff_kth(xs, nx, ys, ny, N / 2 + 1)
			 : ((double)isc_pairdiff_kth(xs, nx, ys, ny, N / 2) +
			    (double)isc_pairdiff_kth(xs, nx, ys, ny, N / 2 + 1)) / 2;
	double alpha = 1 - level, u, ties;
	int64_t c = 0;
	u_and_ties(xs, nx, ys, ny, &u, &ties);
	if (ties == 0 && nx <= ISC_MWU_EXACT_MAX && ny <= ISC_MWU_EXACT_MAX) {
		double *cdf = exact_cdf(nx, ny);
		if (!cdf)
			return -ENOMEM;
		while ((uint64_t)c <= N && cdf[c] <= alpha / 2)
			c++;
		free(cdf);
	} else {
		double sd = sqrt((double)nx * (double)ny * (double)(nx + ny + 1) / 12);
		c = (int64_t)floor((double)N / 2 - isc_norm_isf(alpha / 2) * sd);
	}
	r->have_low = r->have_high = c >= 1;
	r->low = r->high = 0;
	if (c >= 1) {
		r->low = (double)isc_pairdiff_kth(xs, nx, ys, ny, (uint64_t)c);
		r->high = (double)isc_pairdiff_kth(xs, nx, ys, ny, N + 1 - (uint64_t)c);
	}
	return 0;
}
