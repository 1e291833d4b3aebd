/*
 * fake_nvml.c - test double of NVML (libnvidia-ml.so.1) for tests/gpu:
 * one GPU, "Fake GPU 0", whose readings are fixed numbers the tests look
 * for (utilization 42 %, 12 GiB of 40 GiB used, 1410/1215 MHz, 250 W,
 * 65 C, throttle reason 0x4, PCIe gen 4 x16, 1000/2000 KB/s).
 */
#include <stdio.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

struct util { unsigned gpu, memory; };
struct mem { unsigned long long total, free, used; };
static int device; /* the handle points here */

EXPORT int nvmlInit_v2(void) { return 0; }
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
EXPORT int nvmlDeviceGetUtilizationRates(void *d, struct util *u) { (void)d; u->gpu = 42; u->memory = 17; return 0; }
EXPORT int nvmlDeviceGetMemoryInfo(void *d, struct mem *m)
{
	(void)d;
	m->total = 40ull << 30;
	m->used = 12ull << 30;
	m->free = m->total - m->used;
	return 0;
}
EXPORT int nvmlDeviceGetClockInfo(void *d, int type, unsigned *mhz) { (void)d; *mhz = type == 1 ? 1410 : 1215; return 0; }
EXPORT int nvmlDeviceGetPowerUsage(void *d, unsigned *mw) { (void)d; *mw = 250000; return 0; }
EXPORT int nvmlDeviceGetTemperature(void *d, int s, unsigned *c) { (void)d; (void)s; *c = 65; return 0; }
EXPORT int nvmlDeviceGetCurrentClocksEventReasons(void *d, unsigned long long *r) { (void)d; *r = 0x4; return 0; }
EXPORT int nvmlDeviceGetPcieThroughput(void *d, int c, unsigned *kbps) { (void)d; *kbps = c == 0 ? 1000 : 2000; return 0; }
EXPORT int nvmlDeviceGetCurrPcieLinkGeneration(void *d, unsigned *g) { (void)d; *g = 4; return 0; }
EXPORT int nvmlDeviceGetCurrPcieLinkWidth(void *d, unsigned *w) { (void)d; *w = 16; return 0; }
