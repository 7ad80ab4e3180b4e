"""Collecting paper-scale transduction runs for the book (rnnlab.experiments.transduction_paper): summaries
keyed by task, model and seed, the training command read back from the run's config (it must resume the
run), evaluations of the last checkpoint only, and notes kept across re-collections."""
import json
import shlex

import pytest

from rnnlab.__main__ import main as rnnlab_main
from rnnlab.experiments import transduction_paper as tp

TINY = ["--task", "reversal", "--hidden", "8", "--values", "4", "--embedding", "4", "--vocab", "4",
        "--min-len", "2", "--max-len", "4", "--test-min-len", "5", "--test-max-len", "6",
        "--eval-samples", "6", "--test-samples", "5", "--no-progress", "--threads", "1",
        "--steps", "6", "--eval-every", "2"]

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def test_collect_evaluates_keeps_notes_and_its_command_resumes_the_run(tmp_path, capsys):
    run, lstm, out = tmp_path / "stack", tmp_path / "lstm", tmp_path / "paper.json"
    assert rnnlab_main(["train", "transduction", *TINY, "--model", "stack", "--seed", "3", "--pop-bias", "-2",
                        "--max-steps", "4", "--out", str(run)]) == 0
    assert rnnlab_main(["train", "transduction", *TINY, "--model", "lstm", "--layers", "2",
                        "--out", str(lstm)]) == 0
    lines = []
    stack_key = "reversal-stack-s3-h8-m4-e4-v4-pop-2-len2..4-test5..6"
    lstm_key = "reversal-lstm2-s0-h8-m4-e4-v4-len2..4-test5..6"
    done = tp.collect([run, lstm], out, notes={stack_key: "a note"}, log=lines.append)
    assert sorted(done) == [lstm_key, stack_key] and len(lines) == 2
    s = done[stack_key]
    assert not s["paper_scale"] and s["differences"]["pop_bias"] == -2.0 and s["differences"]["vocab"] == 4
    assert s["steps_done"] == 4 and not s["completed"] and s["test"] is None and s["evaluation"] is None
    assert [e["step"] for e in s["evaluations"]] == [2, 4] and s["train_seconds"] > 0
    assert s["note"] == "a note" and json.loads(out.read_text()) == done
    assert done[lstm_key]["completed"] and done[lstm_key]["test"]["step"] == 6
    cmd = shlex.split(s["command"])
    assert cmd[cmd.index("--pop-bias") + 1] == "-2.0" and cmd[cmd.index("--seed") + 1] == "3"
    assert "--layers" not in cmd and "--model lstm --layers 2 " in done[lstm_key]["command"]
    # --evaluate evaluates the last checkpoint and writes evaluation.json into the run folder
    done = tp.collect([run], out, evaluate=True, samples=7, log=lines.append)
    ev = done[stack_key]["evaluation"]
    assert ev["step"] == 4 and ev["test_lengths"]["samples"] == 7 and ev["test_lengths"]["lengths"] == [5, 6]
    assert "run_config" not in ev and (run / "evaluation.json").exists()
    assert done[stack_key]["note"] == "a note" and lstm_key in done  # kept
    # the recorded command (with the tiny run's options) resumes the same run to its end
    argv = cmd[3:] + ["--no-progress"]
    assert rnnlab_main(argv) == 0
    assert "completed at step 6" in capsys.readouterr().out
    done = tp.collect([run], out, log=lines.append)
    s = done[stack_key]
    assert s["steps_done"] == 6 and s["completed"] and s["evaluation"] is None  # step 4's evaluation dropped


def test_main_and_bad_arguments(tmp_path, capsys):
    run, out = tmp_path / "run", tmp_path / "paper.json"
    assert rnnlab_main(["train", "transduction", *TINY, "--model", "queue", "--out", str(run)]) == 0
    key = "reversal-queue-s0-h8-m4-e4-v4-len2..4-test5..6"
    assert tp.main([str(run), "--out", str(out), "--note", f"{key}=done"]) == 0
    assert json.loads(out.read_text())[key]["note"] == "done"
    with pytest.raises(SystemExit):
        tp.main([str(run), "--out", str(out), "--note", "no-equals-sign"])
    assert "--note must be KEY=TEXT" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        tp.main([str(tmp_path / "missing"), "--out", str(out)])
    assert "is not a folder" in capsys.readouterr().err
    with pytest.raises(ValueError, match="--note: no run 'copy-stack-s0'"):
        tp.collect([run], out, notes={"copy-stack-s0": "x"})
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="run_dir .* has no metrics.json"):
        tp.summarise_run(tmp_path / "empty")


def test_train_command_lists_only_what_differs_from_the_defaults():
    from rnnlab.experiments.transduction import PAPER
    config = dict(PAPER, model="lstm", layers=8, seed=0, threads=1, eval_every=500, eval_samples=200,
                  train_lengths=[8, 64], test_lengths=[65, 128])
    assert tp.train_command(config, "runs/x") == (
        "python -m rnnlab train transduction --task reversal --model lstm --layers 8 --eval-every 500 "
        "--eval-samples 200 --threads 1 --out runs/x")
    assert tp.run_key(config) == "reversal-lstm8-s0" and tp.differences(config) == {}
    assert tp.run_key(dict(config, model="deque", seed=2)) == "reversal-deque-s2"
    small = dict(config, model="stack", hidden=32, values=16, embedding=16, vocab=8, lr=5e-3)
    assert tp.run_key(small) == "reversal-stack-s0-h32-m16-e16-v8-lr0.005"
    assert tp.differences(dict(config, pop_bias=-2.0)) == {}            # the Deep LSTM has no pop bias
