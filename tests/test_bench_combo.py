"""``python -m rnnlab.bench combo``: the shape of its output and its op counts, never its timings.

Performance is a benchmark, not a test: nothing here asserts a time or a ratio of times. Every run
uses tiny sizes and one timed call.
"""
import json

import pytest
import torch

from rnnlab import bench
from rnnlab.bench import combo
from rnnlab.bench.__main__ import main
from rnnlab.models import SparseComboNet, SVDComboNet

TINY = dict(warmup=0, min_repeats=1, min_time=0.0)


@pytest.fixture(scope="module")
def rows():
    return combo.run(modules=2, module_size=3, T=4, batch=2, **TINY)


def test_registered():
    assert bench.BENCHMARKS["combo"] == "rnnlab.bench.combo"
    assert bench.load("combo") is combo


def test_rows(rows):
    assert [r["name"] for r in rows] == list(combo.ROWS)
    for r in rows:
        assert (r["benchmark"], r["T"], r["B"], r["dtype"], r["stat"]) == ("combo", 4, 2, "float32", "min")
        assert r["n"] == (2 if r["name"] == "overhead" else 6)
        assert r["step_s"] > 0 and r["step_min_s"] <= r["step_median_s"]
        assert r["over_dense_euler"] == pytest.approx(r["step_s"] / rows[4]["step_s"])
        assert r["timings"]["n"] == 1
        if r["name"] != "floor":
            assert r["last_loss"] is not None and r["last_loss"] == r["last_loss"]  # finite, not NaN
    c = rows[0]
    assert set(c["targets"]) == {"over_dense_euler", "dense_w_over_combo"}
    assert all(v["status"] in ("PASS", "MISS") for v in c["targets"].values())
    assert all(not r["targets"] for r in rows[1:])
    e = c["kernel_estimate"]
    assert e["fraction_of_ideal"] == pytest.approx(e["ideal_s"] / c["step_s"])
    assert e["l_s"] == pytest.approx(c["step_s"] - rows[2]["step_s"])
    assert e["fused_gain"] >= 1 and e["bound_gain"] > 0
    json.dumps(rows, allow_nan=False)


def test_table(rows):
    table = combo.format_table(rows, title="combo")
    lines = table.splitlines()
    assert lines[0] == "combo" and "/dense Euler" in lines[1] and "MAC/train step (x3)" in lines[1]
    for label in combo.ROWS.values():
        assert any(line.startswith(label) for line in lines), label
    assert "A fused kernel" in table and "Target verdicts:" in table


def test_op_counts_by_hand():
    # 16 x 32, batch 64, input 1: n = 512
    c = combo.macs_per_time_step("combo", batch=64, modules=16, module_size=32)
    assert c == {"input": 64 * 512, "w": 64 * 512 * 32, "l": 64 * 512 * 512, "l_structural": 64 * 512 * 480,
                 "elementwise": 7 * 64 * 512, "total": 32768 + 1048576 + 16777216}
    d = combo.macs_per_time_step("combo_dense_w", batch=64, modules=16, module_size=32)
    assert d["w"] == d["l"] == 16777216
    e = combo.macs_per_time_step("dense_euler", batch=64, modules=16, module_size=32)
    assert (e["w"], e["l"], e["total"]) == (16777216, 0, 32768 + 16777216)
    # training step: x3 convention, and the exact count (frozen W and the input need one gradient)
    t = combo.train_macs("combo", T=784, batch=64, modules=16, module_size=32)
    readout = 64 * 512 * 10
    assert t["forward"] == 784 * c["total"] + readout and t["x3"] == 3 * t["forward"]
    assert t["exact"] == 784 * (2 * 32768 + 2 * 1048576 + 3 * 16777216) + 3 * readout
    t = combo.train_macs("dense_euler", T=2, batch=1, modules=1, module_size=2, input_size=1, output_size=1)
    assert t == {"forward": 2 * (2 + 4) + 2, "x3": 3 * (2 * 6 + 2), "exact": 2 * (2 * 2 + 3 * 4) + 3 * 2}


def test_dense_w_variant_and_euler_forward_match_the_model():
    torch.manual_seed(0)
    model = SparseComboNet(1, [4] * 3, 5, seed=1, b_std=0.3)
    x = torch.rand(3, 9, 1)
    out, h = model(x)
    dense = combo.dense_w_variant(model)
    assert dense.module_blocks() is None and model.module_blocks() is not None
    out_d, h_d = dense(x)
    torch.testing.assert_close(out_d, out)
    torch.testing.assert_close(h_d, h)
    out_e, h_e = combo.euler_forward(model, x)
    torch.testing.assert_close(out_e, out)
    torch.testing.assert_close(h_e, h)
    out_0, _ = combo.euler_forward(model, x, feedback=False)
    assert not torch.allclose(out_0, out)
    svd = SVDComboNet(1, [2] * 2, 3)
    torch.testing.assert_close(combo.dense_w_variant(svd)(x)[0], svd(x)[0])


def test_kernel_estimate_arithmetic():
    macs = {"combo": {"exact": 600}, "dense_euler": {"exact": 300}}
    t = {"combo": 10.0, "combo_dense_w": 14.0, "combo_no_l": 6.0, "overhead": 3.0, "dense_euler": 8.0,
         "floor": 2.0}
    e = combo.kernel_estimate(t, macs, T=1, batch=1, n=10)    # floor: 300 MACs in 2 s
    assert e["rate_macs_per_s"] == 150 and e["ideal_s"] == 4 and e["fraction_of_ideal"] == 0.4
    assert (e["l_s"], e["overhead_s"], e["w_dense_extra_s"], e["fused_s"]) == (4, 3, 4, 7)
    assert e["fused_gain"] == pytest.approx(10 / 7) and e["bound_gain"] == 2.5
    assert e["dense_euler_fraction_of_ideal"] == 2 / 8
    assert combo.kernel_estimate({"combo": None}, macs, T=1, batch=1, n=1)["ideal_s"] is None


def test_command_line(tmp_path, capsys):
    out = tmp_path / "c.json"
    assert main(["combo", "--quick", "--T", "3", "--no-svd", "--threads", "1", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Sparse Combo Net" in printed and "SVD" not in printed.split("\n\n")[0]
    doc = json.loads(out.read_text())
    assert doc["benchmark"] == "combo" and [r["name"] for r in doc["rows"]] == [
        k for k in combo.ROWS if k != "svd_combo"]
    assert doc["config"]["T"] == 3 and doc["config"]["modules"] == combo.QUICK["modules"]
    assert [t["key"] for t in doc["targets"]] == ["over_dense_euler", "dense_w_over_combo"]
    assert set(doc["summary"]) <= {"PASS", "MISS", "N/A"} and sum(doc["summary"].values()) == 2
    assert "kernel_estimate" in doc["rows"][0]


@pytest.mark.parametrize("argv, name", [(["--modules", "0"], "--modules"), (["--module-size", "x"], "--module-size"),
                                        (["--T", "-1"], "--T"), (["--batch", "0"], "--batch"),
                                        (["--min-time", "-1"], "--min-time")])
def test_bad_arguments_name_the_argument(argv, name, capsys):
    with pytest.raises(SystemExit):
        main(["combo", "--quick", "--no-json"] + argv)
    assert name in capsys.readouterr().err


def test_run_rejects_bad_values():
    for key in ("modules", "module_size", "T", "batch"):
        with pytest.raises(ValueError, match=key):
            combo.run(**{key: 0}, **TINY)
    with pytest.raises(ValueError, match="stat"):
        combo.run(quick=True, stat="max", **TINY)
    with pytest.raises(TypeError, match="unknown timing"):
        combo.run(quick=True, loops=3)
    with pytest.raises(ValueError, match="kind"):
        combo.macs_per_time_step("lstm", batch=1, modules=1, module_size=1)
