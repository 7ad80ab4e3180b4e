"""The chunked scan's three phases, drawn for ``book/scans/01_associative_scan``.

``chunked_phases`` draws ``n`` inputs in ``p`` chunks (the page's 16 inputs in 4
chunks, as in its widget figure) as three blocks: every chunk's loop reduces it
to its total, a scan of the ``p`` totals gives every chunk its carry (the total
of all chunks before it, ``e`` for the first), and every chunk reruns its loop
from its carry. The parallel steps of each phase are counted by
:func:`rnnlab.kernels.scan_algorithms.chunked_scan`'s own record; steps that
only copy (loading, the shift of the carries, ``e``) add no depth.
"""
from __future__ import annotations

from .drawing import INK, arrow, box, canvas

__all__ = ["CHUNK_N", "CHUNK_P", "chunked_phases"]

CHUNK_N = 16
"""The number of inputs of the page's chunked example."""
CHUNK_P = 4
"""The number of chunks (processors) of the page's chunked example."""

GREEN = "#cdebd3"
ORANGE = "#fde0c5"
BLUE = "#dbe7f5"


def _phase_depths(n, p):
    """The combine steps of the reduce, carry and rescan phases, counted by the package."""
    import numpy as np

    from ..kernels import scan_algorithms as sa

    run = sa.chunked_scan(np.ones(n), np.zeros(n), p, record=True)
    depths = {"reduce": 0, "carry": 0, "rescan": 0}
    for step in run.steps:
        if step.combines:
            depths[step.phase.split()[0].rstrip(":,")] += 1
    assert sum(depths.values()) == run.depth
    return depths, run.depth


def chunked_phases(n=CHUNK_N, p=CHUNK_P):
    """Three blocks: reduce every chunk, scan the chunk totals, rescan every chunk from its carry."""
    from matplotlib.patches import Rectangle

    L = n // p
    depths, depth = _phase_depths(n, p)
    fig, ax = canvas(10, 3.6, (-0.95, 10.2), (-0.85, p + 0.95))
    heads = [(1.35, f"1. reduce ({depths['reduce']} steps)\neach chunk's loop, all chunks at once"),
             (5.0, f"2. scan the {p} totals ({depths['carry']} steps)\nthe carry: all chunks before"),
             (8.65, f"3. rescan ({depths['rescan']} steps)\neach loop again, from its carry")]
    for x, text in heads:
        ax.text(x, p + 0.55, text, ha="center", va="center", fontsize=9, color=INK)
    for c in range(p):
        y = p - 1 - c
        first, last = c * L + 1, (c + 1) * L
        box(ax, 0.8, y, 1.4, 0.62, f"$x_{{{first}}} \\circ \\cdots \\circ x_{{{last}}}$", fc=BLUE)
        arrow(ax, (1.52, y), (1.95, y))
        box(ax, 2.45, y, 0.95, 0.62, f"$S_{{{c + 1}}}$", fc=ORANGE)
        arrow(ax, (2.95, y), (3.55, y))
        carry = "none" if c == 0 else "$" + " \\circ ".join(f"S_{{{i}}}" for i in range(1, c + 1)) + "$"
        box(ax, 4.6, y, 1.4, 0.62, carry, fc="white" if c == 0 else ORANGE)
        arrow(ax, (5.33, y - 0.0), (5.95, y))
        again = f"$x_{{{first}}} \\circ \\cdots$" if c == 0 else f"carry $\\circ\\, x_{{{first}}} \\circ \\cdots$"
        box(ax, 6.7, y, 1.4, 0.62, again, fc="white")
        arrow(ax, (7.43, y), (7.95, y))
        box(ax, 8.95, y, 1.95, 0.62, f"prefixes {first} to {last}", fc=GREEN)
        ax.text(0.05, y, f"chunk {c + 1}", ha="right", va="center", fontsize=8, color="0.35")
    ax.add_patch(Rectangle((3.6, -0.45), 2.0, p - 0.1, fill=False, ec="0.55", ls="--", lw=0.9))
    ax.text(5.0, -0.7, "totals scanned in log$_2$ p steps, then shifted one chunk (a copy)",
            ha="center", va="center", fontsize=8, color="0.3")
    ax.text(8.65, -0.7, f"depth {depths['reduce']} + {depths['carry']} + {depths['rescan']}"
            f" = {depth}; copy-only steps add none", ha="center", va="center", fontsize=8,
            color="0.3")
    ax.text(1.35, -0.7, f"n = {n} inputs, p = {p} chunks of {L}", ha="center", va="center",
            fontsize=8, color="0.3")
    return fig
