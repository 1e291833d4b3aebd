/*
 * isc_config_api.h - one option table per tool drives command-line parsing,
 * --help, configuration precedence and --show-config (DESIGN.md §2).
 * Logging (isc_log) is in isc_log.h, included here for the tools.
 *
 * Precedence, highest first, whatever order the loads are called in:
 *
 *   command line  >  environment  >  ./.inferscope.yaml section  >
 *   ./.inferscope.yaml top level  >  default in the table
 *
 * Each value remembers the rank of the source that set it; a load only
 * replaces values of equal or lower rank.  A typical main():
 *
 *   isc_config_new(&c, "iscope-merge", opts, n);
 *   isc_config_load_file(c, NULL);          // ./.inferscope.yaml
 *   isc_config_load_env(c, NULL);           // environ
 *   first = isc_cli_parse(c, argc, argv, false);
 *   if (isc_config_flag(c, "help")) ...     // also "version", "show-config"
 *
 * Conventions as in isc.h: 0 or a negative errno, message via isc_err_push.
 * Not thread-safe: isc_cli_parse uses getopt_long's globals.
 */
#ifndef ISC_CONFIG_API_H
#define ISC_CONFIG_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "isc_log.h"

enum isc_opt_arg { ISC_OPT_FLAG, ISC_OPT_VALUE };

/*
 * One option.  The table and its strings are borrowed by the config and
 * must outlive it (a static const array in main.c is the intended use).
 * Flags take true/false/yes/no/on/off/1/0 in the environment and the file
 * and are stored as "true" / "false".
 */
struct isc_opt {
	const char *name;      /* long option, e.g. "sample-hz"; also the key */
	char short_name;       /* 'o' or 0 */
	enum isc_opt_arg arg;
	const char *metavar;   /* "N", "FILE"; NULL means "VALUE" */
	const char *env;       /* "INFERSCOPE_SAMPLE_HZ" or NULL (not configurable by env) */
	const char *yaml_key;  /* "sample_hz" in ./.inferscope.yaml, or NULL */
	const char *def;       /* default as text, NULL = unset */
	const char *help;      /* one line */
};

/* The log-level option every tool carries; pass its value to isc_log_set_level(). */
#define ISC_OPT_LOG_LEVEL                                                     \
	{ "log-level", 0, ISC_OPT_VALUE, "LEVEL", "INFERSCOPE_LOG_LEVEL",     \
	  "log_level", "warn", "error, warn, info or debug" }

struct isc_config;

/*
 * Makes a config for tool ("iscope-record"; its file section is the name
 * without the "iscope-" prefix) holding the defaults of opts[0..n) plus the
 * built-in flags help (-h unless taken), version and show-config.  Also
 * names the tool for isc_log().  -EINVAL for a bad table (duplicate name or
 * short option, bad flag default), -ENOMEM.
 */
int isc_config_new(struct isc_config **c, const char *tool, const struct isc_opt *opts, size_t n);

/*
 * Loads path (NULL: "./.inferscope.yaml") with libyaml.  The file is a
 * top-level mapping of keys (`sample_hz: 20`) and of sections named for a
 * tool (`record: {sample_hz: 20}`); a key in this tool's section beats the
 * same key at the top level; other tools' sections are skipped.  Missing
 * file = 0.  A top-level key that another tool reads is skipped (debug
 * log); `format` at the top level is the report's (merge reads its own
 * under `merge:` only).  Any other unknown key, at the top level or in this
 * tool's section, is warned about once with isc_log() ("FILE:LINE: unknown
 * key 'smaple_hz' (ignored; did you mean 'sample_hz'?)") and ignored, as
 * is an unknown section.
 * Malformed YAML, a non-mapping top level, a non-scalar value or a bad
 * flag value = -EINVAL with "FILE:LINE: ..." and nothing applied.
 */
int isc_config_load_file(struct isc_config *c, const char *path);

/*
 * Loads every option that names an environment variable from envp
 * ("NAME=value" strings, NULL-terminated) or from environ when envp is
 * NULL.  An empty variable counts as unset.  A bad flag value = -EINVAL
 * and nothing applied.
 */
int isc_config_load_env(struct isc_config *c, char **envp);

/*
 * getopt_long built from the table: --name=value, --name value, -o value,
 * -ovalue, unique abbreviations, `--` ends options.  Options and operands
 * may mix (argv is permuted) unless stop_at_nonoption, which stops at the
 * first operand (iscope-record [OPTION]... CMD [ARG]...); POSIXLY_CORRECT
 * in the environment also stops there, as in every GNU tool.  Returns the
 * index of the first operand in argv, or -EINVAL with "unrecognized option
 * '--x'", "option '--output' requires an argument", "option '--quiet'
 * doesn't allow an argument" or "option '--s' is ambiguous".
 */
int isc_cli_parse(struct isc_config *c, int argc, char **argv, bool stop_at_nonoption);

/*
 * Sets name as the command line does (flags take "true"/"false").  For
 * front-ends that translate their own arguments.  -ENOENT unknown name,
 * -EINVAL bad flag value, -ENOMEM.
 */
int isc_config_set(struct isc_config *c, const char *name, const char *value);

/* Effective value, NULL if unset or unknown name; valid until the value
 * changes or isc_config_free. */
const char *isc_config_get(const struct isc_config *c, const char *name);
bool isc_config_flag(const struct isc_config *c, const char *name);

/*
 * Typed getters: 1 and *out set, 0 when unset (*out untouched), -EINVAL with
 * "invalid value 'x' for --sample-hz (from INFERSCOPE_SAMPLE_HZ): <why>",
 * -ENOENT for a name not in the table.  u64 is plain decimal; sizes are
 * 512k, 64M, 100MB, 1G, 2GiB, 1T, 7B: powers of 1024, case-insensitive
 * unit with optional B / iB, no spaces, no fractions.  A bare number is
 * MiB, whichever source gave it (command line, environment or file), so
 * --trace-size=400 and INFERSCOPE_TRACE_SIZE_MB=400 mean the same.
 */
int isc_config_get_u64(const struct isc_config *c, const char *name, uint64_t *out);
int isc_config_get_size(const struct isc_config *c, const char *name, uint64_t *bytes);
/*
 * The value of name as one of choices (NULL-terminated): 1 with *idx its
 * index, 0 when unset, -EINVAL (message naming the value, the option, where
 * it came from, file:line for a file, and the choices) or -ENOENT.
 */
int isc_config_get_choice(const struct isc_config *c, const char *name, const char *const *choices, int *idx);
/* The value of name as a number with lo < v < hi: 1, 0 when unset, -EINVAL (message as above) or -ENOENT. */
int isc_config_get_double(const struct isc_config *c, const char *name, double lo, double hi, double *out);
/* The size syntax above without a message, a bare number in bytes: 0, -EINVAL or -ERANGE. */
int isc_parse_size(const char *s, uint64_t *bytes);

/* "default", "./.inferscope.yaml:3", "environment INFERSCOPE_X" or
 * "command line"; NULL for an unknown name.  Valid like isc_config_get. */
const char *isc_config_source(const struct isc_config *c, const char *name);

/*
 * --help text: "Usage: TOOL usage_line", the description, then an aligned
 * table of every option (built-ins last) with its environment variable,
 * file key and default, then the precedence rule.  usage_line excludes the
 * program name; description may be NULL.
 */
void isc_cli_help(const struct isc_config *c, FILE *out, const char *usage_line, const char *description);

/* --show-config: "name = value  (source)" per table option, table order;
 * an unset value shows as "(unset)". */
void isc_config_show(const struct isc_config *c, FILE *out);

/* The table the config uses: the caller's options then the built-ins;
 * valid until isc_config_free.  For isc_cli_parse / isc_cli_help. */
const struct isc_opt *isc_config_opts_borrow(const struct isc_config *c, size_t *n);
/* The tool name given to isc_config_new; valid until isc_config_free. */
const char *isc_config_tool_borrow(const struct isc_config *c);

void isc_config_free(struct isc_config *c);

#endif
