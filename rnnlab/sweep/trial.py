"""One trial: ``python -m rnnlab train <task> <argv> --out <dir>`` in a subprocess, then its run folder
summarised into a row. Runs inside a Ray worker (no Ray here: plain functions, testable without it).

The subprocess's stdout and stderr are appended to ``stdout.log`` and ``stderr.log`` in the run folder. On
Linux it is asked to receive SIGTERM when the worker that started it dies (``prctl(PR_SET_PDEATHSIG)``):
an interrupted sweep stops its runs, which save a checkpoint on SIGTERM (:mod:`rnnlab.train`) and
resume from it when the sweep is run again.
"""
import ctypes
import json
import math
import os
import signal
import subprocess
import sys
import time
import traceback

__all__ = ["SUMMARISERS", "summarise", "summarise_transduction", "summarise_generic", "summarise_imitation",
           "trial_command", "execute"]

STDERR_TAIL = 2000
"""Characters of a failed run's stderr kept in its row."""


def _number(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def _read_json(path):
    with open(path) as f:
        return json.load(f)


def _flatten(prefix, obj, out):
    for key, value in obj.items():
        if isinstance(value, dict):
            _flatten(f"{prefix}{key}_", value, out)
        elif _number(value) is not None:
            out[f"{prefix}{key}"] = value


def summarise_transduction(run_dir):
    """A transduction run folder -> row: ``steps`` done, ``train_time_s`` (training only, across resumptions),
    ``train_perplexity`` (the last evaluation's), ``val_perplexity``/``val_coarse``/``val_fine``,
    ``test_coarse``/``test_fine``/``test_perplexity`` (held-out lengths), ``test_memory_*`` (the memory-use
    diagnostics of the test set, memory models only), ``parameters``, and ``eval_*`` from an
    ``evaluation.json`` (``--evaluate``) when there is one. ``completed``: the run reached its last step."""
    metrics = _read_json(os.path.join(run_dir, "metrics.json"))
    config, epochs = metrics.get("config", {}), metrics.get("epochs", [])
    last = epochs[-1] if epochs else {}
    row = {"steps": last.get("step", 0), "train_time_s": last.get("time"),
           "train_perplexity": _number(last.get("perplexity")), "parameters": config.get("parameters")}
    for key in ("val_perplexity", "val_coarse", "val_fine"):
        if key in last:
            row[key] = _number(last[key])
    test = metrics.get("test") or {}
    _flatten("test_", {k: v for k, v in test.items() if k not in ("step", "samples", "lengths")}, row)
    evaluation = os.path.join(run_dir, "evaluation.json")
    if os.path.exists(evaluation):
        ev = _read_json(evaluation)
        for split in ("train_lengths", "test_lengths"):
            _flatten(f"eval_{split.split('_')[0]}_",
                     {k: v for k, v in ev.get(split, {}).items() if k not in ("samples", "lengths", "seconds")}, row)
    row["completed"] = bool(epochs) and last.get("step", 0) >= config.get("steps", math.inf) and (
        "test" in metrics or not config.get("test_samples"))
    return row


def summarise_generic(run_dir):
    """Any ``python -m rnnlab train`` run folder -> row: the last epoch record's numbers (``last_*``), the
    ``test`` block's (``test_*``). ``completed``: the config's ``epochs`` were all done (when it has them)."""
    metrics = _read_json(os.path.join(run_dir, "metrics.json"))
    config, epochs = metrics.get("config", {}), metrics.get("epochs", [])
    last = epochs[-1] if epochs else {}
    row = {}
    _flatten("last_", last, row)
    _flatten("test_", metrics.get("test") or {}, row)
    row["completed"] = bool(epochs) and last.get("epoch", 0) >= config.get("epochs", 0)
    return row


def summarise_imitation(run_dir):
    """A ``control-imitation`` run folder -> row: the ``test`` block (``test_*``: chosen learning rate,
    validation loss, closed-loop returns normalised per condition, analyses) and the chosen learning rate's
    last epoch (``last_*``). A run stopped early has no ``metrics.json`` yet: ``completed`` False and
    ``epochs_done_lr_<lr>`` per learning rate."""
    path = os.path.join(run_dir, "metrics.json")
    if os.path.exists(path):
        return summarise_generic(run_dir)
    row = {"completed": False}
    for name in sorted(os.listdir(run_dir)) if os.path.isdir(run_dir) else []:
        sub = os.path.join(run_dir, name, "metrics.json")
        if name.startswith("lr-") and os.path.exists(sub):
            row[f"epochs_done_{name.replace('-', '_')}"] = len(_read_json(sub).get("epochs", []))
    return row


SUMMARISERS = {"transduction": summarise_transduction, "control-imitation": summarise_imitation}
"""Task -> ``summarise(run_dir) -> dict``; tasks not listed use :func:`summarise_generic`."""


def summarise(task, run_dir):
    return SUMMARISERS.get(task, summarise_generic)(run_dir)


def trial_command(task, argv, run_dir, threads=None, python=None):
    """The command line of one trial."""
    cmd = [python or sys.executable, "-m", "rnnlab", "train", task, *argv, "--out", os.fspath(run_dir),
           "--no-progress"]
    if threads is not None:
        cmd += ["--threads", str(threads)]
    return cmd


def _die_with_parent():   # runs in the child between fork and exec
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))   # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - not Linux: the run is then stopped by the sweep's own handler only
        pass


def _tail(path, start):
    try:
        with open(path, "rb") as f:
            f.seek(start)
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return text[-STDERR_TAIL:]


def execute(trial):
    """Run one trial and return its row (never raises for a failing run: the row says ``"error"``).

    ``trial``: a dict with ``task``, ``id``, ``values`` (axis values), ``argv``, ``dir`` (absolute run
    folder), ``threads`` (or None), ``supports_threads``.
    """
    t0 = time.time()
    run_dir = trial["dir"]
    row = {"trial": trial["id"], "status": "error", **trial["values"]}
    try:
        os.makedirs(run_dir, exist_ok=True)
        threads = trial.get("threads")
        cmd = trial_command(trial["task"], trial["argv"], run_dir,
                            threads if trial.get("supports_threads", True) else None)
        env = dict(os.environ)
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        if threads:
            env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads), NUMBA_NUM_THREADS=str(threads))
        out_path, err_path = os.path.join(run_dir, "stdout.log"), os.path.join(run_dir, "stderr.log")
        header = f"--- {time.strftime('%Y-%m-%dT%H:%M:%S')} {' '.join(cmd)}\n"
        with open(out_path, "a") as out, open(err_path, "a") as err:
            out.write(header)
            err.write(header)
            out.flush()
            err.flush()
            start = err.tell()
            linux = sys.platform.startswith("linux")
            # Linux: a session of its own (Ray's clean-up of a dying worker's process group does not SIGKILL
            # it mid-save) and SIGTERM when the worker dies (it saves a checkpoint and exits)
            proc = subprocess.run(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=linux,
                                  preexec_fn=_die_with_parent if linux else None)
        if proc.returncode != 0:
            why = (f"killed by signal {-proc.returncode}" if proc.returncode < 0
                   else f"exit status {proc.returncode}")
            row.update(status="error", error=f"{why}: {_tail(err_path, start).strip()}")
        else:
            summary = summarise(trial["task"], run_dir)
            completed = summary.pop("completed", True)
            row.update(status="ok" if completed else "incomplete", **summary)
    except Exception as e:  # noqa: BLE001 - recorded in the row, the grid goes on
        row.update(status="error", error=f"{type(e).__name__}: {e}\n{traceback.format_exc()[-STDERR_TAIL:]}")
    row["wall_s"] = round(time.time() - t0, 2)
    return row
