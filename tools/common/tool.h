/*
 * tool.h - what every tool's main() does first, shared by the four tools
 * (compiled into each; the library itself never writes to stdout).
 */
#ifndef ISC_TOOL_H
#define ISC_TOOL_H

#include <stdbool.h>
#include <stddef.h>

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

#endif
