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
TIME_KEYS = ("fwd_s", "fwdbwd_s", "steps_fwdbwd_s", "ref_fwd_s", "ref_fwdbwd_s", "loop_fwdbwd_s")
BYTE_KEYS = ("saved_kernel_bytes", "saved_steps_bytes", "saved_ref_bytes", "saved_copy_bytes", "values_bytes")


@pytest.fixture(scope="module")
def all_rows():
    return memory.run(T=(4, 8), backends=("cpu",), batch_size=2, value_size=3, quick=True, **TINY)


@pytest.fixture(scope="module")
def rows(all_rows):
    return [r for r in all_rows if r["part"] == "op"]


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
        assert r["loop_fwdbwd_over_fwdbwd"] == pytest.approx(r["loop_fwdbwd_s"] / r["fwdbwd_s"])
        assert r["timings"]["fwd"]["n"] == 1 and r["timings"]["loop_fwdbwd"]["n"] == 1
        assert set(r["targets"]) == {"loop_fwdbwd_over_fwdbwd", "ref_fwdbwd_over_fwdbwd"}
        assert all(v["status"] in ("PASS", "MISS") for v in r["targets"].values())
    json.dumps(rows, allow_nan=False)


def test_training_step_rows(all_rows):
    """After the op rows, one training-step row per kind and T: the memory model, the same controller without
    its memory, and one torch.nn.LSTM layer, at the quick sizes."""
    steps = [r for r in all_rows if r["part"] == "train_step"]
    assert all_rows[-len(steps):] == steps
    assert [(r["kind"], r["T"]) for r in steps] == [(k, t) for k in memory.KINDS for t in (4, 8)]
    for r in steps:
        assert (r["hidden"], r["embedding"], r["B"], r["m"]) == (32, 8, 2, 3)
        for key in ("step_s", "controller_s", "nn_lstm_s"):
            assert r[key] > 0
        assert r["step_over_controller"] == pytest.approx(r["step_s"] / r["controller_s"])
        assert r["step_over_nn_lstm"] == pytest.approx(r["step_s"] / r["nn_lstm_s"])
        assert list(r["targets"]) == (["step_over_controller"] if r["kind"] == "stack" else [])
    table = memory.format_table(all_rows)
    assert "training step" in table and "model/controller" in table and "Target verdicts" in table


def test_controller_is_the_memory_model_without_its_memory():
    """Same LSTMCell (the same parameters where both have them); its reads stay 0, so its output is that of
    the LSTM fed [embedding; 0]; the memory model's first output equals it (nothing read yet)."""
    models = memory._train_models("stack", "cpu", 3, memory.QUICK_TRAIN_SIZE, "cpu", 0)
    net, ctrl = models["step"], models["controller"]
    ctrl.load_state_dict(net.state_dict())
    x = torch.randint(1, net.num_inputs, (2, 5))
    o_ctrl, o_net = ctrl._core(x), net._core(x)
    torch.testing.assert_close(o_ctrl[:, 0], o_net[:, 0])
    assert not torch.allclose(o_ctrl[:, 1:], o_net[:, 1:])
    h = c = None
    emb = ctrl.embedding(x)
    h, c = ctrl.h0.expand(2, -1), ctrl.c0.expand(2, -1)
    for t in range(5):
        h, c = ctrl.cell(torch.cat([emb[:, t], emb.new_zeros(2, 3)], 1), (h, c))
        torch.testing.assert_close(o_ctrl[:, t], h)


def test_loop_reference_equals_the_vectorised_reference():
    """neural_memory_loop (row by row) against neural_memory_ref: values and gradients, float64, with controls
    at 0 and 1, T = 1 included."""
    from rnnlab.kernels import neural_memory_ref
    from rnnlab.kernels import neural_memory_loop

    for kind in memory.KINDS:
        for T, m in ((1, 1), (2, 3), (6, 2)):
            v, d, u, gr, gs = memory._inputs(kind, 3, T, m, torch.float64, "cpu", T)
            d.view(-1)[0], u.view(-1)[1], d.view(-1)[-1], u.view(-1)[-1] = 0.0, 1.0, 1.0, 0.0
            grads = []
            for fn in (neural_memory_loop, neural_memory_ref):
                args = [x.clone().requires_grad_() for x in (v, d, u)]
                r, s = fn(kind, *args)
                g = torch.autograd.grad((r * gr).sum() + (s * gs).sum(), args, allow_unused=True,
                                        materialize_grads=True)
                grads.append((r, s, *g))
            for a, b in zip(*grads):
                torch.testing.assert_close(a, b, rtol=0, atol=1e-12)


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
    assert doc["benchmark"] == "memory" and len(doc["rows"]) == 2
    assert [r["part"] for r in doc["rows"]] == ["op", "train_step"]
    assert doc["config"]["kinds"] == ["queue"] and doc["rows"][0]["T"] == 3
    assert main(["memory", "--T", "3", "--kinds", "stack", "--batch-size", "2", "--value-size", "2",
                 "--quick", "--min-time", "0", "--no-loop", "--no-train-step", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert len(doc["rows"]) == 1 and doc["rows"][0]["loop_fwdbwd_s"] is None
    assert doc["rows"][0]["targets"]["loop_fwdbwd_over_fwdbwd"]["status"] == "N/A"


def test_bad_arguments():
    with pytest.raises(ValueError, match="kinds"):
        memory.run(T=(2,), kinds=("heap",), **TINY)
    with pytest.raises(ValueError, match="dtype"):
        memory.run(T=(2,), dtype="float16", **TINY)
    with pytest.raises(TypeError, match="unknown timing"):
        memory.run(T=(2,), loops=3)
