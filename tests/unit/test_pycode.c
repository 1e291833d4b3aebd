/* test_pycode.c - value stack depths of real code objects (lib/record/pycode.c). */
#include <errno.h>
#include <stdlib.h>

#include "pycode.h"
#include "tap.h"

struct pycode_case {
	unsigned minor;
	const char *src;
	unsigned stacksize;
	const char *code;
	size_t ncode;
	const char *exc;
	size_t nexc;
	unsigned units[4]; /* the call instructions, in code order */
	int want[4];       /* their depths, counted by hand (make-pycode-vectors.py) */
	unsigned ncalls;
};

#include "pycode_vectors.h"

static struct isc_py_unit units[4096];

/* n checks that need a CPython's layout this build has not got */
static void skipn(size_t n, unsigned minor)
{
	for (size_t i = 0; i < n; i++)
		printf("ok %d # SKIP no CPython 3.%u headers in this build (scripts/gen-pylayouts.sh)\n", ++tap_n, minor);
}

static void check(const struct pycode_case *c, size_t n)
{
	const struct isc_pylayout *L = isc_pylayout_find(3, c[0].minor, 255);
	if (!L) {
		skipn(n, c[0].minor);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		int rc = isc_py_depths(L, (const uint8_t *)c[i].code, c[i].ncode / 2, c[i].nexc ? (const uint8_t *)c[i].exc : NULL,
				       c[i].nexc, c[i].stacksize, units);
		char src[256];
		size_t o = 0;
		for (const char *q = c[i].src; *q && o + 3 < sizeof(src); q++) /* one TAP line: newlines as | */
			if (*q == '\n')
				o += (size_t)snprintf(src + o, sizeof(src) - o, q[1] ? " | " : "");
			else if (*q != ' ' || (o && src[o - 1] != ' '))
				src[o++] = *q;
		src[o] = '\0';
		unsigned good = 0;
		for (unsigned k = 0; !rc && k < c[i].ncalls; k++)
			good += units[c[i].units[k]].depth == c[i].want[k];
		ok(rc == 0 && good == c[i].ncalls, "3.%u: %s: depth at each call as counted by hand (rc %d, %u of %u, first %d want %d)",
		   c[i].minor, src, rc, good, c[i].ncalls, rc ? -1 : units[c[i].units[0]].depth, c[i].want[0]);
	}
}

#define CASES(v) check(v##_cases, sizeof(v##_cases) / sizeof(v##_cases[0]))

int main(void)
{
	CASES(v39);
	CASES(v310);
	CASES(v311);
	CASES(v312);
	CASES(v313);
	/* damage: the walk stops with an error, never reads out of the code */
	const struct isc_pylayout *L = isc_pylayout_find(3, 11, 255);
	if (L) {
		const struct pycode_case *c = &v311_cases[4];
		uint8_t code[256];
		memcpy(code, c->code, c->ncode);
		ok(isc_py_depths(L, code, c->ncode / 2 - 1, NULL, 0, 0, units) != 0,
		   "3.11: code cut before its RETURN: an error (a path runs out of the code)");
		code[0] = 0; /* CACHE where an instruction starts */
		ok(isc_py_depths(L, code, c->ncode / 2, NULL, 0, 0, units) == -EINVAL, "3.11: a CACHE where an instruction starts: -EINVAL");
		memcpy(code, c->code, c->ncode);
		ok(isc_py_depths(L, code, c->ncode / 2, NULL, 0, 2, units) == -EBADMSG,
		   "3.11: deeper than the stack size given: -EBADMSG");
		uint8_t exc[] = { 0x80 | 63, 63, 63, 63 }; /* an entry cut in its varints */
		ok(isc_py_depths(L, (const uint8_t *)c->code, c->ncode / 2, exc, sizeof(exc), 0, units) == -EINVAL,
		   "3.11: an exception table cut short: -EINVAL");
	} else {
		skipn(4, 11);
	}
	return tap_done();
}
