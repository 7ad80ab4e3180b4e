"""Schematics of ``book/contraction/08_keeping_the_certificate`` (the Euler limit of trained Combo Nets).

* :func:`euler_spiral`: the flow ``dz/dt = (-1 + i omega) z`` of a leaky unit with a rotating
  feedback, against its Euler map ``z <- (1 - alpha + i alpha omega) z``: one step drawn as a
  right triangle (the leak shrinks ``z`` to ``(1 - alpha) z``, the rotation adds
  ``i alpha omega z`` at a right angle, so ``|z|`` is multiplied by
  ``sqrt((1 - alpha)^2 + alpha^2 omega^2)``), then 64 steps at the smallest and the largest
  feedback size ``omega = ||M^1/2 L M^-1/2||`` of the committed trained constrained nets.
"""
from __future__ import annotations

import json
import pathlib

import numpy as np
from matplotlib.figure import Figure

__all__ = ["SPIRAL_ALPHA", "SPIRAL_STEPS", "trained_sizes", "euler_spiral", "trained_runs",
           "trained_runs_summary"]

SPIRAL_ALPHA = 0.1
"""The Euler step of the trained Combo Nets (``combo_net.PAPER['alpha']``)."""
SPIRAL_STEPS = 64
"""The number of Euler steps drawn: one per pixel of an 8 x 8 digit."""

_INK = "#333333"
_BLUE = "#1f4e79"
_GREEN, _GREEN_FILL = "#2f7a2f", "#e2f2e2"
_ORANGE = "#c25e00"
_RED = "#b22222"


def trained_sizes(root=None):
    """Sorted ``||M^1/2 L M^-1/2||`` after training of the committed constrained digit nets
    that have a feedback (more than one module), rounded to 1e-2."""
    root = pathlib.Path(root) if root else pathlib.Path(__file__).resolve().parents[2]
    runs = json.loads((root / "book/contraction/data/combo-digits.json").read_text())["runs"]
    return sorted(round(r["certificate_after"]["L_norm_in_metric"], 2) for r in runs.values()
                  if r["config"]["constraint"] == "on" and r["config"]["modules"] > 1)


def _modulus(alpha, omega):
    return float(np.hypot(1 - alpha, alpha * omega))


def euler_spiral(alpha=SPIRAL_ALPHA, steps=SPIRAL_STEPS, root=None):
    """One Euler step of ``dz/dt = (-1 + i omega) z`` as a right triangle, then ``steps`` steps
    of the flow and of the Euler map at the smallest and largest trained feedback sizes."""
    sizes = trained_sizes(root)
    low, high = sizes[0], sizes[-1]
    limit = np.sqrt(2 / alpha - 1)
    assert low < limit < high, (low, limit, high)
    fig = Figure(figsize=(10.0, 3.9))
    axes = [fig.add_axes((0.045 + 0.33 * k, 0.1, 0.28, 0.72)) for k in range(3)]
    circle = np.exp(1j * np.linspace(0, 2 * np.pi, 400))

    ax = axes[0]
    ax.fill(circle.real, circle.imag, color=_GREEN_FILL, zorder=0)
    ax.plot(circle.real, circle.imag, color=_INK, lw=0.8)
    ax.annotate("", (1 - alpha, 0), (1, 0),
                arrowprops=dict(arrowstyle="-|>", color=_BLUE, lw=1.2))
    ax.text(1 - alpha / 2, 0.02, "leak: −αz", color=_BLUE, fontsize=8, ha="center")
    ax.scatter([1], [0], color=_INK, s=16, zorder=4)
    ax.text(1.01, -0.035, "z = 1", fontsize=8)
    for omega, col in ((low, _GREEN), (high, _RED)):
        end = (1 - alpha, alpha * omega)
        ax.annotate("", end, (1 - alpha, 0),
                    arrowprops=dict(arrowstyle="-|>", color=col, lw=1.2))
        ax.scatter([end[0]], [end[1]], color=col, s=18, zorder=4)
        ax.text(end[0] + 0.015, end[1], f"ω = {omega:.2f}:\n|z′| = {_modulus(alpha, omega):.3f}",
                color=col, fontsize=8, ha="left", va="center")
    ax.text(1 - alpha - 0.012, 0.2, "rotation:\niαωz, at a\nright angle", color=_INK,
            fontsize=7.5, va="center", ha="right")
    ax.set_xlim(0.58, 1.12)
    ax.set_ylim(-0.1, 0.56)
    ax.set_aspect("equal")
    ax.set_title("one Euler step from z = 1:\n|z′|² = (1 − α)² + (αω)²", fontsize=9)
    ax.set_xlabel("real part", fontsize=8)
    ax.text(0.6, -0.08, "inside the unit circle: |z′| < 1", color=_GREEN, fontsize=7.5)

    t = np.linspace(0, steps * alpha, 800)
    for ax, omega in ((axes[1], low), (axes[2], high)):
        lam = -1 + 1j * omega
        flow = np.exp(lam * t)
        euler = (1 + alpha * lam) ** np.arange(steps + 1)
        reach = max(1.15, 1.1 * np.abs(euler).max())
        ax.plot(circle.real, circle.imag, color=_INK, lw=0.7, ls=":")
        ax.plot(flow.real, flow.imag, color=_BLUE, lw=1.0,
                label=f"the flow over {steps * alpha:g} time units: |z| → {abs(flow[-1]):.3f}")
        col = _GREEN if omega < limit else _RED
        ax.plot(euler.real, euler.imag, ".-", color=col, lw=0.5, ms=3.5,
                label=f"{steps} Euler steps: |z| → {abs(euler[-1]):.2f}")
        ax.scatter([1], [0], color=_INK, s=16, zorder=4)
        ax.set_xlim(-reach, reach)
        ax.set_ylim(-reach, reach)
        ax.set_aspect("equal")
        side = "below" if omega < limit else "above"
        ax.set_title(f"ω = {omega:.2f}, {side} √(2/α − 1) = {limit:.2f}:\n"
                     f"each step multiplies |z| by {_modulus(alpha, omega):.3f}", fontsize=9)
        ax.legend(fontsize=7, loc="lower left")
        ax.set_xlabel("real part", fontsize=8)
    for ax in axes:
        ax.tick_params(labelsize=7)
    fig.text(0.5, 0.965, f"dz/dt = (−1 + iω) z and its Euler map z ← (1 − α + iαω) z, α = {alpha:g}; "
             "ω: the smallest and largest feedback of the constrained nets trained on the Reproducing page",
             ha="center", fontsize=8.5)
    return fig


def _runs(root=None):
    root = pathlib.Path(root) if root else pathlib.Path(__file__).resolve().parents[2]
    data = root / "book/contraction/data"
    runs = json.loads((data / "combo-digits.json").read_text())["runs"]
    euler = json.loads((data / "combo-digits-euler.json").read_text())["runs"]
    runs = [r for r in runs.values() if r["test"]["completed"]]
    return runs, list(euler.values())


def trained_runs_summary(root=None):
    """The numbers behind :func:`trained_runs`, from the committed 150-epoch digit runs.

    Returns a dict: ``omega`` (min, max) of ``||L_M||`` after training over the constrained nets
    of 8 modules and more; ``radius`` (min, max) of the all-off step's spectral radius
    ``sqrt((1 - alpha)^2 + alpha^2 omega^2)`` for them; ``bound_after`` (min, max) of the Euler
    norm bound after training over the constrained nets with a feedback; ``cost``: for every
    (net, modules) trained with ``euler_margin``, the mean test accuracy of the paper's
    constrained runs minus that of the certified runs; ``certified_bound``: the largest Euler norm
    bound of a certified run after training.
    """
    runs, euler = _runs(root)
    on = [r for r in runs if r["config"]["constraint"] == "on"]
    omega = [r["certificate_after"]["L_norm_in_metric"] for r in on
             if r["config"]["modules"] >= 8]
    radius = [_modulus(SPIRAL_ALPHA, w) for w in omega]
    bound = [r["certificate_after"]["euler_norm_bound"] for r in on
             if r["config"]["modules"] > 1]
    cost = {}
    for net, m in sorted({(r["config"]["net"], r["config"]["modules"]) for r in euler},
                         key=lambda k: (k[0] != "sparse", k)):
        paper = [r["test"]["accuracy"] for r in on if r["config"]["blocks"] == "lower"
                 and (r["config"]["net"], r["config"]["modules"]) == (net, m)]
        cert = [r["test"]["accuracy"] for r in euler
                if (r["config"]["net"], r["config"]["modules"]) == (net, m)]
        cost[(net, m)] = float(np.mean(paper) - np.mean(cert))
    return {"omega": (min(omega), max(omega)), "radius": (min(radius), max(radius)),
            "bound_after": (min(bound), max(bound)), "cost": cost,
            "certified_bound": max(r["certificate_after"]["euler_norm_bound"]
                                   for r in euler)}


def trained_runs(root=None):
    """Two panels from the committed 150-epoch runs on the permuted digits (means over seeds;
    the per-run tables are on ``09_reproducing``). Left: the feedback's size ``||L_M||`` of
    the constrained nets before and after training, against the all-off step's limit
    ``sqrt(2/alpha - 1)``. Right: the test accuracy of the paper's constrained nets against
    the same nets trained with ``euler_margin=0.01``."""
    runs, euler = _runs(root)
    on = [r for r in runs if r["config"]["constraint"] == "on" and r["config"]["modules"] > 1]
    kinds = sorted({(r["config"]["net"], r["config"]["blocks"], r["config"]["modules"])
                    for r in on}, key=lambda k: (k[0] != "sparse", k[2], k[1] != "lower"))
    fig = Figure(figsize=(11, 3.5), layout="constrained")
    ax = fig.subplots(1, 2, width_ratios=[1.5, 1])
    x = np.arange(len(kinds))
    for when, color, dx in (("before", "C0", -0.18), ("after", "C1", 0.18)):
        means = [np.mean([r[f"certificate_{when}"]["L_norm_in_metric"] for r in on
                          if (r["config"]["net"], r["config"]["blocks"],
                              r["config"]["modules"]) == k]) for k in kinds]
        ax[0].bar(x + dx, means, width=0.34, color=color, alpha=0.7,
                  label=f"{when} training")
    limit = np.sqrt(2 / SPIRAL_ALPHA - 1)
    ax[0].axhline(limit, color=_RED, ls="--", lw=1,
                  label=f"√(2/α − 1) = {limit:.2f}: above it, the all-off step expands")
    ax[0].set_xticks(x, [f"{n} {m}" + ("\nall blocks" if b == "all" else "")
                         for n, b, m in kinds], fontsize=8)
    ax[0].set_ylim(0, 6.4)
    ax[0].set_title("the feedback's size ‖L_M‖ (paper's constraint)", fontsize=10)
    ax[0].set_xlabel("net and number of 32-unit modules")
    ax[0].legend(fontsize=7.5, loc="upper left")
    cost = trained_runs_summary(root)["cost"]
    groups = list(cost)
    xg = np.arange(len(groups))
    for k, (name, color, pick) in enumerate((
            ("paper's constraint: the flow certified", "C0",
             lambda n, m: [r for r in on if r["config"]["blocks"] == "lower"
                           and (r["config"]["net"], r["config"]["modules"]) == (n, m)]),
            ("euler_margin = 0.01: every step certified", "C2",
             lambda n, m: [r for r in euler
                           if (r["config"]["net"], r["config"]["modules"]) == (n, m)]))):
        acc = [np.mean([r["test"]["accuracy"] for r in pick(n, m)]) for n, m in groups]
        ax[1].bar(xg + (k - 0.5) * 0.36, acc, width=0.34, color=color, alpha=0.7, label=name)
    ax[1].set_xticks(xg, [f"{n} {m} x 32" for n, m in groups], fontsize=8)
    ax[1].set_ylim(0, 1.25)
    ax[1].set_yticks(np.linspace(0, 1, 6))
    ax[1].set_title("test accuracy after 150 epochs", fontsize=10)
    ax[1].legend(fontsize=7.5, loc="upper left")
    return fig
