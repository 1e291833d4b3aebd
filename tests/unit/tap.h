/* tap.h - minimal TAP producer for the C unit tests (plan printed last). */
#ifndef TAP_H
#define TAP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed;

static inline bool ok(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline bool ok(bool cond, const char *fmt, ...)
{
	va_list ap;
	printf("%sok %d - ", cond ? "" : "not ", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	tap_failed += !cond;
	return cond;
}

static inline void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void diag(const char *fmt, ...)
{
	va_list ap;
	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* ok() on two strings (either may be NULL), with both shown when they differ. */
static inline bool ok_str(const char *got, const char *want, const char *what)
{
	bool same = got && want ? !strcmp(got, want) : got == want;
	if (!ok(same, "%s", what)) {
		diag("got:  '%s'", got ? got : "(null)");
		diag("want: '%s'", want ? want : "(null)");
	}
	return same;
}

static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
