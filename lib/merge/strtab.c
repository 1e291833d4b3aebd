/*
 * strtab.c - timeline strings interned by content (strtab.h).  The strings
 * live in one array by id; an isc_hindex maps the content hash (FNV-1a over
 * kind, line, name, 0xff, file) to the ids with that hash, each compared in
 * full:
 *
 *     intern(k, l, "f", "a.py") -> hash h -> ids under h: 7? same content -> 7
 *                                          (none match) -> v[n] = copy, n++, index (h, n)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "isc_format.h" /* ISC_STRING_ID_LIMIT */
#include "strtab.h"

static uint64_t content_hash(uint8_t kind, uint32_t line, const char *name, size_t nl, const char *file, size_t fl)
{
	uint64_t h = 1469598103934665603ULL ^ kind ^ ((uint64_t)line << 8);
	for (size_t i = 0; i < nl; i++)
		h = (h ^ (uint8_t)name[i]) * 1099511628211ULL;
	h = (h ^ 0xff) * 1099511628211ULL;
	for (size_t i = 0; i < fl; i++)
		h = (h ^ (uint8_t)file[i]) * 1099511628211ULL;
	return h;
}

/* s[0..n), which holds no NUL, equals the C string c (which may be shorter or longer): one pass. */
static bool same(const char *c, const char *s, size_t n)
{
	return !strncmp(c, s, n) && !c[n];
}

/* Stores a copy under the next id; indexed under h unless h is NULL. */
static int append(struct isc_strtab *t, const uint64_t *h, uint8_t kind, uint32_t line, const char *name, size_t nl,
		  const char *file, size_t fl, uint32_t *id)
{
	size_t next = t->n ? t->n : 1; /* id 0 is never used */
	if (next >= ISC_STRING_ID_LIMIT) {
		isc_err_push("more than %u distinct names", ISC_STRING_ID_LIMIT - 1);
		return -E2BIG;
	}
	if (isc_grow(&t->v, &t->cap, next, sizeof(*t->v)))
		return -ENOMEM;
	if (next == 1)
		t->v[0] = (struct isc_tl_string){ 0, 0, 0, "", "" };
	char *mem = malloc(nl + fl + 2);
	if (!mem || (h && isc_hindex_add(&t->byhash, *h, (uint32_t)next))) {
		free(mem);
		return -ENOMEM;
	}
	memcpy(mem, name, nl);
	mem[nl] = '\0';
	memcpy(mem + nl + 1, file, fl);
	mem[nl + 1 + fl] = '\0';
	t->v[next] = (struct isc_tl_string){ (uint32_t)next, kind, line, mem, mem + nl + 1 };
	t->n = next + 1;
	*id = (uint32_t)next;
	return 1;
}

int isc_strtab_intern(struct isc_strtab *t, uint8_t kind, uint32_t line, const char *name, size_t nl,
		      const char *file, size_t fl, uint32_t *id)
{
	uint64_t h = content_hash(kind, line, name, nl, file, fl);
	size_t pos = 0;
	for (uint32_t i; (i = isc_hindex_next(&t->byhash, h, &pos)) != ISC_UMAP_NONE;) {
		const struct isc_tl_string *s = &t->v[i];
		if (s->kind == kind && s->line == line && same(s->name, name, nl) && same(s->file, file, fl)) {
			*id = i;
			return 0;
		}
	}
	return append(t, &h, kind, line, name, nl, file, fl, id);
}

int isc_strtab_add(struct isc_strtab *t, uint8_t kind, uint32_t line, const char *name, size_t nl,
		   const char *file, size_t fl, uint32_t *id)
{
	return append(t, NULL, kind, line, name, nl, file, fl, id);
}

void isc_strtab_free(struct isc_strtab *t)
{
	for (size_t i = 1; i < t->n; i++)
		free((char *)t->v[i].name);
	free(t->v);
	isc_hindex_free(&t->byhash);
	memset(t, 0, sizeof(*t));
}
