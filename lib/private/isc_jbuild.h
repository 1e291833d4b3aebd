/*
 * isc_jbuild.h - the JSON builder of the findings' writers (the analysis
 * pass, the comparison and the history; findings/findings_write.c): every
 * call tolerates a NULL parent and remembers an allocation failure instead
 * of returning it.  Not for the tools.
 */
#ifndef ISC_JBUILD_H
#define ISC_JBUILD_H

#include <stdbool.h>

#include <cjson/cJSON.h>

/* ---- JSON builder -------------------------------------------------------- */
/*
 * Every call tolerates a NULL parent (an earlier allocation failed) and
 * sets oom when anything it needed could not be allocated; the pass checks
 * oom once at the end.
 */
struct isc_jb {
	bool oom;
	bool ctl; /* isc_jb_str also replaces control characters */
};

cJSON *isc_jb_chk(struct isc_jb *b, cJSON *x); /* x, noting oom when NULL */
void isc_jb_num(struct isc_jb *b, cJSON *o, const char *k, double v);
void isc_jb_num_or_null(struct isc_jb *b, cJSON *o, const char *k, bool have, double v);
void isc_jb_bool(struct isc_jb *b, cJSON *o, const char *k, bool v);
/* String v (NULL: null) with invalid UTF-8 (and control characters when b->ctl) replaced by '?'. */
void isc_jb_str(struct isc_jb *b, cJSON *o, const char *k, const char *v);
cJSON *isc_jb_obj(struct isc_jb *b, cJSON *o, const char *k);
cJSON *isc_jb_arr(struct isc_jb *b, cJSON *o, const char *k);
/* A new object appended to array arr; NULL on failure. */
cJSON *isc_jb_push_obj(struct isc_jb *b, cJSON *arr);
void isc_jb_push_num(struct isc_jb *b, cJSON *arr, double v);

#endif
