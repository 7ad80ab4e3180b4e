"""The transduction experiments of Grefenstette et al. 2015, runnable from the command line.

    python -m rnnlab train transduction --task reversal --model stack          # the paper's set-up
    python -m rnnlab train transduction --task copy --model lstm --layers 4
    python -m rnnlab train transduction --evaluate --out runs/transduction-reversal-stack-h256-s0

The paper's protocol (:data:`PAPER`): one joint sequence ``<s> source ||| target </s>`` per example
(:func:`rnnlab.tasks.joint_sequences`), 64-dim embeddings, memory values 256, hidden 256 or 512; RMSProp,
batch 10, learning rate from {5e-3, 1e-3, 5e-4, 1e-4, 5e-5}, gradients clipped at 1, trained "until
convergence" on freshly drawn sequences with source lengths 8..64; the best model per architecture chosen by
training perplexity; scored by greedy decoding of 1000 sequences at the training lengths and 1000 at 65..128
(coarse: whole target right; fine: the correct prefix's share, :func:`rnnlab.tasks.transduction_accuracy`).

What is ours where the paper is silent: RMSProp with torch's defaults (``alpha=0.99, eps=1e-8``) and no
momentum; clipping of the gradient's global norm (not of each entry); the run length (``--steps``, default
:data:`PAPER` ``["steps"]``); the stopping rule (none: the run trains for ``--steps`` and records the
validation metrics every ``--eval-every`` steps, so that the lead can pick the point of convergence).

Data. Step ``g`` (0-based, counted across epochs) trains on ``transduction(task, batch_size, 8, 64,
seed=S(seed, 0, g))`` where ``S`` derives an integer from ``numpy.random.SeedSequence``: a fresh batch at
every step, the same for the same seed and step, so a resumed run sees exactly the batches of an
uninterrupted one. The validation set (``eval_samples`` sequences at the training lengths, seed
``S(seed, 1)``) is fixed for the run; the test set (``test_samples`` at 65..128, ``S(seed, 2)``) is
decoded once, at the end. :func:`evaluate_run` draws fresh sets from ``S(fresh_seed, 5)`` and
``S(fresh_seed, 6)``, which no run's stream uses.

Outputs, in ``--out`` (default ``runs/transduction-{task}-{model}-h{hidden}-s{seed}``, the model written
``lstm4`` for four layers): ``checkpoint.pt`` (resumable, :mod:`rnnlab.train`), ``config.json`` and
``metrics.json``: the training history of :func:`rnnlab.train.train`, where each epoch of ``--eval-every``
steps has ``loss`` (mean cross-entropy per predicted symbol, nats), ``perplexity`` (``exp(loss)``, the
training perplexity), ``val_perplexity`` (teacher forced), ``val_coarse`` and ``val_fine`` (greedy
decoding); and, once the run has completed, ``test``: ``{"step", "coarse", "fine", "perplexity",
"samples", "lengths"}``, with ``"memory"`` for the memory models: :func:`memory_use` on the test set
(mean push and pop strengths over source and target steps, the values' lifetime).
"""
import json
import math
import os
import time

import numpy as np
import torch
import torch.nn.functional as F

from .. import train as _train
from .._validate import check_int
from ..kernels import neural_memory
from ..models.memory_lstm import KINDS, DeepLSTM, MemoryLSTM, count_parameters
from ..tasks.transduction import (IGNORE_INDEX, TASKS, joint_sequences, transduction, transduction_accuracy,
                                  transduction_vocab)
from .run_folder import prepare_run_folder, write_json

__all__ = ["PAPER", "MODELS", "make_model", "batch_stream", "transduction_loss", "decode_metrics",
           "perplexity", "memory_use", "run", "evaluate_run", "add_arguments", "main", "derived_seed"]

PAPER = dict(task="reversal", model="stack", layers=1, hidden=256, values=256, embedding=64, vocab=128,
             batch_size=10, lr=1e-3, clip=1.0, optimizer="rmsprop", pop_bias=-1.0, train_lengths=(8, 64),
             test_lengths=(65, 128), eval_samples=1000, test_samples=1000, steps=100_000, eval_every=1000)
"""The paper's configuration (``steps`` and ``eval_every`` are ours: the paper trains "until convergence")."""

MODELS = KINDS + ("lstm",)
EVAL_BATCH = 100
"""Sequences decoded together (sorted by length) in evaluations."""


def derived_seed(*key):
    """A 63-bit int seed from the non-negative ints ``key`` (``numpy.random.SeedSequence``): distinct keys give
    independent streams."""
    return int(np.random.SeedSequence([int(k) for k in key]).generate_state(2, np.uint64)[0] >> np.uint64(1))


def make_model(model="stack", n_source=128, n_target=128, hidden=256, values=256, layers=1, embedding=64,
               pop_bias=-1.0, backend="auto", seed=0):
    """A seeded :class:`rnnlab.models.MemoryLSTM` (``model`` in stack/queue/deque) or
    :class:`rnnlab.models.DeepLSTM` (``"lstm"``, ``layers`` layers)."""
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    torch.manual_seed(seed)
    if model == "lstm":
        return DeepLSTM(n_source, n_target, hidden_size=hidden, num_layers=layers, embedding_size=embedding)
    if layers != 1:
        raise ValueError(f"layers applies to model='lstm' only (the memory models have one controller layer), "
                         f"got layers={layers} with model={model!r}")
    return MemoryLSTM(n_source, n_target, model, hidden_size=hidden, value_size=values, embedding_size=embedding,
                      pop_bias=pop_bias, backend=backend)


def transduction_loss(logits, targets):
    """Mean cross-entropy (nats) per predicted symbol; positions marked ``IGNORE_INDEX`` are left out."""
    return F.cross_entropy(logits.transpose(1, 2), targets, ignore_index=IGNORE_INDEX)


def batch_stream(task, batch_size, lengths, vocab, seed, steps_per_epoch):
    """``data(epoch, batch) -> (inputs, targets)`` for :func:`rnnlab.train.train`: a fresh batch per step.

    Step ``g = epoch * steps_per_epoch + batch`` draws ``transduction(task, batch_size, *lengths, vocab,
    seed=derived_seed(seed, 0, g))`` and returns its :func:`rnnlab.tasks.joint_sequences` inputs and targets.
    """
    n_source, n_target = (len(w) for w in transduction_vocab(task, vocab))

    def data(epoch, batch):
        g = epoch * steps_per_epoch + batch
        sources, targets = transduction(task, batch_size, lengths[0], lengths[1], vocab, seed=derived_seed(seed, 0, g))
        joint = joint_sequences(sources, targets, n_source, n_target)
        return joint.inputs, joint.targets
    return data


@torch.no_grad()
def perplexity(model, sources, targets, batch_size=EVAL_BATCH):
    """Teacher-forced perplexity ``exp(mean cross-entropy per predicted symbol)`` of ``model`` on the pairs."""
    n_source, n_target = model.n_source, model.n_target
    device = next(model.parameters()).device
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    total, count = 0.0, 0
    for k in range(0, len(order), batch_size):
        idx = order[k:k + batch_size]
        joint = joint_sequences([sources[i] for i in idx], [targets[i] for i in idx], n_source, n_target)
        logits = model(joint.inputs.to(device), joint.lengths)
        y = joint.targets.to(device)
        total += F.cross_entropy(logits.transpose(1, 2), y, ignore_index=IGNORE_INDEX, reduction="sum").item()
        count += int((y != IGNORE_INDEX).sum())
    return math.exp(total / count)


@torch.no_grad()
def decode_metrics(model, sources, targets, batch_size=EVAL_BATCH):
    """``{"coarse", "fine"}`` of greedy decodings of ``sources`` against ``targets``.

    Each decoding is cut at ``len(target) + 1`` symbols, which gives the accuracies of an unlimited one
    (see :meth:`rnnlab.models.MemoryLSTM.default_max_len`).
    """
    predictions = model.greedy_decode(sources, max_len=[len(t) + 1 for t in targets], batch_size=batch_size)
    coarse, fine = transduction_accuracy(predictions, targets, model.end_id)
    return {"coarse": coarse, "fine": fine}


@torch.no_grad()
def memory_use(model, sources, targets, batch_size=EVAL_BATCH):
    """How a :class:`rnnlab.models.MemoryLSTM` uses its memory on the pairs, teacher forced.

    Each pair is read as its joint sequence ``<s> s_1 .. s_m ||| t_1 .. t_k`` (steps ``0 .. m + k + 1``).
    *Source steps* are those reading ``s_1 .. s_m`` (steps ``1 .. m``); *target steps* those reading
    ``|||`` and ``t_1 .. t_k`` (steps ``m + 1 .. m + k + 1``, which predict ``t_1 .. t_k`` and ``</s>``);
    the ``<s>`` step is in neither. Returns a dict:

    - ``push_source``, ``pop_source``, ``push_target``, ``pop_target``: the mean push strength ``d_t`` and
      pop strength ``u_t`` over all source (target) steps of all pairs (the deque: over both ends);
    - ``lifetime``: the strength-weighted mean age of a value when it is popped. With ``s_t[i]`` the
      strength of the value pushed at step ``i`` after step ``t`` (:func:`rnnlab.kernels.neural_memory`),
      step ``t > i`` pops ``s_{t-1}[i] - s_t[i]`` of it, at age ``t - i``;
      ``lifetime = sum (t - i)(s_{t-1}[i] - s_t[i]) / sum (s_{t-1}[i] - s_t[i])`` over every value, step
      and pair (a value is never popped at the step that pushes it: the pop comes first). An exact stack
      solution of reversal pushes 1 at each source step and pops 1 at each target step from ``|||`` on:
      the output of step ``t`` sees the read of step ``t - 1``, so the ``|||`` step outputs ``s_m`` and
      pops it. It pops ``s_i`` at age ``2 (m - i) + 1``: a lifetime of ``m`` for a source of length m
      (NaN when next to nothing, under 1e-9 of the pushed strength, was popped);
    - ``unpopped``: the share of all pushed strength still in the memory after the last step (strength
      that the lifetime does not count).
    """
    if not isinstance(model, MemoryLSTM):
        raise TypeError(f"memory_use needs a MemoryLSTM, got {type(model).__name__}")
    device = next(model.parameters()).device
    captured = {"push": [], "pop": []}
    hooks = [getattr(model, name).register_forward_hook(lambda mod, inp, out, name=name: captured[name].append(out))
             for name in captured]
    sums = dict(push_source=0.0, pop_source=0.0, push_target=0.0, pop_target=0.0)
    counts = dict(source=0, target=0)
    popped_age = popped = pushed = left = 0.0
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    was_training = model.training
    model.eval()
    try:
        for k in range(0, len(order), batch_size):
            idx = order[k:k + batch_size]
            src, tgt = [sources[i] for i in idx], [targets[i] for i in idx]
            joint = joint_sequences(src, tgt, model.n_source, model.n_target)
            captured["push"].clear()
            captured["pop"].clear()
            model(joint.inputs.to(device), joint.lengths)
            d = torch.sigmoid(torch.stack(captured["push"], 1)).double().cpu()    # (B, L, heads)
            u = torch.sigmoid(torch.stack(captured["pop"], 1)).double().cpu()
            B, L, heads = d.shape
            t = torch.arange(L)
            m = torch.tensor([len(s) for s in src]).unsqueeze(1)
            n = torch.as_tensor(joint.lengths).reshape(B, 1)                   # steps of each row
            source = ((t >= 1) & (t <= m)).double().unsqueeze(2)
            target = ((t > m) & (t < n)).double().unsqueeze(2)
            for name, x in (("push", d), ("pop", u)):
                sums[f"{name}_source"] += float((x * source).sum())
                sums[f"{name}_target"] += float((x * target).sum())
            counts["source"] += heads * int(source.sum())
            counts["target"] += heads * int(target.sum())
            if heads == 1:
                _, S = neural_memory(model.kind, d.new_zeros(B, L, 1), d[..., 0], u[..., 0])
                born = t                                          # column i: pushed at step i
            else:
                _, S = neural_memory("deque", d.new_zeros(B, L, 2, 1), d, u)
                born = torch.cat([L - 1 - torch.arange(L), torch.arange(L)])  # bottom columns, then top
            valid = (t < n).double()                                          # (B, L)
            prev = torch.cat([S.new_zeros(B, 1, S.shape[2]), S[:, :-1]], 1)
            pops = (prev - S).clamp(min=0) * valid.unsqueeze(2)               # (B, L, columns)
            age = (t.unsqueeze(1) - born.unsqueeze(0)).double()               # (L, columns)
            popped_age += float((pops * age).sum())
            popped += float(pops.sum())
            pushed += float((d.sum(2) * valid).sum())
            left += float(S[torch.arange(B), n[:, 0] - 1].sum())
    finally:
        for h in hooks:
            h.remove()
        model.train(was_training)
    out = {key: value / max(counts[key.split("_")[1]], 1) for key, value in sums.items()}
    out["lifetime"] = popped_age / popped if popped > 1e-9 * pushed else float("nan")
    out["unpopped"] = left / pushed if pushed > 0 else float("nan")
    return out


def _split_sets(task, n, lengths, vocab, seed):
    return transduction(task, n, lengths[0], lengths[1], vocab, seed=seed)


def _model_config(config):
    return dict(model=config["model"], n_source=config["n_source"], n_target=config["n_target"],
                hidden=config["hidden"], values=config["values"], layers=config["layers"],
                embedding=config["embedding"], pop_bias=config["pop_bias"], seed=config["seed"])


def _memory_backend(net):
    if not isinstance(net, MemoryLSTM):
        return None
    try:
        state = net.start(1, 1)
        return state[0].backend
    except Exception:  # noqa: BLE001 - only informative
        return net.backend


SIGNATURE_KEYS = ("task", "model", "layers", "hidden", "values", "embedding", "vocab", "train_lengths",
                  "eval_every", "batch_size", "seed", "pop_bias")


def run(task=PAPER["task"], model=PAPER["model"], layers=1, hidden=PAPER["hidden"], values=PAPER["values"],
        embedding=PAPER["embedding"], vocab=PAPER["vocab"], lr=PAPER["lr"], batch_size=PAPER["batch_size"],
        clip=PAPER["clip"], optimizer=PAPER["optimizer"], pop_bias=PAPER["pop_bias"], steps=PAPER["steps"],
        eval_every=PAPER["eval_every"], eval_samples=PAPER["eval_samples"], test_samples=PAPER["test_samples"],
        train_lengths=PAPER["train_lengths"], test_lengths=PAPER["test_lengths"], backend="auto", seed=0,
        out=None, device="auto", resume=True, max_steps=None, max_seconds=None, progress=True,
        checkpoint_every=None, eval_batch_size=EVAL_BATCH):
    """Train a transduction model; returns :class:`rnnlab.train.TrainResult` with ``extra["test"]`` once
    completed (the test-set metrics, also in ``metrics.json``).

    ``steps`` optimizer steps in "epochs" of ``eval_every`` steps (``steps`` must be a multiple of it); after
    each, the validation metrics (see the module docstring). ``eval_samples=0`` skips the validation
    decoding (the training perplexity is still recorded), ``test_samples=0`` the test. Everything else
    (checkpoints, resuming, stopping early with ``max_steps``/``max_seconds``) is :func:`rnnlab.train.train`'s.
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    for name, value in (("steps", steps), ("eval_every", eval_every)):
        check_int(name, value, minimum=1)
    if steps % eval_every:
        raise ValueError(f"steps ({steps}) must be a multiple of eval_every ({eval_every})")
    if optimizer not in ("rmsprop", "adam"):
        raise ValueError(f"optimizer must be 'rmsprop' or 'adam', got {optimizer!r}")
    train_lengths, test_lengths = tuple(int(x) for x in train_lengths), tuple(int(x) for x in test_lengths)
    n_source, n_target = (len(w) for w in transduction_vocab(task, vocab))
    layers = layers if model == "lstm" else 1
    net = make_model(model, n_source, n_target, hidden, values, layers, embedding, pop_bias, backend, seed)
    net.to(_train.resolve_device(device))
    config = dict(task=task, model=model, layers=layers, hidden=hidden, values=values, embedding=embedding,
                  vocab=vocab, n_source=n_source, n_target=n_target, lr=lr, batch_size=batch_size, clip=clip,
                  optimizer=optimizer, pop_bias=pop_bias, steps=steps, eval_every=eval_every,
                  eval_samples=eval_samples, test_samples=test_samples, train_lengths=list(train_lengths),
                  test_lengths=list(test_lengths), seed=seed, backend=backend,
                  memory_backend=_memory_backend(net), parameters=count_parameters(net),
                  threads=torch.get_num_threads())
    checkpoint, metrics_file = prepare_run_folder(out, config, SIGNATURE_KEYS, resume)

    eval_set = _split_sets(task, eval_samples, train_lengths, vocab, derived_seed(seed, 1)) if eval_samples else None

    def eval_fn(model_, record):
        extra = {"perplexity": math.exp(min(record["loss"], 700.0))}
        if eval_set is not None:
            extra["val_perplexity"] = perplexity(model_, *eval_set, batch_size=eval_batch_size)
            extra.update({f"val_{k}": v for k, v in decode_metrics(model_, *eval_set, eval_batch_size).items()})
        return extra

    if optimizer == "rmsprop":
        make_opt = lambda params: torch.optim.RMSprop(params, lr=lr)  # noqa: E731
    else:
        make_opt = lambda params: torch.optim.Adam(params, lr=lr)  # noqa: E731
    result = _train.train(
        net, batch_stream(task, batch_size, train_lengths, vocab, seed, eval_every), transduction_loss,
        optimizer=make_opt, epochs=steps // eval_every, steps_per_epoch=eval_every, batch_size=batch_size,
        grad_clip=clip, checkpoint=checkpoint, checkpoint_every=checkpoint_every, resume=resume,
        metrics_file=metrics_file, seed=seed, device=device, progress=progress, max_steps=max_steps,
        max_seconds=max_seconds, config=config, eval_fn=eval_fn)
    if result.completed and test_samples:
        test_set = _split_sets(task, test_samples, test_lengths, vocab, derived_seed(seed, 2))
        was_training = net.training
        net.eval()
        try:
            test = dict(step=result.step, **decode_metrics(net, *test_set, eval_batch_size),
                        perplexity=perplexity(net, *test_set, batch_size=eval_batch_size),
                        samples=test_samples, lengths=list(test_lengths))
            if isinstance(net, MemoryLSTM):
                test["memory"] = memory_use(net, *test_set, batch_size=eval_batch_size)
        finally:
            net.train(was_training)
        result.extra["test"] = test
        if metrics_file is not None:
            with open(metrics_file) as f:
                saved = json.load(f)
            saved["test"] = test
            write_json(metrics_file, saved)
    return result


def evaluate_run(run_dir, samples=1000, seed=1000, batch_size=EVAL_BATCH, device="cpu", backend=None):
    """Evaluate the checkpoint in ``run_dir`` on fresh sequences at the run's training and test lengths.

    The model is rebuilt from the checkpoint's config and loaded with its weights; ``samples`` sequences at
    the training lengths (seed ``derived_seed(seed, 5)``) and as many at the test lengths
    (``derived_seed(seed, 6)``) are decoded greedily. Returns a dict with the checkpoint's ``step`` and
    ``epoch``, the run's config and, for ``"train_lengths"`` and ``"test_lengths"``: ``coarse``, ``fine``,
    ``perplexity`` (teacher forced), ``samples``, ``lengths``, ``seconds``, and for the memory models
    ``memory`` (:func:`memory_use`).
    """
    state = _train.load_checkpoint(os.path.join(run_dir, "checkpoint.pt"))
    config = state["config"]
    mc = _model_config(config)
    net = make_model(**mc, backend=backend or config.get("backend", "auto"))
    net.load_state_dict(state["model"])
    net.to(_train.resolve_device(device)).eval()
    out = dict(run_config=config, step=state["step"], epoch=state["epoch"], fresh_seed=seed)
    for key, lengths, tag in (("train_lengths", config["train_lengths"], 5),
                              ("test_lengths", config["test_lengths"], 6)):
        t0 = time.perf_counter()
        sources, targets = _split_sets(config["task"], samples, lengths, config["vocab"], derived_seed(seed, tag))
        res = decode_metrics(net, sources, targets, batch_size)
        res["perplexity"] = perplexity(net, sources, targets, batch_size)
        if isinstance(net, MemoryLSTM):
            res["memory"] = memory_use(net, sources, targets, batch_size)
        out[key] = dict(res, samples=samples, lengths=list(lengths), seconds=round(time.perf_counter() - t0, 3))
    return out


def _default_out(args):
    name = args.model if args.model != "lstm" else f"lstm{args.layers}"
    return os.path.join("runs", f"transduction-{args.task}-{name}-h{args.hidden}-s{args.seed}")


def add_arguments(parser):
    """Command-line options of ``python -m rnnlab train transduction``."""
    p = parser
    p.add_argument("--task", choices=TASKS, default=PAPER["task"], help="default %(default)s")
    p.add_argument("--model", choices=MODELS, default=PAPER["model"],
                   help="stack, queue, deque (one-layer LSTM controller with that memory) or lstm (the Deep LSTM "
                        "baseline; --layers); default %(default)s")
    p.add_argument("--layers", type=int, default=1, help="Deep LSTM layers (the paper: 1, 2, 4, 8; default 1)")
    p.add_argument("--hidden", type=int, default=PAPER["hidden"], help="LSTM size (256 or 512; default %(default)s)")
    p.add_argument("--values", type=int, default=PAPER["values"], help="memory value size (default %(default)s)")
    p.add_argument("--embedding", type=int, default=PAPER["embedding"], help="default %(default)s")
    p.add_argument("--vocab", type=int, default=PAPER["vocab"],
                   help="symbols of the synthetic tasks (default %(default)s; the ITG tasks fix their own)")
    p.add_argument("--lr", type=float, default=PAPER["lr"], help="learning rate (default %(default)s)")
    p.add_argument("--optimizer", choices=["rmsprop", "adam"], default=PAPER["optimizer"],
                   help="default %(default)s (torch's RMSprop defaults otherwise)")
    p.add_argument("--batch-size", type=int, default=PAPER["batch_size"], help="default %(default)s")
    p.add_argument("--clip", type=float, default=PAPER["clip"],
                   help="clip the gradient norm to this (0: no clipping; default %(default)s)")
    p.add_argument("--pop-bias", type=float, default=PAPER["pop_bias"], help="initial b_u (default %(default)s)")
    p.add_argument("--steps", type=int, default=PAPER["steps"], help="optimizer steps in all (default %(default)s)")
    p.add_argument("--eval-every", type=int, default=PAPER["eval_every"],
                   help="steps between validation evaluations; --steps must be a multiple (default %(default)s)")
    p.add_argument("--eval-samples", type=int, default=PAPER["eval_samples"],
                   help="validation sequences at the training lengths (0: none; default %(default)s)")
    p.add_argument("--test-samples", type=int, default=PAPER["test_samples"],
                   help="test sequences at the test lengths, decoded at the end (0: none; default %(default)s)")
    p.add_argument("--min-len", type=int, default=PAPER["train_lengths"][0], help="default %(default)s")
    p.add_argument("--max-len", type=int, default=PAPER["train_lengths"][1], help="default %(default)s")
    p.add_argument("--test-min-len", type=int, default=PAPER["test_lengths"][0], help="default %(default)s")
    p.add_argument("--test-max-len", type=int, default=PAPER["test_lengths"][1], help="default %(default)s")
    p.add_argument("--backend", default="auto", help="NeuralMemory backend: auto, cpu, cuda, torch (default auto)")
    p.add_argument("--seed", type=int, default=0, help="data, initialisation (default %(default)s)")
    p.add_argument("--out", default=None,
                   help="run folder (default runs/transduction-{task}-{model}-h{hidden}-s{seed})")
    p.add_argument("--device", default="auto", help="auto (CUDA if available), cpu, cuda ... (default %(default)s)")
    p.add_argument("--threads", type=int, default=None, help="torch (and numba) CPU threads (default: torch's)")
    p.add_argument("--no-resume", action="store_true", help="start afresh even if a checkpoint exists")
    p.add_argument("--checkpoint-every", type=int, default=None,
                   help="steps between checkpoints (always after each evaluation)")
    p.add_argument("--max-steps", type=int, default=None, help="stop (resumably) after this many steps in all")
    p.add_argument("--max-minutes", type=float, default=None, help="stop (resumably) after this long")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--evaluate", action="store_true",
                   help="do not train: evaluate the checkpoint in --out on fresh sequences at the training and "
                        "test lengths (--fresh-samples, --fresh-seed) and write evaluation.json there (or --json)")
    p.add_argument("--fresh-samples", type=int, default=1000,
                   help="--evaluate: sequences per set (default %(default)s)")
    p.add_argument("--fresh-seed", type=int, default=1000,
                   help="--evaluate: seed of the fresh sets (default %(default)s)")
    p.add_argument("--json", default=None, help="--evaluate: where to write the result")
    return p


def main(args):
    """Run from parsed arguments (see :func:`add_arguments`); prints a summary, returns 0."""
    if args.threads is not None:
        if args.threads < 1:
            raise SystemExit(f"--threads must be >= 1, got {args.threads}")
        torch.set_num_threads(args.threads)
    out = args.out or _default_out(args)
    if args.evaluate:
        result = evaluate_run(out, args.fresh_samples, args.fresh_seed, device=_train.resolve_device(args.device))
        path = args.json or os.path.join(out, "evaluation.json")
        write_json(path, result)
        summary = {k: {m: round(v, 4) for m, v in result[k].items() if m in ("coarse", "fine", "perplexity")}
                   for k in ("train_lengths", "test_lengths")}
        print(f"transduction {result['run_config']['task']} {result['run_config']['model']} at step "
              f"{result['step']}: {summary}; wrote {path}")
        return 0
    result = run(task=args.task, model=args.model, layers=args.layers, hidden=args.hidden, values=args.values,
                 embedding=args.embedding, vocab=args.vocab, lr=args.lr, batch_size=args.batch_size,
                 clip=args.clip or None, optimizer=args.optimizer, pop_bias=args.pop_bias, steps=args.steps,
                 eval_every=args.eval_every, eval_samples=args.eval_samples, test_samples=args.test_samples,
                 train_lengths=(args.min_len, args.max_len), test_lengths=(args.test_min_len, args.test_max_len),
                 backend=args.backend, seed=args.seed, out=out, device=args.device, resume=not args.no_resume,
                 max_steps=args.max_steps, max_seconds=None if args.max_minutes is None else 60 * args.max_minutes,
                 progress=not args.no_progress, checkpoint_every=args.checkpoint_every)
    last = result.history["epochs"][-1] if result.history["epochs"] else {}
    summary = {k: round(v, 4) for k, v in last.items() if isinstance(v, float)}
    test = result.extra.get("test")
    print(f"transduction {args.task} {args.model}: {result.status} at step {result.step}; last evaluation {summary}"
          + (f"; test coarse {test['coarse']:.4f} fine {test['fine']:.4f}" if test else "") + f"; files in {out}")
    return 0
