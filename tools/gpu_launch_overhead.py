"""Where the time of a small CUDA call goes: the host's cost of launching a numba-cuda kernel.

Usage (on a machine with an NVIDIA GPU; ``rnnlab`` from this checkout)::

    PYTHONPATH=. python3 tools/gpu_launch_overhead.py --out DIR

Times, in microseconds of wall time per call (the fastest of 5 rounds of 200
calls, the GPU synchronised around each round), an empty kernel of four array
arguments launched in several ways: on numba arrays wrapped beforehand, with
torch tensors wrapped by ``cuda.as_cuda_array`` at every launch, and exactly as
``rnnlab.kernels._backend.launch_kernel`` launches (device context, detach and
wrap, torch's stream as an external stream); each piece alone; torch's own
``add_`` for comparison. Then one ``linear_scan`` forward at a small and a
large shape: its wall time, and its kernel's GPU time from ``torch.profiler``.
Writes ``DIR/gpu_launch_overhead.json``. Its run on an H200 (2026-11-30) is
``book/lds/data/gpu-launch-overhead-h200.json``.
"""
import argparse
import json
import pathlib
import time

import torch

from rnnlab.kernels._backend import numpy_compat_for_numba_cuda


def best_us(f, n=200, rounds=5):
    """The fastest of ``rounds`` mean wall times (microseconds) of ``n`` calls of ``f``."""
    times = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(n):
            f()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) / n)
    return min(times) * 1e6


def _empty(a, b, c, d):
    pass


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=pathlib.Path, help="folder for gpu_launch_overhead.json")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("gpu_launch_overhead: no CUDA device")
    numpy_compat_for_numba_cuda()
    from numba import cuda
    from torch.profiler import ProfilerActivity, profile

    from rnnlab import linear_scan

    empty = cuda.jit(_empty)
    xs = [torch.zeros(4, 1024, 64, device="cuda") for _ in range(4)]
    wrapped = [cuda.as_cuda_array(x) for x in xs]
    empty[1, 32](*wrapped)
    torch.cuda.synchronize()

    def context():
        with cuda.gpus[0]:
            pass

    def like_launch_kernel():
        with cuda.gpus[0]:
            conv = [cuda.as_cuda_array(x.detach()) for x in xs]
            stream = cuda.external_stream(torch.cuda.current_stream().cuda_stream)
            empty[1, 32, stream](*conv)

    launch = {
        "empty_prewrapped_us": best_us(lambda: empty[1, 32](*wrapped)),
        "as_cuda_array_x4_us": best_us(lambda: [cuda.as_cuda_array(x) for x in xs]),
        "empty_wrap_each_us": best_us(lambda: empty[1, 32](*[cuda.as_cuda_array(x) for x in xs])),
        "external_stream_us": best_us(lambda: cuda.external_stream(torch.cuda.current_stream().cuda_stream)),
        "gpus_ctx_us": best_us(context),
        "empty_like_launch_kernel_us": best_us(like_launch_kernel),
        "torch_add_us": best_us(lambda: xs[0].add_(1.0)),
    }
    scans = {}
    for shape in [(4, 1024, 64), (16, 4096, 1024)]:
        a = torch.rand(*shape, device="cuda") * 0.5 + 0.4
        b = torch.randn(*shape, device="cuda")
        linear_scan(a, b)
        wall = best_us(lambda: linear_scan(a, b), n=20)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(5):
                linear_scan(a, b)
            torch.cuda.synchronize()
        kernels = [{"name": e.key.split("[")[0], "calls": e.count, "gpu_us_per_call": e.device_time_total / e.count}
                   for e in prof.key_averages() if e.device_time_total > 0 and "scan_cuda" in e.key]
        scans["scan_fwd_" + "x".join(map(str, shape))] = {"wall_us": wall, "gpu_kernels": kernels}
    record = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
              "launch": launch, "scan_fwd": scans}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu_launch_overhead.json").write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
