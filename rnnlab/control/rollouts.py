"""Expert rollouts, stored compactly, and closed-loop evaluation of any policy.

- :func:`record_rollouts` runs the expert for ``episodes`` episodes (seeds ``seed``,
  ``seed + 1``, ...) observing the full state, and saves one ``.npz`` (no pickle):
  ``obs`` ``(E, T, d_full)`` and ``actions`` ``(E, T, a)`` float32, zero-padded past
  ``lengths``; ``returns``, ``seeds``; ``obs_std`` (per dimension, over all valid
  steps: the unit of the shifts); ``meta`` (JSON).
- :func:`load_rollouts` gives them back, with the observation the *policy* sees
  (:func:`policy_view`: the Pendulum's velocity dropped).
- :func:`evaluate_policy` runs a policy closed loop for ``episodes`` episodes with
  recorded seeds, in distribution or under a shift; :func:`normalised_return` puts a
  return in units of the expert's under the same condition.
"""
import json
import math
import os
import time

import numpy as np

from .._io import atomic_path
from .._validate import check_choice, check_int
from .envs import SHIFTS, make_env

__all__ = ["policy_view", "run_episode", "evaluate_policy", "record_rollouts", "load_rollouts",
           "normalised_return", "NORMALISATION"]

NORMALISATION = {"halfcheetah": "ratio", "pendulum": "affine"}
"""HalfCheetah: R / R_expert, as in the paper (returns are positive). Pendulum: returns are negative
costs, where a ratio would reward doing worse; (R − R_zero) / (R_expert − R_zero), with R_zero the
zero-torque policy's return under the same condition: 1 is the expert, 0 doing nothing."""


def policy_view(name, obs):
    """The part of a full observation (``(..., d_full)``) the policy sees."""
    obs = np.asarray(obs)
    return obs[..., :2] if name == "pendulum" else obs


def run_episode(env, policy, seed, *, record=False, max_steps=None):
    """One closed-loop episode: ``{"return", "length", "shifted"}`` (+ ``"obs"``, ``"actions"``)."""
    policy.reset()
    obs, info = env.reset(seed=int(seed))
    total, n, shifted = 0.0, 0, int(bool(info.get("shifted", False)))
    observations, actions = [], []
    while True:
        action = np.asarray(policy.act(obs), dtype=np.float32)
        if record:
            observations.append(np.asarray(obs, dtype=np.float32))
            actions.append(action)
        obs, reward, terminated, truncated, info = env.step(action)
        total += float(reward)
        n += 1
        shifted += int(bool(info.get("shifted", False)))
        if terminated or truncated or (max_steps is not None and n >= max_steps):
            break
    out = {"return": total, "length": n, "shifted": shifted}
    if record:
        out["obs"], out["actions"] = np.stack(observations), np.stack(actions)
    return out


def evaluate_policy(env_name, policy, *, episodes=10, seed=0, shift="none", p=0.1, obs_std=None,
                    observe="policy", fault_at_step=None, max_steps=None):
    """Mean return over ``episodes`` episodes (seeds ``seed + i``): a dict with ``returns``, ``seeds``,
    ``mean_return``, ``se_return`` (standard error), ``shifted_fraction`` (steps perturbed), ``seconds``."""
    check_int("episodes", episodes, minimum=1)
    check_choice("shift", shift, SHIFTS)
    t0 = time.time()
    env = make_env(env_name, shift=shift, p=p, obs_std=obs_std, observe=observe, fault_at_step=fault_at_step)
    try:
        runs = [run_episode(env, policy, seed + i, max_steps=max_steps) for i in range(episodes)]
    finally:
        env.close()
    returns = [r["return"] for r in runs]
    se = float(np.std(returns, ddof=1) / math.sqrt(len(returns))) if len(returns) > 1 else 0.0
    steps = sum(r["length"] for r in runs)
    return {"env": env_name, "shift": shift, "p": p, "episodes": episodes, "seeds": [seed + i for i in range(episodes)],
            "returns": returns, "mean_return": float(np.mean(returns)), "se_return": se,
            "shifted_fraction": sum(r["shifted"] for r in runs) / max(steps, 1), "steps": steps,
            "seconds": time.time() - t0}


def normalised_return(env_name, mean_return, expert_return, zero_return=None):
    """``mean_return`` in units of the expert's (see :data:`NORMALISATION`)."""
    if NORMALISATION[env_name] == "ratio":
        return mean_return / expert_return
    if zero_return is None:
        raise ValueError(f"{env_name}: normalising needs zero_return, the zero policy's return")
    return (mean_return - zero_return) / (expert_return - zero_return)


def record_rollouts(env_name, expert, path, *, episodes=100, seed=0, progress=False):
    """Run ``expert`` (observing the full state) for ``episodes`` episodes and save them to ``path``."""
    check_int("episodes", episodes, minimum=2)
    env = make_env(env_name, observe="full")
    t0 = time.time()
    runs = []
    it = range(episodes)
    if progress:
        from tqdm.auto import tqdm
        it = tqdm(it, desc=f"{env_name} expert rollouts")
    try:
        for i in it:
            runs.append(run_episode(env, expert, seed + i, record=True))
    finally:
        env.close()
    T = max(r["length"] for r in runs)
    d, a = runs[0]["obs"].shape[1], runs[0]["actions"].shape[1]
    obs = np.zeros((episodes, T, d), np.float32)
    actions = np.zeros((episodes, T, a), np.float32)
    for i, r in enumerate(runs):
        obs[i, : r["length"]], actions[i, : r["length"]] = r["obs"], r["actions"]
    lengths = np.array([r["length"] for r in runs], np.int32)
    valid = np.concatenate([r["obs"] for r in runs]).astype(np.float64)
    meta = {"env": env_name, "episodes": episodes, "seed": seed, "expert": type(expert).__name__,
            "seconds": time.time() - t0}
    with atomic_path(path, suffix=".npz") as tmp:
        np.savez_compressed(tmp, obs=obs, actions=actions, lengths=lengths,
                            returns=np.array([r["return"] for r in runs]), seeds=np.arange(seed, seed + episodes),
                            obs_std=valid.std(axis=0), obs_mean=valid.mean(axis=0),
                            meta=np.array(json.dumps(meta)))
    return load_rollouts(path)


def load_rollouts(path):
    """The rollouts at ``path``: a dict of arrays plus ``meta``, and ``policy_obs`` (what a policy sees)."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"no rollouts at {path!r}: record them with python -m rnnlab control record")
    with np.load(path, allow_pickle=False) as z:
        out = {k: z[k] for k in z.files if k != "meta"}
        out["meta"] = json.loads(str(z["meta"]))
    out["policy_obs"] = policy_view(out["meta"]["env"], out["obs"])
    return out
