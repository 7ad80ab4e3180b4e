"""How long numba-cuda takes to compile every CUDA kernel of rnnlab, without a GPU.

Usage: ``python tools/compile_time.py [--cc 9.0] [--workers N] [--json PATH]``

Compiles every ``(kernel, signature)`` that the CUDA backends list
(``kernel_signatures()`` of ``scan_cuda``, ``stack_scan_cuda``, ``memory_cuda``,
``cells_cuda``) with ``numba.cuda.compile_ptx`` for one compute capability
(9.0, the H100, by default) and prints the time of each and the total: an
estimate of what ``tools/gpu_check.py`` spends compiling on a GPU, where the
first launch of each signature also goes from PTX to machine code (a small
extra). ``--workers N`` compiles in N processes (the wall-clock time of
compiling in parallel). Needs numba-cuda's NVVM (``numba-cuda[cu12]``), not a GPU.
"""
import argparse
import contextlib
import json
import os
import pathlib
import sys
import time
import types

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MODULES = ("scan_cuda", "stack_scan_cuda", "memory_cuda", "cells_cuda")


@contextlib.contextmanager
def _device_cc(cc):
    """Device functions are compiled for the current device's capability: stand in one (as tests/test_ptx.py)."""
    import numba.cuda.dispatcher as dispatcher

    old = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=cc)
    try:
        yield
    finally:
        dispatcher.get_current_device = old


def signatures():
    """``[(module, kernel, index)]`` of every signature listed by the CUDA backends."""
    import importlib

    out = []
    for mod in MODULES:
        module = importlib.import_module(f"rnnlab.kernels.{mod}")
        out += [(mod, name, i) for i, (name, _, _) in enumerate(module.kernel_signatures())]
    return out


def compile_one(job):
    """Compile signature ``job = (module, kernel, index, cc)``; return ``(module, kernel, dtype, seconds)``."""
    import importlib

    from numba import cuda

    mod, name, i, cc = job
    _, fn, sig = importlib.import_module(f"rnnlab.kernels.{mod}").kernel_signatures()[i]
    dtype = next(str(a.dtype) for a in sig if hasattr(a, "dtype"))
    start = time.perf_counter()
    with _device_cc(cc):
        cuda.compile_ptx(fn, sig, cc=cc)
    return mod, name, dtype, time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cc", default="9.0", help="compute capability, e.g. 9.0 (H100), 7.5 (T4)")
    parser.add_argument("--workers", type=int, default=1, help="compile in this many processes (default 1)")
    parser.add_argument("--json", metavar="PATH", help="also write the times as JSON")
    args = parser.parse_args(argv)
    cc = tuple(int(x) for x in args.cc.split("."))
    start = time.perf_counter()
    import numba.cuda  # noqa: F401  (its import is not a compilation)
    imported = time.perf_counter() - start
    jobs = [(mod, name, i, cc) for mod, name, i in signatures()]
    start = time.perf_counter()
    if args.workers > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(args.workers) as pool:
            results = list(pool.map(compile_one, jobs))
    else:
        results = [compile_one(job) for job in jobs]
    wall = time.perf_counter() - start
    for mod, name, dtype, s in results:
        print(f"{mod:16s} {name:22s} {dtype:11s} {s:7.2f} s")
    total = sum(r[3] for r in results)
    print(f"{len(results)} signatures for sm_{cc[0]}{cc[1]}: {total:.1f} s of compilation "
          f"(sum), {wall:.1f} s wall-clock with {args.workers} worker(s); numba.cuda import {imported:.1f} s; "
          f"{os.cpu_count()} CPUs here")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(
            {"cc": list(cc), "workers": args.workers, "wall_s": wall, "sum_s": total,
             "kernels": [dict(zip(("module", "kernel", "dtype", "seconds"), r)) for r in results]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
