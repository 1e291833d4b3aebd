/*
 * test_cli.c - isc_cli_parse forms and errors, operands and `--`, and the
 * --help text generated from the option table (TAP).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isc.h"
#include "isc_config_api.h"
#include "tap.h"

/* ---- fixture ----------------------------------------------------------- */
static const struct isc_opt opts[] = {
	{ "output", 'o', ISC_OPT_VALUE, "FILE", "INFERSCOPE_OUTPUT", "output", "-", "write to FILE instead of stdout" },
	{ "quiet", 'q', ISC_OPT_FLAG, NULL, "INFERSCOPE_QUIET", "quiet", NULL, "no progress or summary" },
	{ "sample-hz", 0, ISC_OPT_VALUE, "N", "INFERSCOPE_SAMPLE_HZ", "sample_hz", "99", "CPU samples per second" },
	{ "sample-mode", 0, ISC_OPT_VALUE, "MODE", NULL, NULL, NULL, "cpu or wall" },
	{ "verbose", 'v', ISC_OPT_FLAG, NULL, NULL, NULL, NULL, "say more" },
	ISC_OPT_LOG_LEVEL,
};
#define NOPTS (sizeof(opts) / sizeof(opts[0]))

/*
 * Parses argv (NULL-terminated) with a fresh config; returns the result
 * and leaves the config in *cp (freed by the caller).
 */
static int parse(struct isc_config **cp, bool stop, char **argv)
{
	int argc = 0;
	while (argv[argc])
		argc++;
	if (isc_config_new(cp, "iscope-record", opts, NOPTS) < 0)
		abort();
	isc_err_clear();
	return isc_cli_parse(*cp, argc, argv, stop);
}

#define ARGV(...) ((char *[]){ "iscope-record", __VA_ARGS__, NULL })

/* One value option parsed from argv: checks the index and the value. */
static void form(char **argv, int want_rc, const char *name, const char *want, const char *what)
{
	struct isc_config *c;
	int rc = parse(&c, false, argv);
	if (!ok(rc == want_rc, "%s: returns %d", what, want_rc))
		diag("got %d (%s)", rc, rc < 0 ? isc_err_msg() : "");
	ok_str(isc_config_get(c, name), want, what);
	isc_config_free(c);
}

static void error(bool stop, char **argv, const char *want, const char *what)
{
	struct isc_config *c;
	int rc = parse(&c, stop, argv);
	if (!ok(rc == -EINVAL, "%s: -EINVAL", what))
		diag("got %d", rc);
	ok_str(isc_err_msg(), want, what);
	isc_config_free(c);
}

/* ---- tests ------------------------------------------------------------- */
static void test_forms(void)
{
	struct isc_config *c;
	int rc;

	form(ARGV("--output", "a.isc"), 3, "output", "a.isc", "--name value");
	form(ARGV("--output=a.isc"), 2, "output", "a.isc", "--name=value");
	form(ARGV("-o", "a.isc"), 3, "output", "a.isc", "-o value");
	form(ARGV("-oa.isc"), 2, "output", "a.isc", "-ovalue");
	form(ARGV("--output="), 2, "output", "", "--name= gives an empty value");
	form(ARGV("--output", "-"), 3, "output", "-", "'-' is a value after -o");
	form(ARGV("--out=b"), 2, "output", "b", "unique abbreviation");
	form(ARGV("-o", "a", "--output", "b"), 5, "output", "b", "last one wins");
	form(ARGV("--sample-hz", "20"), 3, "sample-hz", "20", "dashed long name");
	form(ARGV("--log-level=debug"), 2, "log-level", "debug", "ISC_OPT_LOG_LEVEL entry");
	form(ARGV("-q"), 2, "output", "-", "default kept when not given");

	rc = parse(&c, false, ARGV("-qvo", "x.isc"));
	ok(rc == 3 && isc_config_flag(c, "quiet") && isc_config_flag(c, "verbose"), "clustered short flags");
	ok_str(isc_config_get(c, "output"), "x.isc", "clustered short flags end in -o value");
	ok_str(isc_config_source(c, "output"), "command line", "source is command line");
	ok_str(isc_config_source(c, "sample-hz"), "default", "untouched option keeps default source");
	isc_config_free(c);

	rc = parse(&c, false, ARGV("--quiet"));
	ok(rc == 2 && isc_config_flag(c, "quiet") && !isc_config_flag(c, "verbose"), "--flag sets only that flag");
	ok_str(isc_config_get(c, "quiet"), "true", "flag value text is true");
	isc_config_free(c);

	rc = parse(&c, false, ARGV("--help", "--version", "--show-config"));
	ok(rc == 4 && isc_config_flag(c, "help") && isc_config_flag(c, "version") &&
		   isc_config_flag(c, "show-config"),
	   "built-ins --help --version --show-config");
	isc_config_free(c);
	rc = parse(&c, false, ARGV("-h"));
	ok(rc == 2 && isc_config_flag(c, "help"), "-h is --help");
	isc_config_free(c);
	rc = parse(&c, false, ARGV("x"));
	ok(rc == 1 && !isc_config_flag(c, "help") && !isc_config_flag(c, "version") &&
		   !isc_config_flag(c, "show-config"),
	   "built-ins are off by default");
	isc_config_free(c);
}

static void test_errors(void)
{
	error(false, ARGV("--output"), "option '--output' requires an argument", "missing argument, long");
	error(false, ARGV("-q", "-o"), "option '-o' requires an argument", "missing argument, short");
	error(true, ARGV("--output"), "option '--output' requires an argument", "missing argument, stop mode");
	error(false, ARGV("--bogus"), "unrecognized option '--bogus'", "unknown long option");
	error(false, ARGV("a", "--bogus=3"), "unrecognized option '--bogus'", "unknown long option with =value");
	error(false, ARGV("-Z"), "unrecognized option '-Z'", "unknown short option");
	error(false, ARGV("-qZ"), "unrecognized option '-Z'", "unknown short option in a cluster");
	error(true, ARGV("-x", "cmd"), "unrecognized option '-x'", "unknown short option, stop mode");
	error(false, ARGV("--quiet=yes"), "option '--quiet' doesn't allow an argument", "argument to a flag");
	error(false, ARGV("--sample=3"), "option '--sample' is ambiguous", "ambiguous abbreviation");
}

static void test_operands(void)
{
	struct isc_config *c;
	char **argv;
	int rc;

	argv = ARGV("-q", "python", "train.py", "-o", "x");
	rc = parse(&c, true, argv);
	ok(rc == 2 && !strcmp(argv[2], "python") && !strcmp(argv[4], "-o"), "stop at first non-option");
	ok_str(isc_config_get(c, "output"), "-", "options after the command are the command's");
	ok(isc_config_flag(c, "quiet"), "options before the command are ours");
	isc_config_free(c);

	argv = ARGV("-o", "t.isc", "--", "python", "-q");
	rc = parse(&c, true, argv);
	ok(rc == 4 && !strcmp(argv[4], "python"), "stop mode: -- then the command");
	ok(!isc_config_flag(c, "quiet"), "stop mode: options after -- are not parsed");
	ok_str(isc_config_get(c, "output"), "t.isc", "stop mode: options before -- are parsed");
	isc_config_free(c);

	argv = ARGV("--", "--quiet");
	rc = parse(&c, true, argv);
	ok(rc == 2 && !strcmp(argv[2], "--quiet") && !isc_config_flag(c, "quiet"), "stop mode: -- first");
	isc_config_free(c);

	argv = ARGV("a.isc", "-o", "out", "b.isc", "-q");
	rc = parse(&c, false, argv);
	ok(rc == 4 && !strcmp(argv[4], "a.isc") && !strcmp(argv[5], "b.isc"), "operands and options mix, operands last in order");
	ok(isc_config_flag(c, "quiet") && !strcmp(isc_config_get(c, "output"), "out"), "options among operands parsed");
	isc_config_free(c);

	argv = ARGV("-q", "--", "-o", "x", "-");
	rc = parse(&c, false, argv);
	ok(rc == 3 && !strcmp(argv[3], "-o") && !strcmp(argv[4], "x") && !strcmp(argv[5], "-"),
	   "-- makes the rest operands");
	ok_str(isc_config_get(c, "output"), "-", "-o after -- not parsed");
	isc_config_free(c);

	argv = ARGV("a", "--", "b");
	rc = parse(&c, false, argv);
	ok(rc == 2 && !strcmp(argv[2], "a") && !strcmp(argv[3], "b"), "operands on both sides of --");
	isc_config_free(c);

	argv = ARGV("-");
	rc = parse(&c, false, argv);
	ok(rc == 1 && !strcmp(argv[1], "-"), "'-' alone is an operand (stdin)");
	isc_config_free(c);

	argv = (char *[]){ "iscope-record", NULL };
	rc = parse(&c, false, argv);
	ok(rc == 1, "no arguments: first operand index is argc");
	isc_config_free(c);
}

static void test_reparse_and_precedence(void)
{
	struct isc_config *c;
	char *env[] = { "INFERSCOPE_OUTPUT=env.isc", "INFERSCOPE_QUIET=1", "INFERSCOPE_SAMPLE_HZ=7", NULL };
	char **argv2 = ARGV("-o", "second");
	int rc;

	rc = parse(&c, false, ARGV("--output=cli.isc", "op"));
	ok(rc == 2, "first parse");
	ok(isc_config_load_env(c, env) == 0, "env loaded after the command line");
	ok_str(isc_config_get(c, "output"), "cli.isc", "command line beats env loaded later");
	ok_str(isc_config_source(c, "sample-hz"), "environment INFERSCOPE_SAMPLE_HZ", "env beats default");
	ok(isc_config_flag(c, "quiet"), "flag from env");
	/* a second parse in the same process must start afresh (getopt state) */
	rc = isc_cli_parse(c, 3, argv2, false);
	ok(rc == 3, "second parse in one process");
	ok_str(isc_config_get(c, "output"), "second", "second parse applies");
	isc_config_free(c);
}

static char *help_text(const struct isc_opt *o, size_t n, const char *tool, const char *usage, const char *desc)
{
	static char *buf;
	size_t len;
	struct isc_config *c;
	FILE *f;

	free(buf);
	buf = NULL;
	if (isc_config_new(&c, tool, o, n) < 0 || !(f = open_memstream(&buf, &len)))
		abort();
	isc_cli_help(c, f, usage, desc);
	fclose(f);
	isc_config_free(c);
	return buf;
}

static void test_help(void)
{
	static const struct isc_opt own_h[] = {
		{ "host", 'h', ISC_OPT_VALUE, "NAME", NULL, NULL, NULL, "host to record" },
		{ "a-very-long-option-name-indeed", 0, ISC_OPT_VALUE, "SOMETHING", NULL, NULL, "", "long one" },
	};
	const char *h = help_text(opts, NOPTS, "iscope-record", "[OPTION]... [--] COMMAND [ARG]...",
				  "Run COMMAND and record what it does.");
	char needle[128];

	for (size_t i = 0; i < NOPTS; i++) {
		snprintf(needle, sizeof(needle), "--%s%s%s  ", opts[i].name, opts[i].arg == ISC_OPT_VALUE ? "=" : "",
			 opts[i].arg == ISC_OPT_VALUE ? opts[i].metavar : "");
		ok(strstr(h, needle) != NULL, "help shows --%s with its metavar", opts[i].name);
		ok(strstr(h, opts[i].help) != NULL, "help shows the help of --%s", opts[i].name);
		if (opts[i].env) {
			snprintf(needle, sizeof(needle), "env %s", opts[i].env);
			ok(strstr(h, needle) != NULL, "help names %s", opts[i].env);
		}
	}
	ok(strstr(h, "  -h, --help  ") && strstr(h, "      --version  ") && strstr(h, "      --show-config  "),
	   "help lists the built-ins");
	ok_str(h,
	       "Usage: iscope-record [OPTION]... [--] COMMAND [ARG]...\n"
	       "Run COMMAND and record what it does.\n"
	       "\n"
	       "Options:\n"
	       "  -o, --output=FILE       write to FILE instead of stdout\n"
	       "                          env INFERSCOPE_OUTPUT, file key output, default -\n"
	       "  -q, --quiet             no progress or summary\n"
	       "                          env INFERSCOPE_QUIET, file key quiet\n"
	       "      --sample-hz=N       CPU samples per second\n"
	       "                          env INFERSCOPE_SAMPLE_HZ, file key sample_hz, default 99\n"
	       "      --sample-mode=MODE  cpu or wall\n"
	       "  -v, --verbose           say more\n"
	       "      --log-level=LEVEL   error, warn, info or debug\n"
	       "                          env INFERSCOPE_LOG_LEVEL, file key log_level, default warn\n"
	       "  -h, --help              show this help and exit\n"
	       "      --version           show the version and exit\n"
	       "      --show-config       show the effective settings and where each came from, and exit\n"
	       "\n"
	       "Settings come from the command line, then the environment, then\n"
	       "./.inferscope.yaml (keys under 'record:' beat top-level keys), then defaults;\n"
	       "--show-config shows the result.\n",
	       "help text exact");

	h = help_text(own_h, 2, "iscope-merge", NULL, NULL);
	ok_str(h,
	       "Usage: iscope-merge [OPTION]...\n"
	       "\n"
	       "Options:\n"
	       "  -h, --host=NAME    host to record\n"
	       "      --a-very-long-option-name-indeed=SOMETHING\n"
	       "                     long one\n"
	       "                     default \"\"\n"
	       "      --help         show this help and exit\n"
	       "      --version      show the version and exit\n"
	       "      --show-config  show the effective settings and where each came from, and exit\n"
	       "\n"
	       "Settings come from the command line, then the environment, then\n"
	       "./.inferscope.yaml (keys under 'merge:' beat top-level keys), then defaults;\n"
	       "--show-config shows the result.\n",
	       "help: table's own -h wins, long option wraps, no usage line");
}

int main(void)
{
	test_forms();
	test_errors();
	test_operands();
	test_reparse_and_precedence();
	test_help();
	return tap_done();
}
