/*
 * test_kineto_json.c - the Kineto importer's JSON scanner (kineto_json.c):
 * the object iterator over good and broken objects, values skipped with
 * their depth limit, and the exact decimal conversion.  Expected values
 * are worked out by hand from the JSON text.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kineto.h"
#include "tap.h"

/* Walks the object text t, collecting "key=valuetype;" into out; returns the last iterator result. */
static int walk(const char *t, char *out, size_t cap, unsigned max_depth)
{
	char *buf = strdup(t);
	struct kt_jp j = { buf, buf + strlen(buf), 1, max_depth, NULL, 0 };
	unsigned st = 0;
	char *k;
	size_t kn;
	int rc;
	out[0] = '\0';
	while ((rc = isc_kjson_member(&j, &st, &k, &kn)) == 1) {
		struct kt_jv v;
		if (!isc_kjson_value(&j, &v)) {
			rc = -2;
			break;
		}
		size_t l = strlen(out);
		snprintf(out + l, cap - l, "%.*s=%d;", (int)kn, k, v.t);
	}
	if (rc == 0 && j.p != j.e) /* the iterator must stop right after '}' */
		rc = 2;
	free(buf);
	return rc;
}

int main(void)
{
	char got[256];
	ok(walk("{}", got, sizeof(got), 8) == 0 && !strcmp(got, ""), "empty object: done at once");
	ok(walk("{ \"a\" : 1 , \"b\":\"x\",\"c\":[1,{\"d\":null}],\"e\":{} }", got, sizeof(got), 8) == 0 &&
		   !strcmp(got, "a=2;b=1;c=4;e=5;"),
	   "members in order with their types: %s", got);
	ok(walk("{\"a\\\"q\":true}", got, sizeof(got), 8) == 0 && !strcmp(got, "a\"q=3;"), "escaped key unescaped: %s", got);
	ok(walk("{\"a\":1 \"b\":2}", got, sizeof(got), 8) == -1, "missing comma is invalid");
	ok(walk("{\"a\" 1}", got, sizeof(got), 8) == -1, "missing colon is invalid");
	ok(walk("{\"a\":1,}", got, sizeof(got), 8) == -1, "trailing comma is invalid");
	ok(walk("{a:1}", got, sizeof(got), 8) == -1, "unquoted key is invalid");
	ok(walk("{\"a\":1", got, sizeof(got), 8) == -1, "text ending inside the object is invalid");
	ok(walk("{\"a\":1]", got, sizeof(got), 8) == -1, "wrong closing bracket is invalid");
	ok(walk("{\"a\":{\"b\":{\"c\":1}}}", got, sizeof(got), 3) == 0, "nesting within the depth limit");
	ok(walk("{\"a\":{\"b\":{\"c\":1}}}", got, sizeof(got), 2) == -2, "nesting beyond the depth limit is refused");

	int64_t v;
	bool inexact;
	ok(!isc_kjson_dec("1.2345", 6, 3, &v, &inexact) && v == 1235 && inexact, "1.2345 us = 1235 ns, rounded");
	ok(!isc_kjson_dec("-1.5e2", 6, 0, &v, &inexact) && v == -150 && !inexact, "-1.5e2 = -150 exactly");
	ok(!isc_kjson_dec("1700000000123456.789", 20, 3, &v, &inexact) && v == 1700000000123456789 && !inexact,
	   "epoch us with ns digits exact");
	ok(isc_kjson_dec("9223372036854775808", 19, 0, &v, &inexact) == -ERANGE, "2^63 does not fit");
	ok(isc_kjson_dec("1.", 2, 0, &v, &inexact) == -EINVAL, "1. is not a number");
	return tap_done();
}
