/*
 * findings_model.c - what a findings document is (isc_findings.h): the
 * check that a parsed JSON is one, the verdict classes, and the names the
 * document gives C calls.
 */
#include <errno.h>
#include <string.h>

#include "isc_findings.h"

int isc_findings_check(const cJSON *doc)
{
	const char *tool = isc_doc_str(doc, "tool.name", NULL);
	double v;
	if (!cJSON_IsObject(doc) || !isc_doc_have(doc, "schema_version", &v) || !tool ||
	    strcmp(tool, "iscope-analyze")) {
		isc_err_push("not a findings document (no schema_version and tool.name \"iscope-analyze\")");
		return -EINVAL;
	}
	return 0;
}

bool isc_verdict_class_is_gpu(const char *cls)
{
	static const char *const gpu[] = { "gpu_compute_bound", "launch_bound", "cpu_bound", "transfer_bound",
					   "sync_bound", "thermal_throttled" };
	for (size_t i = 0; cls && i < sizeof(gpu) / sizeof(gpu[0]); i++)
		if (!strcmp(cls, gpu[i]))
			return true;
	return false;
}

bool isc_verdict_class_is_job(const char *cls)
{
	return cls && (!strcmp(cls, "straggler") || !strcmp(cls, "communication_bound"));
}

bool isc_is_torch_op(const char *name, const char *module)
{
	if (!module || !*module)
		return name && strstr(name, "::");
	return !strncmp(module, "torch", 5);
}

bool isc_mark_is_agent(const char *name)
{
	static const char *const agent[] = { "python.hexversion", "torch.version", "torch.num_threads",
					     "torch.num_interop_threads" };
	for (size_t i = 0; name && i < sizeof(agent) / sizeof(agent[0]); i++)
		if (!strcmp(name, agent[i]))
			return true;
	return name && !strncmp(name, "dist.", 5); /* the ranks and the collectives' details (formats/trace.md) */
}
