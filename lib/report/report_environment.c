/*
 * report_environment.c - the report's last section, "## Environment": the
 * host, the command, CPUs, sample rate, and the analyzer with the findings
 * schema it wrote.
 */
#include "report.h"

void isc_rep_sec_environment(struct isc_rep *m, const cJSON *root)
{
	char b[4][64];
	isc_rep_put(m, "\n## Environment\n\n| | |\n|---|---|\n| Host | ");
	isc_rep_md(m, isc_doc_str(root, "environment.host", "n/a"));
	isc_rep_put(m, " |\n| Command | ");
	isc_rep_md(m, isc_doc_str(root, "environment.cmdline", "n/a"));
	isc_rep_putf(m, " |\n| CPUs | %s |\n| Sample rate | %s Hz |\n",
		     isc_rep_field(b[0], 64, root, "environment.ncpu", 'i'),
	     isc_rep_field(b[1], 64, root, "environment.sample_hz", 'i'));
	isc_rep_put(m, "| Analyzer | ");
	isc_rep_md(m, isc_doc_str(root, "tool.name", "n/a"));
	isc_rep_put(m, " ");
	isc_rep_md(m, isc_doc_str(root, "tool.version", ""));
	isc_rep_putf(m, " (findings schema %s) |\n", isc_rep_field(b[2], 64, root, "schema_version", 'i'));
}
