/*
 * procfs.c - the sampler's readers of /proc text (proc(5)): the fields of
 * a stat line after the command name (which may hold ')' and spaces), a
 * "Key: value" field of status, smaps_rollup and meminfo, and a key=value
 * of a pressure (PSI) file.  Pure functions over the text read, so the
 * unit test runs them on fixture files (tests/data/proc/sampler).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sampler.h"

int isc_procfs_stat(char *buf, unsigned long long *f, int nf, char *state)
{
	char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -1;
	*state = p[2];
	p += 3;
	f[0] = 0;
	int i = 1;
	while (i < nf && *p == ' ') {
		char *end;
		f[i] = strtoull(p + 1, &end, 10);
		if (end == p + 1)
			break;
		p = end;
		i++;
	}
	return i;
}

unsigned long long isc_procfs_field(const char *buf, const char *key)
{
	const char *p = strstr(buf, key);
	return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

uint64_t isc_procfs_psi(const char *line, const char *key, double scale)
{
	const char *p = strstr(line, key);
	return p ? (uint64_t)(strtod(p + strlen(key), NULL) * scale) : 0;
}
