/*
 * cli.c - the command line side of the option table: getopt_long parsing
 * and --help.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "isc.h"
#include "isc_config_api.h"

#define HELP_COL_MAX 30 /* options longer than this put their help on the next line */
#define LONG_VAL 256    /* getopt_long val of option i is LONG_VAL + i */

/* ---- parsing ----------------------------------------------------------- */

/*
 * Pushes the message for a getopt_long error: ch is '?' or ':', arg the
 * argv element getopt just stepped over.  Returns -EINVAL.
 */
static int parse_error(const struct isc_opt *opts, size_t n, int ch, const char *arg)
{
	if (optopt >= LONG_VAL && (size_t)(optopt - LONG_VAL) < n) {
		const struct isc_opt *o = &opts[optopt - LONG_VAL];
		if (ch == ':' || o->arg == ISC_OPT_VALUE)
			isc_err_push("option '--%s' requires an argument", o->name);
		else
			isc_err_push("option '--%s' doesn't allow an argument", o->name);
		return -EINVAL;
	}
	if (optopt) {
		for (size_t i = 0; i < n; i++) {
			if (opts[i].short_name == optopt) {
				isc_err_push("option '-%c' requires an argument", optopt);
				return -EINVAL;
			}
		}
		isc_err_push("unrecognized option '-%c'", optopt);
		return -EINVAL;
	}
	/* an unknown or ambiguous long option: arg is "--name[=value]" */
	if (arg && !strncmp(arg, "--", 2)) {
		const char *name = arg + 2;
		size_t len = strcspn(name, "="), matches = 0;
		for (size_t i = 0; i < n; i++)
			matches += !strncmp(opts[i].name, name, len);
		if (matches > 1)
			isc_err_push("option '--%.*s' is ambiguous", (int)len, name);
		else
			isc_err_push("unrecognized option '--%.*s'", (int)len, name);
		return -EINVAL;
	}
	isc_err_push("unrecognized option '%s'", arg ? arg : "?");
	return -EINVAL;
}

int isc_cli_parse(struct isc_config *c, int argc, char **argv, bool stop_at_nonoption)
{
	size_t n, ns = 0;
	const struct isc_opt *opts = isc_config_opts_borrow(c, &n);
	struct option *lo = calloc(n + 1, sizeof(*lo));
	char *shorts = malloc(2 * n + 3);
	int ch, ret = 0, saved_opterr = opterr;

	if (!lo || !shorts) {
		isc_err_push("Cannot parse the command line: out of memory");
		ret = -ENOMEM;
		goto out;
	}
	if (stop_at_nonoption)
		shorts[ns++] = '+';
	shorts[ns++] = ':'; /* report a missing argument as ':' */
	for (size_t i = 0; i < n; i++) {
		lo[i] = (struct option){ opts[i].name, opts[i].arg == ISC_OPT_VALUE ? required_argument : no_argument,
					 NULL, LONG_VAL + (int)i };
		if (opts[i].short_name) {
			shorts[ns++] = opts[i].short_name;
			if (opts[i].arg == ISC_OPT_VALUE)
				shorts[ns++] = ':';
		}
	}
	shorts[ns] = '\0';

	opterr = 0;
	optind = 0; /* glibc: full re-initialisation, so repeated calls work */
	while ((ch = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		const struct isc_opt *o = NULL;
		if (ch == '?' || ch == ':') {
			ret = parse_error(opts, n, ch, optind > 0 && optind <= argc ? argv[optind - 1] : NULL);
			goto out;
		}
		if (ch >= LONG_VAL) {
			o = &opts[ch - LONG_VAL];
		} else {
			for (size_t i = 0; i < n && !o; i++)
				if (opts[i].short_name == ch)
					o = &opts[i];
		}
		if (!o) { /* getopt returned a character we did not give it */
			isc_err_push("unrecognized option '-%c'", ch);
			ret = -EINVAL;
			goto out;
		}
		ret = isc_config_set(c, o->name, o->arg == ISC_OPT_VALUE ? optarg : "true");
		if (ret < 0)
			goto out;
	}
	ret = optind;
out:
	opterr = saved_opterr;
	free(lo);
	free(shorts);
	return ret;
}

/* ---- --help ------------------------------------------------------------ */

/* "  -o, --output=FILE" or "      --sample-hz=N" into buf; returns its length. */
static size_t opt_left(const struct isc_opt *o, char *buf, size_t cap)
{
	int n;
	if (o->short_name)
		n = snprintf(buf, cap, "  -%c, --%s", o->short_name, o->name);
	else
		n = snprintf(buf, cap, "      --%s", o->name);
	if (n >= 0 && o->arg == ISC_OPT_VALUE && (size_t)n < cap)
		n += snprintf(buf + n, cap - (size_t)n, "=%s", o->metavar ? o->metavar : "VALUE");
	return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

void isc_cli_help(const struct isc_config *c, FILE *out, const char *usage_line, const char *description)
{
	size_t n, col = 0;
	const struct isc_opt *opts = isc_config_opts_borrow(c, &n);
	const char *tool = isc_config_tool_borrow(c);
	const char *section = tool;
	char left[256];

	if (!strncmp(section, "iscope-", 7))
		section += 7;
	fprintf(out, "Usage: %s %s\n", tool, usage_line ? usage_line : "[OPTION]...");
	if (description)
		fprintf(out, "%s\n", description);
	for (size_t i = 0; i < n; i++) {
		size_t len = opt_left(&opts[i], left, sizeof(left));
		if (len <= HELP_COL_MAX && len > col)
			col = len;
	}
	col += 2;

	fprintf(out, "\nOptions:\n");
	for (size_t i = 0; i < n; i++) {
		const struct isc_opt *o = &opts[i];
		size_t len = opt_left(o, left, sizeof(left));
		const char *sep = "";
		if (len + 2 > col)
			fprintf(out, "%s\n%*s%s\n", left, (int)col, "", o->help ? o->help : "");
		else
			fprintf(out, "%-*s%s\n", (int)col, left, o->help ? o->help : "");
		if (!o->env && !o->yaml_key && !o->def)
			continue;
		fprintf(out, "%*s", (int)col, "");
		if (o->env) {
			fprintf(out, "env %s", o->env);
			sep = ", ";
		}
		if (o->yaml_key) {
			fprintf(out, "%sfile key %s", sep, o->yaml_key);
			sep = ", ";
		}
		if (o->def)
			fprintf(out, "%sdefault %s", sep, *o->def ? o->def : "\"\"");
		fputc('\n', out);
	}
	fprintf(out, "\nSettings come from the command line, then the environment, then\n"
		     "./.inferscope.yaml (keys under '%s:' beat top-level keys), then defaults;\n"
		     "--show-config shows the result.\n",
		section);
}
