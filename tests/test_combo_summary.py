"""python -m rnnlab.experiments.combo_summary: finished combo-net runs into one JSON file, resumable."""
import json

import pytest

from rnnlab.__main__ import main as rnnlab_main
from rnnlab.experiments import combo_summary

TINY = ["--dataset", "digits", "--order", "row", "--modules", "2", "--module-size", "8", "--limit", "64",
        "--batch-size", "16", "--no-progress", "--threads", "1", "--epochs", "2"]


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def test_collect_two_runs_then_skip_them(tmp_path, capsys):
    on, off = tmp_path / "on", tmp_path / "off"
    assert rnnlab_main(["train", "combo-net", *TINY, "--out", str(on)]) == 0
    assert rnnlab_main(["train", "combo-net", *TINY, "--constraint", "off", "--out", str(off)]) == 0
    out = tmp_path / "summary.json"
    assert combo_summary.main([str(on), str(off), str(tmp_path / "missing"), "--out", str(out),
                               "--samples", "2", "--visited", "3"]) == 0
    printed = capsys.readouterr().out
    assert "skip" in printed and "missing" in printed
    data = json.loads(out.read_text())
    assert data["command"].startswith("python -m rnnlab.experiments.combo_summary")
    run = data["runs"]["on"]
    assert [e["epoch"] for e in run["epochs"]] == [1, 2] and run["test"]["completed"]
    assert 0 <= run["test"]["accuracy"] <= 1 and run["config"]["constraint"] == "on"
    assert run["data"]["permute"] is False and run["config"]["trainable_parameters"] > 0
    for key in ("certificate_before", "certificate_after"):
        cert = run[key]
        assert cert["continuous_certified"] and cert["skew_residual"] < 1e-12
        assert cert["patterns"] == {"off": 1, "on": 1, "random": 2, "visited": 3}
    # training moved B, so L moved; the modules (buffers of the sparse net) did not
    assert run["certificate_after"]["L_norm_in_metric"] != run["certificate_before"]["L_norm_in_metric"]
    assert run["certificate_after"]["module_rate_min"] == run["certificate_before"]["module_rate_min"]
    assert data["runs"]["off"]["certificate_after"]["constraint"] == "off"
    assert data["runs"]["off"]["certificate_after"]["skew_residual"] > 0.1
    # a second collection skips what is there at the same step
    assert combo_summary.main([str(on), "--out", str(out)]) == 0
    assert "already summarised at step" in capsys.readouterr().out


def test_bad_options(tmp_path):
    with pytest.raises(SystemExit):
        combo_summary.main([str(tmp_path), "--out", str(tmp_path / "x.json"), "--samples", "-1"])
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        combo_summary.summarize_run(str(tmp_path))
