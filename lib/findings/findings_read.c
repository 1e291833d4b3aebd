/*
 * findings_read.c - the one family of readers of findings documents
 * (isc_findings.h): a value at a dotted path, with a default, tolerant of
 * gaps and wrong types; and the name-and-location of a function row.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "isc_findings.h"

const cJSON *isc_doc_get(const cJSON *o, const char *path)
{
	const cJSON *cur = o;
	char key[128];
	while (cur && *path) {
		const char *dot = strchr(path, '.');
		size_t n = dot ? (size_t)(dot - path) : strlen(path);
		if (n >= sizeof(key) || !cJSON_IsObject(cur))
			return NULL;
		memcpy(key, path, n);
		key[n] = '\0';
		cur = cJSON_GetObjectItemCaseSensitive(cur, key);
		path += n + (dot != NULL);
	}
	return cur;
}

bool isc_doc_have(const cJSON *o, const char *path, double *v)
{
	const cJSON *x = isc_doc_get(o, path);
	if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble))
		return false;
	*v = x->valuedouble;
	return true;
}

double isc_doc_num(const cJSON *o, const char *path, double def)
{
	double v;
	return isc_doc_have(o, path, &v) ? v : def;
}

const char *isc_doc_str(const cJSON *o, const char *path, const char *def)
{
	const cJSON *x = isc_doc_get(o, path);
	return cJSON_IsString(x) ? x->valuestring : def;
}

const cJSON *isc_doc_arr(const cJSON *o, const char *path)
{
	const cJSON *a = isc_doc_get(o, path);
	return cJSON_IsArray(a) ? a : NULL;
}

bool isc_doc_loc(const cJSON *o, const char **file, double *line)
{
	double l = isc_doc_num(o, "line", 0);
	*file = isc_doc_str(o, "file", "");
	*line = l > 0 ? l : 0;
	return **file != '\0';
}

void isc_doc_where(char *buf, size_t cap, const cJSON *o)
{
	const char *name = isc_doc_str(o, "name", "?"), *file;
	double line;
	if (isc_doc_loc(o, &file, &line) && line > 0)
		snprintf(buf, cap, "%s (%s:%.0f)", name, file, line);
	else if (*file)
		snprintf(buf, cap, "%s (%s)", name, file);
	else
		snprintf(buf, cap, "%s", name);
}
