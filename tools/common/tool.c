/* tool.c - the common start of the tools' main() (see tool.h). */
#include <stdarg.h>
#include <stdio.h>

#include "isc.h"
#include "isc_config.h"
#include "tool.h"

int isc_tool_usage_error(const struct isc_tool *t, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	isc_log(ISC_LOG_ERROR, "%s", msg);
	fprintf(stderr, "Try '%s --help' for more information.\n", t->name);
	return 2;
}

int isc_tool_start(const struct isc_tool *t, int argc, char **argv, struct isc_config **cp, int *first)
{
	struct isc_config *c = NULL;
	int status = 2;

	if (isc_config_new(&c, t->name, t->opts, t->nopts))
		return 1;
	if (isc_config_load_file(c, NULL) || isc_config_load_env(c, NULL)) {
		isc_log(ISC_LOG_ERROR, "%s", isc_err_msg());
		goto done;
	}
	if ((*first = isc_cli_parse(c, argc, argv, t->stop_at_operand)) < 0) {
		status = isc_tool_usage_error(t, "%s", isc_err_msg());
		goto done;
	}
	status = 0;
	if (isc_config_flag(c, "help")) {
		isc_cli_help(c, stdout, t->usage, t->description);
		goto done;
	}
	if (isc_config_flag(c, "version")) {
		printf("%s %s\n", t->name, ISC_VERSION);
		goto done;
	}
	if (isc_config_flag(c, "show-config")) {
		isc_config_show(c, stdout);
		goto done;
	}
	if (isc_log_set_level(isc_config_get(c, "log-level"))) {
		isc_log(ISC_LOG_ERROR, "invalid value '%s' for --log-level", isc_config_get(c, "log-level"));
		status = 2;
		goto done;
	}
	*cp = c;
	return -1;
done:
	isc_config_free(c);
	return status;
}
