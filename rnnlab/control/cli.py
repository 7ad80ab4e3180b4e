"""``python -m rnnlab control <command>``: the experts and their rollouts.

    control train-expert --out runs/expert-halfcheetah        PPO on HalfCheetah-v5 (resumable), then
                                                              expert.npz (weights only) and its evaluation
    control record --env pendulum|halfcheetah [--expert F] [--out F] [--episodes 100]
                                                              the expert's rollouts, for imitation
    control publish-expert --run runs/expert-halfcheetah --out book/lowrank/data/expert-halfcheetah
                                                              copy the exported expert and write its evaluation
                                                              and training curve beside it (.npz + .json)
    control evaluate --env ... [--expert F] [--episodes 10] [--shift noise ...]
                                                              a policy's returns (the expert by default)
"""
import argparse
import json
import os

__all__ = ["add_arguments", "main", "DESCRIPTION"]

DESCRIPTION = __doc__.split("\n\n", 1)[1]


def add_arguments(parser):
    sub = parser.add_subparsers(dest="control_command", metavar="command")
    sub.required = True
    from . import ppo_expert
    ppo_expert.add_arguments(sub.add_parser("train-expert", help="train the HalfCheetah PPO expert (resumable)",
                                            description=ppo_expert.__doc__,
                                            formatter_class=argparse.RawDescriptionHelpFormatter))
    pub = sub.add_parser("publish-expert", help="copy a trained expert and its evaluation into the book")
    pub.add_argument("--run", required=True, help="a finished train-expert run folder")
    pub.add_argument("--out", required=True, help="destination prefix (writes .npz and .json)")
    rec = sub.add_parser("record", help="record the expert's rollouts (.npz)")
    rec.add_argument("--env", choices=("pendulum", "halfcheetah"), required=True)
    rec.add_argument("--expert", default=None, help="HalfCheetah expert .npz (default the committed one)")
    rec.add_argument("--out", default=None, help="default runs/control/rollouts-<env>.npz")
    rec.add_argument("--episodes", type=int, default=100, help="default 100 (A.11.1)")
    rec.add_argument("--seed", type=int, default=0, help="episode i has seed seed + i")
    ev = sub.add_parser("evaluate", help="closed-loop returns of the expert (or another exported policy)")
    ev.add_argument("--env", choices=("pendulum", "halfcheetah"), required=True)
    ev.add_argument("--expert", default=None, help="an exported .npz policy (default the env's expert)")
    ev.add_argument("--episodes", type=int, default=10)
    ev.add_argument("--seed", type=int, default=1000)
    ev.add_argument("--shift", choices=("none", "noise", "dropout", "offset"), default="none")
    ev.add_argument("--rollouts", default=None, help="rollouts whose obs_std sets the shift's unit")
    ev.add_argument("--json", default=None, help="write the result here")


def main(args):
    from .recorded import default_rollouts, ensure_rollouts
    from .experts import expert_for
    from .rollouts import evaluate_policy
    try:
        if args.control_command == "train-expert":
            from . import ppo_expert
            return ppo_expert.main(args)
        if args.control_command == "publish-expert":
            from .ppo_expert import publish_expert
            ev = publish_expert(args.run, args.out)
            print(f"expert of {ev['steps']} steps, mean return {ev['mean_return']:.1f}: wrote {args.out}.npz, "
                  f"{args.out}.json")
            return 0
        if args.control_command == "record":
            out = args.out or default_rollouts(args.env)
            if os.path.exists(out):
                raise ValueError(f"{out} exists; remove it or give another --out")
            from .rollouts import record_rollouts
            ro = record_rollouts(args.env, expert_for(args.env, args.expert), out, episodes=args.episodes,
                                 seed=args.seed, progress=True)
            print(f"{args.episodes} {args.env} expert rollouts: mean return {ro['returns'].mean():.1f}; wrote {out}")
            return 0
        obs_std = None
        if args.shift != "none":
            obs_std = ensure_rollouts(args.env, args.rollouts or default_rollouts(args.env), args.expert)["obs_std"]
        res = evaluate_policy(args.env, expert_for(args.env, args.expert), episodes=args.episodes, seed=args.seed,
                              shift=args.shift, obs_std=obs_std, observe="full")
        print(f"{args.env} ({args.shift}): mean return {res['mean_return']:.1f} ± {res['se_return']:.1f} over "
              f"{args.episodes} episodes (seeds {args.seed}..{args.seed + args.episodes - 1})")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(res, f, indent=1)
        return 0
    except (ValueError, FileNotFoundError, ImportError) as e:
        raise SystemExit(f"control {args.control_command}: {e}") from None
