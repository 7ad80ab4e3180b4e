"""Benchmark of :func:`rnnlab.linear_scan`: ``python -m rnnlab.bench scan``.

For every sequence length ``T``, size ``(B, C)``, dtype, form of ``a`` and
backend, one row holds the kernel's times and its baselines, all timed in the
same run. The form of ``a`` (row key ``a``) is ``BTC`` (a time-varying
``(B, T, C)`` transition, the default), ``TC`` (shared over the batch) or
``C`` (time-invariant, ``(C,)``, as in the LDS models):

``fwd``            ``linear_scan(a, b, backend=...)``, inputs not requiring grad.
``fwdbwd``         forward and backward: ``torch.autograd.grad(h, (a, b), g)``.
``floor``          the memory floor, ``torch.addcmul(b, a, b, out=h)``: one
                   elementwise pass that reads ``a`` and ``b`` and writes ``h``,
                   the traffic of a scan, which no scan can beat.
``floor_alloc``    the same pass allocating its output, ``torch.addcmul(b, a, b)``,
                   as ``linear_scan`` must (it shows what allocation costs).
``floor_fwdbwd``   a floor for forward+backward: the forward floor plus two
                   elementwise passes with the backward's traffic,
                   ``addcmul(g, a, g, out=G)`` and ``mul(G, h, out=grad_a)``
                   (they read a, g, G, h and write G, grad_a: 9 tensor passes in
                   all, against the 8 that fwd+bwd needs at least, so slightly
                   generous to the kernel). For ``a`` of form ``C`` the
                   backward reads g and h and writes G only (the kernel sums
                   the gradient of ``a`` as it goes): one pass
                   ``addcmul(g, a, h, out=G)`` (5 tensor passes in all, as
                   fwd+bwd).
``cumsum``         ``torch.cumsum(b, dim=1)``: torch's own scan along time.
``loop_fwd``,      the torch reference, ``linear_scan(..., backend="torch")``:
``loop_fwdbwd``    a Python loop over time. It is slow, so it gets fewer
                   repeats (``loop_repeats`` in the row). With ``loop_max_T``
                   it is timed on the first ``loop_max_T`` steps only and
                   scaled by ``T / loop_max_T``; such rows say
                   ``loop_extrapolated: true`` and the table marks them ``~``.

Ratios (of the statistic ``stat``, the median by default):
``fwd_over_floor``, ``fwd_over_floor_alloc``, ``fwdbwd_over_fwd``,
``fwdbwd_over_floor_fwdbwd``, ``loop_over_fwd`` (the speed-up over the torch
loop), ``loop_fwdbwd_over_fwdbwd`` and ``cumsum_over_fwd``.

:data:`TARGETS` are the goals of the issue that introduced the CPU kernel,
for the ``cpu`` backend on the project's 2-core machine: forward within
1.5x of the floor for float32 and 1.3x for complex64; at least 50x faster
than the torch loop at T = 1024; forward+backward within 3x of forward.
Each row records its verdicts in ``row["targets"]``.

From Python (the book's speed plot uses small sizes that run in seconds)::

    from rnnlab.bench import scan
    rows = scan.run(T=(256, 1024), sizes=((4, 64),), dtypes=("float32",), quick=True)
    print(scan.format_table(rows))
    [(r["T"], r["fwd_s"], r["floor_s"], r["loop_fwd_s"]) for r in rows]
"""
import gc
import importlib.util
import math
import sys

import torch

from . import (Column, Target, check_targets, format_ratio, format_seconds, positive_int as _positive_int,
               render_table, verdict_counts)
from .device import SIMULATOR_NOTE, cuda_runs_here, simulator, tensor_device
from .timing import available_memory_bytes, match_thread_pools, time_calls

__all__ = ["run", "format_table", "TARGETS", "DEFAULT_T", "DEFAULT_SIZES", "DEFAULT_DTYPES", "A_FORMS",
           "QUICK_T", "QUICK_SIZES", "DTYPES", "available_backends", "default_backends"]

DESCRIPTION = "linear_scan (cpu/cuda) against the torch loop, torch.cumsum and the memory floor"

DEFAULT_T = (256, 1024, 4096)
DEFAULT_SIZES = ((4, 64), (16, 256), (32, 512))  # (B, C): B*C = 256, 4096, 16384
DEFAULT_DTYPES = ("float32", "complex64")
# Forms of a: time-varying (B, T, C), shared over the batch (T, C), time-invariant (C,).
A_FORMS = ("BTC", "TC", "C")
DEFAULT_A_FORMS = ("BTC",)
QUICK_T = (256, 1024)
QUICK_SIZES = ((4, 32), (8, 128))
DTYPES = {"float32": torch.float32, "float64": torch.float64,
          "complex64": torch.complex64, "complex128": torch.complex128}
BACKENDS = ("cpu", "cuda", "torch")

# Timing settings: (full, quick).
_SETTINGS = {
    False: dict(warmup=2, min_repeats=5, min_time=0.5, cumsum_min_time=0.2,
                loop_min_repeats=3, loop_min_time=0.2),
    True: dict(warmup=1, min_repeats=3, min_time=0.05, cumsum_min_time=0.02,
               loop_min_repeats=1, loop_min_time=0.0),
}

# Peak number of (B, T, C) tensors alive at once while measuring one row (with margin).
_TENSORS_ALIVE = 12


def _is_cpu_kernel(row):
    return row["backend"] == "cpu"


TARGETS = (
    Target("fwd_over_floor", "<=", 1.5, "cpu forward within 1.5x of the memory floor (float32)",
           lambda r: _is_cpu_kernel(r) and r["dtype"] == "float32"),
    Target("fwd_over_floor", "<=", 1.3, "cpu forward within 1.3x of the memory floor (complex64)",
           lambda r: _is_cpu_kernel(r) and r["dtype"] == "complex64"),
    Target("loop_over_fwd", ">=", 50.0, "cpu forward at least 50x faster than the torch loop at T = 1024",
           lambda r: _is_cpu_kernel(r) and r["T"] == 1024),
    Target("fwdbwd_over_fwd", "<=", 3.0, "cpu forward+backward within 3x of forward",
           _is_cpu_kernel),
)


def available_backends():
    """The backends that can run here: ``torch`` always, ``cpu`` once its kernel exists, ``cuda`` on a GPU
    (or in numba's CUDA simulator, :mod:`rnnlab.bench.device`)."""
    out = ["torch"]
    if importlib.util.find_spec("rnnlab.kernels.scan_cpu") is not None:
        out.append("cpu")
    if cuda_runs_here() and importlib.util.find_spec("rnnlab.kernels.scan_cuda") is not None:
        out.append("cuda")
    return tuple(out)


def default_backends():
    """``("cpu",)``, plus ``"cuda"`` when a GPU is present."""
    return ("cpu", "cuda") if torch.cuda.is_available() else ("cpu",)


def _check_run_args(T, sizes, dtypes, backends, stat, loop_max_T, a_forms=DEFAULT_A_FORMS):
    if isinstance(T, int):
        T = (T,)
    T = tuple(T)
    if not T or any(not isinstance(t, int) or isinstance(t, bool) or t < 1 for t in T):
        raise ValueError(f"scan.run: T must be positive integers, got {T!r}")
    try:
        sizes = tuple((int(B), int(C)) for B, C in sizes)
    except (TypeError, ValueError):
        raise ValueError(f"scan.run: sizes must be (B, C) pairs, e.g. ((16, 256),), got {sizes!r}") from None
    if not sizes or any(B < 1 or C < 1 for B, C in sizes):
        raise ValueError(f"scan.run: sizes must be (B, C) pairs of positive integers, got {sizes!r}")
    if isinstance(dtypes, str):
        dtypes = (dtypes,)
    dtypes = tuple(dtypes)
    bad = [d for d in dtypes if d not in DTYPES]
    if not dtypes or bad:
        raise ValueError(f"scan.run: dtypes must be among {tuple(DTYPES)}, got {dtypes!r}")
    if isinstance(backends, str):
        backends = (backends,)
    backends = tuple(backends)
    bad = [b for b in backends if b not in BACKENDS]
    if not backends or bad:
        raise ValueError(f"scan.run: backends must be among {BACKENDS}, got {backends!r}")
    avail = available_backends()
    for b in backends:
        if b not in avail:
            why = {"cpu": "its kernel, rnnlab/kernels/scan_cpu.py, is not installed",
                   "cuda": "no GPU is available (or rnnlab/kernels/scan_cuda.py is missing)"}[b]
            raise RuntimeError(f"scan.run: backend {b!r} cannot run here: {why}; available: {avail}")
    if stat not in ("median", "min", "mean"):
        raise ValueError(f"scan.run: stat must be 'median', 'min' or 'mean', got {stat!r}")
    if loop_max_T is not None and (not isinstance(loop_max_T, int) or loop_max_T < 1):
        raise ValueError(f"scan.run: loop_max_T must be a positive integer or None, got {loop_max_T!r}")
    if isinstance(a_forms, str):
        a_forms = (a_forms,)
    a_forms = tuple(a_forms)
    if not a_forms or any(f not in A_FORMS for f in a_forms):
        raise ValueError(f"scan.run: a_forms must be among {A_FORMS}, got {a_forms!r}")
    return T, sizes, dtypes, backends, a_forms


def _inputs(B, T, C, dtype, device, seed, a_form="BTC"):
    """Seeded ``a`` (modulus in [0.5, 1): states stay O(1), no denormals) of the
    form ``a_form`` (``(B, T, C)``, ``(T, C)`` or ``(C,)``), ``b`` and ``g`` (B, T, C)."""
    gen = torch.Generator().manual_seed(seed)
    shape = {"BTC": (B, T, C), "TC": (T, C), "C": (C,)}[a_form]
    modulus = 0.5 + 0.5 * torch.rand(shape, generator=gen)
    if dtype.is_complex:
        phase = 2 * math.pi * torch.rand(shape, generator=gen)
        a = torch.polar(modulus, phase).to(dtype)
    else:
        a = modulus.to(dtype)
    b = torch.randn(B, T, C, generator=gen, dtype=dtype)
    g = torch.randn(B, T, C, generator=gen, dtype=dtype)
    return a.to(device), b.to(device), g.to(device)


def _fwdbwd(a, b, g, backend):
    a = a.detach().requires_grad_(True)
    b = b.detach().requires_grad_(True)
    from rnnlab import linear_scan

    def call():
        h = linear_scan(a, b, backend=backend)
        return torch.autograd.grad(h, (a, b), g)
    return call


def _measure_baselines(B, T, C, dtype, device, seed, s, loop, loop_max_T, a_form="BTC"):
    """Timings of the baselines of one (B, T, C, dtype, device, form of a), minus those needing a kernel."""
    from rnnlab import linear_scan

    a, b, g = _inputs(B, T, C, dtype, device, seed, a_form)
    h, G, ga = torch.empty_like(b), torch.empty_like(b), torch.empty_like(b)

    def floor():
        torch.addcmul(b, a, b, out=h)

    def floor_fwdbwd():
        torch.addcmul(b, a, b, out=h)
        if a_form == "C":                   # the backward reads g, h and writes G only
            torch.addcmul(g, a, h, out=G)
        else:
            torch.addcmul(g, a, g, out=G)
            torch.mul(G, h, out=ga)

    out = time_calls({"cumsum": lambda: torch.cumsum(b, dim=1)}, warmup=s["warmup"],
                     min_repeats=s["min_repeats"], min_time=s["cumsum_min_time"], device=device)
    info = {"loop_steps": None, "loop_extrapolated": False}
    if loop:
        Tl = T if loop_max_T is None else min(T, loop_max_T)
        al = a if Tl == T or a.dim() == 1 else a[..., :Tl, :].contiguous()
        bl, gl = (x[:, :Tl].contiguous() for x in (b, g)) if Tl < T else (b, g)
        lt = time_calls({"loop_fwd": lambda: linear_scan(al, bl, backend="torch"),
                         "loop_fwdbwd": _fwdbwd(al, bl, gl, "torch")},
                        warmup=1, min_repeats=s["loop_min_repeats"], min_time=s["loop_min_time"],
                        device=device)
        if Tl < T:
            lt = {k: v.scaled(T / Tl) for k, v in lt.items()}
        out.update(lt)
        info = {"loop_steps": Tl, "loop_extrapolated": Tl < T}
    return (a, b, g), {"floor": floor, "floor_fwdbwd": floor_fwdbwd,
                       "floor_alloc": lambda: torch.addcmul(b, a, b)}, out, info


def _ratio(num, den):
    if num is None or den is None or den <= 0:
        return None
    return num / den


def _a_numel(a_form, B, T, C):
    return {"BTC": B * T * C, "TC": T * C, "C": C}[a_form]


def _row(backend, device, dtype_name, T, B, C, stat, timings, info, itemsize, a_form="BTC"):
    def get(name):
        return timings[name].stat(stat) if name in timings else None

    row = {"benchmark": "scan", "backend": backend, "device": str(device), "dtype": dtype_name,
           "T": T, "B": B, "C": C, "a": a_form, "stat": stat, "skipped": None}
    if backend == "cuda" and simulator():
        row["simulator"] = True
    for name in ("fwd", "fwdbwd", "floor", "floor_alloc", "floor_fwdbwd", "cumsum",
                 "loop_fwd", "loop_fwdbwd"):
        row[f"{name}_s"] = get(name)
    row.update(info)
    row["loop_repeats"] = timings["loop_fwd"].n if "loop_fwd" in timings else None
    row["fwd_over_floor"] = _ratio(row["fwd_s"], row["floor_s"])
    row["fwd_over_floor_alloc"] = _ratio(row["fwd_s"], row["floor_alloc_s"])
    row["fwdbwd_over_fwd"] = _ratio(row["fwdbwd_s"], row["fwd_s"])
    row["fwdbwd_over_floor_fwdbwd"] = _ratio(row["fwdbwd_s"], row["floor_fwdbwd_s"])
    row["loop_over_fwd"] = _ratio(row["loop_fwd_s"], row["fwd_s"])
    row["loop_fwdbwd_over_fwdbwd"] = _ratio(row["loop_fwdbwd_s"], row["fwdbwd_s"])
    row["cumsum_over_fwd"] = _ratio(row["cumsum_s"], row["fwd_s"])
    traffic = (_a_numel(a_form, B, T, C) + 2 * B * T * C) * itemsize  # read a, read b, write h
    row["bytes_fwd"] = traffic
    row["fwd_GBps"] = _ratio(traffic / 1e9, row["fwd_s"])
    row["floor_GBps"] = _ratio(traffic / 1e9, row["floor_s"])
    row["timings"] = {k: v.as_dict() for k, v in timings.items()}
    row["targets"] = check_targets(row, TARGETS)
    return row


def _skipped_row(backend, device, dtype_name, T, B, C, stat, reason, a_form="BTC"):
    row = {"benchmark": "scan", "backend": backend, "device": str(device), "dtype": dtype_name,
           "T": T, "B": B, "C": C, "a": a_form, "stat": stat, "skipped": reason, "timings": {}, "targets": {}}
    return row


def run(T=None, sizes=None, dtypes=None, backends=None, *, quick=False, stat="median",
        loop=True, loop_max_T=None, seed=0, threads=None, progress=None, a_forms=None, **timing):
    """Time ``linear_scan`` and its baselines; return one dict per (backend, dtype, T, B, C, form of a).

    Parameters
    ----------
    T : int or sequence of int
        Sequence lengths; default :data:`DEFAULT_T` (:data:`QUICK_T` if ``quick``).
    sizes : sequence of ``(B, C)``
        Batch and channel sizes; default :data:`DEFAULT_SIZES` (:data:`QUICK_SIZES` if ``quick``).
    dtypes : sequence of str
        Among ``float32``, ``float64``, ``complex64``, ``complex128``;
        default :data:`DEFAULT_DTYPES`.
    backends : sequence of str
        ``linear_scan`` backends to time: ``"cpu"``, ``"cuda"``, ``"torch"``;
        default ``("cpu",)`` plus ``"cuda"`` when a GPU is present. A backend
        that cannot run here raises ``RuntimeError``.
    quick : bool
        Small default sizes and short timing budgets (seconds in all):
        fewer repeats, noisier numbers.
    stat : ``"median"``, ``"min"`` or ``"mean"``
        The statistic of the per-call times that the ``*_s`` fields and the
        ratios use (every statistic is in ``row["timings"]``).
    loop : bool
        Time the torch loop (the slowest part); False leaves its fields None.
    loop_max_T : int or None
        Time the torch loop on at most this many steps and scale to ``T``
        (marked ``loop_extrapolated``); None times the full sequence.
    seed : int
        Seed of the random inputs.
    threads : int or None
        Set torch's thread count first; numba's pool is always sized to torch's.
    progress : callable(str) or None
        Called with a short line before each row is measured.
    a_forms : sequence of str or None
        Forms of ``a`` among :data:`A_FORMS`: ``"BTC"`` (time-varying, the
        default), ``"TC"`` (shared over the batch), ``"C"`` (time-invariant).
    **timing
        Overrides of the timing settings: ``warmup``, ``min_repeats``,
        ``min_time`` (seconds of interleaved rounds for the kernel and the
        floors), ``cumsum_min_time``, ``loop_min_repeats``, ``loop_min_time``.

    Returns
    -------
    list of dict, one per row, JSON-ready. Keys: ``benchmark``, ``backend``,
    ``device``, ``dtype``, ``T``, ``B``, ``C``, ``a`` (the form of ``a``), ``stat``, ``skipped`` (None or
    why the row was not measured, e.g. too little memory); times in seconds
    ``fwd_s``, ``fwdbwd_s``, ``floor_s``, ``floor_alloc_s``,
    ``floor_fwdbwd_s``, ``cumsum_s``, ``loop_fwd_s``, ``loop_fwdbwd_s``;
    ``loop_steps``, ``loop_extrapolated``, ``loop_repeats``; the ratios
    listed in the module docstring; ``bytes_fwd``, ``fwd_GBps``,
    ``floor_GBps``; ``timings`` (``{name: {median, q1, q3, iqr, min, mean,
    n}}``) and ``targets`` (``{ratio: {op, limit, value, status,
    description}}``, status ``PASS``/``MISS``).
    """
    settings = dict(_SETTINGS[bool(quick)])
    unknown = set(timing) - set(settings)
    if unknown:
        raise TypeError(f"scan.run: unknown timing settings {sorted(unknown)}; expected some of {sorted(settings)}")
    settings.update(timing)
    T = (QUICK_T if quick else DEFAULT_T) if T is None else T
    sizes = (QUICK_SIZES if quick else DEFAULT_SIZES) if sizes is None else sizes
    dtypes = DEFAULT_DTYPES if dtypes is None else dtypes
    backends = default_backends() if backends is None else backends
    a_forms = DEFAULT_A_FORMS if a_forms is None else a_forms
    T, sizes, dtypes, backends, a_forms = _check_run_args(T, sizes, dtypes, backends, stat, loop_max_T, a_forms)
    match_thread_pools(threads)

    from rnnlab import linear_scan

    # Baselines depend on the device only: measure them once per device and share between backends.
    devices = {}
    for backend in backends:
        devices.setdefault("cuda" if backend == "cuda" else "cpu", []).append(backend)

    rows = []
    total = len(T) * len(sizes) * len(dtypes) * len(a_forms) * len(backends)
    done = 0
    for device, device_backends in devices.items():
        where = tensor_device(device)           # "cpu" for the cuda rows under numba's simulator
        for dtype_name in dtypes:
            dtype = DTYPES[dtype_name]
            itemsize = torch.empty((), dtype=dtype).element_size()
            for t in T:
                for (B, C), a_form in ((size, f) for size in sizes for f in a_forms):
                    need = _TENSORS_ALIVE * B * t * C * itemsize
                    if where == "cpu":
                        avail = available_memory_bytes()
                    else:
                        avail = torch.cuda.mem_get_info()[0]
                    if avail is not None and need > 0.8 * avail:
                        reason = f"needs about {need / 1e9:.1f} GB, {avail / 1e9:.1f} GB available"
                        for backend in device_backends:
                            rows.append(_skipped_row(backend, device, dtype_name, t, B, C, stat, reason, a_form))
                            done += 1
                        continue
                    if progress is not None:
                        k = len(device_backends)
                        which = f"{done + 1}" if k == 1 else f"{done + 1}-{done + k}"
                        progress(f"[{which}/{total}] {'/'.join(device_backends)} {dtype_name} T={t} B={B} C={C} "
                                 f"a={a_form}")
                    (a, b, g), floors, base, info = _measure_baselines(
                        B, t, C, dtype, where, seed, settings, loop, loop_max_T, a_form)
                    for backend in device_backends:
                        done += 1
                        fns = {"fwd": (lambda be=backend: linear_scan(a, b, backend=be)),
                               "fwdbwd": _fwdbwd(a, b, g, backend), **floors}
                        timings = time_calls(fns, warmup=settings["warmup"],
                                             min_repeats=settings["min_repeats"],
                                             min_time=settings["min_time"], device=where)
                        timings.update(base)
                        rows.append(_row(backend, device, dtype_name, t, B, C, stat, timings, info, itemsize,
                                         a_form))
                    del a, b, g, floors
                    gc.collect()
    return rows


# ---------------------------------------------------------------- table

def _verdict(row, key):
    v = (row.get("targets") or {}).get(key)
    if not v:
        return format_ratio(row.get(key))
    return f"{format_ratio(row.get(key))} {v['status']}"


def _loop_cell(row, key):
    if row.get(key) is None:
        return "-"
    text = format_seconds(row[key])
    if row.get("loop_extrapolated"):
        text = "~" + text
    n = row.get("loop_repeats")
    if n is not None and n < 3:
        text += f" (n={n})"
    return text


def _cell(key, fmt):
    return lambda r: "skipped" if r.get("skipped") and key == "fwd_s" else fmt(r.get(key))


def _columns():
    return [
        Column("backend", lambda r: r["backend"], "<"),
        Column("dtype", lambda r: r["dtype"], "<"),
        Column("a", lambda r: r.get("a", "BTC"), "<"),
        Column("T", lambda r: r["T"]),
        Column("BxC", lambda r: f"{r['B']}x{r['C']}"),
        Column("fwd", _cell("fwd_s", format_seconds)),
        Column("floor", _cell("floor_s", format_seconds)),
        Column("fwd/floor", lambda r: _verdict(r, "fwd_over_floor")),
        Column("fwd/floor+alloc", _cell("fwd_over_floor_alloc", format_ratio)),
        Column("fwd+bwd", _cell("fwdbwd_s", format_seconds)),
        Column("fb/fwd", lambda r: _verdict(r, "fwdbwd_over_fwd")),
        Column("fb/fb-floor", _cell("fwdbwd_over_floor_fwdbwd", format_ratio)),
        Column("loop fwd", lambda r: _loop_cell(r, "loop_fwd_s")),
        Column("loop/fwd", lambda r: _verdict(r, "loop_over_fwd")),
        Column("loop fb/fb", _cell("loop_fwdbwd_over_fwdbwd", format_ratio)),
        Column("cumsum", _cell("cumsum_s", format_seconds)),
        Column("cumsum/fwd", _cell("cumsum_over_fwd", format_ratio)),
    ]


def format_table(rows, *, title=None):
    """The rows of :func:`run` as a plain-text table, with a legend and a target summary."""
    rows = list(rows)
    stat = rows[0]["stat"] if rows else "median"
    notes = [
        f"Times: {stat} per call. floor = torch.addcmul(b, a, b, out=h) (reads a, b; writes h: a scan's traffic);",
        "floor+alloc = the same allocating h, as linear_scan does; fb = forward+backward (autograd.grad of a and b);",
        "fb-floor = floor + addcmul(g, a, g, out=G) + mul(G, h, out=grad_a), for a of form C floor + addcmul(g, a, h,",
        "out=G); a = the form of a: BTC (B, T, C), TC (T, C), C (C,); loop = linear_scan(backend='torch');",
        "loop fb/fb = speed-up of the kernel's fwd+bwd over the loop's; cumsum = torch.cumsum(b, dim=1).",
    ]
    if any(r.get("loop_extrapolated") for r in rows):
        notes.append("~ loop timed on the first loop_steps steps and scaled to T (see the JSON).")
    if any((r.get("loop_repeats") or 3) < 3 for r in rows):
        notes.append("(n=k): the loop was timed k times only (after one warm-up call).")
    skipped = [r for r in rows if r.get("skipped")]
    for r in skipped:
        notes.append(f"skipped {r['backend']} {r['dtype']} T={r['T']} {r['B']}x{r['C']}: {r['skipped']}")
    counts = verdict_counts(rows)
    targets = "; ".join(t.description for t in TARGETS)
    notes.append(f"Targets (cpu backend): {targets}.")
    if counts:
        notes.append("Target verdicts: " + counts)
    if any(r.get("simulator") for r in rows):
        notes.append(SIMULATOR_NOTE)
    return render_table(rows, _columns(), title=title, notes=notes)


# ---------------------------------------------------------------- command line

def _positive_float(text):
    import argparse
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a non-negative number of seconds, got {text!r}")
    return value


def _size(text):
    """``BxC`` (e.g. ``16x256``) -> (B, C)."""
    import argparse
    parts = text.lower().replace("*", "x").split("x")
    try:
        B, C = (int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a size BxC such as 16x256, got {text!r}") from None
    if B < 1 or C < 1:
        raise argparse.ArgumentTypeError(f"expected positive B and C in BxC, got {text!r}")
    return (B, C)


def add_arguments(parser):
    """The options of ``python -m rnnlab.bench scan``."""
    parser.add_argument("--quick", action="store_true",
                        help=f"small sizes and short budgets (seconds): T={QUICK_T}, sizes={QUICK_SIZES}")
    parser.add_argument("--T", dest="T", nargs="+", type=_positive_int, metavar="T",
                        help=f"sequence lengths (default {DEFAULT_T})")
    parser.add_argument("--sizes", nargs="+", type=_size, metavar="BxC",
                        help="batch x channels, e.g. 16x256 (default "
                             + " ".join(f"{B}x{C}" for B, C in DEFAULT_SIZES) + ")")
    parser.add_argument("--dtypes", nargs="+", choices=tuple(DTYPES), metavar="DTYPE",
                        help=f"among {', '.join(DTYPES)} (default {' '.join(DEFAULT_DTYPES)})")
    parser.add_argument("--a-forms", nargs="+", choices=A_FORMS, metavar="FORM", dest="a_forms",
                        help="forms of a: BTC (time-varying (B, T, C)), TC (shared over the batch), "
                             "C (time-invariant (C,)) (default BTC)")
    parser.add_argument("--backends", nargs="+", choices=BACKENDS, metavar="BACKEND",
                        help="linear_scan backends to time, among cpu, cuda, torch "
                             "(default cpu, plus cuda on a GPU)")
    parser.add_argument("--stat", choices=("median", "min", "mean"), default="median",
                        help="statistic of the per-call times used for ratios (default median)")
    parser.add_argument("--min-time", type=_positive_float, metavar="S",
                        help="seconds of interleaved timing per row for the kernel and floors "
                             f"(default {_SETTINGS[False]['min_time']}, quick {_SETTINGS[True]['min_time']})")
    parser.add_argument("--no-loop", dest="loop", action="store_false",
                        help="do not time the torch loop (its columns stay empty)")
    parser.add_argument("--loop-max-T", type=_positive_int, metavar="N",
                        help="time the torch loop on at most N steps and scale to T (marked ~)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")


def from_args(args, parser=None):
    """Run from parsed arguments; return ``(rows, config)``."""
    backends = args.backends or default_backends()
    avail = available_backends()
    missing = [b for b in backends if b not in avail]
    if missing and parser is not None:
        parser.error(f"backend(s) {', '.join(missing)} cannot run here (available: {', '.join(avail)}); "
                     "cuda needs a GPU, cpu needs rnnlab/kernels/scan_cpu.py")
    timing = {}
    if args.min_time is not None:
        timing["min_time"] = args.min_time
    a_forms = getattr(args, "a_forms", None)
    config = {"T": args.T, "sizes": args.sizes, "dtypes": args.dtypes, "backends": list(backends),
              "a_forms": list(a_forms or DEFAULT_A_FORMS),
              "quick": args.quick, "stat": args.stat, "loop": args.loop, "loop_max_T": args.loop_max_T,
              "seed": args.seed, "threads": getattr(args, "threads", None), **timing}

    def progress(msg):
        print(msg, file=sys.stderr, flush=True)

    rows = run(T=args.T, sizes=args.sizes, dtypes=args.dtypes, backends=backends, quick=args.quick,
               stat=args.stat, loop=args.loop, loop_max_T=args.loop_max_T, seed=args.seed,
               threads=getattr(args, "threads", None), progress=progress, a_forms=a_forms, **timing)
    settings = dict(_SETTINGS[bool(args.quick)], **timing)
    config.update(T=sorted({r["T"] for r in rows}), settings=settings,
                  sizes=[[B, C] for B, C in dict.fromkeys((r["B"], r["C"]) for r in rows)],
                  dtypes=list(dict.fromkeys(r["dtype"] for r in rows)))
    return rows, config


if __name__ == "__main__":  # pragma: no cover
    from .__main__ import main
    sys.exit(main(["scan"] + sys.argv[1:]))


inputs, fwdbwd = _inputs, _fwdbwd      # public, for rnnlab.bench.scan_plain
