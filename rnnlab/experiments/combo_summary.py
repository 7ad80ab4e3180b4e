"""Collect finished ``python -m rnnlab train combo-net`` runs into one JSON file the book plots.

::

    python -m rnnlab.experiments.combo_summary runs/combo-digits/*/ --out book/contraction/data/combo-digits.json

For every run folder (one with ``checkpoint.pt``, ``config.json`` and ``metrics.json``) the file keeps, under
the folder's name:

- ``config``: the run's configuration (net, modules, constraint, blocks, data with its permutation hash, the
  parameter counts, ...);
- ``epochs``: per epoch the training loss and accuracy, the validation loss and accuracy, the learning rate
  and the wall time;
- ``test``: :func:`rnnlab.experiments.combo_net.evaluate_run` on the test split (accuracy, loss, step,
  whether the run had completed);
- ``certificate_before`` and ``certificate_after``: :func:`rnnlab.theory.combo_net_report` of the net as
  initialised (rebuilt from the config and its seed) and as trained (the checkpoint), with ``--samples``
  random slope patterns and ``--visited`` patterns the trained net visits on test sequences, and beside it
  ``trajectories``: :func:`rnnlab.theory.combo_report.trajectory_distances` on the same test sequences.

A run already in ``--out`` with the same step is skipped unless ``--force``; the file is rewritten after
every run, so an interrupted collection resumes.
"""
import argparse
import json
import os
import sys
import time

import torch
from threadpoolctl import threadpool_limits

from .. import train as _train
from ..theory.combo_report import combo_net_report, trajectory_distances
from .combo_net import config_model_kwargs, config_splits, evaluate_run, make_model
from .run_folder import write_json

__all__ = ["summarize_run", "collect", "main"]

CONFIG_KEYS = ("net", "modules", "module_size", "dataset", "order", "permute", "permutation_seed", "epochs",
               "batch_size", "lr", "weight_decay", "lr_steps", "lr_gamma", "alpha", "constraint", "blocks",
               "density", "scalar", "post_scalar", "activation", "form", "b_std", "metric", "seed", "num_train",
               "num_validation", "seq_len", "input_size", "num_classes", "trainable_parameters", "buffers",
               "threads", "euler_margin")
EPOCH_KEYS = ("epoch", "step", "loss", "accuracy", "val_loss", "val_accuracy", "lr", "time")


def _round(x, digits=6):
    if isinstance(x, float):
        return round(x, digits)
    if isinstance(x, dict):
        return {k: _round(v, digits) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_round(v, digits) for v in x]
    return x


def summarize_run(run_dir, *, samples=8, visited=16, probe=8):
    """The summary of one run folder (see the module docstring) as a dict."""
    path = os.path.join(run_dir, "checkpoint.pt")
    if not os.path.exists(path):
        raise FileNotFoundError(f"summarize_run: no checkpoint at {path}")
    state = _train.load_checkpoint(path)
    config = state["config"]
    with open(os.path.join(run_dir, "metrics.json")) as f:
        metrics = json.load(f)
    epochs = [{k: e[k] for k in EPOCH_KEYS if k in e} for e in metrics.get("epochs", [])]
    test = evaluate_run(run_dir)
    kwargs = config_model_kwargs(config, config["input_size"], config["num_classes"])
    before = make_model(**kwargs)
    after = make_model(**kwargs)
    after.load_state_dict(state["model"])
    data = config_splits(dict(config, permutation_seed=config["permutation_seed"] if config["permute"] else 0))["test"]
    x, _ = data[torch.arange(min(probe, len(data)))]
    t0 = time.perf_counter()
    cert_before = combo_net_report(before, samples=samples, inputs=x, visited=visited)
    cert_after = combo_net_report(after, samples=samples, inputs=x, visited=visited)
    cert_before["trajectories"] = trajectory_distances(before, x)
    cert_after["trajectories"] = trajectory_distances(after, x)
    return _round({
        "config": {k: config.get(k) for k in CONFIG_KEYS},
        "data": test["data"],
        "epochs": epochs,
        "test": {k: test[k] for k in ("accuracy", "loss", "samples", "step", "epoch", "completed")},
        "best_val_accuracy": max((e.get("val_accuracy", 0.0) for e in epochs), default=None),
        "train_seconds": epochs[-1]["time"] if epochs else None,
        "certificate_before": cert_before,
        "certificate_after": cert_after,
        "certificate_seconds": time.perf_counter() - t0,
    })


def collect(run_dirs, out, *, samples=8, visited=16, force=False, command=None, log=print):
    """Summarise every run folder in ``run_dirs`` into the JSON file ``out`` (resumable); returns the dict."""
    result = {"command": command, "runs": {}}
    if os.path.exists(out):
        with open(out) as f:
            result = json.load(f)
        result["command"] = command or result.get("command")
    for run_dir in run_dirs:
        name = os.path.basename(os.path.normpath(run_dir))
        if not os.path.exists(os.path.join(run_dir, "checkpoint.pt")):
            log(f"skip {run_dir}: no checkpoint")
            continue
        step = _train.load_checkpoint(os.path.join(run_dir, "checkpoint.pt"))["step"]
        old = result["runs"].get(name)
        if old is not None and old["test"]["step"] == step and not force:
            log(f"skip {name}: already summarised at step {step}")
            continue
        t0 = time.perf_counter()
        result["runs"][name] = summarize_run(run_dir, samples=samples, visited=visited)
        write_json(out, result)
        log(f"{name}: test accuracy {result['runs'][name]['test']['accuracy']:.4f} "
            f"({time.perf_counter() - t0:.0f} s)")
    return result


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m rnnlab.experiments.combo_summary", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", help="run folders of python -m rnnlab train combo-net")
    p.add_argument("--out", required=True, help="the JSON file (updated in place)")
    p.add_argument("--samples", type=int, default=8, help="random slope patterns per certificate (default 8)")
    p.add_argument("--visited", type=int, default=16, help="visited slope patterns per certificate (default 16)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch and BLAS threads (default 1: the eigenvalue problems are small, and on a busy "
                        "machine more threads thrash)")
    p.add_argument("--force", action="store_true", help="summarise runs already in --out again")
    args = p.parse_args(argv)
    if args.samples < 0 or args.visited < 0:
        p.error("--samples and --visited must be >= 0")
    if args.threads < 1:
        p.error("--threads must be >= 1")
    torch.set_num_threads(args.threads)
    command = "python -m rnnlab.experiments.combo_summary " + " ".join(sys.argv[1:] if argv is None else argv)
    with threadpool_limits(limits=args.threads):
        collect(args.runs, args.out, samples=args.samples, visited=args.visited, force=args.force,
                command=command)
    return 0


if __name__ == "__main__":
    sys.exit(main())
