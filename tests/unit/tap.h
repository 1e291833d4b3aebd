/* tap.h - minimal TAP producer for the C unit tests (plan printed last). */
#ifndef TAP_H
#define TAP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

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

static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
