"""The expert's recorded rollouts where the command line and the experiments look for them.

:func:`default_rollouts` names the file of an environment's rollouts
(``runs/control/rollouts-<env>.npz``); :func:`ensure_rollouts` loads it, or
records it first (atomically) with the environment's expert. Used by
``python -m rnnlab control`` and by ``python -m rnnlab train control-imitation``
(:mod:`rnnlab.experiments.imitation`), which sits above this layer.
"""
import os

__all__ = ["ROLLOUTS", "default_rollouts", "ensure_rollouts"]

ROLLOUTS = 100
"""Episodes recorded by default (the paper's 100, A.11.1)."""


def default_rollouts(env):
    """``runs/control/rollouts-<env>.npz``, relative to the current folder."""
    return os.path.join("runs", "control", f"rollouts-{env}.npz")


def ensure_rollouts(env, path, expert_path=None, episodes=ROLLOUTS, progress=False):
    """The rollouts at ``path``, recorded first (atomically) if the file is not there."""
    from .experts import expert_for
    from .rollouts import load_rollouts, record_rollouts
    if os.path.exists(path):
        ro = load_rollouts(path)
        if ro["meta"]["env"] != env:
            raise ValueError(f"rollouts {path!r} are of {ro['meta']['env']!r}, not {env!r}")
        return ro
    return record_rollouts(env, expert_for(env, expert_path), path, episodes=episodes, progress=progress)
