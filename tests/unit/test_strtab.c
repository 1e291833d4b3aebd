/*
 * test_strtab.c - the merge stage's string table (lib/merge/strtab.c):
 * dense ids from 1 in order of first appearance, one id per content (kind,
 * line, name, file all count, and where name ends and file begins), the
 * copies kept, and isc_strtab_add's ids never found by content.
 */
#include <string.h>

#include "strtab.h"
#include "tap.h"

static uint32_t in(struct isc_strtab *t, uint8_t kind, uint32_t line, const char *name, const char *file, int *rc)
{
	uint32_t id = 0;
	*rc = isc_strtab_intern(t, kind, line, name, strlen(name), file, strlen(file), &id);
	return id;
}

int main(void)
{
	struct isc_strtab t = { 0 };
	int rc;
	char buf[16];
	ok(in(&t, 1, 0, "f", "", &rc) == 1 && rc == 1, "the first string gets id 1, added");
	ok(in(&t, 1, 0, "g", "", &rc) == 2 && rc == 1, "a second name gets id 2");
	ok(in(&t, 1, 0, "f", "", &rc) == 1 && rc == 0, "the first again: id 1, found");
	ok(in(&t, 2, 0, "f", "", &rc) == 3 && rc == 1, "same name, other kind: a new id");
	ok(in(&t, 1, 7, "f", "", &rc) == 4 && rc == 1, "same name, other line: a new id");
	ok(in(&t, 1, 0, "f", "a.py", &rc) == 5 && rc == 1, "same name, other file: a new id");
	ok(in(&t, 1, 0, "ab", "c", &rc) == 6 && in(&t, 1, 0, "a", "bc", &rc) == 7 && rc == 1,
	   "where the name ends and the file begins counts");
	ok(in(&t, 1, 0, "fg", "", &rc) == 8 && in(&t, 1, 0, "", "", &rc) == 9 && rc == 1,
	   "a longer and an empty name are not the name 'f'");
	memcpy(buf, "fxyz", 4); /* a name not terminated where it ends */
	uint32_t id = 0;
	rc = isc_strtab_intern(&t, 1, 0, buf, 1, "", 0, &id);
	ok(id == 1 && rc == 0, "a name is its bytes, not up to a NUL: 'f' of \"fxyz\" is id 1");
	ok(t.n == 10 && t.v[0].id == 0 && !strcmp(t.v[0].name, "") && !strcmp(t.v[0].file, ""),
	   "ids 1..9 used; v[0] is the empty string");
	ok(t.v[6].id == 6 && t.v[6].kind == 1 && !strcmp(t.v[6].name, "ab") && !strcmp(t.v[6].file, "c") &&
		   t.v[4].line == 7,
	   "the entries hold their id, kind, line and copies of name and file");
	rc = isc_strtab_add(&t, 1, 0, "f", 1, "", 0, &id);
	ok(rc == 1 && id == 10, "add: a new id (10) even for content already there");
	ok(in(&t, 1, 0, "f", "", &rc) == 1 && rc == 0, "the content's own id is still found");
	rc = isc_strtab_add(&t, 1, 0, "q", 1, "", 0, &id);
	ok(rc == 1 && id == 11 && in(&t, 1, 0, "q", "", &rc) == 12 && rc == 1,
	   "add's string is never found by content: interning 'q' after adding it makes another id");
	ok(in(&t, 1, 0, "h", "", &rc) == 13 && rc == 1, "ids stay dense after an add");
	bool dense = true;
	for (unsigned i = 0; i < 5000 && dense; i++) {
		snprintf(buf, sizeof(buf), "n%u", i);
		dense = in(&t, 3, i, buf, "", &rc) == 14 + i && rc == 1;
	}
	for (unsigned i = 0; i < 5000 && dense; i++) {
		snprintf(buf, sizeof(buf), "n%u", i);
		dense = in(&t, 3, i, buf, "", &rc) == 14 + i && rc == 0;
	}
	ok(dense, "5000 more strings: ids in order, each found again after the table grew");
	isc_strtab_free(&t);
	ok(t.n == 0 && !t.v, "free empties the table");
	isc_strtab_free(&t);
	return tap_done();
}
