/*
 * dist_align.c - clock offsets between the clock domains of a job
 * (isc_dist.h): the hosts of a recorded job, each Kineto file.
 *
 * Every rank leaves a symmetric collective (all_reduce, all_gather,
 * reduce_scatter, all_to_all, barrier) together, within the network's
 * latency, however late it arrived: the last rank's arrival releases all.
 * So the ends of one collective, read on two clocks, differ by the clocks'
 * offset plus that latency:
 *
 *   domain A  ----[====c1====]--------[==c2==]------    ends eA(c)
 *   domain B       --[==c1====]---------[=c2=]----      ends eB(c)
 *                              |<-d(c1)->|               d(c) = eA(c) - eB(c)
 *
 *   offset(B) = median over c of d(c)       uncertainty = max |d(c) - offset(B)|
 *
 * eX(c) is the median end over the ranks of domain X in c.  A domain that
 * shares no collective with the reference is aligned through one that
 * does (breadth first, in domain order); one that shares none with any
 * aligned domain keeps offset 0 and aligned = false.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "isc_dist.h"

static int by_key_domain(const void *a, const void *b)
{
	const struct isc_align_end *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->domain != y->domain)
		return x->domain < y->domain ? -1 : 1;
	return x->end_ns < y->end_ns ? -1 : x->end_ns > y->end_ns;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* Median of n > 0 sorted values: the lower middle's and upper middle's mean, rounded toward -inf. */
static int64_t median_sorted(const int64_t *v, size_t n)
{
	int64_t a = v[(n - 1) / 2], b = v[n / 2];
	return a + (b - a) / 2 - ((b - a) % 2 < 0); /* floor((a + b) / 2) without overflow */
}

/* One domain's median end in the run [i, j) of ends sharing a key (sorted by domain, then end). */
struct dom_end {
	uint32_t domain;
	int64_t end;
};

int isc_clock_align(struct isc_align_end *ends, size_t n, size_t ndomains, uint32_t ref,
		    struct isc_align_result *out)
{
	int rc = -ENOMEM;
	memset(out, 0, ndomains * sizeof(*out));
	if (ref < ndomains)
		out[ref].aligned = true;
	if (n > 1) /* qsort may not be given NULL, which an empty list can be */
		qsort(ends, n, sizeof(*ends), by_key_domain);
	/* per key: each domain's median end */
	struct dom_end *de = malloc((n ? n : 1) * sizeof(*de));
	size_t *key_at = malloc((n + 1) * sizeof(*key_at)), nkeys = 0, nde = 0;
	int64_t *diffs = malloc((n ? n : 1) * sizeof(*diffs));
	uint32_t *queue = malloc((ndomains ? ndomains : 1) * sizeof(*queue));
	size_t *cnt = malloc((ndomains ? ndomains : 1) * sizeof(*cnt)), *first = malloc((ndomains ? ndomains : 1) * sizeof(*first));
	if (!de || !key_at || !diffs || !queue || !cnt || !first)
		goto out;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		key_at[nkeys++] = nde;
		while (j < n && ends[j].key == ends[i].key) {
			size_t k = j;
			while (k < n && ends[k].key == ends[i].key && ends[k].domain == ends[j].domain)
				k++;
			int64_t *tmp = diffs; /* scratch: the run's ends are sorted already */
			for (size_t q = j; q < k; q++)
				tmp[q - j] = ends[q].end_ns;
			de[nde++] = (struct dom_end){ ends[j].domain, median_sorted(tmp, k - j) };
			j = k;
		}
		i = j;
	}
	key_at[nkeys] = nde;
	/* breadth first from the reference: a domain is aligned to one already aligned */
	size_t qh = 0, qt = 0;
	if (ref < ndomains)
		queue[qt++] = ref;
	while (qh < qt) {
		uint32_t a = queue[qh++];
		/* every (key, b) entry of a domain b not aligned yet, against a's end of that key */
		for (uint32_t b = 0; b < ndomains; b++)
			cnt[b] = 0;
		for (size_t k = 0; k < nkeys; k++) {
			const struct dom_end *ea = NULL;
			for (size_t q = key_at[k]; q < key_at[k + 1] && !ea; q++)
				if (de[q].domain == a)
					ea = &de[q];
			for (size_t q = key_at[k]; ea && q < key_at[k + 1]; q++)
				if (!out[de[q].domain].aligned)
					cnt[de[q].domain]++;
		}
		size_t at = 0;
		for (uint32_t b = 0; b < ndomains; b++) {
			first[b] = at;
			at += cnt[b];
			cnt[b] = 0;
		}
		for (size_t k = 0; k < nkeys; k++) {
			const struct dom_end *ea = NULL;
			for (size_t q = key_at[k]; q < key_at[k + 1] && !ea; q++)
				if (de[q].domain == a)
					ea = &de[q];
			for (size_t q = key_at[k]; ea && q < key_at[k + 1]; q++) {
				uint32_t b = de[q].domain;
				if (!out[b].aligned) /* on the reference's clock: a's end plus a's offset */
					diffs[first[b] + cnt[b]++] = ea->end + out[a].offset_ns - de[q].end;
			}
		}
		for (uint32_t b = 0; b < ndomains; b++) {
			size_t nd = cnt[b];
			int64_t *d = diffs + first[b];
			if (out[b].aligned || !nd)
				continue;
			if (nd > 1) /* qsort may not be given NULL, which an empty list can be */
				qsort(d, nd, sizeof(*d), cmp_i64);
			int64_t off = median_sorted(d, nd);
			uint64_t worst = 0;
			for (size_t q = 0; q < nd; q++) {
				uint64_t r = d[q] > off ? (uint64_t)(d[q] - off) : (uint64_t)(off - d[q]);
				worst = r > worst ? r : worst;
			}
			out[b] = (struct isc_align_result){ off, worst + out[a].uncertainty_ns, nd, true };
			queue[qt++] = b;
		}
	}
	rc = 0;
out:
	free(de);
	free(key_at);
	free(diffs);
	free(queue);
	free(cnt);
	free(first);
	return rc;
}
