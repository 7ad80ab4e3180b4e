"""Closed-loop imitation with low-rank and sparse recurrent policies (the seed's A.9-A.11), from the command line.

    python -m rnnlab train control-imitation --env pendulum --cell cfc --rank 5 --sparsity 0.2 --out runs/x
    python -m rnnlab train control-imitation --env halfcheetah --cell lstm --epochs 150 --out runs/y

One run is one point of the grid (cell, rank, sparsity, seed):

1. **Data.** The expert's rollouts (``--rollouts``; recorded on first use: 100 episodes, seeds 0-99,
   A.11.1): the first ``100 − --val-episodes`` train, the rest validate. Episodes are cut into
   non-overlapping windows of ``--window`` steps; each window starts from the zero state.
2. **Offline training**, once per learning rate in ``--lrs`` (the paper's grid 5e-5, 1e-4, 5e-4, Adam),
   ``--epochs`` epochs each (150 in the paper), in ``<out>/lr-<lr>/`` (resumable). The learning rate
   with the lowest final validation loss is chosen (A.11.3: offline performance only).
3. **Online evaluation** of the chosen model: ``--eval-episodes`` episodes (10, A.11.4; seeds from
   1000) in distribution and under each of ``--shifts``, each perturbing the observation with
   probability 0.1 per step. The expert (and, for the Pendulum, the zero policy) is run on the same
   seeds under the same condition, and the return is normalised by it
   (:data:`rnnlab.control.rollouts.NORMALISATION`).
4. **Analyses**: the effective dimensionality (top-5 PCA explained variance, A.11.5) of the recurrent,
   input and full trajectories closed loop in distribution and under noise; the CfC's mean
   ``|w_t − 0.5|`` (A.2); the trained recurrent and input weights' spectra; the rank of the recurrent
   weights' change over training.

``<out>/metrics.json`` holds the config, the chosen learning rate's epoch history and a ``test``
block with all of the above (what ``python -m rnnlab sweep control-imitation`` tabulates);
``<out>/model.pt`` the chosen weights; ``<out>/analysis.npz`` the spectra.

What is ours where the paper is silent: the window (``--window``, :data:`DEFAULT_WINDOW`), the batch size
(32), zero initial states, the shift magnitudes (:mod:`rnnlab.control.envs`), the Pendulum's normalisation
(affine, its returns are negative).
"""
import argparse
import json
import math
import os
import time

import numpy as np
import torch

from .. import train as _train
from .._io import atomic_path
from .._validate import check_int
from ..control.recorded import ROLLOUTS, default_rollouts, ensure_rollouts  # noqa: F401 (also this module's API)
from .run_folder import prepare_run_folder, write_json

__all__ = ["PAPER", "SHIFT_NAMES", "default_rollouts", "ensure_rollouts", "expert_conditions", "run",
           "add_arguments", "main"]

PAPER = dict(lrs=(5e-5, 1e-4, 5e-4), epochs=150, hidden=64, head=256, eval_episodes=10, rollouts=ROLLOUTS, p=0.1,
             ranks=(1, 5, 16, 27, None), sparsities=(0.0, 0.2, 0.5, 0.8), seeds=3)
SHIFT_NAMES = ("noise", "dropout", "offset")
EVAL_SEED = 1000
DEFAULT_WINDOW = {"pendulum": 50, "halfcheetah": 200}
"""Training windows (ours): the Pendulum's 200-step episode in four (50 trained better closed loop than 200 in a
pilot: 0.46 vs 0.34 normalised, CfC, 150 epochs), HalfCheetah's 1000 in five."""
SIGNATURE_KEYS = ("env", "cell", "rank", "sparsity", "seed", "window", "batch_size", "val_episodes")


def expert_conditions(env, rollouts_path, obs_std, *, episodes, shifts, expert_path=None, p=PAPER["p"]):
    """The expert's (and, for the Pendulum, the zero policy's) evaluation under every condition.

    Cached in ``<rollouts>.conditions.json`` (keyed by episodes, seed, p, condition): every trial
    of a grid normalises by the same numbers.
    """
    from ..control.experts import ZeroPolicy, expert_for
    from ..control.rollouts import evaluate_policy
    cache_path = rollouts_path + ".conditions.json"
    cache = {}
    if os.path.exists(cache_path):
        with open(cache_path) as f:
            cache = json.load(f)
    changed = False
    for cond in ("none", *shifts):
        key = f"{cond}|{episodes}|{EVAL_SEED}|{p}"
        if key in cache:
            continue
        entry = {"expert": evaluate_policy(env, expert_for(env, expert_path), episodes=episodes, seed=EVAL_SEED,
                                           shift=cond, p=p, obs_std=obs_std, observe="full")}
        if env == "pendulum":   # the baseline of its affine normalisation (one torque)
            entry["zero"] = evaluate_policy(env, ZeroPolicy(1), episodes=episodes, seed=EVAL_SEED,
                                            shift=cond, p=p, obs_std=obs_std, observe="full")
        cache[key], changed = entry, True
    if changed:
        write_json(cache_path, cache)
    return {cond: cache[f"{cond}|{episodes}|{EVAL_SEED}|{p}"] for cond in ("none", *shifts)}


def _spectra(cell):
    """Mean over the gates of the recurrent matrices' spectral radius and norm; normalised singular values."""
    W = cell.recurrent_weights().detach().double().numpy()
    Wi = cell.weight_ih.detach().double().numpy().reshape(cell.gates, cell.hidden_size, -1)
    radius = [float(np.max(np.abs(np.linalg.eigvals(w)))) for w in W]
    sv = np.stack([np.linalg.svd(w, compute_uv=False) for w in W])
    svi = np.stack([np.linalg.svd(w, compute_uv=False) for w in Wi])
    return ({"rec_spectral_radius": float(np.mean(radius)), "rec_spectral_norm": float(sv[:, 0].mean()),
             "inp_spectral_norm": float(svi[:, 0].mean())},
            {"rec_singular_values": (sv / sv[:, :1]).mean(0), "inp_singular_values": (svi / svi[:, :1]).mean(0),
             "rec_eigenvalues": np.concatenate([np.linalg.eigvals(w) for w in W])})


def _cuts(ro, n_val, window):
    from ..control.imitation import windows
    obs, act, lengths = ro["policy_obs"], ro["actions"], ro["lengths"]
    E = obs.shape[0]
    if not 1 <= n_val < E:
        raise ValueError(f"val_episodes must be in [1, {E - 1}] for {E} rollouts, got {n_val}")
    return (windows(obs[: E - n_val], act[: E - n_val], lengths[: E - n_val], window),
            windows(obs[E - n_val:], act[E - n_val:], lengths[E - n_val:], window))


def run(*, env="pendulum", cell="cfc", rank=None, sparsity=0.0, seed=0, lrs=PAPER["lrs"], epochs=PAPER["epochs"],
        window=None, batch_size=32, val_episodes=10, eval_episodes=PAPER["eval_episodes"], shifts=SHIFT_NAMES,
        p=PAPER["p"], rollouts=None, expert=None, out=None, resume=True, progress=True, device="cpu",
        fault_at_step=None, max_minutes=None):
    """One grid point (see the module's docstring); returns the ``test`` block."""
    from ..control.envs import ENVS, action_scale
    from ..control.imitation import ImitationNet, RecurrentPolicy, effective_dimensionality, numerical_rank
    from ..control.rollouts import evaluate_policy, normalised_return
    if env not in ENVS:
        raise ValueError(f"env must be one of {sorted(ENVS)}, got {env!r}")
    window = DEFAULT_WINDOW[env] if window is None else window
    for s in shifts:
        if s not in SHIFT_NAMES:
            raise ValueError(f"shifts must be among {SHIFT_NAMES}, got {s!r}")
    if not lrs or any(not (isinstance(lr, float) and lr > 0) for lr in lrs):
        raise ValueError(f"lrs must be positive floats, got {lrs!r}")
    for arg, v in (("epochs", epochs), ("window", window), ("batch_size", batch_size),
                   ("eval_episodes", eval_episodes)):
        check_int(arg, v, minimum=1)
    if out is None:
        raise ValueError("out is required: the run folder")
    rollouts = rollouts or default_rollouts(env)
    ro = ensure_rollouts(env, rollouts, expert, progress=progress)
    (x_tr, y_tr), (x_va, y_va) = _cuts(ro, val_episodes, window)
    scale = action_scale(env)
    y_tr, y_va = y_tr / scale, y_va / scale
    E = ro["obs"].shape[0]
    flat = ro["policy_obs"][: E - val_episodes].reshape(-1, ro["policy_obs"].shape[-1])
    obs_mean, obs_std = flat.mean(0), flat.std(0)
    config = dict(env=env, cell=cell, rank=rank, sparsity=float(sparsity), seed=seed, lrs=list(lrs), epochs=epochs,
                  window=window, batch_size=batch_size, val_episodes=val_episodes, eval_episodes=eval_episodes,
                  shifts=list(shifts), p=p, rollouts=rollouts, train_windows=len(x_tr), val_windows=len(x_va))
    os.makedirs(out, exist_ok=True)
    write_json(os.path.join(out, "config.json"), config)

    def make_net():
        return ImitationNet(x_tr.shape[-1], y_tr.shape[-1], cell, rank, sparsity, obs_mean=obs_mean,
                            obs_std=obs_std, seed=seed)

    def mse(out_, y):
        return torch.mean((out_ - y) ** 2)

    deadline = None if max_minutes is None else time.time() + 60 * max_minutes
    runs = {}
    for lr in lrs:
        sub = os.path.join(out, f"lr-{lr:g}")
        sub_config = dict(config, lr=lr)
        ckpt, metrics_file = prepare_run_folder(sub, sub_config, SIGNATURE_KEYS + ("lr",), resume)
        net = make_net()
        left = None if deadline is None else max(1.0, deadline - time.time())
        result = _train.train(net, (x_tr, y_tr), mse, optimizer=lambda ps, lr=lr: torch.optim.Adam(ps, lr=lr),
                              epochs=epochs, batch_size=batch_size, eval_data=(x_va, y_va), checkpoint=ckpt,
                              resume=resume, metrics_file=metrics_file, seed=seed, device=device,
                              progress=progress, max_seconds=left, config=sub_config, log_every=0)
        if not result.completed:
            print(f"stopped in lr {lr:g} at epoch {result.epoch}; run the same command again to resume")
            return None
        runs[lr] = (result.history["epochs"][-1]["eval_loss"], net.cpu(), result.history)
    best = min(runs, key=lambda lr: runs[lr][0])
    val_loss, net, history = runs[best]
    torch.save(net.state_dict(), os.path.join(out, "model.pt"))
    test = {"lr": best, "val_loss": val_loss, **{f"val_loss_lr_{lr:g}": runs[lr][0] for lr in lrs}}

    # online, closed loop
    obs_std_full = ro["obs_std"]
    ref = expert_conditions(env, rollouts, obs_std_full, episodes=eval_episodes, shifts=shifts, expert_path=expert,
                            p=p)
    t0 = time.time()
    traj = {}
    shifted_norms = []
    for cond in ("none", *shifts):
        policy = RecurrentPolicy(net, scale, record=cond in ("none", "noise"))
        ev = evaluate_policy(env, policy, episodes=eval_episodes, seed=EVAL_SEED, shift=cond, p=p,
                             obs_std=obs_std_full, fault_at_step=fault_at_step)
        expert_R = ref[cond]["expert"]["mean_return"]
        zero_R = ref[cond]["zero"]["mean_return"] if "zero" in ref[cond] else None
        norm = normalised_return(env, ev["mean_return"], expert_R, zero_R)
        norm_eps = [normalised_return(env, r, expert_R, zero_R) for r in ev["returns"]]
        test[f"{cond}_return"], test[f"{cond}_expert_return"] = ev["mean_return"], expert_R
        test[f"{cond}_returns"] = ev["returns"]   # per episode: HalfCheetah's are bimodal (runs or stalls)
        test[f"{cond}_normalised"] = norm
        test[f"{cond}_normalised_se"] = (float(np.std(norm_eps, ddof=1) / math.sqrt(len(norm_eps)))
                                         if len(norm_eps) > 1 else None)
        if cond != "none":
            shifted_norms.append(norm)
        if policy.record:
            traj[cond] = policy.trajectories()
    test["shift_normalised"] = float(np.mean(shifted_norms)) if shifted_norms else None
    for cond, tr in traj.items():
        for part in ("rec", "inp", "h"):
            test[f"ed_{part}_{cond}"] = effective_dimensionality(tr[part])
        if "w" in tr:
            test[f"cfc_w_dev_{cond}"] = float(np.mean(np.abs(tr["w"] - 0.5)))
    test["online_seconds"] = time.time() - t0
    summary, arrays = _spectra(net.cell)
    test.update(summary)
    init = make_net().cell
    dW = (net.cell.recurrent_weights() - init.recurrent_weights()).detach().double().numpy()
    test["rec_change_rank"] = float(np.mean([numerical_rank(d) for d in dW]))
    test["rec_change_rank_max"] = int(max(numerical_rank(d) for d in dW))
    with atomic_path(os.path.join(out, "analysis.npz"), suffix=".npz") as tmp:
        np.savez(tmp, **arrays)
    write_json(os.path.join(out, "metrics.json"), {"config": config, "epochs": history["epochs"], "test": test})
    return test


def _floats(text):
    try:
        return tuple(float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def _rank(text):
    if text in ("full", "none", "None"):
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"rank must be an int or 'full', got {text!r}") from None


def add_arguments(parser):
    """Command-line options of ``python -m rnnlab train control-imitation``."""
    p = parser
    p.add_argument("--env", choices=("pendulum", "halfcheetah"), default="pendulum",
                   help="pendulum: Pendulum-v1, velocity hidden, analytic expert (seconds); halfcheetah: "
                        "HalfCheetah-v5 with the exported PPO expert (default %(default)s)")
    p.add_argument("--cell", choices=("rnn", "lstm", "gru", "cfc"), default="cfc")
    p.add_argument("--rank", type=_rank, default=None, help="rank of W_rec, or 'full' (default full)")
    p.add_argument("--sparsity", type=float, default=0.0, help="fraction of W_rec masked to zero (default 0)")
    p.add_argument("--seed", type=int, default=0, help="initialisation, mask and batch order (default 0)")
    p.add_argument("--lrs", type=_floats, default=PAPER["lrs"],
                   help="learning rates tried, best by validation loss (default the paper's 5e-5,1e-4,5e-4)")
    p.add_argument("--epochs", type=int, default=PAPER["epochs"], help="per learning rate (default 150, the paper)")
    p.add_argument("--window", type=int, default=None,
                   help="training window in steps (default 50 of the Pendulum's 200, 200 of HalfCheetah's 1000)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--val-episodes", type=int, default=10, help="rollouts held out for validation (default 10)")
    p.add_argument("--eval-episodes", type=int, default=PAPER["eval_episodes"],
                   help="closed-loop episodes per condition (default 10, the paper)")
    p.add_argument("--shifts", type=lambda s: tuple(v for v in s.split(",") if v), default=SHIFT_NAMES,
                   help="comma-separated among noise,dropout,offset ('' for none; default all three)")
    p.add_argument("--rollouts", default=None, help="expert rollouts (.npz; recorded if missing; default "
                   "runs/control/rollouts-<env>.npz)")
    p.add_argument("--expert", default=None, help="HalfCheetah expert (.npz; default the committed one)")
    p.add_argument("--out", default=None, help="run folder (default runs/imitation-<env>-<cell>-r<rank>-s<sp>-<seed>)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=None, help="torch threads")
    p.add_argument("--no-resume", action="store_true")
    p.add_argument("--max-minutes", type=float, default=None, help="stop (and save) after this long")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--fault-at-step", type=int, default=None, help=argparse.SUPPRESS)


def main(args):
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    rank = "full" if args.rank is None else args.rank
    out = args.out or os.path.join("runs", f"imitation-{args.env}-{args.cell}-r{rank}-s{args.sparsity:g}-{args.seed}")
    window = args.window or DEFAULT_WINDOW[args.env]
    try:
        test = run(env=args.env, cell=args.cell, rank=args.rank, sparsity=args.sparsity, seed=args.seed,
                   lrs=args.lrs, epochs=args.epochs, window=window, batch_size=args.batch_size,
                   val_episodes=args.val_episodes, eval_episodes=args.eval_episodes, shifts=args.shifts,
                   rollouts=args.rollouts, expert=args.expert, out=out, resume=not args.no_resume,
                   progress=not args.no_progress, device=args.device, fault_at_step=args.fault_at_step,
                   max_minutes=args.max_minutes)
    except (ValueError, FileNotFoundError, ImportError) as e:
        raise SystemExit(f"control-imitation: {e}") from None
    if test is None:   # stopped by --max-minutes: resumable (a sweep's row says "incomplete")
        return 0
    shifted = test["shift_normalised"]
    shifted = "-" if shifted is None else f"{shifted:.3f}"
    print(f"control-imitation {args.env} {args.cell} rank {rank} sparsity {args.sparsity:g} seed {args.seed}: "
          f"lr {test['lr']:g}, val loss {test['val_loss']:.4g}, normalised return {test['none_normalised']:.3f} "
          f"in distribution, {shifted} under shift; files in {out}")
    return 0
