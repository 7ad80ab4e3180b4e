"""``python -m rnnlab.bench memory``: shapes of its output and its byte counts, never its timings.

Performance is a benchmark, not a test: nothing here asserts a time or a
ratio of times. Every run uses tiny sizes and one timed call.
"""
import json

import pytest
import torch

from rnnlab import bench
from rnnlab.bench import memory
from rnnlab.bench.__main__ import main

TINY = dict(warmup=0, min_repeats=1, min_time=0.0)
TIME_KEYS = ("fwd_s", "fwdbwd_s", "steps_fwdbwd_s", "ref_fwd_s", "ref_fwdbwd_s")
BYTE_KEYS = ("saved_kernel_bytes", "saved_steps_bytes", "saved_ref_bytes", "saved_copy_bytes", "values_bytes")


@pytest.fixture(scope="module")
def rows():
    return memory.run(T=(4, 8), backends=("cpu",), batch_size=2, value_size=3, **TINY)


def test_registered():
    assert bench.BENCHMARKS["memory"] == "rnnlab.bench.memory"
    assert bench.load("memory") is memory


def test_rows(rows):
    assert [(r["kind"], r["T"]) for r in rows] == [(k, t) for k in memory.KINDS for t in (4, 8)]
    for r in rows:
        assert (r["benchmark"], r["backend"], r["B"], r["m"], r["dtype"]) == ("memory", "cpu", 2, 3, "float32")
        for key in TIME_KEYS:
            assert r[key] > 0, key
        assert r["ref_fwdbwd_over_fwdbwd"] == pytest.approx(r["ref_fwdbwd_s"] / r["fwdbwd_s"])
        assert r["timings"]["fwd"]["n"] == 1
    json.dumps(rows, allow_nan=False)


def test_saved_bytes(rows):
    """The op saves its values once (plus strengths and controls); a copy-per-step
    memory saves every V_t: sum_t B t m values, which grows as T^2."""
    for r in rows:
        H = 2 if r["kind"] == "deque" else 1
        B, T, m, item = r["B"], r["T"], r["m"], 4
        assert r["values_bytes"] == B * H * T * m * item
        strengths = B * T * H * T * item
        controls = 2 * B * T * H * item
        assert r["saved_kernel_bytes"] == r["values_bytes"] + strengths + controls
        copies = sum(B * H * t * m * item for t in range(1, T + 1))
        assert r["saved_copy_bytes"] >= copies
        assert r["saved_copy_bytes"] > r["saved_kernel_bytes"]


def test_copy_per_step_reads_equal_the_op():
    from rnnlab import neural_memory

    for kind in memory.KINDS:
        v, d, u, _, _ = memory._inputs(kind, 2, 5, 3, torch.float64, "cpu", 0)
        torch.testing.assert_close(memory.copy_per_step(kind, v, d, u), neural_memory(kind, v, d, u)[0])


def test_saved_bytes_helper_counts_each_storage_once():
    x = torch.randn(4, 5, requires_grad=True)
    n, y = memory.saved_bytes(lambda x: (x[:, :2] * x[:, 2:4]).sum(), x)        # two views of x
    assert n == x.untyped_storage().nbytes() and y.shape == ()


def test_command_line(tmp_path, capsys):
    out = tmp_path / "m.json"
    assert main(["memory", "--T", "3", "--kinds", "queue", "--batch-size", "2", "--value-size", "2",
                 "--quick", "--min-time", "0", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "saved copy" in printed and "queue" in printed
    doc = json.loads(out.read_text())
    assert doc["benchmark"] == "memory" and len(doc["rows"]) == 1
    assert doc["config"]["kinds"] == ["queue"] and doc["rows"][0]["T"] == 3


def test_bad_arguments():
    with pytest.raises(ValueError, match="kinds"):
        memory.run(T=(2,), kinds=("heap",), **TINY)
    with pytest.raises(ValueError, match="dtype"):
        memory.run(T=(2,), dtype="float16", **TINY)
    with pytest.raises(TypeError, match="unknown timing"):
        memory.run(T=(2,), loops=3)
