/*
 * fake_nvml.c - test double of NVML (libnvidia-ml.so.1) for tests/gpu:
 * one GPU, "Fake GPU 0", whose readings are fixed numbers the tests look
 * for (utilization 42 %, 12 GiB of 40 GiB used, 1410/1215 MHz, 250 W,
 * 65 C, throttle reason 0x4, PCIe gen 4 x16, 1000/2000 KB/s).
 *
 * Scenarios (tests/verdict) change the readings through the environment,
 * as comma-separated key=value lists of util, mem_used_mib, sm_mhz,
 * temp_c, power_mw and reasons (the clocks-event bitmask, 0x-hex allowed):
 *   FAKE_NVML="util=97,reasons=0"       readings from the start
 *   FAKE_NVML_LATER="after_ms=300,sm_mhz=1005,temp_c=92,reasons=0x60"
 *                                       readings from after_ms ms after
 *                                       nvmlInit_v2 on (a GPU that heats
 *                                       up and throttles during the run)
 *   FAKE_NVML_LATER_FILE=PATH           instead of after_ms: the later
 *                                       readings from the second sample
 *                                       that finds PATH on (the first one
 *                                       still reads the earlier values), so
 *                                       a workload that creates PATH after
 *                                       its last kernel has ended gets one
 *                                       sample of the earlier readings
 *                                       whose interval holds no later
 *                                       change, whatever its start-up took
 * A key not given keeps its value from before.  A sample starts with
 * nvmlDeviceGetUtilizationRates (lib/record/nvml.c reads it first).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

struct util { unsigned gpu, memory; };
struct mem { unsigned long long total, free, used; };
static int device; /* the handle points here */

struct readings {
	unsigned long long util, mem_used_mib, sm_mhz, temp_c, power_mw, reasons, after_ms;
};
static struct readings now_r = { 42, 12 << 10, 1410, 65, 250000, 0x4, 0 }, later_r;
static int have_later;
static struct timespec t_init;
static const char *later_file; /* FAKE_NVML_LATER_FILE */
static int file_seen, file_later; /* PATH found by a sample; later readings */

/* Applies "key=value,..." from the environment variable var to r;
 * returns 1 when the variable is set. */
static int parse(const char *var, struct readings *r)
{
	static const struct { const char *key; size_t off; } keys[] = {
		{ "util", offsetof(struct readings, util) },
		{ "mem_used_mib", offsetof(struct readings, mem_used_mib) },
		{ "sm_mhz", offsetof(struct readings, sm_mhz) },
		{ "temp_c", offsetof(struct readings, temp_c) },
		{ "power_mw", offsetof(struct readings, power_mw) },
		{ "reasons", offsetof(struct readings, reasons) },
		{ "after_ms", offsetof(struct readings, after_ms) },
	};
	const char *s = getenv(var);
	if (!s)
		return 0;
	while (*s) {
		size_t klen = strcspn(s, "=,");
		int known = 0;
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if (strlen(keys[i].key) == klen && !strncmp(s, keys[i].key, klen) && s[klen] == '=') {
				*(unsigned long long *)((char *)r + keys[i].off) = strtoull(s + klen + 1, NULL, 0);
				known = 1;
			}
		if (!known)
			fprintf(stderr, "fake-nvml: %s: unknown setting %.*s\n", var, (int)klen, s);
		s += strcspn(s, ",");
		if (*s == ',')
			s++;
	}
	return 1;
}

/* The readings in force now. */
static const struct readings *cur(void)
{
	struct timespec ts;
	if (!have_later)
		return &now_r;
	if (later_file)
		return file_later ? &later_r : &now_r;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	long long ms = (ts.tv_sec - t_init.tv_sec) * 1000LL + (ts.tv_nsec - t_init.tv_nsec) / 1000000;
	return ms >= (long long)later_r.after_ms ? &later_r : &now_r;
}

EXPORT int nvmlInit_v2(void)
{
	parse("FAKE_NVML", &now_r);
	later_r = now_r;
	have_later = parse("FAKE_NVML_LATER", &later_r);
	later_file = getenv("FAKE_NVML_LATER_FILE");
	if (later_file && !*later_file)
		later_file = NULL;
	clock_gettime(CLOCK_MONOTONIC, &t_init);
	return 0;
}

EXPORT int nvmlShutdown(void) { return 0; }
EXPORT const char *nvmlErrorString(int rc) { return rc ? "Fake NVML error" : "Success"; }
EXPORT int nvmlDeviceGetCount_v2(unsigned *n) { *n = 1; return 0; }
EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **d) { *d = &device; return i == 0 ? 0 : 2; }
EXPORT int nvmlDeviceGetName(void *d, char *name, unsigned len) { (void)d; snprintf(name, len, "Fake GPU 0"); return 0; }
EXPORT int nvmlDeviceGetUUID(void *d, char *uuid, unsigned len)
{
	(void)d;
	snprintf(uuid, len, "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f");
	return 0;
}
EXPORT int nvmlDeviceGetUtilizationRates(void *d, struct util *u)
{
	(void)d;
	if (later_file && !file_later) { /* a new sample: the state it reads */
		file_later = file_seen;
		file_seen = access(later_file, F_OK) == 0;
	}
	u->gpu = (unsigned)cur()->util;
	u->memory = 17;
	return 0;
}
EXPORT int nvmlDeviceGetMemoryInfo(void *d, struct mem *m)
{
	(void)d;
	m->total = 40ull << 30;
	m->used = cur()->mem_used_mib << 20;
	m->free = m->total > m->used ? m->total - m->used : 0;
	return 0;
}
EXPORT int nvmlDeviceGetClockInfo(void *d, int type, unsigned *mhz)
{
	(void)d;
	*mhz = type == 1 ? (unsigned)cur()->sm_mhz : 1215; /* NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 */
	return 0;
}
EXPORT int nvmlDeviceGetPowerUsage(void *d, unsigned *mw) { (void)d; *mw = (unsigned)cur()->power_mw; return 0; }
EXPORT int nvmlDeviceGetTemperature(void *d, int s, unsigned *c) { (void)d; (void)s; *c = (unsigned)cur()->temp_c; return 0; }
EXPORT int nvmlDeviceGetCurrentClocksEventReasons(void *d, unsigned long long *r) { (void)d; *r = cur()->reasons; return 0; }
EXPORT int nvmlDeviceGetPcieThroughput(void *d, int c, unsigned *kbps) { (void)d; *kbps = c == 0 ? 1000 : 2000; return 0; }
EXPORT int nvmlDeviceGetCurrPcieLinkGeneration(void *d, unsigned *g) { (void)d; *g = 4; return 0; }
EXPORT int nvmlDeviceGetCurrPcieLinkWidth(void *d, unsigned *w) { (void)d; *w = 16; return 0; }
