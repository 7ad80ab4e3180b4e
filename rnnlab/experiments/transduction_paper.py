"""Collect paper-scale transduction runs into one JSON file for the book.

::

    python -m rnnlab.experiments.transduction_paper runs/paper-reversal-stack-h256-s0 \\
        runs/paper-copy-queue-h256-s0 --out book/memory/data/paper-scale-runs.json \\
        --note reversal-stack-s0="Trained over two sessions ..."

Each argument is a run folder of ``python -m rnnlab train transduction``. Its summary, keyed
``<task>-<model>-s<seed>`` (the model written ``lstm8`` for an eight-layer Deep LSTM; a run that is not at
the paper's scale gets its differences appended, :func:`run_key`), holds the run's configuration, whether
it is at the paper's scale and how it differs (``paper_scale``, ``differences``), every validation
evaluation, the steps and the training seconds so far (wall time, pauses included), the run's own test
once it has completed, the command that trains it (and resumes it: the run folders are resumable) and the
command that evaluates its checkpoint, and that evaluation: ``evaluation.json`` in the folder, written by
``--evaluate``. An evaluation of an older
checkpoint than the run's last is not kept; ``--evaluate`` (re)evaluates such runs here (1000 fresh
sequences at the training and at the test lengths, as the paper scores). Summaries already in ``--out``
and not named again are kept, and so are their notes; ``--note KEY=TEXT`` sets a note.
"""
import argparse
import json
import os
import pathlib
import sys

from .run_folder import write_json

__all__ = ["run_key", "differences", "train_command", "summarise_run", "collect", "main"]

_SHORT = (("hidden", "h"), ("values", "m"), ("embedding", "e"), ("vocab", "v"), ("lr", "lr"), ("batch_size", "b"),
          ("clip", "clip"), ("optimizer", ""), ("pop_bias", "pop"), ("train_lengths", "len"),
          ("test_lengths", "test"))


def differences(config):
    """``{setting: value}`` for the settings of the run that are not the paper's (:data:`PAPER`): sizes,
    vocabulary, optimisation, pop bias (memory models), lengths. Empty for a run at the paper's scale."""
    from .transduction import PAPER

    out = {}
    for key, _ in _SHORT:
        if key == "pop_bias" and config["model"] == "lstm":
            continue
        value = config[key]
        if (list(value) if isinstance(value, (list, tuple)) else value) != (
                list(PAPER[key]) if isinstance(PAPER[key], tuple) else PAPER[key]):
            out[key] = value
    return out


def run_key(config):
    """``<task>-<model>-s<seed>``, the Deep LSTM's model written with its depth (``lstm8``); a run that
    differs from the paper's configuration gets the differences appended (``-h32-m16-v8-lr0.005``,
    ``-len2..8``)."""
    model = f"lstm{config['layers']}" if config["model"] == "lstm" else config["model"]
    key = f"{config['task']}-{model}-s{config['seed']}"
    short = dict(_SHORT)
    for name, value in differences(config).items():
        text = f"{value[0]}..{value[1]}" if isinstance(value, (list, tuple)) else f"{value:g}" if isinstance(
            value, float) else str(value)
        key += f"-{short[name]}{text}"
    return key


def train_command(config, run_dir):
    """The command line that trained the run in ``run_dir`` (and resumes it): ``--task``, ``--model``, then,
    in the parser's order, every option of ``python -m rnnlab train transduction``
    (:func:`~rnnlab.experiments.transduction.add_arguments`) whose value in ``config`` is not its default."""
    from .transduction import add_arguments

    values = dict(config, min_len=config["train_lengths"][0], max_len=config["train_lengths"][1],
                  test_min_len=config["test_lengths"][0], test_max_len=config["test_lengths"][1],
                  clip=config["clip"] or 0)                      # the command line writes "no clipping" as 0
    parts = ["python -m rnnlab train transduction", "--task", config["task"], "--model", config["model"]]
    for action in add_arguments(argparse.ArgumentParser())._actions:
        if action.dest in ("task", "model") or action.dest not in values or not action.option_strings:
            continue
        if values[action.dest] != action.default:
            parts += [action.option_strings[0], str(values[action.dest])]
    parts += ["--out", str(run_dir)]
    return " ".join(parts)


def summarise_run(run_dir, evaluate=False, samples=1000, seed=1000):
    """The summary of one run folder (see the module docstring). ``evaluate``: evaluate the checkpoint here
    (and write ``evaluation.json``) when the folder has no evaluation of its last step."""
    run_dir = pathlib.Path(run_dir)
    metrics_file = run_dir / "metrics.json"
    if not metrics_file.exists():
        raise FileNotFoundError(f"run_dir {str(run_dir)!r} has no metrics.json: not a transduction run folder "
                                "(or not one validation epoch yet)")
    metrics = json.loads(metrics_file.read_text())
    config, steps, epochs = metrics["config"], metrics["steps"], metrics["epochs"]
    step = steps[-1]["step"] if steps else 0
    evaluation = None
    eval_file = run_dir / "evaluation.json"
    if eval_file.exists():
        evaluation = json.loads(eval_file.read_text())
    if evaluate and (evaluation is None or evaluation["step"] != step):
        from .transduction import evaluate_run

        evaluation = evaluate_run(str(run_dir), samples=samples, seed=seed)
        write_json(str(eval_file), evaluation)
    if evaluation is not None and evaluation["step"] != step:
        evaluation = None  # an older checkpoint's: not what the run is now
    if evaluation is not None:
        evaluation = {k: v for k, v in evaluation.items() if k != "run_config"}
    command = train_command(config, run_dir)
    return {
        "command": command,
        "evaluate_command": (f"python -m rnnlab train transduction --task {config['task']} --model "
                             f"{config['model']} --evaluate --fresh-samples {samples} --out {run_dir}"),
        "config": config,
        "evaluations": epochs,
        "paper_scale": not differences(config),
        "differences": differences(config),
        "steps_done": step,
        "train_seconds": steps[-1]["time"] if steps else 0.0,
        "completed": "test" in metrics,
        "test": metrics.get("test"),
        "evaluation": evaluation,
    }


def collect(run_dirs, out, notes=None, evaluate=False, samples=1000, seed=1000, log=print):
    """Summarise ``run_dirs`` into the JSON file ``out`` (kept summaries and notes merged); returns the dict."""
    out = pathlib.Path(out)
    done = json.loads(out.read_text()) if out.exists() else {}
    for run_dir in run_dirs:
        summary = summarise_run(run_dir, evaluate=evaluate, samples=samples, seed=seed)
        key = run_key(summary["config"])
        if key in done and "note" in done[key]:
            summary["note"] = done[key]["note"]
        done[key] = summary
        ev = summary["evaluation"]
        fresh = ("" if ev is None else
                 f"; fresh 8-64 coarse {ev['train_lengths']['coarse']:.2f}, "
                 f"65-128 coarse {ev['test_lengths']['coarse']:.2f}")
        log(f"{key}: step {summary['steps_done']}, {summary['train_seconds'] / 3600:.1f} h{fresh}")
    for key, text in (notes or {}).items():
        if key not in done:
            raise ValueError(f"--note: no run {key!r} (runs: {sorted(done)})")
        done[key]["note"] = text
    write_json(str(out), done)
    return done


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m rnnlab.experiments.transduction_paper", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="run folders of python -m rnnlab train transduction")
    parser.add_argument("--out", required=True, help="the JSON file of summaries (read, extended, rewritten)")
    parser.add_argument("--note", action="append", default=[], metavar="KEY=TEXT",
                        help="a note on the run KEY (<task>-<model>-s<seed>, with its differences from the "
                             "paper's configuration appended: the key the collection prints); repeatable")
    parser.add_argument("--evaluate", action="store_true",
                        help="evaluate checkpoints that have no evaluation of their last step")
    parser.add_argument("--samples", type=int, default=1000, help="--evaluate: sequences per set (default 1000)")
    args = parser.parse_args(argv)
    notes = {}
    for item in args.note:
        key, sep, text = item.partition("=")
        if not sep or not key:
            parser.error(f"--note must be KEY=TEXT, got {item!r}")
        notes[key] = text
    for run_dir in args.runs:
        if not os.path.isdir(run_dir):
            parser.error(f"runs: {run_dir!r} is not a folder")
    collect(args.runs, args.out, notes, evaluate=args.evaluate, samples=args.samples)
    return 0


if __name__ == "__main__":
    sys.exit(main())
