"""Step through a parallel prefix scan: which slots combine at each step, and
which inputs each slot holds afterwards.

``scan_widget()`` is the live version (an algorithm chooser, a size chooser
and a slider for the step); ``static_figure()`` draws its default state;
``scan_figure(algorithm, n, step)`` draws any state. The steps come from the
instrumented algorithms in :mod:`rnnlab.kernels.scan_algorithms`, run with
``record=True``: the widget draws what the code did, not a separate model of
it.
"""
import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from .._validate import check_int
from ..kernels import scan_algorithms

__all__ = ["ALGORITHM_LABELS", "SIZES", "CHUNKS", "scan_steps", "scan_figure", "static_figure", "scan_widget"]

ALGORITHM_LABELS = {
    "sequential": "sequential",
    "hillis_steele": "Hillis–Steele",
    "blelloch": "Blelloch",
    "chunked": "chunked (4 chunks)",
}
"""The algorithms the widget offers, with the names it shows."""

SIZES = (8, 16)
"""The sequence lengths the widget offers."""

CHUNKS = 4
"""Number of chunks of the ``"chunked"`` algorithm: the organisation of the CUDA
kernel ``rnnlab.kernels.scan_cuda.forward_chunked`` (reduce, Hillis–Steele carry
scan, rescan), with 4 chunks instead of the GPU's 16."""

DEFAULT = dict(algorithm="hillis_steele", n=8, step=None)
"""The widget's default state; ``step=None`` means the last step (the finished scan)."""

_DONE, _NOW, _LATER, _GRID = "#1f4e79", "#e07b00", "#d0d0d0", "#eeeeee"


def scan_steps(algorithm, n):
    """The recorded :class:`~rnnlab.kernels.scan_algorithms.Step` list of ``algorithm`` on ``n`` inputs.

    Step 0 is the inputs. The values scanned do not matter for the picture;
    the scan is run on random pairs and checked against the sequential loop.
    """
    if algorithm not in ALGORITHM_LABELS:
        raise ValueError(f"algorithm must be one of {sorted(ALGORITHM_LABELS)}, got {algorithm!r}")
    n = check_int("n", n, minimum=1, fn="scan_steps")
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, n), rng.normal(size=n)
    if algorithm == "chunked":
        result = scan_algorithms.chunked_scan(a, b, min(CHUNKS, n), carry="hillis_steele", record=True)
    else:
        result = scan_algorithms.scan(a, b, algorithm, record=True)
    expected = scan_algorithms.sequential_scan(a, b)
    if not np.allclose(result.b, expected.b):  # never expected: the picture would be wrong
        raise AssertionError(f"{algorithm} scan disagrees with the sequential scan")
    return result.steps


def _slot_x(n, slots):
    """x position of every slot: the inputs at 0..n-1, extra slots (chunk totals) after a gap."""
    return np.array([i if i < n else i + 0.75 for i in range(slots)], dtype=float)


def scan_figure(algorithm="hillis_steele", n=8, step=None, *, figsize=None):
    """Draw ``algorithm`` on ``n`` inputs after ``step`` steps (``None``: the last).

    Top: the circuit. Row ``r`` shows the slots after step ``r``; solid lines
    bring the two operands of a combine ``∘`` (filled dot) into its slot,
    dashed lines are copies, squares are slots overwritten with the identity
    or with a total saved earlier. Steps already done are blue, the current one
    orange, later ones grey. Bottom: after the current step, the range of
    inputs each slot holds the composition of (bars) against the inclusive
    prefix ``x_1 ∘ ... ∘ x_t`` of slot ``t`` it must end with (slots and inputs
    are numbered from 1, as on the page) (dashed outlines); "id" marks
    the identity.
    """
    steps = scan_steps(algorithm, n)
    last = len(steps) - 1
    step = last if step is None else int(step)
    if not 0 <= step <= last:
        raise ValueError(f"step must be in 0..{last} for {algorithm} on n={n}, got {step}")
    slots = len(steps[0].segments)
    xs = _slot_x(n, slots)
    width = 1.6 + 0.42 * (xs[-1] + 1)
    fig = Figure(figsize=figsize or (max(width, 6.5), 2.6 + 0.32 * last + 0.18 * n), layout="constrained")
    ax, cov = fig.subplots(2, 1, height_ratios=[0.6 + 0.32 * last, 0.25 + 0.17 * n])

    # --- the circuit --- (lines gathered by style into one LineCollection each)
    lines = {}

    def line(x0, y0, x1, y1, colour, lw, ls="-", z=2):
        lines.setdefault((colour, lw, ls, z), []).append([(x0, y0), (x1, y1)])

    for r in range(1, last + 1):
        colour = _DONE if r < step else (_NOW if r == step else _LATER)
        lw = 2.2 if r == step else 1.2
        touched = set()
        for first, second, dest in steps[r].combines:
            for src in (first, second):
                line(xs[src], -(r - 1), xs[dest], -r, colour, lw)
            touched.add(dest)
        for src, dest in steps[r].copies:
            line(xs[src], -(r - 1), xs[dest], -r, colour, lw, "--")
            touched.add(dest)
        # slots written without a combine or copy: the identity, or a saved total
        written = [i for i in range(slots) if i not in touched and steps[r].segments[i] != steps[r - 1].segments[i]]
        for i in range(slots):
            if i not in touched:
                line(xs[i], -(r - 1), xs[i], -r, colour if i in written else _GRID, 1, z=1)
        ax.scatter(xs[written], [-r] * len(written), s=42, marker="s", color=colour, zorder=3)
        combined = [d for _, _, d in steps[r].combines]
        ax.scatter(xs[combined], [-r] * len(combined), s=42, color=colour, zorder=3)
        label_colour = "black" if r <= step else "#999999"
        ax.text(-0.7, -r, f"{r}: {steps[r].phase}", ha="right", va="center", fontsize=7.5, color=label_colour,
                fontweight="bold" if r == step else "normal")
    for (colour, lw, ls, z), segs in lines.items():
        ax.add_collection(LineCollection(segs, colors=colour, linewidths=lw, linestyles=ls, zorder=z))
    grid_x, grid_y = np.meshgrid(xs, -np.arange(last + 1))
    ax.scatter(grid_x.ravel(), grid_y.ravel(), s=10, color="white", edgecolor="#888888", lw=0.6, zorder=2.5)
    ax.text(-0.7, 0, "0: inputs", ha="right", va="center", fontsize=7.5)
    ax.axhspan(-step - 0.3, -step + 0.3, color=_NOW, alpha=0.12, lw=0)
    ax.set_xlim(-0.6, xs[-1] + 0.6)
    ax.set_ylim(-last - 0.5, 0.6)
    ax.set_xticks(xs)
    ax.set_xticklabels([str(i + 1) if i < n else f"c{i - n + 1}" for i in range(slots)], fontsize=8)
    ax.xaxis.tick_top()
    ax.set_yticks([])
    for side in ("left", "right", "bottom", "top"):
        ax.spines[side].set_visible(False)
    work = sum(s.work for s in steps[1:step + 1])
    depth = sum(1 for s in steps[1:step + 1] if s.work)
    total_work = sum(s.work for s in steps[1:])
    total_depth = sum(1 for s in steps[1:] if s.work)
    ax.set_title(f"{ALGORITHM_LABELS[algorithm]} scan, n = {n}: step {step} of {last}\n"
                 f"work so far {work} of {total_work} combines, depth so far {depth} of {total_depth}",
                 fontsize=10)

    # --- what each slot holds after the current step ---
    for i in range(slots):
        seg = steps[step].segments[i]
        if i < n:
            cov.add_patch(Rectangle((xs[i] - 0.38, -0.5), 0.76, i + 1, fill=False, ls="--", lw=0.8,
                                    edgecolor="#777777"))
        if seg is None:
            cov.text(xs[i], -0.05 if i >= n else i / 2, "id", ha="center", va="center", fontsize=7, color="#555555")
            continue
        lo, hi = seg
        done = i < n and seg == (0, i)
        cov.add_patch(Rectangle((xs[i] - 0.3, lo - 0.5), 0.6, hi - lo + 1,
                                color="#3a8d3a" if done else _DONE, alpha=0.85, lw=0))
    cov.set_xlim(-0.6, xs[-1] + 0.6)
    cov.set_ylim(n - 0.5, -0.5)
    cov.set_xticks(xs)
    cov.set_xticklabels([str(i + 1) if i < n else f"c{i - n + 1}" for i in range(slots)], fontsize=8)
    cov.set_yticks(range(n))
    cov.set_yticklabels([str(j + 1) for j in range(n)], fontsize=7 if n <= 8 else 6)
    cov.set_ylabel("inputs held", fontsize=8)
    cov.set_xlabel("slot (green: holds its inclusive prefix; dashed: the prefix it needs)", fontsize=8)
    return fig


def static_figure(algorithm=DEFAULT["algorithm"], n=DEFAULT["n"], step=DEFAULT["step"]):
    """The figure :func:`scan_widget` shows in its default state."""
    return scan_figure(algorithm, n, step)


def scan_widget(algorithm=DEFAULT["algorithm"], n=DEFAULT["n"], step=DEFAULT["step"]):
    """An ipywidget stepping through a parallel scan.

    Controls: the algorithm (sequential, Hillis–Steele, Blelloch, chunked),
    the number of inputs (8 or 16) and the step. Changing the algorithm or the
    size moves the slider to the last step of the new scan. Returns the
    widget (a ``VBox``) with its controls as attributes ``algorithm``,
    ``size``, ``step`` and ``output``.
    """
    import ipywidgets as widgets
    from IPython.display import display

    if n not in SIZES:
        raise ValueError(f"n must be one of {SIZES}, got {n!r}")
    chooser = widgets.ToggleButtons(options=[(label, key) for key, label in ALGORITHM_LABELS.items()],
                                    value=algorithm, description="algorithm")
    size = widgets.ToggleButtons(options=list(SIZES), value=n, description="n")
    last = len(scan_steps(algorithm, n)) - 1
    slider = widgets.IntSlider(min=0, max=last, value=last if step is None else step, description="step",
                               continuous_update=False)
    output = widgets.Output()

    def redraw(*_):
        fig = scan_figure(chooser.value, size.value, slider.value)
        with output:
            output.clear_output(wait=True)
            display(fig)

    def reset(*_):
        new_last = len(scan_steps(chooser.value, size.value)) - 1
        slider.unobserve(redraw, names="value")
        slider.max = new_last
        slider.value = new_last
        slider.observe(redraw, names="value")
        redraw()

    chooser.observe(reset, names="value")
    size.observe(reset, names="value")
    slider.observe(redraw, names="value")
    box = widgets.VBox([chooser, size, slider, output])
    box.algorithm, box.size, box.step, box.output = chooser, size, slider, output
    redraw()
    return box
