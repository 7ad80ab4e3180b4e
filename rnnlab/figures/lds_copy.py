"""The copying-memory task of ``book/lds/03_copy_memory`` drawn as a timeline.

``copy_timeline`` draws one sequence of the package's task
(:func:`rnnlab.tasks.copy_memory.copy_memory` with ``T = TIMELINE_T`` and
``seed = TIMELINE_SEED``, the first sequence the page prints) as two rows of
cells, the inputs above and the targets below, one column per step, with an
arrow from every symbol read to the step that must write it out,
``T + 10`` steps later. The token ids are integers, so the drawing is the
same on every machine.
"""
from __future__ import annotations

from .scans import _arrow, _box, _canvas

__all__ = ["TIMELINE_T", "TIMELINE_SEED", "copy_timeline"]

TIMELINE_T = 10
"""The delay of the sequence drawn (the page's own example, ``copy_memory(T=10, ...)``)."""
TIMELINE_SEED = 0
"""The seed of the sequence drawn."""

_INK = "#333333"
_ORANGE, _ORANGE_FILL = "#c25e00", "#fbe6d0"
_BLUE, _BLUE_FILL = "#1f4e79", "#dbe8f5"
_GREY, _GREY_FILL = "#999999", "#f4f4f4"


def copy_timeline(T=TIMELINE_T, seed=TIMELINE_SEED):
    """Inputs (top) and targets (bottom) of one copying-memory sequence, step by step."""
    from ..tasks.copy_memory import GO, NUM_RECALL, copy_memory

    inputs, targets = copy_memory(T=T, n=1, seed=seed)
    x, y = inputs[0].tolist(), targets[0].tolist()
    L = len(x)
    w = 0.36                                    # width of one step
    fig, ax = _canvas(11, 3.3, (-1.55, L * w + 0.1), (-2.05, 1.45))
    top, bottom = 0.55, -0.85

    def cell(t, row, token, is_input):
        cx = t * w + w / 2
        if token == GO and is_input:
            _box(ax, cx, row, w * 0.9, 0.5, "go", ec=_BLUE, fc=_BLUE_FILL, fontsize=7.5)
        elif token == 0:
            _box(ax, cx, row, w * 0.9, 0.5, "·", ec=_GREY, fc=_GREY_FILL, fontsize=8)
        else:
            _box(ax, cx, row, w * 0.9, 0.5, str(token), ec=_ORANGE, fc=_ORANGE_FILL, fontsize=8.5,
                 fontweight="bold")

    for t in range(L):
        cell(t, top, x[t], True)
        cell(t, bottom, y[t], False)
    ax.text(-0.15, top, "input", ha="right", va="center", fontsize=9, color=_INK)
    ax.text(-0.15, bottom, "target", ha="right", va="center", fontsize=9, color=_INK)
    # every symbol goes to the step T + 10 later
    lag = T + NUM_RECALL
    for q in range(NUM_RECALL):
        highlight = q == 0
        _arrow(ax, (q * w + w / 2, top - 0.27), ((q + lag) * w + w / 2, bottom + 0.27),
               color=_ORANGE if highlight else _GREY, lw=1.1 if highlight else 0.6)
    ax.text(0.05, -0.42, f"each symbol is written out T + 10 = {lag} steps after it was read",
            fontsize=8.5, color=_ORANGE, ha="left", va="center")

    # the phases of the input, bracketed below the targets
    def bracket(t0, t1, label):
        x0, x1, yb = t0 * w + 0.04, (t1 + 1) * w - 0.04, -1.3
        ax.plot([x0, x0, x1, x1], [yb + 0.08, yb, yb, yb + 0.08], color=_INK, lw=0.8)
        ax.text((x0 + x1) / 2, yb - 0.2, label, ha="center", va="top", fontsize=8, color=_INK)

    bracket(0, NUM_RECALL - 1, f"{NUM_RECALL} symbols from 8\n(the network reads them)")
    bracket(NUM_RECALL, T + NUM_RECALL - 2, f"T − 1 = {T - 1} blanks\n(wait)")
    bracket(T + NUM_RECALL - 1, T + NUM_RECALL - 1, "go")
    bracket(T + NUM_RECALL, L - 1, f"{NUM_RECALL} steps: write the symbols\nout, in order")
    ax.text(-1.5, 1.2, f"copying memory, T = {T}: {L} steps; the targets are blank (·) until the "
            "recall steps", fontsize=9.5, fontweight="bold", color=_INK, va="center")
    return fig
