/*
 * isc_findings.h - the findings document (formats/findings.schema.json):
 * its schema version, its one family of readers, the verdict classes, the
 * names it gives things (which C calls are torch ops) and the escaping of
 * the workload's text in Markdown.  lib/findings/ implements it.
 *
 * Who reads and who writes: the analysis pass (lib/analyze) writes the
 * measured sections and never reads them back; the rules (lib/rules), the
 * comparison and history (lib/compare) and the report (lib/report) read a
 * document only through the readers below.  A document may come from a
 * file a user edited, an older schema, or a fuzzer: every reader tolerates
 * a missing member, a wrong type and a NULL object.
 */
#ifndef ISC_FINDINGS_H
#define ISC_FINDINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "isc.h" /* struct isc_buf */

/* Version of the findings document layout (formats/findings.schema.json). */
#define ISC_FINDINGS_SCHEMA_VERSION 2

/*
 * The CPU classes judge the time inside iterations (cpu.in_iterations)
 * when the iterations hold at least this share of the traced time from the
 * first iteration on (in_iterations.share_pct), the GPU classes the GPU
 * inside them (gpu.in_iterations) when they hold this share of the GPU
 * work launched from the first on; iscope-analyze(1), Verdict.
 */
#define ISC_ITER_SHARE_MIN_PCT 50

/*
 * A launch call longer than this (ns) is an outlier: the analysis counts
 * them in gpu.launch.launch_call_over_50us, and the rules count at most
 * this much host time per launch (start-up calls can take seconds).
 */
#define ISC_LAUNCH_CALL_LONG_NS 50000

/* 0 when doc looks like a findings document (schema_version, tool.name), else -EINVAL with a message. */
int isc_findings_check(const cJSON *doc);
/*
 * Reads all of f (at most 1 GiB), parses it and checks it is findings
 * (isc_findings_check); *doc is the caller's (cJSON_Delete).  0, or a
 * negative errno with *doc NULL and a message pushed: "Failed to read:
 * ...", "not valid JSON (findings expected)", or the check's.
 */
int isc_findings_read(FILE *f, cJSON **doc);

/* ---- readers (findings_read.c) ------------------------------------------ */
/*
 * A path is dotted member names from o ("cpu.split.python_pct"); arrays are
 * not indexed by paths.  o may be NULL (then nothing is found).
 */
/* Item at path; NULL when any step is missing or not an object. */
const cJSON *isc_doc_get(const cJSON *o, const char *path);
/* A finite number at path into *v; false (and *v untouched) otherwise. */
bool isc_doc_have(const cJSON *o, const char *path, double *v);
/* The finite number at path, else def. */
double isc_doc_num(const cJSON *o, const char *path, double def);
/* The string at path (borrowed from o), else def. */
const char *isc_doc_str(const cJSON *o, const char *path, const char *def);
/* The array at path, else NULL (cJSON_ArrayForEach over NULL does nothing). */
const cJSON *isc_doc_arr(const cJSON *o, const char *path);
/*
 * Where an object with "file" and "line" members points: *file (borrowed;
 * "" when unknown) and *line (0 when unknown or not positive).  Returns
 * false when the file is unknown.
 */
bool isc_doc_loc(const cJSON *o, const char **file, double *line);
/*
 * "name (file:line)" / "name (file)" / "name" of an object with those
 * members ("?" for a missing name), plain text, cut to cap.
 */
void isc_doc_where(char *buf, size_t cap, const cJSON *o);

/* ---- the model (findings_model.c) ---------------------------------------- */
/* Is verdict class cls (may be NULL) one of the GPU classes, whose share is of the GPU span? */
bool isc_verdict_class_is_gpu(const char *cls);
/*
 * Is cls one of a distributed job's classes (straggler,
 * communication_bound), whose share is of the job's iterations or of its
 * ranks' windows, and which is chosen before a rank's own classes?
 */
bool isc_verdict_class_is_job(const char *cls);
/*
 * A C callable is a torch op when its module (the CFUNC string's file) is
 * torch or under it, or a package named torch... (torchvision, torchaudio,
 * torch_xla); or, without a module, when its name has "::" (the Kineto
 * import's aten::linear, c10d::allreduce_, torchvision::nms).
 */
bool isc_is_torch_op(const char *name, const char *module);

/*
 * Is a marks[] entry one of the Python agent's own (python.hexversion,
 * torch.version, torch.num_threads, torch.num_interop_threads: facts of the
 * environment, which the comparison reads) rather than a user's mark()?
 */
bool isc_mark_is_agent(const char *name);

/* ---- Markdown (markdown.c) ------------------------------------------------ */
/*
 * Appends s to b escaped for Markdown text: ASCII punctuation that CommonMark
 * or GFM could read as markup is backslash-escaped (including '|', so the
 * result is safe inside a table cell), control characters are dropped.
 * Returns 0 or -ENOMEM.
 */
int isc_md_escape(struct isc_buf *b, const char *s);

#endif
