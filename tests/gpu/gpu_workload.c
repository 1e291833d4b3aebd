/*
 * gpu_workload.c - a C "CUDA program" for tests/gpu: it calls the test
 * double of the driver (fake_cuda.h) the way a real program calls CUDA.
 *
 *   gpu_workload all      one of everything CUPTI reports (see gpu.bats)
 *   gpu_workload kernels N   N launches on stream 1, then a sync
 *   gpu_workload pending N   N launches and a sync, then exit at once:
 *                         the records are still in CUPTI's buffers
 *   gpu_workload fork     launches, a fork child that launches and exits,
 *                         a fork+exec child that records on its own, more
 *                         launches
 *   gpu_workload driver   4 kernels launched through the driver API alone
 *                         (3 by cuLaunchKernel, as Triton does, 1 by
 *                         cuLaunchKernelEx, as cuBLAS does) and 2 through
 *                         the runtime, then a sync
 *   gpu_workload syncs N  N rounds of: a 50 us kernel on stream 1 and
 *                         cudaDeviceSynchronize, a 20 us kernel on stream 2,
 *                         an event recorded after it and
 *                         cudaEventSynchronize, a 1 MiB synchronous copy
 *                         (the blocking calls of tests/gpu's clock test)
 *   gpu_workload renamed  3 kernels, each launched, synchronized and its
 *                         records delivered (fake_flush) before the next,
 *                         whose names CUPTI gives at one address: first(),
 *                         second(int), first() again; then 3 host-to-
 *                         device copies of other memory kinds each
 *                         (pageable -> device, pinned -> device,
 *                         pageable -> pinned) and a sync; then the
 *                         driver call whose callback id is that of the
 *                         runtime's cudaLaunchKernel (211: cuD3D10GetDevices)
 *   gpu_workload noinit   no cuInit: no GPU agent at all
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_cuda.h"

/* CUPTI's enum values, which the double takes as they are */
enum { HTOD = 1, DTOH = 2, PAGEABLE = 1, PINNED = 2, DEVICE = 3 };

static void all(void)
{
	static const int grid[3] = { 8, 4, 2 }, block[3] = { 256, 2, 1 };
	fake_nvtx_inject();
	fake_name_thread("main-loop");
	fake_nvtx_push("step");
	fake_malloc(1 << 20, 0x7f0000000000ull);
	fake_memcpy(1 << 20, HTOD, PAGEABLE, DEVICE, 7, 0);
	/* a long kernel on stream 1 and a short one on stream 2: the short
	 * one completes first and comes first in CUPTI's buffers */
	fake_launch_cfg("_Z11gemm_kernelPKfS0_Pfi", 1, 200000, grid, block);
	fake_launch("relu_kernel", 2, 5000);
	fake_memset(4096, 1);
	fake_graph_launch(3, 1, 10000);
	fake_memcpy(65536, DTOH, DEVICE, PINNED, 1, 1);
	fake_sync(1);
	fake_sync(2);
	fake_free(1 << 20, 0x7f0000000000ull);
	fake_nvtx_pop();
}

static void kernels(int n, unsigned stream)
{
	for (int i = 0; i < n; i++)
		fake_launch("loop_kernel", stream, 2000);
	fake_sync(stream);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "all";
	int n = argc > 2 ? atoi(argv[2]) : 10;
	if (!strcmp(mode, "noinit")) {
		puts("no CUDA");
		return 0;
	}
	int rc = cuInit(0);
	if (rc) {
		printf("cuInit: %d\n", rc);
		return 0; /* a program that runs on without the GPU */
	}
	if (!strcmp(mode, "all")) {
		all();
	} else if (!strcmp(mode, "kernels")) {
		kernels(n, 1);
	} else if (!strcmp(mode, "driver")) {
		for (int i = 0; i < 3; i++)
			fake_launch_driver("triton_kernel", 1, 4000);
		fake_launch_driver_ex("cublas_gemm_kernel", 1, 6000);
		kernels(2, 1);
	} else if (!strcmp(mode, "renamed")) {
		static const char *names[] = { "_Z5firstv", "_Z6secondi", "_Z5firstv" };
		for (int i = 0; i < 3; i++) {
			fake_launch_reused_name(names[i], 1, 1000);
			fake_sync(1);
			fake_flush();
		}
		fake_memcpy(4096, HTOD, PAGEABLE, DEVICE, 1, 1);
		fake_memcpy(4096, HTOD, PINNED, DEVICE, 1, 1);
		fake_memcpy(4096, HTOD, PAGEABLE, PINNED, 1, 1);
		fake_sync(1);
		fake_driver_call(211);
	} else if (!strcmp(mode, "syncs")) {
		for (int i = 0; i < n; i++) {
			fake_launch("sync_kernel", 1, 50000);
			fake_device_sync();
			fake_launch("event_kernel", 2, 20000);
			fake_event_record(3, 2);
			fake_event_sync(3);
			fake_memcpy(1 << 20, HTOD, PINNED, DEVICE, 1, 0);
		}
	} else if (!strcmp(mode, "pending")) {
		kernels(n, 1);
		exit(0); /* atexit handlers run: the agent's forced flush */
	} else if (!strcmp(mode, "fork")) {
		kernels(2, 1);
		pid_t a = fork();
		if (a == 0) { /* CUDA is unusable in a fork child; the agent must stay out of it */
			kernels(3, 3);
			_exit(0);
		}
		pid_t b = fork();
		if (b == 0) {
			execl(argv[0], argv[0], "kernels", "4", (char *)NULL);
			_exit(127);
		}
		waitpid(a, NULL, 0);
		waitpid(b, NULL, 0);
		kernels(2, 1);
	} else {
		fprintf(stderr, "gpu_workload: unknown mode %s\n", mode);
		return 2;
	}
	printf("done %s injected=%d\n", mode, fake_injected());
	return 0;
}
