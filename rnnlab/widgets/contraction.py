"""Widgets of the chapter "Contraction analysis of RNNs".

Two widgets, each with a static figure of its default state (the online book
shows widgets only as snapshots, so a chapter draws the static figure first):

- :func:`trajectory_widget`: two trajectories of a two-unit RNN
  ``tau dx/dt = -x + W phi(x) + u(t)`` driven by the same input, with the
  metric's ellipses around one of them. The metric is the best constant
  metric that the package finds for ``W`` (Theorem 1's diagonal metric, else
  a common metric from an SDP over the slope vertices); the right panel
  compares the measured distance with the certified bound.
- :func:`theorem7_widget`: Theorem 7's counterexample ``W = [[0, -c], [c,
  0]]`` with sliders for ``c`` and the smallest slope ``eps``: where a common
  constant metric exists on a ``(c, eps)`` grid, which metrics
  ``M = [[a, m], [m, 1]]`` work for each slope pattern, and how often each of
  the proof's necessary conditions (11)-(18) holds.

All numbers come from :mod:`rnnlab.theory`; this module only draws them.
"""
from __future__ import annotations

import functools

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .. import theory
from .._validate import check_finite_matrix

__all__ = [
    "PRESETS",
    "DEFAULT_PRESET",
    "T7_DEFAULT",
    "metric_for",
    "two_trajectories",
    "trajectory_figure",
    "trajectory_widget",
    "theorem7_default_grid",
    "theorem7_figure",
    "theorem7_widget",
    "static_figure",
]

PRESETS = {
    "feedback + feed-forward (a diagonal metric)": dict(
        W=((0.0, -0.2), (4.0, 0.0)), activation="relu", offset=1.0, amplitude=1.0),
    "strong self-inhibition (a tilted metric)": dict(
        W=((-9.0, 2.5), (2.5, 0.0)), activation="relu", offset=1.0, amplitude=1.0),
    "rotation c = 1.5": dict(
        W=((0.0, -1.5), (1.5, 0.0)), activation="relu", offset=1.0, amplitude=1.0),
    "rotation c = 3 (no constant metric)": dict(
        W=((0.0, -3.0), (3.0, 0.0)), activation="relu", offset=1.0, amplitude=1.0),
    "bistable (tanh, W = 2 I)": dict(
        W=((2.0, 0.0), (0.0, 2.0)), activation="tanh", offset=0.0, amplitude=0.3),
}
"""Two-unit networks offered by :func:`trajectory_widget`: ``W``, the activation and the input
``u(t) = offset + amplitude (sin t, cos 0.7 t)``."""

DEFAULT_PRESET = "feedback + feed-forward (a diagonal metric)"
"""The preset the trajectory widget starts with."""

X0 = ((1.0, -2.0), (4.0, 1.0))
"""The two initial states of the trajectory widget."""

T7_DEFAULT = dict(c=2.0, eps=0.0)
"""The default state of :func:`theorem7_widget`: the ReLU counterexample of C.8."""

_A, _B = "#1f77b4", "#e07b00"


# --------------------------------------------------------------------------- #
# two trajectories and a metric
# --------------------------------------------------------------------------- #
def metric_for(W, activation="relu"):
    """The best constant metric the package finds for a small ``W``, as a :class:`~rnnlab.theory.Certificate`.

    Theorem 1 first (a diagonal metric, cheap); if it fails, the SDP of
    :func:`~rnnlab.theory.find_common_metric` over all slope vertices of
    ``[0, g]^n`` (exact for a constant metric). The returned certificate fails
    when neither finds a metric.
    """
    W = np.asarray(W, dtype=float)
    g = theory.get_activation(activation).g
    cert = theory.certify_theorem1(W, g)
    if cert.holds:
        return cert
    return theory.find_common_metric(W, "vertices", g=g)


def _input(amplitude, offset):
    def u(t):
        return np.array([offset + amplitude * np.sin(t), offset + amplitude * np.cos(0.7 * t)])
    return u


def two_trajectories(W, activation="relu", amplitude=1.0, offset=1.0, *, x0=X0, T=12.0, dt=0.01):
    """Simulate two trajectories of ``dx/dt = -x + W phi(x) + u(t)`` (Euler, ``tau = 1``).

    The input is ``u(t) = offset + A (sin t, cos 0.7 t)`` with ``A =
    amplitude``, the same for both trajectories. Returns ``(times, X)`` with
    ``X`` of shape ``(steps + 1, 2, 2)`` (time, trajectory, unit).
    """
    W = check_finite_matrix("W", W, (2, 2))
    x0 = np.asarray(x0, dtype=float)
    return theory.simulate(W, x0, T=T, dt=dt, u=_input(float(amplitude), float(offset)), activation=activation)


def _sqrt_inv(M):
    w, V = np.linalg.eigh(M)
    return (V * np.sqrt(w)) @ V.T, (V / np.sqrt(w)) @ V.T


def trajectory_figure(W=None, activation=None, amplitude=None, offset=None, *, preset=DEFAULT_PRESET, T=12.0,
                      ellipse_times=(0.0, 1.0, 2.0, 3.5, 5.0)):
    """Two trajectories of a two-unit RNN and the metric's ellipses.

    ``W``, ``activation`` and the input's ``amplitude`` and ``offset`` default
    to those of ``preset`` (a key of :data:`PRESETS`). Left: the state plane; at each of ``ellipse_times`` the
    ellipse ``{x : (x - x_a)^T M (x - x_a) = d_M^2}`` centred on trajectory A
    passes through trajectory B, so it shrinks exactly as their distance in the
    metric ``M`` does. Right: both distances relative to their initial value,
    in the metric and in the Euclidean norm, with the certified bound
    ``exp(-lambda t)`` when a metric was found.
    """
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {preset!r}")
    W = check_finite_matrix("W", PRESETS[preset]["W"] if W is None else W, (2, 2))
    activation = PRESETS[preset]["activation"] if activation is None else activation
    amplitude = PRESETS[preset]["amplitude"] if amplitude is None else float(amplitude)
    offset = PRESETS[preset]["offset"] if offset is None else float(offset)
    theory.get_activation(activation)  # validates the name
    cert = metric_for(W, activation)
    M = cert.metric if cert.holds else np.eye(2)
    Mh, Mih = _sqrt_inv(M)
    times, X = two_trajectories(W, activation, amplitude, offset, T=T)
    diff = X[:, 0] - X[:, 1]
    dM = np.linalg.norm(diff @ Mh.T, axis=1)
    dE = np.linalg.norm(diff, axis=1)

    fig = Figure(figsize=(10.5, 4.3), layout="constrained")
    ax, ax2 = fig.subplots(1, 2, width_ratios=[1.1, 1])
    ax.plot(X[:, 0, 0], X[:, 0, 1], color=_A, lw=1.4, label="trajectory A")
    ax.plot(X[:, 1, 0], X[:, 1, 1], color=_B, lw=1.4, label="trajectory B")
    ax.plot(*X[0, 0], "o", color=_A)
    ax.plot(*X[0, 1], "o", color=_B)
    theta = np.linspace(0, 2 * np.pi, 200)
    circle = np.stack([np.cos(theta), np.sin(theta)])
    dt = times[1] - times[0]
    shades = np.linspace(0.85, 0.25, len(ellipse_times))
    for t, shade in zip(ellipse_times, shades):
        k = min(int(round(t / dt)), len(times) - 1)
        pts = X[k, 0][:, None] + dM[k] * (Mih @ circle)
        colour = (shade, shade, shade)
        ax.plot(pts[0], pts[1], color=colour, lw=1.0)
        ax.plot([X[k, 0, 0], X[k, 1, 0]], [X[k, 0, 1], X[k, 1, 1]], color=colour, lw=0.8, ls=":")
        ax.text(*X[k, 0], f" t={t:g}", fontsize=7, color=colour, va="bottom")
    lo, hi = X.reshape(-1, 2).min(axis=0), X.reshape(-1, 2).max(axis=0)
    pad = 0.15 * max(float((hi - lo).max()), 1e-6)
    ax.set_xlim(lo[0] - pad, hi[0] + pad)
    ax.set_ylim(lo[1] - pad, hi[1] + pad)
    ax.set_xlabel("$x_1$")
    ax.set_ylabel("$x_2$")
    ax.legend(loc="best", fontsize=8)
    w = np.round(W, 2)
    gain = "" if amplitude == 1 else f"{amplitude:g} "  # u = 1 + (sin t, ...), not 1 + 1 (...)
    ax.set_title(f"W = [[{w[0, 0]:g}, {w[0, 1]:g}], [{w[1, 0]:g}, {w[1, 1]:g}]], {activation}, "
                 f"u = {offset:g} + {gain}(sin t, cos 0.7t)", fontsize=9)

    floor = 1e-12
    ax2.semilogy(times, np.maximum(dM / dM[0], floor), color="black", lw=1.6, label="distance in M")
    ax2.semilogy(times, np.maximum(dE / dE[0], floor), color="0.55", lw=1.2, ls="--", label="Euclidean distance")
    if cert.holds:
        # the exact rate of the metric found (over all slope corners), never below cert.rate
        g = theory.get_activation(activation).g
        rate = max(cert.rate, theory.rate_in_metric(W, cert.metric, g=g)[0])
        ax2.semilogy(times, np.exp(-rate * times), color="#3a8d3a", lw=1.2, ls=":",
                     label=f"certified bound exp(-{rate:.2f} t)")
        if np.allclose(cert.metric, np.diag(np.diag(cert.metric))):
            head = f"diagonal metric, rate {rate:.2f}"
        else:
            head = f"constant metric (SDP), rate {rate:.2f}"
    else:
        head = "no constant metric exists (SDP): circles drawn in the identity"
    lo = max(min(float(np.min(dM / dM[0])), float(np.min(dE / dE[0]))), 1e-8)
    ax2.set_ylim(lo / 3, max(3.0, float(np.max(dE / dE[0])) * 1.5))
    ax2.set_xlabel("time t (units of tau)")
    ax2.set_ylabel("distance / initial distance")
    ax2.legend(loc="lower left", fontsize=8)
    ax2.set_title(head, fontsize=9)
    fig.cert = cert  # the certificate drawn, for tests and readers
    return fig


def trajectory_widget(preset=DEFAULT_PRESET):
    """An ipywidget: choose a preset or move the four weights, watch two trajectories.

    Controls: ``preset`` (a dropdown of :data:`PRESETS`), sliders ``w11``,
    ``w12``, ``w21``, ``w22``, the activation and the input's amplitude and
    offset. Each change recomputes the metric (Theorem 1, else an SDP) and
    redraws. Returns a ``VBox`` with the controls as attributes ``preset``,
    ``weights`` (the four sliders, row by row), ``activation``, ``amplitude``,
    ``offset`` and ``output``, and ``figure`` (the figure drawn last).
    """
    import ipywidgets as widgets
    from IPython.display import display

    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {preset!r}")
    W0 = np.asarray(PRESETS[preset]["W"], dtype=float)
    chooser = widgets.Dropdown(options=list(PRESETS), value=preset, description="preset",
                               layout=widgets.Layout(width="420px"))
    sliders = [widgets.FloatSlider(value=float(W0[i, j]), min=-10.0, max=10.0, step=0.1,
                                   description=f"w{i + 1}{j + 1}", continuous_update=False)
               for i in range(2) for j in range(2)]
    act = widgets.ToggleButtons(options=["relu", "tanh"], value=PRESETS[preset]["activation"],
                                description="phi")
    amp = widgets.FloatSlider(value=float(PRESETS[preset]["amplitude"]), min=0.0, max=3.0, step=0.1,
                              description="amplitude", continuous_update=False)
    off = widgets.FloatSlider(value=float(PRESETS[preset]["offset"]), min=-3.0, max=3.0, step=0.1,
                              description="offset", continuous_update=False)
    output = widgets.Output()
    holding = {"on": False}

    def redraw(*_):
        if holding["on"]:
            return
        W = np.array([[sliders[0].value, sliders[1].value], [sliders[2].value, sliders[3].value]])
        fig = trajectory_figure(W, act.value, amp.value, off.value)
        box.figure = fig
        with output:
            output.clear_output(wait=True)
            display(fig)

    def load(*_):
        p = PRESETS[chooser.value]
        holding["on"] = True
        for s, v in zip(sliders, np.asarray(p["W"], dtype=float).ravel()):
            s.value = float(v)
        act.value = p["activation"]
        amp.value = float(p["amplitude"])
        off.value = float(p["offset"])
        holding["on"] = False
        redraw()

    chooser.observe(load, names="value")
    for s in sliders + [act, amp, off]:
        s.observe(redraw, names="value")
    box = widgets.VBox([chooser, widgets.HBox(sliders[:2]), widgets.HBox(sliders[2:]),
                        widgets.HBox([act, amp, off]), output])
    box.figure = None
    box.preset, box.weights, box.activation, box.amplitude, box.offset = chooser, sliders, act, amp, off
    box.output = output
    redraw()
    return box


# --------------------------------------------------------------------------- #
# Theorem 7
# --------------------------------------------------------------------------- #
@functools.lru_cache(maxsize=4)
def _cached_grid(cs, epss):
    return theory.theorem7_margin_grid(np.array(cs), np.array(epss))


def theorem7_default_grid(cs=None, epss=None):
    """``(cs, epss, margins)`` for the feasibility map (cached; about 200 SDPs the first time).

    Defaults: ``c`` from 1 to 6 in steps of 0.25, ``eps`` from 0 to 0.8 in
    steps of 0.1; ``margins`` from :func:`rnnlab.theory.theorem7_margin_grid`.
    """
    cs = tuple(np.round(np.arange(1.0, 6.0001, 0.25), 6)) if cs is None else tuple(float(c) for c in cs)
    epss = tuple(np.round(np.arange(0.0, 0.80001, 0.1), 6)) if epss is None else tuple(float(e) for e in epss)
    return np.array(cs), np.array(epss), _cached_grid(cs, epss)


_COND_LABELS = ["(11)/(17)", "(12)/(18)", "(13)/(15)", "(14)/(16)", "all necessary",
                "X1 < 0", "X2 < 0", "all exact"]


def theorem7_figure(c=T7_DEFAULT["c"], eps=T7_DEFAULT["eps"], grid=None, *, a_max=3.0, m_max=2.0,
                    resolution=241):
    """Theorem 7's counterexample at ``(c, eps)``: three panels.

    Left: the SDP margin of :func:`rnnlab.theory.find_common_metric` over the
    ``(c, eps)`` grid ``grid = (cs, epss, margins)`` (default
    :func:`theorem7_default_grid`), blue where a common constant metric exists;
    the dashed curve is ``c = 2 / (1 - eps)``, the cross the current point.
    Middle: metrics ``M = [[a, m], [m, 1]]`` (``b = 1`` loses nothing: every
    condition is homogeneous in ``M``), shaded where ``(M W D_1)_sym - M < 0``
    (blue), where ``(M W D_2)_sym - M < 0`` (orange) and where both hold (green:
    the common metrics); the black outline encloses the points meeting all the
    proof's necessary conditions. Right: the fraction of the ``(a, m)`` grid
    on which each condition of :func:`rnnlab.theory.theorem7_conditions` holds.
    """
    c, eps = float(c), float(eps)
    if not 0 <= eps < 1:
        raise ValueError(f"eps must be in [0, 1), got {eps}")
    if not c > 0:
        raise ValueError(f"c must be > 0, got {c}")
    cs, epss, margins = theorem7_default_grid() if grid is None else grid
    search = theory.find_common_metric(np.array([[0.0, -c], [c, 0.0]]), np.array([[1.0, eps], [eps, 1.0]]))

    fig = Figure(figsize=(12.5, 4.2), layout="constrained")
    ax0, ax1, ax2 = fig.subplots(1, 3, width_ratios=[1.05, 1, 0.8])

    # (c, eps) map
    lim = max(float(np.abs(margins).max()), 1e-9)
    mesh = ax0.pcolormesh(cs, epss, margins, cmap="RdBu", vmin=-lim, vmax=lim, shading="nearest")
    fig.colorbar(mesh, ax=ax0, label="SDP margin s (> 0: a metric exists)", shrink=0.85)
    e_line = np.linspace(0, min(0.95, max(float(epss.max()), eps) + 0.05), 200)
    ax0.plot(2 / (1 - e_line), e_line, "k--", lw=1.2, label="c = 2 / (1 - eps)")
    ax0.plot(c, eps, "kx", ms=10, mew=2)
    ax0.set_xlim(float(cs.min()) - 0.15, float(cs.max()) + 0.15)
    ax0.set_ylim(float(epss.min()) - 0.05, float(epss.max()) + 0.05)
    ax0.set_xlabel("c (W = [[0, -c], [c, 0]])")
    ax0.set_ylabel("eps (slopes in [eps, 1])")
    ax0.legend(loc="upper left", fontsize=8)
    ax0.set_title("common constant metric on the grid", fontsize=9)

    # (a, m) plane
    a = np.linspace(a_max / resolution, a_max, resolution)[None, :]
    m = np.linspace(-m_max, m_max, resolution)[:, None]
    cond = theory.theorem7_conditions(a, 1.0, m, c, eps)
    A, Mm = np.broadcast_arrays(a, m)
    regions = [(cond["M > 0"] & cond["X1 < 0"], "#9ecae1"), (cond["M > 0"] & cond["X2 < 0"], "#fdd0a2"),
               (cond["all exact"], "#41ab5d")]
    for mask, colour in regions:
        if mask.any():
            ax1.contourf(A, Mm, mask.astype(float), levels=[0.5, 1.5], colors=[colour], alpha=0.85)
    if cond["all necessary"].any():
        ax1.contour(A, Mm, cond["all necessary"].astype(float), levels=[0.5], colors="black", linewidths=1.2)
    ax1.plot(a.ravel(), np.sqrt(a.ravel()), color="0.5", lw=0.8, ls=":")
    ax1.plot(a.ravel(), -np.sqrt(a.ravel()), color="0.5", lw=0.8, ls=":")
    ax1.plot(1, 0, "k+", ms=10, mew=2)
    if search.holds:
        Ms = search.metric / search.metric[1, 1]
        ax1.plot(Ms[0, 0], Ms[0, 1], "*", color="#006d2c", ms=13, mec="white")
    handles = [Patch(color="#9ecae1", label="D1 ok"), Patch(color="#fdd0a2", label="D2 ok"),
               Patch(color="#41ab5d", label="both: common metric"),
               Line2D([], [], color="black", lw=1.2, label="necessary (11)-(18) all hold"),
               Line2D([], [], color="k", marker="+", ls="", label="identity"),
               Line2D([], [], color="#006d2c", marker="*", ls="", label="SDP metric")]
    ax1.legend(handles=handles, loc="lower right", fontsize=7)
    ax1.set_xlim(0, a_max)
    ax1.set_ylim(-m_max, m_max)
    ax1.set_xlabel("a")
    ax1.set_ylabel("m")
    verdict = (f"SDP: metric found, margin {search.margin:.3f}" if search.holds
               else f"SDP: no common metric (margin {search.margin:.3f})")
    ax1.set_title(f"M = [[a, m], [m, 1]] at c = {c:g}, eps = {eps:g}\n{verdict}", fontsize=9)

    # how often each condition holds
    frac = [float(cond[k].mean()) for k in _COND_LABELS]
    colours = ["0.6"] * 4 + ["black"] + ["0.6"] * 2 + ["#41ab5d"]
    y = np.arange(len(_COND_LABELS))[::-1]
    ax2.barh(y, frac, color=colours)
    for yi, f in zip(y, frac):
        ax2.text(min(f, 0.75) + 0.02, yi, f"{f:.1%}" if f else "none", va="center", fontsize=8)
    ax2.set_yticks(y)
    ax2.set_yticklabels(_COND_LABELS, fontsize=8)
    ax2.set_xlim(0, 1)
    ax2.set_xlabel("fraction of the (a, m) grid")
    ax2.set_title("the appendix's necessary conditions (b = 1)", fontsize=9)
    fig.search = search
    fig.conditions = {k: f for k, f in zip(_COND_LABELS, frac)}
    return fig


def theorem7_widget(c=T7_DEFAULT["c"], eps=T7_DEFAULT["eps"], grid=None):
    """An ipywidget with sliders for ``c`` and ``eps`` redrawing :func:`theorem7_figure`.

    ``grid`` is the precomputed ``(cs, epss, margins)`` of the feasibility map
    (default :func:`theorem7_default_grid`); each move solves one small SDP.
    Returns a ``VBox`` with attributes ``c``, ``eps`` (the sliders), ``output`` and
    ``figure`` (the figure drawn last).
    """
    import ipywidgets as widgets
    from IPython.display import display

    grid = theorem7_default_grid() if grid is None else grid
    cs = widgets.FloatSlider(value=float(c), min=0.5, max=6.0, step=0.05, description="c",
                             continuous_update=False)
    es = widgets.FloatSlider(value=float(eps), min=0.0, max=0.9, step=0.05, description="eps",
                             continuous_update=False)
    output = widgets.Output()

    def redraw(*_):
        fig = theorem7_figure(cs.value, es.value, grid)
        box.figure = fig
        with output:
            output.clear_output(wait=True)
            display(fig)

    box = widgets.VBox([widgets.HBox([cs, es]), output])
    box.figure = None
    cs.observe(redraw, names="value")
    es.observe(redraw, names="value")
    box.c, box.eps, box.output = cs, es, output
    redraw()
    return box


def static_figure(widget="trajectories", grid=None):
    """The figure a widget shows in its default state.

    ``widget="trajectories"``: :func:`trajectory_widget`'s (the preset
    :data:`DEFAULT_PRESET`); ``widget="theorem7"``: :func:`theorem7_widget`'s
    (``c = 2, eps = 0``, on ``grid``).
    """
    if widget == "trajectories":
        return trajectory_figure(preset=DEFAULT_PRESET)
    if widget == "theorem7":
        return theorem7_figure(**T7_DEFAULT, grid=grid)
    raise ValueError(f"widget must be 'trajectories' or 'theorem7', got {widget!r}")
