"""GPU workloads whose bottleneck is known by construction, for tests/device/check.sh.

    workloads.py NAME [--steps N] [--profile OUT.json]

The line that launches a workload's GPU work carries the comment
`# launch site: NAME`: check.sh takes the truth of the launch-site column
from it.

Each runs N steps (default 30), one `scope("step")` each (a no-op when not
recorded by iscope-record), synchronizes at the end of every step, and
prints `ms_per_step MEDIAN` of the steps after the first 5 (warm-up).
With --profile, the same steps run under torch.profiler and its Kineto
trace is written to OUT.json (the first 5 steps as torch.profiler's
warm-up), for a like-for-like kernel count.

  gemm       four bf16 8192^3 matmuls per step: the GPU computes ~100 % of
             a step -> gpu_compute_bound
  tiny       3000 adds of 16 floats per step: every kernel a few us, each
             shorter than its launch call -> launch_bound
  pageable   a 512 MiB copy from pageable host memory per step, nothing
             else -> transfer_bound
  python     60 ms of pure Python per step, then one small kernel: the GPU
             idle, waiting for the host -> cpu_bound (the host starves
             the GPU; without a kernel the run has no GPU span to judge)
  resnet1    torchvision ResNet-50, batch 1, fp32 (eager): host-bound on
             a fast GPU (launch- or cpu-bound); reported, not judged
  resnet64   the same at batch 64, fp16; reported, not judged
"""
import argparse
import statistics
import time

import torch

try:
    from inferscope import scope
except ImportError:
    import contextlib

    def scope(name):
        return contextlib.nullcontext()


def make(name):
    dev = torch.device("cuda")
    if name == "gemm":
        a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)

        def step():
            for _ in range(4):
                torch.matmul(a, b)  # launch site: gemm
        return step
    if name == "tiny":
        x = torch.zeros(16, device=dev)

        def step():
            for _ in range(3000):
                x.add_(1.0)  # launch site: tiny
        return step
    if name == "pageable":
        host = torch.empty(512 << 20, dtype=torch.uint8)  # pageable: not pinned
        dst = torch.empty(512 << 20, dtype=torch.uint8, device=dev)

        def step():
            dst.copy_(host, non_blocking=True)  # launch site: pageable
        return step
    if name == "python":
        x = torch.zeros(16, device=dev)

        def step():
            end = time.perf_counter() + 0.06
            s = 0
            while time.perf_counter() < end:
                s += 1
            x.add_(1.0)  # launch site: python
        return step
    if name.startswith("resnet"):
        import torchvision
        bs = 1 if name == "resnet1" else 64
        dtype = torch.float32 if bs == 1 else torch.float16
        model = torchvision.models.resnet50().to(dev, dtype).eval()
        x = torch.randn(bs, 3, 224, 224, device=dev, dtype=dtype)

        def step():
            with torch.inference_mode():
                model(x)
        return step
    raise SystemExit("unknown workload " + name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--profile")
    a = ap.parse_args()
    step = make(a.name)
    times = []

    def run_steps(prof=None):
        for i in range(a.steps):
            t0 = time.perf_counter()
            with scope("step"):
                step()
                torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
            if prof is not None:
                prof.step()

    if a.profile:
        from torch.profiler import ProfilerActivity, profile, schedule
        # repeat=1: one cycle; with the default (0, repeat forever) the cycle after the
        # last step would begin a new warm-up, and the trace exported could be that
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                     schedule=schedule(wait=0, warmup=5, active=a.steps - 5, repeat=1)) as p:
            run_steps(p)
        p.export_chrome_trace(a.profile)
    else:
        run_steps()
    print("ms_per_step %.3f" % (1000 * statistics.median(times[5:])))


main()
