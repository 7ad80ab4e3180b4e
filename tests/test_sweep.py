"""rnnlab.sweep: grid specs and trial ids, the results table, summaries, the no-Ray message, and real
tiny transduction trials on a local Ray (one Ray for the module: it takes ~10 s to start on two cores)."""
import csv
import json
import os
import subprocess
import sys

import pytest

from rnnlab.__main__ import main as cli
from rnnlab.sweep import ResultsTable, build_spec, run_sweep
from rnnlab.sweep import runner
from rnnlab.sweep.trial import summarise_transduction

TINY = ["task=reversal", "hidden=8", "values=8", "embedding=8", "vocab=4", "min-len=2", "max-len=4",
        "test-min-len=5", "test-max-len=6", "eval-every=20", "eval-samples=10", "test-samples=10"]


def test_trials_ids_and_commands(tmp_path):
    spec = build_spec("transduction", sets=TINY, grids=["seed=0..2", "pop-bias=-1.0,0,0.5"])
    trials = spec.trials()
    assert len(trials) == 9
    assert [t.id for t in trials[:3]] == ["pop_bias=-1,seed=0", "pop_bias=0,seed=0", "pop_bias=0.5,seed=0"]
    assert trials[0].values == {"seed": 0, "pop_bias": -1.0}
    assert trials[0].argv[-2:] == ["--seed=0", "--pop-bias=-1"] and "--hidden=8" in trials[0].argv
    # the id does not depend on the order of the axes, nor on how a value is written
    other = build_spec("transduction", sets=TINY, grids=["--pop_bias=-1,0.0,.5", "seed=0,1,2"])
    assert sorted(t.id for t in other.trials()) == sorted(t.id for t in trials)
    # a JSON file, extended and overridden by the command line; a flag option
    path = tmp_path / "grid.json"
    path.write_text(json.dumps({"task": "transduction", "set": {"hidden": 16, "vocab": 4},
                                "grid": {"seed": [0, 1], "model": "stack,queue"}}))
    spec = build_spec(None, sets=["hidden=8"], grids=["lr=0.01,0.001"], spec_file=path)
    assert spec.task == "transduction" and spec.fixed == {"hidden": "8", "vocab": "4"}
    assert list(spec.axes) == ["seed", "model", "lr"] and len(spec.trials()) == 8
    assert spec.trials()[0].id == "lr=0.01,model=stack,seed=0"
    assert build_spec("transduction", grids=["seed=0"], sets=["max-steps=5"]).trials()[0].id == "seed=0"
    assert build_spec("transduction", sets=["seed=3"]).trials()[0].id == "single"


@pytest.mark.parametrize("sets, grids, message", [
    ([], ["seed"], "--grid 'seed': expected NAME=VALUE"),
    ([], ["seed="], "--grid seed: empty value"),
    ([], ["pop-biass=1"], "--grid pop-biass: .* has no option --pop-biass"),
    ([], ["pop-bias=x"], "--grid pop-bias='x': not a valid float for --pop-bias"),
    ([], ["model=stack,tree"], "--grid model='tree': --model must be one of"),
    ([], ["seed=0,1,0"], "--grid seed: value 0 given twice"),
    ([], ["seed=0", "seed=1"], "--grid seed: --seed is an axis already"),
    (["seed=1"], ["seed=0,2"], "--grid seed: --seed is both fixed"),
    ([], ["out=a,b"], "--grid out: the sweep sets --out itself"),
    (["threads=2"], [], "--set threads: the sweep sets --threads itself"),
    ([], ["seed=3..1"], "--grid seed: empty range"),
    (["hidden"], [], "--set 'hidden': expected NAME=VALUE"),
])
def test_grid_errors_name_the_argument(sets, grids, message):
    with pytest.raises(ValueError, match=message):
        build_spec("transduction", sets=sets, grids=grids)


def test_other_spec_errors(tmp_path):
    with pytest.raises(ValueError, match="task must be one of"):
        build_spec("nope", grids=["seed=0"])
    with pytest.raises(ValueError, match="task: give the training task"):
        build_spec(None, grids=["seed=0"])
    path = tmp_path / "g.json"
    path.write_text(json.dumps({"task": "copy-memory", "grid": {"seed": [0]}}))
    with pytest.raises(ValueError, match="its task is 'copy-memory', the command line's 'transduction'"):
        build_spec("transduction", spec_file=path)
    path.write_text("{not json")
    with pytest.raises(ValueError, match=f"--spec {path}"):
        build_spec("transduction", spec_file=path)


def test_table_rows_files_and_resume_rule(tmp_path):
    table = ResultsTable(tmp_path, {"task": "transduction", "axes": {"seed": ["0", "1", "2"]},
                                    "order": ["seed=0", "seed=1", "seed=2"]})
    table.record({"trial": "seed=1", "status": "error", "seed": 1, "error": "exit status 1: boom"})
    table.record({"trial": "seed=0", "status": "ok", "seed": 0, "test_coarse": 0.5})
    table.record({"trial": "seed=2", "status": "incomplete", "seed": 2, "steps": 3})
    with pytest.raises(ValueError, match="row status"):
        table.record({"trial": "seed=3", "status": "weird"})
    loaded = ResultsTable.load(tmp_path)
    assert [r["trial"] for r in loaded.ordered_rows()] == ["seed=0", "seed=1", "seed=2"]
    assert loaded.finished("seed=0") and not loaded.finished("seed=1") and not loaded.finished("seed=2")
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["counts"] == {"ok": 1, "error": 1, "incomplete": 1} and data["format"] == "rnnlab-sweep-1"
    lines = (tmp_path / "results.csv").read_text().splitlines()
    assert lines[0].split(",")[:3] == ["trial", "status", "seed"] and lines[0].endswith(",error")
    assert len(lines) == 4 and not list(tmp_path.glob("*.tmp"))


def test_summarise_transduction(tmp_path):
    config = {"steps": 20, "test_samples": 10, "parameters": 99}
    epochs = [{"epoch": 1, "step": 20, "loss": 0.1, "perplexity": 1.1, "val_coarse": 0.5, "time": 2.0}]
    test = {"step": 20, "coarse": 0.25, "fine": 0.5, "perplexity": 1.3, "samples": 10, "lengths": [5, 6],
            "memory": {"push_source": 0.9, "pop_target": 0.8, "lifetime": 4.0}}
    (tmp_path / "metrics.json").write_text(json.dumps({"config": config, "epochs": epochs, "test": test}))
    row = summarise_transduction(tmp_path)
    assert row["completed"] and row["steps"] == 20 and row["train_perplexity"] == 1.1
    assert row["test_coarse"] == 0.25 and row["test_memory_lifetime"] == 4.0 and "test_samples" not in row
    (tmp_path / "metrics.json").write_text(json.dumps({"config": config, "epochs": epochs[:0]}))
    assert not summarise_transduction(tmp_path)["completed"]


def test_without_ray_says_what_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)   # `import ray` raises ImportError
    with pytest.raises(runner.RayMissing, match=r"pip install 'ray\[tune\]>=2.9'"):
        runner.import_ray()
    assert cli(["sweep", "transduction", "--out", str(tmp_path), "--grid", "seed=0,1"]) == 2
    assert "pip install 'ray[tune]>=2.9'" in capsys.readouterr().err
    # a dry run needs no Ray
    assert cli(["sweep", "transduction", "--out", str(tmp_path), "--grid", "seed=0,1", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "pending  seed=0:  python -m rnnlab train transduction --seed=0" in out
    assert cli(["sweep", "transduction", "--out", str(tmp_path), "--grid", "sed=0"]) == 2
    assert "--grid sed: `python -m rnnlab train transduction` has no option --sed" in capsys.readouterr().err


def test_importing_rnnlab_does_not_import_ray():
    code = "import sys, rnnlab, rnnlab.sweep, rnnlab.__main__; print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_changed_fixed_options_are_refused(tmp_path):
    spec = build_spec("transduction", sets=TINY, grids=["seed=0"])
    ResultsTable(tmp_path, {"task": "transduction", "set": {"hidden": "16"}, "axes": {"seed": ["0"]}}).write()
    with pytest.raises(ValueError, match="this folder holds a sweep of task 'transduction' with --set"):
        run_sweep(spec, tmp_path, log=lambda *a: None)


# --- real trials on a local Ray ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.tune")
    os.environ.setdefault("RAY_kill_child_processes_on_worker_exit", "0")
    started = not ray.is_initialized()
    if started:
        # Ray gives its raylet a fixed 30 s to register; on a loaded machine a start can miss that ("The
        # current node timed out during startup"). A later start, with its files cached, usually makes it;
        # under a load of about 12 on two cores two starts both missed, so up to four are tried.
        attempts = 4
        for attempt in range(attempts):
            try:
                ray.init(num_cpus=2, object_store_memory=100 * 2 ** 20, include_dashboard=False,
                         log_to_driver=False)
                break
            except Exception as exc:  # noqa: BLE001 (Ray raises a bare Exception here)
                ray.shutdown()
                if attempt == attempts - 1 or "timed out during startup" not in str(exc):
                    raise
    yield ray
    if started:
        ray.shutdown()


def _stderr_runs(run_dir):
    return (run_dir / "stderr.log").read_text().count("--- ")


def test_sweep_on_ray_skips_resumes_and_records_errors(local_ray, tmp_path, capsys):
    from rnnlab.experiments import transduction
    out = tmp_path / "sweep"
    # steps=30 is not a multiple of eval-every=20: that trial's command fails
    grids = ["seed=0,1", "steps=20,30"]
    spec = build_spec("transduction", sets=TINY, grids=grids)
    ids = [t.id for t in spec.trials()]
    assert ids == ["seed=0,steps=20", "seed=0,steps=30", "seed=1,steps=20", "seed=1,steps=30"]
    # an earlier sweep, stopped: one trial finished (a row), one run stopped half way (a checkpoint at step 10)
    ResultsTable(out, {"task": "transduction", "set": spec.fixed, "axes": spec.axes}).record(
        {"trial": ids[0], "status": "ok", "seed": 0, "steps": 20, "test_coarse": 0.123})
    half = out / "trials" / ids[2]
    transduction.run(task="reversal", hidden=8, values=8, embedding=8, vocab=4, train_lengths=(2, 4),
                     test_lengths=(5, 6), eval_every=20, eval_samples=10, test_samples=10, steps=20, seed=1,
                     out=str(half), max_steps=10, progress=False)
    before = json.loads((half / "metrics.json").read_text())["steps"]
    assert len(before) == 10

    lines = []
    outcome = run_sweep(spec, out, workers=2, threads=1, limit=2, log=lines.append)
    assert outcome["skipped"] == [ids[0]] and sorted(outcome["ran"]) == [ids[1], ids[2]]
    assert outcome["unfinished"] == [] and outcome.exit_code == 1
    rows = ResultsTable.load(out).rows
    assert rows[ids[0]]["test_coarse"] == 0.123 and not (out / "trials" / ids[0]).exists()
    assert rows[ids[1]]["status"] == "error" and "multiple of eval_every" in rows[ids[1]]["error"]
    assert rows[ids[1]]["error"].startswith("exit status 1")
    done = rows[ids[2]]
    assert done["status"] == "ok" and done["steps"] == 20 and 0 <= done["test_coarse"] <= 1
    assert done["seed"] == 1 and done["wall_s"] > 0 and done["train_perplexity"] > 1
    after = json.loads((half / "metrics.json").read_text())["steps"]
    assert after[:10] == before and len(after) == 20          # resumed from its checkpoint, not restarted
    assert ids[3] not in rows and any(line.startswith("[2/2]") for line in lines)

    # the same command again (through the CLI): the errored trial is retried, the new one runs, ok rows stay
    argv = ["sweep", "transduction", "--out", str(out), "--workers", "2", "--threads", "1"]
    argv += [a for s in TINY for a in ("--set", s)] + [a for g in grids for a in ("--grid", g)]
    assert cli(argv) == 1
    assert "sweep: 2 ok, 2 error, 0 incomplete, 0 not run, of 4" in capsys.readouterr().out
    data = json.loads((out / "results.json").read_text())
    assert [r["trial"] for r in data["rows"]] == ids and data["command"].startswith("python -m rnnlab sweep")
    assert data["rows"][2] == done
    assert _stderr_runs(out / "trials" / ids[1]) == 2 and _stderr_runs(half) == 1
    with open(out / "results.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert [r["trial"] for r in table] == ids and table[1]["status"] == "error" and table[2]["steps"] == "20"

def test_imitation_sweep_resumes_and_reports_a_failing_environment(local_ray, tmp_path, capsys):
    """Issue 11: a grid of closed-loop imitation runs resumed after a stop without losing a finished
    trial; a trial whose environment raises mid-episode is reported while the rest of the grid goes on."""
    pytest.importorskip("gymnasium")
    from rnnlab.control.experts import PendulumExpert
    from rnnlab.control.rollouts import record_rollouts
    from rnnlab.experiments import imitation
    ro = tmp_path / "rollouts.npz"
    record_rollouts("pendulum", PendulumExpert(), str(ro), episodes=6)
    tiny = [f"rollouts={ro}", "env=pendulum", "epochs=2", "lrs=0.001", "window=50", "batch-size=8",
            "val-episodes=2", "eval-episodes=1", "shifts=noise"]
    grids = ["cell=rnn,gru", "fault-at-step=0,30"]
    spec = build_spec("control-imitation", sets=tiny, grids=grids)
    ids = [t.id for t in spec.trials()]
    assert ids == ["cell=rnn,fault_at_step=0", "cell=rnn,fault_at_step=30", "cell=gru,fault_at_step=0",
                   "cell=gru,fault_at_step=30"]
    out = tmp_path / "sweep"
    # a trial left half way by an earlier, stopped sweep: its first epoch is in a checkpoint
    half = out / "trials" / ids[2]
    imitation.run(env="pendulum", cell="gru", epochs=1, lrs=(0.001,), window=50, batch_size=8, val_episodes=2,
                  eval_episodes=1, shifts=("noise",), rollouts=str(ro), out=str(half), progress=False)
    (half / "metrics.json").unlink()
    first_epoch = json.loads((half / "lr-0.001" / "metrics.json").read_text())["epochs"]
    assert len(first_epoch) == 1

    outcome = run_sweep(spec, out, workers=2, threads=1, limit=2, log=lambda *a: None)   # stopped half way
    assert sorted(outcome["ran"]) == ids[:2]
    rows = ResultsTable.load(out).rows
    ok, bad = rows[ids[0]], rows[ids[1]]
    assert ok["status"] == "ok" and ok["last_epoch"] == 2 and 0 < ok["test_val_loss"] < 1
    assert "test_none_normalised" in ok and "test_noise_normalised" in ok and "test_ed_h_noise" in ok
    assert bad["status"] == "error" and "injected environment fault at step 30" in bad["error"]

    # run again through the CLI: the finished trial is kept (not rerun), the half-done one resumes
    argv = ["sweep", "control-imitation", "--out", str(out), "--workers", "2", "--threads", "1"]
    argv += [a for s in tiny for a in ("--set", s)] + [a for g in grids for a in ("--grid", g)]
    assert cli(argv) == 1
    assert "2 ok, 2 error, 0 incomplete, 0 not run, of 4" in capsys.readouterr().out
    rows = ResultsTable.load(out).rows
    assert rows[ids[0]] == ok and _stderr_runs(out / "trials" / ids[0]) == 1
    assert rows[ids[2]]["status"] == "ok" and rows[ids[3]]["status"] == "error"
    resumed = json.loads((half / "lr-0.001" / "metrics.json").read_text())["epochs"]
    assert len(resumed) == 2 and resumed[0] == first_epoch[0]        # continued, not restarted


def test_task_registry_lives_with_the_experiments_and_ctrl_c_stops_every_command(monkeypatch, tmp_path, capsys):
    """rnnlab.sweep reads TRAIN_TASKS from rnnlab.experiments (not from rnnlab.__main__), and main()'s one
    KeyboardInterrupt handler answers 130 with a resume hint for train, sweep and control alike."""
    import inspect

    import rnnlab.__main__ as entry
    import rnnlab.experiments
    from rnnlab.control import cli as control_cli
    from rnnlab.experiments import copy_memory
    from rnnlab.sweep import grid, runner

    assert grid.TRAIN_TASKS is rnnlab.experiments.TRAIN_TASKS is entry.TRAIN_TASKS
    assert "__main__" not in inspect.getsource(grid)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    for module in (copy_memory, runner, control_cli):
        monkeypatch.setattr(module, "main", interrupted)
    for argv in (["train", "copy-memory", "--out", str(tmp_path / "run")],
                 ["sweep", "copy-memory", "--out", str(tmp_path / "grid"), "--grid", "seed=0,1"],
                 ["control", "evaluate", "--env", "pendulum"]):
        assert cli(argv) == 130, argv
        assert "run the same command again to resume" in capsys.readouterr().err
