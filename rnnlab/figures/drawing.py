"""The drawing helpers the chapters' schematics share: a bare canvas, a rounded box, an arrow, a number.

Every schematic of :mod:`rnnlab.figures` draws with these, so the chapters look alike.
"""
from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch

__all__ = ["INK", "canvas", "box", "arrow", "num"]

INK = "#333333"
"""The colour of text and lines."""


def num(x, digits=3):
    """A number as the figures print it: rounded, no trailing zeros, a true minus sign."""
    text = f"{x:.{digits}f}".rstrip("0").rstrip(".")
    if text in ("-0", ""):
        text = "0"
    return text.replace("-", "−")


def canvas(width, height, xlim, ylim):
    """``(fig, ax)``: a Figure of ``width`` × ``height`` inches, one axis-free Axes filling it."""
    fig = Figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_axis_off()
    return fig, ax


def box(ax, x, y, w, h, text, *, ec=INK, fc="white", fontsize=8.5, lw=1.0, linespacing=1.3, **kw):
    """A rounded box centred at (x, y) with centred text."""
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0,rounding_size=0.08",
                                ec=ec, fc=fc, lw=lw, zorder=2))
    ax.text(x, y, text, ha="center", va="center", fontsize=fontsize, color=INK, zorder=3,
            linespacing=linespacing, **kw)


def arrow(ax, start, end, *, color=INK, lw=1.0, style="-|>", ls="-", rad=0.0):
    """An arrow from ``start`` to ``end`` (``rad`` bends it)."""
    ax.annotate("", xy=end, xytext=start, zorder=1,
                arrowprops=dict(arrowstyle=style, color=color, lw=lw, ls=ls, shrinkA=0, shrinkB=0,
                                mutation_scale=9, connectionstyle=f"arc3,rad={rad}"))
