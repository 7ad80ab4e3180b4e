"""``python -m rnnlab.bench cells``: the shape of its output, never its timings.

Performance is a benchmark, not a test: nothing here asserts a time or a ratio of times. Every run
uses tiny sizes and one timed call.
"""
import json

import pytest
import torch

from rnnlab import bench
from rnnlab.bench import cells
from rnnlab.bench.__main__ import main

TINY = dict(warmup=0, min_repeats=1, min_time=0.0)
SIZES = dict(batch_size=2, input_size=3, hidden_size=4)


@pytest.fixture(scope="module")
def rows():
    return cells.run(T=(2, 3), backends=("cpu",), **SIZES, **TINY)


def test_registered():
    assert bench.BENCHMARKS["cells"] == "rnnlab.bench.cells"
    assert bench.load("cells") is cells


def test_rows(rows):
    assert [(r["kind"], r["T"]) for r in rows] == [(k, t) for k in cells.KINDS for t in (2, 3)]
    for r in rows:
        assert (r["benchmark"], r["backend"], r["B"], r["I"], r["H"], r["dtype"]) == ("cells", "cpu", 2, 3, 4,
                                                                                       "float32")
        assert r["nn_module"] == f"torch.nn.{cells.NN_MODULES[r['kind']]}"
        for key in ("ref_s", "kernel_s", "nn_s", "proj_s"):
            assert r[key] > 0, key
        assert r["ref_over_kernel"] == pytest.approx(r["ref_s"] / r["kernel_s"])
        assert r["kernel_over_nn"] == pytest.approx(r["kernel_s"] / r["nn_s"])
        assert r["ref_over_proj"] == pytest.approx(r["ref_s"] / r["proj_s"])
        assert r["timings"]["kernel"]["n"] == 1 and r["stat"] == "min"
        assert set(r["targets"]) == {"ref_over_kernel", "kernel_over_nn"}
        for verdict in r["targets"].values():
            assert verdict["status"] in ("PASS", "MISS")
    assert cells.NN_MODULES["cfc"] == "GRU"
    json.dumps(rows, allow_nan=False)


def test_table(rows):
    table = cells.format_table(rows, title="cells")
    lines = table.splitlines()
    assert lines[0] == "cells"
    assert "ref/kernel (>=5)" in lines[1] and "kernel/nn (<=1.5)" in lines[1] and "proj f+b" in lines[1]
    assert sum(line.startswith("cpu ") for line in lines) == len(rows)
    assert "GRU*" in table and "CfC has no torch module" in table
    assert "Target verdicts:" in table


def test_layers_compute_the_same_as_the_reference():
    """The timed kernel call and reference call differentiate the same function (same gradients)."""
    gen = torch.Generator().manual_seed(0)
    for kind in cells.KINDS:
        x = torch.randn(2, 5, 3, generator=gen, dtype=torch.float64)
        g = torch.randn(2, 5, 4, generator=gen, dtype=torch.float64)
        params, _ = cells._layer(kind, 3, 4, 2, torch.float64, "cpu", seed=1)
        got = cells._op_call(kind, x, params, g, "cpu")()
        ref = cells._op_call(kind, x, params, g, None)()
        assert len(got) == (5 if kind == "lstm" else 4)
        for a, b in zip(got, ref):
            torch.testing.assert_close(a, b)


def test_no_reference():
    rows = cells.run(T=2, kinds=("gru",), backends=("cpu",), reference=False, **SIZES, **TINY)
    assert rows[0]["ref_s"] is None and rows[0]["ref_over_kernel"] is None
    assert rows[0]["targets"]["ref_over_kernel"]["status"] == "N/A"
    assert "-" in cells.format_table(rows)


def test_command_line(tmp_path, capsys):
    out = tmp_path / "c.json"
    assert main(["cells", "--T", "3", "--kinds", "lstm", "cfc", "--batch-size", "2", "--input-size", "3",
                 "--hidden-size", "2", "--quick", "--min-time", "0", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "lstm" in printed and "GRU*" in printed and "kernel/nn" in printed
    doc = json.loads(out.read_text())
    assert doc["benchmark"] == "cells" and len(doc["rows"]) == 2
    assert doc["config"]["kinds"] == ["lstm", "cfc"] and doc["rows"][0]["T"] == 3
    assert [t["key"] for t in doc["targets"]] == ["ref_over_kernel", "kernel_over_nn"]


def test_quick_defaults():
    rows = cells.run(kinds=("rnn",), backends=("cpu",), quick=True, reference=False, min_time=0.0)
    assert [r["T"] for r in rows] == list(cells.QUICK_T)
    assert (rows[0]["B"], rows[0]["I"], rows[0]["H"]) == tuple(cells.QUICK_SIZE.values())


def test_bad_arguments():
    with pytest.raises(ValueError, match="kinds"):
        cells.run(T=(2,), kinds=("transformer",), **TINY)
    with pytest.raises(ValueError, match="dtype"):
        cells.run(T=(2,), dtype="float16", **TINY)
    with pytest.raises(ValueError, match="backends"):
        cells.run(T=(2,), backends=("tpu",), **TINY)
    with pytest.raises(ValueError, match="positive"):
        cells.run(T=(0,), **TINY)
    with pytest.raises(TypeError, match="unknown timing"):
        cells.run(T=(2,), loops=3)
