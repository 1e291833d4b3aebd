/*
 * test_config.c - configuration sources and precedence, the YAML file,
 * typed getters, --show-config and isc_log (TAP).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "isc.h"
#include "isc_config_api.h"
#include "tap.h"

/* ---- helpers ----------------------------------------------------------- */
static char dir[64];

static char *write_file(const char *name, const char *text)
{
	char *path;
	FILE *f;
	if (asprintf(&path, "%s/%s", dir, name) < 0)
		abort();
	if (!(f = fopen(path, "w")) || fputs(text, f) < 0 || fclose(f))
		abort();
	return path;
}

/* stderr capture around library calls that warn */
static int saved_fd = -1;
static FILE *cap;

static void capture_begin(void)
{
	fflush(stderr);
	if (!(cap = tmpfile()) || (saved_fd = dup(2)) < 0 || dup2(fileno(cap), 2) < 0)
		abort();
}

static char *capture_end(void)
{
	static char buf[4096];
	size_t n;
	fflush(stderr);
	dup2(saved_fd, 2);
	close(saved_fd);
	rewind(cap);
	n = fread(buf, 1, sizeof(buf) - 1, cap);
	buf[n] = '\0';
	fclose(cap);
	return buf;
}

static char *show(const struct isc_config *c)
{
	static char *buf;
	size_t len;
	FILE *f;
	free(buf);
	if (!(f = open_memstream(&buf, &len)))
		abort();
	isc_config_show(c, f);
	fclose(f);
	return buf;
}

/* ---- precedence -------------------------------------------------------- */
static const struct isc_opt prec_opts[] = {
	{ "alpha", 'a', ISC_OPT_VALUE, "X", "INFERSCOPE_T_ALPHA", "alpha", "d-alpha", "set everywhere" },
	{ "beta", 0, ISC_OPT_VALUE, "X", "INFERSCOPE_T_BETA", "beta", "d-beta", "file and env" },
	{ "gamma", 0, ISC_OPT_VALUE, "X", "INFERSCOPE_T_GAMMA", "gamma", "d-gamma", "global and section" },
	{ "delta", 0, ISC_OPT_VALUE, "X", "INFERSCOPE_T_DELTA", "delta", "d-delta", "nowhere (empty env)" },
	{ "eps", 0, ISC_OPT_FLAG, NULL, "INFERSCOPE_T_EPS", "eps", NULL, "flag, file yes, env off" },
	{ "zeta", 0, ISC_OPT_VALUE, "X", NULL, "zeta", NULL, "global only" },
};
#define NPREC (sizeof(prec_opts) / sizeof(prec_opts[0]))

static const char global_first[] = "# precedence fixture\n"
				   "alpha: file-alpha\n"
				   "beta: file-beta\n"
				   "gamma: global-gamma\n"
				   "eps: yes\n"
				   "zeta: z-global\n"
				   "unit:\n"
				   "  gamma: section-gamma\n";
static const char section_first[] = "unit:\n"
				    "  gamma: section-gamma\n"
				    "gamma: global-gamma\n"
				    "alpha: file-alpha\n"
				    "beta: file-beta\n"
				    "eps: yes\n"
				    "zeta: z-global\n"
				    "record:\n"
				    "  alpha: other-tool\n";

static void test_precedence(void)
{
	static const char *const orders[6] = { "fec", "fce", "efc", "ecf", "cfe", "cef" };
	char *env[] = { "PATH=/bin", "INFERSCOPE_T_ALPHA=env-alpha", "INFERSCOPE_T_BETA=env-beta",
			"INFERSCOPE_T_EPS=off", "INFERSCOPE_T_DELTA=", NULL };
	struct {
		const char *text;
		int gamma_line, zeta_line;
		char *path;
	} files[2] = { { global_first, 8, 6, NULL }, { section_first, 2, 7, NULL } };

	files[0].path = write_file("global_first.yaml", global_first);
	files[1].path = write_file("section_first.yaml", section_first);
	for (int fi = 0; fi < 2; fi++) {
		for (int oi = 0; oi < 6; oi++) {
			struct isc_config *c;
			char *argv[] = { "iscope-unit", "--alpha", "cli-alpha", "pos", NULL };
			char want[1024], what[128];
			int rc = 0;
			if (isc_config_new(&c, "iscope-unit", prec_opts, NPREC) < 0)
				abort();
			for (const char *o = orders[oi]; *o && rc >= 0; o++) {
				if (*o == 'f')
					rc = isc_config_load_file(c, files[fi].path);
				else if (*o == 'e')
					rc = isc_config_load_env(c, env);
				else if ((rc = isc_cli_parse(c, 4, argv, false)) != 3)
					rc = -1;
			}
			snprintf(want, sizeof(want),
				 "alpha = cli-alpha  (command line)\n"
				 "beta = env-beta  (environment INFERSCOPE_T_BETA)\n"
				 "gamma = section-gamma  (%s:%d)\n"
				 "delta = d-delta  (default)\n"
				 "eps = false  (environment INFERSCOPE_T_EPS)\n"
				 "zeta = z-global  (%s:%d)\n",
				 files[fi].path, files[fi].gamma_line, files[fi].path, files[fi].zeta_line);
			snprintf(what, sizeof(what), "precedence, %s, load order %s",
				 fi ? "section first" : "global first", orders[oi]);
			if (!ok(rc >= 0, "%s: loads succeed", what))
				diag("%s", isc_err_msg());
			ok_str(show(c), want, what);
			isc_config_free(c);
		}
	}
	free(files[0].path);
	free(files[1].path);
}

/* Each source alone over the default, and the default alone. */
static void test_single_sources(void)
{
	struct isc_config *c;
	char *env[] = { "INFERSCOPE_T_EPS=Yes", NULL };
	char *path = write_file("single.yaml", "unit: {beta: sect}\n");

	isc_config_new(&c, "iscope-unit", prec_opts, NPREC);
	ok_str(isc_config_get(c, "alpha"), "d-alpha", "default value before any load");
	ok_str(isc_config_source(c, "alpha"), "default", "default source");
	ok(isc_config_get(c, "zeta") == NULL, "no default = unset");
	ok(!isc_config_flag(c, "eps"), "flag defaults to false");
	ok(isc_config_load_env(c, env) == 0 && isc_config_flag(c, "eps"), "flag 'Yes' from env is true");
	ok(isc_config_load_file(c, path) == 0, "flow-style section loads");
	ok_str(isc_config_get(c, "beta"), "sect", "flow-style section value");
	ok(isc_config_get(c, "nope") == NULL && isc_config_source(c, "nope") == NULL,
	   "unknown name: NULL value and source");
	isc_config_free(c);
	free(path);
}

static void test_default_path(void)
{
	struct isc_config *c;
	char cwd[4096];
	char *path = write_file(".inferscope.yaml", "\nunit:\n  beta: here\n");

	if (!getcwd(cwd, sizeof(cwd)) || chdir(dir))
		abort();
	isc_config_new(&c, "iscope-unit", prec_opts, NPREC);
	ok(isc_config_load_file(c, NULL) == 0, "NULL path loads ./.inferscope.yaml");
	ok_str(isc_config_source(c, "beta"), "./.inferscope.yaml:3", "source names ./.inferscope.yaml and line");
	isc_config_free(c);
	unlink(path);
	isc_config_new(&c, "iscope-unit", prec_opts, NPREC);
	ok(isc_config_load_file(c, NULL) == 0, "missing ./.inferscope.yaml is not an error");
	ok_str(show(c),
	       "alpha = d-alpha  (default)\nbeta = d-beta  (default)\ngamma = d-gamma  (default)\n"
	       "delta = d-delta  (default)\neps = false  (default)\nzeta = (unset)  (default)\n",
	       "missing file leaves the defaults");
	isc_config_free(c);
	if (chdir(cwd))
		abort();
	free(path);
}

static const struct isc_opt typed_opts[] = {
	{ "sample-hz", 0, ISC_OPT_VALUE, "N", "INFERSCOPE_SAMPLE_HZ", "sample_hz", "99", "samples per second" },
	{ "trace-size", 0, ISC_OPT_VALUE, "SIZE", "INFERSCOPE_TRACE_SIZE", "trace_size", "64M", "ring size" },
	{ "limit", 0, ISC_OPT_VALUE, "N", NULL, "limit", NULL, "no default" },
};

/* ---- file errors and warnings ------------------------------------------ */
static void expect_file_error(const char *name, const char *text, int want_rc, const char *want_msg)
{
	struct isc_config *c;
	char *path = write_file(name, text);
	char want[512];
	int rc;

	snprintf(want, sizeof(want), want_msg, path);
	isc_config_new(&c, "iscope-unit", prec_opts, NPREC);
	isc_err_clear();
	rc = isc_config_load_file(c, path);
	if (!ok(rc == want_rc, "%s: returns %d", name, want_rc))
		diag("got %d", rc);
	ok_str(isc_err_msg(), want, name);
	ok_str(isc_config_get(c, "alpha"), "d-alpha", "failed load applies nothing");
	isc_config_free(c);
	free(path);
}

static void test_file_errors(void)
{
	char *path;
	struct isc_config *c;

	expect_file_error("bad_syntax.yaml", "alpha: one\nbeta: two\ngamma: three: four\n", -EINVAL,
			  "%s:3: mapping values are not allowed in this context");
	expect_file_error("unclosed.yaml", "alpha: one\nbeta: [1, 2\n\n", -EINVAL,
			  "%s:4: did not find expected ',' or ']' (while parsing a flow sequence "
			  "started at line 2)");
	expect_file_error("top_list.yaml", "- alpha\n- beta\n", -EINVAL,
			  "%s:1: expected a mapping of settings at the top level");
	expect_file_error("tab_indent.yaml", "unit:\n\tbeta: x\n", -EINVAL,
			  "%s:2: found character that cannot start any token (while scanning for the next "
			  "token started at line 2)");
	expect_file_error("two_docs.yaml", "alpha: one\n---\n- 1\n", -EINVAL,
			  "%s:2: only one YAML document is allowed");
	expect_file_error("top_scalar.yaml", "\n\njust text\n", -EINVAL,
			  "%s:3: expected a mapping of settings at the top level");
	expect_file_error("list_value.yaml", "alpha: ok\nbeta: [1, 2]\n", -EINVAL,
			  "%s:2: beta must be a single value, not a list");
	expect_file_error("bad_flag.yaml", "alpha: x\nunit:\n  eps: maybe\n", -EINVAL,
			  "%s:3: invalid value 'maybe' for eps: expected true or false");
	expect_file_error("bad_section.yaml", "alpha: x\nunit: 3\n", -EINVAL,
			  "%s:2: section 'unit' must be a mapping of settings");

	path = write_file("subdir", "");
	unlink(path);
	mkdir(path, 0700);
	isc_config_new(&c, "iscope-unit", prec_opts, NPREC);
	isc_err_clear();
	ok(isc_config_load_file(c, path) == -EISDIR, "a directory is a read error");
	ok(strstr(isc_err_msg(), "Cannot read: Is a directory") != NULL, "read error message");
	isc_config_free(c);
	rmdir(path);
	free(path);

	isc_config_new(&c, "iscope-unit", prec_opts, NPREC);
	path = write_file("empty.yaml", "# nothing here\n");
	ok(isc_config_load_file(c, path) == 0, "comment-only file is fine");
	free(path);
	path = write_file("nulls.yaml", "alpha:\nbeta: ~\nunit:\n");
	ok(isc_config_load_file(c, path) == 0 && !strcmp(isc_config_get(c, "alpha"), "d-alpha") &&
		   !strcmp(isc_config_get(c, "beta"), "d-beta"),
	   "null values and empty section leave settings alone");
	free(path);
	path = write_file("flag.yaml", "unit: {eps: On}\n");
	ok(isc_config_load_file(c, path) == 0 && isc_config_flag(c, "eps"), "flag 'On' in file is true");
	ok_str(isc_config_get(c, "eps"), "true", "flags are stored as true/false");
	free(path);
	isc_config_free(c);
}

static void test_file_warnings(void)
{
	struct isc_config *c;
	char *path, *err, want[1024];
	int rc;

	path = write_file("unknown.yaml", "alpha: a\n"
					  "unit:\n"
					  "  bogus: 1\n"
					  "  beta: b\n"
					  "record:\n"
					  "  whatever: 2\n"
					  "sample_hz: 3\n"
					  "recrod:\n"
					  "  x: 1\n"
					  "unit:\n"
					  "  beta: c\n");
	isc_config_new(&c, "iscope-unit", prec_opts, NPREC);
	capture_begin();
	rc = isc_config_load_file(c, path);
	err = capture_end();
	ok(rc == 0, "unknown keys are not an error");
	snprintf(want, sizeof(want),
		 "iscope-unit: %s:3: unknown key 'bogus' in section 'unit' (ignored)\n"
		 "iscope-unit: %s:8: unknown section 'recrod' (ignored; did you mean 'record'?)\n"
		 "iscope-unit: %s:11: 'beta' repeats line 4 (this one wins)\n",
		 path, path, path);
	ok_str(err, want, "warnings: unknown key, unknown section, repeat; another tool's key (sample_hz) silent");
	ok_str(isc_config_get(c, "alpha"), "a", "known keys around unknown ones still apply");
	ok_str(isc_config_get(c, "beta"), "c", "repeated key: the later one wins");
	isc_config_free(c);
	free(path);

	path = write_file("dashed.yaml", "record:\n  limit: 1\n  sample-hz: 2\n");
	isc_config_new(&c, "iscope-record", typed_opts, 3);
	capture_begin();
	rc = isc_config_load_file(c, path);
	err = capture_end();
	snprintf(want, sizeof(want),
		 "iscope-record: %s:3: unknown key 'sample-hz' in section 'record' (ignored; did you mean "
		 "'sample_hz'?)\n", path);
	ok(rc == 0 && !strcmp(isc_config_get(c, "sample-hz"), "99"), "option spelling is not a file key");
	ok_str(err, want, "unknown key warning suggests the file spelling");
	isc_config_free(c);
	free(path);
}

/* Issue 18: unknown keys at every level warn once, with a suggestion; a key of
 * another tool is not an error; a top-level key one tool reads under its own
 * section only (merge's format) does not reach it from the top level. */
static const struct isc_opt merge_like[] = {
	{ "format", 'f', ISC_OPT_VALUE, "FMT", "INFERSCOPE_MERGE_FORMAT", "format", "timeline", "timeline or chrome" },
	{ "quiet", 'q', ISC_OPT_FLAG, NULL, "INFERSCOPE_QUIET", "quiet", "false", "quiet" },
};
static const struct isc_opt report_like[] = {
	{ "format", 'f', ISC_OPT_VALUE, "FMT", "INFERSCOPE_REPORT_FORMAT", "format", NULL, "md or html" },
};

static void test_file_keys_across_tools(void)
{
	struct isc_config *c;
	char *path, *err, want[2048];
	int rc;

	path = write_file("keys.yaml", "sample-hz: 10\n"      /* the --show-config spelling */
				       "smaple_hz: 5\n"       /* a typo */
				       "top: 7\n"             /* analyze's key: not merge's business */
				       "format: html\n"       /* the report's format */
				       "frobnicate: 1\n"      /* nobody's key, nothing close */
				       "smaple_hz: 6\n"       /* the same typo again: warned once */
				       "merge:\n"
				       "  qiuet: true\n"      /* a typo in the section */
				       "  format: chrome\n");
	isc_config_new(&c, "iscope-merge", merge_like, 2);
	capture_begin();
	rc = isc_config_load_file(c, path);
	err = capture_end();
	ok(rc == 0, "unknown and other tools' keys are not an error");
	snprintf(want, sizeof(want),
		 "iscope-merge: %s:1: unknown key 'sample-hz' (ignored; did you mean 'sample_hz'?)\n"
		 "iscope-merge: %s:2: unknown key 'smaple_hz' (ignored; did you mean 'sample_hz'?)\n"
		 "iscope-merge: %s:5: unknown key 'frobnicate' (ignored)\n"
		 "iscope-merge: %s:8: unknown key 'qiuet' in section 'merge' (ignored; did you mean 'quiet'?)\n",
		 path, path, path, path);
	ok_str(err, want, "top-level and section typos warned once each, with file, line and a suggestion");
	ok_str(isc_config_get(c, "format"), "chrome", "merge's format from its section");
	snprintf(want, sizeof(want), "%s:9", path);
	ok_str(isc_config_source(c, "format"), want, "and the source names that line");
	isc_config_free(c);
	free(path);

	path = write_file("format.yaml", "format: html\n");
	isc_config_new(&c, "iscope-merge", merge_like, 2);
	capture_begin();
	rc = isc_config_load_file(c, path);
	err = capture_end();
	ok(rc == 0 && !*err, "top-level format: html is silently the report's, not merge's");
	ok_str(isc_config_get(c, "format"), "timeline", "merge keeps its default format");
	isc_config_free(c);
	isc_config_new(&c, "iscope-report", report_like, 1);
	capture_begin();
	rc = isc_config_load_file(c, path);
	err = capture_end();
	ok(rc == 0 && !*err, "the report reads it without a word");
	ok_str(isc_config_get(c, "format"), "html", "top-level format reaches the report");
	isc_config_free(c);
	free(path);
}

/* ---- environment ------------------------------------------------------- */
static void test_env(void)
{
	struct isc_config *c;
	char *bad[] = { "INFERSCOPE_T_ALPHA=fine", "INFERSCOPE_T_EPS=perhaps", NULL };
	char *prefix[] = { "INFERSCOPE_T_ALPHAX=no", "INFERSCOPE_T_ALPH=no", NULL };

	isc_config_new(&c, "iscope-unit", prec_opts, NPREC);
	isc_err_clear();
	ok(isc_config_load_env(c, bad) == -EINVAL, "bad flag value in env is -EINVAL");
	ok_str(isc_err_msg(), "invalid value 'perhaps' for --eps (from INFERSCOPE_T_EPS): expected true or false",
	       "bad env flag message");
	ok_str(isc_config_get(c, "alpha"), "d-alpha", "failed env load applies nothing");
	ok(isc_config_load_env(c, prefix) == 0 && !strcmp(isc_config_get(c, "alpha"), "d-alpha"),
	   "variables whose names only share a prefix are ignored");
	setenv("INFERSCOPE_T_GAMMA", "from-environ", 1);
	ok(isc_config_load_env(c, NULL) == 0, "NULL envp reads environ");
	ok_str(isc_config_get(c, "gamma"), "from-environ", "value from environ");
	unsetenv("INFERSCOPE_T_GAMMA");
	isc_config_free(c);
}

/* ---- typed getters ----------------------------------------------------- */

static void test_sizes(void)
{
	static const struct {
		const char *s;
		uint64_t v;
	} good[] = {
		{ "0", 0 },
		{ "512", 512 },
		{ "7B", 7 },
		{ "512k", 512ull << 10 },
		{ "512K", 512ull << 10 },
		{ "16kb", 16ull << 10 },
		{ "64M", 64ull << 20 },
		{ "100MB", 100ull << 20 },
		{ "1G", 1ull << 30 },
		{ "2GiB", 2ull << 30 },
		{ "3t", 3ull << 40 },
		{ "16777215T", 16777215ull << 40 },
		{ "18446744073709551615", UINT64_MAX },
	};
	static const struct {
		const char *s;
		int rc;
	} bad[] = {
		{ "", -EINVAL },	{ "M", -EINVAL },     { "-1", -EINVAL },   { "+1", -EINVAL },
		{ "1.5G", -EINVAL },	{ "64 M", -EINVAL },  { " 64M", -EINVAL }, { "64M ", -EINVAL },
		{ "64MX", -EINVAL },	{ "1Q", -EINVAL },    { "1ki", -EINVAL },  { "1bb", -EINVAL },
		{ "0x10", -EINVAL },	{ "1P", -EINVAL },    { "16777216T", -ERANGE },
		{ "18446744073709551616", -ERANGE },
	};
	struct isc_config *c;
	char *env[] = { "INFERSCOPE_TRACE_SIZE=12Q", "INFERSCOPE_SAMPLE_HZ=abc", NULL };
	char *path, want[512];
	uint64_t v;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		v = 1234;
		ok(isc_parse_size(good[i].s, &v) == 0 && v == good[i].v, "size '%s' = %llu", good[i].s,
		   (unsigned long long)good[i].v);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 1234;
		ok(isc_parse_size(bad[i].s, &v) == bad[i].rc && v == 1234, "size '%s' rejected (%s)", bad[i].s,
		   bad[i].rc == -ERANGE ? "range" : "syntax");
	}

	isc_config_new(&c, "iscope-record", typed_opts, 3);
	v = 0;
	ok(isc_config_get_size(c, "trace-size", &v) == 1 && v == 64ull << 20, "size getter on default");
	ok(isc_config_get_u64(c, "sample-hz", &v) == 1 && v == 99, "u64 getter on default");
	v = 7;
	ok(isc_config_get_u64(c, "limit", &v) == 0 && v == 7, "unset: 0 and out untouched");
	isc_err_clear();
	ok(isc_config_get_u64(c, "nope", &v) == -ENOENT, "unknown name: -ENOENT");
	ok_str(isc_err_msg(), "unknown option '--nope'", "unknown name message");

	char *env400[] = { "INFERSCOPE_TRACE_SIZE=400", NULL };
	isc_config_load_env(c, env400);
	ok(isc_config_get_size(c, "trace-size", &v) == 1 && v == 400ull << 20, "bare size from env: MiB");
	isc_config_load_env(c, env);
	isc_err_clear();
	ok(isc_config_get_size(c, "trace-size", &v) == -EINVAL, "bad size from env: -EINVAL");
	ok_str(isc_err_msg(), "invalid value '12Q' for --trace-size (from INFERSCOPE_TRACE_SIZE): expected a size "
			      "like 512k, 64M or 1G", "bad size message names the variable");
	isc_err_clear();
	ok(isc_config_get_u64(c, "sample-hz", &v) == -EINVAL, "bad number from env: -EINVAL");
	ok_str(isc_err_msg(), "invalid value 'abc' for --sample-hz (from INFERSCOPE_SAMPLE_HZ): expected a whole number",
	       "bad number message names the variable");
	isc_config_free(c);

	path = write_file("size.yaml", "trace_size: 400\n");
	isc_config_new(&c, "iscope-record", typed_opts, 3);
	isc_config_load_file(c, path);
	ok(isc_config_get_size(c, "trace-size", &v) == 1 && v == 400ull << 20, "bare size from the file: MiB");
	isc_config_free(c);
	free(path);

	path = write_file("typed.yaml", "record:\n  limit: 99999999999999999999\n  sample_hz: 1.5\n");
	isc_config_new(&c, "iscope-record", typed_opts, 3);
	isc_config_load_file(c, path);
	isc_err_clear();
	ok(isc_config_get_u64(c, "limit", &v) == -EINVAL, "overflowing number: -EINVAL");
	snprintf(want, sizeof(want), "invalid value '99999999999999999999' for --limit (from %s:2): too large", path);
	ok_str(isc_err_msg(), want, "file value message names file and line");
	isc_err_clear();
	isc_config_get_u64(c, "sample-hz", &v);
	snprintf(want, sizeof(want), "invalid value '1.5' for --sample-hz (from %s:3): expected a whole number", path);
	ok_str(isc_err_msg(), want, "fraction rejected by u64 getter");
	isc_config_set(c, "trace-size", "400");
	ok(isc_config_get_size(c, "trace-size", &v) == 1 && v == 400ull << 20, "bare size on the command line: MiB");
	isc_config_set(c, "trace-size", "7B");
	ok(isc_config_get_size(c, "trace-size", &v) == 1 && v == 7, "bytes only with a unit");
	isc_config_set(c, "trace-size", "1x");
	isc_err_clear();
	isc_config_get_size(c, "trace-size", &v);
	ok_str(isc_err_msg(), "invalid value '1x' for --trace-size (from command line): expected a size like 512k, "
			      "64M or 1G", "command-line value message");
	isc_config_free(c);
	free(path);
}

/*
 * The choice and number getters: a choice matches one of the list whole
 * (no prefix, no empty value); the message lists them "a, b or c"; a
 * number must lie strictly between its bounds.
 */
static const struct isc_opt choice_opts[] = {
	{ "mode", 0, ISC_OPT_VALUE, "MODE", NULL, "mode", "auto", "auto, exact or sample" },
	{ "ratio", 0, ISC_OPT_VALUE, "PCT", NULL, "ratio", NULL, "above 0, below 1000" },
};

static void test_choice_double(void)
{
	static const char *const modes[] = { "auto", "exact", "sample", NULL };
	struct isc_config *c;
	int idx;
	double d;
	isc_config_new(&c, "iscope-record", choice_opts, 2);
	int rc;
	idx = -1;
	rc = isc_config_get_choice(c, "mode", modes, &idx);
	ok(rc == 1 && idx == 0, "choice: the default 'auto' is choice 0 (%d, %d)", rc, idx);
	isc_config_set(c, "mode", "sample");
	rc = isc_config_get_choice(c, "mode", modes, &idx);
	ok(rc == 1 && idx == 2, "choice: 'sample' is choice 2 (%d, %d)", rc, idx);
	static const char *const refused[] = { "ex", "", "exactly", "Exact" };
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		isc_config_set(c, "mode", refused[i]);
		isc_err_clear();
		idx = -1;
		ok(isc_config_get_choice(c, "mode", modes, &idx) == -EINVAL && idx == -1, "choice: '%s' refused, index untouched",
		   refused[i]);
	}
	ok_str(isc_err_msg(), "invalid value 'Exact' for --mode (from command line): expected auto, exact or sample",
	       "choice: the message lists the choices");

	d = 7;
	ok(isc_config_get_double(c, "ratio", 0, 1000, &d) == 0 && d == 7, "number: unset is 0, out untouched");
	static const struct {
		const char *s;
		double v;
	} good[] = { { "5", 5 }, { "0.5", 0.5 }, { "999.5", 999.5 }, { "1e-3", 0.001 } };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		isc_config_set(c, "ratio", good[i].s);
		d = -1;
		rc = isc_config_get_double(c, "ratio", 0, 1000, &d);
		ok(rc == 1 && d == good[i].v, "number: '%s' is %g (got %d, %g)", good[i].s, good[i].v, rc, d);
	}
	/* the bounds themselves are outside: 0 % and 1000 % are refused */
	static const char *const bad[] = { "0", "1000", "-5", "1e9", "abc", "5x", "", "nan" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		isc_config_set(c, "ratio", bad[i]);
		isc_err_clear();
		d = 7;
		ok(isc_config_get_double(c, "ratio", 0, 1000, &d) == -EINVAL && d == 7, "number: '%s' refused", bad[i]);
	}
	ok_str(isc_err_msg(), "invalid value 'nan' for --ratio (from command line): expected a number above 0 and below 1000",
	       "number: the message states the bounds");
	isc_config_free(c);
}

/* ---- show-config ------------------------------------------------------- */
static void test_show(void)
{
	struct isc_config *c;
	char *env[] = { "INFERSCOPE_SAMPLE_HZ=20", NULL };
	char *path = write_file("show.yaml", "trace_size: 1G\nrecord:\n  limit: 5\n");
	char want[1024];

	isc_config_new(&c, "iscope-record", typed_opts, 3);
	ok_str(show(c), "sample-hz = 99  (default)\ntrace-size = 64M  (default)\nlimit = (unset)  (default)\n",
	       "show-config, defaults only");
	isc_config_load_file(c, path);
	isc_config_load_env(c, env);
	isc_config_set(c, "trace-size", "2G");
	snprintf(want, sizeof(want),
		 "sample-hz = 20  (environment INFERSCOPE_SAMPLE_HZ)\n"
		 "trace-size = 2G  (command line)\n"
		 "limit = 5  (%s:3)\n",
		 path);
	ok_str(show(c), want, "show-config, every kind of source, table order, no built-ins");
	ok(isc_config_set(c, "nope", "1") == -ENOENT, "set of an unknown name is -ENOENT");
	isc_config_free(c);
	free(path);
}

/* ---- option table checks ----------------------------------------------- */
static void test_table(void)
{
	static const struct isc_opt dup_name[] = {
		{ "x", 0, ISC_OPT_FLAG, NULL, NULL, NULL, NULL, "" },
		{ "x", 0, ISC_OPT_FLAG, NULL, NULL, NULL, NULL, "" },
	};
	static const struct isc_opt dup_short[] = {
		{ "x", 'o', ISC_OPT_FLAG, NULL, NULL, NULL, NULL, "" },
		{ "y", 'o', ISC_OPT_FLAG, NULL, NULL, NULL, NULL, "" },
	};
	static const struct isc_opt bad_def[] = {
		{ "x", 0, ISC_OPT_FLAG, NULL, NULL, NULL, "maybe", "" },
	};
	struct isc_config *c = (void *)1;
	ok(isc_config_new(&c, "t", dup_name, 2) == -EINVAL && !c, "duplicate option name rejected");
	ok(isc_config_new(&c, "t", dup_short, 2) == -EINVAL, "duplicate short option rejected");
	isc_err_clear();
	ok(isc_config_new(&c, "t", bad_def, 1) == -EINVAL, "bad flag default rejected");
	ok_str(isc_err_msg(), "option table: --x: default 'maybe' is not true or false", "bad default message");
	/* in a child: a crash there is a failure here, not the end of the run */
	pid_t pid = fork();
	int st = -1;
	if (pid == 0) {
		isc_config_free(NULL);
		_exit(0);
	}
	bool waited = pid > 0 && waitpid(pid, &st, 0) == pid;
	ok(waited && WIFEXITED(st) && WEXITSTATUS(st) == 0, "isc_config_free(NULL) is a no-op (child status %d)", st);
}

/* ---- isc_log ----------------------------------------------------------- */
static void test_log(void)
{
	char *err;
	isc_log_set_tool("iscope-unit");
	capture_begin();
	isc_log(ISC_LOG_ERROR, "bad %d", 1);
	isc_log(ISC_LOG_WARN, "careful");
	isc_log(ISC_LOG_INFO, "hidden info");
	isc_log(ISC_LOG_DEBUG, "hidden debug");
	err = capture_end();
	ok_str(err, "iscope-unit: bad 1\niscope-unit: careful\n", "default level warn: error and warn shown");
	ok(isc_log_set_level("DEBUG") == 0 && isc_log_enabled(ISC_LOG_DEBUG), "level names are case-insensitive");
	capture_begin();
	isc_log(ISC_LOG_DEBUG, "now shown");
	err = capture_end();
	ok_str(err, "iscope-unit: now shown\n", "debug shown at debug level");
	isc_err_clear();
	ok(isc_log_set_level("loud") == -EINVAL, "unknown level rejected");
	ok_str(isc_err_msg(), "invalid log level 'loud' (expected error, warn, info or debug)", "level message");
	ok(isc_log_set_level("error") == 0 && !isc_log_enabled(ISC_LOG_WARN), "error level hides warnings");
	isc_log_set_level("warning");
	ok(isc_log_enabled(ISC_LOG_WARN) && !isc_log_enabled(ISC_LOG_INFO), "'warning' is an alias of warn");
}

int main(void)
{
	char cmd[128];
	snprintf(dir, sizeof(dir), "/tmp/test_config.XXXXXX");
	if (!mkdtemp(dir))
		return 99;

	test_precedence();
	test_single_sources();
	test_default_path();
	test_file_errors();
	test_file_warnings();
	test_file_keys_across_tools();
	test_env();
	test_sizes();
	test_choice_double();
	test_show();
	test_table();
	test_log();

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		diag("could not remove %s", dir);
	return tap_done();
}
