"""The teaching-scale grid of transduction runs (rnnlab.experiments.transduction_grid): real runs at a
tiny size through the command line, summaries in one JSON file, and a re-run that skips what is done."""
import json

from rnnlab.experiments import transduction_grid as grid

TINY = dict(grid.TEACHING_SCALE, hidden=4, values=3, embedding=3, steps=4, eval_every=2, eval_samples=3,
            test_samples=3)


def test_grid_writes_summaries_and_resumes(tmp_path):
    out, runs = tmp_path / "grid.json", tmp_path / "runs"
    lines = []
    done = grid.run_grid(out, tasks=("reversal",), models=("stack", "lstm"), seeds=(0,), settings=TINY,
                         runs=runs, log=lines.append)
    assert sorted(done) == ["reversal-lstm-s0", "reversal-stack-s0"] and len(lines) == 2
    saved = json.loads(out.read_text())
    s = saved["reversal-stack-s0"]
    assert s["config"]["model"] == "stack" and s["config"]["hidden"] == 4 and s["config"]["steps"] == 4
    assert [e["step"] for e in s["evaluations"]] == [2, 4]
    assert s["test"]["lengths"] == [9, 16] and 0 <= s["test"]["coarse"] <= 1 and s["wall_s"] > 0
    # a second call runs only what is missing
    lines.clear()
    done = grid.run_grid(out, tasks=("reversal",), models=("stack", "lstm", "queue"), seeds=(0,), settings=TINY,
                         runs=runs, log=lines.append)
    assert len(lines) == 1 and lines[0].startswith("reversal-queue-s0") and len(done) == 3


def test_command_line_of_a_run():
    cmd = grid.command("copy", "lstm", 2, "somewhere")
    assert cmd[1:5] == ["-m", "rnnlab", "train", "transduction"]
    assert cmd[cmd.index("--seed") + 1] == "2" and cmd[cmd.index("--test-max-len") + 1] == "16"
