/* test_pysamp.c - the statistics of sampled stacks (lib/analyze/analyze_pysample.c). */
#include <math.h>

#include "analyze_pysample.h"
#include "tap.h"

/* Wilson score intervals at 95 %: 81/263 and 1/29 as in Newcombe (1998), Stat. Med. 17, Table I; the
 * others from the closed form computed by hand. */
static void test_wilson(void)
{
	static const struct {
		uint64_t k, n;
		double lo, hi;
	} v[] = {
		{ 0, 10, 0.0, 0.2775 }, { 5, 10, 0.2366, 0.7634 }, { 10, 10, 0.7225, 1.0 },
		{ 1, 29, 0.0061, 0.1718 }, { 81, 263, 0.2553, 0.3662 },
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		double lo, hi;
		isc_wilson95(v[i].k, v[i].n, &lo, &hi);
		ok(fabs(lo - v[i].lo) < 6e-4 && fabs(hi - v[i].hi) < 6e-4, "Wilson 95 %% of %llu/%llu: %.4f-%.4f (want %.4f-%.4f)",
		   (unsigned long long)v[i].k, (unsigned long long)v[i].n, lo, hi, v[i].lo, v[i].hi);
	}
	double lo, hi;
	isc_wilson95(0, 0, &lo, &hi);
	ok(lo == 0 && hi == 0, "no samples: an empty interval");
}

int main(void)
{
	test_wilson();
	return tap_done();
}
