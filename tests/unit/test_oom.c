/*
 * test_oom.c - analyze_oom.c: what a process held at its end
 * (isc_oom_mem_at, and oom.memory_at_end through isc_oom_emit): the
 * highest RSS reading of the 2 s ending at the last reading at or before
 * the end, with the latest smaps_rollup record at or before it; the OOM
 * killer's site from the allocation sites at the death, and without them
 * (TAP).
 */
#include <string.h>

#include "analyze_oom.h"
#include "isc_format.h" /* ISC_WARN_OOM_KILL */
#include "isc_trace_int.h" /* struct isc_exception */
#include "tap.h"

#define S 1000000000ull
#define MIB 1048576ull

static double num(const cJSON *o, const char *a, const char *b)
{
	const cJSON *x = cJSON_GetObjectItem(cJSON_GetObjectItem(o, a), b);
	return cJSON_IsNumber(x) ? x->valuedouble : -1;
}

static const char *str(const cJSON *o, const char *a, const char *b)
{
	const cJSON *x = b ? cJSON_GetObjectItem(cJSON_GetObjectItem(o, a), b) : cJSON_GetObjectItem(o, a);
	return cJSON_IsString(x) ? x->valuestring : cJSON_IsNull(x) ? "null" : "?";
}

/*
 * The OOM killer kills pid 5 at 10 s; its RSS samples name no function.
 * sites: what the site model found at the death (NULL or not sampled:
 * none).  The document's oom object, owned by *root.
 */
static const cJSON *kill_with(cJSON **root, const struct isc_oom_sites *sites)
{
	struct isc_oom *o;
	struct isc_jb jb = { 0 };
	static const char msg[] = "killed by the kernel's OOM killer";
	*root = cJSON_CreateObject();
	if (isc_oom_new(&o))
		return NULL;
	isc_oom_rss(o, 8 * S, 5, 100 * MIB, 0);
	isc_oom_rss(o, 9 * S, 5, 300 * MIB, 0);
	isc_oom_warning(o, 10 * S, 5, ISC_WARN_OOM_KILL, (const uint8_t *)msg, strlen(msg));
	uint32_t pid = 0;
	uint64_t ts = 0;
	bool dead = isc_oom_host_death(o, &pid, &ts);
	int rc = isc_oom_emit(o, &jb, *root, 0, 137, NULL, sites, NULL, NULL, NULL);
	isc_oom_free(o);
	return dead && pid == 5 && ts == 10 * S && !rc ? cJSON_GetObjectItem(*root, "oom") : NULL;
}

static void test_kill_site(void)
{
	struct isc_oom_sites s = { .sampled = true, .window_ns = 2 * S, .n = 2,
				   .top = { { "hoard", "h.py", 13, 150.0 * MIB, 0, 20.0 * MIB, true },
					    { "load", "h.py", 4, 900.0 * MIB, 1000, 0, false } } };
	cJSON *root;
	const cJSON *oom = kill_with(&root, &s), *top;
	ok(oom != NULL, "a kill of pid 5 at 10 s");
	ok(!strcmp(str(oom, "site", "name"), "hoard") && num(oom, "site", "line") == 13, "site: the first site given");
	ok(!strcmp(str(oom, "site_source", NULL), "live_bytes"), "site_source live_bytes");
	ok(num(oom, "site", "live_bytes") == 150.0 * MIB && cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(oom, "site"), "growing")),
	   "with its live bytes, growing");
	ok(!strcmp(str(oom, "growth_before", "source"), "allocation_samples"), "growth_before from the samples");
	top = cJSON_GetObjectItem(cJSON_GetObjectItem(oom, "growth_before"), "top");
	ok(cJSON_GetArraySize(top) == 2, "both sites listed");
	ok(cJSON_GetObjectItem(cJSON_GetArrayItem(top, 1), "live_bytes")->valuedouble == 900.0 * MIB &&
		   cJSON_GetObjectItem(cJSON_GetArrayItem(top, 0), "bytes")->valuedouble == 20.0 * MIB,
	   "live bytes and growth of each");
	ok(num(oom, "growth_before", "rss_increase_bytes") == (double)(200 * MIB), "the RSS increase still from the samples");
	cJSON_Delete(root);

	s.sampled = false; /* no allocation sampled: no site from them; the RSS samples name no function */
	oom = kill_with(&root, &s);
	ok(oom && !strcmp(str(oom, "site", NULL), "null") && !strcmp(str(oom, "site_source", NULL), "unknown"),
	   "not sampled: site null, unknown");
	ok(!strcmp(str(oom, "growth_before", "source"), "rss_samples"), "growth_before from RSS samples");
	cJSON_Delete(root);
	oom = kill_with(&root, NULL);
	ok(oom && !strcmp(str(oom, "site_source", NULL), "unknown"), "no sites at all: unknown");
	cJSON_Delete(root);
}

/* isc_oom_exception_gpu of (type, message) */
static int64_t gpu_of(const char *type, const char *msg)
{
	struct isc_exception x = { (const uint8_t *)type, (const uint8_t *)"w.py", (const uint8_t *)"f",
				   (const uint8_t *)msg, strlen(type), 4, 1, strlen(msg) };
	return isc_oom_exception_gpu(&x);
}

/* A CUDA out-of-memory error's device, from torch's two wordings of its message. */
static void test_exception_gpu(void)
{
	ok(gpu_of("torch.OutOfMemoryError", "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total "
					    "capacity of 79.19 GiB of which 1.10 GiB is free.") == 3,
	   "torch 2.x wording: GPU 3");
	ok(gpu_of("RuntimeError", "CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.90 GiB total capacity; "
				  "GPU 7 is another)") == 0,
	   "torch 1.x wording, a RuntimeError: the first GPU N, 0");
	ok(gpu_of("torch.cuda.OutOfMemoryError", "GPU out of memory; GPU 12") == 12, "GPU 12: two digits, after a GPU without one");
	ok(gpu_of("torch.cuda.OutOfMemoryError", "") == -1, "a CUDA OOM type naming no device: -1");
	ok(gpu_of("MemoryError", "GPU 0") == -2 && gpu_of("KeyError", "'x'") == -2, "not a CUDA OOM: -2");
}

int main(void)
{
	struct isc_oom *o;
	struct isc_oom_mem m;
	if (!ok(isc_oom_new(&o) == 0, "new"))
		return tap_done();
	/*
	 * pid 7, by hand:            RSS sample   smaps (rss, anon)
	 *   t = 1 s                  100 MiB
	 *   t = 2 s                  900 MiB      900, 850
	 *   t = 6 s                  500 MiB      500, 450
	 *   t = 7 s                  800 MiB      (no smaps record)
	 *   t = 8 s                   50 MiB       50,  10  (the interpreter freed it on its way out)
	 */
	isc_oom_rss(o, 1 * S, 7, 100 * MIB, 0);
	isc_oom_rss(o, 2 * S, 7, 900 * MIB, 0);
	isc_oom_smaps(o, 2 * S, 7, 900 * MIB, 880 * MIB, 0, 850 * MIB);
	isc_oom_rss(o, 6 * S, 7, 500 * MIB, 0);
	isc_oom_smaps(o, 6 * S, 7, 500 * MIB, 490 * MIB, 1 * MIB, 450 * MIB);
	isc_oom_rss(o, 7 * S, 7, 800 * MIB, 0);
	isc_oom_rss(o, 8 * S, 7, 50 * MIB, 0);
	isc_oom_smaps(o, 8 * S, 7, 50 * MIB, 40 * MIB, 0, 10 * MIB);

	/* the end of all: window [6 s, 8 s]; the 900 MiB of t = 2 s lies before it */
	ok(isc_oom_mem_at(o, 7, 0, &m) == 1, "pid 7 has readings");
	ok(m.have_rss && m.rss == 800 * MIB, "highest RSS of the last 2 s: 800 MiB (got %llu)", (unsigned long long)m.rss);
	ok(m.ts == 7 * S, "taken at 7 s");
	ok(m.have_smaps && m.anon == 450 * MIB && m.s_rss == 500 * MIB && m.pss == 490 * MIB && m.swap == 1 * MIB,
	   "composition: the smaps_rollup record of 6 s, the latest at or before 7 s (anon %llu)",
	   (unsigned long long)m.anon);

	/* an end at 3 s: window [0 s, 2 s] (the last reading at or before 3 s is 2 s) */
	isc_oom_mem_at(o, 7, 3 * S, &m);
	ok(m.rss == 900 * MIB && m.ts == 2 * S && m.anon == 850 * MIB, "end 3 s: 900 MiB at 2 s, anon 850 MiB");

	/* an end at 1.5 s: only the 100 MiB sample; no smaps record at or before it nor up to it */
	isc_oom_mem_at(o, 7, 3 * S / 2, &m);
	ok(m.have_rss && m.rss == 100 * MIB, "end 1.5 s: 100 MiB");
	ok(!m.have_smaps, "end 1.5 s: no composition (the first smaps record comes later)");

	/* a smaps record only after the peak sample: the first after it (pid 8) */
	isc_oom_rss(o, 10 * S, 8, 300 * MIB, 0);
	isc_oom_smaps(o, 10 * S + 1000, 8, 290 * MIB, 280 * MIB, 0, 200 * MIB);
	isc_oom_mem_at(o, 8, 0, &m);
	ok(m.rss == 300 * MIB && m.have_smaps && m.anon == 200 * MIB, "pid 8: the smaps record just after its peak");

	/* equal peaks: the later one */
	isc_oom_rss(o, 20 * S, 9, 64 * MIB, 0);
	isc_oom_rss(o, 21 * S, 9, 64 * MIB, 0);
	isc_oom_mem_at(o, 9, 0, &m);
	ok(m.ts == 21 * S, "pid 9: of two equal peaks, the later");

	ok(isc_oom_mem_at(o, 99, 0, &m) == 0 && !m.have_rss && !m.have_smaps, "unknown pid: nothing");

	/* through the findings: an unhandled MemoryError of pid 7 at 7.5 s */
	static const char type[] = "MemoryError", file[] = "w.py", fn[] = "grow", msg[] = "";
	struct isc_exception x = { (const uint8_t *)type, (const uint8_t *)file, (const uint8_t *)fn,
				   (const uint8_t *)msg, strlen(type), strlen(file), strlen(fn), 0 };
	ok(isc_oom_exception(o, 7 * S + S / 2, 7, &x, 19) == 0, "exception");
	cJSON *root = cJSON_CreateObject();
	struct isc_jb jb = { 0 };
	ok(isc_oom_emit(o, &jb, root, 0, 1, NULL, NULL, NULL, NULL, NULL) == 0, "emit");
	const cJSON *oom = cJSON_GetObjectItem(root, "oom");
	ok(num(oom, "memory_at_end", "rss_bytes") == (double)(800 * MIB), "memory_at_end.rss_bytes 800 MiB");
	ok(num(oom, "memory_at_end", "anon_bytes") == (double)(450 * MIB), "memory_at_end.anon_bytes 450 MiB");
	ok(num(oom, "memory_at_end", "file_bytes") == (double)(50 * MIB), "memory_at_end.file_bytes 500 - 450 MiB");
	ok(num(oom, "memory_at_end", "swap_bytes") == (double)(1 * MIB), "memory_at_end.swap_bytes 1 MiB");
	cJSON_Delete(root);
	isc_oom_free(o);
	test_kill_site();
	test_exception_gpu();
	return tap_done();
}
