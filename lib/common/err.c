/* err.c - per-thread error context stack (see isc.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "isc.h"

#define ERR_MAX 8
#define ERR_LEN 512

static _Thread_local char err_msgs[ERR_MAX][ERR_LEN];
static _Thread_local int err_n;
static _Thread_local char err_joined[ERR_MAX * ERR_LEN];

void isc_err_push(const char *fmt, ...)
{
	va_list ap;
	if (err_n == ERR_MAX) /* keep the innermost (the cause) and the outermost */
		err_n--;
	va_start(ap, fmt);
	vsnprintf(err_msgs[err_n++], ERR_LEN, fmt, ap);
	va_end(ap);
}

void isc_err_clear(void)
{
	err_n = 0;
}

const char *isc_err_msg(void)
{
	size_t len = 0;
	err_joined[0] = '\0';
	for (int i = err_n - 1; i >= 0; i--) {
		int n = snprintf(err_joined + len, sizeof(err_joined) - len, "%s%s",
				 err_msgs[i], i ? ": " : "");
		if (n < 0 || (size_t)n >= sizeof(err_joined) - len)
			break;
		len += (size_t)n;
	}
	if (!err_n)
		return "unknown error";
	return err_joined;
}

