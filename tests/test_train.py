"""rnnlab.train: learning, checkpoints, interruption and exact resumption, the command line."""
import json
import os

import pytest
import torch
from torch import nn

from rnnlab.models import LDS
from rnnlab.tasks import copy_memory, copy_memory_baseline, copy_memory_loss, recall_accuracy
from rnnlab.train import evaluate, load_checkpoint, train


class TinyNet(nn.Module):
    """One-hot tokens → a small LDS → dropout (so that torch's RNG matters on resumption)."""

    def __init__(self):
        super().__init__()
        self.lds = LDS(10, 20, 10, eigenvalues="unit", generator=torch.Generator().manual_seed(0))
        self.drop = nn.Dropout(0.2)

    def forward(self, tokens):
        y, s = self.lds(nn.functional.one_hot(tokens, 10).float())
        return self.drop(y), s


def _run(tmp, **kw):
    data = copy_memory(5, 96, seed=0)
    args = dict(epochs=3, batch_size=16, optimizer=lambda p: torch.optim.Adamax(p, lr=0.01),
                metrics={"acc": recall_accuracy}, eval_data=copy_memory(5, 32, seed=1),
                checkpoint=os.path.join(tmp, "ckpt.pt"), metrics_file=os.path.join(tmp, "metrics.json"),
                seed=3, progress=False)
    args.update(kw)
    return train(TinyNet(), data, copy_memory_loss, **args)


def _strip(history):
    return {k: [{a: b for a, b in r.items() if a != "time"} for r in v] for k, v in history.items()}


def _assert_same_run(a, b):
    assert a.step == b.step == 18 and a.epoch == b.epoch == 3
    for (name, p), q in zip(a.model.state_dict().items(), b.model.state_dict().values()):
        assert torch.equal(p, q), name
    assert _strip(a.history) == _strip(b.history)


def test_short_copy_memory_run_beats_the_baseline():
    from rnnlab.experiments.copy_memory import run
    T = 10
    result = run(T=T, samples=512, epochs=3, batch_size=64, eval_samples=256, progress=False, device="cpu")
    last = result.history["epochs"][-1]
    assert result.completed and result.step == 24
    assert last["eval_loss"] < 0.5 * copy_memory_baseline(T)
    assert last["eval_recall_accuracy"] > 0.5  # chance is 1/8


def test_crash_and_resume_equals_an_uninterrupted_run(tmp_path):
    full = _run(str(tmp_path / "full"))

    def crash(record):
        if record["step"] == 8:
            raise RuntimeError("simulated crash")
    with pytest.raises(RuntimeError, match="simulated"):
        _run(str(tmp_path / "crash"), checkpoint_every=3, callback=crash)
    assert load_checkpoint(str(tmp_path / "crash" / "ckpt.pt"))["step"] == 6  # the last save before the crash
    resumed = _run(str(tmp_path / "crash"), checkpoint_every=3)
    assert resumed.resumed_from_step == 6
    _assert_same_run(full, resumed)


def test_ctrl_c_saves_and_resumes_exactly(tmp_path):
    full = _run(str(tmp_path / "full"))

    def interrupt(record):
        if record["step"] == 8:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        _run(str(tmp_path / "ki"), callback=interrupt)
    state = load_checkpoint(str(tmp_path / "ki" / "ckpt.pt"))
    assert state["step"] == 8 and state["epoch"] == 1 and state["batch"] == 2
    assert not [p.name for p in (tmp_path / "ki").iterdir() if p.name.endswith(".tmp")]  # no temporary left
    _assert_same_run(full, _run(str(tmp_path / "ki")))


def test_sigterm_saves_like_ctrl_c_and_the_handler_is_restored(tmp_path):
    import signal

    before = signal.getsignal(signal.SIGTERM)
    full = _run(str(tmp_path / "full"))

    def terminate(record):
        if record["step"] == 8:
            os.kill(os.getpid(), signal.SIGTERM)          # what `kill PID` sends
    with pytest.raises(KeyboardInterrupt):
        _run(str(tmp_path / "term"), callback=terminate)
    assert signal.getsignal(signal.SIGTERM) is before
    state = load_checkpoint(str(tmp_path / "term" / "ckpt.pt"))
    assert state["step"] == 8
    assert not os.path.exists(str(tmp_path / "term" / "ckpt.pt.lock"))
    _assert_same_run(full, _run(str(tmp_path / "term")))


def test_a_second_process_on_the_same_checkpoint_is_refused(tmp_path):
    import subprocess
    import sys

    folder = tmp_path / "run"
    folder.mkdir()
    lock = folder / "ckpt.pt.lock"
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock.write_text(str(other.pid))
        with pytest.raises(RuntimeError, match=f"another process \\(pid {other.pid}\\) is training into"):
            _run(str(folder), epochs=1)
        assert not (folder / "ckpt.pt").exists()           # nothing was written
    finally:
        other.kill()
        other.wait()
    # the process is gone: its stale lock is taken over, and released at the end
    result = _run(str(folder), epochs=1)
    assert result.completed and not lock.exists()


def test_max_steps_stops_resumably(tmp_path):
    full = _run(str(tmp_path / "full"))
    part = _run(str(tmp_path / "part"), max_steps=7)
    assert part.status == "max_steps" and part.step == 7 and not part.completed
    rest = _run(str(tmp_path / "part"))
    assert rest.completed
    _assert_same_run(full, rest)


def test_checkpoint_and_metrics_file_contents(tmp_path):
    result = _run(str(tmp_path), config={"task": "test"})
    state = torch.load(str(tmp_path / "ckpt.pt"), weights_only=True)  # plain weights-only load works
    assert state["step"] == 18 and state["config"] == {"task": "test"}
    saved = json.loads((tmp_path / "metrics.json").read_text())
    assert saved["config"] == {"task": "test"}
    assert [r["epoch"] for r in saved["epochs"]] == [1, 2, 3]
    assert len(saved["steps"]) == 18
    assert {"loss", "acc", "eval_loss", "eval_acc", "step", "time"} <= set(saved["epochs"][-1])
    assert saved["epochs"] == result.history["epochs"]
    # a completed run resumes as a no-op; a longer one continues
    again = _run(str(tmp_path))
    assert again.step == 18 and again.completed
    longer = _run(str(tmp_path), epochs=4)
    assert longer.step == 24 and len(longer.history["epochs"]) == 4


def test_resuming_a_different_run_is_refused(tmp_path):
    _run(str(tmp_path), max_steps=2)
    with pytest.raises(ValueError, match="different run"):
        _run(str(tmp_path), batch_size=8)
    fresh = _run(str(tmp_path), batch_size=8, resume=False, epochs=1)
    assert fresh.step == 12


def test_callable_data_and_plain_regression():
    torch.manual_seed(0)
    w = torch.randn(3, 1)

    def data(epoch, batch):
        g = torch.Generator().manual_seed(1000 * epoch + batch)
        x = torch.randn(32, 3, generator=g)
        return x, x @ w
    model = nn.Linear(3, 1)
    before = evaluate(model, data(99, 0), nn.functional.mse_loss)["loss"]
    res = train(model, data, nn.functional.mse_loss, epochs=5, steps_per_epoch=20,
                optimizer=lambda p: torch.optim.SGD(p, lr=0.1), progress=False, log_every=0)
    assert res.history["steps"] == [] and len(res.history["epochs"]) == 5
    assert evaluate(model, data(99, 0), nn.functional.mse_loss)["loss"] < 1e-3 * before


def test_bad_arguments():
    m = nn.Linear(2, 1)
    xy = (torch.randn(8, 2), torch.randn(8, 1))
    loss = nn.functional.mse_loss
    kw = dict(batch_size=4, progress=False)
    with pytest.raises(TypeError, match="model"):
        train("not a model", xy, loss, **kw)
    with pytest.raises(ValueError, match="epochs"):
        train(m, xy, loss, epochs=-1, **kw)
    with pytest.raises(ValueError, match="batch_size"):
        train(m, xy, loss, batch_size=0)
    with pytest.raises(ValueError, match="steps_per_epoch"):
        train(m, lambda e, b: xy, loss, **kw)
    with pytest.raises(TypeError, match="data"):
        train(m, torch.randn(8, 2), loss, **kw)
    with pytest.raises(ValueError, match="first dimension"):
        train(m, (torch.randn(8, 2), torch.randn(7, 1)), loss, **kw)
    with pytest.raises(ValueError, match="no full batch"):
        train(m, xy, loss, batch_size=16)
    with pytest.raises(TypeError, match="optimizer"):
        train(m, xy, loss, optimizer="adam", **kw)


def test_command_line(tmp_path, capsys):
    from rnnlab.__main__ import main
    out = str(tmp_path / "run")
    argv = ["train", "copy-memory", "--T", "5", "--samples", "64", "--batch-size", "32",
            "--eval-samples", "32", "--out", out, "--no-progress"]
    assert main(argv + ["--epochs", "1"]) == 0
    assert "completed" in capsys.readouterr().out
    config = json.loads(open(os.path.join(out, "config.json")).read())
    assert config["parameters"] == 3380 and config["T"] == 5
    assert load_checkpoint(os.path.join(out, "checkpoint.pt"))["step"] == 2
    # running it again with more epochs resumes
    assert main(argv + ["--epochs", "2"]) == 0
    assert load_checkpoint(os.path.join(out, "checkpoint.pt"))["step"] == 4
    with pytest.raises(SystemExit):
        main(["train", "no-such-task"])
