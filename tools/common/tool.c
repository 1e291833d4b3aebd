/* tool.c - the common start of the tools' main() (see tool.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

int isc_tool_out_open(struct isc_tool_out *o, const char *path)
{
	*o = (struct isc_tool_out){ stdout, NULL, false, false };
	if (!path || !strcmp(path, "-"))
		return 0;
	o->path = path;
	/* O_EXCL first to learn whether we create it; no O_TRUNC until the result is ready */
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (fd >= 0)
		o->created = true;
	else if (errno == EEXIST)
		fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || !(o->f = fdopen(fd, "w"))) {
		isc_log(ISC_LOG_ERROR, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		o->f = NULL;
		if (o->created)
			unlink(path);
		return 1;
	}
	return 0;
}

FILE *isc_tool_out_begin(struct isc_tool_out *o)
{
	struct stat st;
	o->written = true;
	if (o->f != stdout && !fstat(fileno(o->f), &st) && S_ISREG(st.st_mode))
		(void)!ftruncate(fileno(o->f), 0);
	return o->f;
}

const char *isc_tool_out_name(const struct isc_tool_out *o)
{
	return o->path ? o->path : "stdout";
}

int isc_tool_out_close(struct isc_tool_out *o, bool ok)
{
	int bad = 0;
	if (!o->f)
		return 0;
	errno = 0;
	if (o->f == stdout) {
		bad = fflush(stdout) || ferror(stdout);
	} else {
		bad = fflush(o->f) || ferror(o->f);
		int e = errno;
		bad = fclose(o->f) || bad;
		if (!errno)
			errno = e;
		if (!ok && o->created && !o->written)
			unlink(o->path);
	}
	o->f = NULL;
	if (bad && ok) {
		isc_log(ISC_LOG_ERROR, "%s: Failed to write: %s", isc_tool_out_name(o), strerror(errno ? errno : EIO));
		return 1;
	}
	return 0;
}

FILE *isc_tool_in_open(const char *arg, const char **name)
{
	if (!arg || !strcmp(arg, "-")) {
		*name = "stdin";
		return stdin;
	}
	*name = arg;
	FILE *f = fopen(arg, "re");
	if (!f)
		isc_log(ISC_LOG_ERROR, "%s: %s", arg, strerror(errno));
	return f;
}

void isc_tool_in_close(FILE *f)
{
	if (f && f != stdin)
		fclose(f);
}
