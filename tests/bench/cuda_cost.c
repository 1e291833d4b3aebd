/*
 * cuda_cost.c - the harness of tests/bench/cuda_agent_cost.sh (a
 * benchmark, not a test): the CUDA agent (libiscope-cuda.so) loaded into a
 * Python process beside the CUPTI double (tests/gpu/fake_cupti.c), driven
 * through ctypes by tests/bench/cuda_agent_cost.py.
 *
 *   cc_init(agent)       dlopen the agent, InitializeInjection (as the
 *                        driver does), map the agent's .cuda.shm to drain it
 *   cc_launches(n, cb)   n kernel launches on the double from this thread,
 *                        the subscriber's callback fired (cb 1) or paused
 *                        (0): this thread's CPU ns.  The innermost Python
 *                        frame is the caller's line (ctypes), so in sample
 *                        mode the callback reads a real frame.
 *   cc_fire(n, cb)       n launch callbacks and nothing else (cb 0: the
 *                        double's dispatch alone): this thread's CPU ns
 *   cc_callbacks(cb), cc_fire1()   the same, one callback a call, untimed
 *   cc_flush()           cuptiActivityFlushAll(0) on this thread: the
 *                        agent converts every record of those launches
 *                        here (buf_done); this thread's CPU ns; then the
 *                        rings are drained as the recorder would
 *   cc_converter(us)     a second thread converting every us microseconds
 *                        (0: stop it), as the agent's flusher does
 *   cc_counts(r, f)      records the double wrote, callbacks it fired
 *
 * The agent's flusher is kept out of the way by the caller
 * (INFERSCOPE_CUDA_FLUSH_MS=600000).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "isc_shm.h"

/* A real PyTorch kernel name (the tiny adds of tests/device), mangled as CUPTI gives it. */
#define KERNEL "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_"

static struct {
	void (*launch)(const char *, uint32_t, uint64_t, const int *, const int *);
	void (*pause)(int);
	void (*counts)(uint64_t *, uint64_t *);
	void (*fire)(int);
	int (*flush)(uint32_t);
	void *shm;
	pthread_t conv;
	_Atomic int conv_on;
	unsigned conv_us;
} h;

static long long cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int cc_init(const char *agent)
{
	void *a = dlopen(agent, RTLD_NOW | RTLD_LOCAL);
	if (!a) {
		fprintf(stderr, "cuda_cost: %s\n", dlerror());
		return -1;
	}
	int (*init)(void) = (int (*)(void))dlsym(a, "InitializeInjection");
	void *c = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
	if (!init || !c) {
		fprintf(stderr, "cuda_cost: no InitializeInjection in %s, or no libcupti.so.13 loaded\n", agent);
		return -1;
	}
	h.launch = (void (*)(const char *, uint32_t, uint64_t, const int *, const int *))dlsym(c, "fakecupti_launch");
	h.pause = (void (*)(int))dlsym(c, "fakecupti_bench_pause_callbacks");
	h.counts = (void (*)(uint64_t *, uint64_t *))dlsym(c, "fakecupti_bench_counts");
	h.flush = (int (*)(uint32_t))dlsym(c, "cuptiActivityFlushAll");
	h.fire = (void (*)(int))dlsym(c, "fakecupti_bench_fire");
	if (!h.fire || !h.launch || !h.pause || !h.counts || !h.flush) {
		fprintf(stderr, "cuda_cost: the loaded libcupti.so.13 is not the test double of this build\n");
		return -1;
	}
	init();
	char path[4200];
	snprintf(path, sizeof(path), "%s/%d.cuda.shm", getenv("INFERSCOPE_SESSION"), (int)getpid());
	int fd = open(path, O_RDWR);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "cuda_cost: %s: the agent made no file\n", path);
		return -1;
	}
	h.shm = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return h.shm == MAP_FAILED ? -1 : 0;
}

long long cc_launches(int n, int callbacks)
{
	h.pause(!callbacks);
	long long t0 = cpu_ns();
	for (int i = 0; i < n; i++)
		h.launch(KERNEL, 7, 1, NULL, NULL);
	return cpu_ns() - t0;
}

/* n launch callbacks alone (callbacks 0: the double's dispatch alone): this thread's CPU ns. */
long long cc_fire(int n, int callbacks)
{
	h.pause(!callbacks);
	long long t0 = cpu_ns();
	h.fire(n);
	return cpu_ns() - t0;
}

/* Callbacks fired (1) or paused (0) from now; one launch callback, untimed (a Python loop times many). */
void cc_callbacks(int callbacks)
{
	h.pause(!callbacks);
}

void cc_fire1(void)
{
	h.fire(1);
}

/* The recorder's part: everything in the rings read. */
static void drain(void)
{
	const struct isc_shm_proc *p = h.shm;
	for (uint32_t i = 0; i < p->nslots; i++) {
		struct isc_shm_slot *s = isc_shm_slot_at(h.shm, i);
		atomic_store(&s->tail, atomic_load(&s->head));
	}
}

static void *converter(void *arg)
{
	(void)arg;
	while (atomic_load(&h.conv_on)) {
		h.flush(0);
		drain();
		usleep(h.conv_us);
	}
	return NULL;
}

/* A thread converting (flush, drain) every us microseconds from now (us > 0), or no more (0). */
int cc_converter(unsigned us)
{
	if (us && !atomic_load(&h.conv_on)) {
		h.conv_us = us;
		atomic_store(&h.conv_on, 1);
		return pthread_create(&h.conv, NULL, converter, NULL) ? -1 : 0;
	}
	if (!us && atomic_exchange(&h.conv_on, 0))
		pthread_join(h.conv, NULL);
	return 0;
}

/* Monotonic ns, for wall times. */
long long cc_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

long long cc_flush(void)
{
	long long t0 = cpu_ns();
	h.flush(0);
	long long t = cpu_ns() - t0;
	drain();
	return t;
}

/* Records dropped by the agent's rings (none expected: drained every flush). */
unsigned long long cc_dropped(void)
{
	const struct isc_shm_proc *p = h.shm;
	unsigned long long d = 0;
	for (uint32_t i = 0; i < p->nslots; i++)
		d += atomic_load(&isc_shm_slot_at(h.shm, i)->dropped);
	return d;
}

void cc_counts(uint64_t *records, uint64_t *fired)
{
	h.counts(records, fired);
}
