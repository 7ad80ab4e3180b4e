"""A grid of transduction runs at teaching scale, each through ``python -m rnnlab train transduction``.

::

    python -m rnnlab.experiments.transduction_grid --out book/memory/data/transduction-teaching-scale.json

runs every (task, model, seed) of :data:`GRID` with the settings of
:data:`TEACHING_SCALE` (8 symbols, training lengths 2-8, test lengths 9-16,
hidden 32, values 16), one after the other, each in a run folder of its own
under ``--runs`` (checkpoints, full metrics; resumable; default
``runs/transduction-grid``), and keeps a compact summary of every finished
run in the JSON file ``--out``, keyed ``<task>-<model>-s<seed>``: the run's
configuration, its evaluations during training, its test result and its
wall time. The file is rewritten after each run; a run already in it is
skipped, so an interrupted grid resumes where it stopped. The book's chapter
plots the file.
"""
import argparse
import json
import pathlib
import subprocess
import sys
import time

from .._io import atomic_write_json

TEACHING_SCALE = dict(vocab=8, min_len=2, max_len=8, test_min_len=9, test_max_len=16, hidden=32,
                      values=16, embedding=16, lr=5e-3, batch_size=10, clip=1.0, steps=2000,
                      eval_every=250, eval_samples=200, test_samples=500)
"""Small enough that a run takes a minute on one core; the lengths double from training to test."""

GRID = dict(tasks=("reversal", "copy", "bigram_flip"), models=("stack", "queue", "deque", "lstm"),
            seeds=(0, 1, 2))


def command(task, model, seed, run_dir, settings=TEACHING_SCALE, threads=1):
    """The command line of one run."""
    cmd = [sys.executable, "-m", "rnnlab", "train", "transduction", "--task", task, "--model", model,
           "--seed", str(seed), "--out", str(run_dir), "--threads", str(threads), "--no-progress"]
    for key, value in settings.items():
        cmd += [f"--{key.replace('_', '-')}", str(value)]
    return cmd


def summarise(run_dir):
    """The compact summary of a finished run: configuration, evaluations, test."""
    metrics = json.loads((pathlib.Path(run_dir) / "metrics.json").read_text())
    return {"config": metrics["config"], "evaluations": metrics["epochs"], "test": metrics.get("test")}


def run_grid(out, tasks=GRID["tasks"], models=GRID["models"], seeds=GRID["seeds"], settings=TEACHING_SCALE,
             threads=1, runs="runs/transduction-grid", log=print):
    """Run every (task, model, seed) missing from the JSON file ``out``; return its contents (a dict)."""
    out = pathlib.Path(out)
    done = json.loads(out.read_text()) if out.exists() else {}
    for task in tasks:
        for model in models:
            for seed in seeds:
                key = f"{task}-{model}-s{seed}"
                if key in done:
                    continue
                run_dir = pathlib.Path(runs) / key
                t0 = time.perf_counter()
                proc = subprocess.run(command(task, model, seed, run_dir, settings, threads),
                                      capture_output=True, text=True)
                if proc.returncode != 0:
                    raise RuntimeError(f"{key} failed:\n{proc.stderr[-2000:]}")
                summary = summarise(run_dir)
                summary["wall_s"] = round(time.perf_counter() - t0, 1)
                done[key] = summary
                atomic_write_json(out, done, indent=1)
                test = summary["test"] or {}
                log(f"{key}: test coarse {test.get('coarse')} fine {test.get('fine')} ({summary['wall_s']} s)")
    return done


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m rnnlab.experiments.transduction_grid", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="the JSON file of summaries (read, extended, rewritten)")
    parser.add_argument("--runs", default="runs/transduction-grid", help="folder of the run folders")
    parser.add_argument("--tasks", nargs="+", default=list(GRID["tasks"]))
    parser.add_argument("--models", nargs="+", default=list(GRID["models"]))
    parser.add_argument("--seeds", nargs="+", type=int, default=list(GRID["seeds"]))
    parser.add_argument("--threads", type=int, default=1, help="CPU threads per run (default 1)")
    args = parser.parse_args(argv)
    run_grid(args.out, args.tasks, args.models, args.seeds, threads=args.threads, runs=args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
