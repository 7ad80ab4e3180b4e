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

__all__ = ["SPIRAL_ALPHA", "SPIRAL_STEPS", "trained_sizes", "euler_spiral"]

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
        ax.set_ylabel("imaginary part", fontsize=8, labelpad=1)
    fig.text(0.5, 0.965, f"dz/dt = (−1 + iω) z and its Euler map z ← (1 − α + iαω) z, α = {alpha:g}; "
             "ω: the smallest and largest ‖L_M‖ of the stored constrained runs with several modules",
             ha="center", fontsize=8.5)
    return fig
