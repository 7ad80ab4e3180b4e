"""Two schematics of ``book/scans/01_associative_scan``: one Blelloch node, and Brent's bound as a schedule.

``blelloch_node`` draws one node of Blelloch's tree on the page's six-step example,
the node of slots 3 and 4: in the up-sweep it stores the composition of its
children, in the down-sweep it passes its carry ``P`` to its left child (a copy) and
``P ∘ L`` to its right child. ``brent_gantt`` schedules the combines of
:func:`rnnlab.kernels.scan_algorithms.blelloch_scan` on ``n`` inputs (counted by the
package's own record) on ``p`` processors, one row per round, and compares the
rounds with Brent's bound ``W / p + D``.
"""
from __future__ import annotations

from .drawing import INK, arrow, box, canvas, num

__all__ = ["blelloch_node", "brent_gantt"]

BLUE = "#dbe7f5"
ORANGE = "#fde0c5"
GREEN = "#cdebd3"


def _pair(x):
    return f"({num(x[0])}, {num(x[1])})"


def blelloch_node():
    """The node of slots 3 and 4 of the example, before and after each sweep."""
    import numpy as np

    from ..kernels import scan_algorithms as sa
    from .scans import EXAMPLE_A, EXAMPLE_B

    x = [(float(a), float(b)) for a, b in zip(np.asarray(EXAMPLE_A), np.asarray(EXAMPLE_B))]
    L, R = x[2], x[3]
    P = sa.combine(x[0], x[1])
    fig, ax = canvas(10, 3.3, (-0.2, 10.2), (-0.45, 3.05))
    panels = [
        (0.0, "up-sweep: the node stores the total of its block",
         [("slot 3: $L = x_3$\n" + _pair(L), BLUE), ("slot 4: $R = x_4$\n" + _pair(R), BLUE)],
         [("slot 3: $L$ (kept)\n" + _pair(L), "white"),
          ("slot 4: $L \\circ R = x_3 \\circ x_4$\n" + _pair(sa.combine(L, R)), ORANGE)]),
        (5.2, "down-sweep: the node passes $P$ left and $P \\circ L$ right",
         [("slot 3: $L = x_3$\n" + _pair(L), "white"),
          ("slot 4: $P = x_1 \\circ x_2$\n" + _pair(P), BLUE)],
         [("slot 3: $P$ (a copy)\n" + _pair(P), "white"),
          ("slot 4: $P \\circ L = x_1 \\circ x_2 \\circ x_3$\n" + _pair(sa.combine(P, L)), GREEN)]),
    ]
    for x0, title, before, after in panels:
        ax.text(x0 + 2.4, 2.75, title, ha="center", va="center", fontsize=9.5, color=INK)
        for i, (text, fc) in enumerate(before):
            box(ax, x0 + 1.2 + 2.4 * i, 1.95, 2.15, 0.7, text, fc=fc)
        for i, (text, fc) in enumerate(after):
            box(ax, x0 + 1.2 + 2.4 * i, 0.2, 2.15, 0.7, text, fc=fc)
        ax.text(x0 - 0.1, 1.95, "before", ha="right", va="center", fontsize=8, color="0.4",
                rotation=90)
        ax.text(x0 - 0.1, 0.2, "after", ha="right", va="center", fontsize=8, color="0.4",
                rotation=90)
    # up-sweep: slot 3 and slot 4 feed the combine into slot 4; slot 3 is kept
    arrow(ax, (1.2, 1.58), (1.2, 0.57), color="0.5", ls="--")
    arrow(ax, (1.5, 1.58), (3.3, 0.57))
    arrow(ax, (3.6, 1.58), (3.6, 0.57))
    # down-sweep: P is copied left, and P ∘ L goes into slot 4
    arrow(ax, (7.5, 1.58), (6.6, 0.57), color="0.5", ls="--")
    arrow(ax, (6.4, 1.58), (8.5, 0.57))
    arrow(ax, (8.8, 1.58), (8.8, 0.57))
    return fig


def brent_gantt(n=8, p=3):
    """Blelloch's combines on ``n`` inputs scheduled on ``p`` processors: one row per round."""
    import numpy as np
    from matplotlib.patches import Rectangle

    from ..kernels import scan_algorithms as sa

    run = sa.blelloch_scan(np.ones(n), np.zeros(n), record=True)
    steps = [s for s in run.steps if s.combines]
    rows = []                                   # (step number, phase, combines this round)
    for k, s in enumerate(steps, start=1):
        c = len(s.combines)
        while c > 0:
            rows.append((k, s.phase, min(c, p)))
            c -= p
    W, D = run.work, run.depth
    assert W == sum(len(s.combines) for s in steps) and D == len(steps)
    fig, ax = canvas(6.4, 3.9, (-2.6, p + 3.4), (-len(rows) - 0.3, 1.3))
    for j in range(p):
        ax.text(j + 0.5, 0.55, f"processor {j + 1}", ha="center", va="center", fontsize=8, color=INK)
    for r, (k, phase, used) in enumerate(rows):
        y = -r - 1
        ax.text(-0.15, y + 0.5, f"round {r + 1}: step {k}", ha="right", va="center", fontsize=8,
                color=INK)
        for j in range(p):
            busy = j < used
            fc = (BLUE if phase.startswith("up") else ORANGE) if busy else "white"
            ax.add_patch(Rectangle((j + 0.05, y + 0.08), 0.9, 0.84, fc=fc, ec="0.6", lw=0.8))
            ax.text(j + 0.5, y + 0.5, "∘" if busy else "idle", ha="center", va="center",
                    fontsize=13 if busy else 7, color=INK if busy else "0.55")
    bound = W / p + D
    ax.text(p + 0.3, -1.5, f"Blelloch, n = {n}:\nW = {W} combines\nin D = {D} steps",
            ha="left", va="center", fontsize=9, color=INK)
    ax.text(p + 0.3, -len(rows) / 2 - 1.3,
            f"p = {p} processors:\n{len(rows)} rounds\n≤ W/p + D = {num(bound, 2)}\n\n"
            "blue: up-sweep\norange: down-sweep",
            ha="left", va="center", fontsize=9, color=INK)
    return fig
