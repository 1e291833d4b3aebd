/*
 * report_html.c - the report's Markdown (report_md.c) as one self-contained
 * HTML page: cmark in safe mode for the text, the pipe tables converted
 * here (CommonMark has none), the SVG charts copied between their markers.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cmark.h>

#include "report.h"

static const char html_head[] =
	"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	"<title>InferScope report</title>\n<style>\n"
	"body{font-family:system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;line-height:1.45;color:#222}\n"
	"code{background:#f3f3f3;padding:0 .2em}\n"
	"h2{border-bottom:1px solid #ddd;margin-top:2rem}\n"
	"blockquote{border-left:4px solid #c60;margin:0;padding-left:1rem}\n"
	"table{border-collapse:collapse;margin:1rem 0}\n"
	"th,td{border:1px solid #ccc;padding:.2rem .5rem;text-align:left;vertical-align:top}\n"
	"th{background:#f3f3f3}\n.r{text-align:right}\n"
	".chart{margin:1rem 0;overflow-x:auto}\n.chart svg{display:block;max-width:100%;height:auto;border:1px solid #ddd}\n"
	"</style>\n</head>\n<body>\n";
static const char html_tail[] = "</body>\n</html>\n";

/* Appends cmark's safe HTML for Markdown text md[0, len). */
static void cmark_put(struct isc_rep *m, const char *md, size_t len, bool inline_only)
{
	char *h = cmark_markdown_to_html(md, len, CMARK_OPT_SAFE);
	if (!h) {
		m->err = -ENOMEM;
		return;
	}
	size_t n = strlen(h);
	if (inline_only && n >= 9 && !strncmp(h, "<p>", 3) && !strcmp(h + n - 5, "</p>\n")) {
		h[n - 5] = '\0';
		isc_rep_put(m, h + 3);
	} else {
		isc_rep_put(m, h);
	}
	free(h);
}

/* Splits a table line into cells at unescaped '|'; returns the count. */
static size_t table_cells(const char *line, size_t len, const char **cell, size_t *clen, size_t max)
{
	size_t n = 0, start = 1; /* the line starts with '|' */
	for (size_t i = 1; i < len; i++) {
		if (line[i] == '\\') {
			i++;
			continue;
		}
		if (line[i] != '|')
			continue;
		if (n < max) {
			size_t a = start, b = i;
			while (a < b && line[a] == ' ')
				a++;
			while (b > a && line[b - 1] == ' ')
				b--;
			cell[n] = line + a;
			clen[n] = b - a;
			n++;
		}
		start = i + 1;
	}
	return n;
}

static bool is_table_start(const char *p)
{
	const char *nl = strchr(p, '\n');
	return *p == '|' && nl && !strncmp(nl + 1, "|---", 4);
}

/*
 * The Markdown as HTML.  CommonMark (cmark) has no tables, so the report's
 * pipe tables are converted here: the structure from the table syntax,
 * every cell's content through cmark (header cells are fixed strings of
 * this file and only HTML-escaped).  Everything else goes to cmark whole.
 */
static void md_to_html(struct isc_rep *m, const char *md)
{
	enum { MAXC = 16 };
	const char *p = md, *text = md;
	while (*p) { /* p is at the start of a line */
		if (!strncmp(p, &ISC_REP_CHART_BEGIN[1], 2)) {
			const char *end = strstr(p, "\n" ISC_REP_CHART_END);
			assert(end); /* written in pairs by this file */
			cmark_put(m, text, (size_t)(p - text), false);
			isc_rep_put(m, "<div class=\"chart\">\n");
			isc_rep_putn(m, p + 2, (size_t)(end + 1 - (p + 2)));
			isc_rep_put(m, "</div>\n");
			p = text = end + 1 + strlen(ISC_REP_CHART_END);
			continue;
		}
		if (!is_table_start(p)) {
			const char *nl = strchr(p, '\n');
			p = nl ? nl + 1 : p + strlen(p);
			continue;
		}
		cmark_put(m, text, (size_t)(p - text), false);
		const char *cell[MAXC];
		size_t clen[MAXC], nh, nd;
		const char *nl = strchr(p, '\n');
		nh = table_cells(p, (size_t)(nl - p), cell, clen, MAXC);
		bool right[MAXC] = { false };
		const char *d = nl + 1, *dnl = strchr(d, '\n');
		const char *dcell[MAXC];
		size_t dlen[MAXC];
		nd = table_cells(d, dnl ? (size_t)(dnl - d) : strlen(d), dcell, dlen, MAXC);
		for (size_t i = 0; i < nd && i < MAXC; i++)
			right[i] = dlen[i] && dcell[i][dlen[i] - 1] == ':';
		isc_rep_put(m, "<table>\n<thead><tr>");
		for (size_t i = 0; i < nh; i++) {
			isc_rep_put(m, right[i] ? "<th class=\"r\">" : "<th>");
			for (size_t k = 0; k < clen[i]; k++) {
				char c = cell[i][k];
				isc_rep_put(m, c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : (char[]){ c, 0 });
			}
			isc_rep_put(m, "</th>");
		}
		isc_rep_put(m, "</tr></thead>\n<tbody>\n");
		p = dnl ? dnl + 1 : d + strlen(d);
		while (*p == '|') {
			nl = strchr(p, '\n');
			size_t len = nl ? (size_t)(nl - p) : strlen(p), n = table_cells(p, len, cell, clen, MAXC);
			isc_rep_put(m, "<tr>");
			for (size_t i = 0; i < n; i++) {
				isc_rep_put(m, right[i] ? "<td class=\"r\">" : "<td>");
				cmark_put(m, cell[i], clen[i], true);
				isc_rep_put(m, "</td>");
			}
			isc_rep_put(m, "</tr>\n");
			p += len + (nl != NULL);
		}
		isc_rep_put(m, "</tbody>\n</table>\n");
		text = p;
	}
	cmark_put(m, text, (size_t)(p - text), false);
}

void isc_rep_html_page(struct isc_rep *h, const char *md)
{
	isc_rep_put(h, html_head);
	md_to_html(h, md);
	isc_rep_put(h, html_tail);
}
