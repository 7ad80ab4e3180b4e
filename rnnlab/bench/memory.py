"""Benchmark of :func:`rnnlab.neural_memory`: ``python -m rnnlab.bench memory``.

For every kind (stack, queue, deque), sequence length ``T`` and backend
(``cpu``, plus ``cuda`` on a GPU), one row holds, from one interleaved timing
run on inputs ``v (B, T, m)`` (deque ``(B, T, 2, m)``) and controls in (0, 1):

``fwd``           ``neural_memory(kind, v, d, u, backend=...)``, inputs not requiring grad.
``fwdbwd``        forward and backward: ``torch.autograd.grad`` of a weighted
                  sum of the reads and strengths with respect to ``v, d, u``
                  (the hand-written backward).
``steps_fwdbwd``  the same through the step API, ``NeuralMemory.step`` T times
                  (a Python call and a kernel launch per step, as a controller does).
``ref_fwd``,      the readable torch reference ``neural_memory_ref`` (a loop over
``ref_fwdbwd``    time), differentiated by autograd: what an unfused
                  implementation costs.

Ratios: ``ref_fwdbwd_over_fwdbwd`` and ``ref_fwd_over_fwd`` (speed-ups of
the kernel over the reference), ``fwdbwd_over_fwd``, ``steps_over_fwdbwd``
(the step API's cost over the whole-sequence op).

Memory (no timing involved): the bytes autograd keeps for the backward pass,
measured as the distinct tensor storages passed to
``torch.autograd.graph.saved_tensors_hooks`` during one forward pass (inputs
included, each storage counted once, views of one storage counted once).
``tracemalloc`` does not see torch's allocations, and RSS deltas are blurred
by the allocator, so the saved storages are the measure. Columns:

``saved_kernel_bytes``  the op: the values once (``B·T·m`` or ``2·B·T·m``), the
                        strengths ``B·T·W`` and the controls;
``saved_steps_bytes``   the step API: per step the strengths and controls, plus
                        the value buffer the object owns (``NeuralMemory.value_buffer_bytes``);
``saved_ref_bytes``     autograd through the reference (its values sit in one
                        buffer too; the per-step intermediates are O(B·T²));
``saved_copy_bytes``    a copy-per-step implementation (:func:`copy_per_step`):
                        the memory matrix ``V_t`` built anew at every step by
                        concatenation, as eq. 1 and 6 write it and as many ports
                        do. Autograd keeps every ``V_t``: ``Σ_t B·t·m`` values,
                        O(B·T²·m).
``values_bytes``        ``B·R·m`` values of one memory (``R = T``, deque ``2T``).

From Python::

    from rnnlab.bench import memory
    rows = memory.run(T=(16,), quick=True)
    print(memory.format_table(rows))
"""
import gc
import sys

import torch

from . import Column, format_ratio, format_seconds, positive_int as _positive_int, render_table
from .timing import match_thread_pools, time_calls

__all__ = ["run", "format_table", "copy_per_step", "saved_bytes", "KINDS", "DEFAULT_T", "QUICK_T"]

DESCRIPTION = "neural_memory (stack/queue/deque; cpu/cuda kernels) against autograd through the torch reference"

KINDS = ("stack", "queue", "deque")
DEFAULT_T = (64, 256)
DEFAULT_SIZE = dict(batch_size=10, value_size=256)
QUICK_T = (16, 32)
QUICK_SIZE = dict(batch_size=4, value_size=32)
BACKENDS = ("cpu", "cuda")

_SETTINGS = {
    False: dict(warmup=1, min_repeats=3, min_time=1.0),
    True: dict(warmup=1, min_repeats=1, min_time=0.0),
}


def default_backends():
    """``("cpu",)``, plus ``"cuda"`` when a GPU is present."""
    return ("cpu", "cuda") if torch.cuda.is_available() else ("cpu",)


def _inputs(kind, B, T, m, dtype, device, seed):
    gen = torch.Generator().manual_seed(seed)
    H = 2 if kind == "deque" else 1
    shape = (B, T, 2) if H == 2 else (B, T)
    v = torch.randn(*shape, m, generator=gen).to(dtype)
    d = (0.05 + 0.9 * torch.rand(shape, generator=gen)).to(dtype)
    u = (0.05 + 0.9 * torch.rand(shape, generator=gen)).to(dtype)
    gr = torch.randn(*shape, m, generator=gen).to(dtype)
    gs = torch.randn(B, T, H * T, generator=gen).to(dtype)
    return [x.to(device) for x in (v, d, u, gr, gs)]


def copy_per_step(kind, v, d, u):
    """The memory with ``V_t`` rebuilt by concatenation at every step (eq. 1, 6 read
    literally): the same reads as :func:`rnnlab.neural_memory`, for the memory
    comparison only. Returns the reads ``(B, T, m)`` (deque ``(B, T, 2, m)``)."""
    from rnnlab.kernels.memory_torch import _pop, _read      # the reference's pieces

    B, T = d.shape[:2]
    rows = v.new_zeros(B, 0, v.shape[-1])
    s = v.new_zeros(B, 0)
    reads = []
    for t in range(T):
        if kind == "deque":
            s = torch.cat([d[:, t, 1:2], _pop(_pop(s, u[:, t, 0], "top"), u[:, t, 1], "front"), d[:, t, 0:1]], 1)
            rows = torch.cat([v[:, t, 1:2], rows, v[:, t, 0:1]], 1)          # a new V_t
            reads.append(torch.stack([_read(s, rows, "top"), _read(s, rows, "front")], 1))
        else:
            rule = "top" if kind == "stack" else "front"
            s = torch.cat([_pop(s, u[:, t], rule), d[:, t:t + 1]], 1)
            rows = torch.cat([rows, v[:, t:t + 1]], 1)                       # a new V_t
            reads.append(_read(s, rows, rule))
    return torch.stack(reads, 1)


def saved_bytes(fn, *args):
    """Bytes of the distinct storages autograd saves while ``fn(*args)`` runs (and ``fn``'s result)."""
    storages = {}

    def pack(x):
        st = x.untyped_storage()
        storages[st.data_ptr()] = st.nbytes()
        return x

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
        out = fn(*args)
    return sum(storages.values()), out


def _fwdbwd(fn, v, d, u, gr, gs):
    v, d, u = (x.detach().requires_grad_() for x in (v, d, u))

    def call():
        r, s = fn(v, d, u)
        return torch.autograd.grad(((r * gr).sum() + (s * gs).sum()), (v, d, u))
    return call


def _steps(kind, backend):
    """The whole sequence through ``NeuralMemory.step``: ``(reads, strengths)`` like the op."""
    from rnnlab.kernels import NeuralMemory

    def fn(v, d, u):
        B, T = d.shape[:2]
        mem = NeuralMemory(kind, B, T, v.shape[-1], dtype=v.dtype, device=v.device, backend=backend)
        reads, strengths = [], []
        for t in range(T):
            reads.append(mem.step(v[:, t], d[:, t], u[:, t]))
            strengths.append(mem.strengths)
        fn.memory = mem
        return torch.stack(reads, 1), torch.stack(strengths, 1)
    return fn


def _ratio(num, den):
    return None if num is None or den is None or den <= 0 else num / den


def _memory(kind, backend, v, d, u):
    """The saved-bytes columns of one row."""
    from rnnlab import neural_memory
    from rnnlab.kernels import neural_memory_ref

    req = [x.detach().requires_grad_() for x in (v, d, u)]
    out = {}
    out["saved_kernel_bytes"], _ = saved_bytes(lambda *a: neural_memory(kind, *a, backend=backend), *req)
    steps = _steps(kind, backend)
    saved, _ = saved_bytes(steps, *req)
    out["saved_steps_bytes"] = saved + steps.memory.value_buffer_bytes()
    out["saved_ref_bytes"], _ = saved_bytes(lambda *a: neural_memory_ref(kind, *a), *req)
    out["saved_copy_bytes"], _ = saved_bytes(lambda *a: copy_per_step(kind, *a), *req)
    gc.collect()
    return out


def run(T=None, kinds=KINDS, backends=None, *, batch_size=None, value_size=None, dtype="float32", quick=False,
        stat="median", reference=True, seed=0, threads=None, progress=None, **timing):
    """Time ``neural_memory`` and its baselines and measure saved bytes; one dict per (backend, kind, T).

    ``T`` defaults to :data:`DEFAULT_T` (:data:`QUICK_T` if ``quick``); ``batch_size`` and
    ``value_size`` to :data:`DEFAULT_SIZE` (:data:`QUICK_SIZE`); ``reference=False`` skips the torch
    reference's timings; ``**timing`` overrides ``warmup``, ``min_repeats``, ``min_time``.
    Keys of a row: the configuration, the times ``fwd_s``, ``fwdbwd_s``, ``steps_fwdbwd_s``,
    ``ref_fwd_s``, ``ref_fwdbwd_s``, the ratios and the memory columns of the module docstring,
    ``timings``.
    """
    settings = dict(_SETTINGS[bool(quick)])
    unknown = set(timing) - set(settings)
    if unknown:
        raise TypeError(f"memory.run: unknown timing settings {sorted(unknown)}; expected some of {sorted(settings)}")
    settings.update(timing)
    size = QUICK_SIZE if quick else DEFAULT_SIZE
    B = size["batch_size"] if batch_size is None else int(batch_size)
    m = size["value_size"] if value_size is None else int(value_size)
    T = (QUICK_T if quick else DEFAULT_T) if T is None else ((T,) if isinstance(T, int) else tuple(T))
    backends = default_backends() if backends is None else tuple(backends)
    kinds = tuple(kinds)
    if not T or any(not isinstance(t, int) or t < 1 for t in T) or B < 1 or m < 1:
        raise ValueError(f"memory.run: T, batch_size and value_size must be positive integers, got {T}, {B}, {m}")
    if any(k not in KINDS for k in kinds) or not kinds:
        raise ValueError(f"memory.run: kinds must be among {KINDS}, got {kinds!r}")
    if any(b not in BACKENDS for b in backends) or not backends:
        raise ValueError(f"memory.run: backends must be among {BACKENDS}, got {backends!r}")
    if "cuda" in backends and not torch.cuda.is_available():
        raise RuntimeError("memory.run: backend 'cuda' needs a GPU")
    if dtype not in ("float32", "float64"):
        raise ValueError(f"memory.run: dtype must be 'float32' or 'float64', got {dtype!r}")
    threads = match_thread_pools(threads)

    from rnnlab import neural_memory
    from rnnlab.kernels import neural_memory_ref

    rows = []
    total, done = len(backends) * len(kinds) * len(T), 0
    for backend in backends:
        device = "cuda" if backend == "cuda" else "cpu"
        for kind in kinds:
            for t in T:
                done += 1
                if progress is not None:
                    progress(f"[{done}/{total}] {backend} {kind} T={t} B={B} m={m} {dtype}")
                v, d, u, gr, gs = _inputs(kind, B, t, m, getattr(torch, dtype), device, seed + t)
                fns = {"fwd": lambda: neural_memory(kind, v, d, u, backend=backend),
                       "fwdbwd": _fwdbwd(lambda *a: neural_memory(kind, *a, backend=backend), v, d, u, gr, gs),
                       "steps_fwdbwd": _fwdbwd(_steps(kind, backend), v, d, u, gr, gs)}
                if reference:
                    fns["ref_fwd"] = lambda: neural_memory_ref(kind, v, d, u)
                    fns["ref_fwdbwd"] = _fwdbwd(lambda *a: neural_memory_ref(kind, *a), v, d, u, gr, gs)
                timings = time_calls(fns, warmup=settings["warmup"], min_repeats=settings["min_repeats"],
                                     min_time=settings["min_time"], device=device)
                row = {"benchmark": "memory", "backend": backend, "device": device, "kind": kind, "T": t,
                       "B": B, "m": m, "dtype": dtype, "stat": stat, "threads": threads}
                for name in ("fwd", "fwdbwd", "steps_fwdbwd", "ref_fwd", "ref_fwdbwd"):
                    row[f"{name}_s"] = timings[name].stat(stat) if name in timings else None
                row["ref_fwdbwd_over_fwdbwd"] = _ratio(row["ref_fwdbwd_s"], row["fwdbwd_s"])
                row["ref_fwd_over_fwd"] = _ratio(row["ref_fwd_s"], row["fwd_s"])
                row["fwdbwd_over_fwd"] = _ratio(row["fwdbwd_s"], row["fwd_s"])
                row["steps_over_fwdbwd"] = _ratio(row["steps_fwdbwd_s"], row["fwdbwd_s"])
                row.update(_memory(kind, backend, v, d, u))
                H = 2 if kind == "deque" else 1
                row["values_bytes"] = B * H * t * m * v.element_size()
                row["copy_over_kernel_bytes"] = _ratio(row["saved_copy_bytes"], row["saved_kernel_bytes"])
                row["timings"] = {k: x.as_dict() for k, x in timings.items()}
                rows.append(row)
                del v, d, u, gr, gs, fns
                gc.collect()
    return rows


# ---------------------------------------------------------------- table

def _mib(n):
    return "-" if n is None else f"{n / 2**20:.3g}"


def format_table(rows, title=None):
    columns = [
        Column("backend", lambda r: r["backend"], "<"),
        Column("kind", lambda r: r["kind"], "<"),
        Column("T", lambda r: r["T"]),
        Column("BxM", lambda r: f"{r['B']}x{r['m']}"),
        Column("fwd", lambda r: format_seconds(r["fwd_s"])),
        Column("fwd+bwd", lambda r: format_seconds(r["fwdbwd_s"])),
        Column("steps f+b", lambda r: format_seconds(r["steps_fwdbwd_s"])),
        Column("ref fwd", lambda r: format_seconds(r["ref_fwd_s"])),
        Column("ref f+b", lambda r: format_seconds(r["ref_fwdbwd_s"])),
        Column("ref/kernel f+b", lambda r: format_ratio(r["ref_fwdbwd_over_fwdbwd"])),
        Column("steps/op", lambda r: format_ratio(r["steps_over_fwdbwd"])),
        Column("values", lambda r: _mib(r["values_bytes"])),
        Column("saved op", lambda r: _mib(r["saved_kernel_bytes"])),
        Column("saved steps", lambda r: _mib(r["saved_steps_bytes"])),
        Column("saved ref", lambda r: _mib(r["saved_ref_bytes"])),
        Column("saved copy", lambda r: _mib(r["saved_copy_bytes"])),
        Column("copy/op", lambda r: format_ratio(r["copy_over_kernel_bytes"])),
    ]
    notes = ["Times: the median (or --stat) of interleaved calls; f+b = forward and backward of v, d, u.",
             "Memory in MiB: storages autograd saves for the backward pass (saved_tensors_hooks), inputs included; "
             "'saved steps' adds the value buffer NeuralMemory owns; 'copy' rebuilds V_t by concatenation "
             "every step (O(B T^2 m))."]
    return render_table(rows, columns, title=title, notes=notes)


# ---------------------------------------------------------------- command line

def add_arguments(parser):
    """The options of ``python -m rnnlab.bench memory``."""
    parser.add_argument("--quick", action="store_true",
                        help=f"small sizes and one timed call (seconds): T={QUICK_T}, B={QUICK_SIZE['batch_size']}, "
                             f"m={QUICK_SIZE['value_size']}")
    parser.add_argument("--T", dest="T", nargs="+", type=_positive_int, metavar="T",
                        help=f"sequence lengths (default {DEFAULT_T})")
    parser.add_argument("--kinds", nargs="+", choices=KINDS, metavar="KIND",
                        help="among stack, queue, deque (default all three)")
    parser.add_argument("--backends", nargs="+", choices=BACKENDS, metavar="BACKEND",
                        help="cpu and/or cuda (default cpu, plus cuda on a GPU)")
    parser.add_argument("--batch-size", type=_positive_int, metavar="B",
                        help=f"batch size (default {DEFAULT_SIZE['batch_size']})")
    parser.add_argument("--value-size", type=_positive_int, metavar="M",
                        help=f"value size m (default {DEFAULT_SIZE['value_size']})")
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32", help="(default float32)")
    parser.add_argument("--stat", choices=("median", "min", "mean"), default="median",
                        help="statistic of the per-call times used for ratios (default median)")
    parser.add_argument("--min-time", type=float, metavar="S",
                        help=f"seconds of interleaved timing per row (default {_SETTINGS[False]['min_time']})")
    parser.add_argument("--no-reference", dest="reference", action="store_false",
                        help="do not time the torch reference (its columns stay empty)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the inputs (default 0)")


def from_args(args, parser=None):
    """Run from parsed arguments; return ``(rows, config)``."""
    backends = args.backends or default_backends()
    if "cuda" in backends and not torch.cuda.is_available() and parser is not None:
        parser.error("backend cuda cannot run here: no GPU is available")
    timing = {} if args.min_time is None else {"min_time": args.min_time}

    def progress(msg):
        print(msg, file=sys.stderr, flush=True)

    rows = run(T=args.T, kinds=tuple(args.kinds or KINDS), backends=backends, batch_size=args.batch_size,
               value_size=args.value_size, dtype=args.dtype, quick=args.quick, stat=args.stat,
               reference=args.reference, seed=args.seed, threads=getattr(args, "threads", None),
               progress=progress, **timing)
    config = {"T": sorted({r["T"] for r in rows}), "kinds": list(args.kinds or KINDS), "backends": list(backends),
              "batch_size": rows[0]["B"] if rows else None, "value_size": rows[0]["m"] if rows else None,
              "dtype": args.dtype, "quick": args.quick, "stat": args.stat, "reference": args.reference,
              "seed": args.seed, "threads": getattr(args, "threads", None),
              "settings": dict(_SETTINGS[bool(args.quick)], **timing)}
    return rows, config


if __name__ == "__main__":  # pragma: no cover
    from .__main__ import main
    sys.exit(main(["memory"] + sys.argv[1:]))
