"""Experts to imitate: the analytic Pendulum controller and an exported PPO policy for HalfCheetah.

A policy here is any object with ``reset()`` and ``act(obs) -> action`` (NumPy).

- :class:`PendulumExpert`: energy-based swing-up (Åström and Furuta 2000), then
  LQR about the upright position from ``scipy.linalg.solve_discrete_are`` on
  Pendulum-v1's own discretisation. It observes ``[cos θ, sin θ, θ̇]``.
- :class:`MLPPolicy`: a feed-forward policy held as plain arrays, loaded from a
  ``.npz`` file with ``allow_pickle=False``: the observation normalisation
  ``clip((o − mean)/sqrt(var + eps), ±clip)``, the layers, the activation, and the
  deterministic action ``clip(mean action, low, high)``. :func:`export_sb3_policy`
  writes one from a stable-baselines3 PPO model and its VecNormalize statistics;
  loading it needs neither stable-baselines3 nor pickle.
"""
import json
import os

import numpy as np

from .._io import atomic_path

__all__ = ["PENDULUM", "PendulumExpert", "pendulum_lqr_gain", "MLPPolicy", "export_sb3_policy", "ZeroPolicy",
           "EXPERT_FILES", "expert_for"]

PENDULUM = {"g": 10.0, "m": 1.0, "l": 1.0, "dt": 0.05, "max_torque": 2.0, "max_speed": 8.0}
"""Pendulum-v1's constants: θ̈ = 3g/(2l) sin θ + 3/(m l²) u, semi-implicit Euler with step dt."""


def pendulum_lqr_gain(q_theta=1.0, q_thetadot=0.1, r=0.001):
    """The discrete LQR gain ``K`` (1×2) for Pendulum-v1 linearised about θ = 0 (upright).

    The environment's step is ``θ̇' = θ̇ + (a sin θ + b u) dt``, ``θ' = θ + θ̇' dt`` with
    a = 3g/(2l), b = 3/(ml²); linearised: ``x' = A x + B u`` with
    ``A = [[1 + a dt², dt], [a dt, 1]]``, ``B = [[b dt²], [b dt]]``. The default
    weights are the environment's cost ``θ² + 0.1 θ̇² + 0.001 u²``.
    """
    import scipy.linalg
    P = PENDULUM
    a, b, dt = 3 * P["g"] / (2 * P["l"]), 3 / (P["m"] * P["l"] ** 2), P["dt"]
    A = np.array([[1 + a * dt * dt, dt], [a * dt, 1.0]])
    B = np.array([[b * dt * dt], [b * dt]])
    Q, R = np.diag([q_theta, q_thetadot]), np.array([[r]])
    S = scipy.linalg.solve_discrete_are(A, B, Q, R)
    return np.linalg.solve(R + B.T @ S @ B, B.T @ S @ A)


class PendulumExpert:
    """Swing up by pumping energy, catch with LQR (observes ``[cos θ, sin θ, θ̇]``, returns ``[u]``).

    With a = 3g/(2l) the energy ``E = θ̇²/2 + a (cos θ − 1)`` is 0 upright at rest
    and −2a hanging at rest; ``dE/dt = b θ̇ u``, so ``u = k · (−E) · θ̇`` (clipped)
    drives E to 0. Within ``catch_angle`` of upright LQR takes over.
    """

    def __init__(self, energy_gain=1.0, catch_angle=0.6):
        self.K = pendulum_lqr_gain()
        self.energy_gain, self.catch_angle = float(energy_gain), float(catch_angle)
        self.a = 3 * PENDULUM["g"] / (2 * PENDULUM["l"])

    def reset(self):
        pass

    def act(self, obs):
        obs = np.asarray(obs, dtype=np.float64)
        if obs.shape != (3,):
            raise ValueError(f"PendulumExpert observes [cos θ, sin θ, θ̇] (shape (3,)), got shape {obs.shape}; "
                             "make its environment with observe='full'")
        theta, thetadot = np.arctan2(obs[1], obs[0]), obs[2]
        if abs(theta) < self.catch_angle:
            u = -(self.K @ np.array([theta, thetadot]))[0]
        else:
            energy = 0.5 * thetadot ** 2 + self.a * (np.cos(theta) - 1.0)
            u = self.energy_gain * (-energy) * thetadot
            if abs(thetadot) < 1e-3:   # at rest at the bottom: kick
                u = PENDULUM["max_torque"]
        return np.array([np.clip(u, -PENDULUM["max_torque"], PENDULUM["max_torque"])], dtype=np.float32)


class ZeroPolicy:
    """Always the zero action: the baseline of the Pendulum's normalised return."""

    def __init__(self, action_dim):
        self.action_dim = int(action_dim)

    def reset(self):
        pass

    def act(self, obs):
        return np.zeros(self.action_dim, dtype=np.float32)


_ACTIVATIONS = {"relu": lambda x: np.maximum(x, 0.0), "tanh": np.tanh}


class MLPPolicy:
    """A deterministic feed-forward policy from a weights-only ``.npz`` (see the module's docstring)."""

    KEYS = ("obs_mean", "obs_var", "action_low", "action_high", "meta")

    def __init__(self, layers, activation, obs_mean, obs_var, clip_obs, epsilon, action_low, action_high,
                 meta=None):
        if activation not in _ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(_ACTIVATIONS)}, got {activation!r}")
        self.layers = [(np.asarray(W, np.float64), np.asarray(b, np.float64)) for W, b in layers]
        self.activation = activation
        self.obs_mean, self.obs_var = np.asarray(obs_mean, np.float64), np.asarray(obs_var, np.float64)
        self.clip_obs, self.epsilon = float(clip_obs), float(epsilon)
        self.action_low, self.action_high = np.asarray(action_low), np.asarray(action_high)
        self.meta = dict(meta or {})
        if self.layers[0][0].shape[1] != self.obs_mean.shape[0]:
            raise ValueError("MLPPolicy: the first layer's input size and obs_mean's length differ")

    def reset(self):
        pass

    def normalise(self, obs):
        z = (np.asarray(obs, np.float64) - self.obs_mean) / np.sqrt(self.obs_var + self.epsilon)
        return np.clip(z, -self.clip_obs, self.clip_obs)

    def act(self, obs):
        x = self.normalise(obs)
        f = _ACTIVATIONS[self.activation]
        for i, (W, b) in enumerate(self.layers):
            x = x @ W.T + b
            if i < len(self.layers) - 1:
                x = f(x)
        return np.clip(x, self.action_low, self.action_high).astype(np.float32)

    def save(self, path):
        """Write the policy to ``path`` (``.npz``); the layers as float32 (half the file, the same actions to
        ~1e-6), the normalisation as float64."""
        arrays = {f"W{i}": W.astype(np.float32) for i, (W, _) in enumerate(self.layers)}
        arrays.update({f"b{i}": b.astype(np.float32) for i, (_, b) in enumerate(self.layers)})
        meta = dict(self.meta, activation=self.activation, clip_obs=self.clip_obs, epsilon=self.epsilon,
                    n_layers=len(self.layers))
        with atomic_path(path, suffix=".npz") as tmp:
            np.savez(tmp, obs_mean=self.obs_mean, obs_var=self.obs_var, action_low=self.action_low,
                     action_high=self.action_high, meta=np.array(json.dumps(meta)), **arrays)

    @classmethod
    def load(cls, path):
        if not os.path.exists(path):
            raise FileNotFoundError(f"no exported policy at {path!r} (python -m rnnlab control train-expert "
                                    "writes one)")
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            layers = [(z[f"W{i}"], z[f"b{i}"]) for i in range(meta["n_layers"])]
            return cls(layers, meta["activation"], z["obs_mean"], z["obs_var"], meta["clip_obs"],
                       meta["epsilon"], z["action_low"], z["action_high"], meta=meta)


def export_sb3_policy(model, vecnormalize, path, meta=None):
    """Write a stable-baselines3 PPO ``MlpPolicy`` (deterministic actor) and its VecNormalize to ``path``.

    The actor is ``policy.mlp_extractor.policy_net`` (Linear + activation pairs)
    then ``policy.action_net``; the deterministic action is the Gaussian's mean,
    clipped to the action space, exactly what ``model.predict(obs, deterministic=True)``
    returns for a normalised observation.
    """
    import torch.nn as nn
    policy = model.policy
    linears = [m for m in policy.mlp_extractor.policy_net if isinstance(m, nn.Linear)] + [policy.action_net]
    acts = {type(m).__name__ for m in policy.mlp_extractor.policy_net if not isinstance(m, nn.Linear)}
    activation = {"ReLU": "relu", "Tanh": "tanh"}[acts.pop()] if acts else "relu"
    layers = [(m.weight.detach().cpu().double().numpy(), m.bias.detach().cpu().double().numpy())
              for m in linears]
    rms = vecnormalize.obs_rms
    space = model.action_space
    out = MLPPolicy(layers, activation, rms.mean, rms.var, vecnormalize.clip_obs, vecnormalize.epsilon,
                    space.low, space.high, meta=meta)
    out.save(path)
    return out


EXPERT_FILES = {"halfcheetah": "lowrank/data/expert-halfcheetah.npz"}
"""The committed experts, as paths under ``book/`` (read with :func:`rnnlab.bookdata.book_file`)."""


def expert_for(env, path=None):
    """The expert of ``env``: the analytic :class:`PendulumExpert` for ``"pendulum"``; for
    ``"halfcheetah"`` the :class:`MLPPolicy` at ``path``, by default the committed
    ``book/lowrank/data/expert-halfcheetah.npz``."""
    if env == "pendulum":
        if path is not None:
            raise ValueError(f"expert path: the pendulum's expert is analytic, got path={path!r}")
        return PendulumExpert()
    if env not in EXPERT_FILES:
        raise ValueError(f"env must be one of {['pendulum', *EXPERT_FILES]}, got {env!r}")
    if path is None:
        from ..bookdata import book_file
        path = book_file(EXPERT_FILES[env])
    return MLPPolicy.load(path)
