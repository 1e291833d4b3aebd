/*
 * isc_report.h - findings JSON -> Markdown, a self-contained HTML page, or
 * the short summary for a terminal (lib/report).  The report reads the
 * document only (isc_findings.h); it computes nothing the analysis did not
 * write.  Same conventions as isc.h.
 */
#ifndef ISC_REPORT_H
#define ISC_REPORT_H

#include <stdbool.h>

#include <cjson/cJSON.h>

/* ---- report (report_md.c and one file per section) ---------------------------------------------- */
enum isc_report_format {
	ISC_REPORT_MD = 0,
	ISC_REPORT_HTML = 1, /* the Markdown rendered by cmark (safe mode; tables converted here) in one page */
	ISC_REPORT_FOLDED = 2,     /* native.tree as folded stacks: "thread;frame;...;frame COUNT", root first */
	ISC_REPORT_SPEEDSCOPE = 3, /* native.tree in speedscope's file format: a sampled profile per thread */
};

/*
 * Renders a findings document.  Missing or mistyped fields are tolerated
 * (shown as "n/a" or left out).  *out is a malloc'd NUL-terminated string
 * the caller frees.  Returns 0, -EINVAL when root is not a JSON object (or,
 * for the flame-graph formats, has no usable native.tree: the message
 * says which), or -ENOMEM.
 */
int isc_report_render(const cJSON *root, enum isc_report_format f, char **out);

/* ---- terminal summary (report_term.c) ---------------------------------- */
struct isc_summary_opts {
	bool color;        /* ANSI SGR colours */
	const char *input; /* the findings file named in the hint line; NULL for stdin */
};
/*
 * The short summary for a terminal: the verdict with its confidence, the
 * headline numbers, the top 3 findings with their estimated savings, and a
 * hint line naming -o report.md / -o report.html.  Control characters in
 * the document's strings are dropped.  *out is malloc'd; 0, -EINVAL (not
 * an object) or -ENOMEM.
 */
int isc_report_summary(const cJSON *root, const struct isc_summary_opts *o, char **out);

#endif
