"""Benchmark of :func:`rnnlab.kernels.recurrent_cell`: ``python -m rnnlab.bench cells``.

For every cell (rnn, lstm, gru, cfc), sequence length ``T`` and backend
(``cpu``, plus ``cuda`` on a GPU), one row times, interleaved in one run
(:func:`rnnlab.bench.timing.time_calls`), the forward and backward pass of a
recurrent layer ``x (B, T, I) -> hs (B, T, H)`` three ways:

``ref``     the readable torch reference: ``xp = linear(x, W_ih, b)`` (the
            input projection ``x W_ihᵀ + b``, one matrix product for all steps),
            then :func:`rnnlab.kernels.recurrent_cell_ref` (a Python loop over
            time), differentiated by autograd;
``kernel``  the same projection, then ``recurrent_cell(..., backend=...)``: the
            numba kernels and their hand-written backward;
``nn``      ``torch.nn.RNN`` (tanh), ``torch.nn.LSTM`` or ``torch.nn.GRU`` of the
            same sizes (``batch_first=True``), which includes its own input
            projection. The CfC has no torch module: it is compared with
            ``torch.nn.GRU``, which has three gates too;
``proj``    the input projection alone, ``linear(x, W_ih, b)`` and its
            gradients for ``W_ih`` and ``b``: the part of ``ref`` and ``kernel``
            that no recurrence kernel touches, so ``kernel >= proj`` and
            ``ref / kernel <= ref / proj`` (``ref_over_proj``, the speed-up a
            free recurrence would give).

"Forward and backward" is the layer's outputs ``hs`` followed by
``torch.autograd.grad(hs, params, g)`` for a fixed random ``g``, ``params``
being every weight and bias of the layer and the initial state ``h0`` (and
``c0``); the input ``x`` needs no gradient. Nothing else (no loss, no
read-out) is timed.

Ratios: ``ref_over_kernel`` (how many times faster the kernel is than the
reference loop) and ``kernel_over_nn`` (the kernel's time over torch.nn's:
below 1, faster). :data:`TARGETS`, the goals of the issue that introduced the
kernels, apply to the CPU rows: at least 5x faster than the reference, and
within 1.5x of torch.nn. Times are the best (minimum) of the repeated calls by
default (``--stat``).

What bounds the CPU kernel's row at these sizes: the input projection and the
matrices' gradient (matrix products by torch, outside the kernels) are a
large share of ``kernel`` (the ``proj`` column); torch.nn.LSTM on a CPU runs
as one fused oneDNN primitive, whose matrix products may be faster than the
BLAS behind ``linear`` (they are on AMD CPUs with MKL).

On a CPU shared with other programs, timings with several threads can be
badly distorted (idle OpenMP threads of torch and numba spin; torch's RNNs
synchronise their threads at every step): run with ``--threads 1`` or with
``OMP_WAIT_POLICY=PASSIVE`` in the environment; the table adds a note when
neither holds.

From Python::

    from rnnlab.bench import cells
    rows = cells.run(quick=True)
    print(cells.format_table(rows))
"""
import gc
import math
import os
import sys

import torch

from . import (Column, Target, check_targets, format_ratio, format_seconds, positive_int as _positive_int,
               ratio_with_verdict, render_table, verdict_counts)
from .device import SIMULATOR_NOTE, cuda_runs_here, tensor_device
from .timing import match_thread_pools, time_calls

__all__ = ["run", "format_table", "TARGETS", "KINDS", "DEFAULT_T", "DEFAULT_SIZE", "QUICK_T", "QUICK_SIZE",
           "NN_MODULES"]

DESCRIPTION = ("recurrent_cell (rnn/lstm/gru/cfc; cpu/cuda kernels) against autograd through the torch reference "
               "and torch.nn.RNN/LSTM/GRU")

KINDS = ("rnn", "lstm", "gru", "cfc")
DEFAULT_T = (64, 1000)
DEFAULT_SIZE = dict(batch_size=32, input_size=256, hidden_size=64)
QUICK_T = (8, 16)
QUICK_SIZE = dict(batch_size=4, input_size=16, hidden_size=8)
BACKENDS = ("cpu", "cuda")
NN_MODULES = {"rnn": "RNN", "lstm": "LSTM", "gru": "GRU", "cfc": "GRU"}

_SETTINGS = {
    False: dict(warmup=1, min_repeats=3, min_time=1.0),
    True: dict(warmup=1, min_repeats=1, min_time=0.0),
}


def _cpu(row):
    return row["backend"] == "cpu"


TARGETS = (
    Target("ref_over_kernel", ">=", 5.0,
           "cpu kernel forward+backward at least 5x faster than autograd through the torch reference", _cpu),
    Target("kernel_over_nn", "<=", 1.5,
           "cpu kernel forward+backward within 1.5x of torch.nn.RNN/LSTM/GRU of the same size", _cpu),
)


def default_backends():
    """``("cpu",)``, plus ``"cuda"`` when a GPU is present."""
    return ("cpu", "cuda") if torch.cuda.is_available() else ("cpu",)


# ---------------------------------------------------------------- the three layers

def _layer(kind, I, H, B, dtype, device, seed):
    """The parameters of the op's layer ``(W_ih, b, W, h0[, c0])`` and the torch.nn module, initialised alike
    (uniform in ±1/√H, torch's default); ``h0``, ``c0`` small random states that need gradients."""
    from rnnlab.kernels.cells_torch import GATES

    gen = torch.Generator().manual_seed(seed)
    G = GATES[kind]
    k = 1.0 / math.sqrt(H)

    def uniform(*shape):
        return ((torch.rand(*shape, generator=gen) * 2 - 1) * k).to(device, dtype).requires_grad_()

    params = [uniform(G * H, I), uniform(G * H), uniform(G, H, H), uniform(B, H)]
    if kind == "lstm":
        params.append(uniform(B, H))
    module = getattr(torch.nn, NN_MODULES[kind])(I, H, batch_first=True).to(device, dtype)    # (RNN: tanh)
    return params, module


def _op_call(kind, x, params, g, backend):
    """Forward and backward of projection + ``recurrent_cell`` (``backend=None``: the reference loop)."""
    from rnnlab.kernels import recurrent_cell, recurrent_cell_ref

    B, T, _ = x.shape
    W_ih, b, W = params[:3]
    G, H = W.shape[0], W.shape[1]
    state = params[3:] if kind == "lstm" else params[3:] + [None]

    def call():
        xp = torch.nn.functional.linear(x, W_ih, b).view(B, T, G, H)
        if backend is None:
            hs, _ = recurrent_cell_ref(kind, xp, W, *state)
        else:
            hs, _ = recurrent_cell(kind, xp, W, *state, backend=backend)
        return torch.autograd.grad(hs, params, g)
    return call


def _proj_call(x, params):
    W_ih, b = params[:2]
    gp = torch.randn(x.shape[:2] + (W_ih.shape[0],), generator=torch.Generator().manual_seed(1)).to(x)

    def call():
        return torch.autograd.grad(torch.nn.functional.linear(x, W_ih, b), (W_ih, b), gp)
    return call


def _nn_call(kind, x, module, params, g):
    h0 = params[3].detach().unsqueeze(0).requires_grad_()
    hx = (h0, params[4].detach().unsqueeze(0).requires_grad_()) if kind == "lstm" else h0
    inputs = list(module.parameters()) + ([hx[0], hx[1]] if kind == "lstm" else [hx])

    def call():
        hs, _ = module(x, hx)
        return torch.autograd.grad(hs, inputs, g)
    return call


def _ratio(num, den):
    return None if num is None or den is None or den <= 0 else num / den


def run(T=None, kinds=KINDS, backends=None, *, batch_size=None, input_size=None, hidden_size=None,
        dtype="float32", quick=False, stat="min", reference=True, seed=0, threads=None, progress=None, **timing):
    """Time the three layers; one dict per (backend, kind, T).

    ``T`` defaults to :data:`DEFAULT_T` (:data:`QUICK_T` if ``quick``); the sizes to
    :data:`DEFAULT_SIZE` (:data:`QUICK_SIZE`); ``reference=False`` skips the reference loop;
    ``**timing`` overrides ``warmup``, ``min_repeats``, ``min_time``. Keys of a row: the
    configuration, ``ref_s``, ``kernel_s``, ``nn_s``, ``proj_s`` (seconds, the ``stat`` of the calls),
    ``ref_over_kernel``, ``kernel_over_nn``, ``ref_over_proj``, ``proj_over_nn``, ``nn_module``,
    ``timings`` and ``targets``.
    """
    settings = dict(_SETTINGS[bool(quick)])
    unknown = set(timing) - set(settings)
    if unknown:
        raise TypeError(f"cells.run: unknown timing settings {sorted(unknown)}; expected some of {sorted(settings)}")
    settings.update(timing)
    size = QUICK_SIZE if quick else DEFAULT_SIZE
    B = size["batch_size"] if batch_size is None else int(batch_size)
    I = size["input_size"] if input_size is None else int(input_size)
    H = size["hidden_size"] if hidden_size is None else int(hidden_size)
    T = (QUICK_T if quick else DEFAULT_T) if T is None else ((T,) if isinstance(T, int) else tuple(T))
    backends = default_backends() if backends is None else tuple(backends)
    kinds = tuple(kinds)
    if not T or any(not isinstance(t, int) or t < 1 for t in T) or min(B, I, H) < 1:
        raise ValueError(f"cells.run: T, batch_size, input_size and hidden_size must be positive integers, "
                         f"got {T}, {B}, {I}, {H}")
    if not kinds or any(k not in KINDS for k in kinds):
        raise ValueError(f"cells.run: kinds must be among {KINDS}, got {kinds!r}")
    if not backends or any(b not in BACKENDS for b in backends):
        raise ValueError(f"cells.run: backends must be among {BACKENDS}, got {backends!r}")
    if "cuda" in backends and not cuda_runs_here():
        raise RuntimeError("cells.run: backend 'cuda' needs a GPU")
    if dtype not in ("float32", "float64"):
        raise ValueError(f"cells.run: dtype must be 'float32' or 'float64', got {dtype!r}")
    if stat not in ("median", "min", "mean"):
        raise ValueError(f"cells.run: stat must be 'median', 'min' or 'mean', got {stat!r}")
    threads = match_thread_pools(threads)
    dt = getattr(torch, dtype)

    rows = []
    total, done = len(backends) * len(kinds) * len(T), 0
    for backend in backends:
        label = "cuda" if backend == "cuda" else "cpu"
        device = tensor_device(label)       # "cpu" for the cuda rows under numba's simulator
        for kind in kinds:
            for t in T:
                done += 1
                if progress is not None:
                    progress(f"[{done}/{total}] {backend} {kind} T={t} B={B} I={I} H={H} {dtype}")
                gen = torch.Generator().manual_seed(seed + t)
                x = torch.randn(B, t, I, generator=gen).to(device, dt)
                g = torch.randn(B, t, H, generator=gen).to(device, dt)
                params, module = _layer(kind, I, H, B, dt, device, seed)
                fns = {"kernel": _op_call(kind, x, params, g, backend), "nn": _nn_call(kind, x, module, params, g),
                       "proj": _proj_call(x, params)}
                if reference:
                    fns["ref"] = _op_call(kind, x, params, g, None)
                timings = time_calls(fns, warmup=settings["warmup"], min_repeats=settings["min_repeats"],
                                     min_time=settings["min_time"], device=device)
                row = {"benchmark": "cells", "backend": backend, "device": label, "kind": kind, "T": t, "B": B,
                       "I": I, "H": H, "dtype": dtype, "stat": stat, "threads": threads,
                       "nn_module": f"torch.nn.{NN_MODULES[kind]}"}
                if device != label:
                    row["simulator"] = True
                for name in ("ref", "kernel", "nn", "proj"):
                    row[f"{name}_s"] = timings[name].stat(stat) if name in timings else None
                row["ref_over_kernel"] = _ratio(row["ref_s"], row["kernel_s"])
                row["kernel_over_nn"] = _ratio(row["kernel_s"], row["nn_s"])
                row["ref_over_proj"] = _ratio(row["ref_s"], row["proj_s"])
                row["proj_over_nn"] = _ratio(row["proj_s"], row["nn_s"])
                row["timings"] = {k: v.as_dict() for k, v in timings.items()}
                row["targets"] = check_targets(row, TARGETS)
                rows.append(row)
                del x, g, params, module, fns
                gc.collect()
    return rows


# ---------------------------------------------------------------- table

def _spin_warning(rows):
    if not any(r["device"] == "cpu" and (r.get("threads") or 1) > 1 for r in rows):
        return None
    if os.environ.get("OMP_WAIT_POLICY", "").lower() == "passive":
        return None
    return ("note: CPU timings with more than one thread and OMP_WAIT_POLICY unset can be badly distorted on a busy "
            "machine (idle OpenMP threads spin; torch's RNNs synchronise threads at every step); for trustworthy "
            "ratios rerun with OMP_WAIT_POLICY=PASSIVE in the environment, or with --threads 1.")


def format_table(rows, title=None):
    rows = list(rows)
    columns = [
        Column("backend", lambda r: r["backend"], "<"),
        Column("kind", lambda r: r["kind"], "<"),
        Column("T", lambda r: r["T"]),
        Column("BxIxH", lambda r: f"{r['B']}x{r['I']}x{r['H']}"),
        Column("ref f+b", lambda r: format_seconds(r["ref_s"])),
        Column("kernel f+b", lambda r: format_seconds(r["kernel_s"])),
        Column("torch.nn f+b", lambda r: format_seconds(r["nn_s"])),
        Column("torch.nn", lambda r: r["nn_module"].split(".")[-1] + ("*" if r["kind"] == "cfc" else ""), "<"),
        Column("proj f+b", lambda r: format_seconds(r["proj_s"])),
        Column("ref/kernel (>=5)", lambda r: ratio_with_verdict(r, "ref_over_kernel")),
        Column("kernel/nn (<=1.5)", lambda r: ratio_with_verdict(r, "kernel_over_nn")),
        Column("ref/proj", lambda r: format_ratio(r["ref_over_proj"])),
        Column("proj/nn", lambda r: format_ratio(r["proj_over_nn"])),
    ]
    stat = rows[0]["stat"] if rows else "min"
    notes = [f"Times: the {stat} of interleaved calls of forward + backward (autograd.grad of hs for all weights, "
             "biases and h0/c0); ref and kernel include the input projection linear(x, W_ih, b).",
             "ref: autograd through recurrent_cell_ref (a Python loop over time); kernel: "
             "recurrent_cell(backend=<backend>); torch.nn: the torch module of the same sizes, batch_first.",
             "* CfC has no torch module: it is compared with torch.nn.GRU (three gates too).",
             "proj: the input projection alone (forward and gradients of W_ih, b), a part of ref and kernel: "
             "ref/proj bounds ref/kernel, proj/nn bounds kernel/nn from below."]
    if any(r["kind"] == "gru" for r in rows):
        notes.append("gru: the op's GRU resets before the recurrent matrix (one bias per gate); torch.nn.GRU "
                     "resets after it (two biases): the same work up to one elementwise product.")
    spin = _spin_warning(rows)
    if spin:
        notes.append(spin)
    notes.append("Targets: " + "; ".join(t.description for t in TARGETS) + ".")
    counts = verdict_counts(rows)
    if counts:
        notes.append("Target verdicts: " + counts)
    if any(r.get("simulator") for r in rows):
        notes.append(SIMULATOR_NOTE)
    return render_table(rows, columns, title=title, notes=notes)


# ---------------------------------------------------------------- command line

def add_arguments(parser):
    """The options of ``python -m rnnlab.bench cells``."""
    parser.add_argument("--quick", action="store_true",
                        help=f"small sizes and one timed call (seconds): T={QUICK_T}, B={QUICK_SIZE['batch_size']}, "
                             f"I={QUICK_SIZE['input_size']}, H={QUICK_SIZE['hidden_size']}")
    parser.add_argument("--T", dest="T", nargs="+", type=_positive_int, metavar="T",
                        help=f"sequence lengths (default {DEFAULT_T})")
    parser.add_argument("--kinds", nargs="+", choices=KINDS, metavar="KIND",
                        help="among rnn, lstm, gru, cfc (default all four)")
    parser.add_argument("--backends", nargs="+", choices=BACKENDS, metavar="BACKEND",
                        help="cpu and/or cuda (default cpu, plus cuda on a GPU)")
    parser.add_argument("--batch-size", type=_positive_int, metavar="B",
                        help=f"batch size (default {DEFAULT_SIZE['batch_size']})")
    parser.add_argument("--input-size", type=_positive_int, metavar="I",
                        help=f"input size (default {DEFAULT_SIZE['input_size']})")
    parser.add_argument("--hidden-size", type=_positive_int, metavar="H",
                        help=f"hidden size (default {DEFAULT_SIZE['hidden_size']})")
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32", help="(default float32)")
    parser.add_argument("--stat", choices=("min", "median", "mean"), default="min",
                        help="statistic of the per-call times (default min: the best of the repeats)")
    parser.add_argument("--min-time", type=float, metavar="S",
                        help=f"seconds of interleaved timing per row (default {_SETTINGS[False]['min_time']})")
    parser.add_argument("--no-reference", dest="reference", action="store_false",
                        help="do not time the torch reference loop (its columns stay empty)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the inputs and weights (default 0)")


def from_args(args, parser=None):
    """Run from parsed arguments; return ``(rows, config)``."""
    backends = args.backends or default_backends()
    if "cuda" in backends and not cuda_runs_here() and parser is not None:
        parser.error("backend cuda cannot run here: no GPU is available")
    timing = {} if args.min_time is None else {"min_time": args.min_time}

    def progress(msg):
        print(msg, file=sys.stderr, flush=True)

    rows = run(T=args.T, kinds=tuple(args.kinds or KINDS), backends=backends, batch_size=args.batch_size,
               input_size=args.input_size, hidden_size=args.hidden_size, dtype=args.dtype, quick=args.quick,
               stat=args.stat, reference=args.reference, seed=args.seed, threads=getattr(args, "threads", None),
               progress=progress, **timing)
    first = rows[0] if rows else {}
    config = {"T": sorted({r["T"] for r in rows}), "kinds": list(args.kinds or KINDS), "backends": list(backends),
              "batch_size": first.get("B"), "input_size": first.get("I"), "hidden_size": first.get("H"),
              "dtype": args.dtype, "quick": args.quick, "stat": args.stat, "reference": args.reference,
              "seed": args.seed, "threads": getattr(args, "threads", None),
              "settings": dict(_SETTINGS[bool(args.quick)], **timing)}
    return rows, config


if __name__ == "__main__":  # pragma: no cover
    from .__main__ import main
    sys.exit(main(["cells"] + sys.argv[1:]))
