/*
 * log.c - isc_log(), the library's only writer to stderr, with the tool
 * name and level it prints by.  Below every other module: it depends on
 * nothing but err.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "isc.h"
#include "isc_log.h"

static _Atomic int log_level = ISC_LOG_WARN;
static char log_tool[64] = "inferscope"; /* set once at start-up, before threads */

void isc_log_set_tool(const char *name)
{
	snprintf(log_tool, sizeof(log_tool), "%s", name);
}

bool isc_log_enabled(enum isc_log_level level)
{
	return (int)level <= atomic_load(&log_level);
}

int isc_log_set_level(const char *level)
{
	static const char *const names[] = { "error", "warn", "info", "debug" };
	if (!level) {
		isc_err_push("no log level given");
		return -EINVAL;
	}
	for (int i = 0; i < 4; i++) {
		if (!strcasecmp(level, names[i])) {
			atomic_store(&log_level, i);
			return 0;
		}
	}
	if (!strcasecmp(level, "warning")) {
		atomic_store(&log_level, ISC_LOG_WARN);
		return 0;
	}
	isc_err_push("invalid log level '%s' (expected error, warn, info or debug)", level);
	return -EINVAL;
}

/* Formats the whole line first so that one fwrite keeps threads' lines apart. */
void isc_log(enum isc_log_level level, const char *fmt, ...)
{
	char buf[2048];
	va_list ap;
	int n;
	size_t len;

	if (!isc_log_enabled(level))
		return;
	n = snprintf(buf, sizeof(buf) - 1, "%s: ", log_tool);
	if (n < 0)
		return;
	len = (size_t)n < sizeof(buf) - 1 ? (size_t)n : sizeof(buf) - 2;
	va_start(ap, fmt);
	vsnprintf(buf + len, sizeof(buf) - 1 - len, fmt, ap);
	va_end(ap);
	len = strlen(buf);
	buf[len++] = '\n';
	fwrite(buf, 1, len, stderr);
}
