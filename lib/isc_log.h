/* isc_log.h - the library's only stderr writer (common/log.c). */
#ifndef ISC_LOG_H
#define ISC_LOG_H

#include <stdbool.h>

enum isc_log_level { ISC_LOG_ERROR, ISC_LOG_WARN, ISC_LOG_INFO, ISC_LOG_DEBUG };

/* Writes "<tool>: message\n" to stderr as one write when level is enabled
 * (default warn).  Thread-safe; the tool name comes from isc_config_new or
 * isc_log_set_tool. */
void isc_log(enum isc_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "error", "warn" (or "warning"), "info", "debug", any case; -EINVAL otherwise (NULL too). */
int isc_log_set_level(const char *level);
bool isc_log_enabled(enum isc_log_level level);
/* Copies at most 63 bytes of name. */
void isc_log_set_tool(const char *name);

#endif
