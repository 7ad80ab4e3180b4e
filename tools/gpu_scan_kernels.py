"""The two CUDA kernels of ``linear_scan`` side by side on a GPU, by GPU time (CUDA events).

Usage (on a machine with an NVIDIA GPU; ``rnnlab`` from this checkout)::

    PYTHONPATH=. python3 tools/gpu_scan_kernels.py --out DIR

For three float32 shapes ``(B, T, C)``, both kernels (``scan_cuda.use_kernel``)
and, for the sequential one, several block sizes: the forward time, its
bandwidth (``a``, ``b`` read and ``h`` written once: ``3 * B*T*C * 4`` bytes)
and the forward+backward time, each the fastest of three rounds of calls.
Event timing includes the host's launch overhead when the GPU waits for it
(the smallest shape measures little else). Writes ``DIR/gpu_scan_kernels.json``.

Its run on an H200 (2026-11-30) set ``scan_cuda.SEQUENTIAL_MIN_THREADS``; the
result is ``book/lds/data/gpu-scan-kernels-h200.json``.
"""
import argparse
import json
import pathlib

import torch

from rnnlab.kernels._backend import numpy_compat_for_numba_cuda

SHAPES = [(16, 4096, 1024), (16, 4096, 256), (4, 1024, 64)]
SEQUENTIAL_BLOCKS = [8, 32, 64, 128, 256]


def gpu_ms(f, n=10, rounds=3):
    """The fastest of ``rounds`` mean GPU times (ms) of ``n`` calls of ``f``."""
    f()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(n):
            f()
        end.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(end) / n)
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=pathlib.Path, help="folder for gpu_scan_kernels.json")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("gpu_scan_kernels: no CUDA device")
    numpy_compat_for_numba_cuda()
    from rnnlab import linear_scan
    from rnnlab.kernels import scan_cuda

    rows = []
    default_block = scan_cuda.SEQUENTIAL_THREADS
    for shape in SHAPES:
        a = (torch.rand(*shape, device="cuda") * 0.5 + 0.4).requires_grad_()
        b = torch.randn(*shape, device="cuda", requires_grad=True)
        gigabytes = 3 * a.numel() * 4 / 1e9

        def both():
            linear_scan(a, b).sum().backward()

        for kind, block in [("sequential", n) for n in SEQUENTIAL_BLOCKS] + [("chunked", None)]:
            scan_cuda.SEQUENTIAL_THREADS = block or default_block
            try:
                with scan_cuda.use_kernel(kind):
                    fwd = gpu_ms(lambda: linear_scan(a, b))
                    fb = gpu_ms(both, n=5)
            finally:
                scan_cuda.SEQUENTIAL_THREADS = default_block
            rows.append(dict(shape=list(shape), kind=kind, threads=block, fwd_ms=round(fwd, 4),
                             fwd_GBps=round(gigabytes / fwd * 1e3), fb_ms=round(fb, 4)))
            print(rows[-1], flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    record = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "cuda": torch.version.cuda, "rows": rows}
    (args.out / "gpu_scan_kernels.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
