"""Closed-loop control: environments, experts, imitation, shifts (the low-rank chapter, part 2).

The seed's central experiment (appendix A.9-A.11): recurrent policies learned offline by
imitating an expert, then run closed loop, in distribution and under input shifts.

- :mod:`rnnlab.control.envs`: ``make_env("pendulum" | "halfcheetah", shift=..., ...)``;
  Pendulum-v1 with the angular velocity hidden (the policy needs memory) and
  HalfCheetah-v5 (MuJoCo); :class:`~rnnlab.control.envs.ShiftWrapper` (noise,
  dropout, offset, each applied with probability p per step, A.11.4).
- :mod:`rnnlab.control.experts`: the analytic Pendulum expert (energy swing-up,
  then LQR), the HalfCheetah expert trained with stable-baselines3 PPO and
  exported weights-only (``.npz``, no pickle), loaded without stable-baselines3.
- :mod:`rnnlab.control.rollouts`: expert rollouts recorded compactly; closed-loop
  evaluation of any policy, normalised by the expert under the same condition.
- :mod:`rnnlab.control.imitation`: the paper's MuJoCo network (FC 256 ReLU,
  FC 256 ReLU, recurrent 64, FC tanh) around the four cells of part 1.

gymnasium (the Pendulum) is a dependency of rnnlab. MuJoCo (HalfCheetah) and
stable-baselines3 (training the expert only) are an optional extra:
``pip install "rnnlab[control]"``; without them a clear ImportError says so.
"""
import importlib

__all__ = ["require"]

EXTRA_HINT = 'pip install "rnnlab[control]"   (gymnasium[mujoco] and stable-baselines3)'


def require(module, purpose):
    """Import ``module`` or raise ImportError saying what to install for ``purpose``."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(f"{purpose} needs the package {module.split('.')[0]!r}, which is not installed: "
                          f"{EXTRA_HINT}") from e
