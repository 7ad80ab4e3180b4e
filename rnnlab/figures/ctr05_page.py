"""The schematics of book/contraction/05_counterexamples.

* :func:`threshold_axis`: one axis of the rotation's strength c (ReLU), with the
  page's four thresholds, 2 (constant metrics stop), c* ≈ 2.883 (contraction
  stops), ≈ 3.02 (two-phase loops start to grow) and 4 (the kicked loop the page
  runs), each region labelled with the page's verdict. c* and 3.02 are computed
  here, from the closed forms the page derives.
* :func:`rotation_ellipses`: the unit balls of three diagonal metrics diag(1, p)
  at c = 1.5 and c = 3, and the velocity of δ on the unit circle under both
  slope patterns D₁ = diag(1, 0) and D₂ = diag(0, 1).
"""
from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, Rectangle

from .drawing import INK, canvas, num

__all__ = ["threshold_axis", "rotation_ellipses", "c_star", "c_two_phase"]

_GREEN, _YELLOW, _RED = "#d9f0d3", "#fdf1c7", "#f7d4d0"
_BLUE, _ORANGE = "#2c6fbb", "#e08214"


def c_star():
    """The c where the integral of h_c over half a turn, ln(1 + c²) − 2 − (2/c) arctan(1/c), is 0."""
    from scipy.optimize import brentq

    return brentq(lambda c: np.log(1 + c**2) - 2 - 2 * np.arctan(1 / c) / c, 2.0, 4.0, xtol=1e-12)


def c_two_phase():
    """min over t of 2 cosh t / t (at t tanh t = 1): two-phase loops with equal holds grow above it."""
    from scipy.optimize import brentq

    t = brentq(lambda t: t * np.tanh(t) - 1, 0.5, 2.0, xtol=1e-12)
    return 2 * np.cosh(t) / t


def threshold_axis():
    """The c axis of the ReLU rotation W = [[0, −c], [c, 0]], with what holds in each region."""
    cs, c2 = c_star(), c_two_phase()
    rho4 = np.exp(-2) * (7 + np.sqrt(48))  # the kicked loop at c = 4, unit holds
    fig, ax = canvas(10, 2.6, (-0.35, 4.75), (-1.0, 1.75))
    y0, h = 0.0, 0.42
    for lo, hi, fc in ((0.0, 2.0, _GREEN), (2.0, cs, _YELLOW), (cs, 4.5, _RED)):
        ax.add_patch(Rectangle((lo, y0), hi - lo, h, fc=fc, ec=INK, lw=0.8))
    ax.annotate("", xy=(4.62, y0), xytext=(0.0, y0),
                arrowprops=dict(arrowstyle="-|>", color=INK, lw=1.0, shrinkA=0, shrinkB=0))
    ax.text(4.66, y0, "$c$", ha="left", va="center", fontsize=12, color=INK)
    labels = ((1.0, "a constant metric certifies\n(the identity): contracts"),
              ((2.0 + cs) / 2, "no constant metric;\nevery schedule decays:\ncontracts in a\npolyhedral norm"),
              ((cs + 4.5) / 2, "a switching input\nseparates nearby pairs:\ndoes not contract"))
    for x, text in labels:
        ax.text(x, y0 + h + 0.12, text, ha="center", va="bottom", fontsize=8.5, color=INK,
                linespacing=1.25)
    ticks = ((0.0, "$0$", ""), (2.0, "$2$", "constant metrics stop"),
             (cs, f"$c^* \\approx {num(cs)}$", "contraction stops"),
             (c2, f"$\\approx {num(c2, 2)}$", "two-phase\nloops grow"),
             (4.0, "$4$", f"kicked loop:\n$\\rho(\\Phi) \\approx {num(rho4)}$"))
    for x, value, what in ticks:
        ax.plot([x, x], [y0 - 0.08, y0 + h], color=INK, lw=1.2)
        ha = "right" if x == cs else "left" if x == c2 else "center"
        ax.text(x, y0 - 0.14, value, ha=ha, va="top", fontsize=9.5, color=INK)
        if what:
            ax.text(x, y0 - 0.5, what, ha=ha, va="top", fontsize=7.8, color="#555555",
                    linespacing=1.2)
    ax.text(2.25, 1.62, "the ReLU rotation of strength $c$: which threshold answers which question",
            ha="center", va="center", fontsize=9.5, color=INK)
    _polygon_ball_inset(fig, ax)
    return fig


def _polygon_ball_inset(fig, ax, width=10.0, extra=1.7):
    """Beside the axis: the unit ball of max_i |l_i . δ| for l_i at 0°, 45°, 90°, 135° (a regular
    octagon), a norm that is not quadratic, and a quadratic (elliptical) ball for comparison."""
    height = fig.get_figheight()
    fig.set_size_inches(width + extra, height)
    ax.set_position((0, 0, width / (width + extra), 1))
    inset = fig.add_axes((width / (width + extra) + 0.004, 0.2, (extra - 0.1) / (width + extra), 0.52))
    angles = np.radians(22.5 + 45.0 * np.arange(9))
    r = 1 / np.cos(np.radians(22.5))  # each face at distance 1 from the origin
    inset.fill(r * np.cos(angles), r * np.sin(angles), fc=_YELLOW, ec=INK, lw=1.2)
    t = np.linspace(0, 2 * np.pi, 200)
    inset.plot(1.15 * np.cos(t), 0.75 * np.sin(t), color="#777777", ls="--", lw=0.9)
    inset.set_aspect("equal")
    inset.set_xlim(-1.25, 1.25)
    inset.set_ylim(-1.25, 1.25)
    inset.set_axis_off()
    inset.set_title("a polygonal unit ball\n(non-quadratic norm);\ndashed: a metric's ellipse",
                    fontsize=7.5, color=INK, linespacing=1.15)


def rotation_ellipses(cs=(1.5, 3.0), ps=(0.35, 1.0, 2.9), n_arrows=12):
    """Unit balls of diag(1, p) and the velocity of δ on the unit circle under D₁ and D₂."""
    fig = Figure(figsize=(8.6, 4.6))
    t = np.linspace(0, 2 * np.pi, 241)
    corners = ((np.array([1.0, 0.0]), _BLUE, "$D_1$"), (np.array([0.0, 1.0]), _ORANGE, "$D_2$"))
    for k, c in enumerate(cs):
        ax = fig.add_axes((0.03 + 0.49 * k, 0.1, 0.45, 0.7))
        W = np.array([[0.0, -c], [c, 0.0]])
        lo1, hi2 = 4 / c**2, c**2 / 4  # D1 needs p < 4/c², D2 needs p > c²/4 (lone-link rule)
        for p in ps:
            ok1, ok2 = p < lo1, p > hi2
            color = "#3a8d3a" if ok1 and ok2 else _BLUE if ok1 else _ORANGE if ok2 else "#999999"
            ls = "-" if ok1 or ok2 else ":"
            ax.plot(np.cos(t), np.sin(t) / np.sqrt(p), color=color, ls=ls,
                    lw=2.2 if ok1 and ok2 else 1.4)
            ax.text(0.06, 1 / np.sqrt(p) + 0.06, f"$p = {num(p, 2)}$", fontsize=8, color=color)
        # arrows: the velocity (-I + W D) δ at points δ of the unit circle (p = 1), for D1 and D2;
        # bold where δ leaves the circle (δ · velocity > 0), faint where it enters
        bases = np.linspace(0, 2 * np.pi, n_arrows, endpoint=False) + np.pi / n_arrows
        for s in bases:
            d = np.array([np.cos(s), np.sin(s)])
            ax.plot(*d, "o", color=INK, ms=3, zorder=4)
            for dd, color, _ in corners:
                v = (-np.eye(2) + W * dd[None, :]) @ d
                out = v @ d > 0
                ax.add_patch(FancyArrowPatch(tuple(d), tuple(d + 0.22 * v), arrowstyle="-|>",
                                             mutation_scale=10 if out else 7, lw=1.8 if out else 0.8,
                                             color=color, alpha=1.0 if out else 0.45, zorder=3))
        ax.set_aspect("equal")
        ax.set_xlim(-2.0, 2.0)
        ax.set_ylim(-2.0, 2.0)
        ax.axhline(0, color="#bbbbbb", lw=0.6)
        ax.axvline(0, color="#bbbbbb", lw=0.6)
        ax.set_xticks([])
        ax.set_yticks([])
        verdict = "the circle $p = 1$ serves both" if c < 2 else "no $p$ serves both"
        ax.set_title(f"$c = {num(c)}$: $D_1$ needs $p < {num(lo1, 2)}$, $D_2$ needs "
                     f"$p > {num(hi2, 2)}$\n{verdict}", fontsize=9)
    handles = [Rectangle((0, 0), 1, 1, color=col) for col in (_BLUE, _ORANGE, "#3a8d3a", "#999999")]
    fig.legend(handles, ["serves $D_1$ only; $D_1$'s arrows", "serves $D_2$ only; $D_2$'s arrows",
                         "serves both", "serves neither"],
               loc="lower center", ncol=4, fontsize=8.5, frameon=False)
    fig.text(0.5, 0.95, "unit balls $\\delta_1^2 + p\\,\\delta_2^2 \\leq 1$ of $\\mathrm{diag}(1, p)$; "
             "arrows: $\\dot\\delta$ at dots on the circle, bold where $\\delta$ leaves it",
             ha="center", fontsize=9.5)
    return fig
