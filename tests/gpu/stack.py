"""A Python workload for tests/gpu: CUDA work through the driver double
(libcuda.so.1 on LD_LIBRARY_PATH), called with ctypes, from known Python
functions, so that every GPU operation has a Python stack to link to.

    python3 stack.py [STEPS] [threads] [sleep] [driver]

Each step: copy_in (a host-to-device copy), forward (two kernels),
graph (a CUDA graph of three kernels), then synchronize.  With "threads",
a second thread runs steps of its own on stream 2; with "sleep", each
step ends with 0.2 s of sleep (a slow run); with "driver", forward is
followed by two kernels launched through the driver API alone, with no
runtime call: matmul (cuLaunchKernelEx, as cuBLAS launches its GEMMs
with CUDA 13) and fused (cuLaunchKernel, as Triton does).
"""
import ctypes
import sys
import threading
import time

cuda = ctypes.CDLL("libcuda.so.1")
cuda.fake_launch.argtypes = [ctypes.c_char_p, ctypes.c_uint, ctypes.c_ulonglong]
cuda.fake_launch_driver.argtypes = [ctypes.c_char_p, ctypes.c_uint, ctypes.c_ulonglong]
cuda.fake_launch_driver_ex.argtypes = [ctypes.c_char_p, ctypes.c_uint, ctypes.c_ulonglong]
cuda.fake_graph_launch.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_ulonglong]
cuda.fake_memcpy.argtypes = [ctypes.c_ulonglong, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_uint, ctypes.c_int]
cuda.fake_sync.argtypes = [ctypes.c_uint]


def copy_in(stream):
    cuda.fake_memcpy(1 << 16, 1, 2, 3, stream, 1)  # HtoD, pinned -> device, async


def forward(stream):
    cuda.fake_launch(b"_Z6linearPKfPf", stream, 20000)
    cuda.fake_launch(b"_Z4geluPf", stream, 5000)


def matmul(stream):
    cuda.fake_launch_driver_ex(b"cublas_gemm_kernel", stream, 8000)


def fused(stream):
    cuda.fake_launch_driver(b"triton_fused_kernel", stream, 3000)


def graph(stream):
    cuda.fake_graph_launch(3, stream, 4000)


def step(stream):
    copy_in(stream)
    forward(stream)
    if "driver" in sys.argv[2:]:
        matmul(stream)
        fused(stream)
    graph(stream)
    cuda.fake_sync(stream)
    if "sleep" in sys.argv[2:]:
        time.sleep(0.2)


def run(steps, stream):
    for _ in range(steps):
        step(stream)


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    if cuda.cuInit(0) != 0:
        print("cuInit failed")
        return
    workers = []
    if "threads" in sys.argv[2:]:
        workers.append(threading.Thread(target=run, args=(steps, 2), name="worker"))
        workers[0].start()
    run(steps, 1)
    for w in workers:
        w.join()
    print("stack.py done, injected=%d" % cuda.fake_injected())


main()
