"""Schematics of the scans chapter (``book/scans``).

The first three draw the worked example of ``01_associative_scan``: six
steps ``h_t = a_t h_{t-1} + b_t`` with the transitions :data:`EXAMPLE_A`, the
inputs :data:`EXAMPLE_B` and ``h_0 =`` :data:`EXAMPLE_H0` (the notebook draws
them with ``np.random.default_rng(0)`` and checks that they equal these). The
arithmetic is the package's own (``scan_algorithms.combine``,
``linear_scan_ref``). The last draws how the CPU and CUDA kernels of
``rnnlab.linear_scan`` assign the elements of a ``(B, T, C)`` tensor to
threads, with the kernels' own launch constants.
"""
from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from .drawing import INK, arrow as _arrow, box as _box, canvas as _canvas, num as _num

__all__ = ["EXAMPLE_A", "EXAMPLE_B", "EXAMPLE_H0", "GPU_CHUNKS", "GPU_CHUNK_CHANNELS",
           "affine_steps", "scan_tree", "backward_scan", "kernel_layout"]

EXAMPLE_A = (0.27, -0.46, -0.92, -0.97, 0.63, 0.83)
"""The transitions a_1 .. a_6 of the worked example of book/scans/01_associative_scan."""
EXAMPLE_B = (1.3, 0.95, -0.7, -1.27, -0.62, 0.04)
"""The inputs b_1 .. b_6 of the worked example."""
EXAMPLE_H0 = 0.5
"""The initial state of the worked example."""

GPU_CHUNKS = 16
"""``scan_cuda.CHUNKS`` on a GPU (the simulator uses 4): time chunks per thread block."""
GPU_CHUNK_CHANNELS = 32
"""``scan_cuda.CHUNK_CHANNELS`` on a GPU: channels per thread block (one warp)."""

_INK = INK
_BLUE, _BLUE_FILL = "#1f4e79", "#dbe8f5"
_GREEN, _GREEN_FILL = "#2f7a2f", "#e2f2e2"
_ORANGE, _ORANGE_FILL = "#c25e00", "#fbe6d0"
_GREY_FILL = "#f2f2f2"
_SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def _sub(n):
    """``n`` in subscript digits: ``_sub(12) == '₁₂'``."""
    return str(n).translate(_SUB)


def _signed(x, digits=3):
    """``+ 0.5`` or ``− 0.5``: a term after another one."""
    return ("− " if x < 0 else "+ ") + _num(abs(x), digits)


def _pair(p, digits=3):
    return f"({_num(p[0], digits)}, {_num(p[1], digits)})"


def _example():
    from ..kernels import scan_algorithms as sa

    a, b = np.array(EXAMPLE_A), np.array(EXAMPLE_B)
    states, h = [], EXAMPLE_H0
    for a_t, b_t in zip(a, b):
        h = a_t * h + b_t
        states.append(h)
    return sa, a, b, states


# ------------------------------------------------------------------ 01_associative_scan

def affine_steps():
    """The six steps of the worked example as affine maps ``f_t(h) = a_t h + b_t``
    (top row, with the states they produce), the first two composed into one
    pair, and all six composed into the pair ``(A_6, B_6)`` that maps ``h_0``
    straight to ``h_6``."""
    sa, a, b, states = _example()
    S = 2.0                                    # distance between two states
    fig, ax = _canvas(11, 3.4, (-0.7, 6 * S + 0.7), (-3.25, 0.75))
    y1, y2, y3 = 0.0, -1.45, -2.65

    # row 1: h_0 -> f_1 -> h_1 -> ... -> h_6
    values = [EXAMPLE_H0] + list(states)
    for t, h in enumerate(values):
        ax.text(t * S, y1, f"h{_sub(t)}\n{_num(h)}", ha="center", va="center", fontsize=9.5,
                color=_GREEN if t else _INK, linespacing=1.25)
    w = 1.05
    for t in range(1, 7):
        x = (t - 0.5) * S
        _box(ax, x, y1, w, 0.62, f"f{_sub(t)}\n{_num(a[t - 1])} h {_signed(b[t - 1])}",
             ec=_BLUE, fc=_BLUE_FILL, fontsize=8)
        _arrow(ax, ((t - 1) * S + 0.32, y1), (x - w / 2, y1))
        _arrow(ax, (x + w / 2, y1), (t * S - 0.32, y1))
    ax.text(-0.6, 0.55, "one step is an affine map: the pair (aₜ, bₜ)", fontsize=8.5,
            color=_BLUE, va="center")

    # row 2: the first two steps composed
    p12 = sa.combine((a[0], b[0]), (a[1], b[1]))
    left, right = 0.5 * S - w / 2, 1.5 * S + w / 2
    _box(ax, (left + right) / 2, y2, right - left, 0.62,
         f"(a₁, b₁) ∘ (a₂, b₂) = {_pair(p12)}", ec=_ORANGE, fc=_ORANGE_FILL, fontsize=8.5)
    _arrow(ax, (0, y1 - 0.33), (left, y2), rad=0.35)
    _arrow(ax, (right, y2), (2 * S, y1 - 0.33), rad=0.35)
    ax.text(right + 0.9, y2,
            f"f₁ then f₂ is one affine map:  h₂ = {_num(p12[0])} · {_num(EXAMPLE_H0)} "
            f"{_signed(p12[1])} = {_num(p12[0] * EXAMPLE_H0 + p12[1])}",
            fontsize=8.5, va="center", color=_ORANGE)

    # row 3: all six composed
    total = (a[0], b[0])
    for t in range(1, 6):
        total = sa.combine(total, (a[t], b[t]))
    left, right = 0.5 * S - w / 2, 5.5 * S + w / 2
    _box(ax, (left + right) / 2, y3, right - left, 0.62,
         f"(a₁, b₁) ∘ (a₂, b₂) ∘ ⋯ ∘ (a₆, b₆) = (A₆, B₆) = {_pair(total)}:   "
         f"h₆ = {_num(total[0])} · {_num(EXAMPLE_H0)} {_signed(total[1])} "
         f"= {_num(total[0] * EXAMPLE_H0 + total[1])}",
         ec=_ORANGE, fc=_ORANGE_FILL, fontsize=8.5)
    _arrow(ax, (0, y1 - 0.33), (left, y3), rad=0.3)
    _arrow(ax, (right, y3), (6 * S, y1 - 0.33), rad=0.3)
    return fig


_TREE_STEPS = (((1, 2), (3, 4), (5, 6)), ((2, 3), (2, 4)), ((4, 5), (4, 6)))
"""The combines of the tree scan of six inputs, step by step: (first, second) slots,
the result written to the second (slots numbered 1 .. 6 like the steps)."""


def _segment(first, last):
    if first == last:
        return f"x{_sub(first)}"
    if last == first + 1:
        return f"x{_sub(first)} ∘ x{_sub(last)}"
    return f"x{_sub(first)} ∘ ⋯ ∘ x{_sub(last)}"


def scan_tree():
    """All six prefixes of the worked example by a tree of pairwise combines:
    three parallel steps (seven combines) instead of the loop's five steps.
    Each box shows which inputs it composes and its pair (A, B); the top row
    the states ``h_t = A_t h_0 + B_t``."""
    sa, a, b, states = _example()
    S, R = 1.9, 1.2                            # column and row spacing
    fig, ax = _canvas(11, 5.2, (-2.3, 5 * S + 0.85), (-0.55, 4 * R + 0.55))
    w, h = 1.5, 0.62
    slots = {t: (t, t, (a[t - 1], b[t - 1]), 0) for t in range(1, 7)}   # first, last, pair, row
    for t in range(1, 7):
        x = (t - 1) * S
        ax.plot([x, x], [0, 4 * R], color="#d8d8d8", lw=0.8, zorder=0)
        _box(ax, x, 0, w, h, f"x{_sub(t)} = (a{_sub(t)}, b{_sub(t)})\n{_pair(slots[t][2])}",
             fc=_GREY_FILL, fontsize=8)
    ax.text(-1.0, 0, "inputs", ha="right", va="center", fontsize=9)
    work = 0
    for step, combines in enumerate(_TREE_STEPS, start=1):
        new = {}
        for first, second in combines:
            f0, _, pf, rf = slots[first]
            _, s1, ps, rs = slots[second]
            new[second] = (f0, s1, sa.combine(pf, ps), step)
            x = (second - 1) * S
            _arrow(ax, ((first - 1) * S + (0.3 if first != second else 0), rf * R + h / 2),
                   (x - 0.3, step * R - h / 2), color=_BLUE)
            _arrow(ax, (x, rs * R + h / 2), (x, step * R - h / 2), color=_BLUE)
        slots.update(new)
        work += len(combines)
        for second, (f0, s1, pair, _) in new.items():
            done = f0 == 1
            _box(ax, (second - 1) * S, step * R, w, h, f"{_segment(f0, s1)}\n{_pair(pair)}",
                 ec=_GREEN if done else _BLUE, fc=_GREEN_FILL if done else _BLUE_FILL, fontsize=8)
        ax.text(-1.0, step * R, f"step {step}", ha="right", va="center", fontsize=9)
    for t in range(1, 7):
        _, _, (A, B), row = slots[t]
        x = (t - 1) * S
        _arrow(ax, (x, row * R + h / 2), (x, 4 * R - 0.28), color=_GREEN, lw=1.2)
        ax.text(x, 4 * R, f"h{_sub(t)} = {_num(A * EXAMPLE_H0 + B)}", ha="center", va="center",
                fontsize=9.5, color=_GREEN)
        assert np.isclose(A * EXAMPLE_H0 + B, states[t - 1])
    ax.text(-1.0, 4 * R, f"states\nAₜ · {_num(EXAMPLE_H0)} + Bₜ", ha="right", va="center",
            fontsize=9, linespacing=1.25)
    ax.text(-2.2, 4 * R + 0.45, f"{work} combines in {len(_TREE_STEPS)} parallel steps "
            f"(the loop: {len(a) - 1} combines, one after another)", fontsize=8.5, va="center",
            color=_BLUE)
    return fig


# ------------------------------------------------------------------ 02_gradients_and_kernels

def backward_scan():
    """The forward recurrence of the worked example (top) and its backward pass
    for the loss ``L = h_1 + ... + h_6`` (bottom): the total gradients
    ``G_t = g_t + a_{t+1} G_{t+1}`` run against time, the same recurrence
    with the transitions shifted by one step."""
    import torch

    from .. import linear_scan_ref

    sa, a, b, states = _example()
    T = len(a)
    g = np.ones(T)                             # L = h_1 + ... + h_T: every direct gradient is 1
    a_next = np.append(a[1:], 0.0)
    G = linear_scan_ref(torch.tensor(a_next).reshape(1, T, 1), torch.tensor(g).reshape(1, T, 1),
                        reverse=True).flatten().numpy()
    S = 1.75
    fig, ax = _canvas(11, 3.6, (-0.9, T * S + 0.7), (-2.3, 1.55))
    yf, yb = 0.85, -0.85
    ax.text(-0.8, yf + 0.55, "forward: hₜ = aₜ hₜ₋₁ + bₜ", fontsize=9, color=_BLUE)
    ax.text(-0.8, yb - 1.3, "backward: Gₜ = gₜ + aₜ₊₁ Gₜ₊₁, with gₜ = ∂L/∂hₜ = 1 for "
            "L = h₁ + ⋯ + h₆", fontsize=9, color=_ORANGE)
    for t in range(T + 1):
        x = t * S
        _box(ax, x, yf, 0.95, 0.5, f"h{_sub(t)} = {_num([EXAMPLE_H0, *states][t])}",
             ec=_BLUE, fc=_BLUE_FILL, fontsize=8)
        if t:
            _box(ax, x, yb, 0.95, 0.5, f"G{_sub(t)} = {_num(G[t - 1])}",
                 ec=_ORANGE, fc=_ORANGE_FILL, fontsize=8)
            _arrow(ax, ((t - 1) * S + 0.48, yf), (x - 0.48, yf), color=_BLUE)
            ax.text((t - 0.5) * S, yf + 0.12, f"× {_num(a[t - 1], 2)}", ha="center",
                    va="bottom", fontsize=7.5, color=_BLUE)
            ax.text((t - 0.5) * S, yf - 0.12, f"{_signed(b[t - 1], 2)}", ha="center",
                    va="top", fontsize=7.5, color=_BLUE)
            _arrow(ax, (x, yb - 0.75), (x, yb - 0.25), color=_ORANGE)
            ax.text(x + 0.07, yb - 0.62, f"g{_sub(t)} = 1", fontsize=7.5, color=_ORANGE,
                    va="center")
        if 1 <= t < T:
            _arrow(ax, (x + S - 0.48, yb), (x + 0.48, yb), color=_ORANGE)
            ax.text((t + 0.5) * S, yb + 0.12, f"× {_num(a[t], 2)}", ha="center",
                    va="bottom", fontsize=7.5, color=_ORANGE)
    _arrow(ax, (S - 0.48, yb), (0.48, yb), color=_ORANGE, ls="--")
    ax.text(0, yb, f"dL/dh₀\n= a₁G₁\n= {_num(a[0] * G[0], 3)}", ha="center", va="center",
            fontsize=7.5, color=_ORANGE, linespacing=1.2)
    ax.text(0.5 * S, yb + 0.12, f"× {_num(a[0], 2)}", ha="center", va="bottom", fontsize=7.5,
            color=_ORANGE)
    ax.text(-0.8, (yf + yb) / 2, "the gradients of the inputs:   dL/dbₜ = Gₜ,   dL/daₜ = Gₜ hₜ₋₁,   "
            "dL/dh₀ = a₁ G₁", fontsize=8.5, color=_INK, va="center")
    return fig


def kernel_layout():
    """Which thread computes which element of one batch row of a ``(B, T, C)``
    tensor (T = 32 steps down, C = 64 channels across, contiguous in memory), in
    the CPU kernel (jobs of a batch row and a block of channels, 2 threads), the
    sequential CUDA kernel (a thread per channel, warps of 32 reading one step
    of 32 neighbouring channels at once) and the chunked CUDA kernel (a thread
    per chunk of time and channel, a block of 32 channels x 16 chunks)."""
    from ..kernels import scan_cpu

    T, C, threads = 32, 64, 2
    block = scan_cpu.channel_block(1, C, threads)
    fig = Figure(figsize=(11, 4.9))
    titles = ["CPU kernel", "CUDA kernel, sequential", "CUDA kernel, chunked"]
    axes = [fig.add_axes((0.045 + k * 0.325, 0.25, 0.27, 0.63)) for k in range(3)]
    blues = ["#c6dbef", "#9ecae1"]
    oranges = ["#fdd0a2", "#fdae6b"]
    for k, ax in enumerate(axes):
        ax.set_xlim(0, C)
        ax.set_ylim(T, 0)
        ax.set_xticks([0, 16, 32, 48, 64])
        ax.set_yticks([0, 8, 16, 24, 32])
        ax.tick_params(labelsize=7.5, length=2)
        ax.set_xlabel("channel c (neighbours in memory) →", fontsize=8)
        if k == 0:
            ax.set_ylabel("time step t ↓", fontsize=8)
        ax.set_title(titles[k], fontsize=10, color=_INK)
        for spine in ax.spines.values():
            spine.set_color("#888888")

    # CPU: jobs of (batch row, block of channels), each loops over time, SIMD across its block
    ax = axes[0]
    for j in range(C // block):
        ax.add_patch(Rectangle((j * block, 0), block, T, fc=blues[j % 2], ec="white", lw=1.2))
        ax.text(j * block + block / 2, 30.5, f"job {j}", ha="center", fontsize=7.5, color=_BLUE)
    ax.add_patch(Rectangle((0, 5), block, 1, fc="none", ec=_BLUE, lw=1.3))
    _arrow(ax, (1, 8), (block - 1, 8), color=_BLUE)
    ax.text(block + 1, 6.5, f"step t of job 0: its {block} channels,\na few per SIMD instruction, in cache",
            fontsize=7, color=_BLUE, va="center",
            bbox=dict(fc="white", ec="none", pad=1.0, alpha=0.85))
    _arrow(ax, (block / 2, 11), (block / 2, 27), color=_BLUE, lw=1.2)
    ax.text(block / 2 + 1, 19, "loop over\ntime", fontsize=7, color=_BLUE, va="center")
    ax.text(0, -0.21, f"B = 1, {threads} threads: {C // block} jobs of {block} channels "
            "(channel_block);\nprange hands the jobs to the cores",
            transform=ax.transAxes, fontsize=7.5, va="top", color=_INK, linespacing=1.3)

    # CUDA sequential: one thread per (batch row, channel); a warp = 32 neighbouring channels
    ax = axes[1]
    for c in range(C):
        warp = c // 32
        shades = blues if warp == 0 else oranges
        ax.add_patch(Rectangle((c, 0), 1, T, fc=shades[c % 2], ec="none"))
    for warp in range(C // 32):
        ax.text(warp * 32 + 16, 30.5, f"warp {warp}: threads {32 * warp}..{32 * warp + 31}",
                ha="center", fontsize=7, color=_BLUE if warp == 0 else _ORANGE)
    ax.add_patch(Rectangle((0, 9), 32, 1, fc="none", ec=_BLUE, lw=1.4))
    ax.add_patch(Rectangle((32, 9), 32, 1, fc="none", ec=_ORANGE, lw=1.4))
    ax.text(32, 7.8, "step t: each warp reads 32 neighbouring\nvalues at once (one coalesced access)",
            ha="center", fontsize=7, va="bottom", color=_INK)
    _arrow(ax, (40.5, 12), (40.5, 27), color=_ORANGE, lw=1.2)
    ax.text(42, 19.5, "thread 40\nruns channel 40\nthrough all t", fontsize=7, va="center",
            color=_ORANGE)
    ax.text(0, -0.21, "one thread per (sequence, channel): B · C threads,\nevery input read once",
            transform=ax.transAxes, fontsize=7.5, va="top", color=_INK, linespacing=1.3)

    # CUDA chunked: a block of GPU_CHUNK_CHANNELS channels x GPU_CHUNKS chunks of time
    ax = axes[2]
    length = T // GPU_CHUNKS
    for g in range(C // GPU_CHUNK_CHANNELS):
        shades = blues if g == 0 else oranges
        for k in range(GPU_CHUNKS):
            ax.add_patch(Rectangle((g * GPU_CHUNK_CHANNELS, k * length), GPU_CHUNK_CHANNELS, length,
                                   fc=shades[k % 2], ec="none"))
        ax.text(g * GPU_CHUNK_CHANNELS + 16, 31, f"thread block {g}", ha="center",
                fontsize=7, color=_BLUE if g == 0 else _ORANGE, va="center",
                bbox=dict(fc="white", ec="none", pad=1.0, alpha=0.85))
    x = 40
    ax.add_patch(Rectangle((x, 6), 1, length, fc=_ORANGE, ec="none"))
    _arrow(ax, (44, 13.2), (x + 0.6, 8.2), color=_INK, lw=0.8, style="->")
    ax.text(44, 14.8, f"thread (k = 3, c = {x}):\nchunk 3 = steps {3 * length}..{4 * length - 1}"
            f"\nof channel {x}", fontsize=7, va="center", ha="center", color=_INK,
            bbox=dict(fc="white", ec="none", pad=1.0, alpha=0.85), linespacing=1.2)
    ax.text(16, 15.5, f"a block: {GPU_CHUNKS} chunks\n× {GPU_CHUNK_CHANNELS} channels\n"
            f"= {GPU_CHUNKS * GPU_CHUNK_CHANNELS} threads", ha="center", va="center", fontsize=7,
            color=_BLUE, bbox=dict(fc="white", ec="none", pad=1.0, alpha=0.85), linespacing=1.2)
    ax.text(0, -0.21, "1 reduce each chunk · 2 scan the chunk maps\nin shared memory · "
            "3 rescan from the carry",
            transform=ax.transAxes, fontsize=7.5, va="top", color=_INK, linespacing=1.3)
    fig.text(0.5, 0.965, f"one batch row of a (B, T, C) tensor, T = {T}, C = {C}: element (i, t, c) "
             "sits at offset (iT + t)C + c; a colour band is one job (CPU), one thread (sequential)\n"
             f"or one chunk of {GPU_CHUNK_CHANNELS} channels, one thread per channel (chunked)",
             ha="center", va="center", fontsize=8.5, color=_INK)
    return fig
