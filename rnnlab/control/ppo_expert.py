"""Train the HalfCheetah expert with stable-baselines3 PPO: resumable, with a progress bar; export it.

``python -m rnnlab control train-expert --out runs/expert-halfcheetah [--steps 1000000]``

Hyperparameters: rl-baselines3-zoo's tuned settings for HalfCheetah (``hyperparams/ppo.yml``,
``HalfCheetah-v3``; 1M steps, VecNormalize on observations and rewards, actor and critic
256-256 ReLU, log σ₀ = −2). The paper trained its expert with RLlib's PPO defaults (A.11.1);
any competent expert serves the experiment, and this one is reproducible here.

The run folder holds ``checkpoint.zip`` and ``vecnormalize.pkl`` (stable-baselines3's own
formats, for resuming only: they are pickles and never loaded by the rest of rnnlab),
``progress.json`` (steps, time, episode returns seen in training), and, when training ends,
``expert.npz`` (weights only, :class:`rnnlab.control.experts.MLPPolicy`) and
``expert-eval.json`` (deterministic returns over episodes with their seeds).
SIGTERM or Ctrl-C saves a checkpoint; the same command resumes.
"""
import json
import os
import signal
import time

import numpy as np

from .._io import atomic_path, atomic_write_json
from .._validate import check_int
from . import require

__all__ = ["ZOO_HALFCHEETAH", "train_expert", "publish_expert", "add_arguments", "main"]

ZOO_HALFCHEETAH = dict(n_steps=512, batch_size=64, gamma=0.98, learning_rate=2.0633e-05,
                       ent_coef=0.000401762, clip_range=0.1, n_epochs=20, gae_lambda=0.92, max_grad_norm=0.8,
                       vf_coef=0.58096)
"""rl-baselines3-zoo ``hyperparams/ppo.yml``, ``HalfCheetah-v3`` (tuned)."""


def train_expert(out, *, env_name="halfcheetah", steps=1_000_000, seed=0, checkpoint_every=50_000, threads=1,
                 progress=True, eval_episodes=20, max_minutes=None):
    """Train (or resume) PPO on ``env_name`` into ``out``; export and evaluate when ``steps`` are done."""
    require("stable_baselines3", "training the PPO expert")
    import torch
    import torch.nn as nn
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    from .envs import make_env
    from .experts import MLPPolicy, export_sb3_policy
    from .rollouts import evaluate_policy

    if env_name != "halfcheetah":
        raise ValueError("train-expert trains the HalfCheetah expert; the Pendulum's expert is analytic "
                         f"(rnnlab.control.experts.PendulumExpert), got env={env_name!r}")
    for arg, v in (("steps", steps), ("checkpoint_every", checkpoint_every)):
        check_int(arg, v, minimum=1, fn="train_expert")
    if threads:
        torch.set_num_threads(threads)
    os.makedirs(out, exist_ok=True)
    ckpt, norm = os.path.join(out, "checkpoint.zip"), os.path.join(out, "vecnormalize.pkl")
    prog_path = os.path.join(out, "progress.json")
    venv = DummyVecEnv([lambda: Monitor(make_env(env_name, observe="full"))])
    venv.seed(seed)
    if os.path.exists(ckpt) and os.path.exists(norm):
        venv = VecNormalize.load(norm, venv)
        model = PPO.load(ckpt, env=venv, device="cpu")
        with open(prog_path) as f:
            prog = json.load(f)
        print(f"resuming {out} at step {model.num_timesteps}")
    else:
        venv = VecNormalize(venv, norm_obs=True, norm_reward=True)
        model = PPO("MlpPolicy", venv, seed=seed, device="cpu", verbose=0,
                    policy_kwargs=dict(log_std_init=-2, ortho_init=False, activation_fn=nn.ReLU,
                                       net_arch=dict(pi=[256, 256], vf=[256, 256])), **ZOO_HALFCHEETAH)
        prog = {"config": {"env": env_name, "steps": steps, "seed": seed, "hyperparameters": ZOO_HALFCHEETAH,
                           "source": "rl-baselines3-zoo hyperparams/ppo.yml HalfCheetah-v3"},
                "episodes": [], "time_s": 0.0}
    stop = {"flag": False}
    deadline = None if max_minutes is None else time.time() + 60 * max_minutes

    def on_signal(signum, frame):
        stop["flag"] = True
    old = signal.signal(signal.SIGTERM, on_signal)

    def save():
        with atomic_path(ckpt, suffix=".zip") as tmp:  # stable-baselines3 appends .zip to a name without it
            model.save(tmp)
        with atomic_path(norm) as tmp:
            venv.save(tmp)
        atomic_write_json(prog_path, prog, indent=1)

    class Hooks(BaseCallback):
        def _on_training_start(self):
            self.t0, self.last_ckpt = time.time(), self.num_timesteps
            self.bar = None
            if progress:
                from tqdm.auto import tqdm
                self.bar = tqdm(total=steps, initial=self.num_timesteps, unit="step", desc="PPO")

        def _on_step(self):
            for info in self.locals.get("infos", []):
                if "episode" in info:
                    prog["episodes"].append([int(self.num_timesteps), float(info["episode"]["r"])])
                    if self.bar is not None:
                        recent = [r for _, r in prog["episodes"][-10:]]
                        self.bar.set_postfix(ret=f"{np.mean(recent):.0f}")
            if self.bar is not None:
                self.bar.update(1)
            if self.num_timesteps - self.last_ckpt >= checkpoint_every:
                prog["time_s"] += time.time() - self.t0
                self.t0, self.last_ckpt = time.time(), self.num_timesteps
                prog["step"] = int(self.num_timesteps)
                save()
            over = deadline is not None and time.time() > deadline
            return not (stop["flag"] or over)

        def _on_training_end(self):
            if self.bar is not None:
                self.bar.close()
            prog["time_s"] += time.time() - self.t0
            prog["step"] = int(self.num_timesteps)

    try:
        remaining = steps - model.num_timesteps
        if remaining > 0:
            model.learn(total_timesteps=remaining, callback=Hooks(), reset_num_timesteps=False)
        save()
    except KeyboardInterrupt:
        save()
        raise
    finally:
        signal.signal(signal.SIGTERM, old)
    if model.num_timesteps < steps:
        print(f"stopped at step {model.num_timesteps} of {steps}; run the same command again to resume")
        return None
    path = os.path.join(out, "expert.npz")
    export_sb3_policy(model, venv, path, meta={"env": env_name, "steps": int(model.num_timesteps),
                                               "seed": seed, "trained_by": "stable-baselines3 PPO"})
    policy = MLPPolicy.load(path)
    # the export reproduces SB3's own deterministic action on normalised observations
    obs = venv.get_original_obs()[0]
    ours = policy.act(obs)
    theirs, _ = model.predict(venv.normalize_obs(obs[None]), deterministic=True)
    if not np.allclose(ours, theirs[0], atol=1e-4):
        raise RuntimeError(f"exported policy disagrees with stable-baselines3: {ours} vs {theirs[0]}")
    ev = evaluate_policy(env_name, policy, episodes=eval_episodes, seed=10_000, observe="full")
    ev.update(steps=int(model.num_timesteps), train_time_s=prog["time_s"], command=(
        f"python -m rnnlab control train-expert --out {out} --steps {steps} --seed {seed}"))
    atomic_write_json(os.path.join(out, "expert-eval.json"), ev, indent=1)
    print(f"expert: mean return {ev['mean_return']:.1f} ± {ev['se_return']:.1f} over {eval_episodes} episodes")
    return ev


def publish_expert(run_dir, dest):
    """Copy a finished run's ``expert.npz`` to ``<dest>.npz`` and write ``<dest>.json``: its evaluation, the
    training curve (``[step, return]`` of every training episode), the configuration and the command."""
    import shutil
    with open(os.path.join(run_dir, "expert-eval.json")) as f:
        ev = json.load(f)
    with open(os.path.join(run_dir, "progress.json")) as f:
        prog = json.load(f)
    os.makedirs(os.path.dirname(os.path.abspath(dest)), exist_ok=True)
    shutil.copyfile(os.path.join(run_dir, "expert.npz"), f"{dest}.npz")
    ev.update(training_curve=prog["episodes"], config=prog["config"], train_time_s=prog["time_s"])
    atomic_write_json(f"{dest}.json", ev, indent=1)
    return ev


def add_arguments(p):
    p.add_argument("--env", default="halfcheetah", choices=["halfcheetah"])
    p.add_argument("--out", required=True, help="run folder (resumed when it holds a checkpoint)")
    p.add_argument("--steps", type=int, default=1_000_000, help="environment steps in all (default 1e6)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--checkpoint-every", type=int, default=50_000)
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    p.add_argument("--eval-episodes", type=int, default=20)
    p.add_argument("--max-minutes", type=float, default=None, help="stop (and save) after this long")
    p.add_argument("--no-progress", action="store_true")


def main(args):
    ev = train_expert(args.out, env_name=args.env, steps=args.steps, seed=args.seed,
                      checkpoint_every=args.checkpoint_every, threads=args.threads,
                      progress=not args.no_progress, eval_episodes=args.eval_episodes,
                      max_minutes=args.max_minutes)
    return 0 if ev is not None else 3
