"""The copying-memory experiment of the author response (Kaul 2020), runnable from the command line.

    python -m rnnlab train copy-memory --T 2000            # the paper's configuration
    python -m rnnlab train copy-memory --T 100 --epochs 5  # a quick one

The paper's configuration (:data:`PAPER`): an LDS with n = 160 modes and 3380
parameters (:func:`paper_lds`), θ initialised uniformly in [−2π, 2π], AdaMax
with step size 0.01, batch size 256, 300 epochs over 10,000 samples. The
comparison models of Arjovsky et al. are an LSTM with 40 units and a tanh RNN
with 80 units, each with a linear read-out.

Outputs, in ``--out`` (default ``runs/copy-memory-T{T}-{model}``):
``checkpoint.pt`` (resumable, see :mod:`rnnlab.train`), ``metrics.json``
(the training history, for the book's plots) and ``config.json``.

Two further jobs of the book run from this module's own command line (their
JSON results are committed in ``book/lds/data/``)::

    python -m rnnlab.experiments.copy_memory compare-input-weights --seeds 0 1 2 --json out.json
    python -m rnnlab.experiments.copy_memory evaluate RUN_FOLDER --samples 1000 --seed 1000 --json out.json

:func:`compare_input_weights` trains the paper's LDS with B' = 1 and with the
companion B' on the same small budget for several seeds, and records the scale
of the effective read-out weights C'B' and of the logits at initialisation;
:func:`evaluate_run` evaluates a run's checkpoint on its held-out set and on
freshly generated sequences.
"""
import os

import torch
import torch.nn.functional as F
from torch import nn

from ..models.lds import LDS, count_parameters
from ..tasks.copy_memory import (NUM_TOKENS, copy_memory, copy_memory_baseline, copy_memory_loss,
                                 recall_accuracy)
from .. import train as _train
from .._io import atomic_write_json

__all__ = ["PAPER", "paper_lds", "CopyMemoryModel", "make_model", "run", "add_arguments", "main",
           "initial_scales", "compare_input_weights", "evaluate_run", "SMALL_BUDGET"]

PAPER = dict(T=2000, samples=10_000, epochs=300, batch_size=256, lr=0.01, model="lds", hidden=160)
"""The author response's copying-memory run."""

DEFAULT_HIDDEN = {"lds": 160, "lstm": 40, "rnn": 80}


def paper_lds(input_size=NUM_TOKENS, output_size=NUM_TOKENS, hidden_size=160, **overrides):
    """The response's LDS: 3380 trained parameters for 10 inputs, 160 modes, 10 outputs.

    10 single-input LDS (one per input channel after a trained 10×10 mixing
    E) of 16 modes each, unit-modulus eigenvalues in conjugate pairs (80 θ),
    a log-parameterised complex read-out C' (3200 reals), no D, no bias.
    See :class:`rnnlab.models.LDS` for the breakdown.

    B' defaults to ones here (``input_weights="ones"``), not the companion
    formula, as in effect in the public code's final version (its drive is the
    input repeated over the modes). For a fixed spectrum the two give the same
    set of functions (only the products C'_i B'_i matter), but the companion
    B' spans orders of magnitude for random unit-modulus spectra (10⁻³ to 10⁴
    or more at init), so with C' initialised near 1 the effective weights C'B'
    and the initial logits are huge, and AdaMax, which moves each ln|C'| by at
    most about its learning rate per step, needs far more steps than a short
    run has: at T = 100 after 80 steps, 98-99% against 11-71% of the symbols
    recalled over 5 seeds (:func:`compare_input_weights`, committed in
    ``book/lds/data/copy-memory-bprime-seeds.json``). Pass
    ``input_weights="companion"`` for the formula.
    """
    kwargs = dict(eigenvalues="unit", init="uniform", conjugate_pairs=True, multi_input="concat",
                  mix_inputs=True, input_weights="ones", readout="log", use_D=False, bias=False)
    kwargs.update(overrides)
    return LDS(input_size, hidden_size, output_size, **kwargs)


class CopyMemoryModel(nn.Module):
    """Token ids ``(B, L)`` → one-hot → a recurrent core → logits ``(B, L, 10)``.

    ``kind``: ``"lds"`` (:func:`paper_lds` with ``hidden`` modes; it has its
    own read-out), ``"lstm"`` or ``"rnn"`` (``torch.nn.LSTM`` / tanh
    ``torch.nn.RNN`` with ``hidden`` units and a linear read-out). ``forward``
    returns ``(logits, state)`` like the cores.
    """

    def __init__(self, kind="lds", hidden=None, **lds_overrides):
        super().__init__()
        if kind not in DEFAULT_HIDDEN:
            raise ValueError(f"kind must be one of {tuple(DEFAULT_HIDDEN)}, got {kind!r}")
        hidden = DEFAULT_HIDDEN[kind] if hidden is None else hidden
        self.kind, self.hidden = kind, hidden
        if kind == "lds":
            self.core = paper_lds(hidden_size=hidden, **lds_overrides)
            self.head = None
        else:
            cls = nn.LSTM if kind == "lstm" else nn.RNN
            self.core = cls(NUM_TOKENS, hidden, batch_first=True)
            self.head = nn.Linear(hidden, NUM_TOKENS)

    def forward(self, tokens):
        x = F.one_hot(tokens, NUM_TOKENS).to(torch.get_default_dtype())
        y, state = self.core(x)
        if self.head is not None:
            y = self.head(y)
        return y, state


def make_model(kind="lds", hidden=None, seed=0, **lds_overrides):
    """A seeded :class:`CopyMemoryModel`."""
    torch.manual_seed(seed)
    return CopyMemoryModel(kind, hidden, **lds_overrides)


def run(T=PAPER["T"], samples=PAPER["samples"], epochs=PAPER["epochs"], batch_size=PAPER["batch_size"],
        lr=PAPER["lr"], model="lds", hidden=None, seed=0, out=None, device="auto", resume=True,
        eval_samples=1000, eval_every=1, max_steps=None, max_seconds=None, progress=True,
        checkpoint_every=None, lds_overrides=None):
    """Train a copying-memory model with AdaMax; returns :class:`rnnlab.train.TrainResult`.

    Training data: ``copy_memory(T, samples, seed)``; evaluation data:
    ``copy_memory(T, eval_samples, seed + 1)`` (0 to skip), evaluated every
    ``eval_every`` epochs. Metrics: the mean cross-entropy (``loss``, in nats
    per step) and ``recall_accuracy`` on the 10 recalled symbols, plus
    ``baseline`` = 10 ln 8/(T+20) in the run's config. Everything else
    (checkpoints, resuming, stopping early) is :func:`rnnlab.train.train`'s.
    """
    hidden = DEFAULT_HIDDEN[model] if hidden is None else hidden
    net = make_model(model, hidden, seed, **(lds_overrides or {}))
    data = copy_memory(T, samples, seed)
    eval_data = copy_memory(T, eval_samples, seed + 1) if eval_samples else None
    config = dict(task="copy-memory", T=T, samples=samples, epochs=epochs, batch_size=batch_size, lr=lr,
                  model=model, hidden=hidden, seed=seed, eval_samples=eval_samples,
                  baseline=copy_memory_baseline(T), parameters=count_parameters(net),
                  lds_overrides=dict(lds_overrides or {}))
    checkpoint = metrics_file = None
    if out is not None:
        os.makedirs(out, exist_ok=True)
        checkpoint = os.path.join(out, "checkpoint.pt")
        metrics_file = os.path.join(out, "metrics.json")
        atomic_write_json(os.path.join(out, "config.json"), config, indent=1)
    return _train.train(
        net, data, copy_memory_loss,
        optimizer=lambda params: torch.optim.Adamax(params, lr=lr),
        epochs=epochs, batch_size=batch_size, metrics={"recall_accuracy": recall_accuracy},
        eval_data=eval_data, eval_every=eval_every, checkpoint=checkpoint, checkpoint_every=checkpoint_every,
        resume=resume, metrics_file=metrics_file, seed=seed, device=device, progress=progress,
        max_steps=max_steps, max_seconds=max_seconds, config=config)


def add_arguments(parser):
    """Command-line options of ``python -m rnnlab train copy-memory``."""
    p = parser
    p.add_argument("--T", type=int, default=PAPER["T"], help="delay (default %(default)s, the paper's)")
    p.add_argument("--samples", type=int, default=PAPER["samples"], help="training sequences (default %(default)s)")
    p.add_argument("--epochs", type=int, default=PAPER["epochs"], help="default %(default)s")
    p.add_argument("--batch-size", type=int, default=PAPER["batch_size"], help="default %(default)s")
    p.add_argument("--lr", type=float, default=PAPER["lr"], help="AdaMax step size (default %(default)s)")
    p.add_argument("--model", choices=sorted(DEFAULT_HIDDEN), default="lds",
                   help="lds (the paper's, 160 modes; default), lstm (40 units) or rnn (tanh, 80 units)")
    p.add_argument("--hidden", type=int, default=None, help="modes / units (default: 160, 40 or 80 by model)")
    p.add_argument("--input-weights", choices=["companion", "ones"], default="ones",
                   help="LDS only: B' = 1 (trains far faster, same function class) or from the companion form "
                        "(default %(default)s)")
    p.add_argument("--readout", choices=["log", "complex"], default="log",
                   help="LDS only: C' in log space (the public code's) or directly (default %(default)s)")
    p.add_argument("--algorithm", choices=["scan", "fft"], default="scan",
                   help="LDS only: outputs by linear_scan, or (same maths, less memory traffic) by FFT convolution "
                        "(default %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="data, initialisation and batch order (default %(default)s)")
    p.add_argument("--out", default=None, help="run folder (default runs/copy-memory-T{T}-{model})")
    p.add_argument("--device", default="auto",
                   help="auto (CUDA if available), cpu, cuda, cuda:1 ... (default %(default)s)")
    p.add_argument("--no-resume", action="store_true", help="start afresh even if a checkpoint exists")
    p.add_argument("--eval-samples", type=int, default=1000, help="held-out sequences (0: none; default %(default)s)")
    p.add_argument("--eval-every", type=int, default=1, help="epochs between evaluations (default %(default)s)")
    p.add_argument("--checkpoint-every", type=int, default=None,
                   help="steps between checkpoints (always at the end of each epoch)")
    p.add_argument("--max-steps", type=int, default=None, help="stop (resumably) after this many steps in all")
    p.add_argument("--max-minutes", type=float, default=None, help="stop (resumably) after this long")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def main(args):
    """Run from parsed arguments (see :func:`add_arguments`); prints a summary, returns 0."""
    out = args.out or os.path.join("runs", f"copy-memory-T{args.T}-{args.model}")
    overrides = {}
    if args.model == "lds":
        overrides = dict(input_weights=args.input_weights, readout=args.readout, algorithm=args.algorithm)
    result = run(T=args.T, samples=args.samples, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
                 model=args.model, hidden=args.hidden, seed=args.seed, out=out, device=args.device,
                 resume=not args.no_resume, eval_samples=args.eval_samples, eval_every=args.eval_every,
                 checkpoint_every=args.checkpoint_every, max_steps=args.max_steps,
                 max_seconds=None if args.max_minutes is None else 60 * args.max_minutes,
                 progress=not args.no_progress, lds_overrides=overrides)
    last = result.history["epochs"][-1] if result.history["epochs"] else {}
    base = copy_memory_baseline(args.T)
    summary = {k: v for k, v in last.items() if isinstance(v, (int, float))}
    print(f"copy-memory T={args.T} {args.model}: {result.status} at epoch {result.epoch}, step {result.step}; "
          f"baseline {base:.6f}; last epoch {summary}; files in {out}")
    return 0


# ---------------------------------------------------------------------------
# B' = 1 against the companion B', over seeds (the book's comparison)
# ---------------------------------------------------------------------------

SMALL_BUDGET = dict(T=100, samples=2560, epochs=8, batch_size=256, lr=0.01, eval_samples=500)
"""The small budget of the book's comparison: T = 100, 80 AdaMax steps (one minute on a CPU)."""


@torch.no_grad()
def initial_scales(net, tokens):
    """Scales of a :class:`CopyMemoryModel` LDS before training, on the token ids ``tokens`` ``(B, L)``.

    Returns a dict: ``cb_min``, ``cb_max`` (smallest and largest ``|C'_i B'_i|``
    over the modes i and outputs, the effective read-out weights: only these
    products reach the output), ``cb_orders`` (``log10(cb_max/cb_min)``),
    ``bprime_min``, ``bprime_max`` (``|B'_i|``), ``logit_max`` (largest
    ``|logit|`` on ``tokens``) and ``logC_re_max_abs`` (largest ``|ln|C'||``).
    """
    core = net.core
    B = core.input_weights().abs()
    CB = (core.output_weights() * core.input_weights()[:, None]).abs()
    logits, _ = net(tokens)
    out = dict(cb_min=CB.min().item(), cb_max=CB.max().item(),
               bprime_min=B.min().item(), bprime_max=B.max().item(),
               logit_max=logits.abs().max().item())
    out["cb_orders"] = float(torch.log10(CB.max() / CB.min()).item())
    if core.readout_mode == "log":
        out["logC_re_max_abs"] = core.logC_re.abs().max().item()
    return out


def compare_input_weights(seeds=(0, 1, 2), budget=None, variants=None, progress=False):
    """Train the paper's LDS with B' = 1 and with the companion B' for each seed; return a dict.

    Each (variant, seed) is one :func:`run` with ``seed`` (data, initialisation
    and batch order) on ``budget`` (default :data:`SMALL_BUDGET`, the book's
    notebook cell). ``variants`` maps a name to ``lds_overrides`` (default
    ``{"ones": {"input_weights": "ones"}, "companion": {"input_weights": "companion"}}``).

    The result: ``{"budget": ..., "baseline": ..., "runs": [...]}``, one run per
    (variant, seed) with ``variant``, ``seed``, ``seconds``, ``initial``
    (:func:`initial_scales` on the held-out inputs plus ``eval_loss``, the
    held-out loss before training), ``epochs`` (the per-epoch history of
    :func:`run`) and ``final`` (:func:`initial_scales` of the trained model and
    ``logC_re_max_step``, the largest change of any ``ln|C'|`` entry over the run).
    """
    import time

    budget = dict(SMALL_BUDGET if budget is None else budget)
    variants = variants or {"ones": {"input_weights": "ones"}, "companion": {"input_weights": "companion"}}
    runs = []
    for seed in seeds:
        eval_data = copy_memory(budget["T"], budget["eval_samples"], seed + 1)
        for name, overrides in variants.items():
            net = make_model("lds", None, seed, **overrides)
            initial = initial_scales(net, eval_data[0])
            initial["eval_loss"] = _train.evaluate(net, eval_data, copy_memory_loss)["loss"]
            start_logC = net.core.logC_re.detach().clone()
            t0 = time.perf_counter()
            result = run(**budget, model="lds", seed=seed, progress=progress, lds_overrides=overrides)
            seconds = time.perf_counter() - t0
            trained = result.model
            final = initial_scales(trained, eval_data[0])
            final["logC_re_max_step"] = (trained.core.logC_re.detach() - start_logC).abs().max().item()
            runs.append(dict(variant=name, seed=seed, overrides=dict(overrides), seconds=seconds, initial=initial,
                             final=final, steps=result.step, epochs=result.history["epochs"]))
    return dict(budget=budget, baseline=copy_memory_baseline(budget["T"]), variants=variants, runs=runs,
                threads=torch.get_num_threads())


# ---------------------------------------------------------------------------
# A run's checkpoint on fresh data
# ---------------------------------------------------------------------------

def evaluate_run(run_dir, samples=1000, seed=1000, batch_size=None, device="cpu"):
    """Evaluate the checkpoint of a run of :func:`run` on its held-out set and on fresh sequences.

    ``run_dir`` holds ``checkpoint.pt`` (and ``config.json``). The model is
    rebuilt from the checkpoint's config and loaded with its weights; the
    held-out set is the run's own (``copy_memory(T, eval_samples, seed + 1)``),
    the fresh set ``copy_memory(T, samples, seed)`` with the ``seed`` given here
    (it must differ from the run's data seeds). Returns a dict with the
    checkpoint's position (``epoch``, ``step``), the loss and recall on both
    sets, the baseline, and ``fresh_in_training``: how many fresh sequences
    carry the same 10 symbols as some training sequence.
    """
    state = _train.load_checkpoint(os.path.join(run_dir, "checkpoint.pt"))
    config = state["config"]
    if seed in (config["seed"], config["seed"] + 1):
        raise ValueError(f"evaluate_run: seed {seed} is one of the run's own data seeds "
                         f"({config['seed']} for training, {config['seed'] + 1} held out); pick another")
    net = make_model(config["model"], config["hidden"], config["seed"], **config.get("lds_overrides", {}))
    net.load_state_dict(state["model"])
    T = config["T"]
    batch_size = batch_size or config["batch_size"]
    metrics = {"recall_accuracy": recall_accuracy}
    held_out = copy_memory(T, config["eval_samples"], config["seed"] + 1)
    fresh = copy_memory(T, samples, seed)
    out = dict(run_config=config, epoch=state["epoch"], step=state["step"], baseline=copy_memory_baseline(T),
               fresh_seed=seed, fresh_samples=samples)
    for name, data in (("held_out", held_out), ("fresh", fresh)):
        r = _train.evaluate(net, data, copy_memory_loss, metrics, batch_size=batch_size, device=device)
        out[name] = dict(loss=r["loss"], recall_accuracy=r["recall_accuracy"], samples=data[0].shape[0])
    train_symbols = {tuple(row) for row in copy_memory(T, config["samples"], config["seed"])[0][:, :10].tolist()}
    out["fresh_in_training"] = sum(tuple(row) in train_symbols for row in fresh[0][:, :10].tolist())
    return out


def _cli(argv=None):
    """``python -m rnnlab.experiments.copy_memory {compare-input-weights, evaluate} ...``"""
    import argparse
    import shlex
    import sys

    parser = argparse.ArgumentParser(prog="python -m rnnlab.experiments.copy_memory",
                                     description="The book's extra copying-memory jobs; JSON results.")
    sub = parser.add_subparsers(dest="job", required=True)
    c = sub.add_parser("compare-input-weights", help="B' = 1 against the companion B', several seeds")
    c.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    for key, value in SMALL_BUDGET.items():
        c.add_argument(f"--{key.replace('_', '-')}", type=type(value), default=value,
                       help="default %(default)s")
    e = sub.add_parser("evaluate", help="a run's checkpoint on its held-out set and on fresh sequences")
    e.add_argument("run_dir")
    e.add_argument("--samples", type=int, default=1000, help="fresh sequences (default %(default)s)")
    e.add_argument("--seed", type=int, default=1000, help="seed of the fresh sequences (default %(default)s)")
    e.add_argument("--batch-size", type=int, default=None)
    for p in (c, e):
        p.add_argument("--json", required=True, help="where to write the result")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    if args.job == "compare-input-weights":
        budget = {key: getattr(args, key) for key in SMALL_BUDGET}
        result = compare_input_weights(args.seeds, budget)
    else:
        result = evaluate_run(args.run_dir, args.samples, args.seed, args.batch_size)
    env = " ".join(f"{k}={os.environ[k]}" for k in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS") if k in os.environ)
    command = "python -m rnnlab.experiments.copy_memory " + " ".join(shlex.quote(a) for a in argv)
    result = dict(command=(env + " " if env else "") + command, **result)
    atomic_write_json(args.json, result, indent=1)
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(_cli())
