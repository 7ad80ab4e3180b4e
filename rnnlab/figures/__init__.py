"""Schematics of the book, drawn by code.

Each schematic is a function that returns a matplotlib ``Figure`` drawn from
the real numbers of its page's worked example (the six steps of the scans
chapter, the kernels' launch constants), so the picture and the page cannot
drift apart. :data:`FIGURES` registers each one with the SVG file it writes
beside its chapter; a page includes that file with a ``{figure}`` directive.

``python -m rnnlab.figures`` regenerates every SVG (``--check`` only reports
the stale ones); ``tests/test_figures.py`` checks that the committed files
are current. The output is deterministic: a fixed ``svg.hashsalt``, no date
in the metadata, and text kept as text (``svg.fonttype = 'none'``).
"""
from __future__ import annotations

import io
import pathlib

from . import contraction, lowrank, scans
from . import memory  # the memory chapter's schematics
from . import lds as lds_figures  # the LDS chapter's schematics

__all__ = ["FIGURES", "render", "write", "stale"]

FIGURES = {
    "affine_steps": (scans.affine_steps, "book/scans/figures/affine_steps.svg"),
    "scan_tree": (scans.scan_tree, "book/scans/figures/scan_tree.svg"),
    "backward_scan": (scans.backward_scan, "book/scans/figures/backward_scan.svg"),
    "kernel_layout": (scans.kernel_layout, "book/scans/figures/kernel_layout.svg"),
    "slope_box": (contraction.slope_box, "book/contraction/figures/slope_box.svg"),
    "theorem7_ellipses": (contraction.theorem7_ellipses, "book/contraction/figures/theorem7_ellipses.svg"),
    "combo_net_blocks": (contraction.combo_net_blocks, "book/contraction/figures/combo_net_blocks.svg"),
    "euler_circle": (contraction.euler_circle, "book/contraction/figures/euler_circle.svg"),
    "metric_chain": (contraction.metric_chain, "book/contraction/figures/metric_chain.svg"),
    "lowrank_wrec": (lowrank.wrec_matrices, "book/lowrank/figures/wrec_matrices.svg"),
    "lowrank_cfc": (lowrank.cfc_heads, "book/lowrank/figures/cfc_heads.svg"),
    "lowrank_eigenvalues": (lowrank.eigenvalue_clouds, "book/lowrank/figures/eigenvalue_clouds.svg"),
    "lowrank_pipeline": (lowrank.imitation_pipeline, "book/lowrank/figures/imitation_pipeline.svg"),
    "lds_companion_modal": (lds_figures.companion_modal, "book/lds/figures/companion_modal.svg"),
    "lds_paper_lds": (lds_figures.paper_lds, "book/lds/figures/paper_lds.svg"),
    "lds_ldstack_staircase": (lds_figures.ldstack_staircase, "book/lds/figures/ldstack_staircase.svg"),
    "memory_stack_steps": (memory.stack_steps, "book/memory/figures/stack_steps.svg"),
    "memory_queue_steps": (memory.queue_steps, "book/memory/figures/queue_steps.svg"),
    "memory_deque_steps": (memory.deque_steps, "book/memory/figures/deque_steps.svg"),
    "memory_controller": (memory.controller, "book/memory/figures/controller.svg"),
    "memory_pop_backward": (memory.pop_backward, "book/memory/figures/pop_backward.svg"),
}
"""name -> (function returning a Figure, the SVG file it is saved to, relative
to the repository root)."""

SVG_RC = {"svg.hashsalt": "rnnlab", "svg.fonttype": "none", "svg.image_inline": True}
"""The rcParams that make the SVG output deterministic."""


def render(name):
    """The SVG text of the registered figure ``name``.

    Drawn with matplotlib's default settings plus :data:`SVG_RC` (whatever the
    process set before), and with torch on one thread: a figure that computes
    (a matrix product, the eigenvalues of a non-normal matrix) then gets the
    same last bits, and the same SVG, on every machine and after any test."""
    import matplotlib
    import torch

    function, _ = FIGURES[name]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with matplotlib.rc_context():
            matplotlib.rcdefaults()
            matplotlib.rcParams.update(SVG_RC)
            fig = function()
            buffer = io.StringIO()
            fig.savefig(buffer, format="svg", metadata={"Date": None})
    finally:
        torch.set_num_threads(threads)
    return buffer.getvalue()


def write(root=".", names=None):
    """Write the SVG of every registered figure (or of ``names``) under ``root``;
    return the paths written."""
    written = []
    for name in names or FIGURES:
        path = pathlib.Path(root) / FIGURES[name][1]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(name))
        written.append(path)
    return written


def stale(root="."):
    """The names of the registered figures whose committed SVG is missing or differs."""
    out = []
    for name, (_, rel) in FIGURES.items():
        path = pathlib.Path(root) / rel
        if not path.exists() or path.read_text() != render(name):
            out.append(name)
    return out
