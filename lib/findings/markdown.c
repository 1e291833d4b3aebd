/*
 * markdown.c - workload text escaped for Markdown (isc_findings.h): what
 * the report renders and what a rule may quote must never turn into
 * markup, a table cell break, HTML or a link.
 */
#include <stdbool.h>
#include <string.h>

#include "isc_findings.h"

static bool is_alnum(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}

/*
 * Always escaped: characters that start inline markup, HTML, entities, GFM
 * tables/strikethrough or math.  '_' is left alone between two word
 * characters, where CommonMark cannot read it as emphasis (module_name.py).
 * A leading block marker ("- ", "+ ", "--", "=", "1. ", "1) ") is escaped
 * as well, though the report never starts a line with a workload string.
 */
int isc_md_escape(struct isc_buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t digits = 0;
	int rc = 0;
	while (p[digits] >= '0' && p[digits] <= '9')
		digits++;
	for (size_t i = 0; p[i] && !rc; i++) {
		unsigned char c = p[i];
		bool esc = strchr("\\`*[]<>#|!~&$_", c) != NULL;
		if (c == '_' && i > 0 && is_alnum(p[i - 1]) && is_alnum(p[i + 1]))
			esc = false;
		bool gap = p[i + 1] == ' ' || p[i + 1] == '\t' || p[i + 1] == '\0';
		if (i == 0 && (c == '=' || ((c == '-' || c == '+') && (gap || p[1] == c))))
			esc = true;
		if (digits && i == digits && (c == '.' || c == ')') && gap)
			esc = true;
		if (c == '\t' || c == '\n' || c == '\r') {
			rc = isc_buf_put_u8(b, ' ');
			continue;
		}
		if (c < 0x20 || c == 0x7f)
			continue; /* control characters are dropped */
		if (esc)
			rc = isc_buf_put_u8(b, '\\');
		if (!rc)
			rc = isc_buf_put_u8(b, c);
	}
	return rc;
}
