/*
 * text.c - workload bytes into C strings (isc_util.h): NULs replaced, and
 * for text bound for the findings, invalid UTF-8 (and control characters)
 * replaced by '?'.
 */
#include <stdlib.h>

#include "isc_util.h"

void isc_copy_bytes(char *dst, size_t cap, const uint8_t *src, size_t len, char sep)
{
	size_t n = len < cap - 1 ? len : cap - 1;
	for (size_t i = 0; i < n; i++)
		dst[i] = src[i] ? (char)src[i] : sep;
	while (n > 0 && dst[n - 1] == sep && sep != '\0')
		n--;
	dst[n] = '\0';
}

/* Length of the valid UTF-8 sequence at q (NUL-terminated), 0 when invalid. */
static unsigned utf8_len(const unsigned char *q)
{
	unsigned len;
	unsigned char lo = 0x80, hi = 0xbf;
	if (*q < 0x80)
		return 1;
	if (*q >= 0xc2 && *q <= 0xdf)
		len = 2;
	else if (*q >= 0xe0 && *q <= 0xef)
		len = 3;
	else if (*q >= 0xf0 && *q <= 0xf4)
		len = 4;
	else
		return 0;
	if (*q == 0xe0)
		lo = 0xa0; /* overlong */
	else if (*q == 0xed)
		hi = 0x9f; /* surrogates */
	else if (*q == 0xf0)
		lo = 0x90;
	else if (*q == 0xf4)
		hi = 0x8f; /* > U+10FFFF */
	if (q[1] < lo || q[1] > hi)
		return 0;
	for (unsigned i = 2; i < len; i++)
		if ((q[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

bool isc_utf8_valid(const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned len = utf8_len((const unsigned char *)s + i);
		if (!len || len > n - i)
			return false;
		i += len;
	}
	return true;
}

char *isc_text_dup(const uint8_t *p, size_t n, char nul, bool ctl)
{
	char *s = malloc(n + 1);
	if (!s)
		return NULL;
	if (nul == ' ')
		isc_copy_bytes(s, n + 1, p, n, nul);
	else
		for (size_t i = 0; i <= n; i++)
			s[i] = i == n ? '\0' : p[i] ? (char)p[i] : nul;
	for (unsigned char *q = (unsigned char *)s; *q;) {
		unsigned len = utf8_len(q);
		if (!len || (ctl && len == 1 && (*q < 0x20 || *q == 0x7f)))
			*q++ = '?';
		else
			q += len;
	}
	return s;
}

/* The ranks a sorted list of ranks covers, as ranges: "2-5, 9" (cut at cap). */
void isc_rank_ranges(char *buf, size_t cap, const uint32_t *v, size_t n)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n && used < cap;) {
		size_t j = i;
		while (j + 1 < n && v[j + 1] == v[j] + 1)
			j++;
		used += (size_t)(j > i ? snprintf(buf + used, cap - used, "%s%u-%u", used ? ", " : "", v[i], v[j])
				       : snprintf(buf + used, cap - used, "%s%u", used ? ", " : "", v[i]));
		i = j + 1;
	}
}
