/*
 * lsq.c - streaming least-squares slope (RSS growth) in bounded
 * memory.  The cut ("after the first 10 % of the run") is only known at the
 * end, so points are summarised per time bucket as moments that can be
 * merged exactly (Chan et al.):
 *
 *   bucket = { n, mean_t, mean_y, Stt = sum (t-mean_t)^2, Sty = sum (t-mean_t)(y-mean_y) }
 *
 *   |b0|b1|b2| ... |b511|   width w      a point past b511:
 *   |b0+b1|b2+b3|...|  ...  width 2w     merge pairs, double w, retry
 *
 * slope = Sty / Stt over the merged buckets at or after the cut.  Times are
 * kept in seconds from the first point so the moments stay well conditioned.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "isc_stats.h"

struct moments {
	uint64_t n;
	double mt, my, stt, sty;
};

struct isc_lsq {
	bool started;
	uint64_t origin_ns, width_ns, last_ns;
	struct moments b[ISC_LSQ_BUCKETS];
};

int isc_lsq_new(struct isc_lsq **l)
{
	*l = calloc(1, sizeof(**l));
	if (!*l)
		return -ENOMEM;
	(*l)->width_ns = 1000000; /* 1 ms: 0.5 s before the first doubling */
	return 0;
}

void isc_lsq_free(struct isc_lsq *l)
{
	free(l);
}

/* a += b (b is unchanged). */
static void merge(struct moments *a, const struct moments *b)
{
	if (b->n == 0)
		return;
	if (a->n == 0) {
		*a = *b;
		return;
	}
	double na = (double)a->n, nb = (double)b->n, n = na + nb;
	double dt = b->mt - a->mt, dy = b->my - a->my;
	a->stt += b->stt + dt * dt * na * nb / n;
	a->sty += b->sty + dt * dy * na * nb / n;
	a->mt += dt * nb / n;
	a->my += dy * nb / n;
	a->n += b->n;
}

int isc_lsq_add(struct isc_lsq *l, uint64_t t_ns, double y)
{
	if (!l->started) {
		l->started = true;
		l->origin_ns = l->last_ns = t_ns;
	}
	if (t_ns < l->last_ns)
		return -EINVAL;
	l->last_ns = t_ns;
	uint64_t off = t_ns - l->origin_ns;
	while (off / l->width_ns >= ISC_LSQ_BUCKETS) {
		for (unsigned i = 0; i < ISC_LSQ_BUCKETS / 2; i++) {
			struct moments m = l->b[2 * i];
			merge(&m, &l->b[2 * i + 1]);
			l->b[i] = m;
		}
		memset(&l->b[ISC_LSQ_BUCKETS / 2], 0, sizeof(l->b) / 2);
		l->width_ns *= 2;
	}
	struct moments p = { 1, (double)off / 1e9, y, 0, 0 };
	merge(&l->b[off / l->width_ns], &p);
	return 0;
}

bool isc_lsq_slope(const struct isc_lsq *l, uint64_t from_ns, uint64_t to_ns, double *per_s, uint64_t *npoints)
{
	struct moments m = { 0 };
	uint64_t first = 0, end = ISC_LSQ_BUCKETS;
	*per_s = 0;
	*npoints = 0;
	if (!l->started || to_ns <= from_ns)
		return false;
	if (from_ns > l->origin_ns) /* round up: never let a warm-up point in */
		first = (from_ns - l->origin_ns + l->width_ns - 1) / l->width_ns;
	if (to_ns < l->origin_ns)
		return false;
	if ((to_ns - l->origin_ns) / l->width_ns < end) /* round down: buckets wholly before to_ns */
		end = (to_ns - l->origin_ns) / l->width_ns;
	for (uint64_t i = first; i < end; i++)
		merge(&m, &l->b[i]);
	*npoints = m.n;
	if (m.n < 2 || !(m.stt > 0))
		return false;
	*per_s = m.sty / m.stt;
	return true;
}
