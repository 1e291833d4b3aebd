/* findings_json.c - path lookups in findings documents, tolerant of gaps. */
#include <string.h>

#include "isc_analyze.h"

const cJSON *isc_json_get(const cJSON *root, const char *path)
{
	const cJSON *cur = root;
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

bool isc_json_num(const cJSON *root, const char *path, double *v)
{
	const cJSON *x = isc_json_get(root, path);
	if (!cJSON_IsNumber(x))
		return false;
	*v = x->valuedouble;
	return true;
}

const char *isc_json_str(const cJSON *root, const char *path)
{
	const cJSON *x = isc_json_get(root, path);
	return cJSON_IsString(x) ? x->valuestring : NULL;
}

bool isc_verdict_class_is_gpu(const char *cls)
{
	static const char *const gpu[] = { "gpu_compute_bound", "launch_bound", "cpu_bound", "transfer_bound",
					   "sync_bound", "thermal_throttled" };
	for (size_t i = 0; cls && i < sizeof(gpu) / sizeof(gpu[0]); i++)
		if (!strcmp(cls, gpu[i]))
			return true;
	return false;
}
