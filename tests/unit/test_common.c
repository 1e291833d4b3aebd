/*
 * test_common.c - the common stage's containers and text (isc_util.h):
 * the u64 -> u32 hash map against a plain array doing the same
 * operations, and workload bytes into C strings (UTF-8 checked byte by
 * byte against RFC 3629's table), and the empty-safe sort and copy: a NULL
 * table of 0 elements, which the C library's qsort and memcpy may not be
 * given (the sanitizer build's nonnull check sees it) (TAP).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "isc.h"
#include "isc_util.h"
#include "tap.h"

/* ---- the hash map ------------------------------------------------------ */

static uint64_t rnd_state = 88172645463325252ull;
static uint64_t rnd(void) /* xorshift64: the same sequence every run */
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

#define NKEYS 64

/*
 * Insertions and deletions mixed, on keys from a small set so that probe
 * runs form and wrap: after every deletion each key must be found with its
 * value exactly when the reference array holds it.  A deletion that leaves
 * a hole inside a probe run loses the keys behind the hole.
 */
static void test_umap(void)
{
	struct isc_umap m = { 0 };
	uint64_t keys[NKEYS];
	uint32_t ref[NKEYS]; /* the value held, or ISC_UMAP_NONE */
	for (size_t i = 0; i < NKEYS; i++) {
		keys[i] = rnd();
		ref[i] = ISC_UMAP_NONE;
	}
	size_t bad = 0, held = 0, checks = 0, dels = 0;
	for (int step = 0; step < 20000; step++) {
		size_t i = rnd() % NKEYS;
		if (rnd() % 2) {
			uint32_t *slot;
			if (isc_umap_slot(&m, keys[i], &slot)) {
				ok(false, "insertion %d: out of memory", step);
				break;
			}
			if ((*slot == ISC_UMAP_NONE) != (ref[i] == ISC_UMAP_NONE) || (ref[i] != ISC_UMAP_NONE && *slot != ref[i]))
				bad++;
			held += ref[i] == ISC_UMAP_NONE;
			*slot = ref[i] = (uint32_t)step;
		} else {
			isc_umap_del(&m, keys[i]);
			held -= ref[i] != ISC_UMAP_NONE;
			dels += ref[i] != ISC_UMAP_NONE;
			ref[i] = ISC_UMAP_NONE;
			for (size_t k = 0; k < NKEYS; k++, checks++)
				bad += isc_umap_get(&m, keys[k]) != ref[k];
		}
	}
	ok(dels > 1000, "the map saw %zu deletions of present keys", dels);
	ok(bad == 0, "after every deletion each of %d keys is found exactly when present, with its value: %zu wrong of %zu",
	   NKEYS, bad, checks);
	ok(m.n == held, "the map counts %zu keys, as the reference (%zu)", m.n, held);
	isc_umap_free(&m);
	ok(isc_umap_get(&m, 1) == ISC_UMAP_NONE, "an empty map finds nothing");
}

/* ---- text -------------------------------------------------------------- */

struct utf8_case {
	const char *in, *out, *why;
};

static void test_text(void)
{
	/* RFC 3629 section 4: the well-formed sequences; anything else byte by byte '?' */
	static const struct utf8_case c[] = {
		{ "plain", "plain", "ASCII" },
		{ "\xc3\xa9", "\xc3\xa9", "U+00E9, two bytes" },
		{ "\xc1\xbf", "??", "C1 lead: overlong" },
		{ "\xe0\xa0\x80", "\xe0\xa0\x80", "U+0800, the first three-byte" },
		{ "\xe0\x9f\xbf", "???", "E0 9F: overlong" },
		{ "\xed\x9f\xbf", "\xed\x9f\xbf", "U+D7FF, below the surrogates" },
		{ "\xed\xa0\x80", "???", "U+D800: a UTF-16 surrogate" },
		{ "\xed\xbf\xbf", "???", "U+DFFF: a UTF-16 surrogate" },
		{ "\xee\x80\x80", "\xee\x80\x80", "U+E000, above the surrogates" },
		{ "\xf0\x90\x80\x80", "\xf0\x90\x80\x80", "U+10000, the first four-byte" },
		{ "\xf0\x8f\xbf\xbf", "????", "F0 8F: overlong" },
		{ "\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf", "U+10FFFF, the last" },
		{ "\xf4\x90\x80\x80", "????", "F4 90: above U+10FFFF" },
		{ "\xf5\x80\x80\x80", "????", "F5 lead" },
		{ "a\xc3", "a?", "a cut two-byte sequence" },
		{ "\xe2\x82x", "??x", "a cut three-byte sequence before ASCII" },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		char *s = isc_text_dup((const uint8_t *)c[i].in, strlen(c[i].in), '?', false);
		ok(s && !strcmp(s, c[i].out), "UTF-8 %s: kept as valid, or '?' per byte", c[i].why);
		free(s);
	}
	char *s = isc_text_dup((const uint8_t *)"a\0b\tc", 5, '?', true);
	ok(s && !strcmp(s, "a?b?c"), "a NUL and, with ctl, a tab become '?' (%s)", s ? s : "(null)");
	free(s);
	s = isc_text_dup((const uint8_t *)"python\0x.py\0\0", 13, ' ', false);
	ok(s && !strcmp(s, "python x.py"), "an argv list: NULs become spaces, the trailing ones dropped (%s)", s ? s : "(null)");
	free(s);
	char b[4];
	isc_copy_bytes(b, sizeof(b), (const uint8_t *)"abcdef", 6, '?');
	ok(!strcmp(b, "abc"), "copy_bytes keeps cap - 1 bytes and terminates (%s)", b);
}

/* ---- sort and copy, empty tables included ------------------------------ */
static unsigned ncmp;
static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	ncmp++;
	return a < b ? -1 : a > b;
}

static void test_sort_copy(void)
{
	uint64_t *none = NULL; /* an array isc_grow never grew */
	isc_sort(none, 0, sizeof(*none), cmp_u64);
	isc_copy_n(none, none, 0, sizeof(*none));
	ok(ncmp == 0, "a NULL table of 0 elements is sorted and copied without a comparison");
	uint64_t one = 7;
	isc_sort(&one, 1, sizeof(one), cmp_u64);
	ok(one == 7 && ncmp == 0, "one element: left as it is, no comparison");

	enum { N = 200 };
	uint64_t v[N], w[N + 1], count[16] = { 0 }, seen[16] = { 0 };
	for (size_t i = 0; i < N; i++)
		count[(v[i] = rnd() % 16)]++;
	isc_sort(v, N, sizeof(*v), cmp_u64);
	bool sorted = true;
	for (size_t i = 0; i < N; i++) {
		sorted &= !i || v[i - 1] <= v[i];
		seen[v[i] % 16]++;
	}
	ok(sorted && !memcmp(count, seen, sizeof(count)), "%d values: ascending, the same multiset", N);
	w[N] = UINT64_MAX;
	isc_copy_n(w, v, N, sizeof(*v));
	ok(!memcmp(w, v, sizeof(v)) && w[N] == UINT64_MAX, "copy_n copies n elements and not one byte more");
}

int main(void)
{
	test_umap();
	test_text();
	test_sort_copy();
	return tap_done();
}
