"""The benchmark tool (``python -m rnnlab.bench``): shapes of its output, never its timings.

Performance is a benchmark, not a test: nothing here asserts a time or a
ratio. Every run uses tiny sizes and one repeat.
"""
import json
import math
import subprocess
import sys

import pytest

from rnnlab import bench
from rnnlab.bench import Target, check_targets, format_seconds, render_table, Column, write_json
from rnnlab.bench import scan
from rnnlab.bench.__main__ import main
from rnnlab.bench.timing import (CpuMonitor, Timing, busy_warning, machine_info, match_thread_pools,
                                 time_call, time_calls)

TINY = dict(warmup=0, min_repeats=1, min_time=0.0, cumsum_min_time=0.0, loop_min_repeats=1, loop_min_time=0.0)
BACKENDS = tuple(b for b in ("torch", "cpu") if b in scan.available_backends())
TIME_KEYS = ("fwd_s", "fwdbwd_s", "floor_s", "floor_alloc_s", "floor_fwdbwd_s", "cumsum_s",
             "loop_fwd_s", "loop_fwdbwd_s")
RATIO_KEYS = ("fwd_over_floor", "fwd_over_floor_alloc", "fwdbwd_over_fwd", "fwdbwd_over_floor_fwdbwd",
              "loop_over_fwd", "loop_fwdbwd_over_fwdbwd", "cumsum_over_fwd")
ROW_KEYS = ("benchmark", "backend", "device", "dtype", "T", "B", "C", "a", "stat", "skipped", "loop_steps",
            "loop_extrapolated", "loop_repeats", "bytes_fwd", "fwd_GBps", "floor_GBps", "timings", "targets",
            *TIME_KEYS, *RATIO_KEYS)
TIMING_KEYS = {"median", "q1", "q3", "iqr", "min", "mean", "n"}


@pytest.fixture(scope="module")
def rows():
    return scan.run(T=(8, 5), sizes=((2, 3),), dtypes=("float32", "complex64"), backends=BACKENDS, **TINY)


# ---------------------------------------------------------------- timing

def test_time_calls_counts_warmup_and_repeats():
    calls = {"f": 0, "g": 0}

    def f():
        calls["f"] += 1

    def g():
        calls["g"] += 1

    out = time_calls({"f": f, "g": g}, warmup=2, min_repeats=4, min_time=0.0)
    assert set(out) == {"f", "g"}
    assert out["f"].n == out["g"].n == 4
    assert calls == {"f": 6, "g": 6}
    t = time_call(f, warmup=0, min_repeats=1, max_repeats=1, min_time=10.0)
    assert t.n == 1 and t.median > 0


def test_time_calls_rejects_bad_settings():
    with pytest.raises(ValueError, match="min_repeats"):
        time_calls({"f": lambda: None}, min_repeats=0)
    with pytest.raises(ValueError, match="fns"):
        time_calls({})
    with pytest.raises(TypeError, match="not callable"):
        time_calls({"f": 3})


def test_timing_summary():
    t = Timing.from_times([4.0, 1.0, 3.0, 2.0, 5.0])
    assert (t.median, t.min, t.n) == (3.0, 1.0, 5)
    assert t.q1 <= t.median <= t.q3 and t.iqr == t.q3 - t.q1
    assert t.stat("min") == 1.0
    assert t.scaled(2).median == 6.0 and t.scaled(2).n == 5
    assert set(t.as_dict()) == TIMING_KEYS
    one = Timing.from_times([0.5])
    assert one.iqr == 0 and one.median == 0.5
    with pytest.raises(ValueError):
        t.stat("max")


def test_thread_pools_match_and_machine_info():
    import numba
    import torch
    n = match_thread_pools()
    assert n == numba.get_num_threads() == min(torch.get_num_threads(), numba.config.NUMBA_NUM_THREADS)
    info = machine_info()
    for key in ("cpu_count", "torch", "numba", "torch_threads", "numba_threads", "cuda_available"):
        assert key in info
    json.dumps(info)
    assert busy_warning({"cpu_usable": 2, "load_average_1_5_15min": [0.1, 0, 0],
                         "cpu_pressure_some_avg10": 0.0}) is None
    assert "load" in busy_warning({"cpu_usable": 2, "load_average_1_5_15min": [3.0, 0, 0]})
    with CpuMonitor() as mon:
        sum(range(1000))
    assert mon.result["wall_s"] > 0


# ---------------------------------------------------------------- scan rows

def test_rows_have_the_expected_keys_and_positive_times(rows):
    assert len(rows) == 2 * 2 * len(BACKENDS)
    assert {(r["backend"], r["dtype"], r["T"]) for r in rows} == {
        (b, d, t) for b in BACKENDS for d in ("float32", "complex64") for t in (8, 5)}
    for r in rows:
        assert set(ROW_KEYS) <= set(r), set(ROW_KEYS) - set(r)
        assert (r["benchmark"], r["B"], r["C"], r["a"], r["device"], r["stat"]) == (
            "scan", 2, 3, "BTC", "cpu", "median")
        assert r["skipped"] is None
        for key in TIME_KEYS:
            assert r[key] > 0, key
        for key in RATIO_KEYS:
            assert r[key] > 0 and math.isfinite(r[key]), key
        assert r["loop_steps"] == r["T"] and r["loop_extrapolated"] is False and r["loop_repeats"] == 1
        for name, t in r["timings"].items():
            assert set(t) == TIMING_KEYS and t["n"] >= 1, name
        assert r["bytes_fwd"] == 3 * 2 * r["T"] * 3 * (4 if r["dtype"] == "float32" else 8)
    json.dumps(rows, allow_nan=False)


def test_targets_apply_to_the_cpu_backend_only(rows):
    for r in rows:
        if r["backend"] != "cpu":
            assert r["targets"] == {}
            continue
        # T = 5, 8: the loop target (T = 1024) does not apply.
        assert set(r["targets"]) == {"fwd_over_floor", "fwdbwd_over_fwd"}
        limit = {"float32": 1.5, "complex64": 1.3}[r["dtype"]]
        assert r["targets"]["fwd_over_floor"]["limit"] == limit
        for v in r["targets"].values():
            assert v["status"] in ("PASS", "MISS")


def test_target_checks():
    row = {"backend": "cpu", "dtype": "float32", "T": 1024, "fwd_over_floor": 1.2,
           "loop_over_fwd": 40.0, "fwdbwd_over_fwd": None}
    got = check_targets(row, scan.TARGETS)
    assert got["fwd_over_floor"]["status"] == "PASS"
    assert got["loop_over_fwd"]["status"] == "MISS" and got["loop_over_fwd"]["limit"] == 50
    assert got["fwdbwd_over_fwd"]["status"] == "N/A"
    assert check_targets(dict(row, backend="cuda"), scan.TARGETS) == {}
    assert "loop_over_fwd" not in check_targets(dict(row, T=4096), scan.TARGETS)
    got = check_targets(dict(row, dtype="complex64", fwd_over_floor=1.4), scan.TARGETS)
    assert got["fwd_over_floor"]["status"] == "MISS" and got["fwd_over_floor"]["limit"] == 1.3
    assert check_targets(dict(row, dtype="float64"), scan.TARGETS).keys() == {"loop_over_fwd", "fwdbwd_over_fwd"}
    with pytest.raises(ValueError):
        Target("x", "==", 1, "bad op")


def test_loop_extrapolation_is_marked():
    rows = scan.run(T=(12,), sizes=((1, 4),), dtypes=("float32",), backends=("torch",), loop_max_T=4, **TINY)
    (r,) = rows
    assert r["loop_extrapolated"] is True and r["loop_steps"] == 4 and r["loop_fwd_s"] > 0
    table = scan.format_table(rows)
    assert "~" in table and "scaled to T" in table


def test_no_loop_leaves_its_fields_empty():
    rows = scan.run(T=(4,), sizes=((1, 4),), dtypes=("float64",), backends=("torch",), loop=False, **TINY)
    (r,) = rows
    assert r["loop_fwd_s"] is None and r["loop_over_fwd"] is None and r["fwd_s"] > 0
    assert "loop_fwd" not in r["timings"]
    scan.format_table(rows)


def test_forms_of_a():
    """a shared over the batch (TC) or time-invariant (C): one row per form, the traffic of a counted once."""
    rows = scan.run(T=(6,), sizes=((2, 3),), dtypes=("complex64",), backends=BACKENDS, loop=False,
                    a_forms=("C", "TC"), **TINY)
    assert [(r["backend"], r["a"]) for r in rows] == [(b, f) for f in ("C", "TC") for b in BACKENDS]
    for r in rows:
        assert r["fwd_s"] > 0 and r["fwdbwd_s"] > 0 and r["floor_fwdbwd_s"] > 0
        assert r["bytes_fwd"] == {"C": 3 + 2 * 36, "TC": 18 + 2 * 36}[r["a"]] * 8
    table = scan.format_table(rows)
    assert " TC " in table and " C " in table
    with pytest.raises(ValueError, match="a_forms"):
        scan.run(T=(4,), sizes=((1, 2),), dtypes=("float32",), backends=("torch",), a_forms=("CT",), **TINY)


def test_run_rejects_bad_arguments():
    tiny = dict(sizes=((1, 2),), dtypes=("float32",), backends=("torch",), **TINY)
    with pytest.raises(ValueError, match="T must be"):
        scan.run(T=(0,), **dict(tiny))
    with pytest.raises(ValueError, match="sizes"):
        scan.run(T=(4,), **dict(tiny, sizes=((1, 0),)))
    with pytest.raises(ValueError, match="dtypes"):
        scan.run(T=(4,), **dict(tiny, dtypes=("int8",)))
    with pytest.raises(ValueError, match="backends"):
        scan.run(T=(4,), **dict(tiny, backends=("gpu",)))
    with pytest.raises(ValueError, match="stat"):
        scan.run(T=(4,), stat="max", **tiny)
    with pytest.raises(TypeError, match="timing settings"):
        scan.run(T=(4,), repeats=3, **tiny)
    if "cuda" not in scan.available_backends():
        with pytest.raises(RuntimeError, match="cuda"):
            scan.run(T=(4,), **dict(tiny, backends=("cuda",)))


def test_table_has_the_headers_and_one_line_per_row(rows):
    table = scan.format_table(rows, title="TITLE")
    lines = table.splitlines()
    assert lines[0] == "TITLE"
    for header in ("backend", "dtype", "T", "BxC", "fwd", "floor", "fwd/floor", "fwd+bwd", "fb/fwd",
                   "loop fwd", "loop/fwd", "cumsum", "cumsum/fwd"):
        assert header in lines[1].split("  ") or header in lines[1]
    assert sum(line.startswith(BACKENDS) for line in lines) == len(rows)
    assert "Targets (cpu backend)" in table
    if "cpu" in BACKENDS:
        assert "PASS" in table or "MISS" in table


def test_generic_table_and_formatting():
    table = render_table([{"x": 1}, {"x": 22}], [Column("name", lambda r: r["x"])], notes=["note"])
    assert table.splitlines() == ["name", "----", "   1", "  22", "", "note"]
    assert format_seconds(1.5e-3) == "1.5 ms" and format_seconds(None) == "-"
    assert format_seconds(2e-6) == "2 us" and format_seconds(3.0) == "3 s"


# ---------------------------------------------------------------- JSON and command line

def test_write_json(tmp_path, rows):
    path = write_json(tmp_path / "sub" / "r.json", "scan", rows, config={"T": [8]}, machine={"cpu_count": 2},
                      targets=scan.TARGETS)
    doc = json.loads(path.read_text())
    assert doc["benchmark"] == "scan" and len(doc["rows"]) == len(rows)
    assert {t["key"] for t in doc["targets"]} == {"fwd_over_floor", "loop_over_fwd", "fwdbwd_over_fwd"}
    assert sum(doc["summary"].values()) == sum(len(r["targets"]) for r in rows)
    p = bench.default_json_path("scan")
    assert p.parts[0] == "bench-results" and p.name.startswith("scan-") and p.suffix == ".json"


def test_cli_prints_the_table_and_writes_json(tmp_path, capsys):
    out = tmp_path / "scan.json"
    argv = ["scan", "--quick", "--T", "6", "--sizes", "1x4", "2x3", "--dtypes", "float32",
            "--backends", *BACKENDS, "--min-time", "0", "--json", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr()
    assert "fwd/floor" in printed.out and f"wrote {out}" in printed.out
    assert "[1" in printed.err  # progress lines go to stderr
    doc = json.loads(out.read_text())
    assert len(doc["rows"]) == 2 * len(BACKENDS)
    assert {(r["B"], r["C"]) for r in doc["rows"]} == {(1, 4), (2, 3)}
    assert doc["config"]["quick"] is True and doc["config"]["sizes"] == [[1, 4], [2, 3]]
    for key in ("cpu_count", "torch", "numba", "cuda_available", "during"):
        assert key in doc["machine"]
    assert isinstance(doc["warnings"], list)


def test_cli_no_json(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["scan", "--quick", "--T", "3", "--sizes", "1x2", "--dtypes", "float32",
                 "--backends", "torch", "--min-time", "0", "--no-loop", "--no-json"]) == 0
    assert "wrote" not in capsys.readouterr().out
    assert not (tmp_path / "bench-results").exists()


@pytest.mark.parametrize("argv, message", [
    (["scan", "--sizes", "16by3"], "expected a size BxC"),
    (["scan", "--sizes", "0x3"], "positive B and C"),
    (["scan", "--T", "0"], "positive integer"),
    (["scan", "--T", "ten"], "positive integer"),
    (["scan", "--dtypes", "int8"], "invalid choice"),
    (["scan", "--backends", "gpu"], "invalid choice"),
    (["scan", "--a-forms", "BT"], "invalid choice"),
    (["scan", "--min-time", "-1"], "non-negative"),
    (["scan", "--json", "x.json", "--no-json"], "not allowed with"),
    (["nonsense"], "invalid choice"),
    ([], "required"),
])
def test_cli_rejects_bad_arguments(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.skipif("cuda" in scan.available_backends(), reason="a GPU is present")
def test_cli_names_a_backend_that_cannot_run(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["scan", "--backends", "cuda", "--T", "3", "--sizes", "1x2"])
    assert exc.value.code == 2
    assert "cannot run here" in capsys.readouterr().err


def test_module_entry_point(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "rnnlab.bench", "scan", "--quick", "--T", "4", "--sizes", "1x2",
         "--dtypes", "float32", "--backends", "torch", "--min-time", "0", "--json", str(tmp_path / "r.json")],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "fwd/floor" in proc.stdout
    assert json.loads((tmp_path / "r.json").read_text())["rows"]
