"""Benchmark of the LDS and LDStack against torch's RNNs: ``python -m rnnlab.bench lds``.

The spirit of Figure 1 of the author response (Kaul 2020): forward+backward
time against sequence length, for recurrent layers of one **matched hidden
size** H, every model timed in the same run and interleaved
(:func:`rnnlab.bench.timing.time_calls`), so that the ratios hold up on a
shared machine. The models (:data:`MODELS`), each mapping a batch
``(B, T, d)`` to outputs ``(B, T, m)``:

``lds``        :class:`rnnlab.models.LDS` with H complex modes (d single-input
               systems of H/d modes in conjugate pairs, free eigenvalues,
               companion B'), its states computed by :func:`rnnlab.linear_scan`
               on one mode of each conjugate pair (H/2 complex channels).
``ldstack2``,  :class:`rnnlab.models.LDStack` of depth 2 and 4 (the same LDS
``ldstack4``   corrected 1 or 3 times), all layers in one pass over time by
               :func:`rnnlab.kernels.modal_stack_scan`, on one mode per pair.
``lstm``       ``torch.nn.LSTM(d, H)`` and a linear read-out ``H → m``. On a
               GPU this is the fused cuDNN LSTM.
``rnn``        ``torch.nn.RNN(d, H)`` (tanh, fused) and a read-out.
``loop_rnn``   :class:`LoopRNN`: a ``torch.nn.RNNCell`` (tanh) stepped in a
               Python loop, and a read-out: an unoptimised RNN.
``lds_fft``    (not in the default set) the same LDS with ``algorithm="fft"``:
               the outputs as a convolution by FFT, never forming the states.
``lds_all_modes``   (not in the default set) the same LDS scanning all H
               modes (``pair_modes = False``), as the first version did.
``ldstack4_scans``  (not in the default set) LDStack of depth 4 computed layer
               by layer, four linear scans on all H modes with the corrected
               transitions as ``(B, T, H)`` tensors
               (:meth:`rnnlab.models.LDStack.layer_states_by_scans`), as the
               first version did. These two show in one run what the
               conjugate pairs and the fused stack are worth.

"Forward+backward" is ``y = model(x)`` followed by
``torch.autograd.grad(y, parameters, g)`` for a fixed random upstream
gradient ``g``: what one training step costs before the optimizer.

Ratios: ``speedup_<model> = lstm_s / <model>_s``, how many times faster than
the LSTM *of the same run and device* the model is (above 1: faster).

:data:`TARGETS`, from the issue that introduced the LDS: the LDS at least 5x
faster than the LSTM at T = 1024, and LDStack of depth 4 at least 2x faster
than the LSTM at T >= 1024. They are checked on every device; on a GPU the
LSTM is cuDNN's (the response's comparison), on a CPU torch's own.

On a GPU (``torch.cuda.is_available()``) the default devices are ``cpu``
and ``cuda``; the CUDA rows run the LDS on rnnlab's numba-cuda kernel and the
LSTM on cuDNN. A model that cannot run on a device (for instance the CUDA
scan kernel without numba-cuda) is reported with its error in
``row["errors"]`` instead of a time.

On a CPU shared with other programs, timings with several threads can be
off by one or two orders of magnitude: idle OpenMP threads (torch's and
numba's) spin, and torch's recurrent layers synchronise their threads at
every time step. Run with ``OMP_WAIT_POLICY=PASSIVE`` set in the environment
(it must be set before Python starts), or with ``--threads 1``; the table
adds a note when neither holds.

From Python (the book's speed figure uses small sizes that run in seconds)::

    from rnnlab.bench import lds
    rows = lds.run(T=(128, 512), batch_size=4, hidden_size=32, quick=True)
    print(lds.format_table(rows))
"""
import gc
import math
import sys

import torch
from torch import nn

from . import (Column, Target, check_targets, format_ratio, format_seconds, positive_int as _positive_int,
               render_table, verdict_counts)
from .._validate import check_int
from .device import SIMULATOR_NOTE, cuda_runs_here, simulator, tensor_device
from .timing import match_thread_pools, time_calls

__all__ = ["run", "format_table", "build_model", "LoopRNN", "MODELS", "DEFAULT_MODELS", "MODEL_LABELS",
           "TARGETS", "DEFAULT_T", "QUICK_T", "DEFAULT_SIZE", "QUICK_SIZE", "default_devices",
           "add_arguments", "from_args"]

DESCRIPTION = ("LDS and LDStack (depth 2, 4) against torch.nn.LSTM, torch.nn.RNN and a Python-loop RNN: "
               "forward+backward time against sequence length")

MODELS = ("lds", "ldstack2", "ldstack4", "lstm", "rnn", "loop_rnn", "lds_fft", "lds_all_modes", "ldstack4_scans")
DEFAULT_MODELS = ("lds", "ldstack2", "ldstack4", "lstm", "rnn", "loop_rnn")
MODEL_LABELS = {
    "lds": "LDS (scan)",
    "ldstack2": "LDStack, depth 2",
    "ldstack4": "LDStack, depth 4",
    "lstm": "torch.nn.LSTM",
    "rnn": "torch.nn.RNN (tanh)",
    "loop_rnn": "Python-loop RNN",
    "lds_fft": "LDS (FFT)",
    "lds_all_modes": "LDS, all modes scanned",
    "ldstack4_scans": "LDStack 4, layer by layer",
}
"""How tables and figures name the models (on CUDA the LSTM is cuDNN's)."""

DEFAULT_T = (128, 256, 512, 1024, 2048)
QUICK_T = (256, 1024)
DEFAULT_SIZE = dict(batch_size=16, input_size=8, hidden_size=128, output_size=8)
QUICK_SIZE = dict(batch_size=4, input_size=4, hidden_size=32, output_size=4)

# Timing settings: (full, quick).
_SETTINGS = {
    False: dict(warmup=2, min_repeats=5, min_time=1.0),
    True: dict(warmup=1, min_repeats=2, min_time=0.0),
}


def _at_1024(row):
    return row["T"] == 1024


def _at_least_1024(row):
    return row["T"] >= 1024


TARGETS = (
    Target("speedup_lds", ">=", 5.0, "LDS forward+backward at least 5x faster than the LSTM at T = 1024",
           _at_1024),
    Target("speedup_ldstack4", ">=", 2.0,
           "LDStack (depth 4) forward+backward at least 2x faster than the LSTM at T >= 1024", _at_least_1024),
)


def default_devices():
    """``("cpu",)``, plus ``"cuda"`` when a GPU is present."""
    return ("cpu", "cuda") if torch.cuda.is_available() else ("cpu",)


# ---------------------------------------------------------------- models

class LoopRNN(nn.Module):
    """A tanh RNN cell (``torch.nn.RNNCell``) stepped in a Python loop, with a linear read-out.

    ``h_t = tanh(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)``, ``y_t = W_out h_t + b_out``:
    the same maths as ``torch.nn.RNN``, but one small kernel launch per
    operation and time step, as an unoptimised RNN written in Python runs.
    ``forward(x)`` takes ``(B, T, d)`` (batch first) and returns ``(y, h_T)``.
    """

    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.cell = nn.RNNCell(input_size, hidden_size, nonlinearity="tanh")
        self.head = nn.Linear(hidden_size, output_size)

    def forward(self, x):
        h = x.new_zeros(x.shape[0], self.cell.hidden_size)
        out = []
        for t in range(x.shape[1]):
            h = self.cell(x[:, t], h)
            out.append(h)
        return self.head(torch.stack(out, 1)), h


class _TorchRNN(nn.Module):
    """``torch.nn.LSTM`` or ``torch.nn.RNN`` (batch first) with a linear read-out ``H → m``."""

    def __init__(self, cls, input_size, hidden_size, output_size):
        super().__init__()
        self.core = cls(input_size, hidden_size, batch_first=True)
        self.head = nn.Linear(hidden_size, output_size)

    def forward(self, x):
        y, state = self.core(x)
        return self.head(y), state


class _StackByScans(nn.Module):
    """An LDStack computed layer by layer (:meth:`rnnlab.models.LDStack.layer_states_by_scans`), all modes."""

    def __init__(self, stack):
        super().__init__()
        self.stack = stack

    def forward(self, x):
        s = self.stack.layer_states_by_scans(x)[-1]
        return self.stack.readout(s, x), s[:, -1]


def build_model(name, input_size, hidden_size, output_size, *, seed=0):
    """The model ``name`` (a key of :data:`MODEL_LABELS`), seeded, on the CPU, float32.

    ``hidden_size`` H is the same for every model: H complex modes for the
    LDS and LDStack (``input_size`` blocks of H/d modes, so H/d must be even),
    H cells for the LSTM, H units for the RNNs.
    """
    from ..models import LDS, LDStack

    if name not in MODEL_LABELS:
        raise ValueError(f"lds bench: model must be one of {MODELS}, got {name!r}")
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    d, H, m = input_size, hidden_size, output_size
    if name in ("lds", "lds_fft", "lds_all_modes"):
        model = LDS(d, H, m, generator=gen, algorithm="fft" if name == "lds_fft" else "scan")
        model.pair_modes = name != "lds_all_modes"
        return model
    if name == "ldstack4_scans":
        return _StackByScans(LDStack(d, H, m, depth=4, generator=gen))
    if name.startswith("ldstack"):
        return LDStack(d, H, m, depth=int(name[len("ldstack"):]), generator=gen)
    if name == "lstm":
        return _TorchRNN(nn.LSTM, d, H, m)
    if name == "rnn":
        return _TorchRNN(nn.RNN, d, H, m)
    return LoopRNN(d, H, m)


def _count(model):
    return sum(p.numel() * (2 if p.is_complex() else 1) for p in model.parameters() if p.requires_grad)


def _fwdbwd(model, x, g):
    params = [p for p in model.parameters() if p.requires_grad]

    def call():
        y = model(x)[0]
        return torch.autograd.grad(y, params, g)
    return call


# ---------------------------------------------------------------- run

def _check_run_args(T, models, devices, stat, sizes):
    if isinstance(T, int):
        T = (T,)
    T = tuple(T)
    if not T or any(not isinstance(t, int) or isinstance(t, bool) or t < 1 for t in T):
        raise ValueError(f"lds.run: T must be positive integers, got {T!r}")
    if isinstance(models, str):
        models = (models,)
    models = tuple(dict.fromkeys(models))
    bad = [m for m in models if m not in MODELS]
    if not models or bad:
        raise ValueError(f"lds.run: models must be among {MODELS}, got {models!r}")
    if isinstance(devices, str):
        devices = (devices,)
    devices = tuple(dict.fromkeys(devices))
    for dev in devices:
        if dev not in ("cpu", "cuda"):
            raise ValueError(f"lds.run: devices must be among ('cpu', 'cuda'), got {devices!r}")
        if dev == "cuda" and not cuda_runs_here():
            raise RuntimeError("lds.run: device 'cuda' cannot run here: no GPU is available")
    if not devices:
        raise ValueError("lds.run: devices must name at least one device")
    if stat not in ("median", "min", "mean"):
        raise ValueError(f"lds.run: stat must be 'median', 'min' or 'mean', got {stat!r}")
    for key, value in sizes.items():
        check_int(key, value, minimum=1, fn="lds.run")
    d, H = sizes["input_size"], sizes["hidden_size"]
    if any(m in models for m in ("lds", "lds_fft", "lds_all_modes", "ldstack2", "ldstack4", "ldstack4_scans")) and (H % d or (H // d) % 2):
        raise ValueError(f"lds.run: the LDS needs hidden_size to be an even multiple of input_size "
                         f"(input_size blocks of an even number of modes); got hidden_size={H}, input_size={d}")
    return T, models, devices


def _lstm_impl(device):
    if torch.device(device).type == "cuda" and simulator():
        return "cpu (aten; the cuda row runs in numba's CUDA simulator)"
    if torch.device(device).type == "cuda":
        return "cudnn" if torch.backends.cudnn.is_available() and torch.backends.cudnn.enabled else "cuda (native)"
    return "cpu (aten)"


def _row(device, T, sizes, stat, models, timings, errors, params):
    def get(name):
        return timings[name].stat(stat) if name in timings else None

    row = {"benchmark": "lds", "device": str(device), "T": T, **sizes, "dtype": "float32", "stat": stat,
           "models": list(models), "lstm_impl": _lstm_impl(device), "threads": torch.get_num_threads(),
           "errors": dict(errors), "parameters": dict(params)}
    if torch.device(device).type == "cuda" and simulator():
        row["simulator"] = True
    for name in MODELS:
        row[f"{name}_s"] = get(name)
    lstm = row["lstm_s"]
    for name in MODELS:
        t = row[f"{name}_s"]
        row[f"speedup_{name}"] = lstm / t if (lstm is not None and t is not None and t > 0) else None
    row["timings"] = {k: v.as_dict() for k, v in timings.items()}
    row["targets"] = check_targets(row, TARGETS)
    return row


def run(T=None, models=DEFAULT_MODELS, devices=None, *, batch_size=None, input_size=None, hidden_size=None,
        output_size=None, quick=False, stat="median", seed=0, threads=None, progress=None, **timing):
    """Time forward+backward of each model at each sequence length; return one dict per (device, T).

    Parameters
    ----------
    T : int or sequence of int
        Sequence lengths; default :data:`DEFAULT_T` (:data:`QUICK_T` if ``quick``).
    models : sequence of str
        Among :data:`MODELS`; default :data:`DEFAULT_MODELS`. Include
        ``"lstm"`` for the ratios (they are relative to it).
    devices : sequence of str
        ``"cpu"`` and/or ``"cuda"``; default :func:`default_devices`.
    batch_size, input_size, hidden_size, output_size : int
        B, d, H (matched: H modes, cells or units) and m; defaults
        :data:`DEFAULT_SIZE` (:data:`QUICK_SIZE` if ``quick``).
    quick : bool
        Small default sizes and one or two timed calls per model: seconds in
        all, noisy numbers.
    stat : ``"median"``, ``"min"`` or ``"mean"``
        The statistic of the per-call times used in ``*_s`` and the ratios.
    seed : int
        Seeds the models' initialisation and the inputs.
    threads : int or None
        Set torch's thread count first (numba's pool is sized to match). On
        a CPU shared with other programs, several threads can distort the
        timings badly unless ``OMP_WAIT_POLICY=PASSIVE`` is set in the
        environment before Python starts: idle OpenMP threads of torch and of
        numba spin, and torch's recurrent layers synchronise their threads at
        every time step. ``threads=1`` avoids it (the table says so).
    progress : callable(str) or None
        Called with a short line before each row is measured.
    **timing
        Overrides of ``warmup``, ``min_repeats``, ``min_time`` (seconds of
        interleaved rounds per row).

    Returns
    -------
    list of dict, JSON-ready. Keys: ``benchmark``, ``device``, ``T``,
    ``batch_size``, ``input_size``, ``hidden_size``, ``output_size``,
    ``dtype``, ``stat``, ``models``, ``lstm_impl`` (``"cudnn"`` on a GPU), ``threads`` (torch's),
    ``errors`` (``{model: message}`` for models that could not run),
    ``parameters`` (``{model: trained real scalars}``), ``<model>_s`` for
    every model of :data:`MODELS` (None if not timed), ``speedup_<model>``
    (``lstm_s / <model>_s``), ``timings`` and ``targets``.
    """
    settings = dict(_SETTINGS[bool(quick)])
    unknown = set(timing) - set(settings)
    if unknown:
        raise TypeError(f"lds.run: unknown timing settings {sorted(unknown)}; expected some of {sorted(settings)}")
    settings.update(timing)
    base = QUICK_SIZE if quick else DEFAULT_SIZE
    given = dict(batch_size=batch_size, input_size=input_size, hidden_size=hidden_size, output_size=output_size)
    sizes = {k: (base[k] if v is None else v) for k, v in given.items()}
    T = (QUICK_T if quick else DEFAULT_T) if T is None else T
    devices = default_devices() if devices is None else devices
    T, models, devices = _check_run_args(T, models, devices, stat, sizes)
    match_thread_pools(threads)
    B, d, m = sizes["batch_size"], sizes["input_size"], sizes["output_size"]

    rows = []
    total, done = len(T) * len(devices), 0
    for device in devices:
        where = tensor_device(device)           # "cpu" for the cuda rows under numba's simulator
        built, errors, params = {}, {}, {}
        for name in models:
            try:
                built[name] = build_model(name, d, sizes["hidden_size"], m, seed=seed).to(where)
                if where != device:             # the simulator: rnnlab's CUDA kernels on CPU tensors
                    for module in built[name].modules():
                        if getattr(module, "backend", None) == "auto":
                            module.backend = "cuda"
                params[name] = _count(built[name])
            except Exception as exc:  # e.g. no kernel for this device
                errors[name] = f"{type(exc).__name__}: {exc}"
        for t in T:
            done += 1
            if progress is not None:
                progress(f"[{done}/{total}] {device} T={t} B={B} d={d} H={sizes['hidden_size']}: "
                         + ", ".join(n for n in models if n in built))
            gen = torch.Generator().manual_seed(seed + t)
            x = torch.randn(B, t, d, generator=gen).to(where)
            g = torch.randn(B, t, m, generator=gen).to(where)
            fns, row_errors = {}, dict(errors)
            for name, model in built.items():
                fn = _fwdbwd(model, x, g)
                try:  # one untimed call: a model that cannot run here is reported, not fatal
                    fn()
                except Exception as exc:
                    row_errors[name] = f"{type(exc).__name__}: {exc}"
                    continue
                fns[name] = fn
            timings = time_calls(fns, warmup=settings["warmup"], min_repeats=settings["min_repeats"],
                                 min_time=settings["min_time"], device=where) if fns else {}
            rows.append(_row(device, t, sizes, stat, models, timings, row_errors, params))
            del x, g, fns
            gc.collect()
    return rows


# ---------------------------------------------------------------- table

def _cell(row, name):
    t = row.get(f"{name}_s")
    if t is None:
        return "error" if name in (row.get("errors") or {}) else "-"
    text = format_seconds(t)
    if name != "lstm" and row.get(f"speedup_{name}") is not None:
        text += f" x{format_ratio(row[f'speedup_{name}'])}"
        verdict = (row.get("targets") or {}).get(f"speedup_{name}")
        if verdict:
            text += f" {verdict['status']}"
    return text


def _spin_warning(rows):
    """A note when OpenMP threads may spin against each other on the CPU (see :func:`run`), else None."""
    import os

    if not any(r["device"] == "cpu" and (r.get("threads") or 1) > 1 for r in rows):
        return None
    if os.environ.get("OMP_WAIT_POLICY", "").lower() == "passive":
        return None
    return ("note: CPU timings with more than one thread and OMP_WAIT_POLICY unset can be badly distorted on a busy "
            "machine (idle OpenMP threads of torch and numba spin; torch's RNNs synchronise threads at every step); "
            "for trustworthy ratios rerun with OMP_WAIT_POLICY=PASSIVE in the environment, or with --threads 1.")


def format_table(rows, *, title=None):
    """The rows of :func:`run` as a plain-text table, with a legend and the target verdicts."""
    rows = list(rows)
    shown = [m for m in MODELS if any(m in r["models"] for r in rows)]
    columns = [Column("device", lambda r: r["device"], "<"), Column("T", lambda r: r["T"])]
    for name in shown:
        columns.append(Column(name, lambda r, n=name: _cell(r, n)))
    stat = rows[0]["stat"] if rows else "median"
    notes = []
    if rows:
        r = rows[0]
        notes.append(f"Forward+backward ({stat} per call) of float32 batches: B = {r['batch_size']}, "
                     f"d = {r['input_size']} inputs, matched hidden size H = {r['hidden_size']}, "
                     f"m = {r['output_size']} outputs.")
        params = ", ".join(f"{n} {p}" for n, p in r["parameters"].items())
        notes.append(f"Trained parameters: {params}.")
    notes.append("xN: N times faster than the LSTM of the same run and device (above 1: faster).")
    for device in dict.fromkeys(r["device"] for r in rows):
        impl = next(r["lstm_impl"] for r in rows if r["device"] == device)
        notes.append(f"lstm on {device}: {impl}.")
    seen = set()
    for r in rows:
        for name, msg in (r.get("errors") or {}).items():
            if (r["device"], name) not in seen:
                seen.add((r["device"], name))
                notes.append(f"error: {name} on {r['device']}: {msg}")
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

def _non_negative_float(text):
    import argparse
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a non-negative number of seconds, got {text!r}")
    return value


def add_arguments(parser):
    """The options of ``python -m rnnlab.bench lds``."""
    q, f = QUICK_SIZE, DEFAULT_SIZE
    parser.add_argument("--quick", action="store_true",
                        help=f"small sizes and one or two calls per model (seconds): T={QUICK_T}, "
                             f"B={q['batch_size']}, d={q['input_size']}, H={q['hidden_size']}")
    parser.add_argument("--T", dest="T", nargs="+", type=_positive_int, metavar="T",
                        help=f"sequence lengths (default {DEFAULT_T})")
    parser.add_argument("--models", nargs="+", choices=MODELS, metavar="MODEL",
                        help=f"among {', '.join(MODELS)} (default {' '.join(DEFAULT_MODELS)})")
    parser.add_argument("--devices", nargs="+", choices=("cpu", "cuda"), metavar="DEVICE",
                        help="cpu and/or cuda (default cpu, plus cuda on a GPU: the LSTM is then cuDNN's)")
    parser.add_argument("--batch-size", type=_positive_int, metavar="B",
                        help=f"batch size (default {f['batch_size']})")
    parser.add_argument("--input-size", type=_positive_int, metavar="D", help=f"inputs (default {f['input_size']})")
    parser.add_argument("--hidden-size", type=_positive_int, metavar="H",
                        help=f"matched hidden size: LDS modes, LSTM cells, RNN units (default {f['hidden_size']}; "
                             "an even multiple of the input size)")
    parser.add_argument("--output-size", type=_positive_int, metavar="M",
                        help=f"outputs (default {f['output_size']})")
    parser.add_argument("--stat", choices=("median", "min", "mean"), default="median",
                        help="statistic of the per-call times used for ratios (default median)")
    parser.add_argument("--min-time", type=_non_negative_float, metavar="S",
                        help=f"seconds of interleaved timing per row (default {_SETTINGS[False]['min_time']}, "
                             f"quick {_SETTINGS[True]['min_time']})")
    parser.add_argument("--seed", type=int, default=0, help="seed of the models and inputs (default 0)")


def from_args(args, parser=None):
    """Run from parsed arguments; return ``(rows, config)``."""
    devices = args.devices or default_devices()
    if "cuda" in devices and not cuda_runs_here() and parser is not None:
        parser.error("device cuda cannot run here: no GPU is available")
    models = tuple(args.models) if args.models else DEFAULT_MODELS
    sizes = dict(batch_size=args.batch_size, input_size=args.input_size, hidden_size=args.hidden_size,
                 output_size=args.output_size)
    timing = {} if args.min_time is None else {"min_time": args.min_time}
    base = QUICK_SIZE if args.quick else DEFAULT_SIZE
    resolved = {k: (base[k] if v is None else v) for k, v in sizes.items()}
    d, H = resolved["input_size"], resolved["hidden_size"]
    if parser is not None and any(m.startswith("lds") for m in models) and (H % d or (H // d) % 2):
        parser.error(f"--hidden-size must be an even multiple of --input-size for the LDS (got H={H}, d={d})")

    def progress(msg):
        print(msg, file=sys.stderr, flush=True)

    rows = run(T=args.T, models=models, devices=devices, quick=args.quick, stat=args.stat, seed=args.seed,
               threads=getattr(args, "threads", None), progress=progress, **sizes, **timing)
    config = {"T": sorted({r["T"] for r in rows}), "models": list(models), "devices": list(devices),
              **resolved, "quick": args.quick, "stat": args.stat, "seed": args.seed,
              "threads": getattr(args, "threads", None), "settings": dict(_SETTINGS[bool(args.quick)], **timing)}
    return rows, config


if __name__ == "__main__":  # pragma: no cover
    from .__main__ import main
    sys.exit(main(["lds"] + sys.argv[1:]))
