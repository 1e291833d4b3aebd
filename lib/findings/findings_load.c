/* findings_load.c - a findings document from a stream (isc_findings_read). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "isc_findings.h"

#define READ_MAX (1u << 30)

/* All of f (at most READ_MAX bytes) in a malloc'd NUL-terminated buffer; NULL on error. */
static char *slurp(FILE *f, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *b = malloc(cap + 1);
	while (b) {
		n += fread(b + n, 1, cap - n, f);
		if (n < cap || cap >= READ_MAX)
			break;
		char *g = realloc(b, 2 * cap + 1);
		if (!g) {
			free(b);
			return NULL;
		}
		b = g;
		cap *= 2;
	}
	if (b && ferror(f)) {
		free(b);
		return NULL;
	}
	if (b)
		b[n] = '\0';
	*len = n;
	return b;
}

int isc_findings_read(FILE *f, cJSON **doc)
{
	size_t n = 0;
	errno = 0;
	char *text = slurp(f, &n);
	int rc;
	*doc = NULL;
	if (!text) {
		rc = errno ? -errno : -ENOMEM;
		isc_err_push("Failed to read: %s", strerror(-rc));
		return rc;
	}
	*doc = cJSON_ParseWithLength(text, n);
	free(text);
	if (!*doc) {
		isc_err_push("not valid JSON (findings expected)");
		return -EINVAL;
	}
	if ((rc = isc_findings_check(*doc))) {
		cJSON_Delete(*doc);
		*doc = NULL;
	}
	return rc;
}
