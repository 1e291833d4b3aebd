/*
 * nvml.c - GPU samples through NVML (libnvidia-ml.so.1), loaded with
 * dlopen and called through our own prototypes: no NVML header or library
 * is needed to build, and a machine without one records without samples.
 *
 * One thread: GPU_INFO once per device, then every 1/hz s a GPU_SAMPLE
 * per device (formats/trace.md §6.2).  nvmlDeviceGetPcieThroughput
 * measures over 20 ms and blocks that long, so PCIe throughput is taken
 * once a second and repeated in the samples between.
 */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_setup.h"
#include "isc_record.h"
#include "isc_shm.h"

#define MAX_DEVICES 64

typedef int nvml_ret;
typedef struct nvml_device *nvml_dev;
struct nvml_util { unsigned gpu, memory; };
struct nvml_mem { unsigned long long total, free, used; };
enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_TEMPERATURE_GPU = 0, NVML_PCIE_TX = 0, NVML_PCIE_RX = 1 };

struct isc_nvml {
	void *lib;
	nvml_ret (*init)(void);
	nvml_ret (*shutdown)(void);
	nvml_ret (*count)(unsigned *);
	nvml_ret (*handle)(unsigned, nvml_dev *);
	nvml_ret (*name)(nvml_dev, char *, unsigned);
	nvml_ret (*uuid)(nvml_dev, char *, unsigned);
	nvml_ret (*util)(nvml_dev, struct nvml_util *);
	nvml_ret (*mem)(nvml_dev, struct nvml_mem *);
	nvml_ret (*clock)(nvml_dev, int, unsigned *);
	nvml_ret (*power)(nvml_dev, unsigned *);
	nvml_ret (*temp)(nvml_dev, int, unsigned *);
	nvml_ret (*reasons)(nvml_dev, unsigned long long *);
	nvml_ret (*pcie)(nvml_dev, int, unsigned *);
	nvml_ret (*link_gen)(nvml_dev, unsigned *);
	nvml_ret (*link_width)(nvml_dev, unsigned *);
	const char *(*error)(nvml_ret);
	nvml_dev dev[MAX_DEVICES];
	unsigned ndev;
	unsigned pcie_tx[MAX_DEVICES], pcie_rx[MAX_DEVICES];
};

#define SYM(field, name) (*(void **)&n->field = dlsym(n->lib, name))

int isc_nvml_open(struct isc_nvml **out, char *why, size_t len)
{
	struct isc_nvml *n = calloc(1, sizeof(*n));
	unsigned count = 0;
	nvml_ret rc;
	*out = NULL;
	if (!n)
		return -ENOMEM;
	n->lib = dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL);
	if (!n->lib) {
		snprintf(why, len, "%s", dlerror());
		free(n);
		return -ENOENT;
	}
	SYM(error, "nvmlErrorString");
	if (!SYM(init, "nvmlInit_v2") || !SYM(shutdown, "nvmlShutdown") || !SYM(count, "nvmlDeviceGetCount_v2") ||
	    !SYM(handle, "nvmlDeviceGetHandleByIndex_v2")) {
		snprintf(why, len, "libnvidia-ml.so.1 lacks nvmlInit_v2 or nvmlDeviceGetCount_v2 (too old)");
		goto fail;
	}
	SYM(name, "nvmlDeviceGetName");
	SYM(uuid, "nvmlDeviceGetUUID");
	SYM(util, "nvmlDeviceGetUtilizationRates");
	SYM(mem, "nvmlDeviceGetMemoryInfo");
	SYM(clock, "nvmlDeviceGetClockInfo");
	SYM(power, "nvmlDeviceGetPowerUsage");
	SYM(temp, "nvmlDeviceGetTemperature");
	if (!SYM(reasons, "nvmlDeviceGetCurrentClocksEventReasons")) /* R535+; the old name before */
		SYM(reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
	SYM(pcie, "nvmlDeviceGetPcieThroughput");
	SYM(link_gen, "nvmlDeviceGetCurrPcieLinkGeneration");
	SYM(link_width, "nvmlDeviceGetCurrPcieLinkWidth");
	if ((rc = n->init()) != 0) {
		snprintf(why, len, "nvmlInit: %s", n->error ? n->error(rc) : "failed");
		goto fail;
	}
	if ((rc = n->count(&count)) != 0 || count == 0) {
		snprintf(why, len, "%s", rc ? (n->error ? n->error(rc) : "nvmlDeviceGetCount failed") : "no GPU");
		n->shutdown();
		goto fail;
	}
	for (unsigned i = 0; i < count && n->ndev < MAX_DEVICES; i++)
		if (n->handle(i, &n->dev[n->ndev]) == 0)
			n->ndev++;
	*out = n;
	return 0;
fail:
	dlclose(n->lib);
	free(n);
	return -ENOENT;
}

void isc_nvml_close(struct isc_nvml *n)
{
	if (!n)
		return;
	n->shutdown();
	dlclose(n->lib);
	free(n);
}

/* Bytes per second of one PCIe lane after line encoding, by generation. */
static uint64_t lane_bw(unsigned gen)
{
	static const uint64_t bw[] = { 0, 250000000, 500000000, 984615384, 1969230769, 3938461538, 7563000000 };
	return gen < sizeof(bw) / sizeof(bw[0]) ? bw[gen] : 0;
}

static void put_info(struct isc_nvml *n, unsigned i, uint64_t now, struct isc_buf *b, uint64_t *last)
{
	char name[96] = "", uuid[96] = "";
	unsigned gen = 0, width = 0;
	struct nvml_mem m = { 0, 0, 0 };
	struct isc_buf body = { 0 };
	if (n->name)
		n->name(n->dev[i], name, sizeof(name));
	if (n->uuid)
		n->uuid(n->dev[i], uuid, sizeof(uuid));
	if (n->link_gen)
		n->link_gen(n->dev[i], &gen);
	if (n->link_width)
		n->link_width(n->dev[i], &width);
	if (n->mem)
		n->mem(n->dev[i], &m);
	name[sizeof(name) - 1] = uuid[sizeof(uuid) - 1] = '\0';
	uint64_t v[5] = { i, gen, width, lane_bw(gen) * width, m.total };
	for (int k = 0; k < 5; k++)
		isc_buf_put_varint(&body, v[k]);
	isc_buf_put(&body, uuid, strlen(uuid) + 1);
	isc_buf_put(&body, name, strlen(name));
	isc_buf_put_record(b, ISC_REC_GPU_INFO, now, last, body.data, body.len);
	isc_buf_free(&body);
}

/* One GPU_SAMPLE; a query that fails leaves its field 0. */
static void put_sample(struct isc_nvml *n, unsigned i, uint64_t now, bool pcie, struct isc_buf *b, uint64_t *last)
{
	struct nvml_util u = { 0, 0 };
	struct nvml_mem m = { 0, 0, 0 };
	unsigned sm = 0, memclk = 0, power = 0, temp = 0;
	unsigned long long reasons = 0;
	uint8_t body[140];
	unsigned len = 0;
	nvml_dev d = n->dev[i];
	if (n->util)
		n->util(d, &u);
	if (n->mem)
		n->mem(d, &m);
	if (n->clock) {
		n->clock(d, NVML_CLOCK_SM, &sm);
		n->clock(d, NVML_CLOCK_MEM, &memclk);
	}
	if (n->power)
		n->power(d, &power);
	if (n->temp)
		n->temp(d, NVML_TEMPERATURE_GPU, &temp);
	if (n->reasons)
		n->reasons(d, &reasons);
	if (pcie && n->pcie) {
		n->pcie(d, NVML_PCIE_TX, &n->pcie_tx[i]);
		n->pcie(d, NVML_PCIE_RX, &n->pcie_rx[i]);
	}
	uint64_t v[12] = { i, u.gpu, u.memory, m.used, m.total, sm, memclk, power, temp, reasons,
			   n->pcie_tx[i], n->pcie_rx[i] };
	for (int k = 0; k < 12; k++)
		len += isc_put_varint(body + len, v[k]);
	isc_buf_put_record(b, ISC_REC_GPU_SAMPLE, now, last, body, len);
}

struct isc_nvml_thread {
	pthread_t thr;
	struct isc_nvml *n;
	uint64_t period;
	isc_nvml_emit_fn *emit;
	void *ctx;
	int wake_fd;
	volatile int stop;
};

static void *nvml_main(void *arg)
{
	struct isc_nvml_thread *t = arg;
	struct isc_buf b = { 0 };
	uint64_t next = isc_now_ns(), last_pcie = 0, last;
	bool first = true;
	while (!t->stop) {
		uint64_t now = isc_now_ns();
		if (now < next) {
			struct pollfd p = { t->wake_fd, POLLIN, 0 }; /* fd -1: just sleeps */
			poll(&p, 1, (int)((next - now) / 1000000u) + 1);
			continue;
		}
		next += t->period;
		if (next < now)
			next = now + t->period;
		bool pcie = now - last_pcie >= 1000000000u;
		if (pcie)
			last_pcie = now;
		b.len = 0;
		last = now;
		if (first)
			for (unsigned i = 0; i < t->n->ndev; i++)
				put_info(t->n, i, now, &b, &last);
		if (first && b.len)
			t->emit(t->ctx, b.data, b.len, now, true);
		first = false;
		b.len = 0;
		last = now;
		for (unsigned i = 0; i < t->n->ndev; i++)
			put_sample(t->n, i, now, pcie, &b, &last);
		if (b.len)
			t->emit(t->ctx, b.data, b.len, now, false);
	}
	isc_buf_free(&b);
	return NULL;
}

int isc_nvml_start(struct isc_nvml_thread **out, struct isc_nvml *n, unsigned hz, int wake_fd, isc_nvml_emit_fn *emit,
		   void *ctx)
{
	struct isc_nvml_thread *t = calloc(1, sizeof(*t));
	sigset_t all, old;
	if (!t)
		return -ENOMEM;
	t->n = n;
	t->period = 1000000000u / (hz > 10 ? 10 : hz ? hz : 1);
	t->emit = emit;
	t->ctx = ctx;
	t->wake_fd = wake_fd;
	sigfillset(&all); /* signals are the main thread's */
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&t->thr, NULL, nvml_main, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		free(t);
		return -rc;
	}
	*out = t;
	return 0;
}

void isc_nvml_stopping(struct isc_nvml_thread *t)
{
	if (t)
		t->stop = 1;
}

void isc_nvml_stop(struct isc_nvml_thread *t)
{
	if (!t)
		return;
	t->stop = 1;
	pthread_join(t->thr, NULL);
	free(t);
}
