"""The read-stretch-write schematic of book/lowrank/03_spectra.

``W = U Σ Vᵀ`` reads a vector along the input directions (``Vᵀ``), stretches
coordinate i by σ_i (``Σ``) and writes the result along the output directions
(``U``). Below the pipeline, the singular values of the page's running example
(orthogonal init, n = 128, seed 0): the orthogonal Q, Q masked at s = 0.5 and
Q truncated to rank 32, each with its RMS value, the rule's radius, and the
measured spectral radius.
"""
from __future__ import annotations

import numpy as np

from .drawing import INK, arrow, box, canvas, num
from .lowrank import CLOUD_EXAMPLE, _sample

__all__ = ["read_stretch_write"]

_BLUE, _GREEN, _ORANGE = "#1f4e79", "#2f7a2f", "#c25e00"
_BLUE_FILL, _GREEN_FILL, _ORANGE_FILL = "#dbe8f5", "#e2f2e2", "#fbe6d0"


def read_stretch_write():
    """The pipeline x → Vᵀ → Σ → U → Wx, and the singular values of Q, of the mask and of the truncation."""
    ex = CLOUD_EXAMPLE
    n, r, s = ex["n"], ex["rank"], ex["sparsity"]
    fig, ax = canvas(11, 5.0, (0, 11), (0, 5.0))
    # the pipeline
    y = 4.25
    ax.text(0.35, y, "x", ha="center", va="center", fontsize=12, color=INK)
    stages = ((2.3, "read  Vᵀ\ncoordinates of x along\nthe input directions v_i", _BLUE_FILL),
              (5.5, "stretch  Σ\ncoordinate i times the\nsingular value σ_i", _ORANGE_FILL),
              (8.7, "write  U\nthe stretched coordinates\nalong the output directions u_i", _GREEN_FILL))
    prev = 0.55
    for x, text, fc in stages:
        arrow(ax, (prev, y), (x - 1.3, y))
        box(ax, x, y, 2.6, 0.95, text, fc=fc, fontsize=8.5)
        prev = x + 1.3
    arrow(ax, (prev, y), (10.45, y))
    ax.text(10.65, y, "Wx", ha="center", va="center", fontsize=12, color=INK)
    arrow(ax, (10.65, y - 0.3), (0.35, y - 0.3), rad=-0.12, ls="--", color="#888888")
    ax.text(5.5, 3.2, "next step: the output is read again along V, so VᵀU decides which σ_i stretch it next",
            ha="center", va="center", fontsize=8, color="#555555")
    # the running example's singular values
    panels = ((None, 0.0, "orthogonal Q: nothing removed",
               "all σ_i = 1", _BLUE),
              (None, s, f"mask, s = {num(s)}: Q ⊙ M, zero each\nentry of Q with probability s",
               "spreads the σ_i out; keeps\n1 − s of Σσ_i² on average", _ORANGE),
              (r, 0.0, f"truncation, r = {r}: Q V_r V_rᵀ, project onto\na random {r}-plane, then rotate by Q",
               f"keeps {r} of the σ_i at 1,\nsets the other {n - r} to 0", _GREEN))
    for k, (rank, sp, title, note, color) in enumerate(panels):
        W = _sample(n, rank, sp, ex["seed"])[3]
        sv = np.linalg.svd(W, compute_uv=False)
        rms = np.sqrt(np.mean(sv**2))
        rho = np.abs(np.linalg.eigvals(W)).max()
        a = fig.add_axes((0.06 + 0.325 * k, 0.1, 0.26, 0.36))
        a.fill_between(np.arange(0, n + 1), np.r_[sv, sv[-1]], step="post", color=color, lw=0)
        a.axhline(rms, color=INK, ls="--", lw=1)
        a.text(n, rms + 0.05, f"RMS {num(rms, 2)}; ρ = {num(rho, 2)}", ha="right", va="bottom",
               fontsize=8, color=INK)
        a.set(xlim=(0, n), ylim=(0, 2.0), xticks=[1, n // 2, n], yticks=[0, 1, 2])
        a.set_xlabel("i (largest σ first)", fontsize=8)
        if k == 0:
            a.set_ylabel("σ_i", fontsize=9)
        a.tick_params(labelsize=7)
        a.set_title(title, fontsize=8.5, color=INK)
        a.text(n - 2, 1.9, note, ha="right", va="top", fontsize=7.5, color="#555555")
    ax.text(5.5, 2.8, f"the operations change Σ (n = {n}); the rule predicts ρ ≈ the RMS singular value (dashed)",
            ha="center", va="center", fontsize=9, color=INK)
    return fig
