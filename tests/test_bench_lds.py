"""``python -m rnnlab.bench lds``: shapes of its output, never its timings.

Performance is a benchmark, not a test: nothing here asserts a time or a
ratio's value. Every run uses tiny sizes and one timed call.
"""
import json
import math
import subprocess
import sys

import pytest
import torch

from rnnlab import bench
from rnnlab.bench import check_targets
from rnnlab.bench import lds
from rnnlab.bench.__main__ import main

TINY = dict(warmup=0, min_repeats=1, min_time=0.0)
SIZES = dict(batch_size=2, input_size=2, hidden_size=4, output_size=3)
ROW_KEYS = ("benchmark", "device", "T", "batch_size", "input_size", "hidden_size", "output_size", "dtype",
            "stat", "models", "lstm_impl", "threads", "errors", "parameters", "timings", "targets",
            *(f"{m}_s" for m in lds.MODELS), *(f"speedup_{m}" for m in lds.MODELS))


@pytest.fixture(scope="module")
def rows():
    return lds.run(T=(5, 8), devices=("cpu",), **SIZES, **TINY)


def test_registered():
    assert bench.BENCHMARKS["lds"] == "rnnlab.bench.lds"
    assert bench.load("lds") is lds


def test_rows_have_the_expected_keys_and_positive_times(rows):
    assert [r["T"] for r in rows] == [5, 8]
    for r in rows:
        assert set(ROW_KEYS) <= set(r), set(ROW_KEYS) - set(r)
        assert (r["benchmark"], r["device"], r["stat"], r["dtype"]) == ("lds", "cpu", "median", "float32")
        assert r["models"] == list(lds.DEFAULT_MODELS) and r["errors"] == {}
        for m in lds.DEFAULT_MODELS:
            assert r[f"{m}_s"] > 0, m
            assert r[f"speedup_{m}"] == pytest.approx(r["lstm_s"] / r[f"{m}_s"])
            assert r["timings"][m]["n"] == 1
        assert r["lds_fft_s"] is None and r["speedup_lds_fft"] is None
        assert r["speedup_lstm"] == 1.0
        # one LDS: the stack shares its parameters; the torch models have theirs (+ read-out)
        p = r["parameters"]
        assert p["lds"] == p["ldstack2"] == p["ldstack4"]
        assert p["rnn"] == p["loop_rnn"] == 2 * 4 + 4 * 4 + 2 * 4 + 4 * 3 + 3
        assert p["lstm"] == 4 * (2 * 4 + 4 * 4 + 2 * 4) + 4 * 3 + 3
    json.dumps(rows, allow_nan=False)


def test_models_compute_the_same_shapes_and_the_loop_rnn_is_torch_rnn():
    x = torch.randn(2, 6, 2)
    for name in lds.MODELS:
        y = lds.build_model(name, 2, 4, 3)(x)[0]
        assert y.shape == (2, 6, 3), name
    loop, fused = lds.build_model("loop_rnn", 2, 4, 3), lds.build_model("rnn", 2, 4, 3)
    with torch.no_grad():
        fused.core.weight_ih_l0.copy_(loop.cell.weight_ih)
        fused.core.weight_hh_l0.copy_(loop.cell.weight_hh)
        fused.core.bias_ih_l0.copy_(loop.cell.bias_ih)
        fused.core.bias_hh_l0.copy_(loop.cell.bias_hh)
        fused.head.load_state_dict(loop.head.state_dict())
    torch.testing.assert_close(loop(x)[0], fused(x)[0])


def test_the_first_versions_compute_the_same_model():
    """lds_all_modes and ldstack4_scans are lds and ldstack4 computed the old way: same outputs and gradients."""
    x = torch.randn(3, 20, 4, dtype=torch.float64)
    for fast, slow in (("lds", "lds_all_modes"), ("ldstack4", "ldstack4_scans")):
        a, b = lds.build_model(fast, 4, 16, 3).double(), lds.build_model(slow, 4, 16, 3).double()
        ya, yb = a(x)[0], b(x)[0]
        torch.testing.assert_close(ya, yb, rtol=1e-9, atol=1e-9)
        ga = torch.autograd.grad(ya.square().sum(), list(a.parameters()))
        gb = torch.autograd.grad(yb.square().sum(), list(b.parameters()))
        for u, v in zip(ga, gb):
            torch.testing.assert_close(u, v, rtol=1e-7, atol=1e-9)


def test_targets():
    assert {t.key for t in lds.TARGETS} == {"speedup_lds", "speedup_ldstack4"}
    row = {"T": 1024, "speedup_lds": 6.0, "speedup_ldstack4": 1.5}
    got = check_targets(row, lds.TARGETS)
    assert got["speedup_lds"]["status"] == "PASS" and got["speedup_lds"]["limit"] == 5
    assert got["speedup_ldstack4"]["status"] == "MISS" and got["speedup_ldstack4"]["limit"] == 2
    assert set(check_targets(dict(row, T=2048), lds.TARGETS)) == {"speedup_ldstack4"}
    assert check_targets(dict(row, T=512), lds.TARGETS) == {}
    assert check_targets(dict(row, speedup_lds=None), lds.TARGETS)["speedup_lds"]["status"] == "N/A"


def test_targets_apply_at_1024(rows):
    rows = lds.run(T=(1024,), models=("lds", "ldstack4", "lstm"), devices=("cpu",),
                   batch_size=1, input_size=1, hidden_size=2, output_size=1, **TINY)
    (r,) = rows
    assert set(r["targets"]) == {"speedup_lds", "speedup_ldstack4"}
    for v in r["targets"].values():
        assert v["status"] in ("PASS", "MISS")
    assert r["rnn_s"] is None and r["loop_rnn_s"] is None


def test_a_model_that_fails_is_reported_not_fatal(monkeypatch):
    real = lds.build_model

    def broken(name, *args, **kwargs):
        model = real(name, *args, **kwargs)
        if name == "lds":
            def fail(x, h0=None):
                raise RuntimeError("no kernel here")
            model.forward = fail
        return model

    monkeypatch.setattr(lds, "build_model", broken)
    (r,) = lds.run(T=(4,), models=("lds", "lstm"), devices=("cpu",), **SIZES, **TINY)
    assert r["lds_s"] is None and "no kernel here" in r["errors"]["lds"] and r["lstm_s"] > 0
    table = lds.format_table([r])
    assert "error" in table and "no kernel here" in table


def test_table(rows):
    table = lds.format_table(rows, title="TITLE")
    lines = table.splitlines()
    assert lines[0] == "TITLE"
    for header in ("device", "T", *lds.DEFAULT_MODELS):
        assert header in lines[1]
    assert sum(line.startswith("cpu") for line in lines) == len(rows)
    assert "Targets:" in table and "matched hidden size H = 4" in table
    assert "lstm on cpu" in table


def test_spin_note(rows, monkeypatch):
    many = [dict(r, threads=2) for r in rows]
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    assert "OMP_WAIT_POLICY=PASSIVE" in lds.format_table(many)
    assert "OMP_WAIT_POLICY=PASSIVE" not in lds.format_table([dict(r, threads=1) for r in rows])
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    assert "OMP_WAIT_POLICY=PASSIVE" not in lds.format_table(many)


def test_run_rejects_bad_arguments():
    tiny = dict(devices=("cpu",), **SIZES, **TINY)
    with pytest.raises(ValueError, match="T must be"):
        lds.run(T=(0,), **tiny)
    with pytest.raises(ValueError, match="models"):
        lds.run(T=(4,), models=("gru",), **tiny)
    with pytest.raises(ValueError, match="devices"):
        lds.run(T=(4,), **dict(tiny, devices=("tpu",)))
    with pytest.raises(ValueError, match="stat"):
        lds.run(T=(4,), stat="max", **tiny)
    with pytest.raises(ValueError, match="even multiple"):
        lds.run(T=(4,), **dict(tiny, hidden_size=6, input_size=2))  # 3 modes per block
    with pytest.raises(ValueError, match="batch_size"):
        lds.run(T=(4,), **dict(tiny, batch_size=0))
    with pytest.raises(TypeError, match="timing settings"):
        lds.run(T=(4,), repeats=3, **tiny)
    with pytest.raises(ValueError, match="model must be"):
        lds.build_model("gru", 2, 4, 3)
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="no GPU"):
            lds.run(T=(4,), **dict(tiny, devices=("cuda",)))


def test_default_devices():
    assert lds.default_devices() == (("cpu", "cuda") if torch.cuda.is_available() else ("cpu",))


def test_cli_prints_the_table_and_writes_json(tmp_path, capsys):
    out = tmp_path / "lds.json"
    argv = ["lds", "--quick", "--T", "6", "7", "--batch-size", "1", "--input-size", "2", "--hidden-size", "4",
            "--output-size", "2", "--models", "lds", "lstm", "loop_rnn", "--min-time", "0", "--devices", "cpu",
            "--json", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr()
    assert "loop_rnn" in printed.out and f"wrote {out}" in printed.out
    assert "[1/2] cpu T=6" in printed.err
    doc = json.loads(out.read_text())
    assert doc["benchmark"] == "lds" and len(doc["rows"]) == 2
    assert doc["config"]["models"] == ["lds", "lstm", "loop_rnn"] and doc["config"]["hidden_size"] == 4
    assert {t["key"] for t in doc["targets"]} == {"speedup_lds", "speedup_ldstack4"}
    for r in doc["rows"]:
        assert r["lds_s"] > 0 and r["ldstack2_s"] is None and math.isfinite(r["speedup_loop_rnn"])


@pytest.mark.parametrize("argv, message", [
    (["lds", "--T", "0"], "positive integer"),
    (["lds", "--models", "gru"], "invalid choice"),
    (["lds", "--devices", "tpu"], "invalid choice"),
    (["lds", "--hidden-size", "6", "--input-size", "2"], "even multiple"),
    (["lds", "--min-time", "-1"], "non-negative"),
])
def test_cli_rejects_bad_arguments(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_cli_names_a_device_that_cannot_run(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["lds", "--devices", "cuda", "--T", "3"])
    assert exc.value.code == 2
    assert "no GPU" in capsys.readouterr().err


def test_module_entry_point(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "rnnlab.bench", "lds", "--quick", "--T", "4", "--batch-size", "1",
         "--input-size", "1", "--hidden-size", "2", "--models", "lds", "lstm", "--min-time", "0",
         "--json", str(tmp_path / "r.json")],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "lds" in proc.stdout
    assert json.loads((tmp_path / "r.json").read_text())["rows"]


def test_match_thread_pools_survives_numba_starting_its_pool():
    # Starting numba's OpenMP pool resets the thread count torch reads (they share libgomp here):
    # match_thread_pools must start it first, or a requested single thread silently becomes several.
    code = ("import torch\n"
            "from rnnlab.bench.timing import match_thread_pools\n"
            "from rnnlab import linear_scan\n"
            "assert match_thread_pools(1) == 1\n"
            "linear_scan(torch.ones(2, 8, 3), torch.ones(2, 8, 3), backend='cpu')\n"
            "import numba\n"
            "print(torch.get_num_threads(), numba.get_num_threads())\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1", "1"]
