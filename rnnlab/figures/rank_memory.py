"""The schematic of book/lowrank/05_rank_and_memory: rank and sparsity shrink
the spectral radius, and the radius sets the RNN's memory horizon.

Drawn from the page's own numbers: the untrained RNN of 64 units at the
page's seven settings (full rank at sparsity 0, 0.5, 0.8; ranks 27, 16, 5, 1)
and seeds 0, 1, 2, measured with :func:`rnnlab.theory.horizon_vs_radius`
exactly as the page does. Every value is rounded to 1e-6 before it is drawn,
so the picture is the same on every CPU.
"""
from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

_INK = "#333333"
_BLUE = "#1f4e79"
_ORANGE = "#c25e00"

SETTINGS = dict(ranks=(None, 27, 16, 5, 1), sparsities=(0.0, 0.5, 0.8), seeds=(0, 1, 2))


def _rnn_rows():
    from ..theory import horizon_vs_radius

    rows = horizon_vs_radius(kinds=("rnn",), **SETTINGS)
    out = []
    for r in rows:
        share = round((r.rank if r.rank != "full" else 64) / 64 * (1 - r.sparsity), 6)
        out.append(dict(rank=r.rank, sparsity=r.sparsity, seed=r.seed, share=share,
                        rho=round(float(np.exp(r.log_rho)), 6), slope=round(float(r.slope), 6)))
    return out


def rank_radius_horizon():
    """Left: the spectral radius of the RNN's W_rec(r, s) against the share of
    its weights' variance kept, r/n or 1 - s, with the rule sqrt(share).
    Right: the horizon the one-for-one rule predicts from rho, -1/(slope at
    full rank + log rho), beside the measured horizons (mean slope of three seeds)."""
    rows = _rnn_rows()
    full = [r for r in rows if r["rank"] == "full" and r["sparsity"] == 0]
    slope0 = round(float(np.mean([r["slope"] for r in full])), 6)
    fig = Figure(figsize=(10.4, 3.6), layout="constrained")
    ax, bx = fig.subplots(1, 2)

    x = np.geomspace(1 / 64, 1, 100)
    ax.plot(x, np.sqrt(x), color=_INK, ls="--", lw=1, label="rule: ρ ≈ √(share kept)")
    for kind, color, marker in (("rank", _BLUE, "o"), ("sparsity", _ORANGE, "D")):
        pts = [r for r in rows if (kind == "rank") == (r["sparsity"] == 0)]
        label = "lower rank r (share r/n)" if kind == "rank" else "sparsity s (share 1 − s)"
        ax.scatter([r["share"] for r in pts], [r["rho"] for r in pts], color=color,
                   marker=marker, s=22, label=label, zorder=3)
    ax.annotate("r = 1: one eigenvalue,\nwhich scatters", (1 / 64, 0.07), fontsize=7, color=_INK,
                xytext=(6, 2), textcoords="offset points")
    for share, name in ((1, "full, dense"), (27 / 64, "r = 27"), (16 / 64, "r = 16"),
                        (5 / 64, "r = 5"), (0.5, "s = 0.5"), (0.2, "s = 0.8")):
        rho = np.sqrt(share)
        dy = -0.045 if name.startswith("s") else (0.09 if name == "r = 5" else 0.03)
        ax.annotate(name, (share, rho * (1 + dy)), fontsize=7, color=_INK,
                    ha="center", va="top" if dy < 0 else "bottom",
                    xytext=(0, -9 if dy < 0 else 7), textcoords="offset points")
    ax.set(xscale="log", yscale="log", xlabel="share of the squared weights kept: r/n, or 1 − s",
           ylabel="spectral radius ρ", title="rank and sparsity shrink ρ (RNN, n = 64, 3 draws each)",
           ylim=(0.008, 1.6))
    ax.title.set_fontsize(9.5)
    ax.legend(fontsize=7.5, loc="lower right")

    rho = np.geomspace(0.01, 1, 200)
    bx.plot(rho, -1 / (slope0 + np.log(rho)), color=_INK, ls="--", lw=1,
            label=f"predicted: −1 / ({slope0:.2f} + log ρ)".replace("-", "−"))
    settings = sorted({(r["rank"] if r["rank"] != "full" else 64, r["sparsity"]) for r in rows},
                      reverse=True)
    for rank, sp in settings:
        if sp == 0.8:  # left out: an exercise predicts it
            continue
        pts = [r for r in rows if (r["rank"] if r["rank"] != "full" else 64) == rank
               and r["sparsity"] == sp]
        mrho = float(np.mean([r["rho"] for r in pts]))
        tau = -1 / float(np.mean([r["slope"] for r in pts]))
        color, marker = (_ORANGE, "D") if sp else (_BLUE, "o")
        bx.scatter([mrho], [tau], color=color, marker=marker, s=26, zorder=3)
        name = f"s = {sp:g}" if sp else ("full, dense" if rank == 64 else f"r = {rank}")
        bx.annotate(name, (mrho, tau), fontsize=7, color=_INK, xytext=(6, -9) if sp else (-30, 4),
                    textcoords="offset points")
    bx.scatter([], [], color=_BLUE, marker="o", s=22, label="measured, mean of 3 draws")
    bx.set(xscale="log", xlabel="spectral radius ρ (mean of 3 draws)",
           ylabel="memory horizon τ (steps)", ylim=(0, 2.6),
           title="a smaller ρ, a shorter horizon (RNN)")
    bx.title.set_fontsize(9.5)
    bx.legend(fontsize=7.5, loc="upper left")
    # plain-text tick labels: matplotlib's default ones for a log axis are mathtext (10^k),
    # drawn at render time, after rnnlab.figures has turned the figure's mathtext into paths
    from matplotlib.ticker import NullFormatter
    ticks, labels = [0.01, 0.1, 1], ["0.01", "0.1", "1"]
    ax.set_xticks(ticks, labels)
    ax.set_yticks(ticks, labels)
    bx.set_xticks(ticks, labels)
    for a in (ax, bx):
        a.xaxis.set_minor_formatter(NullFormatter())
        a.yaxis.set_minor_formatter(NullFormatter())
        a.grid(alpha=0.3)
        a.tick_params(labelsize=8)
    ax.set_ylim(0.008, 1.6)
    bx.set_xlim(0.008, 1.2)
    return fig
