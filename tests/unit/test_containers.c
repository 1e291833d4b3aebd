/*
 * test_containers.c - the common containers (lib/common/containers.c):
 * the u64 -> u32 map and the hash index against a plain array model under
 * a long run of random operations, keys chosen to share a home slot (probe
 * runs that wrap past the end, deletions in the middle of a run), the walk
 * in slot order, and isc_grow.
 */
#include <stdlib.h>
#include <string.h>

#include "isc.h"
#include "isc_util.h"
#include "tap.h"

static uint64_t rnd_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void) /* xorshift64 */
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* n keys whose home slot in a table of cap slots is home (found by search). */
static void keys_at(uint64_t *out, size_t n, size_t cap, size_t home)
{
	for (uint64_t k = 1; n; k++)
		if ((isc_mix64(k) & (cap - 1)) == home)
			out[--n] = k;
}

/* The model: pairs in an array, looked up by linear search. */
struct pair {
	uint64_t k;
	uint32_t v;
	bool live;
};

static uint32_t model_get(const struct pair *p, size_t n, uint64_t k)
{
	for (size_t i = 0; i < n; i++)
		if (p[i].live && p[i].k == k)
			return p[i].v;
	return ISC_UMAP_NONE;
}

static void test_umap_random(void)
{
	enum { OPS = 200000, KEYS = 3000 };
	static struct pair model[KEYS];
	struct isc_umap m = { 0 };
	size_t bad = 0, live = 0;
	for (size_t i = 0; i < KEYS; i++)
		model[i] = (struct pair){ rnd() % 5000, 0, false };
	for (size_t op = 0; op < OPS; op++) {
		struct pair *p = &model[rnd() % KEYS];
		uint32_t *slot;
		switch (rnd() % 3) {
		case 0: /* set */
			if (model_get(model, KEYS, p->k) != ISC_UMAP_NONE && !p->live)
				break; /* another model entry holds this key */
			if (isc_umap_slot(&m, p->k, &slot)) {
				bad++;
				break;
			}
			bad += (*slot == ISC_UMAP_NONE) == p->live;
			live += !p->live;
			p->v = (uint32_t)(rnd() % 1000000);
			p->live = true;
			*slot = p->v;
			break;
		case 1: /* delete */
			if (p->live) {
				isc_umap_del(&m, p->k);
				p->live = false;
				live--;
			}
			break;
		default:
			bad += isc_umap_get(&m, p->k) != model_get(model, KEYS, p->k);
		}
	}
	for (size_t i = 0; i < KEYS; i++)
		bad += isc_umap_get(&m, model[i].k) != model_get(model, KEYS, model[i].k);
	ok(!bad, "map: %d random set/delete/get agree with the model (%zu disagreements)", OPS, bad);
	ok(m.n == live, "map: %zu entries, the model has %zu", m.n, live);

	size_t pos = 0, seen = 0, wrong = 0;
	uint64_t k;
	uint32_t v;
	while (isc_umap_each(&m, &pos, &k, &v)) {
		seen++;
		wrong += model_get(model, KEYS, k) != v;
	}
	ok(seen == live && !wrong, "map: the walk visits each of the %zu entries once with its value (%zu, %zu wrong)",
	   live, seen, wrong);
	isc_umap_free(&m);
}

static void test_umap_runs(void)
{
	struct isc_umap m = { 0 };
	uint64_t k[6];
	uint32_t *slot;
	keys_at(k, 6, 64, 63); /* a run from the last slot that wraps to 0..4 */
	for (int i = 0; i < 6; i++)
		if (!isc_umap_slot(&m, k[i], &slot))
			*slot = (uint32_t)i + 10;
	ok(m.cap == 64, "map: 6 keys stay in the first 64 slots");
	ok(m.k[63] == k[0] && m.k[0] == k[1] && m.k[4] == k[5], "map: keys with home 63 fill 63, then 0..4 in order");
	size_t pos = 0, nwalk = 0;
	uint64_t key, order[6];
	uint32_t val;
	while (nwalk < 6 && isc_umap_each(&m, &pos, &order[nwalk], &val))
		nwalk++;
	ok(nwalk == 6 && order[0] == k[1] && order[4] == k[5] && order[5] == k[0] && !isc_umap_each(&m, &pos, &key, &val),
	   "map: the walk goes in slot order (0..4, then 63) and ends");
	isc_umap_del(&m, k[2]); /* in the middle of the wrapped run */
	isc_umap_del(&m, k[0]); /* at its start */
	bool found = true;
	for (int i = 1; i < 6; i++)
		if (i != 2)
			found &= isc_umap_get(&m, k[i]) == (uint32_t)i + 10;
	ok(found, "map: the rest of a wrapped run is found after deletions at its start and middle");
	ok(isc_umap_get(&m, k[0]) == ISC_UMAP_NONE && isc_umap_get(&m, k[2]) == ISC_UMAP_NONE,
	   "map: deleted keys are gone");
	ok(m.k[63] == k[1] && m.k[0] == k[3] && m.k[2] == k[5] && m.v[3] == ISC_UMAP_NONE && m.v[4] == ISC_UMAP_NONE,
	   "map: entries shifted back over the holes (no tombstones)");
	isc_umap_free(&m);

	struct isc_umap e = { 0 };
	pos = 0;
	ok(isc_umap_get(&e, 1) == ISC_UMAP_NONE && !isc_umap_each(&e, &pos, &key, &val),
	   "map: an empty map has nothing");
	isc_umap_del(&e, 1);
	isc_umap_free(&e);
}

/* Number of times id appears under h in x, by a full walk. */
static size_t count_under(const struct isc_hindex *x, uint64_t h, uint32_t id, size_t *total)
{
	size_t pos = 0, n = 0;
	*total = 0;
	for (uint32_t v; (v = isc_hindex_next(x, h, &pos)) != ISC_UMAP_NONE;) {
		n += v == id;
		++*total;
	}
	return n;
}

static void test_hindex(void)
{
	enum { OPS = 100000, N = 2000, HASHES = 300 };
	static struct pair model[N];
	struct isc_hindex x = { 0 };
	size_t bad = 0, live = 0;
	for (size_t i = 0; i < N; i++)
		model[i] = (struct pair){ rnd() % HASHES, (uint32_t)i, false };
	for (size_t op = 0; op < OPS; op++) {
		struct pair *p = &model[rnd() % N];
		size_t total, want = 0;
		switch (rnd() % 3) {
		case 0:
			if (!p->live) {
				bad += isc_hindex_add(&x, p->k, p->v) != 0;
				p->live = true;
				live++;
			}
			break;
		case 1:
			if (p->live) {
				isc_hindex_del(&x, p->k, p->v);
				p->live = false;
				live--;
			}
			break;
		default:
			for (size_t i = 0; i < N; i++)
				want += model[i].live && model[i].k == p->k;
			bad += count_under(&x, p->k, p->v, &total) != p->live || total != want;
		}
	}
	ok(!bad, "index: %d random add/delete/walk agree with the model (%zu disagreements)", OPS, bad);
	ok(x.n == live, "index: %zu entries, the model has %zu", x.n, live);
	isc_hindex_free(&x);

	struct isc_hindex y = { 0 };
	size_t total = 0;
	uint64_t k[3];
	keys_at(k, 3, 64, 62);
	isc_hindex_add(&y, k[0], 1);
	isc_hindex_add(&y, k[1], 2);
	isc_hindex_add(&y, k[0], 3);
	isc_hindex_add(&y, k[0], 3);
	isc_hindex_add(&y, k[2], 4);
	ok(count_under(&y, k[0], 1, &total) == 1 && total == 3, "index: a hash holds several ids, one twice");
	ok(count_under(&y, k[0], 3, &total) == 2, "index: the same id under the same hash is kept twice");
	isc_hindex_del(&y, k[0], 3);
	ok(count_under(&y, k[0], 3, &total) == 1 && total == 2, "index: delete removes one pair");
	isc_hindex_del(&y, k[0], 9);
	ok(y.n == 4, "index: deleting an absent pair changes nothing");
	ok(count_under(&y, k[2], 4, &total) == 1 && total == 1 && count_under(&y, k[1], 2, &total) == 1,
	   "index: other hashes of the same run still found (wrapped past the end)");
	size_t pos = 0;
	isc_hindex_next(&y, k[2], &pos);
	ok(isc_hindex_next(&y, k[2], &pos) == ISC_UMAP_NONE && isc_hindex_next(&y, k[2], &pos) == ISC_UMAP_NONE,
	   "index: a finished walk stays finished");
	isc_hindex_free(&y);
	struct isc_hindex e = { 0 };
	pos = 0;
	ok(isc_hindex_next(&e, 5, &pos) == ISC_UMAP_NONE, "index: an empty index has nothing");
	isc_hindex_free(&e);
}

static void test_grow(void)
{
	int *a = NULL;
	size_t cap = 0;
	bool good = true;
	for (size_t i = 0; i < 1000; i++) {
		good &= !isc_grow(&a, &cap, i, sizeof(*a)) && cap > i;
		a[i] = (int)i;
	}
	for (size_t i = 0; i < 1000; i++)
		good &= a[i] == (int)i;
	ok(good && cap == 1024, "grow: 1000 elements kept in order, capacity doubled from 16 to %zu", cap);
	int rc = isc_grow(&a, &cap, 5000, sizeof(*a));
	ok(!rc && cap == 8192, "grow: a far index doubles until it fits (%zu)", cap);
	free(a);
}

int main(void)
{
	test_umap_random();
	test_umap_runs();
	test_hindex();
	test_grow();
	return tap_done();
}
