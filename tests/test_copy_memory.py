"""The copying-memory task: layout, baseline, reproducibility, the paper's model."""
import math

import pytest
import torch

from rnnlab.tasks import copy_memory, copy_memory_baseline, copy_memory_loss, recall_accuracy
from rnnlab.tasks.copy_memory import BLANK, GO, NUM_TOKENS


@pytest.mark.parametrize("T", [1, 5, 100])
def test_layout(T):
    x, y = copy_memory(T, 64, seed=3)
    L = T + 20
    assert x.shape == y.shape == (64, L) and x.dtype == y.dtype == torch.int64
    symbols = x[:, :10]
    assert symbols.min() >= 1 and symbols.max() <= 8
    assert (x[:, 10:T + 9] == BLANK).all()  # T − 1 blanks
    assert (x[:, T + 9] == GO).all()  # the go marker
    assert (x[:, T + 10:] == BLANK).all()  # 10 blanks while answering
    assert (y[:, :T + 10] == BLANK).all()
    assert torch.equal(y[:, T + 10:], symbols)
    assert x.max() < NUM_TOKENS


def test_symbols_are_uniform_over_the_alphabet():
    x, _ = copy_memory(10, 4000, seed=0)
    counts = torch.bincount(x[:, :10].reshape(-1), minlength=9)[1:].float()
    assert counts.sum() == 40000
    assert (counts / 5000 - 1).abs().max() < 0.05


def test_reproducible_by_seed():
    a = copy_memory(20, 16, seed=1)
    b = copy_memory(20, 16, seed=1)
    c = copy_memory(20, 16, seed=2)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])


@pytest.mark.parametrize("T", [10, 100, 2000])
def test_baseline_is_the_memoryless_cross_entropy(T):
    assert copy_memory_baseline(T) == pytest.approx(10 * math.log(8) / (T + 20))
    # blank with certainty until the last 10 steps, then uniform over the 8 symbols
    x, y = copy_memory(T, 8, seed=0)
    logits = torch.full((8, T + 20, NUM_TOKENS), -1e4, dtype=torch.float64)
    logits[:, :T + 10, BLANK] = 0
    logits[:, T + 10:, 1:9] = 0
    assert copy_memory_loss(logits, y).item() == pytest.approx(copy_memory_baseline(T), rel=1e-9)
    assert recall_accuracy(logits, y).item() < 0.5


def test_recall_accuracy_of_a_perfect_answer():
    _, y = copy_memory(7, 5, seed=0)
    logits = torch.nn.functional.one_hot(y, NUM_TOKENS).float() * 10
    assert recall_accuracy(logits, y).item() == 1.0
    assert copy_memory_loss(logits, y).item() < 1e-3


@pytest.mark.parametrize("kwargs,exc,word", [
    (dict(T=-1, n=4), ValueError, "T"),
    (dict(T=0, n=4), ValueError, "T"),
    (dict(T=5, n=0), ValueError, "n"),
    (dict(T=5.0, n=4), TypeError, "T"),
    (dict(T=5, n=4, seed=-1), ValueError, "seed"),
])
def test_bad_arguments(kwargs, exc, word):
    with pytest.raises(exc, match=word):
        copy_memory(**kwargs)
    if "T" in kwargs and word == "T":
        with pytest.raises(exc, match="T"):
            copy_memory_baseline(kwargs["T"])


def test_models_of_the_experiment():
    from rnnlab.experiments.copy_memory import CopyMemoryModel, make_model
    from rnnlab.models import count_parameters
    x, _ = copy_memory(6, 3, seed=0)
    for kind in ["lds", "lstm", "rnn"]:
        m = make_model(kind, seed=0)
        y, _ = m(x)
        assert y.shape == (3, 26, NUM_TOKENS)
    assert count_parameters(CopyMemoryModel("lds")) == 3380
    # the comparison models (torch keeps two bias vectors per gate)
    assert count_parameters(CopyMemoryModel("lstm")) == 4 * 40 * (10 + 40 + 2) + 40 * 10 + 10
    assert count_parameters(CopyMemoryModel("rnn")) == 80 * (10 + 80 + 2) + 80 * 10 + 10
    with pytest.raises(ValueError, match="kind"):
        CopyMemoryModel("gru")


def test_compare_input_weights_records_scales_and_histories():
    from rnnlab.experiments.copy_memory import compare_input_weights
    budget = dict(T=6, samples=64, epochs=2, batch_size=32, lr=0.01, eval_samples=16)
    result = compare_input_weights([0, 1], budget)
    assert result["budget"] == budget and result["baseline"] == pytest.approx(copy_memory_baseline(6))
    runs = {(r["variant"], r["seed"]): r for r in result["runs"]}
    assert set(runs) == {(v, s) for v in ("ones", "companion") for s in (0, 1)}
    for (variant, seed), r in runs.items():
        assert len(r["epochs"]) == 2 and r["steps"] == 4
        assert r["epochs"][-1]["eval_loss"] > 0 and 0 <= r["epochs"][-1]["eval_recall_accuracy"] <= 1
        # AdaMax moves each parameter by at most about lr per step
        assert r["final"]["logC_re_max_step"] <= 1.05 * 0.01 * r["steps"]
    # B' = 1: the effective read-out weights C'B' = C' start near 1 (C' ~ N(1, 0.01²));
    # the companion B' spreads them over orders of magnitude
    assert runs["ones", 0]["initial"]["cb_orders"] < 0.1
    assert runs["companion", 0]["initial"]["cb_orders"] > 3
    assert runs["companion", 0]["initial"]["logit_max"] > 10 * runs["ones", 0]["initial"]["logit_max"]
    # the same seed gives the same spectrum: the companion's B' differs, the ones' is 1
    assert runs["ones", 0]["initial"]["bprime_min"] == runs["ones", 0]["initial"]["bprime_max"] == 1


def test_evaluate_run_on_held_out_and_fresh_data(tmp_path):
    import json

    from rnnlab.experiments.copy_memory import _cli, evaluate_run, run
    out = str(tmp_path / "run")
    result = run(T=5, samples=64, epochs=1, batch_size=32, eval_samples=16, seed=0, out=out, progress=False)
    ev = evaluate_run(out, samples=24, seed=7)
    assert ev["epoch"] == 1 and ev["step"] == result.step == 2
    assert ev["held_out"]["samples"] == 16 and ev["fresh"]["samples"] == 24
    # the checkpoint of the last epoch gives the held-out numbers of the history
    last = result.history["epochs"][-1]
    assert ev["held_out"]["loss"] == pytest.approx(last["eval_loss"], rel=1e-5)
    assert ev["held_out"]["recall_accuracy"] == pytest.approx(last["eval_recall_accuracy"])
    assert 0 <= ev["fresh_in_training"] <= 24
    with pytest.raises(ValueError, match="seed"):
        evaluate_run(out, samples=8, seed=1)  # the run's held-out seed
    path = str(tmp_path / "fresh.json")
    assert _cli(["evaluate", out, "--samples", "8", "--seed", "50", "--json", path]) == 0
    saved = json.loads(open(path).read())
    assert saved["command"].endswith(f"evaluate {out} --samples 8 --seed 50 --json {path}")
    assert saved["fresh"]["samples"] == 8 and saved["fresh_seed"] == 50
