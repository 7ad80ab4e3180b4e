"""The pendulum of lowrank/04: a sketch of the rod and a phase portrait of the expert's episodes.

``pendulum_sketch(ax)`` draws the rod at an angle θ from upright, the motor's torque u at the
pivot and gravity at the bob. ``phase_portrait(ax, episodes, a, catch_angle)`` draws episodes in
the (θ, θ̇) plane over the level sets of the energy ``E = θ̇²/2 + a (cos θ − 1)`` (0 upright at
rest), with the band ``|θ| < catch_angle`` where the expert hands over to LQR. Both draw on a
matplotlib ``Axes`` the page passes in, from the page's own numbers.
"""
from __future__ import annotations

import numpy as np
from matplotlib.patches import Arc, FancyArrowPatch

__all__ = ["pendulum_sketch", "phase_portrait"]

INK = "#222222"


def _arrow(ax, start, end, color, **kw):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=14, lw=1.8,
                                 color=color, **kw))


def pendulum_sketch(ax, theta=0.7):
    """The rod at ``theta`` (radians from upright, counter-clockwise), torque u and gravity."""
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set(xlim=(-1.45, 1.25), ylim=(-1.25, 1.45))
    bob = np.array([-np.sin(theta), np.cos(theta)])
    ax.plot([0, 0], [0, 1.2], ls="--", lw=1, color="0.5")
    ax.text(0.05, 1.25, r"$\theta = 0$ (upright)", fontsize=9, color="0.35")
    ax.plot([0, bob[0]], [0, bob[1]], lw=4, color=INK, solid_capstyle="round")
    ax.add_patch(Arc((0, 0), 0.9, 0.9, theta1=90, theta2=90 + np.degrees(theta), lw=1.2, color="C0"))
    mid = 0.56 * np.array([-np.sin(theta / 2), np.cos(theta / 2)])
    ax.text(*mid, r"$\theta$", color="C0", fontsize=12, ha="center", va="center")
    ax.plot(*bob, "o", ms=14, color=INK)
    ax.plot(0, 0, "o", ms=7, color="white", mec=INK, mew=1.5, zorder=5)
    _arrow(ax, (-0.3, -0.17), (0.3, -0.17), "C3", connectionstyle="arc3,rad=0.7")
    ax.text(0.38, -0.38, "torque $u$ > 0\n(motor, $|u| \\leq 2$)", color="C3", fontsize=9)
    _arrow(ax, bob, bob + np.array([0, -0.65]), "C2")
    ax.text(bob[0] - 0.08, bob[1] - 0.55, "gravity", color="C2", fontsize=9, ha="right")
    ax.text(-1.4, -1.2, r"the policy sees $\cos\theta, \sin\theta$;" "\n"
            r"not the velocity $\dot\theta$", fontsize=9)
    ax.set_title("Pendulum-v1")
    return ax


def phase_portrait(ax, episodes, a, catch_angle):
    """``episodes``: a list of ``(theta, thetadot)`` arrays, drawn over the energy's level sets."""
    th, thd = np.meshgrid(np.linspace(-np.pi, np.pi, 241), np.linspace(-8, 8, 241))
    energy = 0.5 * thd ** 2 + a * (np.cos(th) - 1)
    ax.contour(th, thd, energy, levels=np.linspace(-2 * a, 2 * a, 13), colors="0.8", linewidths=0.7,
               linestyles="solid")
    ax.contour(th, thd, energy, levels=[0.0], colors="0.35", linewidths=1.2, linestyles="--")
    ax.axvspan(-catch_angle, catch_angle, color="C1", alpha=0.12, lw=0)
    ax.text(0, 7.2, "LQR\n(the catch)", ha="center", va="top", fontsize=8, color="C1")
    for k, (theta, thetadot) in enumerate(episodes):
        jump = np.flatnonzero(np.abs(np.diff(theta)) > np.pi) + 1   # do not join across ±π
        for seg_t, seg_v in zip(np.split(theta, jump), np.split(thetadot, jump)):
            ax.plot(seg_t, seg_v, lw=1.3, color=f"C{k}")
        ax.plot(theta[0], thetadot[0], "o", ms=5, color=f"C{k}")
    ax.plot(0, 0, "*", ms=13, color="k", zorder=5)
    ax.set(xlim=(-np.pi, np.pi), ylim=(-8, 8), xlabel=r"angle $\theta$ (0 = upright)",
           ylabel=r"velocity $\dot\theta$",
           title="the expert in the phase plane (dashed: energy 0)")
    return ax
