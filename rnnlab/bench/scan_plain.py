"""``python -m rnnlab.bench scan-plain``: ``linear_scan`` timed the plain way, in fresh processes.

The ``scan`` benchmark interleaves the kernel with its baselines in one
process whose allocator keeps freed memory (``--allocator reuse``). A user
timing the op does something plainer: a fresh Python process, the
allocator's defaults, the same call back to back. This benchmark does
exactly that, in ``--processes`` fresh processes (nothing is inherited from
this one but the environment), and splits the time of forward+backward
into its parts:

- ``fwd``, ``fb``: ``linear_scan(a, b)`` and forward+backward
  (``torch.autograd.grad`` of ``a`` and ``b``), the median of back-to-back
  calls;
- ``fk``, ``bk``: the CPU backend's forward and backward alone
  (:func:`rnnlab.kernels.scan_cpu.forward` / ``backward``): kernel plus
  output allocation, no autograd;
- ``other``: ``fb - fk - bk`` measured inside the same calls (autograd,
  validation, Python): what is neither kernel;
- ``autograd``: the same ``autograd.grad`` call around a Function that
  returns ready-made tensors, with a 128 MiB pass (not counted) where the
  kernels would run in the cold mode: the part of ``other`` that is
  autograd and Python running from caches the kernels flushed;
- ``same thread``: whether autograd ran the backward on the calling thread
  (a hand-off to another thread would cost a wake-up per call).

Each is measured twice. **warm**: the same inputs again and again, as a
timing loop does; a (16, 1024, 256) float32 forward pass moves 48 MiB, and a
good part of it is still in this machine's 32 MiB L3 cache from the call
before, so it runs faster than memory allows, while the backward (80 MiB)
gains less. **cold**: a 128 MiB pass over an unrelated buffer before every
call evicts the cache, as a training step's other work does; both passes
then run at memory speed.

The ratio to compare with is the traffic ratio. For ``a`` of form BTC the
forward reads ``a`` and ``b`` and writes ``h`` (3 arrays); the backward
reads ``a``, ``h``, ``g`` and writes ``G`` and ``grad_a`` (5): 8/3 = 2.67.
For ``a`` of form C (shared, negligible): 2 and 3 arrays, 5/2 = 2.5.

What this found at (16, 1024, 256) float32 (2 cores, 32 MiB L3): autograd
runs the backward on the calling thread (no hand-off), nothing is copied,
and the kernels' ratio with the cache evicted is the traffic ratio. Two
things pushed the warm plain ratio above it: the warm forward pass runs
partly from the L3 cache while the backward gains less, and about
0.3-0.6 ms per call is neither kernel (validation, autograd, and Python that
runs with caches just flushed by the kernels), against a forward pass of
about 1 ms (at tiny sizes all of it costs 70 us).

History: what the CPU kernel's design choices (:mod:`rnnlab.kernels.scan_cpu`)
were measured to buy when they were made, on a 2-core machine (timings go
stale; rerun ``python -m rnnlab.bench scan`` and this benchmark):

- channels walked in the direction time runs (prefetchers follow one stream):
  reverse scans 1.4x faster for float32, 1.6x for complex64;
- unsigned channel indices (no negative-index check in the inner loop, which
  kept LLVM from vectorising it): 1.7x faster for float32;
- the direction of time a compile-time constant: the backward kernel at
  (16, 1024, 256) took 5-14x the forward kernel's time for float32 and
  1.8-10x for complex64 while the direction was a run-time argument, against
  1.3-2.3x after (it moves 5 arrays to the forward pass's 3);
- large outputs reusing freed outputs' memory
  (:mod:`rnnlab.kernels._outputs`): a fresh block page-faults on each 4 KiB
  page when first written, about 0.4 ms per MiB there. At (16, 1024, 256) a
  complex64 forward pass took 12-25 ms with a fresh 32 MiB output and 2-3 ms
  with reuse; with float32 (16 MiB outputs) forward+backward faulted 0-27 MiB
  per call depending on the process, the main reason its time varied from 3x
  to 10x the forward pass's from one process to the next. Counted again when
  the pool moved to its own module (page faults per call, allocator defaults,
  median of 6 calls): glibc raises its mmap threshold after the first free of
  a large block, up to 32 MiB, so outputs below that mostly come back from its
  heap without faults, pool or not; at 32 MiB per array (16, 1024, 256)
  complex64 a forward pass faulted 8193 times (every page of ``h``) without
  the pool and 0 with it, forward+backward 32772 times against 8193 (the
  rest is torch's own allocations).
"""
import json
import statistics
import subprocess
import sys

DESCRIPTION = ("linear_scan forward+backward against forward, timed plainly (fresh processes, default "
               "allocator, back-to-back calls), warm and with the cache evicted, split into kernels and the rest")

TRAFFIC_RATIO = {"BTC": 8 / 3, "TC": 8 / 3, "C": 5 / 2}
FLUSH_BYTES = 128 << 20


def _child(cfg):
    """Run in a fresh process: time one (dtype, form of a) plainly; return a dict of medians in seconds."""
    import threading
    import time

    import torch

    from rnnlab import linear_scan
    from rnnlab.kernels import scan_cpu

    from .scan import DTYPES, fwdbwd as _fwdbwd, inputs as _inputs

    if cfg.get("threads"):
        torch.set_num_threads(cfg["threads"])
    a, b, g = _inputs(cfg["B"], cfg["T"], cfg["C"], DTYPES[cfg["dtype"]], "cpu", cfg["seed"], cfg["a_form"])
    a3 = a.reshape((1,) * (3 - a.dim()) + tuple(a.shape)).contiguous()     # (Ba, Ta, C), as linear_scan passes it
    h = scan_cpu.forward(a3, b, None, False)
    junk = torch.zeros(FLUSH_BYTES // 4)

    # Time the kernels inside forward+backward too, and see which thread runs the backward.
    parts, threads = {}, set()
    forward, backward = scan_cpu.forward, scan_cpu.backward

    def timed_forward(*args):
        t = time.perf_counter()
        out = forward(*args)
        parts["fk"] = time.perf_counter() - t
        return out

    def timed_backward(*args):
        threads.add(threading.get_ident())
        t = time.perf_counter()
        out = backward(*args)
        parts["bk"] = time.perf_counter() - t
        return out

    fns = {"fwd": lambda: linear_scan(a, b), "fb": _fwdbwd(a, b, g, "cpu"),
           "fk": lambda: forward(a3, b, None, False), "bk": lambda: backward(a3, h, g, None, False)}
    out = {}
    for mode in ("warm", "cold"):
        for name, fn in fns.items():
            fn(), fn()                                     # compile, first allocations
            times, others = [], []
            for _ in range(cfg["repeats"]):
                if mode == "cold":
                    junk.add_(1.0)
                if name == "fb":
                    scan_cpu.forward, scan_cpu.backward = timed_forward, timed_backward
                t = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t)
                if name == "fb":
                    scan_cpu.forward, scan_cpu.backward = forward, backward
                    others.append(times[-1] - parts["fk"] - parts["bk"])
            out[f"{mode}_{name}"] = statistics.median(times)
            if others:
                out[f"{mode}_other"] = statistics.median(others)
    out["same_thread"] = threads == {threading.get_ident()}
    out.update(_autograd_alone(a, b, g, junk, cfg["repeats"]))
    return out


def _autograd_alone(a, b, g, junk, repeats):
    """What autograd and Python cost around two kernels, with no scan: a Function
    returning ready-made tensors, warm, and with a pass over ``junk`` (timed and
    subtracted) in its forward and backward, standing in for kernels that
    stream tens of MiB and so flush the caches the interpreter runs from."""
    import time

    import torch

    a, b = a.detach().requires_grad_(True), b.detach().requires_grad_(True)
    out = {}
    for mode in ("warm", "cold"):
        spent = [0.0]

        def stand_in():
            if mode == "cold":
                t = time.perf_counter()
                junk.add_(1.0)
                spent[0] += time.perf_counter() - t

        class Alone(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a_, b_):
                stand_in()
                ctx.save_for_backward(a_)
                return ready[0]

            @staticmethod
            def backward(ctx, grad):
                stand_in()
                return ready[1], ready[2]

        ready = [torch.empty_like(g) for _ in range(3)]     # the output and the two gradients
        times = []
        for _ in range(repeats + 2):
            spent[0] = 0.0
            t = time.perf_counter()
            torch.autograd.grad(Alone.apply(a, b), (a, b), g)
            times.append(time.perf_counter() - t - spent[0])
        out[f"{mode}_autograd"] = statistics.median(times[2:])
    return out



def _spawn(cfg):
    code = ("import json, sys; from rnnlab.bench.scan_plain import _child; "
            "print(json.dumps(_child(json.loads(sys.argv[1]))))")
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(cfg)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"scan-plain: the child process failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run(T=1024, B=16, C=256, dtypes=("float32", "complex64"), a_forms=("BTC", "C"), *, processes=5,
        repeats=20, threads=None, seed=0, progress=None):
    """Time ``linear_scan`` plainly in ``processes`` fresh processes per (dtype, form of ``a``).

    Returns one row per (dtype, form, mode) with the median over processes of
    each part (seconds), the per-process ratios ``fb/fwd`` and
    ``(fk+bk)/fk`` (list, one per process) and the traffic ratio.
    """
    from .scan import A_FORMS, DTYPES

    for name, value in (("T", T), ("B", B), ("C", C), ("processes", processes), ("repeats", repeats)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"scan-plain: {name} must be a positive integer, got {value!r}")
    for d in dtypes:
        if d not in DTYPES:
            raise ValueError(f"scan-plain: dtypes must be among {sorted(DTYPES)}, got {d!r}")
    for f in a_forms:
        if f not in A_FORMS:
            raise ValueError(f"scan-plain: a_forms must be among {A_FORMS}, got {f!r}")
    rows = []
    for dtype in dtypes:
        for a_form in a_forms:
            cfg = dict(T=T, B=B, C=C, dtype=dtype, a_form=a_form, repeats=repeats, threads=threads, seed=seed)
            runs = []
            for k in range(processes):
                if progress is not None:
                    progress(f"{dtype} a={a_form}: process {k + 1}/{processes}")
                runs.append(_spawn(cfg))
            for mode in ("warm", "cold"):
                row = {"benchmark": "scan-plain", "dtype": dtype, "a": a_form, "mode": mode, "T": T, "B": B,
                       "C": C, "processes": processes, "repeats": repeats,
                       "traffic_ratio": TRAFFIC_RATIO[a_form],
                       "same_thread": all(r["same_thread"] for r in runs)}
                for part in ("fwd", "fb", "fk", "bk", "other", "autograd"):
                    row[f"{part}_s"] = statistics.median(r[f"{mode}_{part}"] for r in runs)
                row["fb_over_fwd"] = [r[f"{mode}_fb"] / r[f"{mode}_fwd"] for r in runs]
                row["kernels_over_fk"] = [(r[f"{mode}_fk"] + r[f"{mode}_bk"]) / r[f"{mode}_fk"] for r in runs]
                rows.append(row)
    return rows


def _spread(values):
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def format_table(rows, *, title=None):
    head = ("dtype", "a", "cache", "fwd", "fb", "fk", "bk", "other", "autograd", "fb/fwd: median (range)",
            "(fk+bk)/fk", "traffic", "same thread")
    body = [(r["dtype"], r["a"], r["mode"], *(f"{r[k] * 1e3:.2f}" for k in ("fwd_s", "fb_s", "fk_s", "bk_s",
                                                                        "other_s", "autograd_s")),
             _spread(r["fb_over_fwd"]), _spread(r["kernels_over_fk"]), f"{r['traffic_ratio']:.2f}",
             "yes" if r["same_thread"] else "NO") for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    lines = [title] if title else []
    lines += ["  ".join(str(x).ljust(w) for x, w in zip(line, widths)).rstrip() for line in (head, *body)]
    lines.insert(2 if title else 1, "  ".join("-" * w for w in widths))
    if rows:
        r = rows[0]
        lines.append(
            f"\nTimes in ms, medians over {r['processes']} fresh processes of the median of {r['repeats']} "
            f"back-to-back calls; (B, T, C) = ({r['B']}, {r['T']}, {r['C']}). fb = forward+backward; fk, bk = "
            "the CPU backend's forward and backward alone; other = fb - fk - bk inside the same calls; "
            "autograd = the same autograd calls around a Function with no scan (cold: with a 128 MiB pass, "
            "not counted, where the kernels would run); "
            "cold = a 128 MiB pass evicts the cache before every call; traffic = the ratio of arrays "
            "moved (8/3 for a of form BTC, 5/2 for C); same thread = autograd ran the backward on the "
            "calling thread.")
    return "\n".join(lines)


def add_arguments(parser):
    from . import positive_int as _positive_int
    parser.add_argument("--T", type=_positive_int, default=1024, help="sequence length (default 1024)")
    parser.add_argument("--B", type=_positive_int, default=16, help="batch size (default 16)")
    parser.add_argument("--C", type=_positive_int, default=256, help="channels (default 256)")
    parser.add_argument("--dtypes", nargs="+", default=["float32", "complex64"], help="default float32 complex64")
    parser.add_argument("--a-forms", nargs="+", default=["BTC", "C"], help="forms of a (default BTC C)")
    parser.add_argument("--processes", type=_positive_int, default=5, help="fresh processes per row (default 5)")
    parser.add_argument("--repeats", type=_positive_int, default=20,
                        help="back-to-back calls per part and process (default 20)")


def from_args(args, parser=None):
    def progress(msg):
        print(msg, file=sys.stderr, flush=True)
    try:
        rows = run(T=args.T, B=args.B, C=args.C, dtypes=tuple(args.dtypes), a_forms=tuple(args.a_forms),
                   processes=args.processes, repeats=args.repeats, threads=args.threads, progress=progress)
    except ValueError as e:
        if parser is None:
            raise
        parser.error(str(e))
    config = {k: getattr(args, k) for k in ("T", "B", "C", "dtypes", "a_forms", "processes", "repeats", "threads")}
    return rows, config
