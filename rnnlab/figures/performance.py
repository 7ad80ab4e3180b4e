"""The roofline of ``book/lds/05_speed`` (the Performance page): bytes and operations per step.

``roofline`` draws the two roofs of the CPU the book was built on, as
measured by ``python -m rnnlab.bench roofline`` and committed in
``book/lds/data/roofline-cpu.json`` (one thread: the memory bandwidth of one
elementwise pass, the arithmetic peak of a float32 matrix product), and on
them one forward time step of the LDS's scan and of the LSTM's recurrent
product (also with ``W_hh`` in the cache, only its output moved), counted by :func:`rnnlab.bench.roofline.step_cost` for the page's
sizes (``H = 128``; a batch of 16, and the LSTM at 1 and 64 too). Every
number drawn comes from that file or from the exact counts, so the picture is
the same on every machine.
"""
from __future__ import annotations

import json
import pathlib

__all__ = ["ROOFLINE_DATA", "ROOFLINE_B", "ROOFLINE_H", "roofline_numbers", "roofline"]

ROOFLINE_DATA = "book/lds/data/roofline-cpu.json"
"""The committed measurement the figure draws (relative to the repository root)."""
ROOFLINE_B = 16
"""The batch size of the steps drawn (the page's benchmark)."""
ROOFLINE_H = 128
"""The hidden size of the page's benchmark."""

_INK = "#333333"
_BLUE = "#1f4e79"
_ORANGE = "#c25e00"
_GREY = "#999999"


def roofline_numbers(root=None):
    """``{"bandwidth", "peak", "ridge", "cpu", "threads", "points"}`` of the figure: the committed
    roofs, and per step drawn ``(model, B, flops, bytes, intensity, roofline time in seconds)``."""
    from ..bench.roofline import roofline_time, step_cost

    root = pathlib.Path(root) if root else pathlib.Path(__file__).resolve().parents[2]
    saved = json.loads((root / ROOFLINE_DATA).read_text())
    row = saved["rows"][0]
    # Three significant digits: what the page prints, and the same last bits everywhere.
    bandwidth, peak = float(f"{row['bandwidth']:.3g}"), float(f"{row['peak']:.3g}")
    points = []
    for model in ("lds", "lstm"):
        flops, bytes_ = step_cost(model, ROOFLINE_B, ROOFLINE_H)
        points.append((model, ROOFLINE_B, flops, bytes_, flops / bytes_,
                       roofline_time(flops, bytes_, peak, bandwidth)))
    return {"bandwidth": bandwidth, "peak": peak, "ridge": peak / bandwidth,
            "cpu": saved["machine"]["cpu_model"], "threads": row["threads"], "points": points}


def _si(x, unit):
    for scale, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= scale:
            return f"{x / scale:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}"


def roofline(root=None):
    """Attainable operations per second against arithmetic intensity, log-log, with the steps on it."""
    import numpy as np
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullFormatter

    nums = roofline_numbers(root)
    W, P, ridge = nums["bandwidth"], nums["peak"], nums["ridge"]
    fig = Figure(figsize=(9, 5.2))
    ax = fig.add_axes((0.09, 0.11, 0.88, 0.80))
    x = np.geomspace(0.05, 200, 400)
    ax.loglog(x, np.minimum(P, W * x) / 1e9, color=_INK, lw=2.5)
    ax.axvline(ridge, color=_GREY, ls=":", lw=1)
    ax.axvspan(0.05, ridge, color=_BLUE, alpha=0.05, lw=0)
    ax.axvspan(ridge, 200, color=_ORANGE, alpha=0.05, lw=0)
    ax.text(0.07, 12, "memory bound:\ntime = bytes / bandwidth", color=_BLUE, fontsize=9, va="top")
    ax.text(150, 0.15, "compute bound:\ntime = operations / peak", color=_ORANGE, fontsize=9,
            ha="right", va="bottom")
    # the slope-1 roof in display coordinates: decades per inch of each axis
    width, height = 0.88 * 9, 0.80 * 5.2
    angle = np.degrees(np.arctan2(height / np.log10(200 / 0.1), width / np.log10(200 / 0.05)))
    ax.text(0.1, W * 0.1 / 1e9 * 1.3, f"bandwidth {W / 1e9:.3g} GB/s", rotation=angle,
            rotation_mode="anchor", color=_INK, fontsize=9)
    ax.text(30, P / 1e9 * 1.12, f"peak {P / 1e9:.3g} GFLOP/s", color=_INK, fontsize=9, ha="center")
    ax.text(ridge * 1.08, 0.13, f"ridge point\n{ridge:.3g} flop/byte", color=_INK, fontsize=8.5)
    for model, B, flops, bytes_, ai, seconds in nums["points"]:
        y = min(P, W * ai) / 1e9
        colour = _BLUE if model == "lds" else _ORANGE
        ax.plot([ai], [y], "o" if model == "lds" else "s", color=colour, ms=9, zorder=3)
        name = "LDS: the scan's step" if model == "lds" else "LSTM: the recurrent product"
        text = (f"{name}, B = {B}\n{_si(flops, 'flop')} and {bytes_ / 1024:.3g} KiB per step\n"
                f"intensity {ai:.2f} flop/byte, roofline time {seconds * 1e6:.3g} $\\mu$s")
        offset = (14, -44) if model == "lds" else (-14, 14)
        ax.annotate(text, (ai, y), xytext=offset, textcoords="offset points",
                    ha="left" if model == "lds" else "right", fontsize=8.5, color=colour)
        if model == "lstm":
            # the same step with W_hh in the cache: only the 16BH bytes it writes are moved
            cached = 16 * B * ROOFLINE_H
            ai2, y2 = flops / cached, min(P, W * flops / cached) / 1e9
            ax.annotate("", (ai2, y2), xytext=(ai, y), arrowprops=dict(
                arrowstyle="->", color=colour, lw=1, ls="--", shrinkA=6, shrinkB=7))
            ax.plot([ai2], [y2], "s", mfc="white", mec=colour, mew=1.8, ms=9, zorder=3)
            ax.annotate(f"the same step, $W_{{hh}}$ in the cache\n{cached / 1024:.3g} KiB "
                        f"moved, intensity {ai2:.3g} flop/byte,\nroofline time "
                        f"{max(flops / P, cached / W) * 1e6:.3g} $\\mu$s",
                        (ai2, y2), xytext=(0, -16), textcoords="offset points",
                        ha="right", va="top", fontsize=8.5, color=colour)
    ax.set_xlim(0.05, 200)
    ax.set_ylim(0.1, 200)
    ax.set_xlabel("arithmetic intensity (operations per byte moved)")
    ax.set_ylabel("attainable GFLOP/s")
    ax.set_title(f"One forward step, H = {ROOFLINE_H}, on the roofline of one thread "
                 f"(float32, measured)", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    # plain-text tick labels: matplotlib's default ones for a log axis are mathtext (10^k),
    # drawn at render time, after rnnlab.figures has turned the figure's mathtext into paths
    ax.set_xticks([0.1, 1, 10, 100], ["0.1", "1", "10", "100"])
    ax.set_yticks([0.1, 1, 10, 100], ["0.1", "1", "10", "100"])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())
    return fig
