"""Schematics of the contraction chapter's first two lessons (``book/contraction``).

* :func:`metric_ellipse` (the chapter's ``index.md``): one displacement of
  the two-unit example ``W = [[0, -0.2], [4, 0]]`` (both units linear, ``D = I``)
  flowing for a short time, measured by a circle (the Euclidean norm) and by
  an ellipse (the metric ``diag(1, 0.05)`` that the page derives): the
  displacement leaves the circle and stays inside the ellipse;
* :func:`theorem_venn` (``04_full_metrics``): which of Theorems 1, 2 and 5
  certifies which of the page's example matrices, as a Venn diagram, each
  matrix placed by the package's own certificates;
* :func:`theorem4_rescaling` (``03_diagonal_metrics``): Theorem 4's change of units
  ``Gamma W Gamma^-1`` on the page's lower-triangular example, with the ``eps``
  that ``certify_theorem4`` picks.
"""
from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Ellipse

from .contraction import _SUP, SLOPE_W, _num

__all__ = ["DERIVED_METRIC", "VENN_MATRICES", "VENN_CIRCLES", "THEOREM4_W", "metric_ellipse",
           "theorem_venn", "venn_layout", "in_circles", "theorem4_rescaling", "FLOW_EXAMPLES",
           "flowchart_route", "theorem_flowchart", "two_forms"]

DERIVED_METRIC = (1.0, 0.05)
"""The diagonal metric ``diag(1, p)`` that ``01_contraction_in_one_page``
derives for ``SLOPE_W`` at ``D = I``: ``p = 0.2 / 4`` cancels the cross terms."""

VENN_MATRICES = {
    "chain": ((0.0, 0.3, 0.0), (2.0, 0.0, 0.1), (0.0, -3.0, 0.0)),
    "self-inhibition": ((-2.0, 0.8), (0.9, 0.0)),
    "0.9 × rotation by 45°": ((0.9 * np.cos(np.pi / 4), -0.9 * np.sin(np.pi / 4)),
                              (0.9 * np.sin(np.pi / 4), 0.9 * np.cos(np.pi / 4))),
    "3 × rotation by 90°": ((0.0, -3.0), (3.0, 0.0)),
    "symmetric, λmax = 2": ((2.0, 0.0), (0.0, -1.0)),
    "symmetric [[−9, 2.5], [2.5, 0]]": ((-9.0, 2.5), (2.5, 0.0)),
}
"""Example matrices of ``03_diagonal_metrics`` (its Theorem-1 chain, the diagonal
rule's matrix, the rotation by 45 degrees, Theorem 6's rotation, a symmetric
matrix past Theorem 2's bound, and the symmetric matrix with a strong negative
self-weight that ``05_counterexamples`` studies). Exercise ``ex-ctr-cover``'s three matrices are
left out: the student places them."""

_INK = "#333333"
_BLUE, _GREEN, _ORANGE, _RED = "#1f4e79", "#2f7a2f", "#c25e00", "#b22222"


def metric_ellipse(t_end=0.3):
    """A displacement under ``d/dt dx = (-I + W) dx``: the circle and the ellipse through it."""
    from scipy.linalg import expm

    J = -np.eye(2) + np.array(SLOPE_W)
    P = np.diag(DERIVED_METRIC)
    d0 = np.array([1.0, 1.0]) / np.sqrt(2)  # the direction that the Euclidean norm sees grow
    ts = np.linspace(0.0, t_end, 61)
    path = np.array([expm(J * t) @ d0 for t in ts])
    d1 = path[-1]
    r0, r1 = np.linalg.norm(d0), np.linalg.norm(d1)
    m0, m1 = np.sqrt(d0 @ P @ d0), np.sqrt(d1 @ P @ d1)
    fig = Figure(figsize=(8.4, 3.9))
    panels = (fig.add_axes((0.05, 0.12, 0.4, 0.72)), fig.add_axes((0.56, 0.12, 0.4, 0.72)))
    titles = (f"Euclidean norm: |δx| grows, {r0:.2f} → {r1:.2f}",
              f"metric diag(1, {DERIVED_METRIC[1]:g}): ‖δx‖ shrinks, {m0:.2f} → {m1:.2f}")
    for k, (ax, title) in enumerate(zip(panels, titles)):
        if k == 0:
            ax.add_patch(Ellipse((0, 0), 2 * r0, 2 * r0, fill=False, color=_BLUE, lw=1.4))
        else:
            a, b = m0 / np.sqrt(P[0, 0]), m0 / np.sqrt(P[1, 1])
            ax.add_patch(Ellipse((0, 0), 2 * a, 2 * b, fill=False, color=_GREEN, lw=1.4))
        ax.plot(path[:, 0], path[:, 1], color=_ORANGE, lw=1.6)
        ax.annotate("", xy=d0, xytext=(0, 0),
                    arrowprops=dict(arrowstyle="->", color=_INK, lw=1.2))
        ax.annotate("", xy=d1, xytext=(0, 0),
                    arrowprops=dict(arrowstyle="->", color=_ORANGE, lw=1.2))
        ax.text(d0[0] + 0.05, d0[1] - 0.2, "δx(0)", fontsize=8, color=_INK)
        ax.text(d1[0] + 0.06, d1[1], f"δx({t_end:g})", fontsize=8, color=_ORANGE)
        ax.set_aspect("equal")
        ax.set_xlim(-1.6, 1.6)
        ax.set_ylim(-3.4, 3.4) if k else ax.set_ylim(-1.6, 1.6)
        ax.axhline(0, color="#bbbbbb", lw=0.6)
        ax.axvline(0, color="#bbbbbb", lw=0.6)
        ax.set_xlabel("δx₁")
        ax.set_ylabel("δx₂")
        ax.set_title(title, fontsize=8.5)
    fig.text(0.5, 0.95, "the same displacement, flowing under J = −I + W (both units linear), "
             f"t from 0 to {t_end:g}", ha="center", fontsize=8.5)
    return fig


def _coverage():
    """``{name: set of theorems (1, 2, 5) that certify it}`` from the package's certificates."""
    import rnnlab.theory as th  # imported late: the figures registry stays cheap to import

    cover = {}
    for name, rows in VENN_MATRICES.items():
        W = np.array(rows, dtype=float)
        hits = set()
        if th.certify_theorem1(W).holds:
            hits.add(1)
        if np.allclose(W, W.T) and th.certify_theorem2(W).holds:
            hits.add(2)
        if th.certify_theorem5(W).holds:
            hits.add(5)
        cover[name] = hits
    return cover


VENN_CIRCLES = {  # theorem: (centre, radius) of its circle in theorem_venn
    1: ((-0.7, 0.35), 1.55), 2: ((0.7, 0.35), 1.55), 5: ((0.0, -0.85), 1.55),
}

_REGION = {  # the first dot of each region (inside exactly its circles) and the label side
    frozenset({1}): ((-1.35, 0.75), "left"), frozenset({2}): ((1.6, 0.75), "right"),
    frozenset({5}): ((-0.45, -1.75), "right"), frozenset({1, 2}): ((0.0, 1.25), "right"),
    frozenset({1, 5}): ((-0.75, -0.5), "left"), frozenset({2, 5}): ((0.75, -0.5), "right"),
    frozenset({1, 2, 5}): ((0.0, 0.0), "right"), frozenset(): ((2.55, -1.5), "right"),
}


def venn_layout():
    """``[(name, theorems that certify it, (x, y) of its dot, label side)]`` for theorem_venn.

    Each dot lies inside exactly the circles of ``VENN_CIRCLES`` whose theorems
    certify the matrix (the package's certificates, ``_coverage``); the test
    of the figure checks this.
    """
    by_region = {}
    for name, hits in _coverage().items():
        by_region.setdefault(frozenset(hits), []).append(name)
    layout = []
    for region, names in sorted(by_region.items(), key=lambda kv: sorted(kv[0])):
        (x, y), side = _REGION[region]
        for k, name in enumerate(sorted(names)):
            layout.append((name, set(region), (x, round(y - 0.3 * k, 2)), side))
    return layout


def in_circles(xy):
    """The theorems whose circle in ``theorem_venn`` contains the point ``xy``."""
    return {t for t, ((cx, cy), r) in VENN_CIRCLES.items()
            if (xy[0] - cx) ** 2 + (xy[1] - cy) ** 2 < r ** 2}


def theorem_venn():
    """Theorems 1, 2 and 5 as three circles; each example matrix in the region that certifies it."""
    fig = Figure(figsize=(7.6, 5.4))
    ax = fig.add_axes((0.01, 0.01, 0.98, 0.92))
    styles = {1: (_BLUE, "magnitude test, Theorem 1\n(|W|, diagonal metric)", (-2.9, 2.05)),
              2: (_GREEN, "symmetric test, Theorem 2\n(symmetric W)", (1.75, 2.05)),
              5: (_ORANGE, "scaled-norm test, Theorem 5\n(diagonal P, LMI)", (-2.9, -2.2))}
    for t, (centre, radius) in VENN_CIRCLES.items():
        colour, label, at = styles[t]
        ax.add_patch(Ellipse(centre, 2 * radius, 2 * radius, fill=True, alpha=0.12, color=colour))
        ax.add_patch(Ellipse(centre, 2 * radius, 2 * radius, fill=False, color=colour, lw=1.4))
        ax.text(*at, label, fontsize=8.5, color=colour, ha="left", va="center")
    for name, _, (x, y), side in venn_layout():
        ax.plot([x], [y], "o", ms=3.5, color=_INK)
        dx = 0.08 if side == "right" else -0.08
        ax.text(x + dx, y, name, fontsize=7.5, va="center", color=_INK,
                ha="left" if side == "right" else "right")
    ax.text(2.5, -1.1, "none of the three", fontsize=8, color=_RED, ha="left")
    ax.set_xlim(-3.0, 3.9)
    ax.set_ylim(-2.6, 2.4)
    ax.set_aspect("equal")
    ax.axis("off")
    fig.text(0.5, 0.96, "which test certifies which example matrix of the page (g = 1)",
             ha="center", fontsize=9)
    return fig


THEOREM4_W = ((0.5, 0.0, 0.0), (4.0, -2.0, 0.0), (-3.0, 5.0, 0.8))
"""The lower-triangular example of Theorem 4 in ``03_diagonal_metrics``."""


def _matrix_panel(ax, M, title, fmt, big=None):
    n = len(M)
    big = big or max(abs(v) for row in M for v in row) or 1.0
    for i in range(n):
        for j in range(n):
            v = M[i][j]
            shade = round(min(abs(v) / big, 1.0), 2)  # rounded: the same bytes on every CPU
            colour = _BLUE if i == j else (_ORANGE if i > j else "#999999")
            ax.add_patch(Ellipse((j, -i), 0.92, 0.92, color=colour, alpha=0.08 + 0.5 * shade))
            ax.text(j, -i, fmt(v, i, j), ha="center", va="center", fontsize=8.5, color=_INK)
    ax.set_xlim(-0.6, n - 0.4)
    ax.set_ylim(-n + 0.4, 0.6)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title, fontsize=9)


def theorem4_rescaling():
    """Theorem 4's change of units: W and Gamma W Gamma^-1, Gamma = diag(eps, eps^2, eps^3)."""
    import rnnlab.theory as th  # imported late: the figures registry stays cheap to import

    W = np.array(THEOREM4_W)
    eps = th.certify_theorem4(W).details["eps"]
    n = len(W)
    G = np.array([eps ** (i + 1) for i in range(n)])
    R = G[:, None] * W / G[None, :]
    fig = Figure(figsize=(8.2, 3.3))
    ax1, ax2 = fig.add_axes((0.02, 0.05, 0.4, 0.78)), fig.add_axes((0.58, 0.05, 0.4, 0.78))

    def plain(v, i, j):
        return _num(v)

    def scaled(v, i, j):
        if i == j:
            return _num(v)
        if v == 0:
            return "0"
        return f"{_num(W[i, j])}·ε{str(i - j).translate(_SUP) if i - j > 1 else ''}\n≈ {v:.2g}".replace("-", "−")

    _matrix_panel(ax1, W.tolist(), "W: strong forward weights below the diagonal", plain)
    _matrix_panel(ax2, R.tolist(), f"Γ W Γ⁻¹, Γ = diag(ε, ε², ε³), ε ≈ {eps:.2g}", scaled,
                  big=float(np.abs(W).max()))  # W's scale: an unchanged entry keeps its shade
    fig.text(0.5, 0.5, "rescale\nunit i by εⁱ\n⟶", ha="center", va="center", fontsize=9, color=_INK)
    fig.text(0.5, 0.94, "the diagonal (the self-weights) is unchanged; every forward weight shrinks by "
             "a power of ε, until the leak beats what is left", ha="center", fontsize=8.5)
    return fig


FLOW_EXAMPLES = {
    "the chain": VENN_MATRICES["chain"],
    "self-inhibition [[−2, 0.8], [0.9, 0]]": VENN_MATRICES["self-inhibition"],
    "the triangular W of Theorem 4": THEOREM4_W,
    "the loop [[0, 3], [0.1, 0]]": ((0.0, 3.0), (0.1, 0.0)),
    "[[−9, 2.5], [2.5, 0]]": VENN_MATRICES["symmetric [[−9, 2.5], [2.5, 0]]"],
    "symmetric, λmax = 2": VENN_MATRICES["symmetric, λmax = 2"],
    "−P1 Q P2 [[−2, −0.75], [−3, −2]]": ((-2.0, -0.75), (-3.0, -2.0)),
    "symmetric, singular [[0.4, 0.4], [0.4, 0.4]]": ((0.4, 0.4), (0.4, 0.4)),
    "0.9 × rotation by 45°": VENN_MATRICES["0.9 × rotation by 45°"],
    "3 × rotation by 90°": VENN_MATRICES["3 × rotation by 90°"],
}
"""Example matrices of ``03_diagonal_metrics`` and ``04_full_metrics`` routed by :func:`theorem_flowchart` (``g = 1``); the
``-P1 Q P2`` example has ``Q = [[2, 1.5], [1.5, 2]]``, ``P1 = diag(1, 2)``,
``P2 = diag(1, 0.5)``; the singular symmetric
matrix passes Theorem 2's eigenvalue test but has no x-form metric from it, so it goes on down."""


def flowchart_route(W, g=1.0):
    """The leaf of :func:`theorem_flowchart` that ``W`` reaches: 2, 1, 3, 5, 0 (none of them
    holds; a constant metric may still exist), or -2 (symmetric with g lambda_max >= 1: at the
    slopes D = g I the Jacobian -I + g W has the eigenvalue g lambda_max - 1 >= 0, so no
    constant metric contracts).

    The questions in order: symmetric (then no metric at all if g lambda_max >= 1; Theorem 2
    if W is also invertible; a singular W goes on down), Theorem 1's
    eigenvalue, Theorem 3's LMI, Theorem 5's LMI; each decided by the package's certificate.
    """
    import rnnlab.theory as th  # imported late: the figures registry stays cheap to import

    W = np.asarray(W, dtype=float)
    if np.allclose(W, W.T):
        if g * np.linalg.eigvalsh(W).max() >= 1:
            return -2
        if abs(np.linalg.det(W)) > 1e-12 and th.certify_theorem2(W, g=g, form="x").holds:
            return 2
    if th.certify_theorem1(W, g=g).holds:
        return 1
    if th.certify_theorem3(W).holds:  # Theorem 3 holds for every g
        return 3
    return 5 if th.certify_theorem5(W, g=g).holds else 0


def _wrapped(names, width=60):
    lines, line = [], "examples: "
    for k, name in enumerate(names):
        piece = name + ("; " if k + 1 < len(names) else "")
        if len(line) + len(piece) > width and line.strip():
            lines.append(line.rstrip())
            line = ""
        line += piece
    return "\n".join(lines + [line.rstrip()])


def theorem_flowchart():
    """Which theorem to try first, from the structure of W; the page's examples at the leaf they reach."""
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    leaves = {}
    for name, rows in FLOW_EXAMPLES.items():
        leaves.setdefault(flowchart_route(rows), []).append(name)
    questions = [
        (2, "is W symmetric?",
         "g λmax(W) < 1 and W invertible: symmetric test (Theorem 2)\n(W singular: go on down)"),
        (1, "is g|W| − I Hurwitz?\n(|W|, negative self-weights set to 0)",
         "magnitude test (Theorem 1): a diagonal metric, one eigenvalue\n"
         "(the triangular test, Theorem 4, is its special case)"),
        (3, "is W T symmetric negative definite\nfor a positive diagonal T?",
         "damping test (Theorem 3): rate 1\nan LMI in T"),
        (5, "is g ‖P½ W P⁻½‖ < 1 for a positive\ndiagonal P? (signs that cancel)",
         "scaled-norm test (Theorem 5): a diagonal metric\nan LMI in P"),
    ]
    fig = Figure(figsize=(9.6, 6.4))
    ax = fig.add_axes((0.0, 0.0, 1.0, 0.94))
    ax.set_xlim(0, 10)
    ax.set_ylim(-0.9, 9.2)
    ax.axis("off")

    def box(x, y, w, h, text, colour, fill, size=8.5):
        ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.08",
                                    fc=fill, ec=colour, lw=1.2))
        ax.text(x, y, text, ha="center", va="center", fontsize=size, color=_INK)

    def arrow(a, b, label=None, at=None):
        ax.add_patch(FancyArrowPatch(a, b, arrowstyle="-|>", mutation_scale=10, color=_INK, lw=1.0))
        if label:
            ax.text(*at, label, fontsize=8, color=_INK, ha="left", va="center")

    box(2.3, 8.7, 3.8, 0.55, "W (n × n), slopes 0 ≤ φ′ ≤ g", _INK, "white")
    ys = [7.4, 5.6, 3.8, 2.0]
    arrow((2.3, 8.42), (2.3, ys[0] + 0.5))
    for k, ((theorem, question, leaf), y) in enumerate(zip(questions, ys)):
        box(2.3, y, 4.2, 0.95, question, _BLUE, "#dbe8f5")
        examples = leaves.get(theorem, [])
        text = leaf + ("\n" + _wrapped(examples) if examples else "")
        if theorem == 2:  # symmetric: Theorem 2, or no contracting constant metric
            box(7.35, y + 0.5, 4.9, 0.72, text, _GREEN, "#e2f2e2", size=7.8)
            bad = leaves.get(-2, [])
            box(7.35, y - 0.45, 4.9, 0.72,
                "g λmax(W) ≥ 1: no contracting constant metric\n(at D = g I, −I + g W is not Hurwitz)"
                + ("\n" + _wrapped(bad) if bad else ""), _RED, "#fbe3e3", size=7.8)
            arrow((4.45, y + 0.1), (4.85, y + 0.5), "yes", (4.42, y + 0.45))
            arrow((4.45, y - 0.1), (4.85, y - 0.45), "yes", (4.42, y - 0.4))
        else:
            box(7.35, y, 4.9, 1.4, text, _GREEN, "#e2f2e2", size=7.8)
            arrow((4.45, y), (4.85, y), "yes", (4.5, y + 0.18))
        nxt = ys[k + 1] + 0.5 if k + 1 < len(ys) else 0.75
        arrow((2.3, y - 0.5), (2.3, nxt), "no", (2.4, y - 0.75))
    none = leaves.get(0, [])
    box(4.6, 0.25, 8.6, 1.0,
        "no test on W alone: search a constant metric (an SDP), or use the moving-metric test "
        "(Theorem 6) along one trajectory"
        + ("\n" + _wrapped(none, width=90) if none else ""), _RED, "#fbe3e3", size=8)
    fig.text(0.5, 0.965, "which test to try first: cheap eigenvalue tests before LMIs (g = 1 for the examples)",
             ha="center", fontsize=9)
    return fig


def two_forms():
    """The x form and the y form of the RNN as block diagrams, linked by ``x = W y + b``."""
    from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch

    fig = Figure(figsize=(8.6, 4.0))
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 4.8)
    ax.axis("off")

    def block(x, y, text, colour=_BLUE, w=0.9):
        ax.add_patch(FancyBboxPatch((x - w / 2, y - 0.28), w, 0.56, boxstyle="round,pad=0.05",
                                    fc="white", ec=colour, lw=1.3))
        ax.text(x, y, text, ha="center", va="center", fontsize=10, color=_INK)

    def plus(x, y):
        ax.add_patch(Circle((x, y), 0.2, fc="white", ec=_INK, lw=1.1))
        ax.text(x, y, "+", ha="center", va="center", fontsize=11, color=_INK)

    def arrow(points, label=None, at=None, colour=_INK):
        for a, b in zip(points[:-1], points[1:-1]):
            ax.plot([a[0], b[0]], [a[1], b[1]], color=colour, lw=1.1)
        ax.add_patch(FancyArrowPatch(points[-2], points[-1], arrowstyle="-|>", mutation_scale=10,
                                     color=colour, lw=1.1, shrinkA=0, shrinkB=0))
        if label:
            ax.text(*at, label, fontsize=9, color=colour, ha="center", va="center")

    def row(y, items, state, title):
        ax.text(0.15, y + 1.0, title, fontsize=9.5, color=_INK, ha="left", va="center")
        xs, half = [2.2, 3.7, 5.2], {"block": 0.45, "plus": 0.2}
        edges = [0.9]
        for x, (kind, text) in zip(xs, items):
            arrow([(edges[-1], y), (x - half[kind], y)])
            if kind == "block":
                block(x, y, text)
            else:
                plus(x, y)
                arrow([(x, y + 0.55), (x, y + 0.2)], text, (x, y + 0.68))
            edges.append(x + half[kind])
        arrow([(edges[-1], y), (6.05, y)])
        block(6.8, y, "leak and\nintegrate", _GREEN, w=1.5)
        arrow([(7.55, y), (8.6, y)])
        ax.text(8.9, y, state, fontsize=11, color=_INK, ha="center", va="center")
        arrow([(8.9, y - 0.25), (8.9, y - 0.6), (0.9, y - 0.6), (0.9, y - 0.05)])
        ax.text(0.72, y, state, fontsize=11, color=_INK, ha="right", va="center")

    row(3.5, [("block", "φ"), ("block", "W"), ("plus", "u")], "x",
        "x form:  τ dx/dt = −x + W φ(x) + u   (state: the units' inputs)")
    row(1.0, [("block", "W"), ("plus", "b"), ("block", "φ")], "y",
        "y form:  τ dy/dt = −y + φ(W y + b)   (state: the units' outputs)")
    ax.text(9.3, 2.25, "x = W y + b", fontsize=9.5, color=_ORANGE, ha="center", va="center",
            bbox=dict(boxstyle="round,pad=0.2", fc="white", ec=_ORANGE))
    ax.plot([9.3, 9.3], [1.25, 2.0], color=_ORANGE, lw=1.0, ls="--")
    ax.plot([9.3, 9.3], [2.5, 3.25], color=_ORANGE, lw=1.0, ls="--")
    return fig
