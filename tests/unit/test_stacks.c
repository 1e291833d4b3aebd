/*
 * test_stacks.c - the stack tree (lib/stacks/stacktree.c) and its writers:
 * folded stacks (folded.c) and speedscope's JSON (speedscope.c), on
 * stacks whose tree and counts are known by construction.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "stacks.h"
#include "tap.h"

#define PY(n, f, l) { n, f, l, 6 }
#define NAT(n, f) { n, f, 0, 1 }

static struct isc_stree *tree;
static FILE *mem;

static char *folded(bool threads)
{
	char *buf = NULL;
	size_t len = 0;
	mem = open_memstream(&buf, &len);
	int rc = isc_stree_write_folded(tree, mem, threads);
	fclose(mem);
	return rc ? (free(buf), NULL) : buf;
}

static char *speedscope(uint64_t period)
{
	char *buf = NULL;
	size_t len = 0;
	mem = open_memstream(&buf, &len);
	int rc = isc_stree_write_speedscope(tree, mem, "run \"x\"", period);
	fclose(mem);
	return rc ? (free(buf), NULL) : buf;
}

int main(void)
{
	ok(isc_stree_new(&tree) == 0, "tree");
	/* thread 7 of pid 100: 40 x sgemm under forward, 5 x relu under forward, 1 x main;
	 * thread 3 of pid 100 (a pool thread): 10 x sgemm under start_thread */
	struct isc_sframe a[] = { NAT("sgemm_kernel", "libopenblas.so"), PY("forward", "m.py", 12), PY("<module>", "run.py", 3) };
	struct isc_sframe b[] = { NAT("relu", "libtorch.so"), PY("forward", "m.py", 12), PY("<module>", "run.py", 3) };
	struct isc_sframe c[] = { NAT("main", "python3") };
	struct isc_sframe d[] = { NAT("sgemm_kernel", "libopenblas.so"), NAT("start_thread", "libc.so.6") };
	struct isc_sframe k[] = { { "clear_page_erms", "[kernel]", 0, 4 }, NAT("a;b", "x.so") };
	ok(isc_stree_add(tree, 100, 7, a, 3, 30) == 0, "add 30");
	ok(isc_stree_add(tree, 100, 7, b, 3, 5) == 0, "add 5");
	ok(isc_stree_add(tree, 100, 7, a, 3, 10) == 0, "add 10 more of the first");
	ok(isc_stree_add(tree, 100, 7, c, 1, 1) == 0, "add 1");
	ok(isc_stree_add(tree, 100, 3, d, 2, 10) == 0, "add 10 on another thread");
	ok(isc_stree_add(tree, 100, 3, k, 2, 2) == 0, "a kernel frame and a ';' in a name");
	ok(isc_stree_name_thread(tree, 100, 7, "MainThread") == 0, "name a thread");
	/* frames: sgemm, forward, <module>, relu, main, start_thread, clear_page, a;b = 8 shared */
	ok(isc_stree_nframes(tree) == 8, "8 distinct frames shared by both threads (%u)", isc_stree_nframes(tree));
	ok(isc_stree_nthreads(tree) == 2, "2 threads");
	/* totals: thread 7's root 46; <module> 45; forward 45; sgemm under it 40 */
	const struct isc_sthread *t7 = isc_stree_thread(tree, 0);
	ok(t7->tid == 7 && isc_stree_node(tree, t7->root)->total == 46, "thread 7: 46 samples");
	uint64_t self_sum = 0;
	for (uint32_t i = 0; i < isc_stree_nnodes(tree); i++)
		self_sum += isc_stree_node(tree, i)->self;
	ok(self_sum == 58, "self counts add up to the samples added (%llu)", (unsigned long long)self_sum);

	char *f = folded(true);
	const char *want =
		"100/3;a:b;clear_page_erms_[k] 2\n"
		"100/3;start_thread;sgemm_kernel 10\n"
		"MainThread;<module> (run.py:3);forward (m.py:12);relu 5\n"
		"MainThread;<module> (run.py:3);forward (m.py:12);sgemm_kernel 40\n"
		"MainThread;main 1\n";
	if (!ok(f && !strcmp(f, want), "folded stacks, threads first, sorted"))
		for (char *l = f ? strtok(f, "\n") : NULL; l; l = strtok(NULL, "\n"))
			printf("# got: %s\n", l);
	free(f);
	f = folded(false);
	ok(f && !strncmp(f, "a:b;clear_page_erms_[k] 2\nstart_thread;sgemm_kernel 10\n<module> (run.py:3)", 71),
	   "without thread labels the lines start at the root");
	free(f);

	char *s = speedscope(1000000);
	cJSON *j = s ? cJSON_Parse(s) : NULL;
	ok(j != NULL, "speedscope output is JSON");
	cJSON *schema = cJSON_GetObjectItem(j, "$schema"), *frames = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "shared"), "frames");
	cJSON *profiles = cJSON_GetObjectItem(j, "profiles");
	ok(cJSON_IsString(schema) && !strcmp(schema->valuestring, "https://www.speedscope.app/file-format-schema.json"),
	   "$schema is speedscope's");
	ok(cJSON_GetArraySize(frames) == 8, "8 shared frames");
	ok(cJSON_GetArraySize(profiles) == 2, "one profile per thread");
	cJSON *p1 = cJSON_GetArrayItem(profiles, 1);
	ok(!strcmp(cJSON_GetObjectItem(p1, "name")->valuestring, "MainThread") &&
		   !strcmp(cJSON_GetObjectItem(p1, "type")->valuestring, "sampled") &&
		   !strcmp(cJSON_GetObjectItem(p1, "unit")->valuestring, "nanoseconds"), "profile 2: MainThread, sampled, ns");
	cJSON *samples = cJSON_GetObjectItem(p1, "samples"), *weights = cJSON_GetObjectItem(p1, "weights");
	ok(cJSON_GetArraySize(samples) == 3 && cJSON_GetArraySize(weights) == 3, "3 distinct stacks, 3 weights");
	double sum = 0;
	for (int i = 0; i < cJSON_GetArraySize(weights); i++)
		sum += cJSON_GetArrayItem(weights, i)->valuedouble;
	ok(sum == 46e6 && cJSON_GetObjectItem(p1, "endValue")->valuedouble == 46e6, "weights: 46 samples x 1 ms = endValue");
	/* the 40-sample stack: <module> -> forward -> sgemm_kernel, by frame name */
	bool found = false;
	for (int i = 0; i < cJSON_GetArraySize(samples); i++) {
		cJSON *st = cJSON_GetArrayItem(samples, i);
		if (cJSON_GetArraySize(st) != 3 || cJSON_GetArrayItem(weights, i)->valuedouble != 40e6)
			continue;
		const char *n0 = cJSON_GetObjectItem(cJSON_GetArrayItem(frames, cJSON_GetArrayItem(st, 0)->valueint), "name")->valuestring;
		const char *n2 = cJSON_GetObjectItem(cJSON_GetArrayItem(frames, cJSON_GetArrayItem(st, 2)->valueint), "name")->valuestring;
		cJSON *f0 = cJSON_GetArrayItem(frames, cJSON_GetArrayItem(st, 0)->valueint);
		found = !strcmp(n0, "<module>") && !strcmp(n2, "sgemm_kernel") &&
			!strcmp(cJSON_GetObjectItem(f0, "file")->valuestring, "run.py") &&
			cJSON_GetObjectItem(f0, "line")->valueint == 3;
	}
	ok(found, "the 40-sample stack is <module> (run.py:3) > forward > sgemm_kernel, root first");
	ok(!strcmp(cJSON_GetObjectItem(j, "name")->valuestring, "run \"x\""), "the group's name, quotes escaped");
	cJSON_Delete(j);
	free(s);
	/* a name that is not UTF-8 still gives valid JSON */
	struct isc_sframe bad[] = { NAT("f\xff\xc3(\x01", "lib") };
	isc_stree_add(tree, 1, 1, bad, 1, 1);
	isc_stree_name_thread(tree, 1, 1, "t\x01\xe2\x82\xac");
	s = speedscope(0);
	j = s ? cJSON_Parse(s) : NULL;
	ok(j && strstr(s, "\"f\\ufffd\\ufffd( \""), "invalid UTF-8 replaced, a control byte a space in a frame name");
	ok(j && strstr(s, "\"t\\u0001\xe2\x82\xac\""), "a thread name: control byte escaped, valid UTF-8 kept");
	ok(j && !strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "profiles"), 0), "unit")->valuestring, "none"),
	   "no period: unit none");
	cJSON_Delete(j);
	free(s);
	/* add_at: the node the stack ends at, its frames the parents; intern: the same index for the same frame */
	uint32_t leaf, idx, idx2;
	ok(isc_stree_add_at(tree, 100, 7, a, 3, 1, &leaf) == 0, "add_at");
	const struct isc_snode *ln = isc_stree_node(tree, leaf);
	ok(!strcmp(isc_stree_frame(tree, ln->frame)->name, "sgemm_kernel") && ln->total == 41 &&
		   !strcmp(isc_stree_frame(tree, isc_stree_node(tree, ln->parent)->frame)->name, "forward"),
	   "the leaf is sgemm_kernel (41 through it now) under forward");
	struct isc_sframe op = { "aten::mm", NULL, 0, 7 }, op2 = { "aten::mm", NULL, 0, 1 };
	uint32_t nf = isc_stree_nframes(tree);
	ok(isc_stree_intern(tree, &op, &idx) == 0 && idx == nf && isc_stree_intern(tree, &op, &idx2) == 0 && idx2 == idx,
	   "an op frame interned once, nothing counted");
	ok(isc_stree_intern(tree, &op2, &idx2) == 0 && idx2 != idx, "the same name of another kind is another frame");
	isc_stree_free(tree);
	return tap_done();
}
