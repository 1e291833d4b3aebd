/*
 * findings_write.c - the JSON builder the findings' writers (the analysis
 * pass, the comparison and the history) share (isc_jbuild.h).
 */
#include <stdlib.h>
#include <string.h>

#include "isc_jbuild.h"
#include "isc_util.h" /* isc_text_dup */

cJSON *isc_jb_chk(struct isc_jb *b, cJSON *x)
{
	if (!x)
		b->oom = true;
	return x;
}

void isc_jb_num(struct isc_jb *b, cJSON *o, const char *k, double v)
{
	isc_jb_chk(b, o ? cJSON_AddNumberToObject(o, k, v) : NULL);
}

void isc_jb_num_or_null(struct isc_jb *b, cJSON *o, const char *k, bool have, double v)
{
	isc_jb_chk(b, !o ? NULL : have ? cJSON_AddNumberToObject(o, k, v) : cJSON_AddNullToObject(o, k));
}

void isc_jb_bool(struct isc_jb *b, cJSON *o, const char *k, bool v)
{
	isc_jb_chk(b, o ? cJSON_AddBoolToObject(o, k, v) : NULL);
}

void isc_jb_str(struct isc_jb *b, cJSON *o, const char *k, const char *v)
{
	if (!o || !v) {
		isc_jb_chk(b, o ? cJSON_AddNullToObject(o, k) : NULL);
		return;
	}
	char *clean = isc_text_dup((const uint8_t *)v, strlen(v), '?', b->ctl);
	isc_jb_chk(b, clean ? cJSON_AddStringToObject(o, k, clean) : NULL);
	free(clean);
}

cJSON *isc_jb_obj(struct isc_jb *b, cJSON *o, const char *k)
{
	return isc_jb_chk(b, o ? cJSON_AddObjectToObject(o, k) : NULL);
}

cJSON *isc_jb_arr(struct isc_jb *b, cJSON *o, const char *k)
{
	return isc_jb_chk(b, o ? cJSON_AddArrayToObject(o, k) : NULL);
}

cJSON *isc_jb_push_obj(struct isc_jb *b, cJSON *arr)
{
	cJSON *x = cJSON_CreateObject();
	if (!x || !arr || !cJSON_AddItemToArray(arr, x)) {
		cJSON_Delete(x);
		b->oom = true;
		return NULL;
	}
	return x;
}

void isc_jb_push_num(struct isc_jb *b, cJSON *arr, double v)
{
	cJSON *x = cJSON_CreateNumber(v);
	if (!x || !arr || !cJSON_AddItemToArray(arr, x)) {
		cJSON_Delete(x);
		b->oom = true;
	}
}
