"""The schematic of book/contraction/03_diagonal_metrics.

* :func:`test_venn`: the page's three tests as regions (g = 1): feed-forward
  inside magnitudes (a triangular W passes magnitudes too), magnitudes and
  small gain after rescaling overlapping, and each of the page's six example
  matrices (the cast) drawn in the region of the tests that certify it. The
  placement is computed here with the package's certificates and checked
  against the circles, so the picture cannot drift from the page's grid.
"""
from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Ellipse

__all__ = ["test_venn", "CAST", "CIRCLES", "verdicts", "in_regions"]

_BLUE, _ORANGE, _GREEN, _INK = "#2c6fbb", "#e08214", "#1b7837", "#222222"

_C, _S = np.cos(np.pi / 4), np.sin(np.pi / 4)
CAST = {  # the page's cast, entry for entry
    "loop": ((0.0, 3.0), (0.1, 0.0)),
    "inh": ((-2.0, 0.8), (0.9, 0.0)),
    "rot": ((0.9 * _C, -0.9 * _S), (0.9 * _S, 0.9 * _C)),
    "skew": ((0.0, 0.55, 0.55), (-0.55, 0.0, 0.55), (-0.55, -0.55, 0.0)),
    "chain": ((0.0, 0.3, 0.0), (2.0, 0.0, 0.1), (0.0, -3.0, 0.0)),
    "tri": ((0.5, 0.0, 0.0), (4.0, -2.0, 0.0), (-3.0, 5.0, 0.8)),
}

CIRCLES = {  # test: (centre, radius)
    "magnitudes": ((-0.8, 0.0), 1.6),
    "small gain after rescaling": ((0.9, 0.0), 1.6),
    "feed-forward": ((-1.05, -0.55), 0.75),
}

_DOTS = {"loop": (0.05, 0.55), "chain": (0.05, 0.15), "inh": (-1.6, 0.75),
         "tri": (-1.25, -0.6), "rot": (1.65, 0.45), "skew": (1.65, 0.0)}


def verdicts():
    """{name: set of tests that certify it} from the package's certificates (g = 1)."""
    import rnnlab.theory as th  # imported late: the figures registry stays cheap to import

    out = {}
    for name, rows in CAST.items():
        W = np.array(rows)
        hits = set()
        if th.certify_theorem1(W).holds:
            hits.add("magnitudes")
        if th.certify_theorem5(W, optimize_rate=False).holds:
            hits.add("small gain after rescaling")
        if th.certify_theorem4(W).holds:
            hits.add("feed-forward")
        out[name] = hits
    return out


def in_regions(xy):
    """The tests whose circle contains the point ``xy``."""
    return {t for t, ((cx, cy), r) in CIRCLES.items()
            if (xy[0] - cx) ** 2 + (xy[1] - cy) ** 2 < r ** 2}


def test_venn():
    """The three tests as circles, each cast member in the region of the tests that pass it."""
    found = verdicts()
    for name, xy in _DOTS.items():
        assert in_regions(xy) == found[name], (name, in_regions(xy), found[name])
    fig = Figure(figsize=(7.6, 4.3))
    ax = fig.add_axes((0.01, 0.01, 0.98, 0.9))
    styles = {"magnitudes": (_BLUE, "magnitudes\n(one eigenvalue of |W|₀)", (-2.55, 1.85), "left"),
              "small gain after rescaling": (_ORANGE, "small gain after rescaling\n(an LMI in P)",
                                             (2.65, 1.85), "right"),
              "feed-forward": (_GREEN, "feed-forward\n(triangular W)", (-2.1, -1.75), "left")}
    for t, (centre, radius) in CIRCLES.items():
        colour, label, at, ha = styles[t]
        ax.add_patch(Ellipse(centre, 2 * radius, 2 * radius, fill=True, alpha=0.10, color=colour))
        ax.add_patch(Ellipse(centre, 2 * radius, 2 * radius, fill=False, color=colour, lw=1.5))
        ax.text(*at, label, fontsize=8.5, color=colour, ha=ha, va="center")
    for name, (x, y) in _DOTS.items():
        ax.plot([x], [y], "o", ms=4, color=_INK)
        ax.text(x + 0.08, y, f"W_{name}", fontsize=8.5, va="center", color=_INK, ha="left",
                style="italic")
    ax.text(1.55, -0.75, "only with an odd\nrow–column cycle", fontsize=7.5, color=_ORANGE,
            ha="center", va="center")
    ax.text(-1.6, 0.35, "W_inh's self-weight −2:\nno rescaling shrinks it", fontsize=7.5,
            color=_BLUE, ha="center", va="center")
    ax.set_xlim(-2.6, 2.7)
    ax.set_ylim(-1.95, 2.15)
    ax.set_aspect("equal")
    ax.axis("off")
    fig.text(0.5, 0.95, "which test certifies which network of the cast (g = 1)",
             ha="center", fontsize=9.5)
    return fig
