"""One training loop for every chapter: progress bar, metric history, resumable checkpoints.

::

    from rnnlab.train import train
    result = train(model, (inputs, targets), loss_fn,
                   optimizer=lambda p: torch.optim.Adamax(p, lr=0.01),
                   epochs=10, batch_size=256, metrics={"acc": accuracy},
                   checkpoint="runs/x/checkpoint.pt", metrics_file="runs/x/metrics.json")
    result.history["epochs"][-1]   # {'epoch': 10, 'step': ..., 'loss': ..., 'acc': ..., ...}

What it promises:

- **Data**: either a pair ``(inputs, targets)`` of tensors with the same first
  dimension (shuffled every epoch by a permutation drawn from
  ``seed`` and the epoch number alone), or a callable ``data(epoch, batch)``
  returning one ``(inputs, targets)`` batch, with ``steps_per_epoch`` given.
  Batches stay where they are and are moved to the device one at a time.
- **Model**: ``model(inputs)`` may return the output or a tuple whose first
  element is the output (the torch ``(output, state)`` convention).
  ``loss_fn(output, targets)`` returns a scalar tensor; each metric
  ``fn(output, targets)`` a scalar (tensor or float), averaged over the epoch
  weighted by batch size.
- **History**: ``{"steps": [...], "epochs": [...]}``, lists of flat dicts of
  numbers. A step record (every ``log_every`` steps) has ``step``, ``epoch``,
  ``loss``, ``time``; an epoch record has ``epoch`` (1-based, completed),
  ``step``, ``loss`` and the metrics (training averages), ``eval_loss`` and
  ``eval_<metric>`` when evaluated, and ``time`` (seconds of training so far,
  across resumptions). Written as JSON to ``metrics_file`` at every epoch
  end and checkpoint (atomically).
- **Checkpoints**: at the end of every epoch, every ``checkpoint_every``
  steps, on ``max_steps``/``max_seconds``, and on Ctrl-C (unless it came in
  the middle of ``optimizer.step()``). Saved atomically (write to a temporary
  file, then ``os.replace``) with the model, optimizer, scheduler, RNG
  states, position and history; loaded with ``torch.load(weights_only=True)``.
  With ``resume=True`` an existing checkpoint is picked up where it stopped,
  and the run continues exactly as if it had never stopped: same batches, same
  random numbers, same parameters.
- **One run per checkpoint**: while a run trains, ``<checkpoint>.lock`` holds
  its process id; a second ``train`` on the same checkpoint, while that
  process lives, is refused (two runs writing one checkpoint would overwrite
  each other's progress). A lock left by a process that is gone is taken over.
- **Stopping**: ``SIGTERM`` (``kill PID``) is treated like Ctrl-C: the run
  saves and stops. (A job started in the background of a non-interactive
  shell ignores ``SIGINT``; ``kill`` reaches it.)
- **Seeding**: ``seed`` fixes the batch order and seeds torch's global RNG at
  the start (dropout and the like). Seed the model's initialisation yourself
  before building it.
- **Device**: ``device="auto"`` is CUDA when available, else CPU.
"""
import math
import os
import signal
import threading
import time
from dataclasses import dataclass, field

import torch

from ._io import atomic_save, atomic_write_json
from ._validate import check_int, check_optional_int

__all__ = ["train", "evaluate", "TrainResult", "save_checkpoint", "load_checkpoint", "resolve_device",
           "CHECKPOINT_FORMAT"]

CHECKPOINT_FORMAT = "rnnlab-train-1"


@dataclass
class TrainResult:
    """What :func:`train` returns.

    ``status`` is ``"completed"`` (all epochs done), ``"max_steps"`` or
    ``"max_seconds"`` (stopped early, resumable); ``epoch`` counts completed
    epochs and ``step`` optimizer steps, both across resumptions.
    """
    model: torch.nn.Module
    history: dict
    epoch: int
    step: int
    status: str
    checkpoint: str = None
    resumed_from_step: int = None
    extra: dict = field(default_factory=dict)

    @property
    def completed(self):
        return self.status == "completed"


def resolve_device(device="auto"):
    """``"auto"`` → ``cuda`` if available else ``cpu``; anything else → ``torch.device(device)``."""
    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def _output(out):
    return out[0] if isinstance(out, (tuple, list)) else out


def _number(v):
    if isinstance(v, torch.Tensor):
        return float(v.detach().float().mean().item()) if v.numel() != 1 else float(v.detach().item())
    return float(v)


def save_checkpoint(path, state):
    """``torch.save(state, path)`` atomically: a temporary file in the same folder, fsync, ``os.replace``."""
    atomic_save(state, path)


def load_checkpoint(path, map_location="cpu"):
    """Load a checkpoint written by :func:`train` with ``torch.load(weights_only=True)``."""
    state = torch.load(path, map_location=map_location, weights_only=True)
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{path} is not an rnnlab training checkpoint (format {CHECKPOINT_FORMAT!r})")
    return state


def _check_data(data, steps_per_epoch, batch_size, drop_last):
    if callable(data):
        if steps_per_epoch is None:
            raise ValueError("train: steps_per_epoch (an int >= 1) is required when data is a callable "
                             "data(epoch, batch) -> (inputs, targets)")
        return None, check_int("steps_per_epoch", steps_per_epoch, minimum=1, fn="train")
    if not (isinstance(data, (tuple, list)) and len(data) == 2 and all(isinstance(t, torch.Tensor) for t in data)):
        raise TypeError("train: data must be a pair (inputs, targets) of tensors or a callable "
                        f"data(epoch, batch) -> (inputs, targets); got {type(data).__name__}")
    n = data[0].shape[0]
    if data[1].shape[0] != n:
        raise ValueError("train: inputs and targets must have the same first dimension, "
                         f"got {n} and {data[1].shape[0]}")
    steps = n // batch_size if drop_last else math.ceil(n / batch_size)
    if steps < 1:
        raise ValueError(f"train: {n} samples give no full batch of batch_size={batch_size} (drop_last=True)")
    return n, steps


def _permutation(seed, epoch, n):
    g = torch.Generator().manual_seed(int(seed) * 1_000_003 + int(epoch))
    return torch.randperm(n, generator=g)


def _batches(data, n, seed, epoch, batch_size, steps):
    perm = None if n is None else _permutation(seed, epoch, n)

    def get(b):
        if n is None:
            return data(epoch, b)
        idx = perm[b * batch_size:(b + 1) * batch_size]
        return data[0][idx], data[1][idx]
    return get


@torch.no_grad()
def evaluate(model, data, loss_fn, metrics=None, batch_size=256, device=None):
    """Loss and metrics of ``model`` on ``(inputs, targets)``, in eval mode, averaged over samples.

    Returns ``{"loss": ..., <metric>: ...}``; the model's training mode is restored.
    """
    metrics = metrics or {}
    device = next(model.parameters()).device if device is None else resolve_device(device)
    was_training = model.training
    model.eval()
    sums, count = {}, 0
    try:
        inputs, targets = data
        for i in range(0, inputs.shape[0], batch_size):
            x = inputs[i:i + batch_size].to(device)
            y = targets[i:i + batch_size].to(device)
            out = _output(model(x))
            w = x.shape[0]
            sums["loss"] = sums.get("loss", 0.0) + _number(loss_fn(out, y)) * w
            for name, fn in metrics.items():
                sums[name] = sums.get(name, 0.0) + _number(fn(out, y)) * w
            count += w
    finally:
        model.train(was_training)
    return {k: v / count for k, v in sums.items()}


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:          # alive, owned by someone else
        return True
    return True


def _take_lock(checkpoint):
    """Write our pid to ``<checkpoint>.lock``; refuse if another live process holds it. Returns the path."""
    lock = checkpoint + ".lock"
    try:
        with open(lock) as f:
            other = int(f.read().strip() or 0)
    except (FileNotFoundError, ValueError):
        other = 0
    if other and other != os.getpid() and _pid_alive(other):
        raise RuntimeError(f"train: another process (pid {other}) is training into {checkpoint}; two runs writing "
                           f"one checkpoint would overwrite each other's progress. Stop it first (kill {other} "
                           f"saves and stops it), or remove {lock} if that process is not a training run.")
    os.makedirs(os.path.dirname(os.path.abspath(lock)), exist_ok=True)
    with open(lock, "w") as f:
        f.write(str(os.getpid()))
    return lock


def _release_lock(lock):
    try:
        with open(lock) as f:
            mine = f.read().strip() == str(os.getpid())
        if mine:
            os.remove(lock)
    except (FileNotFoundError, ValueError):
        pass


def _sigterm_as_interrupt():
    """Make SIGTERM raise KeyboardInterrupt (saved like Ctrl-C); returns the previous handler, or None if
    not in the main thread (where only signals can be handled)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    return signal.signal(signal.SIGTERM, handler)


def train(model, data, loss_fn, *, epochs=1, batch_size=32, optimizer=None, scheduler=None, metrics=None,
          steps_per_epoch=None, drop_last=True, eval_data=None, eval_every=1, eval_batch_size=None,
          checkpoint=None, checkpoint_every=None, resume=True, metrics_file=None, seed=0, device="auto",
          progress=True, log_every=1, max_steps=None, max_seconds=None, grad_clip=None, callback=None,
          config=None, eval_fn=None):
    """Train ``model`` on ``data`` to minimise ``loss_fn``; return a :class:`TrainResult`.

    Parameters
    ----------
    model : torch.nn.Module
        Moved to ``device``. ``model(inputs)`` returns the output or ``(output, ...)``.
    data : ``(inputs, targets)`` tensors, or a callable ``data(epoch, batch) -> (inputs, targets)``
        The callable must be deterministic in its arguments for exact resumption.
    loss_fn : callable ``(output, targets) -> scalar tensor``
    epochs, batch_size : int
        Passes over the data, and the batch size for tensor data.
    optimizer : callable ``params -> Optimizer``, an Optimizer, or None
        None: ``torch.optim.Adam(lr=1e-3)``. Prefer the callable (it is built
        after the model is on its device).
    scheduler : callable ``optimizer -> LRScheduler`` or None
        Stepped once per epoch.
    metrics : dict ``name -> fn(output, targets)``
        Averaged over each epoch's training batches (and over ``eval_data``).
    steps_per_epoch : int
        Required for callable data.
    drop_last : bool
        Drop the last incomplete batch of tensor data (the default, as in the paper's runs).
    eval_data : ``(inputs, targets)`` or None
        Evaluated after every ``eval_every`` epochs (and after the last) with
        :func:`evaluate`, in batches of ``eval_batch_size`` (default batch_size).
    checkpoint : path or None
        Checkpoint file; ``checkpoint_every`` adds saves every that many steps.
    resume : bool
        Continue from ``checkpoint`` if it exists. The run must have the same
        seed, batch size and number of samples (checked); ``epochs`` may grow.
    metrics_file : path or None
        The history as JSON, rewritten at every epoch end and checkpoint.
    seed : int
        Batch order and torch's global RNG (see the module docstring).
    device : ``"auto"``, a string or a torch.device
    progress : bool
        A tqdm progress bar over steps, with the latest loss and metrics.
    log_every : int
        Steps between step records in the history (0: none).
    max_steps, max_seconds : int, float or None
        Stop after this many steps in all / seconds of this call, saving a
        checkpoint; the result's ``status`` says so. Call again to go on.
    grad_clip : float or None
        Clip the gradient norm to this value.
    callback : callable ``(record) -> None`` or None
        Called after every step with the step's record (``step``, ``epoch``,
        ``batch``, ``loss``). An exception raised by it stops training like a
        crash: nothing is saved for it, the last checkpoint stands. (A
        ``KeyboardInterrupt`` raised there is treated as Ctrl-C: saved.)
    config : dict or None
        JSON-able description of the run, stored in checkpoints and the metrics file.
    eval_fn : callable ``(model, record) -> dict`` or None
        Further evaluation at the same epochs as ``eval_data`` (every ``eval_every`` epochs and after the
        last), with the model in eval mode under ``torch.no_grad()``; ``record`` is the epoch's record so
        far (its training averages). The returned numbers are added to the record under their own
        names (for evaluations that need more than ``model(inputs)``, such as decoding).
    """
    _check_arguments(model, epochs, batch_size, log_every, eval_every, checkpoint_every)
    n, steps = _check_data(data, steps_per_epoch, batch_size, drop_last)
    metrics = dict(metrics or {})
    device = resolve_device(device)
    model.to(device)
    opt = _make_optimizer(model, optimizer)
    sched = scheduler(opt) if scheduler is not None else None
    signature = {"seed": int(seed), "batch_size": int(batch_size), "num_samples": n, "steps_per_epoch": steps}
    run = _Run(model, opt, sched, signature, config, checkpoint, metrics_file)
    torch.manual_seed(seed)
    resumed_from = run.resume() if checkpoint is not None and resume and os.path.exists(checkpoint) else None

    total = epochs * steps
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=total, initial=min(run.step, total), unit="step", dynamic_ncols=True,
                   desc=f"epoch {min(run.epoch + 1, max(epochs, 1))}/{epochs}")
    run.start_clock()
    status = "completed"
    model.train()
    lock = _take_lock(os.fspath(checkpoint)) if checkpoint is not None else None
    previous_sigterm = _sigterm_as_interrupt()
    try:
        while run.epoch < epochs:
            get = _batches(data, n, seed, run.epoch, batch_size, steps)
            while run.batch < steps:
                if max_steps is not None and run.step >= max_steps:
                    status = "max_steps"
                    break
                if max_seconds is not None and time.perf_counter() - run.start >= max_seconds:
                    status = "max_seconds"
                    break
                x, y = get(run.batch)
                x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
                values, record = run.train_step(x, y, loss_fn, metrics, grad_clip, log_every)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix({k: f"{v:.4g}" for k, v in values.items()}, refresh=False)
                if callback is not None:
                    callback(record)
                if checkpoint_every and run.step % checkpoint_every == 0 and run.batch < steps:
                    run.save()
            if status != "completed":
                break
            rec = run.epoch_record()
            if (run.epoch + 1) % eval_every == 0 or run.epoch + 1 == epochs:
                _evaluate_epoch(model, rec, eval_data, eval_fn, loss_fn, metrics, eval_batch_size or batch_size,
                                device)
            run.end_epoch(rec)
            if bar is not None:
                bar.set_description(f"epoch {min(run.epoch + 1, epochs)}/{epochs}")
                bar.set_postfix({k: f"{v:.4g}" for k, v in rec.items() if k not in ("epoch", "step", "time")})
            run.save()
    except KeyboardInterrupt:
        if not run.stepping:
            run.save()
            print(f"\ninterrupted at step {run.step}; checkpoint saved" if checkpoint else "\ninterrupted")
        raise
    finally:
        if bar is not None:
            bar.close()
        if previous_sigterm is not None:
            signal.signal(signal.SIGTERM, previous_sigterm)
        if lock is not None:
            _release_lock(lock)
    if status != "completed":
        run.save()
    return TrainResult(model=model, history=run.history, epoch=run.epoch, step=run.step, status=status,
                       checkpoint=checkpoint, resumed_from_step=resumed_from)


# ---------------------------------------------------------------------------
# The steps of train(): arguments, optimiser, the run's state (resume, one training
# step, the end of an epoch, checkpoints), evaluation
# ---------------------------------------------------------------------------

def _check_arguments(model, epochs, batch_size, log_every, eval_every, checkpoint_every):
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"train: model must be a torch.nn.Module, got {type(model).__name__}")
    for name, value, minimum in (("epochs", epochs, 0), ("batch_size", batch_size, 1), ("log_every", log_every, 0),
                                 ("eval_every", eval_every, 1)):
        check_int(name, value, minimum=minimum, fn="train")
    check_optional_int("checkpoint_every", checkpoint_every, minimum=1, fn="train", none_means="at epoch ends only")


def _make_optimizer(model, optimizer):
    """The optimiser of :func:`train`'s ``optimizer`` argument (None: Adam, lr 1e-3)."""
    if optimizer is None:
        return torch.optim.Adam(model.parameters(), lr=1e-3)
    if isinstance(optimizer, torch.optim.Optimizer):
        return optimizer
    if callable(optimizer):
        return optimizer(model.parameters())
    raise TypeError(f"train: optimizer must be a callable params -> Optimizer, an Optimizer or None, "
                    f"got {type(optimizer).__name__}")


def _evaluate_epoch(model, rec, eval_data, eval_fn, loss_fn, metrics, batch_size, device):
    """Add the epoch's evaluations to its record ``rec``: ``eval_data`` (as ``eval_*``), then ``eval_fn``."""
    if eval_data is not None:
        ev = evaluate(model, eval_data, loss_fn, metrics, batch_size, device)
        rec.update({f"eval_{k}": v for k, v in ev.items()})
    if eval_fn is not None:
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                extra = eval_fn(model, dict(rec))
        finally:
            model.train(was_training)
        rec.update({k: _number(v) for k, v in (extra or {}).items()})


class _Run:
    """The state of one call of :func:`train`: the position (epoch, batch within it, step), the
    running sums of the epoch, the history and the clock; how to resume it from a checkpoint,
    advance it by one step or one epoch, and save it.

    ``stepping`` is True while the state is in flux (from the optimiser step until the step's
    bookkeeping is done, and while an epoch ends): a Ctrl-C then is not checkpointed (the last
    checkpoint stands)."""

    def __init__(self, model, opt, sched, signature, config, checkpoint, metrics_file):
        self.model, self.opt, self.sched = model, opt, sched
        self.signature, self.config = signature, config
        self.checkpoint, self.metrics_file = checkpoint, metrics_file
        self.history = {"steps": [], "epochs": []}
        self.epoch, self.batch, self.step, self.elapsed = 0, 0, 0, 0.0
        self.sums = {}
        self.stepping = False
        self.start = self.base_elapsed = None

    def resume(self):
        """Load the checkpoint (same signature, checked); return the step it was saved at."""
        state = load_checkpoint(self.checkpoint)
        mismatch = {k: (state["signature"].get(k), v) for k, v in self.signature.items()
                    if state["signature"].get(k) != v}
        if mismatch:
            raise ValueError(f"train: checkpoint {self.checkpoint} was written by a different run "
                             f"(checkpoint vs now: {mismatch}); use resume=False or another path")
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["optimizer"])
        if self.sched is not None and state.get("scheduler") is not None:
            self.sched.load_state_dict(state["scheduler"])
        self.epoch, self.batch, self.step, self.elapsed = state["epoch"], state["batch"], state["step"], \
            state["elapsed"]
        self.sums, self.history = state["sums"], state["history"]
        torch.set_rng_state(state["rng"])
        if torch.cuda.is_available() and state.get("cuda_rng") is not None:
            torch.cuda.set_rng_state_all(list(state["cuda_rng"]))
        return self.step

    def start_clock(self):
        self.start = time.perf_counter()
        self.base_elapsed = self.elapsed

    def _clock(self):
        return self.base_elapsed + time.perf_counter() - self.start

    def train_step(self, x, y, loss_fn, metrics, grad_clip, log_every):
        """One optimiser step on the batch ``(x, y)``; returns the step's values (loss and metrics)
        and its record (``step``, ``epoch``, ``batch``, ``loss``)."""
        model, opt = self.model, self.opt
        opt.zero_grad(set_to_none=True)
        out = _output(model(x))
        loss = loss_fn(out, y)
        if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
            raise TypeError("train: loss_fn must return a scalar tensor")
        loss.backward()
        if grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        self.stepping = True
        opt.step()
        w = x.shape[0]
        loss_value = float(loss.detach().item())
        with torch.no_grad():
            values = {"loss": loss_value, **{k: _number(fn(out.detach(), y)) for k, fn in metrics.items()}}
        for k, v in values.items():
            self.sums[k] = self.sums.get(k, 0.0) + v * w
        self.sums["_count"] = self.sums.get("_count", 0.0) + w
        self.step += 1
        self.batch += 1
        self.elapsed = self._clock()
        record = {"step": self.step, "epoch": self.epoch + 1, "batch": self.batch, "loss": loss_value}
        if log_every and self.step % log_every == 0:
            self.history["steps"].append({"step": self.step, "epoch": self.epoch + 1, "loss": loss_value,
                                          "time": round(self.elapsed, 3)})
        self.stepping = False
        return values, record

    def epoch_record(self):
        """The record of the epoch that just ended: its training averages (evaluations are added
        by :func:`_evaluate_epoch`, the time by :meth:`end_epoch`)."""
        count = self.sums.get("_count", 0.0) or 1.0
        return {"epoch": self.epoch + 1, "step": self.step,
                **{k: v / count for k, v in self.sums.items() if k != "_count"}}

    def end_epoch(self, rec):
        """Step the scheduler, close the record and advance the position in one go."""
        self.stepping = True
        if self.sched is not None:
            self.sched.step()
        self.elapsed = self._clock()
        rec["time"] = round(self.elapsed, 3)
        self.history["epochs"].append(rec)
        self.epoch, self.batch, self.sums = self.epoch + 1, 0, {}
        self.stepping = False

    def snapshot(self):
        return {
            "format": CHECKPOINT_FORMAT, "signature": self.signature, "config": self.config or {},
            "model": self.model.state_dict(), "optimizer": self.opt.state_dict(),
            "scheduler": self.sched.state_dict() if self.sched is not None else None,
            "epoch": self.epoch, "batch": self.batch, "step": self.step, "elapsed": self.elapsed,
            "sums": dict(self.sums), "history": self.history, "rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
        }

    def write_metrics(self):
        if self.metrics_file is not None:
            os.makedirs(os.path.dirname(os.path.abspath(self.metrics_file)), exist_ok=True)
            atomic_write_json(self.metrics_file, {"config": self.config or {}, "signature": self.signature,
                                                   **self.history})

    def save(self):
        if self.checkpoint is not None:
            save_checkpoint(self.checkpoint, self.snapshot())
        self.write_metrics()
