"""Benchmark of a Sparse Combo Net's training step: ``python -m rnnlab.bench combo``.

One training step (forward over ``T`` steps, cross-entropy of the last state's
readout, backward, one Adam step; float32, input size 1 as in sequential MNIST,
10 classes) of the ``p x s`` Sparse Combo Net (:class:`rnnlab.models.SparseComboNet`,
``p`` modules of ``s`` units, ``n = p s``) is timed against networks of the same
size, all interleaved in **one** :func:`rnnlab.bench.timing.time_calls`:

``combo``          the Sparse Combo Net as implemented: per time step
                   ``x <- x + alpha (-x + W relu(x) + L x + u)``, the block-diagonal
                   ``W`` (``p`` fixed sparse ``s x s`` modules, buffers) applied as one
                   batched ``torch.bmm`` over the modules, ``L = B - M^-1 B^T M`` dense;
``combo_dense_w``  the same network (a copy, same weights) with ``W`` applied as a dense
                   ``n x n`` product (``module_blocks`` patched to return None): the
                   block structure left unused;
``combo_no_l``     the same Euler loop without the ``L x`` term (:func:`euler_forward`):
                   an analysis row, not a model; ``combo - combo_no_l`` is what ``L`` costs;
``overhead``       a ``p x 1`` Sparse Combo Net (``n = p``) over the same ``T`` and batch:
                   the same ops per step on tiny tensors, i.e. the per-step Python,
                   dispatch and autograd overhead that a fused kernel would remove;
``dense_euler``    a plain dense RNN of the same size written as the same Euler loop in
                   Python (:class:`DenseEulerRNN`, ``h <- h + alpha (-h + relu(h) W^T + u)``,
                   ``W`` dense ``n x n`` and trained): the same Python/autograd overhead per
                   step, the fair baseline (ratios ``over_dense_euler``);
``nn_rnn``         ``torch.nn.RNN(1, n, nonlinearity="relu", batch_first=True)`` and a linear
                   readout: torch's own loop, for reference (ratios ``over_nn_rnn``);
``svd_combo``      the ``p x s`` SVD Combo Net (:class:`rnnlab.models.SVDComboNet`), whose
                   modules are rebuilt from their parameters at every training step
                   (``--no-svd`` skips it);
``floor``          not a network: ``T`` times the three dense products of one time step's
                   forward and backward, ``(B, n) (n, n)``, ``(B, n) (n, n)^T`` and
                   ``(n, B) (B, n)``, with no recurrence in between: the machine's rate
                   for products of this shape, from which the compute floor ``ideal_s``
                   of each row is derived (``train_macs / rate``).

Operation counts per time step and per training step (:func:`macs_per_time_step`,
:func:`train_macs`) and what a fused kernel could gain from the times of one run
(:func:`kernel_estimate`) are in :mod:`rnnlab.bench.combo_counts`, importable from here too.

From Python::

    from rnnlab.bench import combo
    rows = combo.run(quick=True)
    print(combo.format_table(rows))
"""
import copy
import gc
import sys

import torch
import torch.nn.functional as F

from . import (Column, Target, check_targets, format_ratio, format_seconds, positive_int as _positive_int,
               render_table)
from .combo_counts import ELEMENTWISE  # noqa: F401  (re-exported)
from .combo_counts import INPUT_SIZE, OUTPUT_SIZE, kernel_estimate, macs_per_time_step, train_macs
from .timing import match_thread_pools, time_calls

__all__ = ["run", "format_table", "TARGETS", "ROWS", "DEFAULT", "QUICK", "macs_per_time_step", "train_macs",
           "kernel_estimate", "euler_forward", "dense_w_variant", "DenseEulerRNN"]

DESCRIPTION = ("Sparse Combo Net training step (batched block-diagonal W) against the same net with W dense, a "
               "dense Euler RNN of the same size and torch.nn.RNN; op counts per step, what a kernel would gain")

DEFAULT = dict(modules=16, module_size=32, T=784, batch=64)
QUICK = dict(modules=2, module_size=4, T=16, batch=4)
ALPHA = 0.1
LR = 1e-3

#: Row names, in the table's order, and their labels.
ROWS = {
    "combo": "Sparse Combo Net (W as p blocks, bmm)",
    "combo_dense_w": "Sparse Combo Net, W dense n x n",
    "combo_no_l": "Sparse Combo Net without L x (analysis)",
    "overhead": "Sparse Combo Net p x 1 (overhead)",
    "dense_euler": "dense Euler RNN, same loop (baseline)",
    "nn_rnn": "torch.nn.RNN relu (reference)",
    "svd_combo": "SVD Combo Net (modules rebuilt)",
    "floor": "products only: T x 3 (B,n)(n,n)",
}

_SETTINGS = {
    False: dict(warmup=1, min_repeats=5, min_time=20.0),
    True: dict(warmup=1, min_repeats=1, min_time=0.0),
}

TARGETS = (
    Target("over_dense_euler", "<=", 1.5,
           "Sparse Combo Net training step within 1.5x of the dense Euler RNN of the same size (per step both "
           "do one dense n x n product, L vs W, the combo net n^2/p more for its modules and a few more "
           "elementwise ops)", lambda r: r["name"] == "combo"),
    Target("dense_w_over_combo", ">=", 1.0,
           "applying W as p blocks (bmm) is not slower than as a dense n x n product",
           lambda r: r["name"] == "combo"),
)


# ---------------------------------------------------------------- the networks

class DenseEulerRNN(torch.nn.Module):
    """A dense RNN integrated like the combo nets: ``h <- h + alpha (-h + relu(h) W^T + u_t)``.

    ``u_t = x_t W_ih^T + b`` (one product for all steps), ``W`` dense ``(n, n)`` and trained, readout
    of the last state. ``W`` starts as ``N(0, 0.25 / n)`` (spectral radius about 0.5), so the loop stays
    bounded.
    """

    def __init__(self, input_size, hidden_size, output_size, alpha=ALPHA):
        super().__init__()
        n = int(hidden_size)
        std = n ** -0.5
        self.alpha = float(alpha)
        self.weight_ih = torch.nn.Parameter(torch.randn(n, input_size) * std)
        self.bias_ih = torch.nn.Parameter(torch.randn(n) * std)
        self.weight_hh = torch.nn.Parameter(torch.randn(n, n) * (0.5 * std))
        self.weight_ho = torch.nn.Parameter(torch.randn(output_size, n) * std)
        self.bias_ho = torch.nn.Parameter(torch.randn(output_size) * std)

    def forward(self, input):
        h = input.new_zeros(input.shape[0], self.weight_hh.shape[0])
        Wt = self.weight_hh.T
        for u in (input @ self.weight_ih.T + self.bias_ih).unbind(1):
            h = h + self.alpha * (-h + F.relu(h) @ Wt + u)
        return h @ self.weight_ho.T + self.bias_ho, h


class _TorchRNN(torch.nn.Module):
    """``torch.nn.RNN`` (relu, batch first) and a linear readout of the last state."""

    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.rnn = torch.nn.RNN(input_size, hidden_size, nonlinearity="relu", batch_first=True)
        self.readout = torch.nn.Linear(hidden_size, output_size)

    def forward(self, input):
        hs, _ = self.rnn(input)
        return self.readout(hs[:, -1]), hs[:, -1]


def dense_w_variant(model):
    """A copy of a combo net (same weights) that applies its block-diagonal ``W`` as a dense ``n x n`` product.

    Its ``module_blocks`` returns None, which sends the forward pass to its dense path.
    """
    dense = copy.deepcopy(model)
    dense.module_blocks = lambda: None
    return dense


def euler_forward(model, input, *, feedback=True):
    """The combo net's forward pass (``form="x"``, ``readout="last"``) re-written here, ``L x`` optional.

    With ``feedback=True`` it computes what ``model(input)`` does (the tests check it); ``feedback=False``
    drops the ``L x`` term, to measure what it costs. Returns ``(output, state)``.
    """
    if model.form != "x" or model.readout != "last" or model.output_size is None:
        raise ValueError("euler_forward: needs a combo net with form='x', readout='last' and an output layer")
    h = input.new_zeros(input.shape[0], model.hidden_size)
    Wx = model._recurrent_product()
    Lt = model.feedback().to(input.dtype).T if feedback else None
    phi = F.relu if model.activation == "relu" else getattr(torch, model.activation)
    for u in (input @ model.weight_ih.T + model.bias_ih).unbind(1):
        f = -h + Wx(phi(h)) + u
        if Lt is not None:
            f = f + h @ Lt
        h = h + model.alpha * f
    return h @ model.weight_ho.T + model.bias_ho, h


def _train_step(model, forward, x, y, losses):
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=LR)

    def step():
        opt.zero_grad(set_to_none=True)
        out, _ = forward(x)
        loss = F.cross_entropy(out, y)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return step


def _floor_call(B, n, T, gen):
    a = torch.randn(B, n, generator=gen)
    g = torch.randn(B, n, generator=gen)
    w = torch.randn(n, n, generator=gen) * n ** -0.5

    def call():
        for _ in range(T):
            torch.mm(a, w)
            torch.mm(g, w.T)
            torch.mm(a.T, g)
    return call


# ---------------------------------------------------------------- run

def _ratio(num, den):
    return None if num is None or den is None or den <= 0 else num / den


def run(*, modules=None, module_size=None, T=None, batch=None, quick=False, svd=True, stat="min", seed=0,
        threads=None, progress=None, **timing):
    """Time the rows (:data:`ROWS`) in one interleaved run; return one dict per row.

    Sizes default to :data:`DEFAULT` (:data:`QUICK` if ``quick``); ``svd=False`` skips the SVD Combo Net;
    ``**timing`` overrides ``warmup``, ``min_repeats``, ``min_time``. Keys of a row: ``name``, ``label``,
    the sizes, ``step_s`` (the ``stat`` of the per-call times), ``step_min_s``, ``step_median_s``,
    ``over_dense_euler``, ``over_nn_rnn``, ``dense_w_over_combo`` (on the combo row), ``macs_per_time_step``,
    ``train_macs`` (``x3``, ``exact``, ``forward``), ``gmacs_per_s`` (the ``x3`` count over ``step_s``),
    ``last_loss``, ``timings``, ``targets``; the combo row also has ``kernel_estimate``
    (:func:`kernel_estimate`).
    """
    settings = dict(_SETTINGS[bool(quick)])
    unknown = set(timing) - set(settings)
    if unknown:
        raise TypeError(f"combo.run: unknown timing settings {sorted(unknown)}; expected some of {sorted(settings)}")
    settings.update(timing)
    base = QUICK if quick else DEFAULT
    sizes = {}
    for key, value in (("modules", modules), ("module_size", module_size), ("T", T), ("batch", batch)):
        v = base[key] if value is None else value
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"combo.run: {key} must be a positive integer, got {v!r}")
        sizes[key] = v
    if stat not in ("median", "min", "mean"):
        raise ValueError(f"combo.run: stat must be 'median', 'min' or 'mean', got {stat!r}")
    from rnnlab.models import SparseComboNet, SVDComboNet

    threads = match_thread_pools(threads)
    p, s, T, B = sizes["modules"], sizes["module_size"], sizes["T"], sizes["batch"]
    n = p * s

    def say(msg):
        if progress is not None:
            progress(msg)

    say(f"building the {p}x{s} Sparse Combo Net and the other networks (n={n}, T={T}, B={B})")
    torch.manual_seed(seed)
    combo = SparseComboNet(INPUT_SIZE, [s] * p, OUTPUT_SIZE, seed=seed)
    models = {"combo": (combo, combo), "combo_dense_w": None, "combo_no_l": None}
    dense_w = dense_w_variant(combo)
    no_l = copy.deepcopy(combo)
    models["combo_dense_w"] = (dense_w, dense_w)
    models["combo_no_l"] = (no_l, lambda x: euler_forward(no_l, x, feedback=False))
    tiny = SparseComboNet(INPUT_SIZE, [1] * p, OUTPUT_SIZE, seed=seed)
    models["overhead"] = (tiny, tiny)
    dense = DenseEulerRNN(INPUT_SIZE, n, OUTPUT_SIZE)
    models["dense_euler"] = (dense, dense)
    nn_rnn = _TorchRNN(INPUT_SIZE, n, OUTPUT_SIZE)
    models["nn_rnn"] = (nn_rnn, nn_rnn)
    if svd:
        svd_net = SVDComboNet(INPUT_SIZE, [s] * p, OUTPUT_SIZE)
        models["svd_combo"] = (svd_net, svd_net)

    gen = torch.Generator().manual_seed(seed + 1)
    x = torch.rand(B, T, INPUT_SIZE, generator=gen)       # pixel intensities, MNIST-shaped
    y = torch.randint(0, OUTPUT_SIZE, (B,), generator=gen)
    losses = {name: [] for name in models}
    fns = {name: _train_step(model, forward, x, y, losses[name]) for name, (model, forward) in models.items()}
    fns["floor"] = _floor_call(B, n, T, gen)
    say(f"timing {len(fns)} calls interleaved (warmup {settings['warmup']}, at least {settings['min_repeats']} "
        f"rounds and {settings['min_time']} s)")
    timings = time_calls(fns, warmup=settings["warmup"], min_repeats=settings["min_repeats"],
                         min_time=settings["min_time"])
    t = {name: timing.stat(stat) for name, timing in timings.items()}
    macs = {}
    for name in fns:
        if name == "floor":
            continue
        s_row = 1 if name == "overhead" else s
        macs[name] = train_macs(name, T=T, batch=B, modules=p, module_size=s_row)
    estimate = kernel_estimate(t, macs, T=T, batch=B, n=n)

    rows = []
    for name in ROWS:
        if name not in fns:
            continue
        s_row = 1 if name == "overhead" else s
        row = {"benchmark": "combo", "name": name, "label": ROWS[name], "modules": p, "module_size": s_row,
               "n": p * s_row, "T": T, "B": B, "input_size": INPUT_SIZE, "output_size": OUTPUT_SIZE,
               "alpha": ALPHA, "dtype": "float32", "stat": stat, "threads": threads,
               "step_s": t[name], "step_min_s": timings[name].min, "step_median_s": timings[name].median,
               "over_dense_euler": _ratio(t[name], t["dense_euler"]), "over_nn_rnn": _ratio(t[name], t["nn_rnn"])}
        if name == "floor":
            row["macs_per_time_step"] = None
            row["train_macs"] = {"x3": 3 * T * B * n * n, "exact": 3 * T * B * n * n, "forward": T * B * n * n}
            row["last_loss"] = None
        else:
            row["macs_per_time_step"] = macs_per_time_step(name, batch=B, modules=p, module_size=s_row)
            row["train_macs"] = macs[name]
            row["last_loss"] = losses[name][-1] if losses[name] else None
        row["gmacs_per_s"] = _ratio(row["train_macs"]["x3"] / 1e9, t[name])
        if name == "combo":
            row["dense_w_over_combo"] = _ratio(t["combo_dense_w"], t["combo"])
            row["kernel_estimate"] = estimate
        row["timings"] = timings[name].as_dict()
        row["targets"] = check_targets(row, TARGETS)
        rows.append(row)
    del models, fns
    gc.collect()
    return rows


# ---------------------------------------------------------------- table

def _macs(v):
    if v is None:
        return "-"
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if v >= scale:
            return f"{v / scale:.3g}{unit}"
    return str(v)


def _signed_seconds(v):
    if v is None:
        return "-"
    return ("-" if v < 0 else "") + format_seconds(abs(v))


def _pct(v):
    return "-" if v is None else f"{100 * v:.0f}%"


def format_table(rows, title=None):
    rows = list(rows)
    columns = [
        Column("row", lambda r: r["label"], "<"),
        Column("n", lambda r: r["n"]),
        Column("step min", lambda r: format_seconds(r["step_min_s"])),
        Column("step median", lambda r: format_seconds(r["step_median_s"])),
        Column("/dense Euler", lambda r: format_ratio(r["over_dense_euler"])),
        Column("/nn.RNN", lambda r: format_ratio(r["over_nn_rnn"])),
        Column("MAC/step in", lambda r: _macs((r["macs_per_time_step"] or {}).get("input"))),
        Column("W", lambda r: _macs((r["macs_per_time_step"] or {}).get("w"))),
        Column("L", lambda r: _macs((r["macs_per_time_step"] or {}).get("l"))),
        Column("elementwise", lambda r: _macs((r["macs_per_time_step"] or {}).get("elementwise"))),
        Column("MAC/train step (x3)", lambda r: _macs(r["train_macs"]["x3"])),
        Column("GMAC/s", lambda r: "-" if r["gmacs_per_s"] is None else f"{r['gmacs_per_s']:.1f}"),
    ]
    first = rows[0] if rows else {}
    stat = first.get("stat", "min")
    notes = [f"One training step: forward over T={first.get('T')} steps, cross-entropy of the last state's readout, "
             f"backward, Adam; batch {first.get('B')}, float32, input size 1; every row timed interleaved in one "
             f"run; ratios use the {stat} of the per-call times.",
             "MAC/step: multiply-accumulates of one forward time step by component (elementwise: operations, not "
             "MACs); MAC/train step = 3 x forward over T plus readout (convention: each product's backward is two "
             "products of its size). GMAC/s: that count over the step time."]
    combo = next((r for r in rows if r["name"] == "combo"), None)
    floor = next((r for r in rows if r["name"] == "floor"), None)
    if combo is not None and combo.get("kernel_estimate"):
        e = combo["kernel_estimate"]
        c = combo["step_s"]
        notes.append(f"Block structure: W as {combo['modules']} blocks saves "
                     f"{_signed_seconds(e['w_dense_extra_s'])} per step "
                     f"against W dense (dense-W/blocks {format_ratio(combo.get('dense_w_over_combo'))}); "
                     f"the blocks are 1/{combo['modules']} of W's dense MACs, but L stays a dense n x n product.")
        notes.append(f"Where the combo step goes ({format_seconds(c)}): L x {format_seconds(e['l_s'])} "
                     f"({_pct(e['l_share'])}, combo - combo without L); per-step overhead "
                     f"{format_seconds(e['overhead_s'])} ({_pct(e['overhead_share'])}, the p x 1 net); "
                     f"the rest (block product, elementwise, input projection, Adam) the remainder.")
        if floor is not None and e["rate_macs_per_s"] is not None:
            notes.append(f"Compute floor: the products-only row runs {e['rate_macs_per_s'] / 1e9:.1f} GMAC/s; at that "
                         f"rate the combo step's exact MACs ({_macs(combo['train_macs']['exact'])}) take "
                         f"{format_seconds(e['ideal_s'])}: the step runs at {_pct(e['fraction_of_ideal'])} of this "
                         f"ideal (dense Euler RNN: {_pct(e['dense_euler_fraction_of_ideal'])}).")
        if e["fused_gain"] is not None:
            notes.append(f"A fused kernel (one call per sequence forward and backward) removes at most the per-step "
                         f"overhead: about {format_seconds(e['fused_s'])} per step, {format_ratio(e['fused_gain'])}x "
                         f"faster; no kernel beats the floor ({format_ratio(e['bound_gain'])}x). A kernel could also "
                         f"skip L's zero diagonal blocks (1/{combo['modules']} of L) and apply W's blocks and L "
                         f"as one n x n matrix: the dense RNN's MACs.")
    notes.append("Targets: " + "; ".join(t.description for t in TARGETS) + ".")
    verdicts = [f"{k} {v['value']:.2f} {v['status']}" if v.get("value") is not None else f"{k} {v['status']}"
                for r in rows for k, v in (r.get("targets") or {}).items()]
    if verdicts:
        notes.append("Target verdicts: " + ", ".join(verdicts))
    return render_table(rows, columns, title=title, notes=notes)


# ---------------------------------------------------------------- command line

def add_arguments(parser):
    """The options of ``python -m rnnlab.bench combo``."""
    parser.add_argument("--quick", action="store_true",
                        help=f"small sizes and one timed call (seconds): {QUICK['modules']}x{QUICK['module_size']}, "
                             f"T={QUICK['T']}, batch {QUICK['batch']}")
    parser.add_argument("--modules", type=_positive_int, metavar="P",
                        help=f"number of modules p (default {DEFAULT['modules']})")
    parser.add_argument("--module-size", type=_positive_int, metavar="S",
                        help=f"units per module s (default {DEFAULT['module_size']})")
    parser.add_argument("--T", dest="T", type=_positive_int, metavar="T",
                        help=f"sequence length (default {DEFAULT['T']}, sequential MNIST)")
    parser.add_argument("--batch", type=_positive_int, metavar="B", help=f"batch size (default {DEFAULT['batch']})")
    parser.add_argument("--no-svd", dest="svd", action="store_false", help="do not time the SVD Combo Net")
    parser.add_argument("--stat", choices=("min", "median", "mean"), default="min",
                        help="statistic of the per-call times used in the ratios (default min: the best repeat)")
    parser.add_argument("--min-time", type=float, metavar="S",
                        help=f"seconds of interleaved timing (default {_SETTINGS[False]['min_time']})")
    parser.add_argument("--min-repeats", type=_positive_int, metavar="N",
                        help=f"timed calls of each row at least (default {_SETTINGS[False]['min_repeats']})")
    parser.add_argument("--seed", type=int, default=0, help="seed of the modules, weights and inputs (default 0)")


def from_args(args, parser=None):
    """Run from parsed arguments; return ``(rows, config)``."""
    timing = {}
    if args.min_time is not None:
        if args.min_time < 0:
            if parser is not None:
                parser.error(f"argument --min-time: must be >= 0, got {args.min_time}")
            raise ValueError(f"--min-time must be >= 0, got {args.min_time}")
        timing["min_time"] = args.min_time
    if args.min_repeats is not None:
        timing["min_repeats"] = args.min_repeats

    def progress(msg):
        print(msg, file=sys.stderr, flush=True)

    rows = run(modules=args.modules, module_size=args.module_size, T=args.T, batch=args.batch, quick=args.quick,
               svd=args.svd, stat=args.stat, seed=args.seed, threads=getattr(args, "threads", None),
               progress=progress, **timing)
    first = rows[0]
    config = {"modules": first["modules"], "module_size": first["module_size"], "n": first["n"], "T": first["T"],
              "batch": first["B"], "input_size": INPUT_SIZE, "output_size": OUTPUT_SIZE, "alpha": ALPHA, "lr": LR,
              "dtype": "float32", "quick": args.quick, "svd": args.svd, "stat": args.stat, "seed": args.seed,
              "threads": getattr(args, "threads", None), "settings": dict(_SETTINGS[bool(args.quick)], **timing),
              "macs_convention": "train step = 3 x forward MACs (+ readout); train_macs.exact counts only the "
                                 "gradients autograd computes"}
    return rows, config


if __name__ == "__main__":  # pragma: no cover
    from .__main__ import main
    sys.exit(main(["combo"] + sys.argv[1:]))
