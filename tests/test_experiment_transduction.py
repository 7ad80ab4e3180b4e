"""The transduction experiment: data stream, the command line, metrics, checkpoints, exact resumption, evaluation."""
import json
import os

import pytest
import torch

from rnnlab.experiments import transduction as exp
from rnnlab.tasks import IGNORE_INDEX
from rnnlab.train import load_checkpoint

TINY = ["--task", "reversal", "--hidden", "8", "--values", "4", "--embedding", "4", "--vocab", "4",
        "--min-len", "2", "--max-len", "4", "--test-min-len", "5", "--test-max-len", "6",
        "--eval-samples", "6", "--test-samples", "5", "--no-progress", "--threads", "1"]
TINY_RUN = dict(task="reversal", hidden=8, values=4, embedding=4, vocab=4, train_lengths=(2, 4),
                test_lengths=(5, 6), eval_samples=6, test_samples=5, progress=False, device="cpu")


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def test_batch_stream_is_a_deterministic_fresh_stream():
    data = exp.batch_stream("reversal", 10, (8, 64), 128, seed=3, steps_per_epoch=5)
    x, y = data(0, 1)
    assert x.shape[0] == y.shape[0] == 10 and x.shape == y.shape
    assert torch.equal(data(0, 1)[0], x)
    assert torch.equal(data(1, 0)[0], data(0, 5)[0])               # one stream, counted in steps
    assert not torch.equal(data(0, 2)[0][:, :5], x[:, :5])
    other = exp.batch_stream("reversal", 10, (8, 64), 128, seed=4, steps_per_epoch=5)
    assert not torch.equal(other(0, 1)[0][:, :5], x[:, :5])
    # 8..64 source symbols: <s> source ||| target, and target + </s> predicted
    lengths = (y != IGNORE_INDEX).sum(1) - 1
    assert lengths.min() >= 8 and lengths.max() <= 64
    assert exp.derived_seed(1, 2) != exp.derived_seed(2, 1) and exp.derived_seed(5) >= 0


def test_loss_ignores_the_source_positions():
    logits = torch.zeros(1, 4, 3, requires_grad=True)
    targets = torch.tensor([[IGNORE_INDEX, IGNORE_INDEX, 1, 2]])
    loss = exp.transduction_loss(logits, targets)
    assert loss.item() == pytest.approx(torch.log(torch.tensor(3.0)).item())
    loss.backward()
    assert (logits.grad[0, :2] == 0).all() and (logits.grad[0, 2:] != 0).any()


def test_command_line_writes_metrics_and_a_checkpoint_and_resumes(tmp_path, capsys):
    from rnnlab.__main__ import main
    out = str(tmp_path / "run")
    argv = ["train", "transduction", *TINY, "--model", "stack", "--eval-every", "2", "--out", out]
    assert main(argv + ["--steps", "4"]) == 0
    printed = capsys.readouterr().out
    assert "completed at step 4" in printed and "test coarse" in printed
    config = json.loads(open(os.path.join(out, "config.json")).read())
    assert config["model"] == "stack" and config["parameters"] > 0 and config["memory_backend"] in ("cpu", "torch")
    assert config["threads"] == 1
    metrics = json.loads(open(os.path.join(out, "metrics.json")).read())
    assert [r["step"] for r in metrics["epochs"]] == [2, 4] and len(metrics["steps"]) == 4
    for r in metrics["epochs"]:
        assert {"loss", "perplexity", "val_perplexity", "val_coarse", "val_fine", "time"} <= set(r)
        assert r["perplexity"] == pytest.approx(torch.tensor(r["loss"]).exp().item(), rel=1e-6)
        assert 0 <= r["val_coarse"] <= r["val_fine"] <= 1
    assert metrics["test"]["step"] == 4 and metrics["test"]["samples"] == 5 and metrics["test"]["lengths"] == [5, 6]
    state = load_checkpoint(os.path.join(out, "checkpoint.pt"))
    assert state["step"] == 4 and state["config"]["task"] == "reversal"
    # the same command with more steps resumes from the checkpoint
    assert main(argv + ["--steps", "6"]) == 0
    assert load_checkpoint(os.path.join(out, "checkpoint.pt"))["step"] == 6
    metrics = json.loads(open(os.path.join(out, "metrics.json")).read())
    assert [r["step"] for r in metrics["epochs"]] == [2, 4, 6] and metrics["test"]["step"] == 6
    # another model in the same folder is refused
    with pytest.raises(ValueError, match="different run"):
        main(["train", "transduction", *TINY, "--model", "queue", "--eval-every", "2", "--out", out,
              "--steps", "6"])
    # evaluation of the checkpoint on fresh sequences
    assert main(["train", "transduction", "--evaluate", "--out", out, "--fresh-samples", "4", "--no-progress"]) == 0
    assert "wrote" in capsys.readouterr().out
    ev = json.loads(open(os.path.join(out, "evaluation.json")).read())
    assert ev["step"] == 6 and ev["run_config"]["model"] == "stack"
    assert ev["train_lengths"]["samples"] == 4 and ev["train_lengths"]["lengths"] == [2, 4]
    assert ev["test_lengths"]["lengths"] == [5, 6]
    assert 0 <= ev["test_lengths"]["coarse"] <= ev["test_lengths"]["fine"] <= 1


@pytest.mark.parametrize("model", ["deque", "lstm"])
def test_interrupted_run_resumes_exactly(tmp_path, model):
    kw = dict(TINY_RUN, model=model, layers=2 if model == "lstm" else 1, steps=6, eval_every=3, seed=1)
    full = exp.run(out=str(tmp_path / "full"), **kw)
    part = exp.run(out=str(tmp_path / "part"), max_steps=4, **kw)
    assert part.status == "max_steps" and "test" not in part.extra
    assert "test" not in json.loads(open(tmp_path / "part" / "metrics.json").read())
    rest = exp.run(out=str(tmp_path / "part"), **kw)
    assert rest.completed and rest.resumed_from_step == 4 and rest.step == 6
    for (name, p), q in zip(full.model.state_dict().items(), rest.model.state_dict().values()):
        assert torch.equal(p, q), name
    strip = lambda h: [{k: v for k, v in r.items() if k != "time"} for r in h["epochs"]]  # noqa: E731
    assert strip(full.history) == strip(rest.history)
    assert full.extra["test"] == rest.extra["test"]


def test_evaluate_run_matches_the_models_own_decoding(tmp_path):
    out = str(tmp_path / "run")
    result = exp.run(out=out, model="queue", steps=2, eval_every=2, seed=0, **TINY_RUN)
    ev = exp.evaluate_run(out, samples=7, seed=11)
    sources, targets = exp.transduction("reversal", 7, 5, 6, 4, seed=exp.derived_seed(11, 6))
    assert ev["test_lengths"]["coarse"] == exp.decode_metrics(result.model, sources, targets)["coarse"]
    assert ev["test_lengths"]["fine"] == pytest.approx(exp.decode_metrics(result.model, sources, targets)["fine"])
    assert ev["test_lengths"]["perplexity"] == pytest.approx(exp.perplexity(result.model, sources, targets), rel=1e-5)


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="multiple"):
        exp.run(steps=5, eval_every=2, **TINY_RUN)
    with pytest.raises(ValueError, match="layers"):
        exp.make_model("stack", layers=2)
    with pytest.raises(ValueError, match="model"):
        exp.make_model("tree")
    with pytest.raises(ValueError, match="task"):
        exp.run(**dict(TINY_RUN, task="sorting"), steps=2, eval_every=2)


class _Script(torch.nn.Module):
    """A push or pop head that ignores the controller: logit +-50 (strength 1 or 0) by step, for one sequence."""

    def __init__(self, ones, heads=1):
        super().__init__()
        self.ones, self.heads, self.t = set(ones), heads, 0

    def forward(self, h):
        out = torch.full((h.shape[0], self.heads), 50.0 if self.t in self.ones else -50.0)
        self.t += 1
        return out


def test_memory_use_of_an_exact_stack_solution_of_reversal():
    """Push at each source step, pop at each target step after |||: lifetime m + 1, nothing left."""
    net = exp.make_model("stack", n_source=4, n_target=4, hidden=8, values=4, embedding=4, seed=0)
    m = 3                                                     # steps: <s> s1 s2 s3 ||| t1 t2 t3 = 0..7
    net.push, net.pop = _Script(range(1, m + 1)), _Script(range(m + 2, 2 * m + 2))
    use = exp.memory_use(net, [[0, 1, 2]], [[2, 1, 0]])
    assert use["push_source"] == pytest.approx(1) and use["pop_source"] == pytest.approx(0, abs=1e-9)
    assert use["push_target"] == pytest.approx(0, abs=1e-9) and use["pop_target"] == pytest.approx(3 / 4)
    assert use["lifetime"] == pytest.approx(m + 1) and use["unpopped"] == pytest.approx(0, abs=1e-9)
    net.push, net.pop = _Script(range(1, m + 1)), _Script([])  # never popped: no lifetime, all left
    use = exp.memory_use(net, [[0, 1, 2]], [[2, 1, 0]])
    assert use["lifetime"] != use["lifetime"] and use["unpopped"] == pytest.approx(1)


def _brute_force_stack(d, u, steps):
    """Strengths of a stack under constant controls, by the paper's rule written as plain loops, and the
    strength-weighted mean age at popping and the strength left."""
    s, popped, age_sum = [], 0.0, 0.0
    for t in range(steps):
        need = u
        for i in reversed(range(len(s))):
            take = min(s[i], need)
            s[i] -= take
            need -= take
            popped += take
            age_sum += take * (t - i)
        s.append(d)
    return popped, age_sum, sum(s), d * steps


@pytest.mark.parametrize("model", ["stack", "queue", "deque"])
def test_memory_use_under_constant_controls(model):
    net = exp.make_model(model, n_source=4, n_target=4, hidden=8, values=4, embedding=4, seed=0)
    d0, u0 = 0.7, 0.4
    with torch.no_grad():
        for head, p in ((net.push, d0), (net.pop, u0)):
            head.weight.zero_()
            head.bias.fill_(float(torch.logit(torch.tensor(p, dtype=torch.float64))))
    sources, targets = [[0, 1], [3, 2, 1, 0, 0]], [[1, 0], [0, 0, 1, 2, 3]]
    use = exp.memory_use(net, sources, targets, batch_size=2)
    for key in ("push_source", "push_target"):
        assert use[key] == pytest.approx(d0, rel=1e-6)
    for key in ("pop_source", "pop_target"):
        assert use[key] == pytest.approx(u0, rel=1e-6)
    if model == "stack":     # against the rule as plain loops, rows of 2 and 5 source symbols together
        parts = [_brute_force_stack(d0, u0, 2 * len(s) + 2) for s in sources]
        popped, age_sum, left, pushed = (sum(x) for x in zip(*parts))
        assert use["lifetime"] == pytest.approx(age_sum / popped, rel=1e-6)
        assert use["unpopped"] == pytest.approx(left / pushed, rel=1e-6)
    assert use["lifetime"] >= 1 and 0 < use["unpopped"] < 1
    with pytest.raises(TypeError, match="MemoryLSTM"):
        exp.memory_use(exp.make_model("lstm", n_source=4, n_target=4, hidden=8, embedding=4), sources, targets)


def test_run_records_memory_use_in_its_test(tmp_path):
    result = exp.run(out=str(tmp_path / "run"), model="stack", steps=2, eval_every=2, seed=0, **TINY_RUN)
    memory = json.loads(open(tmp_path / "run" / "metrics.json").read())["test"]["memory"]
    assert memory == pytest.approx(result.extra["test"]["memory"])
    assert set(memory) == {"push_source", "pop_source", "push_target", "pop_target", "lifetime", "unpopped"}
    ev = exp.evaluate_run(str(tmp_path / "run"), samples=3)
    assert set(ev["test_lengths"]["memory"]) == set(memory)
