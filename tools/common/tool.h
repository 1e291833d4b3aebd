/*
 * tool.h - what every tool's main() does first, shared by the four tools
 * (compiled into each; the library itself never writes to stdout).
 */
#ifndef ISC_TOOL_H
#define ISC_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "isc_config_api.h"

struct isc_tool {
	const char *name;            /* "iscope-merge" */
	const struct isc_opt *opts;
	size_t nopts;
	bool stop_at_operand;        /* iscope-record [OPTION]... COMMAND */
	const char *usage;           /* after the program name */
	const char *description;     /* --help text under the usage line */
};

/*
 * Builds the configuration (table defaults < ./.inferscope.yaml <
 * environment < command line), parses argv and handles --help, --version,
 * --show-config and --log-level.  Returns -1 when the tool goes on, with
 * *c set and *first the index of the first operand; otherwise the exit
 * status to return at once (0 after --help/--version/--show-config, 2 for
 * a usage error, 1 out of memory), messages printed and *c freed.
 */
int isc_tool_start(const struct isc_tool *t, int argc, char **argv, struct isc_config **c, int *first);

/* Prints the message and the --help hint for a usage error; returns 2. */
int isc_tool_usage_error(const struct isc_tool *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * An input operand: NULL or "-" is stdin (*name "stdin" for messages, else
 * arg).  The stream, or NULL after printing "NAME: error".  Close with
 * isc_tool_in_close, which leaves stdin open.
 */
FILE *isc_tool_in_open(const char *arg, const char **name);
void isc_tool_in_close(FILE *f);

/*
 * An output named by -o: opened before the long work so that a bad path
 * (missing directory, no permission) fails at once, but emptied only when
 * the result is written, so a run that fails keeps the previous file; a
 * file this run created is removed again when nothing was written.
 */
struct isc_tool_out {
	FILE *f;           /* stdout when path is NULL or "-" */
	const char *path;  /* borrowed; "stdout" for messages when NULL */
	bool created;      /* the file did not exist before */
	bool written;      /* isc_tool_out_begin was called */
};

/* Opens path (NULL or "-": stdout).  0, or 1 after printing "PATH: error". */
int isc_tool_out_open(struct isc_tool_out *o, const char *path);
/* Empties a regular file before the result is written; returns o->f. */
FILE *isc_tool_out_begin(struct isc_tool_out *o);
/* The name for messages: the path or "stdout". */
const char *isc_tool_out_name(const struct isc_tool_out *o);
/*
 * Flushes and closes (stdout is flushed only).  When ok is false, a file
 * this run created and never began writing is removed.  Returns 0, or 1
 * after printing "PATH: Failed to write: error" when ok was true and the
 * flush or close failed.
 */
int isc_tool_out_close(struct isc_tool_out *o, bool ok);

#endif
