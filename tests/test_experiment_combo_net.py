"""The combo-net command: a tiny run end to end, what trains, resumption, --evaluate, argument errors."""
import json
import os
import subprocess
import sys

import pytest
import torch

from rnnlab.__main__ import main
from rnnlab.experiments import combo_net as exp
from rnnlab.train import load_checkpoint

TINY = ["--dataset", "digits", "--order", "row", "--modules", "2", "--module-size", "8", "--limit", "64",
        "--batch-size", "16", "--no-progress", "--threads", "1"]


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def _json(path):
    with open(path) as f:
        return json.load(f)


def test_tiny_run_end_to_end_then_resume_then_evaluate(tmp_path, capsys):
    out = str(tmp_path / "run")
    perm = ["--permute", "--permutation-seed", "3", "--out", out]
    assert main(["train", "combo-net", *TINY, "--epochs", "1", "--max-steps", "2", *perm]) == 0
    assert "max_steps at step 2" in capsys.readouterr().out
    assert load_checkpoint(os.path.join(out, "checkpoint.pt"))["step"] == 2
    assert main(["train", "combo-net", *TINY, "--epochs", "1", *perm]) == 0   # resumes mid-epoch
    assert "completed at step 4 (epoch 1)" in capsys.readouterr().out     # 64 examples / batch 16
    config = _json(os.path.join(out, "config.json"))
    assert config["net"] == "sparse" and config["modules"] == 2 and config["module_size"] == 8
    paper = (config["lr"], config["weight_decay"], config["lr_steps"], config["lr_gamma"])
    assert paper == (1e-3, 1e-5, [90, 140], 0.1)
    assert config["alpha"] == 0.1 and config["constraint"] == "on" and config["batch_size"] == 16
    data = config["data"]
    assert set(data) == {"train", "validation", "test"}
    assert data["train"]["permute"] and data["train"]["permutation_seed"] == 3
    assert data["train"]["permutation_sha256"] == data["test"]["permutation_sha256"] is not None
    assert data["train"]["order"] == "row" and data["train"]["seq_len"] == 8 and data["train"]["limit"] == 64
    # only B and the input/output layers train; the 2 x 8 modules (and their metric) are buffers
    assert set(config["trainable"]) == {"weight_ih", "bias_ih", "weight_ho", "bias_ho", "b_free"}
    assert config["trainable"]["b_free"] == 8 * 8      # one lower-triangular block
    metrics = _json(os.path.join(out, "metrics.json"))
    assert metrics["config"]["data"]["train"]["permutation_sha256"] == data["train"]["permutation_sha256"]
    (rec,) = metrics["epochs"]
    assert {"loss", "accuracy", "val_loss", "val_accuracy", "lr"} <= set(rec) and rec["step"] == 4
    assert 0 <= rec["accuracy"] <= 1 and 0 <= rec["val_accuracy"] <= 1 and rec["lr"] == 1e-3
    first = load_checkpoint(os.path.join(out, "checkpoint.pt"))
    assert first["step"] == 4 and first["epoch"] == 1

    # resume: a second epoch continues from step 4 with the same modules
    assert main(["train", "combo-net", *TINY, "--epochs", "2", *perm]) == 0
    assert "completed at step 8 (epoch 2)" in capsys.readouterr().out
    second = load_checkpoint(os.path.join(out, "checkpoint.pt"))
    assert second["step"] == 8 and [r["step"] for r in second["history"]["epochs"]] == [4, 8]
    assert torch.equal(first["model"]["weight_hh"], second["model"]["weight_hh"])
    assert not torch.equal(first["model"]["b_free"], second["model"]["b_free"])

    # a run with another configuration may not resume from this checkpoint
    with pytest.raises(SystemExit, match="different run"):
        main(["train", "combo-net", *TINY, "--epochs", "2", "--out", out])

    # --evaluate: test accuracy of the finished run, written to JSON
    assert main(["train", "combo-net", "--evaluate", "--out", out, "--threads", "1"]) == 0
    assert "test accuracy" in capsys.readouterr().out
    ev = _json(os.path.join(out, "evaluation.json"))
    assert ev["split"] == "test" and ev["step"] == 8 and ev["epoch"] == 2 and ev["completed"]
    assert 0 <= ev["accuracy"] <= 1 and ev["samples"] == 64
    assert ev["data"]["split"] == "test" and ev["data"]["permutation_sha256"] == data["train"]["permutation_sha256"]
    assert ev["run_config"]["seed"] == 0


def test_sparse_modules_stay_fixed_and_b_trains():
    model = exp.make_model("sparse", 8, 10, modules=2, module_size=8, seed=1)
    assert not any(p is model.weight_hh for p in model.parameters())
    W0, B0, win0 = model.weight_hh.clone(), model.b_free.detach().clone(), model.weight_ih.detach().clone()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-5)
    x, y = torch.randn(4, 5, 8), torch.tensor([0, 1, 2, 3])
    opt.zero_grad()
    exp._loss(model(x)[0], y).backward()
    opt.step()
    assert torch.equal(model.weight_hh, W0)
    assert not torch.equal(model.b_free, B0) and not torch.equal(model.weight_ih, win0)
    assert model.verify_contraction()["holds"]
    # the SVD Combo Net trains its modules too
    svd = exp.trainable_parameters(exp.make_model("svd", 8, 10, modules=2, module_size=8))
    assert {"b_free", "log_phi.0", "gen_u.1", "sigma_raw.0"} <= set(svd)


def test_constraint_off_is_the_unconstrained_control():
    on = exp.make_model("sparse", 8, 10, modules=2, module_size=8, seed=2, b_std=0.1)
    off = exp.make_model("sparse", 8, 10, modules=2, module_size=8, seed=2, b_std=0.1, constraint="off")
    assert torch.equal(on.b_free, off.b_free) and torch.equal(on.weight_hh, off.weight_hh)
    assert torch.equal(off.feedback(), off.B()) and not torch.allclose(on.feedback(), on.B())
    on_info, off_info = on.verify_contraction(), off.verify_contraction()
    assert on_info["holds"] and on_info["skew_residual"] < 1e-12 and on_info["feedback_sym_max"] == 0
    # without the constraint L is not skew in M; M still certifies the net while the symmetric part of
    # M^1/2 L M^-1/2 stays below the modules' rate (small B), and no longer once B is large
    assert off_info["skew_residual"] > 0.1 and off_info["feedback_sym_max"] > 0
    assert off_info["rate_with_feedback"] == pytest.approx(off_info["rate"] - off_info["feedback_sym_max"])
    assert off_info["holds"] == (off_info["rate_with_feedback"] > 0)
    big = exp.make_model("sparse", 8, 10, modules=2, module_size=8, seed=2, b_std=3.0, constraint="off")
    assert not big.verify_contraction()["holds"] and big.verify_contraction()["euler_alpha_bound"] == 0
    assert exp.make_model("sparse", 8, 10, modules=2, module_size=8, seed=2, b_std=3.0).certificate["holds"]
    svd_off = exp.make_model("svd", 8, 10, modules=2, module_size=8, constraint="off", blocks="all")
    assert torch.equal(svd_off.feedback(), svd_off.B()) and svd_off.b_free.numel() == 2 * 8 * 8
    x = torch.randn(3, 4, 8)
    assert off(x)[0].shape == svd_off(x)[0].shape == (3, 10)


def test_help_through_python_m():
    res = subprocess.run([sys.executable, "-m", "rnnlab", "train", "combo-net", "--help"],
                         check=False, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    for option in ("--net", "--modules", "--module-size", "--dataset", "--order", "--permute", "--no-permute",
                   "--permutation-seed", "--epochs", "--batch-size", "--lr", "--weight-decay", "--lr-steps",
                   "--alpha", "--constraint", "--limit", "--seed", "--threads", "--max-minutes", "--out",
                   "--evaluate"):
        assert option in res.stdout


@pytest.mark.parametrize("extra, message", [
    (["--modules", "0"], "--modules must be >= 1"),
    (["--alpha", "1.5"], "--alpha"),
    (["--lr", "0"], "--lr must be > 0"),
    (["--lr-steps", "140", "90"], "--lr-steps must be increasing"),
    (["--limit", "0"], "--limit must be >= 1"),
    (["--post-scalar", "2"], "--post-scalar"),
    (["--batch-size", "128"], "fewer than batch_size=128"),
])
def test_bad_arguments_give_clear_errors(tmp_path, extra, message):
    with pytest.raises(SystemExit, match=message):
        main(["train", "combo-net", *TINY, "--epochs", "1", "--out", str(tmp_path / "bad"), *extra])


def test_svd_control_runs_through_the_command_line(tmp_path, capsys):
    out = str(tmp_path / "svd")
    assert main(["train", "combo-net", *TINY, "--net", "svd", "--constraint", "off", "--blocks", "all",
                 "--epochs", "1", "--max-steps", "1", "--out", out]) == 0
    assert "max_steps at step 1" in capsys.readouterr().out
    config = _json(os.path.join(out, "config.json"))
    assert config["constraint"] == "off" and config["trainable"]["b_free"] == 2 * 8 * 8
    assert "gen_u.0" in config["trainable"]


def test_bad_choices_and_missing_checkpoint(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["train", "combo-net", "--net", "dense"])
    assert "invalid choice: 'dense'" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="no checkpoint"):
        main(["train", "combo-net", "--evaluate", "--out", str(tmp_path / "nothing")])
