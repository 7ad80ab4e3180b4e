"""The copying-memory task of ``book/lds/04_copy_memory`` drawn as a timeline.

``copy_timeline`` draws one sequence of the package's task
(:func:`rnnlab.tasks.copy_memory.copy_memory` with ``T = TIMELINE_T`` and
``seed = TIMELINE_SEED``, the first sequence the page prints) as two rows of
cells, the inputs above and the targets below, one column per step, with an
arrow from every symbol read to the step that must write it out,
``T + 10`` steps later. The token ids are integers, so the drawing is the
same on every machine.

``delay_phasors`` draws how rotations add up to a delay: the delay line of the
exercise ``ex-lds-delay`` (``book/lds/01_modal_form``), its terms drawn as
arrows head to tail at four lags, for the reading of the trained copy model.
"""
from __future__ import annotations

from .drawing import arrow as _arrow, box as _box, canvas as _canvas

__all__ = ["TIMELINE_T", "TIMELINE_SEED", "copy_timeline", "PHASOR_DELAY", "delay_phasors"]

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

    # the phases of the sequence in time (both rows), bracketed below the targets
    def bracket(t0, t1, label):
        x0, x1, yb = t0 * w + 0.04, (t1 + 1) * w - 0.04, -1.3
        ax.plot([x0, x0, x1, x1], [yb + 0.08, yb, yb, yb + 0.08], color=_INK, lw=0.8)
        ax.text((x0 + x1) / 2, yb - 0.2, label, ha="center", va="top", fontsize=8, color=_INK)

    bracket(0, NUM_RECALL - 1, f"steps 1–{NUM_RECALL}: read {NUM_RECALL} symbols\n(targets blank)")
    bracket(NUM_RECALL, T + NUM_RECALL - 2, f"wait: T − 1 = {T - 1}\nblank inputs")
    bracket(T + NUM_RECALL - 1, T + NUM_RECALL - 1, "go")
    bracket(T + NUM_RECALL, L - 1, f"last {NUM_RECALL} steps: write the\nsymbols out, in order")
    ax.text(-1.5, 1.2, f"copying memory, T = {T}: {L} steps; the targets are blank (·) until the "
            "recall steps", fontsize=9.5, fontweight="bold", color=_INK, va="center")
    return fig


PHASOR_DELAY = 7
"""The delay of the delay line drawn by :func:`delay_phasors` (4 modes, 8 arrows)."""


def delay_phasors(k=PHASOR_DELAY):
    """How rotations add up to a delay: the phasors of the delay line of ``ex-lds-delay``.

    The delay line of ``book/lds/01_modal_form`` (exercise ``ex-lds-delay``) with
    ``k + 1`` unit-modulus eigenvalues, the roots of ``z^(k+1) = -1`` (one mode per
    conjugate pair, ``B' = 1``). Its impulse response at lag ``m`` is the sum of the
    ``k + 1`` arrows ``C'_j lambda_j^m / 2`` and their conjugates; each panel draws
    them head to tail at one lag, so the end of the chain is the output. At lag ``k``
    they all point the same way (sum 1); at the neighbouring lags they close into a
    polygon (sum 0); at lag ``2k + 1`` they line up again, inverted (the echo).
    """
    import numpy as np

    N = k + 1
    mu = np.exp(1j * np.pi * (2 * np.arange(N) + 1) / N)   # all k + 1 roots of -1
    weights = mu ** (-k) / N                               # C'_j / 2 and its conjugate
    lags = (k - 1, k, k + 1, 2 * k + 1)
    titles = ("one step early", "the delay", "one step late", "the echo")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(lags), figsize=(11, 3.2))
    for ax, m, title in zip(axes, lags, titles):
        arrows = weights * mu ** m
        ends = np.concatenate([[0], np.cumsum(arrows)])
        ax.axhline(0, color=_GREY, lw=0.6)
        ax.axvline(0, color=_GREY, lw=0.6)
        for a, b in zip(ends[:-1], ends[1:]):
            ax.annotate("", xy=(b.real, b.imag), xytext=(a.real, a.imag),
                        arrowprops=dict(arrowstyle="-|>", color=_BLUE, lw=1.2,
                                        shrinkA=0, shrinkB=0, mutation_scale=8))
        total = float(np.round(ends[-1].real, 9)) + 0.0    # no "-0"
        ax.plot([total], [0], "o", color=_ORANGE, ms=7, zorder=3)
        ax.set(xlim=(-1.25, 1.25), ylim=(-0.85, 0.85), aspect="equal",
               xticks=[-1, 0, 1], yticks=[])
        ax.set_title(f"lag {m} ({title}):\nthe arrows add up to {total:+.0f}", fontsize=9,
                     color=_INK)
        ax.grid(False)
    fig.suptitle(f"a delay of k = {k} steps as {N} rotating arrows (B' = 1, "
                 f"{(N + 1) // 2} modes and their conjugates): each turns by its angle "
                 "at every step", fontsize=9.5, color=_INK)
    fig.tight_layout()
    return fig
