"""The lags of reversal, drawn for ``book/memory/03_initialisation``.

``reversal_lags`` draws the steps of one reversal of an ``n``-symbol string
laid out as on the page (``<s>``, the source at steps 1 to ``n``, the
separator at step ``n + 1``, then the target), with an arc from the push of
symbol ``i`` (step ``i``) to the read that must return it (step ``2n - i``,
whose output, one step later, writes it; a third row shows the outputs). The last
symbol returns in the push's own read (lag 0), which depends on the push at every pop
bias: it is drawn in orange, apart from the reach. Arcs whose lag ``2n - 2i`` (at least 1)
lies within a push's reach, the later reads that take its row whole under constant
controls ``d = 0.5``, ``u = sigma(b_u)`` (``floor((1 - d)/(d - u))``, 2 at the page's
``b_u = -1``), are green; the others are grey. Small blue arcs below the timeline join
each push to the next read (lag 1): the read through which, when it takes the row just
pushed whole, the next pop gets gradient. The figure separates the two questions of the
page: the pops get gradient (lag 1) and the symbol is linked (the task's lag).
"""
from __future__ import annotations

import math

from matplotlib.figure import Figure
from matplotlib.patches import Arc

__all__ = ["LAG_N", "LAG_BIAS", "reversal_lags"]

LAG_N = 8
"""The string length of the page's reversals."""
LAG_BIAS = -1.0
"""The pop bias whose reach the figure shades (the paper's start)."""
LAG1 = "#7b3294"
"""The colour of lag 1, the next read (the pops' gradient)."""
OWN = "#d95f02"
"""The colour of lag 0, the push's own read (linked at every pop bias)."""


def reversal_lags(n=LAG_N, b_u=LAG_BIAS, d=0.5):
    """Arcs from each push of an n-symbol reversal to the read that returns it."""
    u = 1 / (1 + math.exp(-b_u))
    reach = math.floor((1 - d) / (d - u)) if u < d else 0
    steps = 2 * n + 2
    fig = Figure(figsize=(10, 4.6))
    ax = fig.subplots()
    inputs = ["<s>"] + [f"x{i}" for i in range(1, n + 1)] + ["|||"] + \
        [f"x{n + 1 - j}" for j in range(1, n + 1)]
    for t, name in enumerate(inputs):
        ax.text(t, -0.55, name, ha="center", va="center", fontsize=9)
        ax.text(t, -1.05, str(t), ha="center", va="center", fontsize=8, color="0.4")
    outputs = {2 * n + 1 - i: f"x{i}" for i in range(1, n + 1)}   # step -> symbol written
    outputs[2 * n + 1] = "</s>"
    for t, name in outputs.items():
        ax.text(t, -1.55, name, ha="center", va="center", fontsize=9, color="#2a5caa")
    ax.text(-0.9, -1.55, "output", ha="right", va="center", fontsize=8, color="#2a5caa")
    ax.text(-0.9, -0.55, "input", ha="right", va="center", fontsize=8)
    ax.text(-0.9, -1.05, "step", ha="right", va="center", fontsize=8, color="0.4")
    ax.plot([-0.5, steps - 0.5], [-0.2, -0.2], color="0.6", lw=0.8)
    gets = 2 * d - u <= 1 and u < d           # the next read takes the row just pushed whole
    for i in range(1, n + 1):                 # lag 1: push i -> the read of step i + 1
        ax.add_patch(Arc((i + 0.5, -1.85), 1.0, 0.5, theta1=180, theta2=360,
                         color=LAG1, lw=1.6, ls="-" if gets else ":"))
    ax.text(n + 1.7, -2.05, "lag 1: the next read", ha="left", va="center", fontsize=8,
            color=LAG1)
    top = 0.0
    for i in range(1, n + 1):
        read, lag = 2 * n - i, 2 * n - 2 * i
        near = lag <= reach
        color = "#2a7f3f" if near else "0.6"
        if lag == 0:                                 # the push's own read, not the reach
            ax.plot(i, 0.0, "o", ms=7, mfc="w", mec=OWN, mew=2)
            ax.text(i, 0.35, "lag 0", ha="center", fontsize=7, color=OWN)
            continue
        height = 0.45 * lag
        ax.add_patch(Arc(((i + read) / 2, 0.0), lag, 2 * height, theta1=0, theta2=180,
                         color=color, lw=2.2 if near else 1.4))
        ax.plot([i, read], [0, 0], "o", ms=3, color=color)
        ax.text((i + read) / 2, height + 0.1, f"lag {lag}", ha="center", va="bottom",
                fontsize=7, color=color)
        top = max(top, height)
    ax.text(steps - 0.5, top + 0.3,
            "above: does the read that returns $x_i$ depend on its push (linked)?\n"
            "orange: lag 0, the push's own read, linked at every pop bias\n"
            f"green: within a push's reach ({reach}) at $b_u = {b_u:g}$, $d = {d:g}$\n"
            "grey: beyond that reach", ha="right", va="top", fontsize=8)
    ax.text(steps - 0.5, -2.4,
            "below: does the next read take the row just pushed whole (the pops get gradient)? "
            f"{'Yes' if gets else 'No'} at $b_u = {b_u:g}$, $d = {d:g}$ "
            "(at $d = 0.5$: for every $b_u < 0$)", ha="right", va="top", fontsize=8,
            color=LAG1)
    ax.text(0.5, top + 0.3, f"push of $x_i$ at step $i$ \u2192 read at step ${2 * n} - i$",
            ha="left", va="top", fontsize=9)
    ax.set(xlim=(-2.2, steps - 0.3), ylim=(-2.75, top + 0.8))
    ax.axis("off")
    fig.tight_layout()
    return fig
