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
``ref_fwd``,      the vectorised torch version ``neural_memory_ref`` (a loop over
``ref_fwdbwd``    time; each step's pop and read over all rows at once with
                  cumulative sums), differentiated by autograd: what an unfused
                  implementation costs.
``loop_fwdbwd``   the loop written as the equations read, ``neural_memory_loop``
                  (loops over time and over the rows, O(T²) small operations),
                  differentiated by autograd; timed once (it takes seconds at
                  the paper's sizes), outside the interleaved rounds.

Ratios: ``ref_fwdbwd_over_fwdbwd`` and ``ref_fwd_over_fwd`` (speed-ups of
the kernel over the vectorised version), ``loop_fwdbwd_over_fwdbwd`` (over
the loop), ``fwdbwd_over_fwd``, ``steps_over_fwdbwd`` (the step API's cost
over the whole-sequence op).

Training step (rows with ``part == "train_step"``; ``train_step=False`` /
``--no-train-step`` skips them): one optimizer step of the transduction
models at the paper's sizes (hidden 256, values ``m``, embeddings 64, 128
source and 128 target symbols), a batch of ``B`` joint sequences of length
``T``: embedding, forward over ``T`` steps, cross-entropy of every position,
backward, gradient clipping at 1, RMSProp. Timed interleaved:

``step``          ``MemoryLSTM`` with the memory of the row's kind (the controller
                  steps ``NeuralMemory`` on the backend).
``controller``    the same model without the memory: the same ``LSTMCell`` on
                  ``[i_t; r]`` stepped in the same Python loop, with ``r = 0`` and
                  no push, pop or value heads (:class:`Controller`).
``nn_lstm``       ``DeepLSTM`` with one layer: ``torch.nn.LSTM`` runs the whole
                  sequence in one call (C++ loop, fused gates).

Ratios ``step_over_controller`` (what the memory adds to the model that uses
it) and ``step_over_nn_lstm`` (over the fastest plain LSTM torch offers,
which no controller can use: its input at step ``t`` needs the read of step
``t - 1``).

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
import functools
import gc
import sys

import torch

from . import (Column, Target, check_targets, format_ratio, format_seconds, positive_int as _positive_int,
               render_table, verdict_counts)
from ..models import DeepLSTM, MemoryLSTM
from .device import SIMULATOR_NOTE, cuda_runs_here, tensor_device
from .timing import match_thread_pools, time_calls

__all__ = ["run", "format_table", "copy_per_step", "saved_bytes", "Controller", "TARGETS", "KINDS", "DEFAULT_T",
           "QUICK_T"]

DESCRIPTION = "neural_memory (stack/queue/deque; cpu/cuda kernels) against autograd through the torch reference"

KINDS = ("stack", "queue", "deque")
DEFAULT_T = (128, 256)
DEFAULT_SIZE = dict(batch_size=10, value_size=256)
QUICK_T = (16, 32)
QUICK_SIZE = dict(batch_size=4, value_size=32)
BACKENDS = ("cpu", "cuda")

TRAIN_SIZE = dict(hidden=256, embedding=64, n_source=128, n_target=128)
QUICK_TRAIN_SIZE = dict(hidden=32, embedding=8, n_source=8, n_target=8)


def _op_cpu(row):
    return row.get("part", "op") == "op" and row["backend"] == "cpu"


TARGETS = (
    Target("loop_fwdbwd_over_fwdbwd", ">=", 20.0,
           "cpu kernel forward+backward at least 20x faster than the loop written as the equations read", _op_cpu),
    Target("ref_fwdbwd_over_fwdbwd", ">=", 2.0,
           "cpu kernel forward+backward at least 2x faster than the vectorised torch version (cumulative sums, "
           "autograd backward)", _op_cpu),
    Target("step_over_controller", "<=", 1.5,
           "Stack-LSTM training step within 1.5x of the same LSTM controller without the memory",
           lambda r: r.get("part") == "train_step" and r["kind"] == "stack" and r["backend"] == "cpu"),
)
"""The goals of issue 9 (part 4); ``step_over_nn_lstm`` is reported beside them, without a goal."""

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
    from rnnlab.kernels.memory_torch import pop as _pop, read as _read      # the reference's pieces

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


class Controller(MemoryLSTM):
    """:class:`rnnlab.models.MemoryLSTM` without its memory: the same ``LSTMCell`` on ``[i_t; r]``, stepped in
    the same loop, with ``r = 0`` and no push, pop or value heads. The baseline of the training step."""

    def _start(self, batch_size, steps):
        h = self.h0.unsqueeze(0).expand(batch_size, -1)
        c = self.c0.unsqueeze(0).expand(batch_size, -1)
        return None, h, c, self.cell.weight_hh.new_zeros(batch_size, self.heads * self.value_size)

    def _step(self, x, state):
        _, h, c, r = state
        h, c = self.cell(torch.cat([x, r], 1), (h, c))
        return h, (None, h, c, r)


def _train_models(kind, backend, m, size, device, seed):
    """``{"step": MemoryLSTM, "controller": Controller, "nn_lstm": DeepLSTM(1)}`` of the same sizes."""
    common = dict(n_source=size["n_source"], n_target=size["n_target"], hidden_size=size["hidden"],
                  embedding_size=size["embedding"])
    torch.manual_seed(seed)
    models = {"step": MemoryLSTM(kind=kind, value_size=m, backend=backend, **common),
              "controller": Controller(kind=kind, value_size=m, backend=backend, **common),
              "nn_lstm": DeepLSTM(num_layers=1, **common)}
    return {k: net.to(device) for k, net in models.items()}


def _train_step(net, inputs, targets):
    """One optimizer step as ``python -m rnnlab train transduction`` takes it (RMSProp, clipping at 1)."""
    opt = torch.optim.RMSprop(net.parameters(), lr=1e-3)
    params = list(net.parameters())

    def step():
        opt.zero_grad(set_to_none=True)
        logits = net(inputs)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
    return step


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


def _op_row(backend, kind, t, B, m, dtype, stat, threads, settings, reference, loop, seed):
    """One row of the op table (see the module docstring)."""
    from rnnlab import neural_memory
    from rnnlab.kernels import neural_memory_loop, neural_memory_ref

    label = "cuda" if backend == "cuda" else "cpu"
    device = tensor_device(label)       # "cpu" for the cuda rows under numba's simulator
    v, d, u, gr, gs = _inputs(kind, B, t, m, getattr(torch, dtype), device, seed + t)
    fns = {"fwd": functools.partial(neural_memory, kind, v, d, u, backend=backend),
           "fwdbwd": _fwdbwd(functools.partial(neural_memory, kind, backend=backend), v, d, u, gr, gs),
           "steps_fwdbwd": _fwdbwd(_steps(kind, backend), v, d, u, gr, gs)}
    if reference:
        fns["ref_fwd"] = functools.partial(neural_memory_ref, kind, v, d, u)
        fns["ref_fwdbwd"] = _fwdbwd(functools.partial(neural_memory_ref, kind), v, d, u, gr, gs)
    timings = time_calls(fns, warmup=settings["warmup"], min_repeats=settings["min_repeats"],
                         min_time=settings["min_time"], device=device)
    if loop:  # seconds per call at the paper's sizes: one call, outside the interleaved rounds
        timings.update(time_calls({"loop_fwdbwd": _fwdbwd(functools.partial(neural_memory_loop, kind),
                                                          v, d, u, gr, gs)},
                                  warmup=0, min_repeats=1, min_time=0.0, device=device))
    row = {"benchmark": "memory", "part": "op", "backend": backend, "device": label, "kind": kind,
           "T": t, "B": B, "m": m, "dtype": dtype, "stat": stat, "threads": threads}
    if device != label:
        row["simulator"] = True
    for name in ("fwd", "fwdbwd", "steps_fwdbwd", "ref_fwd", "ref_fwdbwd", "loop_fwdbwd"):
        row[f"{name}_s"] = timings[name].stat(stat) if name in timings else None
    row["ref_fwdbwd_over_fwdbwd"] = _ratio(row["ref_fwdbwd_s"], row["fwdbwd_s"])
    row["loop_fwdbwd_over_fwdbwd"] = _ratio(row["loop_fwdbwd_s"], row["fwdbwd_s"])
    row["ref_fwd_over_fwd"] = _ratio(row["ref_fwd_s"], row["fwd_s"])
    row["fwdbwd_over_fwd"] = _ratio(row["fwdbwd_s"], row["fwd_s"])
    row["steps_over_fwdbwd"] = _ratio(row["steps_fwdbwd_s"], row["fwdbwd_s"])
    row.update(_memory(kind, backend, v, d, u))
    H = 2 if kind == "deque" else 1
    row["values_bytes"] = B * H * t * m * v.element_size()
    row["copy_over_kernel_bytes"] = _ratio(row["saved_copy_bytes"], row["saved_kernel_bytes"])
    row["timings"] = {k: x.as_dict() for k, x in timings.items()}
    row["targets"] = check_targets(row, TARGETS)
    return row


def _train_step_row(backend, kind, t, B, m, dtype, stat, threads, settings, size, seed):
    """One row of the training-step table (see the module docstring)."""
    label = "cuda" if backend == "cuda" else "cpu"
    device = tensor_device(label)       # "cpu" for the cuda rows under numba's simulator
    models = _train_models(kind, backend, m, size, device, seed)
    if dtype == "float64":
        models = {k: net.double() for k, net in models.items()}
    gen = torch.Generator().manual_seed(seed + t)
    net = models["step"]
    inputs = torch.randint(1, net.num_inputs, (B, t), generator=gen).to(device)
    targets = torch.randint(0, net.num_outputs, (B, t), generator=gen).to(device)
    fns = {k: _train_step(net, inputs, targets) for k, net in models.items()}
    timings = time_calls(fns, warmup=settings["warmup"], min_repeats=settings["min_repeats"],
                         min_time=settings["min_time"], device=device)
    row = {"benchmark": "memory", "part": "train_step", "backend": backend, "device": label, "kind": kind,
           "T": t, "B": B, "m": m, "dtype": dtype, "stat": stat, "threads": threads, **size}
    if device != label:
        row["simulator"] = True
    for name in fns:
        row[f"{name}_s"] = timings[name].stat(stat)
    row["step_over_controller"] = _ratio(row["step_s"], row["controller_s"])
    row["step_over_nn_lstm"] = _ratio(row["step_s"], row["nn_lstm_s"])
    row["timings"] = {k: x.as_dict() for k, x in timings.items()}
    row["targets"] = check_targets(row, TARGETS)
    return row


def run(T=None, kinds=KINDS, backends=None, *, batch_size=None, value_size=None, dtype="float32", quick=False,
        stat="median", reference=True, loop=True, train_step=True, seed=0, threads=None, progress=None, **timing):
    """Time ``neural_memory`` and its baselines and measure saved bytes; one dict per (backend, kind, T).

    ``T`` defaults to :data:`DEFAULT_T` (:data:`QUICK_T` if ``quick``); ``batch_size`` and
    ``value_size`` to :data:`DEFAULT_SIZE` (:data:`QUICK_SIZE`); ``reference=False`` skips the vectorised
    torch version's timings, ``loop=False`` the loop's, ``train_step=False`` the training-step rows;
    ``**timing`` overrides ``warmup``, ``min_repeats``, ``min_time``.
    Keys of an op row (``part == "op"``): the configuration, the times ``fwd_s``, ``fwdbwd_s``,
    ``steps_fwdbwd_s``, ``ref_fwd_s``, ``ref_fwdbwd_s``, ``loop_fwdbwd_s``, the ratios and the memory columns
    of the module docstring, ``timings``, ``targets``. A training-step row (``part == "train_step"``, after
    the op rows): ``step_s``, ``controller_s``, ``nn_lstm_s``, ``step_over_controller``,
    ``step_over_nn_lstm``, the model sizes, ``timings``, ``targets``.
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
    if "cuda" in backends and not cuda_runs_here():
        raise RuntimeError("memory.run: backend 'cuda' needs a GPU")
    if dtype not in ("float32", "float64"):
        raise ValueError(f"memory.run: dtype must be 'float32' or 'float64', got {dtype!r}")
    threads = match_thread_pools(threads)

    configurations = [(backend, kind, t) for backend in backends for kind in kinds for t in T]
    rows = []
    for n, (backend, kind, t) in enumerate(configurations, 1):
        if progress is not None:
            progress(f"[{n}/{len(configurations)}] {backend} {kind} T={t} B={B} m={m} {dtype}")
        rows.append(_op_row(backend, kind, t, B, m, dtype, stat, threads, settings, reference, loop, seed))
        gc.collect()
    if train_step:
        size = QUICK_TRAIN_SIZE if quick else TRAIN_SIZE
        for n, (backend, kind, t) in enumerate(configurations, 1):
            if progress is not None:
                progress(f"[train step {n}/{len(configurations)}] {backend} {kind} T={t} B={B} m={m}")
            rows.append(_train_step_row(backend, kind, t, B, m, dtype, stat, threads, settings, size, seed))
            gc.collect()
    return rows


# ---------------------------------------------------------------- table

def _mib(n):
    return "-" if n is None else f"{n / 2**20:.3g}"


def format_table(rows, title=None):
    """The op rows' table, then the training-step rows' (if any)."""
    ops = [r for r in rows if r.get("part", "op") == "op"]
    steps = [r for r in rows if r.get("part") == "train_step"]
    out = [_format_ops(ops, title)] if ops or not steps else []
    if steps:
        out.append(_format_steps(steps, None if ops else title))
    notes = ["Targets: " + "; ".join(t.description for t in TARGETS) + "."]
    verdicts = verdict_counts(rows)
    if verdicts:
        notes.append("Target verdicts: " + verdicts)
    if any(r.get("simulator") for r in rows):
        notes.append(SIMULATOR_NOTE)
    return "\n\n".join(out + ["\n".join(notes)])


def _format_steps(rows, title):
    columns = [
        Column("backend", lambda r: r["backend"], "<"),
        Column("kind", lambda r: r["kind"], "<"),
        Column("T", lambda r: r["T"]),
        Column("B", lambda r: r["B"]),
        Column("hidden", lambda r: r["hidden"]),
        Column("m", lambda r: r["m"]),
        Column("memory model", lambda r: format_seconds(r["step_s"])),
        Column("controller", lambda r: format_seconds(r["controller_s"])),
        Column("nn.LSTM", lambda r: format_seconds(r["nn_lstm_s"])),
        Column("model/controller", lambda r: format_ratio(r["step_over_controller"])),
        Column("model/nn.LSTM", lambda r: format_ratio(r["step_over_nn_lstm"])),
    ]
    notes = ["Training step (forward over T steps, cross-entropy, backward, clipping, RMSProp), interleaved: "
             "memory model = MemoryLSTM with the row's memory; controller = the same LSTMCell loop without the "
             "memory (r = 0, no heads); nn.LSTM = one torch.nn.LSTM layer of the same size (one fused call)."]
    return render_table(rows, columns, title=title or "training step", notes=notes)


def _format_ops(rows, title):
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
        Column("loop f+b", lambda r: format_seconds(r.get("loop_fwdbwd_s"))),
        Column("loop/kernel", lambda r: format_ratio(r.get("loop_fwdbwd_over_fwdbwd"))),
        Column("ref/kernel f+b", lambda r: format_ratio(r["ref_fwdbwd_over_fwdbwd"])),
        Column("steps/op", lambda r: format_ratio(r["steps_over_fwdbwd"])),
        Column("values", lambda r: _mib(r["values_bytes"])),
        Column("saved op", lambda r: _mib(r["saved_kernel_bytes"])),
        Column("saved steps", lambda r: _mib(r["saved_steps_bytes"])),
        Column("saved ref", lambda r: _mib(r["saved_ref_bytes"])),
        Column("saved copy", lambda r: _mib(r["saved_copy_bytes"])),
        Column("copy/op", lambda r: format_ratio(r["copy_over_kernel_bytes"])),
    ]
    notes = ["Times: the median (or --stat) of interleaved calls; f+b = forward and backward of v, d, u. "
             "ref = the vectorised torch version (cumulative sums per step, autograd); loop = the equations "
             "row by row (neural_memory_loop, autograd), one call.",
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
                        help="do not time the vectorised torch version (its columns stay empty)")
    parser.add_argument("--no-loop", dest="loop", action="store_false",
                        help="do not time the row-by-row loop (it takes about a minute at T = 256)")
    parser.add_argument("--no-train-step", dest="train_step", action="store_false",
                        help="skip the training-step comparison (memory model, controller, nn.LSTM)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the inputs (default 0)")


def from_args(args, parser=None):
    """Run from parsed arguments; return ``(rows, config)``."""
    backends = args.backends or default_backends()
    if "cuda" in backends and not cuda_runs_here() and parser is not None:
        parser.error("backend cuda cannot run here: no GPU is available")
    timing = {} if args.min_time is None else {"min_time": args.min_time}

    def progress(msg):
        print(msg, file=sys.stderr, flush=True)

    rows = run(T=args.T, kinds=tuple(args.kinds or KINDS), backends=backends, batch_size=args.batch_size,
               value_size=args.value_size, dtype=args.dtype, quick=args.quick, stat=args.stat,
               reference=args.reference, loop=args.loop, train_step=args.train_step, seed=args.seed,
               threads=getattr(args, "threads", None),
               progress=progress, **timing)
    config = {"T": sorted({r["T"] for r in rows}), "kinds": list(args.kinds or KINDS), "backends": list(backends),
              "batch_size": rows[0]["B"] if rows else None, "value_size": rows[0]["m"] if rows else None,
              "dtype": args.dtype, "quick": args.quick, "stat": args.stat, "reference": args.reference,
              "loop": args.loop, "train_step": args.train_step,
              "seed": args.seed, "threads": getattr(args, "threads", None),
              "settings": dict(_SETTINGS[bool(args.quick)], **timing)}
    return rows, config


if __name__ == "__main__":  # pragma: no cover
    from .__main__ import main
    sys.exit(main(["memory"] + sys.argv[1:]))
