/*
 * test_alloc_sites.c - the allocation site model (lib/analyze/alloc_sites.c)
 * on constructed event streams whose answers are known by construction:
 * estimates and their errors, a leak outranking churn five times its size,
 * a leak in plateaus, growth that stops, live at the peak, the site a death
 * is charged to, the shim's table when records were lost, and the stated
 * error's coverage over many simulated Poisson samplings.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_sites.h"
#include "tap.h"

#define MiB (1024.0 * 1024.0)
#define T_IV 524288.0 /* the sampling interval of these streams */
#define PID 100
#define S 1000000000ull /* one second */

/* The weight a sample of s bytes stands for at interval t: s / P(sampled). */
static double weight(double s, double t)
{
	return s / -expm1(-s / t);
}

struct stream {
	struct isc_asite_model *m;
	uint8_t bytes[512];
	int bad;
};

/* One TL_ALLOC of process pid at site "line" (one frame: string id 7, that line). */
static void alloc_pid(struct stream *st, uint32_t pid, uint64_t ts, uint64_t addr, double size, uint32_t line,
		      uint64_t flags)
{
	struct isc_tl_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.type = ISC_REC_TL_ALLOC;
	ev.ts = ts;
	ev.pid = pid;
	ev.tid = pid;
	uint64_t f[8] = { pid, addr, (uint64_t)size, (uint64_t)llround(weight(size, T_IV)), ISC_ALLOC_MALLOC, flags, line,
			  1 };
	memcpy(ev.f, f, sizeof(f));
	ev.nf = 8;
	unsigned n = isc_put_varint(st->bytes, 7);
	n += isc_put_varint(st->bytes + n, line);
	n += isc_put_varint(st->bytes + n, 0); /* no native frames */
	ev.bytes = st->bytes;
	ev.nbytes = n;
	st->bad |= isc_asite_event(st->m, &ev) != 0;
}

static void alloc_at(struct stream *st, uint64_t ts, uint64_t addr, double size, uint32_t line, uint64_t flags)
{
	alloc_pid(st, PID, ts, addr, size, line, flags);
}

static void free_at(struct stream *st, uint64_t ts, uint64_t addr)
{
	struct isc_tl_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.type = ISC_REC_TL_FREE;
	ev.ts = ts;
	ev.pid = PID;
	ev.tid = PID;
	ev.f[1] = addr;
	ev.nf = 6;
	st->bad |= isc_asite_event(st->m, &ev) != 0;
}

static const struct isc_asite_stats *site_of(const struct isc_asite_stats *o, size_t n, uint32_t line)
{
	for (size_t i = 0; i < n; i++)
		if (o[i].depth == 1 && o[i].frames[1] == line)
			return &o[i];
	return NULL;
}

static bool near(double a, double b, double tol)
{
	return fabs(a - b) <= tol;
}

/* Estimates of small and large allocations and their errors. */
static void test_estimates(void)
{
	struct stream st = { 0 };
	isc_asite_new(&st.m);
	/* 40 samples of 1000 bytes (site 1), 3 of 64 MiB (site 2), none freed */
	for (int i = 0; i < 40; i++)
		alloc_at(&st, (uint64_t)(i + 1) * 1000, 0x1000 + (uint64_t)i * 0x100, 1000, 1, 0);
	for (int i = 0; i < 3; i++)
		alloc_at(&st, 100000 + (uint64_t)i, 0x900000 + (uint64_t)i * 0x10000000, 64 * MiB, 2, 0);
	const struct isc_asite_stats *o;
	size_t n;
	ok(isc_asite_report(st.m, 0, &o, &n) == 0 && n == 2 && !st.bad, "two sites");
	const struct isc_asite_stats *a = site_of(o, n, 1), *b = site_of(o, n, 2);
	double w1 = (double)llround(weight(1000, T_IV));
	/* by hand: w1 = 1000 / (1 - e^(-1000/524288)) = 524788.3, so 40 of them 20991532,
	 * error sqrt(40 w1 (w1 - 1000)) = 3.316e6 (16 %: 1/sqrt(40)); 64 MiB: w = s, error 0 */
	ok(a && near(a->alloc_bytes, 40 * w1, 1) && near(a->live_end, 40 * w1, 1), "small: 40 x weight (%.0f)",
	   a ? a->alloc_bytes : -1);
	ok(a && near(a->alloc_bytes, 20991532, 40), "small: the hand computation");
	ok(a && near(a->live_end_err, sqrt(40 * w1 * (w1 - 1000)), 1) && near(a->live_end_err / a->live_end, 1 / sqrt(40), 0.002),
	   "small: error sqrt(sum w(w-s)) = 1/sqrt(n) relative (%.4f)", a ? a->live_end_err / a->live_end : -1);
	ok(b && near(b->alloc_bytes, 3 * 64 * MiB, 3) && b->alloc_err < 1, "large: exact, no error (%.1f)",
	   b ? b->alloc_err : -1);
	ok(o[0].frames[1] == 2, "ranked by live bytes without iterations: the 192 MiB site first");
	/* the allocations they stand for: 40 x w1 / 1000 = 20991.5, and 3 */
	ok(a && near(a->objects, 40 * w1 / 1000, 0.01) && b && near(b->objects, 3, 0.001),
	   "objects: sum of weight / size (%.1f, %.3f)", a ? a->objects : -1, b ? b->objects : -1);
	ok(a && a->first_ts == 1000 && a->last_ts == 100002, "the process's first and last record");
	isc_asite_free(st.m);
}

/*
 * Ten iterations (boundaries at their ends, 1 s apart): site 13 keeps
 * 4 MiB each, site 20 allocates and frees 20 MiB each; iteration 1 is
 * warm-up (steady from boundary 1: 9 intervals).  Site 30 keeps 8 MiB
 * every other iteration (a plateau leak), site 40 keeps 8 MiB in
 * iterations 1 to 4 only, site 50 keeps 8 MiB each iteration and frees
 * it all in the last one.
 */
static void test_leak_and_churn(void)
{
	struct stream st = { 0 };
	isc_asite_new(&st.m);
	uint64_t addr = 0x10000000;
	uint64_t kept50[10];
	for (int it = 1; it <= 10; it++) {
		uint64_t t0 = (uint64_t)it * S;
		alloc_at(&st, t0 + 1000, addr += 0x1000000, 4 * MiB, 13, 0);
		alloc_at(&st, t0 + 2000, addr += 0x1000000, 20 * MiB, 20, 0);
		free_at(&st, t0 + 3000, addr);
		if (it % 2 == 0)
			alloc_at(&st, t0 + 4000, addr += 0x1000000, 8 * MiB, 30, 0);
		if (it <= 4)
			alloc_at(&st, t0 + 5000, addr += 0x1000000, 8 * MiB, 40, 0);
		alloc_at(&st, t0 + 6000, kept50[it - 1] = addr += 0x1000000, 8 * MiB, 50, 0);
		if (it == 10)
			for (int k = 0; k < 10; k++)
				free_at(&st, t0 + 7000 + (uint64_t)k, kept50[k]);
		isc_asite_boundary(st.m, t0 + 900000000);
	}
	const struct isc_asite_stats *o;
	size_t n;
	ok(isc_asite_report(st.m, 1, &o, &n) == 0 && n == 5 && !st.bad, "five sites");
	const struct isc_asite_stats *leak = site_of(o, n, 13), *churn = site_of(o, n, 20), *plat = site_of(o, n, 30),
				     *stop = site_of(o, n, 40), *gone = site_of(o, n, 50);
	double w4 = (double)llround(weight(4 * MiB, T_IV)), w20 = (double)llround(weight(20 * MiB, T_IV)),
	       w8 = (double)llround(weight(8 * MiB, T_IV));
	ok(leak && leak->intervals == 9, "9 steady-state iterations");
	/* floor at boundary 1 is 4 MiB, at 10 is 40 MiB: 36 MiB retained, 4 MiB an iteration */
	ok(leak && leak->leak && near(leak->retained, 9 * w4, 1) && near(leak->leak_per_iter, w4, 1),
	   "the 4 MiB site is a leak of 4 MiB per iteration (%.0f)", leak ? leak->leak_per_iter : -1);
	ok(leak && near(leak->slope_per_iter, w4, 1) && leak->slope_err < 1, "its slope is 4 MiB per iteration, exact");
	ok(leak && near(leak->slope_per_s, w4, 1), "and 4 MiB per second (boundaries 1 s apart)");
	ok(churn && !churn->leak && churn->retained == 0 && near(churn->alloc_bytes, 10 * w20, 1) &&
		   near(churn->freed_bytes, 10 * w20, 1),
	   "the 20 MiB churn: allocated = freed = 200 MiB, nothing retained");
	ok(leak && churn && leak < churn, "the leak outranks churn five times its size");
	/* boundary 1 to 10: iterations 2 to 10 allocate 20 MiB each, freed within the iteration */
	ok(churn && near(churn->alloc_steady, 9 * w20, 1) && churn->steady_ns == 9 * S,
	   "the churn allocated 9 x 20 MiB in the steady state (%.0f MiB)", churn ? churn->alloc_steady / MiB : -1);
	/* iterations 2, 4, 6, 8, 10 each keep 8 MiB, all after boundary 1 (where 0 was live) */
	ok(plat && plat->leak && near(plat->leak_per_iter, 5 * w8 / 9, 1) && plat->leak_window == 2,
	   "8 MiB every other iteration: a leak of 40/9 MiB per iteration (%.0f), window 2",
	   plat ? plat->leak_per_iter : -1);
	ok(stop && !stop->leak && near(stop->retained, 3 * w8, 1), "growth that stopped after iteration 4 is no leak");
	ok(gone && !gone->leak && gone->retained == 0 && gone->live_end == 0, "memory freed at the end is no leak");
	/* retained: plateau 5 x 8 = 40 MiB, leak 9 x 4 = 36, stop 3 x 8 = 24 (boundary 1 to 4),
	 * churn and freed 0 each (then by bytes allocated: churn 200 MiB, freed 80 MiB) */
	ok(o[0].frames[1] == 30 && o[1].frames[1] == 13 && o[2].frames[1] == 40, "ranked by retained bytes: 40, 36, 24 MiB");
	ok(o[3].frames[1] == 20 && o[4].frames[1] == 50, "then what retains nothing, by bytes allocated");
	ok(isc_asite_report(st.m, 8, &o, &n) == 0 && site_of(o, n, 13)->intervals == 2 && !site_of(o, n, 13)->leak,
	   "two steady-state iterations are too few for a leak");
	isc_asite_free(st.m);
}

/*
 * Two processes with their own iterations, the boundaries of both marked
 * in one sequence (as the analysis marks every scope's end): A (pid 100)
 * ends an iteration at 1, 2, ... 8 s, B (pid 200) at 1.5, 2.5, ... 8.5 s;
 * a third scope's ends (0.25 s into each second) are marked too and belong
 * to no one.  A keeps 4 MiB an iteration at line 1 (after each of its
 * boundaries), B keeps 2 MiB an iteration at line 2; C (pid 300) keeps
 * 1 MiB at line 3 with no iterations.  A's steady marks are its 8 ends
 * (7 intervals); B's its last 6 (5 intervals: say its first two were
 * warm-up and an incomplete one).
 */
static void test_steady_by_process(void)
{
	struct stream st = { 0 };
	isc_asite_new(&st.m);
	uint32_t ma[8], mb[8];
	uint64_t addr = 0x10000000;
	for (int k = 0; k < 8; k++) {
		uint64_t t = (uint64_t)(k + 1) * S;
		isc_asite_boundary(st.m, t - S + S / 4); /* the third scope */
		isc_asite_boundary(st.m, t);
		ma[k] = isc_asite_nmarks(st.m);
		alloc_pid(&st, 100, t + 1000, addr += 0x1000000, 4 * MiB, 1, 0);
		alloc_pid(&st, 300, t + 2000, addr += 0x1000000, 1 * MiB, 3, 0);
		isc_asite_boundary(st.m, t + S / 2);
		mb[k] = isc_asite_nmarks(st.m);
		alloc_pid(&st, 200, t + S / 2 + 1000, addr += 0x1000000, 2 * MiB, 2, 0);
	}
	ok(isc_asite_nmarks(st.m) == 24 && ma[0] == 2 && mb[0] == 3 && ma[7] == 23, "24 boundaries numbered in order");
	struct isc_asite_steady sd[2] = { { 100, ma, 8 }, { 200, mb + 2, 6 } };
	const struct isc_asite_stats *o;
	size_t n;
	ok(isc_asite_report_steady(st.m, sd, 2, &o, &n) == 0 && n == 3 && !st.bad, "three sites");
	const struct isc_asite_stats *a = site_of(o, n, 1), *b = site_of(o, n, 2), *c = site_of(o, n, 3);
	double w4 = (double)llround(weight(4 * MiB, T_IV)), w2 = (double)llround(weight(2 * MiB, T_IV)),
	       w1 = (double)llround(weight(1 * MiB, T_IV));
	ok(a && a->intervals == 7 && a->leak && near(a->leak_per_iter, w4, 1) && near(a->slope_per_iter, w4, 1),
	   "A: 7 iterations of its own, 4 MiB each (%.0f)", a ? a->leak_per_iter : -1);
	ok(b && b->intervals == 5 && b->leak && near(b->leak_per_iter, w2, 1) && near(b->slope_per_s, w2, 1) &&
		   near(b->alloc_steady, 5 * w2, 1),
	   "B: 5 iterations of its own, 2 MiB each, 2 MiB/s");
	/* A allocated 7 x 4 MiB between its first and last steady boundary (1 s and 8 s) */
	ok(a && near(a->alloc_steady, 7 * w4, 1) && a->steady_ns == 7 * S, "A: allocated in the steady state, its span");
	ok(c && c->intervals == 0 && !c->leak && near(c->retained, 8 * w1, 1), "C: no iterations: retained = live at the end");
	ok(o[0].frames[1] == 1 && o[1].frames[1] == 2 && o[2].frames[1] == 3, "ranked by retained: 28, 10, 8 MiB");
	uint32_t bad[2] = { 5, 4 };
	struct isc_asite_steady sb = { 100, bad, 2 };
	ok(isc_asite_report_steady(st.m, &sb, 1, &o, &n) == 0 && site_of(o, n, 1)->intervals == 0,
	   "boundaries out of order: no steady state");
	isc_asite_free(st.m);
}

/* The snapshot: A 10 MiB at 10, snapshot at 15, B 5 MiB at 20, A freed at 30; a second snapshot at 35. */
static void test_snapshot(void)
{
	struct stream st = { 0 };
	isc_asite_new(&st.m);
	const struct isc_asite_stats *o;
	size_t n;
	alloc_at(&st, 10, 0xA000000, 10 * MiB, 1, 0);
	ok(isc_asite_report(st.m, 0, &o, &n) == 0 && n == 1 && o[0].live_snap == 0, "no snapshot: 0");
	isc_asite_snapshot(st.m, 15);
	alloc_at(&st, 20, 0xB000000, 5 * MiB, 2, 0);
	free_at(&st, 30, 0xA000000);
	double w10 = (double)llround(weight(10 * MiB, T_IV)), w5 = (double)llround(weight(5 * MiB, T_IV));
	ok(isc_asite_report(st.m, 0, &o, &n) == 0 && n == 2, "two sites");
	ok(near(site_of(o, n, 1)->live_snap, w10, 1) && site_of(o, n, 2)->live_snap == 0,
	   "at the snapshot: A 10 MiB, B (made later) nothing");
	ok(near(site_of(o, n, 1)->live_snap_err, sqrt(w10 * (w10 - 10 * MiB)), 1), "with A's error");
	isc_asite_snapshot(st.m, 35);
	ok(isc_asite_report(st.m, 0, &o, &n) == 0 && site_of(o, n, 1)->live_snap == 0 &&
		   near(site_of(o, n, 2)->live_snap, w5, 1),
	   "a later snapshot replaces it: A 0, B 5 MiB");
	isc_asite_free(st.m);
}

/* One line reached from two callers (stacks that differ below it) is one site. */
static void test_one_line_two_callers(void)
{
	struct stream st = { 0 };
	isc_asite_new(&st.m);
	for (uint64_t caller = 10; caller <= 20; caller += 10) {
		struct isc_tl_event ev;
		memset(&ev, 0, sizeof(ev));
		ev.type = ISC_REC_TL_ALLOC;
		ev.ts = caller;
		ev.pid = PID;
		uint64_t f[8] = { PID, 0x1000 * caller, 1 << 20, (uint64_t)llround(weight(1 << 20, T_IV)), 1, 0, caller, 2 };
		memcpy(ev.f, f, sizeof(f));
		ev.nf = 8;
		unsigned n = isc_put_varint(st.bytes, 7);
		n += isc_put_varint(st.bytes + n, 5);
		n += isc_put_varint(st.bytes + n, 8);
		n += isc_put_varint(st.bytes + n, caller);
		n += isc_put_varint(st.bytes + n, 0);
		ev.bytes = st.bytes;
		ev.nbytes = n;
		st.bad |= isc_asite_event(st.m, &ev) != 0;
	}
	const struct isc_asite_stats *o;
	size_t n;
	ok(isc_asite_report(st.m, 0, &o, &n) == 0 && n == 1 && !st.bad && o[0].alloc_count == 2,
	   "line 5 called from lines 10 and 20: one site, two samples");
	ok(n == 1 && o[0].depth == 2 && o[0].frames[3] == 10, "its stack is the first one seen");
	isc_asite_free(st.m);
}

/* Live at the process's peak: A 10 MiB, then B 5 MiB (peak 15), A freed, B 3 more. */
static void test_peak(void)
{
	struct stream st = { 0 };
	isc_asite_new(&st.m);
	alloc_at(&st, 10, 0xA000000, 10 * MiB, 1, 0);
	alloc_at(&st, 20, 0xB000000, 5 * MiB, 2, 0);
	free_at(&st, 30, 0xA000000);
	alloc_at(&st, 40, 0xC000000, 3 * MiB, 2, 0);
	const struct isc_asite_stats *o;
	size_t n;
	ok(isc_asite_report(st.m, 0, &o, &n) == 0 && n == 2, "two sites");
	const struct isc_asite_stats *a = site_of(o, n, 1), *b = site_of(o, n, 2);
	double w10 = (double)llround(weight(10 * MiB, T_IV)), w5 = (double)llround(weight(5 * MiB, T_IV)),
	       w3 = (double)llround(weight(3 * MiB, T_IV));
	ok(a && near(a->live_peak, w10, 1) && near(a->live_end, 0, 0), "A: 10 MiB at the peak, 0 at the end");
	ok(b && near(b->live_peak, w5, 1) && near(b->live_end, w5 + w3, 1), "B: 5 MiB at the peak, 8 at the end");
	ok(a && a->peak_ts == 20, "the peak was at t=20");
	isc_asite_free(st.m);
}

/*
 * A death at 10 s: site 1 holds 1 GiB since t=0 (not growing), site 2
 * grows by 10 MiB every 100 ms from 5 s on (500 MiB), site 3 grew to
 * 300 MiB until 5 s, site 4 churns 50 MiB up to the death.
 */
static void test_death(void)
{
	struct stream st = { 0 };
	isc_asite_new(&st.m);
	alloc_at(&st, 1000, 0x100000000, 1024 * MiB, 1, 0);
	for (int i = 0; i < 30; i++)
		alloc_at(&st, (uint64_t)i * S / 10 + 2000, 0x200000000 + (uint64_t)i * 0x2000000, 10 * MiB, 3, 0);
	for (int i = 0; i < 50; i++) {
		uint64_t t = 5 * S + (uint64_t)i * S / 10;
		alloc_at(&st, t, 0x300000000 + (uint64_t)i * 0x1000000, 10 * MiB, 2, 0);
		alloc_at(&st, t + 1, 0x500000000, 50 * MiB, 4, 0);
		free_at(&st, t + 2, 0x500000000);
	}
	const struct isc_asite_stats *o;
	size_t n;
	struct isc_asite_death d[8];
	ok(isc_asite_report(st.m, 0, &o, &n) == 0 && n == 4, "four sites");
	size_t k = isc_asite_death(st.m, PID, 10 * S, ISC_ASITE_DEATH_WINDOW_NS, d, 8);
	double w10 = (double)llround(weight(10 * MiB, T_IV));
	ok(k == 4, "all four at the death");
	ok(k && o[d[0].index].frames[1] == 2 && d[0].growing, "charged to the growing site (not the 1 GiB one)");
	/* in the last 2 s (from 8 s) site 2 grew by 20 allocations; the buckets are
	 * 250 ms, so the value 2 s before is read at 8.0 s exactly */
	ok(k && near(d[0].live, 50 * w10, 1) && near(d[0].growth, 20 * w10, w10 + 1), "its live bytes and growth (%.0f MiB)",
	   k ? d[0].growth / MiB : -1);
	ok(k >= 2 && o[d[1].index].frames[1] == 1 && !d[1].growing, "then the 1 GiB site, not growing");
	ok(k >= 3 && o[d[2].index].frames[1] == 3 && !d[2].growing, "then the site that stopped growing at 3 s");
	ok(k >= 4 && o[d[3].index].frames[1] == 4 && d[3].live == 0, "the churn holds nothing");
	ok(isc_asite_death(st.m, PID + 1, 10 * S, ISC_ASITE_DEATH_WINDOW_NS, d, 8) == 0, "another process: none");
	isc_asite_free(st.m);
}

/* Records lost: the shim's table (TL_ALLOC_SITE) has the whole counts. */
static void test_table(void)
{
	struct stream st = { 0 };
	isc_asite_new(&st.m);
	alloc_at(&st, 10, 0x1000, 10 * MiB, 5, 0);
	alloc_at(&st, 20, 0x2000, 10 * MiB, 5, ISC_ALLOC_F_UNTRACKED);
	free_at(&st, 30, 0x99999); /* its ALLOC was lost, site unknown */
	struct isc_tl_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.type = ISC_REC_TL_ALLOC_SITE;
	ev.ts = 40;
	ev.pid = PID;
	/* site live live_err live_count alloc_bytes alloc_count free_bytes free_count peak peak_age growth_age depth */
	uint64_t f[12] = { 5, 50000000, 7, 5, 70000000, 7, 20000000, 2, 50000000, 1, 1, 1 };
	memcpy(ev.f, f, sizeof(f));
	ev.nf = 12;
	unsigned nb = isc_put_varint(st.bytes, 7);
	nb += isc_put_varint(st.bytes + nb, 5);
	ev.bytes = st.bytes;
	ev.nbytes = nb;
	ok(isc_asite_event(st.m, &ev) == 0, "the table's record");
	const struct isc_asite_stats *o;
	size_t n;
	struct isc_asite_gaps g;
	ok(isc_asite_report(st.m, 0, &o, &n) == 0 && n == 1, "one site");
	ok(o[0].from_table && o[0].alloc_count == 7 && o[0].live_end == 50000000 && o[0].live_end_err == 7,
	   "records were lost (2 of 7): its numbers are the table's");
	isc_asite_gaps(st.m, &g);
	ok(g.untracked == 1 && g.unmatched_frees == 1 && g.bad_records == 0, "an untracked sample, an unmatched release");
	ev.nf = 5;
	ok(isc_asite_event(st.m, &ev) == -EBADMSG, "a record with too few fields is refused");
	isc_asite_gaps(st.m, &g);
	ok(g.bad_records == 1, "and counted");
	isc_asite_free(st.m);
}

/*
 * The stated error covers the truth: 300 runs of a Poisson sampling (as
 * the shim's, an exponential countdown of mean T) of the same stream,
 * 20000 objects of 60 to 4000 bytes at T = 64 KiB: the true total lies
 * within 2 errors of the estimate in about 95 % of the runs (a normal
 * approximation; here about 95 samples a run).
 */
static uint64_t rng = 88172645463325252ull;
static double uniform(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) * 0x1.0p-53;
}

/* One sample of s bytes at interval t into the model (site 9). */
static void sample(struct stream *st, uint64_t ts, double s, double t)
{
	struct isc_tl_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.type = ISC_REC_TL_ALLOC;
	ev.ts = ts;
	ev.pid = PID;
	uint64_t f[8] = { PID, 0x1000 + ts * 16, (uint64_t)s, (uint64_t)llround(s / -expm1(-s / t)), ISC_ALLOC_MALLOC, 0,
			  9, 1 };
	memcpy(ev.f, f, sizeof(f));
	ev.nf = 8;
	unsigned n = isc_put_varint(st->bytes, 7);
	n += isc_put_varint(st->bytes + n, 9);
	n += isc_put_varint(st->bytes + n, 0);
	ev.bytes = st->bytes;
	ev.nbytes = n;
	st->bad |= isc_asite_event(st->m, &ev) != 0;
}

static void test_coverage(void)
{
	const double t = 65536;
	int covered = 0, runs = 300, bad = 0;
	double truth = 0;
	for (int i = 0; i < 20000; i++)
		truth += 60 + (i * 7919) % 3941;
	for (int r = 0; r < runs; r++) {
		struct stream st = { 0 };
		const struct isc_asite_stats *o;
		size_t n;
		double left = -log(1 - uniform()) * t;
		uint64_t ts = 0;
		isc_asite_new(&st.m);
		for (int i = 0; i < 20000; i++) {
			double s = 60 + (i * 7919) % 3941;
			left -= s;
			if (left > 0)
				continue;
			while (left <= 0)
				left += -log(1 - uniform()) * t;
			sample(&st, ++ts, s, t);
		}
		if (isc_asite_report(st.m, 0, &o, &n) || n != 1 || st.bad)
			bad++;
		else
			covered += fabs(o[0].alloc_bytes - truth) <= 2 * o[0].alloc_err;
		isc_asite_free(st.m);
	}
	ok(!bad, "every run made one site");
	ok(covered >= 270 && covered <= 299, "the truth within 2 stated errors in %d of %d runs (about 95 %%)", covered,
	   runs);
}

/*
 * A leak whose samples miss some iterations, as byte sampling does: 1 MiB
 * kept in each of 60 iterations (iteration 1 warm-up: 59 steady ones),
 * each allocation sampled with probability 1 - e^-2 = 0.86 at 512 KiB;
 * here iterations 10, 11 and 30, 31 drew no sample (two in a row: with
 * 59 iterations that happens in 62 % of runs).  Retained: the 55
 * samples after boundary 1, 55 w; g = 55 w / 59 = 1.078 MiB; the window
 * max(2, ceil(ln(59 / 0.01) x 512 KiB / g)) = ceil(8.683 x 0.4638) = 5.
 */
static void test_leak_with_misses(void)
{
	struct stream st = { 0 };
	isc_asite_new(&st.m);
	uint64_t addr = 0x10000000;
	for (int it = 1; it <= 60; it++) {
		if (it != 10 && it != 11 && it != 30 && it != 31)
			alloc_at(&st, (uint64_t)it * S + 1000, addr += 0x200000, MiB, 24, 0);
		isc_asite_boundary(st.m, (uint64_t)it * S + 900000000);
	}
	const struct isc_asite_stats *o;
	size_t n;
	ok(isc_asite_report(st.m, 1, &o, &n) == 0 && n == 1 && !st.bad, "one site");
	double w = (double)llround(weight(MiB, T_IV)), g = 55 * w / 59;
	unsigned win = (unsigned)ceil(log(59 / 0.01) * T_IV / g);
	ok(n == 1 && win == 5 && o[0].leak_window == win, "window 5 (%u, by hand %u)", n ? o[0].leak_window : 0, win);
	ok(n == 1 && o[0].leak && near(o[0].retained, 55 * w, 1),
	   "two unsampled iterations in a row do not hide a leak of 1 MiB an iteration");
	isc_asite_free(st.m);
}

/* One exact device record: pid PID, site "line" (string id 7). */
static void dev_rec(struct stream *st, uint64_t ts, uint32_t device, bool alloc, uint64_t addr, uint64_t size,
		    uint32_t line)
{
	uint32_t frames[2] = { 7, line };
	struct isc_asite_exact x = { .ts = ts, .address = addr, .size = size, .pid = PID, .device = device,
				     .depth = 1, .alloc = alloc, .what = ISC_ASITE_STACK, .frames = frames };
	st->bad |= isc_asite_exact(st->m, &x, NULL) != 0;
}

/* The site of line in memory kind (device_mem, device). */
static const struct isc_asite_stats *site_in(const struct isc_asite_stats *o, size_t n, uint32_t line, bool dev,
					     uint32_t device)
{
	for (size_t i = 0; i < n; i++)
		if (o[i].depth == 1 && o[i].frames[1] == line && o[i].device_mem == dev && (!dev || o[i].device == device))
			return &o[i];
	return NULL;
}

/*
 * Device memory in the same model (isc_asite_exact): line 1 allocates
 * 10 MiB of host memory (sampled) at t=10 and 100 MiB on device 0 at the
 * same address at t=20, freed at t=25, and 1 MiB on device 1 at t=26; the
 * host line 1 frees at 28, line 3 allocates 5 MiB of host at 30.  Three
 * sites of line 1 (host, device 0, device 1); the host peak stays at t=10
 * (10 MiB: the device's 100 MiB do not move it); device 0's is at t=82.
 * Then 6 boundaries: each of 5 iterations line 5 keeps 8 MiB on device 0
 * and line 6 allocates and frees 64 MiB there: exactly 40 MiB retained, a
 * leak of 8 MiB an iteration, no error; line 6 retains 0 and allocated
 * 5 x 64 MiB in the steady state.  A release of no live allocation and a
 * release without an address pairs by size: lines 9 then 8 allocate 64 MiB
 * each at t=5, 6 with no address, one release of 64 MiB at t=7 is line 8's.
 */
static void test_device_exact(void)
{
	struct stream st = { 0 };
	isc_asite_new(&st.m);
	const uint64_t M = 1048576;
	ok(!isc_asite_has_device(st.m), "no device memory yet");
	/* no address: a release pairs with the latest live allocation of its size */
	dev_rec(&st, 5, 0, true, 0, 64 * M, 9);
	dev_rec(&st, 6, 0, true, 0, 64 * M, 8);
	dev_rec(&st, 7, 0, false, 0, 64 * M, 0);
	alloc_at(&st, 10, 0xA000000, 10 * MiB, 1, 0);
	dev_rec(&st, 20, 0, true, 0xA000000, 100 * M, 1);
	dev_rec(&st, 25, 0, false, 0xA000000, 100 * M, 1);
	dev_rec(&st, 26, 1, true, 0xA000000, 1 * M, 1);
	dev_rec(&st, 27, 0, false, 0xF000000, 3 * M, 1); /* made before the trace */
	free_at(&st, 28, 0xA000000);
	alloc_at(&st, 30, 0xB000000, 5 * MiB, 3, 0);
	isc_asite_boundary(st.m, 40);
	for (uint64_t i = 0; i < 5; i++) {
		dev_rec(&st, 41 + 10 * i, 0, true, 0x10000000 + i * 8 * M, 8 * M, 5);
		dev_rec(&st, 42 + 10 * i, 0, true, 0x20000000, 64 * M, 6);
		dev_rec(&st, 43 + 10 * i, 0, false, 0x20000000, 64 * M, 6);
		isc_asite_boundary(st.m, 50 + 10 * i);
	}
	const struct isc_asite_stats *o = NULL;
	size_t n = 0;
	ok(!st.bad && isc_asite_has_device(st.m), "fed");
	ok(isc_asite_report(st.m, 1, &o, &n) == 0 && n == 8, "eight sites: line 1 three times, lines 3, 5, 6, 8, 9 (%zu)",
	   n);
	const struct isc_asite_stats *s9 = site_in(o, n, 9, true, 0), *s8 = site_in(o, n, 8, true, 0);
	ok(s9 && s9->live_end == 64.0 * M && s8 && s8->live_end == 0 && s8->freed_bytes == 64.0 * M,
	   "without an address: the release paired with the latest allocation of its size (line 8's)");
	const struct isc_asite_stats *h = site_in(o, n, 1, false, 0), *d0 = site_in(o, n, 1, true, 0),
				     *d1 = site_in(o, n, 1, true, 1), *lk = site_in(o, n, 5, true, 0),
				     *ch = site_in(o, n, 6, true, 0);
	double w10 = (double)llround(weight(10 * MiB, T_IV));
	ok(h && near(h->live_peak, w10, 0) && h->peak_ts == 10 && near(h->live_end, 0, 0),
	   "host line 1: its 10 MiB at the host peak, t=10 (the device's 100 MiB do not move it)");
	ok(d0 && d0->alloc_bytes == 100.0 * M && d0->freed_bytes == 100.0 * M && d0->live_end == 0 &&
		   d0->alloc_err == 0 && d0->alloc_count == 1 && d0->free_count == 1,
	   "device 0 line 1: 100 MiB allocated and freed, exact");
	ok(d0 && d0->peak_ts == 82 && d0->live_peak == 0,
	   "device 0's peak is its own: t=82, 40 MiB kept + 64 MiB of churn (above line 1's 100 MiB)");
	ok(d1 && d1->alloc_bytes == 1.0 * M && d1->live_end == 1.0 * M, "device 1 line 1: 1 MiB, a site apart");
	ok(lk && lk->retained == 40.0 * M && lk->retained_err == 0 && lk->leak && lk->leak_per_iter == 8.0 * M &&
		   lk->intervals == 5 && lk->live_peak == 40.0 * M,
	   "device leak: 40 MiB retained over 5 iterations, 8 MiB each, exact");
	ok(ch && ch->retained == 0 && !ch->leak && ch->alloc_steady == 5 * 64.0 * M && ch->live_peak == 64.0 * M,
	   "device churn: 5 x 64 MiB allocated in the steady state, none retained");
	ok(n && o[0].device_mem && o[0].frames[1] == 5, "the device leak ranks first");
	struct isc_asite_death dd[8];
	size_t k = isc_asite_death(st.m, PID, 100, 1000, dd, 8);
	bool host_only = true;
	for (size_t i = 0; i < k; i++)
		host_only &= !o[dd[i].index].device_mem;
	ok(k == 2 && host_only, "a death: the host sites only (%zu)", k);
	dev_rec(&st, 200, 0, false, 0, 64 * M, 0);
	dev_rec(&st, 201, 0, false, 0, 64 * M, 0); /* none left of that size: made before the trace */
	ok(!st.bad && isc_asite_report(st.m, 1, &o, &n) == 0 && (s9 = site_in(o, n, 9, true, 0)) && s9->live_end == 0 &&
		   s9->freed_bytes == 64.0 * M,
	   "the next release of that size is line 9's; one more finds none");
	isc_asite_free(st.m);
}

/* One exact record of device 0 by pid at ts, site line (string id 7), in bucket b of a grid doubled shift times. */
static void dev_rec_of(struct stream *st, uint32_t pid, uint64_t ts, bool alloc, bool failed, uint64_t addr,
		       uint64_t size, uint32_t line, uint32_t b, uint32_t shift)
{
	uint32_t frames[2] = { 7, line };
	struct isc_asite_exact x = { .ts = ts, .address = addr, .size = size, .pid = pid, .device = 0, .depth = 1,
				     .alloc = alloc, .failed = failed, .what = ISC_ASITE_STACK, .frames = frames,
				     .bucket = b, .shift = shift };
	st->bad |= isc_asite_exact(st->m, &x, NULL) != 0;
}

static const struct isc_asite_stats *pid_site(const struct isc_asite_stats *o, size_t n, uint32_t pid, uint32_t line)
{
	for (size_t i = 0; i < n; i++)
		if (o[i].pid == pid && o[i].frames[1] == line)
			return &o[i];
	return NULL;
}

/*
 * Two processes on device 0 (gpu.devices[].memory's peak is the device's):
 * pid 1 line 1 +100 at t=1 (bucket 0), pid 2 line 1 +50 at t=2 (bucket 1):
 * the device's peak, 150; pid 1 frees its 100 at t=3 (bucket 5), pid 2
 * line 2 +80 at t=4 (bucket 300 of 1-wide buckets: bucket 150 after one
 * doubling, which merged (0,1) and (4,5) into 0 and 2).  At the device's
 * peak: pid 1 line 1 100, pid 2 line 1 50, pid 2 line 2 0 (pid 2's own
 * peak, 130 at t=4, would give it 80).  Series, 2-wide buckets: pid 1
 * line 1: 100 at the end of bucket 0, 0 from bucket 2 on; pid 2 line 2: 0
 * up to bucket 149, 80 from 150.  Then pid 2 line 3's allocation of 1000
 * fails at t=5: counted at that site (no bytes), the latest failure, with
 * the device's 130 and each site's bytes then (live_fail), which later
 * records (a release of 80, a new site's 30) do not change.
 */
static void test_device_shared(void)
{
	struct stream st = { 0 };
	isc_asite_new(&st.m);
	struct isc_asite_failure f;
	ok(!isc_asite_last_failure(st.m, &f), "no failure yet");
	dev_rec_of(&st, 1, 1, true, false, 0xA0, 100, 1, 0, 0);
	dev_rec_of(&st, 2, 2, true, false, 0xB0, 50, 1, 1, 0);
	dev_rec_of(&st, 1, 3, false, false, 0xA0, 100, 1, 5, 0);
	dev_rec_of(&st, 2, 4, true, false, 0xC0, 80, 2, 150, 1);
	dev_rec_of(&st, 2, 5, true, true, 0, 1000, 3, 0, 0);
	const struct isc_asite_stats *o = NULL;
	size_t n = 0;
	ok(!st.bad && isc_asite_report(st.m, 0, &o, &n) == 0 && n == 4, "four sites, one each of (pid, line) (%zu)", n);
	const struct isc_asite_stats *a = pid_site(o, n, 1, 1), *b = pid_site(o, n, 2, 1), *c = pid_site(o, n, 2, 2),
				     *x = pid_site(o, n, 2, 3);
	ok(a && b && c && a->live_peak == 100 && b->live_peak == 50 && c->live_peak == 0 && a->peak_ts == 2 &&
		   c->peak_ts == 2,
	   "live at the device's peak (t=2, both processes), not at pid 2's own (t=4)");
	ok(a && b && c && a->id == 0 && b->id == 1 && c->id == 2, "ids in the order the sites were first seen");
	int64_t v[152];
	bool good = a != NULL && c != NULL;
	if (good) {
		isc_asite_series(st.m, a->id, 1, v, 152);
		good = v[0] == 100 && v[1] == 100 && v[2] == 0 && v[151] == 0;
		isc_asite_series(st.m, c->id, 1, v, 152);
		good = good && v[0] == 0 && v[149] == 0 && v[150] == 80 && v[151] == 80;
		isc_asite_series(st.m, 99, 1, v, 2);
		good = good && v[0] == 0 && v[1] == 0;
	}
	ok(good, "series on the doubled grid: pid 1 line 1 100 then 0 from bucket 2, pid 2 line 2 80 from bucket 150");
	ok(x && x->fail_count == 1 && x->alloc_count == 0 && x->live_peak == 0 && isc_asite_last_failure(st.m, &f) &&
		   f.id == x->id && f.pid == 2 && f.device == 0 && f.ts == 5 && f.size == 1000 && f.depth == 1 &&
		   f.frames[1] == 3,
	   "a failed allocation: its site counts it and holds nothing; it is the latest failure");
	/* after the failure pid 2 line 2 frees its 80 (t=6) and pid 1 line 4 allocates 30 (t=7): at the failure
	 * the device held 130, line 1 of pid 2 50 and line 2 80; line 4 did not exist */
	dev_rec_of(&st, 2, 6, false, false, 0xC0, 80, 2, 150, 1);
	dev_rec_of(&st, 1, 7, true, false, 0xD0, 30, 4, 151, 1);
	ok(!st.bad && isc_asite_report(st.m, 0, &o, &n) == 0 && n == 5, "five sites");
	a = pid_site(o, n, 1, 1), b = pid_site(o, n, 2, 1), c = pid_site(o, n, 2, 2), x = pid_site(o, n, 2, 3);
	const struct isc_asite_stats *d = pid_site(o, n, 1, 4);
	ok(a && b && c && x && d && a->live_fail == 0 && b->live_fail == 50 && c->live_fail == 80 && x->live_fail == 0 &&
		   d->live_fail == 0 && c->live_end == 0 && d->live_end == 30 && isc_asite_last_failure(st.m, &f) &&
		   f.device_live == 130,
	   "live at the failure: 130 on the device, pid 2 line 1 50 and line 2 80 (0 at the end), line 4 (made after) 0");
	isc_asite_free(st.m);
}

int main(void)
{
	test_estimates();
	test_leak_and_churn();
	test_leak_with_misses();
	test_steady_by_process();
	test_snapshot();
	test_one_line_two_callers();
	test_peak();
	test_death();
	test_table();
	test_coverage();
	test_device_exact();
	test_device_shared();
	return tap_done();
}
