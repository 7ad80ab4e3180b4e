"""Schematics of the LDS chapter (``book/lds``).

``companion_modal`` draws the running example of ``01_modal_form`` (two
conjugate pairs, :data:`EXAMPLE_EIGENVALUES`) twice: in companion form, a
shift register whose first cell is fed back with the coefficients ``-c``
that the package's ``monic_coefficients`` computes from the eigenvalues,
and in modal form, four independent modes, each a point turning by its angle
and shrinking by its radius at every step, driven with the weights ``B'``
of ``modal_input_weights``. ``paper_lds`` draws the copying-memory model of
``04_copy_memory`` with the sizes of ``rnnlab.experiments.copy_memory.paper_lds``;
``ldstack_staircase`` the layers and steps of an LDStack of depth
:data:`STAIRCASE_DEPTH` and the corrections that the exactness proof of
``02_ldstack`` walks along; ``ldstack_schedules`` the two orders in which
the cells of that grid can be computed (layer by layer with scans, or all
layers together, one step at a time, as the package's ``LDStack`` does);
``conjugate_phasors`` why a conjugate pair of modes adds up to ``2 Re``.
"""
from __future__ import annotations

import cmath
import math

import numpy as np
from matplotlib.patches import Circle, Rectangle

from .drawing import arrow as _arrow, box as _box, canvas as _canvas, num as _num

__all__ = ["EXAMPLE_EIGENVALUES", "STAIRCASE_DEPTH", "example_coefficients", "companion_modal",
           "paper_lds", "ldstack_staircase", "ldstack_schedules", "conjugate_phasors"]

EXAMPLE_EIGENVALUES = (0.9 * cmath.exp(0.5j), 0.7 * cmath.exp(2j),
                       0.9 * cmath.exp(-0.5j), 0.7 * cmath.exp(-2j))
"""The eigenvalues of the running example of book/lds/01_modal_form (two conjugate pairs)."""
STAIRCASE_DEPTH = 5
"""Layers (and steps) of the LDStack drawn by :func:`ldstack_staircase`."""

_INK = "#333333"
_BLUE, _BLUE_FILL = "#1f4e79", "#dbe8f5"
_GREEN, _GREEN_FILL = "#2f7a2f", "#e2f2e2"
_ORANGE, _ORANGE_FILL = "#c25e00", "#fbe6d0"
_GREY, _GREY_FILL = "#888888", "#f2f2f2"


def example_coefficients():
    """``(c, B')`` of the running example: the companion coefficients ``c_1 .. c_n``
    (real) and the modal input weights, both by the package's own functions."""
    import torch

    from ..models.lds import modal_input_weights, monic_coefficients

    lam = torch.tensor(EXAMPLE_EIGENVALUES, dtype=torch.complex128)
    return monic_coefficients(lam).real.numpy(), modal_input_weights(lam).numpy()


def _complex(z, digits=2):
    sign = "−" if z.imag < 0 else "+"
    return f"{_num(z.real, digits)} {sign} {_num(abs(z.imag), digits)}i"


# ------------------------------------------------------------------ 01_modal_form

def companion_modal():
    """The running example as a shift register (left) and as four independent
    rotating modes (right): the same system in two sets of coordinates."""
    c, bprime = example_coefficients()
    n = len(c)
    fig, ax = _canvas(11, 4.3, (-0.6, 13.4), (-4.6, 1.0))

    # left: the companion form, a shift register
    ax.text(-0.4, 0.72, "companion form: a shift register", fontsize=10, color=_BLUE,
            fontweight="bold", va="center")
    xs = [1.6 + 1.4 * k for k in range(n)]
    y = -0.55
    names = ["zₜ₋₁", "zₜ₋₂", "zₜ₋₃", "zₜ₋₄"]        # the state before step t
    for k, (x, name) in enumerate(zip(xs, names)):
        _box(ax, x, y, 1.0, 0.7, name, ec=_BLUE, fc=_BLUE_FILL, fontsize=10)
        if k:
            _arrow(ax, (xs[k - 1] + 0.5, y), (x - 0.5, y))
    # x_t and the feedback −c_k z_{t-k} of the cells z_{t-1} .. z_{t-4} (the taps:
    # only the stored past values, never z_t itself) are summed into z_t; z_t
    # leaves the sum and is shifted into the first cell for the next step
    xsum = 0.15
    _box(ax, xsum, y, 0.5, 0.5, "Σ", ec=_INK, fc="white", fontsize=11)
    _arrow(ax, (xsum + 0.25, y), (xs[0] - 0.5, y), ls="--")
    ax.text((xsum + 0.25 + xs[0] - 0.5) / 2, y + 0.12, "zₜ", fontsize=9, ha="center",
            va="bottom", color=_INK)
    ax.text((xsum + 0.25 + xs[0] - 0.5) / 2, y - 0.12, "next\nstep", fontsize=6.5,
            ha="center", va="top", color=_GREY, linespacing=1.0)
    ax.text(xsum, 0.2, "xₜ", fontsize=10, ha="center", va="center")
    _arrow(ax, (xsum, 0.05), (xsum, y + 0.25))
    ybus = -2.6
    for k, x in enumerate(xs):
        ax.plot([x, x], [y - 0.35, ybus], color=_ORANGE, lw=1)
        ax.text(x + 0.1, (y - 0.35 + ybus) / 2, f"× (−c{'₁₂₃₄'[k]}) = {_num(-c[k], 3)}",
                fontsize=7.5, color=_ORANGE, va="center", rotation=90)
    ax.plot([xsum, xs[-1]], [ybus, ybus], color=_ORANGE, lw=1)
    _arrow(ax, (xsum, ybus), (xsum, y - 0.25), color=_ORANGE)
    ax.text(xs[0] - 0.7, ybus - 0.35, "the weighted past cells plus xₜ give zₜ; at the next "
            "step the register shifts by one", fontsize=7.5, color=_ORANGE)
    ax.text(-0.4, -4.25, "zₜ = −c₁zₜ₋₁ − … − c₄zₜ₋₄ + xₜ: the new cell depends on all the others",
            fontsize=8.5, color=_INK)

    # right: the modal form, independent rotating modes
    x0 = 7.3
    ax.text(x0 - 0.3, 0.72, "modal form: independent rotating modes", fontsize=10,
            color=_GREEN, fontweight="bold", va="center")
    ybus_in = -0.05                                   # x_t runs along a bus above the modes
    ax.text(x0 - 0.3, ybus_in, "xₜ", fontsize=11, va="center")
    ax.plot([x0 + 0.05, x0 + 1.2 + 1.4 * (n - 1)], [ybus_in, ybus_in], color=_GREY, lw=0.7)
    R = 0.55
    ylab = -0.62                                      # the weight B'_i on the way into mode i
    centres = [(x0 + 1.2 + 1.4 * i, -1.85) for i in range(n)]
    for i, ((cx, cy), lam, b) in enumerate(zip(centres, EXAMPLE_EIGENVALUES, bprime)):
        ax.add_patch(Circle((cx, cy), R, fill=False, ec=_GREY, lw=0.8, ls="--"))
        ax.add_patch(Circle((cx, cy), R * abs(lam), fill=True, fc=_GREEN_FILL, ec=_GREEN, lw=1))
        # the point λ and the next powers λ², λ³: the rotation by θ = arg λ
        for p, alpha in ((1, 1.0), (2, 0.45), (3, 0.2)):
            z = lam ** p
            ax.plot(cx + R * z.real, cy + R * z.imag, "o", ms=4, color=_GREEN, alpha=alpha)
        ax.plot([cx, cx + R * lam.real], [cy, cy + R * lam.imag], color=_GREEN, lw=1)
        ax.text(cx, cy - R - 0.28, f"λ{'₁₂₃₄'[i]} = {_num(abs(lam), 1)}·e^({_num(cmath.phase(lam), 1)}i)",
                fontsize=7.5, ha="center", color=_GREEN)
        # x_t -> [× B'_i] -> mode i: the weight sits on the arrow into its mode
        ax.plot([cx, cx], [ybus_in, ylab + 0.2], color=_GREY, lw=0.7)
        _box(ax, cx, ylab, 1.22, 0.4, f"× B′{'₁₂₃₄'[i]}\n{_complex(b)}", ec=_GREY, fc="white",
             fontsize=6.5, linespacing=1.1)
        _arrow(ax, (cx, ylab - 0.2), (cx, cy + R * abs(lam)), color=_GREY, lw=0.7)
        _arrow(ax, (cx, cy - R - 0.45), (x0 + 3.3, -3.45), color=_GREY, lw=0.7)
    _box(ax, x0 + 3.3, -3.7, 2.2, 0.5, "yₜ = Re(C′s′ₜ)", ec=_INK, fc="white", fontsize=9)
    ax.text(x0 - 0.3, -4.25, "s′ₜ,ᵢ = λᵢ s′ₜ₋₁,ᵢ + B′ᵢ xₜ: each mode on its own (dots: λ, λ², λ³)",
            fontsize=8.5, color=_INK)
    ax.plot([6.75, 6.75], [-4.5, 0.9], color=_GREY, lw=0.6, ls=":")
    return fig


# ------------------------------------------------------------------ 04_copy_memory

def paper_lds(blocks=10, modes=16, tokens=10):
    """The copying-memory model as it computes: one-hot tokens, the mixing E into
    one channel per block, B′ = 1 feeding channel j to each of block j's sixteen
    modes, every mode its own recurrence s′ₜ,ᵢ = λᵢ s′ₜ₋₁,ᵢ + uₜ,ⱼ (a ×λᵢ
    self-loop, |λᵢ| = 1), all modes read out in parallel by the complex C′."""
    fig, ax = _canvas(11, 5.2, (-0.3, 11.3), (-5.3, 0.9))
    ax.text(-0.2, 0.62, f"paper_lds: {blocks} blocks × {modes} modes in parallel, "
            "3380 trained parameters", fontsize=10, fontweight="bold", color=_INK, va="center")
    ymid = -2.35
    _box(ax, 0.55, ymid, 1.0, 2.4, f"xₜ\none-hot\n{tokens} tokens", ec=_INK, fc=_GREY_FILL, fontsize=8.5)
    _box(ax, 2.05, ymid, 1.1, 2.4, f"E\n{tokens}×{tokens}\nmixing\n(100)", ec=_ORANGE, fc=_ORANGE_FILL,
         fontsize=8.5)
    _arrow(ax, (1.05, ymid), (1.5, ymid))
    sub = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
    shown = [0, 1, blocks - 1]
    tops = [0.0, -1.6, -3.45]
    shown_modes = [0, 1, modes - 1]
    x_u, x_mode = 3.15, 5.6
    for j, top in zip(shown, tops):
        name = "u" + str(j + 1).translate(sub)
        ys = [top - 0.15, top - 0.6, top - 1.15]
        yu = (ys[0] + ys[-1]) / 2
        ax.add_patch(Rectangle((x_mode - 0.35, ys[-1] - 0.25), 1.45, ys[0] - ys[-1] + 0.5,
                               fc="none", ec=_GREEN, lw=0.6, ls="--"))
        ax.text(x_mode - 0.4, ys[0] + 0.02, f"block {j + 1}\n{modes} modes", fontsize=7,
                color=_GREEN, ha="right", va="center")
        ax.text(x_u, yu, name, fontsize=9, ha="center", va="center", color=_INK,
                bbox=dict(boxstyle="round,pad=0.15", fc="white", ec=_ORANGE, lw=0.8))
        _arrow(ax, (2.6, ymid), (x_u - 0.22, yu), color=_GREY, lw=0.7)
        for i, y in zip(shown_modes, ys):
            if i == modes - 1:
                ax.text(x_mode, (ys[1] + y) / 2 + 0.02, "⋮", fontsize=9, ha="center", va="center")
            idx = j * modes + i + 1
            _arrow(ax, (x_u + 0.25, yu), (x_mode - 0.2, y), color=_GREY, lw=0.7)
            ax.add_patch(Circle((x_mode, y), 0.17, fc=_GREEN_FILL, ec=_GREEN, lw=0.9, zorder=2))
            ax.text(x_mode, y, f"s′{str(idx).translate(sub)}", fontsize=6.5, ha="center",
                    va="center", zorder=3)
            ax.annotate("", xy=(x_mode + 0.12, y + 0.12), xytext=(x_mode + 0.12, y - 0.12),
                        arrowprops=dict(arrowstyle="-|>", color=_GREEN, lw=1.0, mutation_scale=8,
                                        shrinkA=0, shrinkB=0, connectionstyle="arc3,rad=1.4"))
            ax.text(x_mode + 0.45, y, f"×λ{str(idx).translate(sub)}", fontsize=7.5,
                    color=_GREEN, va="center")
            _arrow(ax, (x_mode + 1.12, y), (9.05, ymid), color=_GREY, lw=0.6)
    ax.text(x_mode, -3.24, "⋮", fontsize=14, ha="center", va="center")
    ax.text(x_u, -3.0, "⋮", fontsize=14, ha="center", va="center")
    ax.text(4.1, 0.2, "B′ = 1: uⱼ feeds every mode of block j", fontsize=7.5, color=_INK, ha="center")
    _box(ax, 9.55, ymid, 0.95, 2.4, f"C′\n{blocks * modes}×{tokens}\ncomplex\n(3200)", ec=_BLUE,
         fc=_BLUE_FILL, fontsize=8.5)
    _box(ax, 10.75, ymid, 0.8, 1.2, f"Re\n{tokens}\nlogits", ec=_INK, fc="white", fontsize=8.5)
    _arrow(ax, (10.03, ymid), (10.35, ymid))
    ax.text(-0.2, -5.15, "each mode on its own: s′ₜ,ᵢ = λᵢ s′ₜ₋₁,ᵢ + uₜ,ⱼ for the modes i of block j; "
            f"|λᵢ| = 1 exactly, {blocks * modes // 2} conjugate pairs, one angle θ each "
            f"({blocks * modes // 2} parameters)", fontsize=8.5, color=_GREEN)
    return fig


# ------------------------------------------------------------------ 02_ldstack

def ldstack_staircase(depth=STAIRCASE_DEPTH):
    """Layers k = 1..depth against steps t = 1..depth: the cells that layer k gets
    exactly right (t ≤ k) shaded, and the corrections p⁽ᵏ⁻¹⁾ₜ₋₁ = δ(A s⁽ᵏ⁻¹⁾ₜ₋₁)
    that carry an exact step of layer k − 1 into the next step of layer k."""
    fig, ax = _canvas(8.2, 4.6, (-1.5, depth + 1.9), (-0.2, depth + 1.1))
    for k in range(1, depth + 1):
        for t in range(1, depth + 1):
            exact = t <= k
            ax.add_patch(Rectangle((t - 0.4, k - 0.32), 0.8, 0.64, ec=_GREEN if exact else _GREY,
                                   fc=_GREEN_FILL if exact else "white", lw=1, zorder=2))
            ax.text(t, k, f"s{'⁽' + '¹²³⁴⁵⁶⁷⁸⁹'[k - 1] + '⁾'}{'₁₂₃₄₅₆₇₈₉'[t - 1]}", ha="center",
                    va="center", fontsize=9, color=_INK if exact else _GREY, zorder=3)
            if t > 1:
                _arrow(ax, (t - 0.6, k), (t - 0.4, k), color=_GREY, lw=0.7)
        ax.text(-0.35, k, f"layer {k}" + (" (LDS)" if k == 1 else ""), ha="right", va="center",
                fontsize=9)
    # every correction: layer k at step t uses δ(A s⁽ᵏ⁻¹⁾ₜ₋₁) from layer k − 1, one step
    # behind (at t = 1 the state s₀ = 0 needs none). Solid where layer k − 1 is exact
    # at t − 1 (the ones the proof uses: t ≤ k), faint where it is not.
    for k in range(2, depth + 1):
        for t in range(2, depth + 1):
            used = t <= k
            _arrow(ax, (t - 1 + 0.2, k - 1 + 0.32), (t - 0.2, k - 0.32), color=_ORANGE,
                   lw=1.3 if used else 0.7, ls="-" if used else ":")
    ax.text(depth + 0.6, depth - 0.5, "δ(A s⁽ᵏ⁻¹⁾ₜ₋₁)\ncorrects layer k\nat step t\n"
            "solid: from an\nexact cell", fontsize=8.5, color=_ORANGE, va="center")
    for t in range(1, depth + 1):
        ax.text(t, 0.35, f"t = {t}", ha="center", fontsize=8.5)
    ax.text(-1.4, depth + 0.75, "shaded: layer k equals the RNN on steps t ≤ k", fontsize=9,
            color=_GREEN)
    return fig


def ldstack_schedules(depth=4, steps=8):
    """Two schedules for the layers × steps grid of an LDStack, as a matplotlib Figure.

    Each cell (layer i, step t) holds the parallel rounds in which it is
    computed; cells of one round are computed at the same time, and both panels
    share one colour scale (the last round of a cell). Left: layer by layer,
    layer k is one linear scan over all ``steps``, ⌈log₂ T⌉ rounds for a
    Hillis–Steele scan, so the layer's cells are finished in rounds
    (k − 1)⌈log₂ T⌉ + 1 .. k⌈log₂ T⌉ and the stack in depth·⌈log₂ T⌉ rounds. Right:
    one pass over time, as :class:`rnnlab.models.LDStack` runs it: round t
    advances every layer by one step (layer k at step t needs layers k and
    k − 1 at step t − 1), ``steps`` rounds in all.
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 3.6))
    axes = fig.subplots(1, 2)
    rounds = math.ceil(math.log2(steps))
    last = np.repeat(rounds * np.arange(1, depth + 1)[:, None], steps, 1)
    by_layer = [[f"{r - rounds + 1}–{r}" for r in row] for row in last]
    by_step = np.repeat(np.arange(1, steps + 1)[None, :], depth, 0)
    top = max(depth * rounds, steps)
    panels = (
        (last, by_layer,
         f"layer by layer: {depth} scans of log₂T = {rounds} rounds each,\n"
         f"one after another: {depth * rounds} rounds (+ {depth - 1} for the α)"),
        (by_step, [[str(v) for v in row] for row in by_step],
         f"one pass (the package's LDStack): {steps} rounds in all,\n"
         f"round t = step t, all {depth} layers advance together"),
    )
    for ax, (colour, labels, title) in zip(axes, panels):
        ax.imshow(colour, origin="lower", cmap="Blues", vmin=0, vmax=top * 1.6,
                  extent=(0.5, steps + 0.5, 0.5, depth + 0.5), aspect="auto")
        for k in range(depth):
            for t in range(steps):
                ax.text(t + 1, k + 1, labels[k][t], ha="center", va="center",
                        fontsize=8 if len(labels[k][t]) > 3 else 9, color=_INK)
        ax.set_xticks(range(1, steps + 1))
        ax.set_yticks(range(1, depth + 1))
        ax.set_xlabel("step t")
        ax.set_ylabel("layer i")
        ax.set_title(title, fontsize=9.5)
        ax.grid(False)
        for v in np.arange(0.5, steps + 1):
            ax.axvline(v, color="white", lw=1.5)
        for v in np.arange(0.5, depth + 1):
            ax.axhline(v, color="white", lw=1.5)
    fig.suptitle("the number in a cell: the parallel rounds in which it is computed",
                 fontsize=10)
    fig.tight_layout()
    return fig


def conjugate_phasors(lam=0.9 * cmath.exp(0.5j), weight=1.0, step=2, steps=25):
    """A conjugate pair of modes and its real sum, as a matplotlib Figure.

    ``weight`` is the mode's read-out product C′B′ (only the product matters).
    Left: in the complex plane, the contribution ``w = weight · lam**step`` of one
    mode, its conjugate (the other mode of the pair) and their sum ``2 Re(w)``,
    which lies on the real axis. Right: that sum ``2 Re(weight · lam**t)`` for
    ``t = 0 .. steps - 1`` (the pair's impulse response), with the envelope
    ``±2 |weight| |lam|**t``.
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 3.6))
    ax, ax2 = fig.subplots(1, 2, width_ratios=[1, 1.5])
    w = complex(weight * lam ** step)
    total = 2 * w.real
    for z, color, label in ((w, _BLUE, f"w = C′B′λ^{step}, one mode"),
                            (w.conjugate(), _ORANGE, "its conjugate, the other mode")):
        ax.annotate("", xy=(z.real, z.imag), xytext=(0, 0),
                    arrowprops=dict(arrowstyle="-|>", color=color, lw=1.8))
        ax.plot([], [], color=color, lw=1.8, label=label)
    # the parallelogram: w + conj(w) = 2 Re(w), on the real axis
    for a, b in ((w, total), (w.conjugate(), total)):
        ax.plot([a.real, b.real], [a.imag, 0], ls=":", color=_GREY, lw=1)
    ax.annotate("", xy=(total, 0), xytext=(0, 0),
                arrowprops=dict(arrowstyle="-|>", color=_GREEN, lw=2.4))
    ax.plot([], [], color=_GREEN, lw=2.4, label=f"sum = 2 Re(w) = {total:.2f}")
    r = abs(w)
    lim = max(1.15 * max(r, abs(total)), 0.5)
    ax.add_patch(Circle((0, 0), r, fill=False, ls="--", color=_GREY, lw=0.8))
    ax.axhline(0, color=_INK, lw=0.6)
    ax.axvline(0, color=_INK, lw=0.6)
    ax.set(xlim=(-lim, lim), ylim=(-lim, lim), aspect="equal", xlabel="Re", ylabel="Im",
           title=f"step {step}: the imaginary parts cancel")
    ax.legend(fontsize=7.5, loc="upper left")
    t = np.arange(steps)
    response = 2 * (weight * lam ** t).real
    envelope = 2 * abs(weight) * abs(lam) ** t
    ax2.plot(t, envelope, color=_GREY, ls="--", lw=1, label="±2|C′B′| |λ|^t")
    ax2.plot(t, -envelope, color=_GREY, ls="--", lw=1)
    ax2.stem(t, response, linefmt=_GREEN, markerfmt="o", basefmt=" ", label="2 Re(C′B′λ^t)")
    ax2.plot([step], [total], "o", ms=10, mfc="none", mec=_INK)
    ax2.set(xlabel="steps t since the input", ylabel="output of the pair",
            title=f"the pair's output, λ = {abs(lam):.1f} e^({cmath.phase(lam):.1f} i)")
    ax2.legend(fontsize=7.5)
    fig.tight_layout()
    return fig
