"""How hard a shift must hit before rank or sparsity matters: a severity sweep on the Pendulum.

``python -m rnnlab.experiments.imitation_severity --out book/lowrank/data/pendulum-severity.json``

trains CfC policies by imitation (full rank, rank 5, sparsity 0.5; 60 epochs at 5e-4, seed 0, the
teaching grid's settings, :func:`rnnlab.experiments.imitation.run`), then evaluates each closed
loop under the three shifts of :mod:`rnnlab.control.envs` at a growing probability ``p`` of
perturbing a step (the severity; the paper's is 0.1), beside the expert and the zero-torque
policy under the same shift and seeds. The JSON holds, per shift and ``p``, every policy's mean
return and its standard error over the episodes, and its normalised return
(:func:`rnnlab.control.rollouts.normalised_return`). The committed run took 717 s on a busy
two-core machine (its ``seconds``).
"""
import argparse
import json
import math
import os
import platform
import tempfile
import time

import numpy as np
import torch

__all__ = ["POLICIES", "SEVERITIES", "sweep", "main"]

POLICIES = {"full rank": dict(rank=None, sparsity=0.0), "rank 5": dict(rank=5, sparsity=0.0),
            "sparsity 0.5": dict(rank=None, sparsity=0.5)}
SEVERITIES = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25)


def _summary(returns):
    returns = np.asarray(returns, dtype=float)
    return {"mean": float(returns.mean()), "se": float(returns.std(ddof=1) / math.sqrt(len(returns)))}


def sweep(workdir, *, cell="cfc", policies=POLICIES, severities=SEVERITIES, episodes=10, epochs=60,
          lr=5e-4, seed=0):
    """Train ``policies`` (name -> rank/sparsity) and evaluate them at every shift and severity."""
    from ..control.envs import action_scale
    from ..control.experts import PendulumExpert, ZeroPolicy
    from ..control.imitation import ImitationNet, RecurrentPolicy
    from ..control.recorded import ensure_rollouts
    from ..control.rollouts import evaluate_policy, normalised_return
    from .imitation import EVAL_SEED, run

    rollouts = os.path.join(workdir, "rollouts.npz")
    ro = ensure_rollouts("pendulum", rollouts)
    obs_std = ro["obs_std"]
    nets, trained = {}, {}
    for name, spec in policies.items():
        out = os.path.join(workdir, name.replace(" ", "-"))
        test = run(env="pendulum", cell=cell, seed=seed, lrs=(lr,), epochs=epochs, rollouts=rollouts,
                   out=out, progress=False, shifts=(), eval_episodes=episodes, **spec)
        net = ImitationNet(2, 1, cell, spec["rank"], spec["sparsity"], obs_mean=np.zeros(2),
                           obs_std=np.ones(2))
        net.load_state_dict(torch.load(os.path.join(out, "model.pt")))
        nets[name] = net
        trained[name] = {**spec, "val_loss": test["val_loss"]}
    rows = []
    for shift in ("noise", "dropout", "offset"):
        for p in severities:
            cond = "none" if p == 0 else shift
            kw = dict(episodes=episodes, seed=EVAL_SEED, shift=cond, p=float(p), obs_std=obs_std)
            expert = _summary(evaluate_policy("pendulum", PendulumExpert(), observe="full", **kw)["returns"])
            zero = _summary(evaluate_policy("pendulum", ZeroPolicy(1), observe="full", **kw)["returns"])
            row = {"shift": shift, "p": float(p), "expert": expert, "zero": zero, "policies": {}}
            for name, net in nets.items():
                ev = evaluate_policy("pendulum", RecurrentPolicy(net, action_scale("pendulum")), **kw)
                norm = [normalised_return("pendulum", r, expert["mean"], zero["mean"]) for r in ev["returns"]]
                row["policies"][name] = {**_summary(ev["returns"]), "normalised": float(np.mean(norm)),
                                         "normalised_se": _summary(norm)["se"]}
            rows.append(row)
            print(f"{shift:8s} p={p:.2f} expert {expert['mean']:8.1f} zero {zero['mean']:8.1f} "
                  + " ".join(f"{n}: {v['normalised']:.3f}" for n, v in row["policies"].items()), flush=True)
    return {"cell": cell, "epochs": epochs, "lr": lr, "seed": seed, "episodes": episodes,
            "eval_seed": EVAL_SEED, "policies": trained, "rows": rows}


def main(argv=None):
    """``python -m rnnlab.experiments.imitation_severity --out FILE``: the sweep, printed and saved."""
    parser = argparse.ArgumentParser(prog="python -m rnnlab.experiments.imitation_severity",
                                     description=main.__doc__)
    parser.add_argument("--out", required=True, help="write the JSON here")
    parser.add_argument("--episodes", type=int, default=10, help="evaluation episodes per point (default 10)")
    parser.add_argument("--epochs", type=int, default=60, help="training epochs (default 60)")
    parser.add_argument("--workdir", default=None, help="rollouts and checkpoints (default: a temporary folder)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    args = parser.parse_args(argv)
    if args.episodes < 2:
        parser.error(f"--episodes {args.episodes}: needs at least 2 (the standard error needs two returns)")
    if args.epochs < 1:
        parser.error(f"--epochs {args.epochs}: needs at least 1")
    if args.threads < 1:
        parser.error(f"--threads {args.threads}: needs at least 1")
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    workdir = args.workdir or tempfile.mkdtemp(prefix="rnnlab-severity-")
    result = sweep(workdir, episodes=args.episodes, epochs=args.epochs)
    result["seconds"] = round(time.perf_counter() - start, 1)
    result["torch"], result["machine"] = torch.__version__, platform.machine()
    result["command"] = (f"python -m rnnlab.experiments.imitation_severity --episodes {args.episodes} "
                         f"--epochs {args.epochs} --threads {args.threads} --out {args.out}")
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(f"{len(result['rows'])} rows in {result['seconds']:.0f} s -> {args.out}")


if __name__ == "__main__":
    main()
