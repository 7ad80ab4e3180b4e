"""One mode of the modal stack of ``book/lds/03_modal_stack`` drawn as rotating arrows.

``modal_phasors`` follows the page's example mode, ``lambda = i`` (a quarter turn
per step, ``|lambda| = 1``) with ``B' = 1`` and ``C' = 1``, through two layers
after one input pulse (``b_1 = 1``, then zeros). Layer 1, the LDS, turns the
pulse by ``lambda`` at every step and never shrinks it. Layer 2 turns it by the
same angle but is damped at each step by the factor
``alpha_t = 1 / sqrt(1 + |lambda s'^(1)_(t-1)|^2)`` read off layer 1, so it
spirals in. The last panel draws what the read-out ``Re(C' s'_t)`` sees of
each layer: the shadow of the arrow on the real axis. Every number is computed
here from the recurrences; they are exact dyadic multiples of powers of
``1/sqrt(2)``, so the drawing is the same on every machine.
"""
from __future__ import annotations

from .drawing import INK as _INK, num as _num

__all__ = ["PHASOR_LAMBDA", "PHASOR_STEPS", "modal_phasor_states", "modal_phasors"]

PHASOR_LAMBDA = 1j
"""The eigenvalue of the mode drawn (the page's example: a quarter turn per step)."""
PHASOR_STEPS = 8
"""The number of steps drawn after the pulse at step 1."""

_BLUE = "#1f4e79"
_RED = "#b03a2e"
_GREY = "#999999"


def modal_phasor_states(lam=PHASOR_LAMBDA, T=PHASOR_STEPS):
    """``(s1, s2, alpha)``: layers 1 and 2 and layer 2's factors, steps 1..T, for a pulse.

    One mode, ``B' = 1``, input ``b = (1, 0, ..., 0)``, all states 0 at step 0:
    ``s1_t = lam s1_(t-1) + b_t``; ``alpha_t = 1 / sqrt(1 + |lam s1_(t-1)|^2)``;
    ``s2_t = alpha_t lam s2_(t-1) + b_t``.
    """
    import math

    s1, s2, alpha = [], [], []
    p1 = p2 = 0j
    for t in range(1, T + 1):
        b = 1.0 if t == 1 else 0.0
        a = 1 / math.sqrt(1 + abs(lam * p1) ** 2)     # read off layer 1 at step t - 1
        p1, p2 = lam * p1 + b, a * lam * p2 + b
        s1.append(p1)
        s2.append(p2)
        alpha.append(a)
    return s1, s2, alpha


def _clean(z, digits=9):
    """``z`` rounded (so that 6e-17 draws as 0 on every machine), as a complex number."""
    return complex(round(z.real, digits) + 0.0, round(z.imag, digits) + 0.0)


def modal_phasors(lam=PHASOR_LAMBDA, T=PHASOR_STEPS):
    """Layer 1 (left) and layer 2 (middle) of one mode as arrows, and their read-outs (right)."""
    import matplotlib.pyplot as plt
    import numpy as np

    s1, s2, alpha = modal_phasor_states(lam, T)
    s1, s2 = [_clean(z) for z in s1], [_clean(z) for z in s2]
    fig, axes = plt.subplots(1, 3, figsize=(11.5, 4.0),
                             gridspec_kw=dict(width_ratios=(1, 1, 1.25)))
    circle = np.exp(1j * np.linspace(0, 2 * np.pi, 200))

    def plane(ax, states, colour, title, shown, shrink):
        ax.plot(circle.real, circle.imag, color=_GREY, lw=0.7, ls="--", zorder=0)
        ax.axhline(0, color="#dddddd", lw=0.6, zorder=0)
        ax.axvline(0, color="#dddddd", lw=0.6, zorder=0)
        # the path of the tip: a quarter turn per step, the modulus times `shrink` per step
        turn = np.angle(lam)
        for t in range(shown - 1):
            u = np.linspace(0, 1, 40)
            z0 = states[t]
            path = z0 * (shrink ** u) * np.exp(1j * turn * u)
            ax.plot(path.real, path.imag, color=_RED, lw=1.0, zorder=1)
            ax.annotate("", xy=(path[-1].real, path[-1].imag),
                        xytext=(path[-4].real, path[-4].imag),
                        arrowprops=dict(arrowstyle="-|>", color=_RED, lw=1.0, shrinkA=0,
                                        shrinkB=0, mutation_scale=8))
        for t in range(shown):
            z = states[t]
            ax.annotate("", xy=(z.real, z.imag), xytext=(0, 0), zorder=2,
                        arrowprops=dict(arrowstyle="-|>", color=colour, lw=1.4, shrinkA=0,
                                        shrinkB=0, mutation_scale=10))
            off = 0.2 * z / abs(z) * np.exp(-0.45j)      # beside the tip, clear of the path
            ax.text(z.real + off.real, z.imag + off.imag, f"t={t + 1}", fontsize=8.5,
                    color=colour, ha="center", va="center")
        ax.set(xlim=(-1.35, 1.35), ylim=(-1.35, 1.35), aspect="equal", xticks=[-1, 0, 1],
               yticks=[-1, 0, 1], xlabel="Re", ylabel="Im")
        ax.set_title(title, fontsize=9.5, color=_INK)
        ax.grid(False)

    plane(axes[0], s1, "#555555",
          f"layer 1, the LDS: each step turns the arrow\nby λ = i (red); "
          f"its length stays {_num(abs(s1[3]))}", 4, 1.0)
    damp = alpha[1]
    plane(axes[1], s2, _BLUE,
          f"layer 2: the same turn, times the factor\n"
          f"$\\alpha_t = 1/\\sqrt{{1 + |\\lambda s'^{{(1)}}_{{t-1}}|^2}} = {_num(damp, 2)}$ "
          "from layer 1", 5, damp)
    # the read-out Re(C' s'_t), C' = 1, for both layers
    ax = axes[2]
    t = np.arange(1, T + 1)
    r1 = np.array([z.real for z in s1])
    r2 = np.array([z.real for z in s2])
    ax.axhline(0, color=_GREY, lw=0.6)
    ax.plot(t, r1, "s--", color="#555555", ms=5, lw=1, label=r"layer 1: Re$(s'^{(1)}_t)$")
    ax.plot(t, r2, "o-", color=_BLUE, ms=5, lw=1.4, label=r"layer 2: Re$(s'^{(2)}_t)$")
    envelope = np.array([abs(z) for z in s2])
    ax.plot(t, envelope, ":", color=_BLUE, lw=0.9, label=r"layer 2: $\pm|s'^{(2)}_t|$")
    ax.plot(t, -envelope, ":", color=_BLUE, lw=0.9)
    ax.set(xticks=t, xlabel="step t", ylim=(-1.25, 1.35), yticks=[-1, -0.5, 0, 0.5, 1])
    ax.set_title(r"the read-out Re$(C' s'_t)$, $C' = 1$: the arrow's" "\nshadow on the real axis, "
                 "step by step", fontsize=9.5, color=_INK)
    ax.legend(fontsize=8, loc="upper right", ncol=1, framealpha=0.9)
    ax.grid(False)
    fig.suptitle("one mode, λ = i, B' = 1, one input pulse at t = 1 (then zeros): layer 1 keeps "
                 "turning at full length; layer 2, damped by layer 1, spirals in", fontsize=10, color=_INK)
    fig.tight_layout()
    return fig
