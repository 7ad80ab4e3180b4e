"""Schematics of the low-rank chapter (``book/lowrank``).

Drawn from the package's own numbers: :func:`wrec_matrices` and
:func:`eigenvalue_clouds` draw real initial matrices of
:func:`rnnlab.models.init_recurrent` (the orthogonal initialisation of
appendix A.10, seeded), so the pictures show what the pages measure;
:func:`cfc_heads` draws the CfC cell of :mod:`rnnlab.models.cells`, and
:func:`imitation_pipeline` the experiment of ``06_closed_loop`` with the
settings of :mod:`rnnlab.experiments.imitation` (100 expert episodes,
windows of 50 steps, shifts on 10 % of the steps).
"""
from __future__ import annotations

import numpy as np
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from .drawing import arrow as _arrow, box as _scans_box, canvas as _canvas

__all__ = ["WREC_EXAMPLE", "CLOUD_EXAMPLE", "wrec_matrices", "masked_subspaces", "eigenvalue_clouds", "cfc_heads",
           "imitation_pipeline", "HALFCHEETAH_CELLS", "HALFCHEETAH_CONDS", "normalised_se", "halfcheetah_budget", "jacobian_blocks",
           "backward_lanes"]

WREC_EXAMPLE = dict(n=10, rank=2, sparsity=0.5, seed=0)
"""The small matrix of :func:`wrec_matrices`: n = 10, rank 2, sparsity 0.5, orthogonal init, seed 0."""
CLOUD_EXAMPLE = dict(n=128, rank=32, sparsity=0.5, seed=0)
"""The four matrices of :func:`eigenvalue_clouds`: n = 128, rank n or 32, sparsity 0 or 0.5."""

_INK = "#333333"
_BLUE, _BLUE_FILL = "#1f4e79", "#dbe8f5"
_GREEN, _GREEN_FILL = "#2f7a2f", "#e2f2e2"
_ORANGE, _ORANGE_FILL = "#c25e00", "#fbe6d0"
_RED, _RED_FILL = "#a83232", "#f6dada"
_GREY_FILL = "#f2f2f2"


def _box(*args, **kw):
    """scans' rounded box, with this chapter's line spacing."""
    kw.setdefault("linespacing", 1.35)
    return _scans_box(*args, **kw)


def _sample(n, rank, sparsity, seed):
    """``(W1, W2, M, W_rec)`` of one orthogonal initialisation, float64 numpy (W2 None at full rank)."""
    import torch

    from ..models import init_recurrent, recurrent_matrix

    gen = torch.Generator().manual_seed(seed)
    W1, W2, M = init_recurrent(n, rank, sparsity, "orthogonal", gen, dtype=torch.float64)
    W = recurrent_matrix(W1, W2, M)
    return (W1.numpy(), None if W2 is None else W2.numpy(), M.numpy(), W.numpy())


def _matrix(ax, A, x0, y0, cell, *, vmax, mask=False):
    """Draw ``A`` entry by entry, its top-left corner at (x0, y0), squares of side ``cell``."""
    import matplotlib

    cmap = matplotlib.colormaps["RdBu_r"]
    rows, cols = A.shape
    for i in range(rows):
        for j in range(cols):
            v = A[i, j]
            if mask:
                fc = _INK if v else "white"
            else:
                fc = cmap(0.5 + 0.5 * float(np.clip(v / vmax, -1, 1))) if v != 0 else "white"
            ax.add_patch(Rectangle((x0 + j * cell, y0 - (i + 1) * cell), cell, cell, fc=fc, ec="#bbbbbb",
                                   lw=0.3, zorder=2))
    ax.add_patch(Rectangle((x0, y0 - rows * cell), cols * cell, rows * cell, fc="none", ec=_INK, lw=0.9,
                           zorder=3))


def _rank(A):
    return int(np.linalg.matrix_rank(A, tol=1e-9))


# ------------------------------------------------------------------ 01_cells

def wrec_matrices():
    """``W_rec(r, s) = (W1 W2) ⊙ M`` as matrices, entry by entry: the two trained
    factors, their product (rank r), the fixed Bernoulli mask, and the masked
    product, which is full rank. Colour: the sign and size of an entry;
    white: exactly zero."""
    ex = WREC_EXAMPLE
    n, r, s = ex["n"], ex["rank"], ex["sparsity"]
    W1, W2, M, W = _sample(n, r, s, ex["seed"])
    P = W1 @ W2
    c = 0.3                                    # side of one entry
    side = n * c
    right = r * c + 0.45 + 4 * side + 3 * 0.6 + 0.9   # the last matrix and half its label's overhang
    fig, ax = _canvas(11.5 * (right + 0.3) / (5 * side + 4 * 1.2), 3.6, (-0.3, right), (-side - 1.3, 0.9))
    vmax = float(np.abs(np.concatenate([W1.ravel(), W2.ravel(), P.ravel()])).max())
    x = 0.0
    _matrix(ax, W1, x, 0, c, vmax=vmax)
    ax.text(x + r * c / 2, -side - 0.3, f"W₁\n{n} × {r}\ntrained", ha="center", va="top", fontsize=8.5)
    x += r * c + 0.45
    ax.text(x - 0.22, -side / 2, "×", ha="center", va="center", fontsize=14)
    _matrix(ax, W2, x, 0, c, vmax=vmax)
    ax.text(x + side / 2, -r * c - 0.3, f"W₂: {r} × {n}, trained", ha="center", va="top", fontsize=8.5)
    x += side + 0.6
    ax.text(x - 0.3, -side / 2, "=", ha="center", va="center", fontsize=14)
    _matrix(ax, P, x, 0, c, vmax=vmax)
    ax.text(x + side / 2, -side - 0.3, f"W₁W₂\nrank {_rank(P)}", ha="center", va="top", fontsize=8.5)
    x += side + 0.6
    ax.text(x - 0.3, -side / 2, "⊙", ha="center", va="center", fontsize=14)
    _matrix(ax, M, x, 0, c, vmax=1, mask=True)
    kept = int(M.sum())
    ax.text(x + side / 2, -side - 0.3, f"M ~ Bernoulli(1 − s), s = {s:g}\nfixed: {kept} of {n * n} kept",
            ha="center", va="top", fontsize=8.5)
    x += side + 0.6
    ax.text(x - 0.3, -side / 2, "=", ha="center", va="center", fontsize=14)
    _matrix(ax, W, x, 0, c, vmax=vmax)
    ax.text(x + side / 2, -side - 0.3, f"W_rec(r, s) = (W₁W₂) ⊙ M\nrank {_rank(W)}: full rank,\na shrunk rank-{r} copy plus noise",
            ha="center", va="top", fontsize=8.5, color=_ORANGE)
    ax.text(-0.2, 0.55, f"n = {n}, r = {r}, s = {s:g}: {n * r * 2} trained numbers in the factors, "
            f"{kept} entries left by the mask (orthogonal initialisation)", fontsize=8.5, va="center")
    return fig


# ------------------------------------------------------------------ 02_rank_and_mask

def masked_subspaces():
    """The same mask on two rank-r truncations of one orthogonal ``W0``: the first r
    coordinates (``W0 P_r``, every column after the r-th zero) and the package's
    random subspace (``W0 V_r V_rᵀ``). The mask cannot bring zero columns back, so
    the first stays at rank r; the second is full rank again."""
    import torch

    from ..models import init_recurrent

    ex = WREC_EXAMPLE
    n, r, s = ex["n"], ex["rank"], ex["sparsity"]
    W1, W2, M, W = _sample(n, r, s, ex["seed"])
    W0, _, _ = init_recurrent(n, None, 0.0, "orthogonal", torch.Generator().manual_seed(ex["seed"]),
                              dtype=torch.float64)
    aligned = np.zeros((n, n))
    aligned[:, :r] = W0.numpy()[:, :r]
    c = 0.3
    side = n * c
    fig, ax = _canvas(8.0, 4.6, (-3.4, 3 * side + 2 * 0.6 + 0.2), (-2 * side - 2.4, 0.8))
    rows = (("the first r coordinates:\nevery column after\nthe r-th is zero", aligned, _BLUE),
            ("a random r-dimensional\nsubspace:\nevery column is used", W1 @ W2, _ORANGE))
    for k, (label, P, color) in enumerate(rows):
        y0 = -k * (side + 1.6)
        vmax = float(np.abs(P).max())
        ax.text(-0.25, y0 - side / 2, label, ha="right", va="center", fontsize=8.5, color=color)
        x = 0.0
        _matrix(ax, P, x, y0, c, vmax=vmax)
        ax.text(x + side / 2, y0 - side - 0.2, f"rank {_rank(P)}", ha="center", va="top", fontsize=8.5)
        x += side + 0.6
        ax.text(x - 0.3, y0 - side / 2, "⊙", ha="center", va="center", fontsize=14)
        _matrix(ax, M, x, y0, c, vmax=1, mask=True)
        ax.text(x + side / 2, y0 - side - 0.2, f"the same M, s = {s:g}", ha="center", va="top", fontsize=8.5)
        x += side + 0.6
        ax.text(x - 0.3, y0 - side / 2, "=", ha="center", va="center", fontsize=14)
        masked = P * M
        _matrix(ax, masked, x, y0, c, vmax=vmax)
        ax.text(x + side / 2, y0 - side - 0.2, f"rank {_rank(masked)}", ha="center", va="top", fontsize=8.5,
                color=color)
    ax.text(-3.3, 0.45, f"n = {n}, r = {r}: two rank-{r} truncations of one orthogonal W₀, under one mask",
            fontsize=8.5, va="center")
    return fig


def cfc_heads():
    """The CfC cell of A.4.3: three heads F, G, H read the input and the previous
    state, each through its own ``W_rec(r, s)``; the gate σ(F) mixes the two
    candidate states G and H into the new state."""
    fig, ax = _canvas(10.5, 4.2, (-0.4, 10.6), (-0.65, 4.3))
    _box(ax, 0.5, 3.2, 1.0, 0.6, "xₜ\ninput", fc=_GREY_FILL)
    _box(ax, 0.5, 0.8, 1.0, 0.6, "hₜ₋₁\nstate", fc=_GREY_FILL)
    heads = (("F", "σ", "the gate: σ(F) ∈ (0, 1)", 3.6, _ORANGE, _ORANGE_FILL),
             ("G", "tanh", "candidate G", 2.0, _BLUE, _BLUE_FILL),
             ("H", "tanh", "candidate H", 0.4, _GREEN, _GREEN_FILL))
    for name, act, role, y, ec, fc in heads:
        _box(ax, 3.7, y, 3.3, 0.85,
             f"{name} = W_i{name.lower()} xₜ + W_{name}(r, s) hₜ₋₁ + b_{name.lower()}\n{act}({name}): {role}",
             ec=ec, fc=fc, fontsize=8.3)
        _arrow(ax, (1.0, 3.2), (2.05, y + 0.1), color="#888888")
        _arrow(ax, (1.0, 0.8), (2.05, y - 0.1), color="#888888")
    _box(ax, 7.6, 2.0, 2.2, 1.3, "hₜ = σ(F) ⊙ tanh(G)\n+ (1 − σ(F)) ⊙ tanh(H)\n(an interpolation\nunit by unit)",
         ec=_INK, fc="white", fontsize=8.8)
    for _, _, _, y, ec, _ in heads:
        _arrow(ax, (5.35, y), (6.5, 2.0 + (y - 2.0) * 0.25), color=ec)
    _box(ax, 9.85, 2.0, 0.9, 0.6, "hₜ", fc=_GREY_FILL)
    _arrow(ax, (8.7, 2.0), (9.4, 2.0))
    ax.plot([9.85, 9.85, 0.5], [1.7, -0.4, -0.4], color="#888888", ls="--", lw=1.0, zorder=1)
    _arrow(ax, (0.5, -0.4), (0.5, 0.5), color="#888888", ls="--")
    ax.text(5.2, -0.3, "next step: hₜ becomes the state", fontsize=8, color="#666666", ha="center",
            va="bottom")
    ax.text(-0.3, 4.1, "Three heads, each with its own recurrent matrix W_rec(r, s) and its own input "
            "matrix; no path carries hₜ₋₁ to hₜ without one of them", fontsize=8.5, va="center")
    return fig


# ------------------------------------------------------------------ 03_spectra

def _eigenvalues(W1, W2, M, W):
    """The eigenvalues of ``W``, computed so that the picture is the same on every machine.

    LAPACK returns them in an order (and, for the zero eigenvalue of a low-rank
    product, at positions of size about 1e-16) that changes with the CPU's
    instructions; so they are sorted by value rounded to 1e-9, and an unmasked
    low-rank ``W = W1 W2`` gets its r nonzero eigenvalues from the small r x r
    matrix ``W2 W1`` (the same nonzero eigenvalues) and its n - r zeros as exact
    zeros."""
    if W2 is not None and bool((M == 1).all()):
        nonzero = np.linalg.eigvals(W2 @ W1)
        lam = np.concatenate([nonzero, np.zeros(W.shape[0] - len(nonzero))])
    else:
        lam = np.linalg.eigvals(W)
    return lam[np.lexsort((np.round(lam.imag, 9), np.round(lam.real, 9)))]


def eigenvalue_clouds():
    """The eigenvalues of four initial matrices (orthogonal init, n = 128): dense,
    sparse, low rank, low rank and sparse, each with the circle its rule predicts:
    radius 1 (orthogonal: the eigenvalues lie on it, so no disk is shaded),
    √(1 − s) (the RMS rule; a masked orthogonal matrix is not covered by the
    circular law, A.6.1-A.6.2), √(r/n) (truncated Haar, A.6.3),
    √(r(1 − s)/n) (the variance heuristic); a shaded disk marks where the
    eigenvalues may lie, not their density."""
    ex = CLOUD_EXAMPLE
    n, r, s = ex["n"], ex["rank"], ex["sparsity"]
    panels = ((None, 0.0, 1.0, "dense, full rank", "radius 1: orthogonal"),
              (None, s, np.sqrt(1 - s), f"sparsity {s:g}", "√(1 − s): RMS rule"),
              (r, 0.0, np.sqrt(r / n), f"rank {r}", "√(r/n): truncated Haar"),
              (r, s, np.sqrt(r * (1 - s) / n), f"rank {r}, sparsity {s:g}", "√(r(1 − s)/n)"))
    fig = Figure(figsize=(11, 3.3), layout="constrained")
    axes = fig.subplots(1, 4, sharex=True, sharey=True)
    t = np.linspace(0, 2 * np.pi, 181)
    for ax, (rank, sp, radius, title, rule) in zip(axes, panels):
        lam = _eigenvalues(*_sample(n, rank, sp, ex["seed"]))
        if rank is not None or sp > 0:  # an orthogonal matrix's eigenvalues lie on the circle
            ax.fill(radius * np.cos(t), radius * np.sin(t), color=_ORANGE_FILL, lw=0)
        ax.plot(radius * np.cos(t), radius * np.sin(t), color=_ORANGE, lw=1.2, ls="--", label=rule)
        ax.plot(np.cos(t), np.sin(t), color="#bbbbbb", lw=0.8)
        ax.scatter(lam.real, lam.imag, s=4, color=_BLUE, zorder=3, linewidths=0)
        rho = np.abs(lam).max()
        zero = int((lam == 0).sum())
        if zero:
            ax.annotate(f"{zero} eigenvalues\nat 0", (0, 0), (0.45, 0.75), fontsize=7, ha="left",
                        arrowprops=dict(arrowstyle="-", color="#888888", lw=0.6))
        ax.set_title(f"{title}\nρ = {rho:.2f}, rule {radius:.2f}", fontsize=9)
        ax.set(xlim=(-1.15, 1.15), ylim=(-1.15, 1.15), aspect="equal", xticks=[-1, 0, 1], yticks=[-1, 0, 1])
        ax.tick_params(labelsize=7)
        ax.legend(loc="lower center", fontsize=7, frameon=False, bbox_to_anchor=(0.5, -0.02),
                  handlelength=1.5)
    fig.suptitle(f"eigenvalues of W_rec(r, s) at initialisation, n = {n}", fontsize=10)
    return fig


# ------------------------------------------------------------------ 06_closed_loop

def imitation_pipeline():
    """The experiment of the paper (A.9-A.11) as a pipeline: the expert's
    recorded episodes, the offline fit, then the policy in the loop, with the
    observation shifted on some steps, scored against the expert under the same
    shift."""
    fig, ax = _canvas(12.3, 4.2, (-0.2, 12.4), (-0.55, 4.2))
    ax.text(0.0, 4.0, "offline: imitation", fontsize=9.5, color=_BLUE, va="center", weight="bold")
    ax.text(0.0, 1.95, "closed loop: the policy drives", fontsize=9.5, color=_GREEN, va="center",
            weight="bold")
    y = 3.15
    steps = (("expert\nsees the whole state", 1.1, _GREY_FILL),
             ("100 recorded\nepisodes\n(observation, action)", 3.55, _GREY_FILL),
             ("offline fit\nMSE to the expert's actions\non the expert's states", 6.35, _BLUE_FILL),
             ("trained recurrent\npolicy (rank r,\nsparsity s)", 9.2, _BLUE_FILL))
    for k, (text, x, fc) in enumerate(steps):
        _box(ax, x, y, 2.1, 1.05, text, fc=fc, ec=_BLUE if fc == _BLUE_FILL else _INK, fontsize=8.3)
        if k:
            _arrow(ax, (steps[k - 1][1] + 1.05, y), (x - 1.05, y))
    # the loop
    ye = 0.75
    _box(ax, 2.1, ye, 2.2, 0.95, "environment\n(the pendulum)", fc=_GREY_FILL, fontsize=8.3)
    _box(ax, 5.35, ye, 2.3, 0.95, "shift on a share p of steps:\nnoise · dropout · offset",
         ec=_RED, fc=_RED_FILL, fontsize=8.3)
    _box(ax, 9.2, ye, 2.1, 0.95, "policy\nacts on what it sees", ec=_GREEN, fc=_GREEN_FILL, fontsize=8.3)
    _arrow(ax, (3.2, ye + 0.1), (4.2, ye + 0.1))
    ax.text(3.7, ye + 0.32, "observation", fontsize=7.5, ha="center")
    _arrow(ax, (6.5, ye + 0.1), (8.15, ye + 0.1))
    ax.plot([9.2, 9.2, 2.1], [ye - 0.48, ye - 0.95, ye - 0.95], color=_INK, lw=1.0, zorder=1)
    _arrow(ax, (2.1, ye - 0.95), (2.1, ye - 0.48))
    ax.text(5.65, ye - 0.9, "action: its next observation depends on it", fontsize=7.5, ha="center",
            va="bottom")
    _arrow(ax, (9.2, y - 0.53), (9.2, ye + 0.48), color=_GREEN)
    ax.text(9.3, 1.85, "the same\nweights", fontsize=7.5, va="center")
    ax.text(10.35, ye, "score: the return,\nnormalised by the\nexpert's and the zero\npolicy's under the\nsame shift",
            fontsize=7.8, ha="left", va="center", color=_GREEN)
    return fig


# ------------------------------------------------------------------ 07_reproducing

HALFCHEETAH_CELLS = {"cfc": ("CfC", "C3"), "lstm": ("LSTM", "C1"), "rnn": ("RNN", "C0"), "gru": ("GRU", "C2")}
"""Name and colour of each cell in the HalfCheetah figures (the colours of the pendulum's grid)."""
HALFCHEETAH_CONDS = ("none", "noise", "dropout", "offset")
"""The four conditions of a closed-loop evaluation: in distribution, then the three shifts."""


def normalised_se(row, conds):
    """Standard error of a run's mean normalised return over ``conds``, from the
    10 episodes of each condition (the expert's mean on the same seeds taken as
    exact), for a row of the committed HalfCheetah data."""
    ses = [np.std(row[f"{c}_returns"], ddof=1) / np.sqrt(len(row[f"{c}_returns"])) / row[f"{c}_expert_return"]
           for c in conds]
    return float(np.sqrt(np.sum(np.square(ses))) / len(conds))


def halfcheetah_budget(hc, full):
    """Three panels from the committed HalfCheetah runs (``hc``: the 20-epoch grid,
    ``full``: the runs at the paper's protocol, both as read from their JSON files):
    the normalised returns of every grid point at both budgets beside the paper's
    Tables 5 and 6; the histogram of single episodes' returns (an episode runs or
    stalls); rank 1 against full rank at 150 epochs with standard errors."""
    from ..control import paper
    from ..control.analysis import grid_array

    fig = Figure(figsize=(13.5, 3.8), layout="constrained")
    axes = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.4, 1, 1]})
    jitter = np.random.default_rng(0)
    ax = axes[0]
    for g, (key, table) in enumerate((("none_normalised", 5), ("shift_normalised", 6))):
        for k, source in enumerate(("20 epochs", "150 epochs", "paper")):
            for cell, (name, color) in HALFCHEETAH_CELLS.items():
                if source == "20 epochs":
                    v = grid_array(hc["rows"], cell, key)[0].ravel()
                elif source == "150 epochs":
                    v = np.array([r[key] for r in full["rows"] if r["cell"] == cell])
                else:
                    v = paper.table(table, cell)[0].ravel()
                v = v[np.isfinite(v)]
                x = 4 * g + k + jitter.uniform(-0.25, 0.25, len(v))
                ax.scatter(x, v, s=9, color=color, alpha=0.7, label=name if (g, k) == (0, 0) else None)
    ax.axhline(1, color="k", lw=0.8)
    ax.set_xticks([0, 1, 2, 4, 5, 6], ["20 ep.", "150 ep.", "paper"] * 2)
    ax.text(1, 1.5, "in distribution", ha="center")
    ax.text(5, 1.5, "under shift", ha="center")
    ax.set(ylabel="normalised return (grid points)", ylim=(-0.1, 1.6),
           title="the budget closes the gap to the paper")
    ax.legend(fontsize=7, loc="lower right", ncol=2)

    ax = axes[1]
    grid_eps = np.array([v for r in hc["rows"] for v in r.get("none_returns", [])])
    full_eps = np.array([v for r in full["rows"] for v in r["none_returns"]])
    bins = np.linspace(-500, 8500, 37)
    ax.hist(grid_eps, bins=bins, alpha=0.6, label=f"20 epochs ({len(grid_eps)} episodes)")
    ax.hist(full_eps, bins=bins, alpha=0.8, label=f"150 epochs ({len(full_eps)} episodes)")
    ax.set(xlabel="return of one episode, in distribution", ylabel="episodes",
           title="an episode runs or it stalls")
    ax.legend(fontsize=7)

    ax = axes[2]
    pairs = [("cfc", 0), ("cfc", 1), ("lstm", 0)]
    for i, (cell, seed) in enumerate(pairs):
        for j, (rank, color) in enumerate(((1, "k"), (None, "0.6"))):
            row = next(r for r in full["rows"] if r["cell"] == cell and r["seed"] == seed
                       and r["rank"] == rank and r["sparsity"] == 0)
            for key, conds, marker, dx in (("none_normalised", HALFCHEETAH_CONDS[:1], "o", -0.08),
                                           ("shift_normalised", HALFCHEETAH_CONDS[1:], "s", 0.08)):
                where = "in distribution" if marker == "o" else "under shift"
                ax.errorbar(i + (j - 0.5) * 0.35 + dx, row[key], yerr=normalised_se(row, conds), fmt=marker,
                            color=color, ms=5, capsize=2,
                            label=f"rank {rank or 'full'}, {where}" if i == 0 else None)
    ax.set_xticks(range(3), [f"{HALFCHEETAH_CELLS[c][0]}, seed {s}" for c, s in pairs])
    ax.set(ylabel="normalised return ± SE", title="rank 1 against full rank, 150 epochs")
    ax.legend(fontsize=7)
    return fig


# ------------------------------------------------------------------ 04_jacobians_memory

def jacobian_blocks(n=12, seed=0):
    """The one-step Jacobians of the four cells, drawn entry by entry: the
    RNN's and the CfC's are dense, every entry through a recurrent matrix; the
    GRU's has the term ``D(z)`` on its diagonal; the LSTM's ``2n x 2n`` matrix
    (its whole state ``(h, c)``) has four blocks, and the ``c``-to-``c`` block
    is the diagonal ``D(f)``, the path on which the cell state is carried
    forward without a recurrent matrix. Real Jacobians of the package's cells
    (hidden ``n``, input 4, full rank, dense, seeded) at a random input and
    state, from :func:`rnnlab.theory.jacobians.recurrent_jacobian`. Exact zeros
    are white; every other entry is grey to black, on a log scale."""
    import matplotlib
    import torch
    from matplotlib.colors import ListedColormap

    from ..models import CELLS
    from ..theory.jacobians import recurrent_jacobian

    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(1, 4, generator=gen, dtype=torch.float64)
    h = 0.5 * torch.randn(1, n, generator=gen, dtype=torch.float64)
    c = 0.5 * torch.randn(1, n, generator=gen, dtype=torch.float64)
    J = {}
    for kind in ("rnn", "gru", "cfc"):
        J[kind] = recurrent_jacobian(CELLS[kind](4, n, seed=seed).double(), x, h)[0].abs().detach().numpy()
    lstm = CELLS["lstm"](4, n, seed=seed).double()
    J["lstm"] = recurrent_jacobian(lstm, x, (h, c), full_state=True)[0].abs().detach().numpy()
    vmax = max(A.max() for A in J.values())
    # grey (the floor, 1e-3 vmax, and below) to black; exact zeros masked, drawn white
    cmap = ListedColormap(matplotlib.colormaps["Greys"](np.linspace(0.15, 1.0, 256)))
    cmap.set_bad("white")

    fig = Figure(figsize=(11, 4.4), layout="constrained")
    axes = fig.subplots(1, 4, gridspec_kw={"width_ratios": [1, 1, 1, 2]})
    titles = {"rnn": "RNN: $D(\\tanh')\\,W$\nevery entry through $W$",
              "gru": "GRU: $D(z) + \\ldots$\n$D(z)$ on the diagonal",
              "cfc": "CfC: three terms\nevery entry through a $W$"}
    for ax, kind in zip(axes, ("rnn", "gru", "cfc", "lstm")):
        A = np.ma.masked_where(J[kind] == 0, J[kind])
        im = ax.imshow(A, cmap=cmap, norm=LogNorm(vmin=vmax * 1e-3, vmax=vmax, clip=True))
        ax.set_xticks([])
        ax.set_yticks([])
        if kind != "lstm":
            ax.set_title(titles[kind], fontsize=9)
            ax.set_xlabel("$h_{t-1}$")
            ax.set_ylabel("$h_t$")
    ax = axes[3]
    ax.set_title("LSTM, the whole state $(h, c)$: four blocks", fontsize=9)
    ax.axhline(n - 0.5, color=_RED, lw=1)
    ax.axvline(n - 0.5, color=_RED, lw=1)
    labels = {(0, 0): "$\\partial h_t/\\partial h_{t-1}$\nthrough $W$",
              (0, 1): "$D(o\\,\\tanh'(c_t)\\,f)$\ndiagonal",
              (1, 0): "$\\partial c_t/\\partial h_{t-1}$\nthrough $W$",
              (1, 1): "$D(f)$: the highway\nno $W$ on it"}
    for (i, j), text in labels.items():
        # the diagonal blocks' labels sit below their diagonal
        x, y = (j * n + 0.3 * n, i * n + 0.72 * n) if j == 1 else (j * n + n / 2 - 0.5, i * n + n / 2 - 0.5)
        ax.text(x, y, text, ha="center", va="center", fontsize=8.5,
                color=_RED if (i, j) == (1, 1) else _BLUE,
                bbox=dict(boxstyle="round,pad=0.25", fc="white", ec="none", alpha=0.85))
    ax.set_xticks([n / 2 - 0.5, 1.5 * n - 0.5], ["$h_{t-1}$", "$c_{t-1}$"])
    ax.set_yticks([n / 2 - 0.5, 1.5 * n - 0.5], ["$h_t$", "$c_t$"])
    fig.colorbar(im, ax=axes, shrink=0.7, label="|entry| (log scale); white: exactly 0")
    return fig


def backward_lanes(crosses=True):
    """The backward product ``J_T J_{T-1} ⋯`` unrolled, as a schematic: the
    RNN's one lane (every step through ``D(tanh') W``) and the LSTM's two
    lanes, ``h`` (through the recurrent matrices) and ``c`` (through the
    diagonal ``D(f)`` alone), with the two crossing blocks between them. A
    path that leaves the ``c`` lane for ``h`` and comes back is a *loop*; the
    red crosses mark the two crossing blocks that the ablation of
    ``05_rank_and_memory`` sets to zero (its exercise ``ex-lr-loops`` cuts
    the ``h -> h`` block too). With ``crosses=False`` (for
    ``04_jacobians_memory``, before that exercise) the crosses are left out
    and the shaded path is called a detour."""
    fig, ax = _canvas(10, 4.8, (-0.4, 10.6), (-1.1, 6.35))
    xs = [1.2, 3.9, 6.6, 9.3]
    names = ["T-3", "T-2", "T-1", "T"]
    box_w, box_h = 1.0, 0.62
    # the RNN: one lane
    ax.text(-0.3, 5.75, "RNN", fontsize=10, fontweight="bold", color=_INK, va="center")
    for x, t in zip(xs, names):
        _box(ax, x, 5.35, box_w, box_h, f"$h_{{{t}}}$", ec=_BLUE, fc=_BLUE_FILL, fontsize=10)
    for a, b in zip(xs[1:], xs[:-1]):
        _arrow(ax, (a - box_w / 2, 5.35), (b + box_w / 2, 5.35), color=_BLUE, lw=1.4)
        ax.text((a + b) / 2, 5.6, "$D(\\tanh')\\,W$", ha="center", fontsize=8.5, color=_BLUE)
    # the LSTM: two lanes
    yh, yc = 3.35, 0.75
    ax.text(-0.3, 4.25, "LSTM", fontsize=10, fontweight="bold", color=_INK, va="center")
    for x, t in zip(xs, names):
        _box(ax, x, yh, box_w, box_h, f"$h_{{{t}}}$", ec=_BLUE, fc=_BLUE_FILL, fontsize=10)
        _box(ax, x, yc, box_w, box_h, f"$c_{{{t}}}$", ec=_ORANGE, fc=_ORANGE_FILL, fontsize=10)
    for i, (a, b) in enumerate(zip(xs[1:], xs[:-1])):
        ra, lb = a - box_w / 2, b + box_w / 2
        _arrow(ax, (ra, yh), (lb, yh), color=_BLUE, lw=1.2)  # h -> h: through W
        _arrow(ax, (ra, yc), (lb, yc), color=_ORANGE, lw=2.6)  # c -> c: D(f)
        _arrow(ax, (ra, yc + 0.2), (lb, yh - 0.2), color=_BLUE, lw=1.0)  # dc_t/dh_{t-1}
        _arrow(ax, (ra, yh - 0.2), (lb, yc + 0.2), color=_GREEN, lw=1.0)  # dh_t/dc_{t-1}
        mid = (a + b) / 2
        for y in ((yh + yc) / 2 + 0.28, (yh + yc) / 2 - 0.28) if crosses else ():
            xm = mid + 0.22  # above the crossing: green; below: blue (h -> h stays)
            ax.plot([xm], [y], marker="x", color=_RED, ms=8, mew=2, zorder=4)
        ax.text(mid, yc - 0.42, "$D(f_t)$", ha="center", fontsize=9, color=_ORANGE)
    ax.text(5.25, -0.45, "blue: through recurrent matrices, $\\partial h_t/\\partial h_{t-1}$ ($W_o, W_i, W_g, W_f$) "
            "and $\\partial c_t/\\partial h_{t-1}$ ($W_i, W_g, W_f$);   green: $\\partial h_t/\\partial c_{t-1}"
            " = D(o\\,\\tanh'(c_t)\\,f)$, diagonal",
            ha="center", fontsize=8.3, color=_INK)
    ax.text(5.25, -0.9, "the gradient runs right to left, one Jacobian per step;  "
            "orange: the highway $D(f)$, no $W$ on it"
            + (";  red ×: the two crossings that the ablation sets to zero" if crosses else ""),
            ha="center", fontsize=8.3, color=_INK)
    # one loop highlighted: c_T -> h_{T-1} (through W) -> c_{T-2} (diagonal)
    loop_x = [xs[3] - box_w / 2, xs[2] + box_w / 2, xs[2] - box_w / 2, xs[1] + box_w / 2]
    loop_y = [yc + 0.2, yh - 0.2, yh - 0.2, yc + 0.2]
    ax.plot(loop_x, loop_y, color=_RED, lw=9, alpha=0.18, solid_capstyle="round", zorder=0)
    what = "a loop" if crosses else "a detour over two steps"
    ax.text(xs[2], yh + 0.55, what + ": $c \\to h \\to c$, through $W$", ha="center",
            fontsize=8.5, color=_RED)
    return fig
