"""verdict workloads for the GPU classes, on the CUDA test doubles.

    python3 gpu_scenario.py SCENARIO

CUDA work goes through the driver double (libcuda.so.1 of tests/gpu on
LD_LIBRARY_PATH), called with ctypes from named Python functions, so that
every launch, copy and synchronization has a Python call site. The
double's GPU runs each operation for exactly the time it is given (it
starts 3 us after its call, or when its stream is free), so the ground
truth of each scenario is arithmetic, stated below with its numbers; the
environment of the doubles (FAKE_CUPTI_*, FAKE_NVML*) that a scenario
needs is set by verdict_gpu.bats, and named here.

launch_bound       40 steps of `decode_step`: 250 launches of a 1 us
                   kernel each, each launch call costing 15 us of CPU
                   (FAKE_CUPTI_LAUNCH_NS=15000; the kernel starts 1 us
                   before the call returns) and about 1 us of Python
                   (kernel_args) around it: 10000 kernels, every one
                   shorter than its launch call, the queue below one op on
                   average (about 0.8: an op counts from its call's start),
                   the host in launch calls about 80 % of the time, the
                   GPU busy about 6 % of it. Top
                   contributor: the kernel vectorized_elementwise_kernel /
                   the launches from decode_step.
launch_dispatch    launch-bound with the per-op host cost mostly outside the
                   launch call, as eager PyTorch's (issue 29: 3000 tiny adds
                   a step were called cpu_bound): 40 steps of `eager_step`,
                   250 ops each: `dispatch` (about 10 us of Python, the
                   framework's per-op work) then a launch call of 3 us
                   (FAKE_CUPTI_LAUNCH_NS=3000) of a 1 us kernel, which starts
                   as the call returns.  Every kernel is shorter than its
                   launch call, the queue stays below one op, and the GPU
                   idles about 13 us between kernels, waiting for the host:
                   gaps of at most 50 us that a CUDA graph or fusion
                   removes.  Truth: launch_bound (not cpu_bound: the launch
                   calls alone are a fifth of the idle), suggesting CUDA
                   graphs / torch.compile, top contributor the short
                   kernel.
cpu_bound          20 steps: `tokenize` (about 15 ms of Python loop), then
                   `forward` launches 3 kernels of 300 us and syncs: the GPU
                   is idle over 90 % of the time, waiting for the host,
                   which is in tokenize. Top contributor: tokenize.
gpu_compute_bound  25 steps of `forward`: 8 kernels of 5 ms back to back
                   (ampere_sgemm_128x64_tn), then a stream sync: the GPU is
                   busy over 99 % of the time; the host only waits. Top
                   contributor: the kernel ampere_sgemm_128x64_tn.
transfer_bound     30 steps: `load_batch` copies 4 x 32 MiB from pageable
                   host memory to the device with cudaMemcpy (synchronous,
                   10 GB/s in the double: 13.4 ms a step), then `forward`
                   runs one 0.5 ms kernel: copies are 96 % of GPU time, the
                   host is blocked in the copies, and the link (PCIe gen 4
                   x16, about 31.5 GB/s, from the NVML double) would carry
                   them 3x faster from pinned memory. Top contributor: the
                   HtoD pageable copies from load_batch.
sync_bound         2000 calls of `score`: one 40 us kernel, then
                   cudaDeviceSynchronize (as .item() does), which returns
                   30 us after the kernel ends (FAKE_CUPTI_SYNC_NS=30000, a
                   driver's wake-up): the host spends most of its time
                   blocked in the synchronization, and the GPU idles
                   between kernels for the round trip, at least 30 + 3 us
                   (the sync returning, the next launch) of every 73 us
                   and more: idle 45 % or more by construction.
                   Top contributor: cudaDeviceSynchronize called from score.
memory_high        gpu_compute_bound with 37 GiB allocated on the 40 GiB
                   device (cudaMalloc, and NVML memory used 39000 MiB,
                   FAKE_NVML=mem_used_mib=39000): class gpu_compute_bound,
                   and a finding that device memory is above 90 %.
memory_leak        device memory (tests/gpu/memory.bats): `load_weights`
                   allocates 256 MiB once; then 12 steps (scope "step"),
                   each `forward_tmp` allocating 64 MiB, running a 200 us
                   kernel and freeing it, then `keep_outputs` allocating
                   8 MiB never freed.  Peak: in the last step's
                   forward_tmp, 256 + 11 x 8 + 64 = 408 MiB, live there:
                   load_weights 256, keep_outputs 88, forward_tmp 64 MiB.
                   Leak: keep_outputs, 8 MiB a step (88 MiB from the end of
                   step 1 to the end of step 12); 2 allocations a step, one
                   of them (forward_tmp's) released within it.
memory_peak        `reserve_pool` tries a 64 GiB cudaMalloc, which fails,
                   and goes on (a failure the program survives is no OOM);
                   `load_weights` 512 MiB; 5 steps of `embed` (64 MiB) and
                   `attention_scores` (2 GiB), a 1 ms kernel, both freed:
                   peak 2624 MiB, of which attention_scores 2048 MiB
                   (78.05 %); 512 MiB stay between steps, on a 40 GiB device.
memory_oom         `load_weights` 30 GiB, then `alloc_kv_cache` calls
                   cudaMalloc, which fails (out of memory: the CUPTI double's
                   fakecupti_malloc_fail), and the program exits with status
                   1 as a server would: cuda_oom at alloc_kv_cache.
idle_clocks        cpu_bound, with NVML reporting idle clocks all along
                   (FAKE_NVML: 345 MHz, reasons gpu_idle | sw_power_cap,
                   0x5): a sample whose reasons include gpu_idle is no
                   throttled work, so no thermal_throttled finding.
throttle_idle      `forward` (8 kernels of 5 ms, 40 ms) and a sync, then
                   `postprocess`: 2 s of Python with no GPU work.  Once the
                   sync has returned (the last kernel has ended) the
                   workload creates FAKE_NVML_LATER_FILE; the NVML double
                   reports from the second sample that finds it on
                   sw_thermal (0x20, no gpu_idle) and 1005 MHz
                   (FAKE_NVML_LATER): every throttled sample's interval
                   starts after the last kernel, when no GPU work runs, so
                   none is throttled work and there is no thermal_throttled
                   finding, however long Python took to start.
startup_gemm       the GPU judged on the steady iterations (issue 29): `load_model`
                   runs one 50 us kernel, then 1.5 s of host work with the
                   GPU idle (start-up); then 7 iterations, each a
                   scope("step") around `forward_big` (8 kernels of 10 ms
                   back to back) and a stream sync.  Whole run: the GPU span
                   holds the 1.5 s start-up gap, compute about 25 %.  Inside
                   the 6 steady steps (the first is the warm-up) the GPU
                   computes 80 of each step's 80 ms and the host's return
                   from the sync and next launch (under 1 ms on a quiet
                   machine): over 90 %, gpu_compute_bound, judged on the
                   iterations, top contributor the kernel.
thermal_throttled  gpu_compute_bound on a GPU that throttles: the NVML
                   double reports, from 300 ms on, the thermal clock-event
                   reasons (sw_thermal 0x20 | hw_thermal 0x40), 92 C and
                   the SM clock down from 1410 to 1005 MHz
                   (FAKE_NVML_LATER), while the GPU is busy: the kernels
                   run at 71 % of the clock. Top contributor: the thermal
                   reasons (throttle_reasons in gpu.nvml).
"""
import ctypes
import os
import sys
import time

cuda = ctypes.CDLL("libcuda.so.1")
cuda.fake_launch.argtypes = [ctypes.c_char_p, ctypes.c_uint, ctypes.c_ulonglong]
cuda.fake_memcpy.argtypes = [ctypes.c_ulonglong, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_uint, ctypes.c_int]
cuda.fake_sync.argtypes = [ctypes.c_uint]
cuda.fake_device_sync.argtypes = []
cuda.fake_malloc.argtypes = [ctypes.c_ulonglong, ctypes.c_ulonglong]
cuda.fake_free.argtypes = [ctypes.c_ulonglong, ctypes.c_ulonglong]
cuda.fake_malloc_fail.argtypes = [ctypes.c_ulonglong]

HTOD, PAGEABLE, DEVICE = 1, 1, 3  # CUPTI's enum values
US = 1000
MS = 1000 * US


SHAPE = (1, 32, 128, 64)


def kernel_args(i):
    """The host work of one launch besides the call: a grid size (about 1 us)."""
    numel = 1
    for d in SHAPE:
        numel *= d
    blocks = [(numel + t - 1) // t for t in (128, 256, 512)]
    return min(blocks) + i % 7


def decode_step():
    for i in range(250):
        kernel_args(i)
        cuda.fake_launch(b"vectorized_elementwise_kernel", 1, 1 * US)


def dispatch(i):
    """The framework's host work for one op (argument checks, dispatch): about 10 us of Python."""
    n = i
    for d in range(150):
        n = (n * 31 + d) % 1000003
    return n


def eager_step():
    for i in range(250):
        dispatch(i)
        cuda.fake_launch(b"vectorized_elementwise_kernel", 1, 1 * US)


def launch_dispatch():
    for _ in range(40):
        eager_step()
        cuda.fake_sync(1)


def launch_bound():
    for _ in range(40):
        decode_step()
        cuda.fake_sync(1)


def tokenize(text):
    ids = []
    for _ in range(30):
        for word in text.split():
            h = 0
            for ch in word:
                h = (h * 31 + ord(ch)) % 50257
            ids.append(h)
    return ids


def forward_small():
    for _ in range(3):
        cuda.fake_launch(b"ampere_sgemm_32x32_sliced1x4_tn", 1, 300 * US)
    cuda.fake_sync(1)


def cpu_bound():
    text = "the quick brown fox jumps over the lazy dog " * 60
    for _ in range(20):
        tokenize(text)
        forward_small()


def forward():
    for _ in range(8):
        cuda.fake_launch(b"ampere_sgemm_128x64_tn", 1, 5 * MS)


def gpu_compute_bound():
    for _ in range(25):
        forward()
        cuda.fake_sync(1)


def load_batch():
    for _ in range(4):
        cuda.fake_memcpy(32 << 20, HTOD, PAGEABLE, DEVICE, 1, 0)


def forward_one():
    cuda.fake_launch(b"ampere_sgemm_128x64_tn", 1, 500 * US)


def postprocess(seconds):
    """Python work with the GPU idle, for a fixed time."""
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += sum(range(200))
    return n


def throttle_idle():
    forward()
    cuda.fake_sync(1)
    with open(os.environ["FAKE_NVML_LATER_FILE"], "w"):
        pass
    postprocess(2.0)


def load_model():
    cuda.fake_launch(b"init_weights_kernel", 1, 50 * US)
    cuda.fake_sync(1)
    postprocess(1.5)


def forward_big():
    for _ in range(8):
        cuda.fake_launch(b"ampere_sgemm_128x64_tn", 1, 10 * MS)


def startup_gemm():
    from inferscope import scope
    load_model()
    for _ in range(7):
        with scope("step"):
            forward_big()
            cuda.fake_sync(1)


def transfer_bound():
    for _ in range(30):
        load_batch()
        forward_one()
        cuda.fake_sync(1)


def score():
    cuda.fake_launch(b"reduce_kernel", 1, 40 * US)
    cuda.fake_device_sync()


def sync_bound():
    for _ in range(2000):
        score()


def memory_high():
    weights = 0x7f0000000000
    cuda.fake_malloc(37 << 30, weights)
    gpu_compute_bound()
    cuda.fake_free(37 << 30, weights)


WEIGHTS = 0x7e0000000000


def load_weights(nbytes):
    cuda.fake_malloc(nbytes, WEIGHTS)


def forward_tmp():
    cuda.fake_malloc(64 << 20, 0x7f1000000000)
    cuda.fake_launch(b"ampere_sgemm_128x64_tn", 1, 200 * US)
    cuda.fake_sync(1)
    cuda.fake_free(64 << 20, 0x7f1000000000)


def keep_outputs(i):
    cuda.fake_malloc(8 << 20, 0x7f2000000000 + i * (8 << 20))


def memory_leak():
    from inferscope import scope
    load_weights(256 << 20)
    for i in range(12):
        with scope("step"):
            forward_tmp()
            keep_outputs(i)


def embed():
    cuda.fake_malloc(64 << 20, 0x7f3000000000)


def attention_scores():
    cuda.fake_malloc(2 << 30, 0x7f4000000000)


def reserve_pool():
    cuda.fake_malloc_fail(64 << 30)


def memory_peak():
    from inferscope import scope
    reserve_pool()
    load_weights(512 << 20)
    for i in range(5):
        with scope("step"):
            embed()
            attention_scores()
            cuda.fake_launch(b"ampere_sgemm_128x64_tn", 1, 1 * MS)
            cuda.fake_sync(1)
            cuda.fake_free(2 << 30, 0x7f4000000000)
            cuda.fake_free(64 << 20, 0x7f3000000000)


def alloc_kv_cache():
    cuda.fake_malloc_fail(16 << 30)


def memory_oom():
    load_weights(30 << 30)
    cuda.fake_launch(b"ampere_sgemm_128x64_tn", 1, 1 * MS)
    cuda.fake_sync(1)
    alloc_kv_cache()
    print("gpu_scenario.py memory_oom: out of memory, injected=%d" % cuda.fake_injected())
    sys.exit(1)


SCENARIOS = {
    "launch_bound": launch_bound,
    "launch_dispatch": launch_dispatch,
    "cpu_bound": cpu_bound,
    "gpu_compute_bound": gpu_compute_bound,
    "transfer_bound": transfer_bound,
    "sync_bound": sync_bound,
    "memory_high": memory_high,
    "thermal_throttled": gpu_compute_bound,
    "idle_clocks": cpu_bound,
    "throttle_idle": throttle_idle,
    "startup_gemm": startup_gemm,
    "memory_leak": memory_leak,
    "memory_peak": memory_peak,
    "memory_oom": memory_oom,
}


def runqueue_wait_ns():
    """This thread's time waiting for a CPU so far (the kernel's
    /proc/thread-self/schedstat, second field), or None without it."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            return int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else ""
    if name not in SCENARIOS:
        sys.exit("usage: gpu_scenario.py {%s}" % "|".join(SCENARIOS))
    if cuda.cuInit(0) != 0:
        sys.exit("cuInit failed")
    # the machine around the scenario, measured by the kernel and not by the
    # recorder under test: how long the scenario's thread waited for a CPU
    # (runnable, not running) while it ran; without schedstat, its time off
    # CPU by its own clocks (wall less thread CPU time)
    w0, c0, q0 = time.perf_counter_ns(), time.thread_time_ns(), runqueue_wait_ns()
    SCENARIOS[name]()
    w1, c1, q1 = time.perf_counter_ns(), time.thread_time_ns(), runqueue_wait_ns()
    if q0 is not None and q1 is not None:
        print("gpu_scenario.py %s waited_ns=%d wall_ns=%d (runqueue)" % (name, q1 - q0, w1 - w0))
    else:
        print("gpu_scenario.py %s waited_ns=%d wall_ns=%d (off CPU)" % (name, max(0, (w1 - w0) - (c1 - c0)), w1 - w0))
    print("gpu_scenario.py %s done, injected=%d" % (name, cuda.fake_injected()))


main()
