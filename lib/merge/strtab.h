/*
 * strtab.h - the merge stage's string table (strtab.c): timeline strings
 * (kind, line, name, file) interned by content, with dense ids from 1 in
 * order of first appearance, as the timeline wants them.  merge.c interns
 * the STRING_DEFs of every input, the Kineto importer its event names.
 * Private to lib/merge.
 */
#ifndef ISC_MERGE_STRTAB_H
#define ISC_MERGE_STRTAB_H

#include <stddef.h>
#include <stdint.h>

#include "isc.h"      /* struct isc_tl_string */
#include "isc_util.h" /* struct isc_hindex */

struct isc_strtab {
	struct isc_tl_string *v;  /* v[id] for id 1 .. n - 1; v[0] is "" and no id */
	size_t n, cap;
	struct isc_hindex byhash; /* content hash -> id */
};

/*
 * The id of (kind, line, name, file), compared byte for byte (name and file
 * hold no NUL byte); a new id, with a copy of the strings, when it is not
 * there yet.  1: added, 0: found; -E2BIG (more than ISC_STRING_ID_LIMIT - 1
 * strings, message pushed) or -ENOMEM.  A new string is t->v[*id], valid
 * until the next call.
 */
int isc_strtab_intern(struct isc_strtab *t, uint8_t kind, uint32_t line, const char *name, size_t nl,
		      const char *file, size_t fl, uint32_t *id);
/* A new id for (kind, line, name, file) that isc_strtab_intern never returns: 1, -E2BIG or -ENOMEM. */
int isc_strtab_add(struct isc_strtab *t, uint8_t kind, uint32_t line, const char *name, size_t nl,
		   const char *file, size_t fl, uint32_t *id);
void isc_strtab_free(struct isc_strtab *t);

#endif
