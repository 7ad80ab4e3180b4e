"""Schematics of the book, drawn by code.

Each schematic is a function that returns a matplotlib ``Figure`` drawn from
the real numbers of its page's worked example (the six steps of the scans
chapter, the kernels' launch constants), so the picture and the page cannot
drift apart. :data:`FIGURES` registers each one with the SVG file it writes
beside its chapter; a page includes that file with a ``{figure}`` directive.

Each figure is saved twice beside its chapter: the SVG the online book
shows, and a PNG of the same drawing (:func:`png_path`) that the notebook
editions in ``full/`` and ``student/`` show (JupyterLab 4 does not render an
SVG cell attachment and Colab renders no attachment at all; every notebook
front end renders a PNG at a URL).

``python -m rnnlab.figures`` regenerates every SVG and PNG (``--check`` only
reports the stale ones); ``tests/test_figures.py`` checks that the committed
files are current. The output is deterministic: a fixed ``svg.hashsalt``, no
date in the metadata, plain text kept as text (``svg.fonttype = 'none'``,
with the default font list that ends in the generic ``sans-serif``), and
mathtext (``$...$``) drawn as paths: kept as text, mathtext names fonts no
browser has (``cmsy10``, whose prime is the character "0"), so a reader saw
s⁰ for s′.
"""
from __future__ import annotations

import io
import pathlib

from . import contraction, lowrank, scans
from . import contraction_lessons  # ctr/01's on-ramp ellipse, ctr/02's Venn diagram and Theorem 4's rescaling
from . import combo_training  # the Euler spiral of book/contraction/08_keeping_the_certificate
from . import memory  # the memory chapter's schematics
from . import lds as lds_figures  # the LDS chapter's schematics
from . import lowrank_cells  # the LSTM and GRU steps and one GRU step backward of book/lowrank/01_cells
from . import lds_copy  # the copying-memory timeline and the delay-line phasors of book/lds/04_copy_memory
from . import performance  # the roofline of book/lds/05_speed, the Performance page
from . import rank_memory  # rho against rank and sparsity, and the horizon, of book/lowrank/05_rank_and_memory
from . import lds_modal_stack  # one mode through two layers of book/lds/03_modal_stack, as arrows
from . import lr03_page  # read-stretch-write of book/lowrank/03_spectra
from . import mem03_page  # the lags of reversal of book/memory/03_initialisation
from . import scans01_page  # the chunked scan's three phases of book/scans/01_associative_scan
from . import scans01b_page  # the Blelloch node and the Brent schedule of book/scans/01_associative_scan
from . import lr06_page  # the tube of book/lowrank/06_closed_loop
from . import ctr05_page  # the c axis and the ellipses of book/contraction/05_counterexamples
from . import ctr03_page  # the three tests as regions, with the cast, of book/contraction/03_diagonal_metrics

__all__ = ["FIGURES", "render", "render_both", "png_path", "write", "stale"]

FIGURES = {
    "affine_steps": (scans.affine_steps, "book/scans/figures/affine_steps.svg"),
    "scan_tree": (scans.scan_tree, "book/scans/figures/scan_tree.svg"),
    "backward_scan": (scans.backward_scan, "book/scans/figures/backward_scan.svg"),
    "scans01_chunked_phases": (scans01_page.chunked_phases, "book/scans/figures/chunked_phases.svg"),
    "scans01b_blelloch_node": (scans01b_page.blelloch_node, "book/scans/figures/blelloch_node.svg"),
    "scans01b_brent_gantt": (scans01b_page.brent_gantt, "book/scans/figures/brent_gantt.svg"),
    "kernel_layout": (scans.kernel_layout, "book/lds/figures/kernel_layout.svg"),
    "slope_box": (contraction.slope_box, "book/contraction/figures/slope_box.svg"),
    "ctr05_threshold_axis": (ctr05_page.threshold_axis, "book/contraction/figures/threshold_axis.svg"),
    "ctr05_rotation_ellipses": (ctr05_page.rotation_ellipses, "book/contraction/figures/rotation_ellipses.svg"),
    "combo_net_blocks": (contraction.combo_net_blocks, "book/contraction/figures/combo_net_blocks.svg"),
    "euler_circle": (contraction.euler_circle, "book/contraction/figures/euler_circle.svg"),
    "metric_chain": (contraction.metric_chain, "book/contraction/figures/metric_chain.svg"),
    "certificate_levels": (contraction.certificate_levels, "book/contraction/figures/certificate_levels.svg"),
    "metric_ellipse": (contraction_lessons.metric_ellipse, "book/contraction/figures/metric_ellipse.svg"),
    "theorem_venn": (contraction_lessons.theorem_venn, "book/contraction/figures/theorem_venn.svg"),
    "theorem4_rescaling": (contraction_lessons.theorem4_rescaling,
                           "book/contraction/figures/theorem4_rescaling.svg"),
    "theorem_flowchart": (contraction_lessons.theorem_flowchart, "book/contraction/figures/theorem_flowchart.svg"),
    "two_forms": (contraction_lessons.two_forms, "book/contraction/figures/two_forms.svg"),
    "euler_spiral": (combo_training.euler_spiral, "book/contraction/figures/euler_spiral.svg"),
    "lowrank_wrec": (lowrank.wrec_matrices, "book/lowrank/figures/wrec_matrices.svg"),
    "lowrank_subspaces": (lowrank.masked_subspaces, "book/lowrank/figures/masked_subspaces.svg"),
    "lowrank_cfc": (lowrank.cfc_heads, "book/lowrank/figures/cfc_heads.svg"),
    "lowrank_lstm_gru": (lowrank_cells.lstm_gru_cells, "book/lowrank/figures/lstm_gru_cells.svg"),
    "lowrank_gru_backward": (lowrank_cells.gru_backward, "book/lowrank/figures/gru_backward.svg"),
    "lowrank_eigenvalues": (lowrank.eigenvalue_clouds, "book/lowrank/figures/eigenvalue_clouds.svg"),
    "lr03_read_stretch_write": (lr03_page.read_stretch_write, "book/lowrank/figures/read_stretch_write.svg"),
    "lowrank_pipeline": (lowrank.imitation_pipeline, "book/lowrank/figures/imitation_pipeline.svg"),
    "lowrank_rank_horizon": (rank_memory.rank_radius_horizon, "book/lowrank/figures/rank_radius_horizon.svg"),
    "lds_companion_modal": (lds_figures.companion_modal, "book/lds/figures/companion_modal.svg"),
    "lds_paper_lds": (lds_figures.paper_lds, "book/lds/figures/paper_lds.svg"),
    "lds_ldstack_staircase": (lds_figures.ldstack_staircase, "book/lds/figures/ldstack_staircase.svg"),
    "lds_copy_timeline": (lds_copy.copy_timeline, "book/lds/figures/copy_timeline.svg"),
    "lds_delay_phasors": (lds_copy.delay_phasors, "book/lds/figures/delay_phasors.svg"),
    "lds_roofline": (performance.roofline, "book/lds/figures/roofline.svg"),
    "lds_modal_phasors": (lds_modal_stack.modal_phasors, "book/lds/figures/modal_phasors.svg"),
    "memory_stack_steps": (memory.stack_steps, "book/memory/figures/stack_steps.svg"),
    "memory_stack_intervals": (memory.stack_intervals, "book/memory/figures/stack_intervals.svg"),
    "memory_queue_steps": (memory.queue_steps, "book/memory/figures/queue_steps.svg"),
    "memory_deque_steps": (memory.deque_steps, "book/memory/figures/deque_steps.svg"),
    "memory_controller": (memory.controller, "book/memory/figures/controller.svg"),
    "memory_pop_backward": (memory.pop_backward, "book/memory/figures/pop_backward.svg"),
    "memory_read_backward": (memory.read_backward, "book/memory/figures/read_backward.svg"),
    "memory_bptt_backward": (memory.bptt_backward, "book/memory/figures/bptt_backward.svg"),
    "memory_reversal_timing": (memory.reversal_timing, "book/memory/figures/reversal_timing.svg"),
    "memory_loop": (memory.memory_loop, "book/memory/figures/memory_loop.svg"),
    "memory_deque_columns": (memory.deque_columns, "book/memory/figures/deque_columns.svg"),
    "memory_read_intervals": (memory.read_intervals, "book/memory/figures/read_intervals.svg"),
    "memory_step_graph": (memory.step_graph, "book/memory/figures/step_graph.svg"),
    "mem03_reversal_lags": (mem03_page.reversal_lags, "book/memory/figures/reversal_lags.svg"),
    "lr06_tube": (lr06_page.compounding_tube, "book/lowrank/figures/compounding_tube.svg"),
    "ctr03_test_venn": (ctr03_page.test_venn, "book/contraction/figures/test_venn.svg"),
}
"""name -> (function returning a Figure, the SVG file it is saved to, relative
to the repository root)."""

SVG_RC = {"svg.hashsalt": "rnnlab", "svg.fonttype": "none", "svg.image_inline": True}
"""The rcParams that make the SVG output deterministic."""


PNG_DPI = 130
"""Resolution of the PNGs of the editions (a 9-inch figure: about 1200 pixels wide)."""
PNG_COLORS = 128
"""The PNGs are quantized to a palette of this many colours (schematics have few): ~5x smaller."""


def png_path(svg_rel):
    """The PNG beside the SVG ``svg_rel`` (same folder, same name, ``.png``)."""
    return str(pathlib.PurePosixPath(svg_rel).with_suffix(".png"))


def _math_as_paths(fig):
    """Make every text of ``fig`` that holds mathtext draw as paths in an SVG (the rest stays text)."""
    import matplotlib
    from matplotlib.cbook import is_math_text
    from matplotlib.text import Text

    def as_paths(draw):
        def wrapper(renderer, *args, **kwargs):
            with matplotlib.rc_context({"svg.fonttype": "path"}):
                return draw(renderer, *args, **kwargs)
        return wrapper

    for text in fig.findobj(Text):
        if is_math_text(text.get_text()):
            text.draw = as_paths(text.draw)


def _png_software():
    import matplotlib
    import PIL

    return f"Matplotlib v{matplotlib.__version__}, Pillow v{PIL.__version__} (rnnlab.figures)"


def _quantized_png(raw):
    """``raw`` PNG bytes as a palette PNG (deterministic: no dithering, fixed method)."""
    from PIL import Image, PngImagePlugin

    image = Image.open(io.BytesIO(raw)).convert("RGB")
    small = image.quantize(colors=PNG_COLORS, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    info = PngImagePlugin.PngInfo()
    info.add_text("Software", _png_software())
    out = io.BytesIO()
    small.save(out, format="PNG", optimize=True, pnginfo=info)
    return out.getvalue()


def render_both(name):
    """``(svg text, png bytes)`` of the registered figure ``name``.

    Drawn with matplotlib's default settings plus :data:`SVG_RC` (whatever the
    process set before), and with torch on one thread: a figure that computes
    (a matrix product, the eigenvalues of a non-normal matrix) then gets the
    same last bits, and the same SVG, on every machine and after any test.
    The PNG (:data:`PNG_DPI`, white background, a palette of :data:`PNG_COLORS`)
    records the matplotlib and Pillow versions that wrote it."""
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
            _math_as_paths(fig)
            buffer = io.StringIO()
            fig.savefig(buffer, format="svg", metadata={"Date": None})
            raw = io.BytesIO()
            fig.savefig(raw, format="png", dpi=PNG_DPI, facecolor="white", metadata={"Software": None})
    finally:
        torch.set_num_threads(threads)
    return buffer.getvalue(), _quantized_png(raw.getvalue())


def render(name):
    """The SVG text of the registered figure ``name`` (:func:`render_both`)."""
    return render_both(name)[0]


def write(root=".", names=None):
    """Write the SVG and PNG of every registered figure (or of ``names``) under ``root``;
    return the paths written."""
    written = []
    for name in names or FIGURES:
        path = pathlib.Path(root) / FIGURES[name][1]
        path.parent.mkdir(parents=True, exist_ok=True)
        svg, png = render_both(name)
        path.write_text(svg)
        png_file = pathlib.Path(root) / png_path(FIGURES[name][1])
        png_file.write_bytes(png)
        written += [path, png_file]
    return written


def stale(root="."):
    """The names of the registered figures whose committed SVG or PNG is missing or differs
    (the PNG: byte for byte when it was written by this matplotlib and Pillow, else in size)."""
    out = []
    for name, (_, rel) in FIGURES.items():
        path, png_file = pathlib.Path(root) / rel, pathlib.Path(root) / png_path(rel)
        if not path.exists() or not png_file.exists():
            out.append(name)
            continue
        svg, png = render_both(name)
        if path.read_text() != svg or not same_png(png_file.read_bytes(), png):
            out.append(name)
    return out


def png_software(data):
    """The ``Software`` text of PNG bytes ``data`` (who wrote it), or None."""
    from PIL import Image

    return Image.open(io.BytesIO(data)).info.get("Software")


def same_png(committed, fresh):
    """True when the committed PNG is the fresh one: equal bytes when both were written by the same
    matplotlib and Pillow, else the same pixel size (another version rasterizes a little differently)."""
    from PIL import Image

    if png_software(committed) == png_software(fresh):
        return committed == fresh
    return Image.open(io.BytesIO(committed)).size == Image.open(io.BytesIO(fresh)).size
