"""Schematics of the LSTM and GRU steps, and of one GRU step backward (``book/lowrank/01_cells``).

:func:`lstm_gru_cells` draws the two cells of :mod:`rnnlab.kernels.cells_torch`
(the GRU resets *before* its recurrent matrix, as in that module), each gate
with its own ``W_rec(r, s)``; :func:`gru_backward` draws the chain rule of the GRU
backward note of book/lowrank/01_cells: which gradient flows into which, and through
which matrix.
The symbols are the page's: q the reset gate, z the update gate, ĥ the
candidate state.
"""
from __future__ import annotations

from .drawing import arrow as _arrow, box as _box, canvas as _canvas

__all__ = ["lstm_gru_cells", "gru_backward"]

_GREY_FILL = "#f2f2f2"
_ORANGE, _ORANGE_FILL = "#c25e00", "#fbe6d0"
_BLUE, _BLUE_FILL = "#1f4e79", "#dbe8f5"
_GREEN, _GREEN_FILL = "#2f7a2f", "#e2f2e2"
_RED = "#a83232"
_LINE = "#888888"


def _lstm(ax, x0):
    """The LSTM step, its left edge at ``x0``."""
    ax.text(x0 + 2.9, 4.75, "LSTM: 4 blocks, state (hₜ, cₜ)", ha="center", fontsize=10, weight="bold")
    _box(ax, x0 + 0.6, 3.8, 1.0, 0.55, "cₜ₋₁", fc=_GREY_FILL)
    _box(ax, x0 + 0.6, 1.3, 1.0, 0.75, "xₜ\nhₜ₋₁", fc=_GREY_FILL)
    gates = (("f = σ(pre_f)", "forget gate", 2.55), ("i = σ(preᵢ)", "input gate", 1.85),
             ("g = tanh(pre_g)", "candidate", 1.15), ("o = σ(pre_o)", "output gate", 0.45))
    for text, role, y in gates:
        _box(ax, x0 + 2.6, y, 1.9, 0.52, f"{text}\n{role}", fc=_BLUE_FILL, ec=_BLUE, fontsize=8)
        _arrow(ax, (x0 + 1.1, 1.3), (x0 + 1.65, y), color=_LINE)
    # the cell-state line: no recurrent matrix on it
    _box(ax, x0 + 2.6, 3.8, 0.7, 0.5, "⊙ f", ec=_ORANGE, fc=_ORANGE_FILL)
    _box(ax, x0 + 4.0, 3.8, 0.9, 0.5, "+ i ⊙ g", ec=_ORANGE, fc=_ORANGE_FILL)
    _box(ax, x0 + 5.3, 3.8, 0.7, 0.5, "cₜ", fc=_GREY_FILL)
    _arrow(ax, (x0 + 1.1, 3.8), (x0 + 2.25, 3.8), color=_ORANGE, lw=1.6)
    _arrow(ax, (x0 + 2.95, 3.8), (x0 + 3.55, 3.8), color=_ORANGE, lw=1.6)
    _arrow(ax, (x0 + 4.45, 3.8), (x0 + 4.95, 3.8), color=_ORANGE, lw=1.6)
    ax.text(x0 + 3.3, 4.2, "the cell state: no recurrent matrix on this path", ha="center", fontsize=7.8,
            color=_ORANGE)
    _arrow(ax, (x0 + 2.6, 2.81), (x0 + 2.6, 3.55), color=_BLUE)
    _arrow(ax, (x0 + 3.55, 1.85), (x0 + 3.9, 3.55), color=_BLUE)
    _arrow(ax, (x0 + 3.55, 1.15), (x0 + 4.15, 3.55), color=_BLUE)
    _box(ax, x0 + 5.0, 0.9, 1.5, 0.75, "hₜ = o ⊙ tanh(cₜ)", fc="white", fontsize=8.5)
    _arrow(ax, (x0 + 5.3, 3.55), (x0 + 5.3, 1.28), color=_LINE)
    _arrow(ax, (x0 + 3.55, 0.45), (x0 + 4.25, 0.8), color=_BLUE)
    ax.text(x0 + 2.6, -0.05, "preₖ = W_ik xₜ + W_k(r, s) hₜ₋₁ + b_k, each block k its own W_k(r, s)",
            ha="center", fontsize=7.8, color="#555555")


def _gru(ax, x0):
    """The GRU step (reset before the matrix), its left edge at ``x0``."""
    ax.text(x0 + 2.9, 4.75, "GRU: 3 blocks, state hₜ", ha="center", fontsize=10, weight="bold")
    _box(ax, x0 + 0.6, 3.8, 1.0, 0.55, "hₜ₋₁", fc=_GREY_FILL)
    _box(ax, x0 + 0.6, 1.3, 1.0, 0.55, "xₜ", fc=_GREY_FILL)
    _box(ax, x0 + 2.6, 2.8, 1.9, 0.52, "z = σ(pre_z)\nupdate gate", fc=_BLUE_FILL, ec=_BLUE, fontsize=8)
    _box(ax, x0 + 2.6, 2.05, 1.9, 0.52, "q = σ(pre_q)\nreset gate", fc=_BLUE_FILL, ec=_BLUE, fontsize=8)
    _box(ax, x0 + 2.6, 0.5, 2.3, 0.75, r"$\hat h = \tanh(W_{i\hat h}\,x_t$" "\n"
        r"$+\ W_{\hat h}(r, s)\,(q \odot h_{t-1}) + b_{\hat h})$" "\ncandidate",
         fc=_BLUE_FILL, ec=_BLUE, fontsize=8)
    for y in (2.8, 2.05):
        _arrow(ax, (x0 + 1.1, 3.65), (x0 + 1.65, y + 0.1), color=_LINE)
        _arrow(ax, (x0 + 1.1, 1.3), (x0 + 1.65, y - 0.1), color=_LINE)
    _arrow(ax, (x0 + 1.1, 1.3), (x0 + 1.45, 0.6), color=_LINE)
    # the reset: q ⊙ h_{t-1}, which then goes through W_ĥ inside the candidate
    _box(ax, x0 + 2.6, 1.33, 1.0, 0.34, "q ⊙ hₜ₋₁", fc="white", ec=_BLUE, fontsize=8)
    _arrow(ax, (x0 + 2.6, 1.79), (x0 + 2.6, 1.5), color=_BLUE)
    _arrow(ax, (x0 + 2.6, 1.16), (x0 + 2.6, 0.875), color=_BLUE)
    ax.plot([x0 + 4.0, x0 + 4.0], [3.8, 1.33], color=_LINE, lw=1.0, zorder=1)
    _arrow(ax, (x0 + 4.0, 1.33), (x0 + 3.1, 1.33), color=_LINE)
    ax.text(x0 + 4.07, 1.45, "hₜ₋₁", fontsize=7.8, color="#555555")
    # the update: h_t = (1 - z) ĥ + z h_{t-1}; z ⊙ h_{t-1} needs no matrix
    _box(ax, x0 + 5.1, 1.8, 1.5, 0.75, "hₜ = (1 − z) ⊙ ĥ\n+ z ⊙ hₜ₋₁", fc="white", fontsize=8.5)
    ax.plot([x0 + 1.1, x0 + 5.1], [3.8, 3.8], color=_GREEN, lw=1.6, zorder=1)
    _arrow(ax, (x0 + 5.1, 3.8), (x0 + 5.1, 2.18), color=_GREEN, lw=1.6)
    ax.text(x0 + 3.1, 3.9, "z ⊙ hₜ₋₁: no recurrent matrix on this path", ha="center", fontsize=7.8,
            color=_GREEN)
    _arrow(ax, (x0 + 3.55, 2.8), (x0 + 4.35, 2.05), color=_BLUE)
    _arrow(ax, (x0 + 3.75, 0.5), (x0 + 4.5, 1.42), color=_BLUE)
    ax.text(x0 + 2.6, -0.05, "preₖ = W_ik xₜ + W_k(r, s) hₜ₋₁ + b_k for k = q, z; the reset acts before W_ĥ",
            ha="center", fontsize=7.8, color="#555555")


def lstm_gru_cells():
    """The LSTM (left) and the GRU (right) of the page's table: every gate has its own
    input matrix and its own ``W_rec(r, s)``; each cell has one path that carries the
    state on without a recurrent matrix (the LSTM's ``c``, the GRU's ``z ⊙ h_{t-1}``)."""
    fig, ax = _canvas(12.5, 4.0, (-0.1, 12.6), (-0.3, 5.0))
    _lstm(ax, 0.0)
    ax.plot([6.25, 6.25], [-0.2, 4.9], color="#cccccc", lw=1.0)
    _gru(ax, 6.5)
    return fig


def gru_backward():
    """One GRU step backward (the GRU backward note of book/lowrank/01_cells): from ``h̄_t = dL/dh_t`` to the three
    pre-activation gradients, and the four terms of this step's share of ``dL/dh_{t-1}``."""
    fig, ax = _canvas(10.5, 4.3, (-0.2, 10.6), (-0.5, 4.5))
    _box(ax, 9.4, 1.9, 1.8, 0.8, "h̄ₜ = ∂L/∂hₜ\n(from above)", fc=_GREY_FILL)
    _box(ax, 5.6, 1.9, 3.3, 0.62, "δpre_ĥ = h̄ₜ ⊙ (1 − z) ⊙ (1 − ĥ²)", ec=_RED, fc="white", fontsize=8.5)
    _box(ax, 5.6, 3.35, 3.3, 0.62, "δpre_z = h̄ₜ ⊙ (hₜ₋₁ − ĥ) ⊙ z(1 − z)", ec=_RED, fc="white",
         fontsize=8.5)
    _box(ax, 5.6, 0.45, 3.3, 0.62, "δpre_q = (W_ĥᵀ δpre_ĥ) ⊙ hₜ₋₁ ⊙ q(1 − q)", ec=_RED, fc="white",
         fontsize=8.5)
    _box(ax, 0.95, 1.9, 1.9, 1.0, "∂L/∂hₜ₋₁\n(this step's\nshare: a sum)", fc=_GREY_FILL)
    for y in (3.35, 1.9):
        _arrow(ax, (8.5, 1.9 + (y - 1.9) * 0.2), (7.25, y), color=_RED)
    _arrow(ax, (5.6, 1.59), (5.6, 0.76), color=_RED, rad=0.0)
    ax.text(5.7, 1.12, "through W_ĥᵀ", fontsize=7.8, color=_RED)
    # the four terms of dL/dh_{t-1}
    ax.plot([9.4, 9.4, 0.95], [2.3, 4.1, 4.1], color=_GREEN, lw=1.5, zorder=1)
    _arrow(ax, (0.95, 4.1), (0.95, 2.4), color=_GREEN, lw=1.5)
    ax.text(5.2, 4.18, "h̄ₜ ⊙ z: straight through, no matrix", ha="center", fontsize=8, color=_GREEN)
    _arrow(ax, (3.95, 3.35), (1.9, 2.2), color=_RED)
    ax.text(2.9, 3.05, "W_zᵀ δpre_z", fontsize=8, color=_RED, ha="center")
    _arrow(ax, (3.95, 1.9), (1.9, 1.9), color=_RED)
    ax.text(2.9, 1.98, "q ⊙ W_ĥᵀ δpre_ĥ", fontsize=8, color=_RED, ha="center", va="bottom")
    _arrow(ax, (3.95, 0.45), (1.9, 1.6), color=_RED)
    ax.text(2.9, 0.75, "W_qᵀ δpre_q", fontsize=8, color=_RED, ha="center")
    ax.text(5.2, -0.3, "Red: gradients, each a product of local derivatives (chain rule). "
            "The gradient of W_k sums δpre_k times the transpose of the vector W_k multiplies.",
            ha="center", fontsize=7.8, color="#555555")
    return fig
