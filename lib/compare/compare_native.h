/*
 * compare_native.h - comparison.native (compare_native.c): this run's
 * native stacks against the baselines'.  Private to lib/compare.
 */
#ifndef ISC_COMPARE_NATIVE_H
#define ISC_COMPARE_NATIVE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "isc_jbuild.h"

/*
 * Writes cmp.native (node_delta_pct per node of cur's native.tree, the
 * native functions whose self share changed most) when cur and at least
 * one baseline have a native tree; nothing otherwise.  0 or -ENOMEM.
 */
int isc_compare_native(struct isc_jb *jb, cJSON *cmp, const cJSON *cur, const cJSON *const *base, size_t nbase);

#endif
