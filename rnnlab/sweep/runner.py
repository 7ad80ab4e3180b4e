"""Running a grid on Ray Tune, and ``python -m rnnlab sweep``'s options (see :mod:`rnnlab.sweep`)."""
import json
import logging
import os
import shlex
import signal
import sys
import time

from .._validate import check_int, check_optional_int
from .grid import build_spec, task_parser
from .table import ResultsTable

__all__ = ["RAY_MISSING", "RayMissing", "import_ray", "run_sweep", "SweepOutcome", "add_arguments", "main"]

RAY_MISSING = ("python -m rnnlab sweep runs its trials on Ray Tune, which is not installed here. Install it with\n"
               "    pip install 'ray[tune]>=2.9'\n"
               "(or pip install 'rnnlab[sweep]'); --dry-run lists the trials without it.")


class RayMissing(ImportError):
    """Ray Tune is not installed (the message says what to pip install)."""


def import_ray():
    """``(ray, ray.tune)``, or :class:`RayMissing` with :data:`RAY_MISSING`."""
    try:
        import ray
        from ray import tune
    except ImportError as e:
        raise RayMissing(RAY_MISSING) from e
    return ray, tune


def _trainable(config):
    """The Tune trainable: one trial (:func:`rnnlab.sweep.trial.execute`), its row reported as JSON."""
    from .trial import execute
    return {"row": json.dumps(execute(config["trial"]))}


class SweepOutcome(dict):
    """What :func:`run_sweep` did: ``table`` (the :class:`ResultsTable`), ``trials`` (all), ``skipped``
    (already ok), ``ran``, ``unfinished`` (started or pending but not recorded: an interrupt)."""

    @property
    def exit_code(self):
        if self["unfinished"]:
            return 130
        bad = [t for t in self["ran"] if self["table"].rows.get(t, {}).get("status") != "ok"]
        return 1 if bad else 0


def _open_table(out, spec, trials, command):
    """The sweep folder's table, its meta checked against ``spec`` (same task, fixed options, axis names)."""
    table = ResultsTable.load(out)
    meta = table.meta
    if meta:
        old = (meta.get("task"), meta.get("set"), sorted(meta.get("axes", {})))
        new = (spec.task, spec.fixed, sorted(spec.axes))
        if old != new:
            raise ValueError(
                f"--out {out}: this folder holds a sweep of task {old[0]!r} with --set {old[1]} and axes "
                f"{old[2]}; this command has {new[0]!r}, --set {new[1]}, axes {new[2]}. The trials' run folders "
                "would mix; use another --out (adding values to the same axes is fine)")
    axes = {k: list(v) for k, v in meta.get("axes", {}).items()}
    for name, values in spec.axes.items():
        axes[name] = axes.get(name, []) + [v for v in values if v not in axes.get(name, [])]
    order = [t.id for t in trials]
    order += [t for t in meta.get("order", []) if t not in order]
    table.meta = {"task": spec.task, "set": spec.fixed, "axes": axes, "command": command or meta.get("command"),
                  "order": order}
    table.write()
    return table


def _brief(row):
    if row["status"] != "ok":
        lines = str(row.get("error") or "").strip().splitlines()
        return row["status"] + (f": {lines[-1][:200]}" if lines else "")
    shown = [f"{k} {row[k]:.4g}" for k in row if k.startswith("test_") and isinstance(row[k], float)][:3]
    return "ok" + (" (" + ", ".join(shown) + ")" if shown else "")


def _tune_callback(tune, table, pending_ids, log, recorded):
    total = len(pending_ids)

    class TableCallback(tune.Callback):
        """On the driver: each finished trial's row goes into the table at once (atomically)."""

        def _record(self, row):
            table.record(row)
            recorded.append(row["trial"])
            log(f"[{len(recorded)}/{total}] {row['trial']}: {_brief(row)} ({row.get('wall_s', '?')} s)")

        def on_trial_result(self, iteration, trials, trial, result, **info):
            if "row" in result:
                self._record(json.loads(result["row"]))

        def on_trial_error(self, iteration, trials, trial, **info):
            tid = trial.config["trial"]["id"]
            if tid in recorded:
                return
            message = "the trial failed in Ray"
            try:
                if trial.error_file and os.path.exists(trial.error_file):
                    with open(trial.error_file) as f:
                        message = f.read()[-2000:]
            except Exception:  # noqa: BLE001 - only the message
                pass
            self._record({"trial": tid, "status": "error", **trial.config["trial"]["values"],
                          "error": f"Ray: {message}"})
    return TableCallback()


def run_sweep(spec, out, *, workers=1, cpus_per_trial=1, threads=None, address=None, limit=None,
              object_store_mb=100, command=None, log=print):
    """Run the trials of ``spec`` (a :class:`rnnlab.sweep.GridSpec`) that ``out/results.json`` does not hold
    as ``"ok"``, on Ray Tune; returns a :class:`SweepOutcome`.

    Each trial runs ``python -m rnnlab train <task> ... --out out/trials/<trial id>`` in a Ray worker with
    ``cpus_per_trial`` CPUs, ``threads`` torch threads (default: ``cpus_per_trial``), at most ``workers``
    at once; its row is written to the table as soon as it finishes. ``limit``: run at most this many of
    the pending trials now. ``address``: an existing Ray cluster (``ray.init(address=...)``); otherwise a
    local Ray is started with ``workers * cpus_per_trial`` CPUs and an object store of ``object_store_mb``
    (a Ray already initialised in this process is used as it is). Tune's own files go to ``out/tune``.
    """
    for name, value in (("workers", workers), ("limit", limit)):
        check_optional_int(name, value, minimum=1)
    if not (isinstance(cpus_per_trial, (int, float)) and cpus_per_trial > 0):
        raise ValueError(f"cpus_per_trial must be > 0, got {cpus_per_trial!r}")
    threads = threads if threads is not None else max(1, int(cpus_per_trial))
    check_int("threads", threads, minimum=1)
    out = os.path.abspath(os.fspath(out))
    trials = spec.trials()
    table = _open_table(out, spec, trials, command)
    skipped = [t.id for t in trials if table.finished(t.id)]
    pending = [t for t in trials if not table.finished(t.id)]
    if limit is not None:
        pending = pending[:limit]
    outcome = SweepOutcome(table=table, trials=[t.id for t in trials], skipped=skipped, ran=[], unfinished=[])
    log(f"sweep {spec.task}: {len(trials)} trials, {len(skipped)} done already, {len(pending)} to run now "
        f"({out})")
    if not pending:
        return outcome
    ray, tune = import_ray()
    supports_threads = "threads" in {a.dest for a in task_parser(spec.task)._actions}
    payloads = [dict(task=spec.task, id=t.id, values=t.values, argv=t.argv, threads=threads,
                     supports_threads=supports_threads, dir=os.path.join(out, "trials", t.id)) for t in pending]
    for key, value in (("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1"), ("RAY_CHDIR_TO_TRIAL_DIR", "0"),
                       ("RAY_AIR_NEW_OUTPUT", "0"), ("RAY_DEDUP_LOGS", "0")):
        os.environ.setdefault(key, value)
    # Tune's result files are off (our table is the record): its analysis need not warn that they are missing
    logging.getLogger("ray.tune.analysis.experiment_analysis").setLevel(logging.ERROR)
    if sys.platform.startswith("linux") and not address:
        # a stopped trial's run gets SIGTERM (PR_SET_PDEATHSIG) and saves; Ray's default SIGKILLs it at once
        os.environ.setdefault("RAY_kill_child_processes_on_worker_exit", "0")
    owns = not ray.is_initialized()
    if owns:
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(num_cpus=max(1, int(round(workers * cpus_per_trial))), include_dashboard=False,
                     object_store_memory=int(object_store_mb) * 2 ** 20, log_to_driver=False)
    recorded = []
    previous = None
    try:
        tuner = tune.Tuner(
            tune.with_resources(_trainable, {"cpu": cpus_per_trial}),
            param_space={"trial": tune.grid_search(payloads)},
            tune_config=tune.TuneConfig(max_concurrent_trials=workers,
                                        trial_name_creator=lambda t: t.config["trial"]["id"],
                                        trial_dirname_creator=lambda t: f"trial_{t.trial_id}"),
            run_config=tune.RunConfig(name="tune", storage_path=out, verbose=0,
                                      failure_config=tune.FailureConfig(max_failures=0),
                                      callbacks=[_tune_callback(tune, table, [p["id"] for p in payloads],
                                                                log, recorded)]))
        if sys.platform != "win32" and _in_main_thread():
            # SIGTERM like Ctrl-C: Tune stops gracefully, the runs get SIGTERM and save their checkpoints
            previous = signal.signal(signal.SIGTERM, lambda s, f: os.kill(os.getpid(), signal.SIGINT))
        tuner.fit()
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if owns:
            ray.shutdown()
    if not address:
        _wait_for_runs([p["dir"] for p in payloads if p["id"] not in recorded])
    outcome["ran"] = [p["id"] for p in payloads if p["id"] in recorded]
    outcome["unfinished"] = [p["id"] for p in payloads if p["id"] not in recorded]
    if outcome["unfinished"]:
        log(f"stopped with {len(outcome['unfinished'])} trials unfinished; their runs saved checkpoints. "
            "Run the same command again to resume.")
    return outcome


def _wait_for_runs(dirs, timeout=60.0):
    """Wait (up to ``timeout`` s) until the runs still locking these run folders on this machine have saved
    and exited, so that running the sweep again at once finds their checkpoints free."""
    deadline = time.time() + timeout
    for run_dir in dirs:
        lock = os.path.join(run_dir, "checkpoint.pt.lock")
        while time.time() < deadline:
            try:
                with open(lock) as f:
                    pid = int(f.read().strip() or 0)
                os.kill(pid, 0)
            except (OSError, ValueError):
                break
            time.sleep(0.2)


def _in_main_thread():
    import threading
    return threading.current_thread() is threading.main_thread()


DESCRIPTION = """\
Run `python -m rnnlab train TASK ...` at every point of a grid of its options (the cartesian
product of the --grid axes, with the --set options fixed), on Ray Tune: locally with --workers
trials at once, or on a Ray cluster with --address. Each trial is a run folder
OUT/trials/<trial id> (e.g. pop_bias=-1,seed=3), and its summary a row of OUT/results.json
and OUT/results.csv, written as soon as it finishes. Needs Ray: pip install 'ray[tune]>=2.9'."""

EPILOG = """\
Resuming: results.json in --out is the record. A trial whose row says "ok" is never run
again; one that says "error" (its command failed: the row holds the exit status and the
tail of its stderr) or "incomplete" is retried on the next run of the same command. An
interrupted sweep (Ctrl-C, or kill PID) keeps every finished row; runs that were under way
save a checkpoint and resume from it.

Examples:
  python -m rnnlab sweep transduction --out runs/sweeps/pop-bias \\
      --set task=reversal --set model=stack --set steps=2000 \\
      --grid pop-bias=-2,-1,0,1 --grid seed=0..9 --workers 2 --threads 1
  python -m rnnlab sweep --spec grid.json --out runs/sweeps/x --dry-run
  python -m rnnlab sweep transduction --out /shared/sweeps/x --address auto --workers 64 ...
"""


def add_arguments(p):
    """Options of ``python -m rnnlab sweep``."""
    p.add_argument("task", nargs="?", default=None,
                   help="the training task of every trial (python -m rnnlab train TASK); or in --spec")
    p.add_argument("--out", required=True,
                   help="sweep folder: results.json, results.csv, trials/<trial id>/ (run folders), tune/")
    p.add_argument("--grid", action="append", default=[], metavar="NAME=V1,V2,...",
                   help="an axis: a training option and its values (a..b: the integers a to b); repeat for "
                        "more axes (their cartesian product is the grid)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="a training option fixed for every trial; repeat for more (a flag: NAME=true)")
    p.add_argument("--spec", default=None, metavar="FILE",
                   help='a JSON file {"task": ..., "set": {name: value}, "grid": {name: [values]}}; the command '
                        "line adds to it")
    p.add_argument("--workers", type=int, default=1, help="trials at once (default %(default)s)")
    p.add_argument("--cpus-per-trial", type=float, default=1, help="Ray CPUs per trial (default %(default)s)")
    p.add_argument("--threads", type=int, default=None,
                   help="torch/numba threads in each trial (default: --cpus-per-trial)")
    p.add_argument("--address", default=None,
                   help="a running Ray cluster (e.g. auto, or ray://host:10001); default: a local Ray. --out "
                        "must then be on a file system every node sees")
    p.add_argument("--limit", type=int, default=None, help="run at most this many pending trials, then stop")
    p.add_argument("--object-store-mb", type=int, default=100,
                   help="local Ray's object store (default %(default)s MB; trials pass only small rows)")
    p.add_argument("--dry-run", action="store_true", help="list the trials, their status and commands; run nothing")
    return p


def main(args, argv=None):
    """``python -m rnnlab sweep`` from parsed arguments; returns the exit code (0 all ok, 1 some trial
    failed, 2 a bad grid or no Ray, 130 interrupted)."""
    try:
        spec = build_spec(args.task, args.set, args.grid, args.spec)
    except ValueError as e:
        print(f"python -m rnnlab sweep: {e}", file=sys.stderr)
        return 2
    command = "python -m rnnlab " + shlex.join(sys.argv[1:] if argv is None else argv)
    if args.dry_run:
        table = ResultsTable.load(args.out)
        for trial in spec.trials():
            row = table.rows.get(trial.id, {})
            print(f"{row.get('status', 'pending'):>10}  {trial.id}:  python -m rnnlab train {spec.task} "
                  f"{shlex.join(trial.argv)}")
        return 0
    t0 = time.time()
    try:
        outcome = run_sweep(spec, args.out, workers=args.workers, cpus_per_trial=args.cpus_per_trial,
                            threads=args.threads, address=args.address, limit=args.limit,
                            object_store_mb=args.object_store_mb, command=command)
    except RayMissing as e:
        print(str(e), file=sys.stderr)
        return 2
    except ValueError as e:
        print(f"python -m rnnlab sweep: {e}", file=sys.stderr)
        return 2
    rows = outcome["table"].rows
    counts = {s: sum(rows.get(t, {}).get("status") == s for t in outcome["trials"]) for s in ("ok", "error",
                                                                                                 "incomplete")}
    print(f"sweep: {counts['ok']} ok, {counts['error']} error, {counts['incomplete']} incomplete, "
          f"{len(outcome['trials']) - sum(counts.values())} not run, of {len(outcome['trials'])} "
          f"({time.time() - t0:.0f} s); table: {outcome['table'].json_path} and .csv")
    return outcome.exit_code
