"""The primer's widget and schematics: a two-unit RNN as a dynamical system.

The network of ``book/scans/00_dynamical_systems`` has two units and one
input,

    h_t = φ(W h_{t−1} + U x_t),   φ = tanh (the RNN) or the identity (its linear cousin),

with ``U`` fixed (:data:`U_DEFAULT`) and, in the widget, a constant input
``x``. Everything a figure shows is computed here from the package:

- :func:`phase_figure`: three panels. The phase portrait (the arrow from each
  state h to the next state φ(W h + U x), trajectories from a ring of starts,
  the fixed points: filled when stable, open otherwise); the eigenvalues of
  the Jacobian at each fixed point beside the unit circle; and the size of
  the gradient ``‖∂h_t/∂h_0‖`` along one trajectory, for the tanh network and
  for its linear cousin with the same ``W``.
- :func:`phase_widget`: the live version (a preset, W's four entries, the
  input, the nonlinearity); :func:`static_figure` its default state.
- :func:`network_diagram` and :func:`unrolled_diagram`: the two schematics of
  the page (the two units with the example's weights; the network unrolled in
  time with the Jacobians on the backward arrows).

The Jacobians of the tanh network come from
:func:`rnnlab.theory.recurrent_jacobian` applied to an
:class:`rnnlab.models.RNN` that holds ``W`` and ``U`` (:func:`two_unit_rnn`);
spectral radii and eigenvalues from :mod:`rnnlab.theory`. Fixed points are
found by Newton's method from a grid of starts (:func:`fixed_points`).
"""
from __future__ import annotations

import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch

from .. import theory
from .._validate import check_finite_matrix, check_int

__all__ = [
    "U_DEFAULT",
    "PRESETS",
    "DEFAULT",
    "NONLINEARITIES",
    "two_unit_rnn",
    "run",
    "jacobians",
    "fixed_points",
    "gradient_norms",
    "phase_figure",
    "phase_widget",
    "static_figure",
    "network_diagram",
    "unrolled_diagram",
]

U_DEFAULT = (1.0, 0.5)
"""The input weights ``U`` (a column: one input, two units) of every figure."""

NONLINEARITIES = ("tanh", "linear")
"""``"tanh"``: the RNN; ``"linear"``: its linear cousin ``h_t = W h_{t−1} + U x_t``."""

PRESETS = {
    "bistable: a saddle between two attractors": dict(W=((1.6, 0.4), (0.4, 0.6)), x=0.0,
                                                      nonlinearity="tanh"),
    "spiral into a fixed point (|λ| < 1)": dict(W=((0.8, -0.45), (0.45, 0.8)), x=0.3,
                                                nonlinearity="tanh"),
    "rotation, linear (|λ| = 1: memory)": dict(W=((0.8, -0.6), (0.6, 0.8)), x=0.0,
                                               nonlinearity="linear"),
    "tanh with |λ| > 1, complex: a closed curve": dict(W=((1.05, -0.75), (0.75, 1.05)), x=0.0,
                                                nonlinearity="tanh"),
    "contracting (‖W‖ < 1)": dict(W=((0.5, -0.6), (0.3, 0.4)), x=0.5, nonlinearity="tanh"),
}
"""Two-unit networks the widget offers: ``W``, the constant input ``x`` and the nonlinearity."""

DEFAULT = "bistable: a saddle between two attractors"
"""The preset the widget starts in (and :func:`static_figure` draws)."""

H0_GRADIENT = (0.05, -0.02)
"""Where the trajectory of the gradient panel starts: near the origin."""

T_PHASE, T_GRADIENT, LIMIT = 30, 40, 1.3
_STABLE, _UNSTABLE = "#1f77b4", "#d62728"


# --------------------------------------------------------------------------- #
# numerics
# --------------------------------------------------------------------------- #
def _check_nonlinearity(nonlinearity):
    if nonlinearity not in NONLINEARITIES:
        raise ValueError(f"nonlinearity must be one of {NONLINEARITIES}, got {nonlinearity!r}")
    return nonlinearity


def _U(U):
    U = np.asarray(U_DEFAULT if U is None else U, dtype=float).reshape(-1)
    if U.shape != (2,):
        raise ValueError(f"U must hold two numbers (one input, two units), got shape {U.shape}")
    return U


def two_unit_rnn(W, U=None):
    """An :class:`rnnlab.models.RNN` ``(input_size=1, hidden_size=2)`` in float64 holding ``W``, ``U``, no bias.

    Its ``step`` computes ``h_t = tanh(W h_{t−1} + U x_t)``; the package's
    :func:`rnnlab.theory.recurrent_jacobian` differentiates it.
    """
    from ..models import RNN

    W, U = check_finite_matrix("W", W, (2, 2)), _U(U)
    model = RNN(1, 2, dtype=torch.float64)
    with torch.no_grad():
        model.weight_hh.copy_(torch.from_numpy(W)[None])
        model.mask_hh.fill_(1.0)
        model.weight_ih.copy_(torch.from_numpy(U)[:, None])
        model.bias.zero_()
    return model


def run(W, h0, x, U=None, nonlinearity="tanh"):
    """The states ``h_0, h_1, …, h_T`` of the network from ``h0`` with inputs ``x_1 … x_T``.

    ``h0``: ``(2,)`` or a batch ``(..., 2)`` of starts; ``x``: a sequence of
    ``T`` numbers (one input per step, the same for every start). Returns an
    array ``(T + 1, ..., 2)``.
    """
    W, U = check_finite_matrix("W", W, (2, 2)), _U(U)
    _check_nonlinearity(nonlinearity)
    h = np.asarray(h0, dtype=float)
    if h.shape[-1:] != (2,):
        raise ValueError(f"h0 must have shape (2,) or (..., 2), got {h.shape}")
    out = [h]
    for x_t in np.asarray(x, dtype=float).reshape(-1):
        pre = h @ W.T + x_t * U
        h = np.tanh(pre) if nonlinearity == "tanh" else pre
        out.append(h)
    return np.stack(out)


def jacobians(W, h_prev, x=0.0, U=None, nonlinearity="tanh"):
    """``∂h_t/∂h_{t−1}`` at the states ``h_prev`` ``(B, 2)`` and inputs ``x`` (a number or ``(B,)``): ``(B, 2, 2)``.

    The tanh network's come from :func:`rnnlab.theory.recurrent_jacobian`; the
    linear cousin's Jacobian is ``W`` everywhere.
    """
    W = check_finite_matrix("W", W, (2, 2))
    _check_nonlinearity(nonlinearity)
    h_prev = np.atleast_2d(np.asarray(h_prev, dtype=float))
    B = h_prev.shape[0]
    if nonlinearity == "linear":
        return np.broadcast_to(W, (B, 2, 2)).copy()
    x = np.broadcast_to(np.asarray(x, dtype=float), (B,))
    model = two_unit_rnn(W, U)
    with torch.no_grad():
        J = theory.recurrent_jacobian(model, torch.from_numpy(x.copy())[:, None], torch.from_numpy(h_prev))
    return J.numpy()


def fixed_points(W, x=0.0, U=None, nonlinearity="tanh", *, grid=9, tol=1e-10):
    """The fixed points ``h* = φ(W h* + U x)``, each with its Jacobian's eigenvalues and its kind.

    Returns a list of dicts ``{"h": (2,), "eigenvalues": (2,) complex,
    "rho": spectral radius, "kind": "stable" | "neutral" | "saddle" | "unstable"}``,
    sorted by the first coordinate. The tanh network's fixed points lie in
    ``(−1, 1)²``; Newton's method from a ``grid × grid`` lattice of starts
    there finds them (a fixed point with a tiny basin for Newton could be
    missed). The linear cousin has the one fixed point that solves a linear
    system, or none when ``I − W`` is singular (then it has none or a whole
    line of them).
    """
    W, U = check_finite_matrix("W", W, (2, 2)), _U(U)
    _check_nonlinearity(nonlinearity)
    c = float(x) * U
    if nonlinearity == "linear":
        A = np.eye(2) - W
        if abs(np.linalg.det(A)) < 1e-9:
            points = np.zeros((0, 2))
        else:
            points = np.linalg.solve(A, c)[None]
    else:
        s = np.linspace(-0.95, 0.95, grid)
        h = np.stack(np.meshgrid(s, s), -1).reshape(-1, 2)
        for _ in range(60):
            t = np.tanh(h @ W.T + c)
            F = h - t
            JF = np.eye(2) - (1 - t ** 2)[:, :, None] * W          # d/dh of h − tanh(W h + c)
            ok = np.abs(np.linalg.det(JF)) > 1e-12
            step = np.zeros_like(h)
            step[ok] = np.linalg.solve(JF[ok], F[ok][:, :, None])[:, :, 0]
            h = np.clip(h - step, -1.0, 1.0)
        residual = np.abs(h - np.tanh(h @ W.T + c)).max(axis=1)
        h = h[residual < tol]
        points = []
        for p in h:
            if all(np.abs(p - q).max() > 1e-6 for q in points):
                points.append(p)
        points = np.array(points).reshape(-1, 2)
    points = points + 0.0                                          # no -0.0 in the labels
    points = points[np.argsort(points[:, 0], kind="stable")] if len(points) else points
    out = []
    for p in points:
        J = jacobians(W, p[None], x, U, nonlinearity)[0]
        lam = theory.eigenvalues(J).numpy()
        kind = _kind(np.abs(lam))
        out.append({"h": p, "eigenvalues": lam, "rho": float(theory.spectral_radius(J)), "kind": kind})
    return out


def _kind(moduli, eps=1e-9):
    """``"stable"`` (every |λ| < 1), ``"neutral"`` (the largest |λ| = 1), ``"saddle"`` or ``"unstable"``."""
    if moduli.max() > 1 + eps:
        return "unstable" if moduli.min() > 1 + eps else "saddle"
    return "neutral" if moduli.max() >= 1 - eps else "stable"


def gradient_norms(W, h0=H0_GRADIENT, x=0.0, T=T_GRADIENT, U=None, nonlinearity="tanh"):
    """``‖∂h_t/∂h_0‖`` (spectral norm) for ``t = 0 … T``: the product ``J_t ⋯ J_1`` along the trajectory from ``h0``.

    The input is the constant ``x``. Entry 0 is ``‖I‖ = 1``.
    """
    hs = run(W, h0, np.full(T, float(x)), U, nonlinearity)
    J = jacobians(W, hs[:-1], x, U, nonlinearity)
    P, out = np.eye(2), [1.0]
    for Jt in J:
        P = Jt @ P
        out.append(float(np.linalg.norm(P, 2)))
    return np.array(out)


# --------------------------------------------------------------------------- #
# the phase figure
# --------------------------------------------------------------------------- #
def _preset_values(W, x, nonlinearity, preset):
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {preset!r}")
    p = PRESETS[preset]
    W = check_finite_matrix("W", p["W"] if W is None else W, (2, 2))
    x = float(p["x"] if x is None else x)
    nonlinearity = _check_nonlinearity(p["nonlinearity"] if nonlinearity is None else nonlinearity)
    return W, x, nonlinearity


def _starts():
    """Starting states of the drawn trajectories: a ring inside the tanh network's square (-1, 1)², two near 0."""
    angles = np.linspace(0, 2 * np.pi, 10, endpoint=False) + 0.2
    ring = 0.95 * np.stack([np.cos(angles), np.sin(angles)], 1)
    return np.concatenate([ring, [[0.08, 0.03], [-0.08, -0.03]]])


def phase_figure(W=None, x=None, nonlinearity=None, *, preset=DEFAULT):
    """The phase portrait, the fixed points' eigenvalues and the gradient through time (a Figure).

    ``W``, ``x`` and ``nonlinearity`` default to those of ``preset`` (a key of
    :data:`PRESETS`). The figure carries the numbers it drew:
    ``fig.fixed_points`` (:func:`fixed_points`), ``fig.rho`` (the spectral
    radius of ``W``) and ``fig.gradients`` (``{"tanh": …, "linear": …}``,
    :func:`gradient_norms` of both networks).
    """
    W, x, nonlinearity = _preset_values(W, x, nonlinearity, preset)
    U = _U(None)
    fps = fixed_points(W, x, U, nonlinearity)
    rho = float(theory.spectral_radius(W))
    grads = {nl: gradient_norms(W, x=x, nonlinearity=nl) for nl in NONLINEARITIES}

    fig = Figure(figsize=(13.5, 4.4), layout="constrained")
    ax, ex, gx = fig.subplots(1, 3, width_ratios=[1.15, 0.9, 1.05])

    # phase portrait: the step's arrows, trajectories, fixed points
    s = np.linspace(-LIMIT, LIMIT, 15)
    grid = np.stack(np.meshgrid(s, s), -1)
    nxt = run(W, grid, [x], U, nonlinearity)[1]
    d = nxt - grid
    length = np.linalg.norm(d, axis=-1, keepdims=True)
    d = d / np.maximum(length, 1e-12) * np.minimum(length, 0.16) / 0.16
    ax.quiver(grid[..., 0], grid[..., 1], d[..., 0], d[..., 1], color="0.72", angles="xy",
              scale_units="xy", scale=1 / 0.13, width=0.004)
    paths = run(W, _starts(), np.full(T_PHASE, x), U, nonlinearity)
    for k in range(paths.shape[1]):
        p = paths[:, k]
        inside = np.all(np.abs(p) < 4 * LIMIT, axis=1)
        p = p[: int(np.argmin(inside)) if not inside.all() else len(p)]
        ax.plot(p[:, 0], p[:, 1], "-", color="#2ca02c", lw=1.0, alpha=0.8)
        ax.plot(p[:, 0], p[:, 1], ".", color="#2ca02c", ms=3)
        ax.plot(*p[0], "o", color="#2ca02c", ms=4, mfc="white")
    for fp in fps:
        stable = fp["kind"] == "stable"
        colour = _STABLE if stable else _UNSTABLE
        ax.plot(*fp["h"], "o", ms=10, color=colour, mfc=colour if stable else "white", mew=2, zorder=5)
    ax.set(xlim=(-LIMIT, LIMIT), ylim=(-LIMIT, LIMIT), aspect="equal", xlabel="$h_1$", ylabel="$h_2$")
    w = np.round(W, 2)
    ax.set_title(f"{nonlinearity}: W = [[{w[0, 0]:g}, {w[0, 1]:g}], [{w[1, 0]:g}, {w[1, 1]:g}]], "
                 f"x = {x:g}", fontsize=9)
    kinds = ", ".join(fp["kind"] for fp in fps) or "none"
    ax.text(0.02, 0.02, f"fixed points: {kinds}", transform=ax.transAxes, fontsize=8,
            bbox=dict(fc="white", ec="0.8", alpha=0.9))

    # eigenvalues of the Jacobian at each fixed point
    t = np.linspace(0, 2 * np.pi, 200)
    ex.plot(np.cos(t), np.sin(t), color="0.6", lw=1)
    top = 1.2
    markers = "osD^v"
    for i, fp in enumerate(fps):
        lam = fp["eigenvalues"]
        stable = fp["kind"] == "stable"
        colour = _STABLE if stable else _UNSTABLE
        h = np.round(fp["h"], 2)
        # later markers smaller and on top: fixed points with the same eigenvalues (the two
        # attractors of a symmetric network) show as nested markers, not one hiding the other
        ex.plot(lam.real, lam.imag, markers[i % len(markers)], ms=max(11 - 2.5 * i, 4), color=colour,
                mfc=colour if stable else "white", mew=1.5, mec="black" if stable else colour,
                zorder=3 + i,
                label=f"h* = ({h[0]:g}, {h[1]:g}): ρ = {fp['rho']:.2f}, {fp['kind']}")
        top = max(top, 1.1 * float(np.abs(lam).max()))
    ex.set(xlim=(-top, top), ylim=(-top, top), aspect="equal", xlabel="Re λ", ylabel="Im λ")
    ex.set_title("eigenvalues of the Jacobian at each fixed point" if fps else
                 "no isolated fixed point", fontsize=9)
    if fps:
        ex.legend(fontsize=7, loc="lower left", framealpha=0.9)

    # the gradient through time
    steps = np.arange(T_GRADIENT + 1)
    floor = 1e-30
    gx.semilogy(steps, np.maximum(grads["tanh"], floor), color="black", lw=1.8, label="tanh RNN")
    gx.semilogy(steps, np.maximum(grads["linear"], floor), color="C1", lw=1.4, ls="--",
                label="linear cousin: ‖W^t‖")
    gx.semilogy(steps, np.maximum(rho, floor) ** steps, color="C1", lw=0.8, ls=":", label=f"ρ(W)^t, ρ(W) = {rho:.2f}")
    lo = max(min(grads["tanh"].min(), grads["linear"].min(), rho ** T_GRADIENT), 1e-12)
    hi = min(max(grads["tanh"].max(), grads["linear"].max(), rho ** T_GRADIENT), 1e12)
    gx.set_ylim(lo / 5, hi * 5)
    gx.set(xlabel="steps t", ylabel="‖∂h_t / ∂h_0‖")
    h0 = H0_GRADIENT
    gx.set_title(f"gradient through time from h_0 = ({h0[0]:g}, {h0[1]:g})", fontsize=9)
    gx.legend(fontsize=7, loc="best")
    fig.fixed_points, fig.rho, fig.gradients = fps, rho, grads
    return fig


def static_figure():
    """The widget's default state: the bistable tanh network (a saddle at 0, two attractors)."""
    return phase_figure(preset=DEFAULT)


def phase_widget(preset=DEFAULT):
    """The live :func:`phase_figure`: a preset, sliders for W's entries and the input, the nonlinearity.

    Returns a ``VBox`` with the controls as attributes ``preset``, ``weights``
    (four sliders, row by row), ``input``, ``nonlinearity`` and ``output``, and
    ``figure`` (the figure drawn last).
    """
    import ipywidgets as widgets
    from IPython.display import display

    W0, x0, nl0 = _preset_values(None, None, None, preset)
    chooser = widgets.Dropdown(options=list(PRESETS), value=preset, description="preset",
                               layout=widgets.Layout(width="440px"))
    sliders = [widgets.FloatSlider(value=float(W0[i, j]), min=-2.0, max=2.0, step=0.05,
                                   description=f"w{i + 1}{j + 1}", continuous_update=False)
               for i in range(2) for j in range(2)]
    inp = widgets.FloatSlider(value=x0, min=-1.0, max=1.0, step=0.05, description="input x",
                              continuous_update=False)
    nl = widgets.ToggleButtons(options=list(NONLINEARITIES), value=nl0, description="φ")
    output = widgets.Output()
    holding = {"on": False}

    def redraw(*_):
        if holding["on"]:
            return
        W = np.array([[sliders[0].value, sliders[1].value], [sliders[2].value, sliders[3].value]])
        box.figure = phase_figure(W, inp.value, nl.value)
        with output:
            output.clear_output(wait=True)
            display(box.figure)

    def load(*_):
        W, x, nonlinearity = _preset_values(None, None, None, chooser.value)
        holding["on"] = True
        for s, v in zip(sliders, W.ravel()):
            s.value = float(v)
        inp.value = x
        nl.value = nonlinearity
        holding["on"] = False
        redraw()

    chooser.observe(load, names="value")
    for c in sliders + [inp, nl]:
        c.observe(redraw, names="value")
    box = widgets.VBox([chooser, widgets.HBox(sliders[:2]), widgets.HBox(sliders[2:]),
                        widgets.HBox([inp, nl]), output])
    box.figure = None
    box.preset, box.weights, box.input, box.nonlinearity, box.output = chooser, sliders, inp, nl, output
    redraw()
    return box


# --------------------------------------------------------------------------- #
# schematics
# --------------------------------------------------------------------------- #
def _arrow(ax, a, b, text=None, *, rad=0.0, colour="0.2", offset=(0, 0), lw=1.5, ls="-", fontsize=10):
    ax.add_patch(FancyArrowPatch(a, b, arrowstyle="-|>", mutation_scale=14, lw=lw, color=colour,
                                 connectionstyle=f"arc3,rad={rad}", shrinkA=0, shrinkB=0, ls=ls))
    if text:
        mid = (np.asarray(a) + np.asarray(b)) / 2 + np.asarray(offset)
        ax.text(*mid, text, ha="center", va="center", fontsize=fontsize, color=colour,
                bbox=dict(fc="white", ec="none", pad=0.5))


def network_diagram(W=None, U=None):
    """The two-unit RNN as a picture, with the numbers of ``W`` (default: the widget's default) and ``U``.

    Each unit is a circle; an arrow from unit j to unit i carries ``w_ij``
    (a self-loop for ``w_ii``), the input x reaches unit i with weight
    ``u_i``, and every unit applies tanh to the sum of what arrives.
    """
    W = check_finite_matrix("W", PRESETS[DEFAULT]["W"] if W is None else W, (2, 2))
    U = _U(U)
    fig = Figure(figsize=(6.4, 3.6), layout="constrained")
    ax = fig.subplots()
    ax.set(xlim=(-0.3, 6.3), ylim=(-0.6, 3.6), aspect="equal")
    ax.axis("off")
    c1, c2, cx, r = np.array([1.5, 1.5]), np.array([4.5, 1.5]), np.array([3.0, -0.1]), 0.55
    for c, name in ((c1, "$h_1$"), (c2, "$h_2$")):
        ax.add_patch(Circle(c, r, fc="#dbe9f6", ec="#1f77b4", lw=2))
        ax.text(*c, name, ha="center", va="center", fontsize=15)
    ax.add_patch(FancyBboxPatch((cx[0] - 0.3, cx[1] - 0.05), 0.6, 0.1, boxstyle="round,pad=0.25", fc="#fde6cc",
                                ec="#e07b00", lw=2))
    ax.text(*cx, "$x_t$", ha="center", va="center", fontsize=14)
    _arrow(ax, c1 + [r, 0.18], c2 + [-r, 0.18], f"$w_{{21}}$ = {W[1, 0]:g}", rad=-0.25, offset=(0, 0.55))
    _arrow(ax, c2 + [-r, -0.18], c1 + [r, -0.18], f"$w_{{12}}$ = {W[0, 1]:g}", rad=-0.25, offset=(0, -0.55))
    for c, w, side in ((c1, W[0, 0], -1), (c2, W[1, 1], 1)):
        a = c + [0.25 * side, r * 0.95]
        b = c + [-0.25 * side, r * 0.95]
        _arrow(ax, a, b, None, rad=2.2 * side)
        idx = "11" if side < 0 else "22"
        ax.text(c[0], c[1] + r + 0.95, f"$w_{{{idx}}}$ = {w:g}", ha="center", fontsize=10)
    _arrow(ax, cx + [-0.45, 0.1], c1 + [0.25, -r], f"$u_1$ = {U[0]:g}", colour="#e07b00", offset=(-0.35, -0.05))
    _arrow(ax, cx + [0.45, 0.1], c2 + [-0.25, -r], f"$u_2$ = {U[1]:g}", colour="#e07b00", offset=(0.35, -0.05))
    ax.text(3.0, 3.35, r"$h_t = \tanh(W h_{t-1} + U x_t)$", ha="center", fontsize=12)
    return fig


def unrolled_diagram(T=4):
    """The network unrolled over ``T`` steps: the forward pass left to right, the gradient right to left.

    Each forward arrow is one step ``h_t = φ(W h_{t−1} + U x_t)``; the backward
    arrow under it multiplies the gradient by that step's Jacobian ``J_t``,
    so that ``∂h_T/∂h_0 = J_T ⋯ J_1``.
    """
    check_int("T", T, minimum=1, maximum=8, fn="unrolled_diagram")
    fig = Figure(figsize=(1.55 * (T + 1) + 0.6, 3.0), layout="constrained")
    ax = fig.subplots()
    ax.set(xlim=(-0.7, 1.55 * T + 0.7), ylim=(-1.75, 1.45), aspect="equal")
    ax.axis("off")
    xs = 1.55 * np.arange(T + 1)
    r = 0.38
    for t, x0 in enumerate(xs):
        ax.add_patch(Circle((x0, 0), r, fc="#dbe9f6", ec="#1f77b4", lw=2))
        ax.text(x0, 0, f"$h_{t}$", ha="center", va="center", fontsize=13)
        if t:
            ax.text(x0, 1.2, f"$x_{t}$", ha="center", va="center", fontsize=12, color="#e07b00")
            _arrow(ax, (x0, 1.0), (x0, r + 0.02), colour="#e07b00")
            _arrow(ax, (xs[t - 1] + r, 0.1), (x0 - r, 0.1), colour="0.2")
            _arrow(ax, (x0 - r, -0.25), (xs[t - 1] + r, -0.25), f"$J_{t}$", colour="#d62728", rad=0.35,
                   offset=(0, -0.36))
    ax.text(xs[-1] / 2, -1.55, "forward: one step per arrow.   backward: "
            rf"$\partial h_{T} / \partial h_0 = J_{T} \cdots J_1$, "
            r"$J_t = \partial h_t / \partial h_{t-1}$", ha="center", fontsize=10, color="#d62728")
    return fig
