"""The tube schematic of book/lowrank/06_closed_loop.

Behaviour cloning's T²ε argument as a picture: the expert's trajectory with a
tube of states its recorded episodes cover; the learner follows it until a
first mistake at step t, then leaves the tube and may pay the largest per-step
cost (1, scaled) at each of the T − t steps left. The page's horizon T = 200;
the curves are drawn, not simulated.
"""
from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from .drawing import INK

__all__ = ["compounding_tube"]

T = 200          # the page's episode length
FIRST_MISTAKE = 60  # the drawn learner's first mistake


def compounding_tube():
    """The expert's trajectory in its tube, a learner that leaves it after a first mistake, and the cost it may pay."""
    t = np.arange(T + 1)
    expert = np.pi * np.exp(-t / 45.0) * np.cos(t / 9.0)  # a swing that settles
    width = 0.35
    drift = np.clip(t - FIRST_MISTAKE, 0, None)
    learner = expert + 0.02 * np.sin(t / 5.0) + 0.006 * drift ** 1.5
    learner = (learner + np.pi) % (2 * np.pi) - np.pi  # wraps at ±π: spinning
    fig = Figure(figsize=(9.5, 3.2))
    ax, bx = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.6, 1]})
    ax.fill_between(t, expert - width, expert + width, color="#dbe8f5", lw=0,
                    label="the tube: states the expert's episodes cover")
    ax.plot(t, expert, color="#1f4e79", lw=2, label="expert")
    jumps = np.flatnonzero(np.abs(np.diff(learner)) > np.pi)
    segments = np.split(np.arange(T + 1), jumps + 1)
    for k, seg in enumerate(segments):
        ax.plot(t[seg], learner[seg], color="#c25e00", lw=1.3,
                label="learner" if k == 0 else None)
    ax.plot([FIRST_MISTAKE], [learner[FIRST_MISTAKE]], "o", color="#b22222", ms=6)
    ax.annotate("first mistake, step t:\nit leaves the tube", (FIRST_MISTAKE, learner[FIRST_MISTAKE]),
                (FIRST_MISTAKE + 25, 2.3), fontsize=8, color=INK,
                arrowprops=dict(arrowstyle="->", color=INK, lw=0.8))
    ax.set(xlim=(0, T), ylim=(-np.pi - 0.3, np.pi + 0.3), xlabel="step",
           ylabel="angle (rad)", title="teacher-forced training sees only the tube")
    ax.legend(fontsize=7, loc="lower left", framealpha=1)
    cost = np.where(t >= FIRST_MISTAKE, 1.0, 0.0)
    bx.fill_between(t, 0, cost, step="post", color="#fbe6d0", lw=0)
    bx.step(t, cost, where="post", color="#c25e00")
    bx.text((FIRST_MISTAKE + T) / 2, 0.5, "up to cost 1 at each\nof the T − t steps left",
            ha="center", va="center", fontsize=8, color=INK)
    bx.set(xlim=(0, T), ylim=(0, 1.15), xlabel="step", ylabel="scaled cost, worst case",
           title="after the first mistake")
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.16, top=0.9, wspace=0.25)
    return fig
