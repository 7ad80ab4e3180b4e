"""Environments for closed-loop imitation, and the input shifts of appendix A.11.4.

``make_env(name, *, shift="none", p=0.1, obs_std=None, observe="policy", max_episode_steps=None)``

- ``"pendulum"``: gymnasium's Pendulum-v1 (200 steps, torque in [-2, 2]). With
  ``observe="policy"`` the observation is ``[cos θ, sin θ]``: the angular velocity is
  hidden, so a policy must infer it from the past (it needs memory). The expert
  observes ``observe="full"``: ``[cos θ, sin θ, θ̇]``.
- ``"halfcheetah"``: gymnasium's HalfCheetah-v5 (MuJoCo, 1000 steps, 17-d
  observation, 6 torques in [-1, 1]); policy and expert observe the same vector.

The shift (:class:`ShiftWrapper`) is applied to the full observation before the
velocity is hidden, each step with probability ``p`` (A.11.4: p = 0.1):

- ``noise``: add ``N(0, (NOISE_STD · σ_i)²)`` to every dimension i;
- ``dropout``: set a random subset of the dimensions (each with probability
  ``DROPOUT_FRACTION``) to zero;
- ``offset``: add ``± OFFSET · σ_i`` to every dimension, one sign (±, equally likely)
  for the whole vector: constant across dimensions in units of σ.

σ_i is the per-dimension standard deviation of the expert's observations in
distribution (``obs_std``, recorded with the expert's rollouts). The paper gives
no magnitudes; these are ours, stated in units of σ so that they mean the same
in both environments.
"""
import gymnasium as gym
import numpy as np

from . import require

__all__ = ["ENVS", "SHIFTS", "NOISE_STD", "DROPOUT_FRACTION", "OFFSET", "make_env", "ShiftWrapper",
           "FaultWrapper", "HideVelocity", "action_scale"]

ENVS = {"pendulum": "Pendulum-v1", "halfcheetah": "HalfCheetah-v5"}
SHIFTS = ("none", "noise", "dropout", "offset")
NOISE_STD = 1.0
DROPOUT_FRACTION = 0.5
OFFSET = 1.0


def _check_env_name(name):
    if name not in ENVS:
        raise ValueError(f"env must be one of {sorted(ENVS)}, got {name!r}")


def action_scale(name):
    """The largest action magnitude: policies output tanh in [-1, 1], times this."""
    _check_env_name(name)
    return 2.0 if name == "pendulum" else 1.0


class ShiftWrapper(gym.ObservationWrapper):
    """Perturb the observation with probability ``p`` per step (see the module's docstring).

    The wrapper's random numbers come from the seed given to ``reset(seed=...)``
    (then continue from episode to episode), so an evaluation is reproducible.
    ``info["shifted"]`` says whether this step's observation was perturbed.
    """

    def __init__(self, env, kind, obs_std, p=0.1, *, noise_std=NOISE_STD, dropout_fraction=DROPOUT_FRACTION,
                 offset=OFFSET):
        super().__init__(env)
        if kind not in SHIFTS:
            raise ValueError(f"shift must be one of {SHIFTS}, got {kind!r}")
        if not (isinstance(p, (int, float)) and 0.0 <= p <= 1.0):
            raise ValueError(f"p must be a probability in [0, 1], got {p!r}")
        dim = env.observation_space.shape[0]
        if kind != "none":
            if obs_std is None:
                raise ValueError(f"shift={kind!r} needs obs_std, the expert's per-dimension observation "
                                 "standard deviation (see rnnlab.control.rollouts.load_rollouts)")
            obs_std = np.asarray(obs_std, dtype=np.float64)
            if obs_std.shape != (dim,) or not np.all(np.isfinite(obs_std)) or np.any(obs_std < 0):
                raise ValueError(f"obs_std must be {dim} finite non-negative numbers, got shape "
                                 f"{obs_std.shape}")
        self.kind, self.p, self.obs_std = kind, float(p), obs_std
        self.noise_std, self.dropout_fraction, self.offset = noise_std, dropout_fraction, offset
        self.rng = np.random.default_rng()
        self.shifted = False

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng([int(seed), 0x5EED])
        obs, info = self.env.reset(seed=seed, options=options)
        obs = self.observation(obs)
        info["shifted"] = self.shifted
        return obs, info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        obs = self.observation(obs)
        info["shifted"] = self.shifted
        return obs, reward, terminated, truncated, info

    def observation(self, obs):
        self.shifted = False
        if self.kind == "none" or self.rng.random() >= self.p:
            return obs
        self.shifted = True
        obs = np.array(obs, dtype=np.float64)
        if self.kind == "noise":
            obs = obs + self.rng.normal(size=obs.shape) * self.noise_std * self.obs_std
        elif self.kind == "dropout":
            obs = np.where(self.rng.random(obs.shape) < self.dropout_fraction, 0.0, obs)
        else:
            obs = obs + (1.0 if self.rng.random() < 0.5 else -1.0) * self.offset * self.obs_std
        return obs.astype(self.observation_space.dtype)


class HideVelocity(gym.ObservationWrapper):
    """Pendulum: keep ``[cos θ, sin θ]``, drop ``θ̇``; ``info["full_obs"]`` keeps all three."""

    def __init__(self, env):
        super().__init__(env)
        low, high = env.observation_space.low[:2], env.observation_space.high[:2]
        self.observation_space = gym.spaces.Box(low, high, dtype=env.observation_space.dtype)

    def reset(self, *, seed=None, options=None):
        obs, info = self.env.reset(seed=seed, options=options)
        info["full_obs"] = obs
        return obs[:2], info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        info["full_obs"] = obs
        return obs[:2], reward, terminated, truncated, info

    def observation(self, obs):
        return obs[:2]


class FaultWrapper(gym.Wrapper):
    """Raise ``RuntimeError`` at step ``at_step`` of the run (counted across episodes): a simulator
    that fails mid-episode, for testing that a sweep reports the trial and goes on."""

    def __init__(self, env, at_step):
        super().__init__(env)
        self.at_step, self.count = int(at_step), 0

    def step(self, action):
        self.count += 1
        if self.count >= self.at_step:
            raise RuntimeError(f"injected environment fault at step {self.count} (FaultWrapper)")
        return self.env.step(action)


def make_env(name, *, shift="none", p=0.1, obs_std=None, observe="policy", max_episode_steps=None,
             fault_at_step=None):
    """A gymnasium environment for ``name`` (see the module's docstring).

    ``obs_std``: the per-dimension standard deviation of the expert's full
    observation (needed for every shift but ``"none"``). ``fault_at_step``: raise
    at that step (tests of fault handling; None or 0: never).
    """
    _check_env_name(name)
    if observe not in ("policy", "full"):
        raise ValueError(f"observe must be 'policy' or 'full', got {observe!r}")
    if shift not in SHIFTS:
        raise ValueError(f"shift must be one of {SHIFTS}, got {shift!r}")
    if name == "halfcheetah":
        require("mujoco", "HalfCheetah-v5")
    kwargs = {} if max_episode_steps is None else {"max_episode_steps": int(max_episode_steps)}
    env = gym.make(ENVS[name], **kwargs)
    env = ShiftWrapper(env, shift, obs_std, p)
    if name == "pendulum" and observe == "policy":
        env = HideVelocity(env)
    if fault_at_step:   # None or 0: no fault
        env = FaultWrapper(env, fault_at_step)
    return env
