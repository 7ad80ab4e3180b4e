"""Widgets of the chapter "Linear dynamical systems".

Two widgets, each with a static figure of its default state (the online book
shows widgets only as snapshots, so the chapter draws the static figure
first):

- :func:`eigenvalue_widget`: place a conjugate pair of eigenvalues
  ``λ = r e^{±iθ}`` (sliders for the radius r and the angle θ) and see the
  impulse response of the two-mode LDS they define, with its envelope
  ``r^t``; the title says how much of an input survives T steps.
- :func:`ldstack_widget`: a depth slider for LDStack. Left, one state of the
  nonlinear RNN and of the depth-k stack over time; right, the error of every
  depth (the current one highlighted) against time: zero, up to rounding, for
  the first k steps. Both forms of the package: the exact stack of a real
  tanh RNN (:class:`rnnlab.models.LDStackExact`) and the fast modal stack
  (:class:`rnnlab.models.LDStack`).

All numbers come from :mod:`rnnlab.models`; this module only sets up small
systems and draws them. ``static_figure("eigenvalues")`` and
``static_figure("ldstack")`` are the default states.
"""
import functools
import math

import numpy as np
import torch
from matplotlib.figure import Figure

from .._validate import check_int

__all__ = [
    "EIGENVALUE_DEFAULT",
    "LDSTACK_DEFAULT",
    "LDSTACK_FORMS",
    "pair_lds",
    "pair_impulse_response",
    "eigenvalue_figure",
    "eigenvalue_widget",
    "ldstack_errors",
    "ldstack_figure",
    "ldstack_widget",
    "static_figure",
]

EIGENVALUE_DEFAULT = dict(radius=0.98, angle=math.pi / 8, T=200)
"""Default state of :func:`eigenvalue_widget`: λ = 0.98 e^{±iπ/8}, 200 steps."""

LDSTACK_FORMS = {
    "exact": "exact form: real tanh RNN, general A (LDStackExact)",
    "modal": "modal form: squashed complex RNN (LDStack)",
}
"""The two forms :func:`ldstack_widget` offers, with the names it shows."""

LDSTACK_DEFAULT = dict(depth=4, form="exact")
"""Default state of :func:`ldstack_widget`."""

LDSTACK_STEPS = 24
"""Number of time steps of the LDStack demonstration (and the largest depth offered)."""

_FLOOR = 1e-17  # errors below this (exact zeros) are drawn at this height on log axes


# ---------------------------------------------------------------- eigenvalues and memory

def _check_pair(radius, angle):
    radius, angle = float(radius), float(angle)
    if not (radius > 0 and math.isfinite(radius)):
        raise ValueError(f"radius must be a positive number, got {radius!r}")
    if not 0 < angle < math.pi:
        raise ValueError(f"angle must lie strictly between 0 and π (a genuine conjugate pair), got {angle!r}")
    return radius, angle


def pair_lds(radius, angle):
    """A float64 :class:`rnnlab.models.LDS` of one conjugate pair ``λ = r e^{±iθ}``.

    One input, one output, companion input weights B' (from
    :func:`rnnlab.models.lds.modal_input_weights`) and the read-out C' = (1, 1):
    the output is the first companion state ``z_t`` of the real system
    ``z_t = 2 r cos θ z_{t-1} − r² z_{t-2} + x_t``. No D, no bias.
    """
    from ..models import LDS

    radius, angle = _check_pair(radius, angle)
    m = LDS(1, 2, 1, eigenvalues="free", conjugate_pairs=True, readout="complex", use_D=False, bias=False).double()
    with torch.no_grad():
        m.log_r.fill_(math.log(radius))
        m.theta.fill_(angle)
        m.C_re.fill_(1.0)
        m.C_im.zero_()
    return m


def pair_impulse_response(radius, angle, T):
    """Impulse response ``K_0 .. K_{T-1}`` of :func:`pair_lds` (NumPy, from ``LDS.impulse_response``).

    ``K_τ = Re(C' diag(λ^τ) B') = r^τ sin((τ+1)θ) / sin θ``.
    """
    T = check_int("T", T, minimum=1, fn="pair_impulse_response")
    with torch.no_grad():
        return pair_lds(radius, angle).impulse_response(T)[0, 0].numpy()


def eigenvalue_figure(radius=EIGENVALUE_DEFAULT["radius"], angle=EIGENVALUE_DEFAULT["angle"],
                      T=EIGENVALUE_DEFAULT["T"]):
    """Left: the pair ``r e^{±iθ}`` and the unit circle. Right: the impulse response and ``±r^t/sin θ``."""
    radius, angle = _check_pair(radius, angle)
    K = pair_impulse_response(radius, angle, T)
    t = np.arange(T)
    fig = Figure(figsize=(10, 3.8), layout="constrained")
    ax, resp = fig.subplots(1, 2, width_ratios=[1, 2.1])

    circle = np.linspace(0, 2 * np.pi, 400)
    ax.plot(np.cos(circle), np.sin(circle), color="#999999", lw=1)
    lim = max(1.15, radius * 1.1)
    ax.axhline(0, color="#cccccc", lw=0.8)
    ax.axvline(0, color="#cccccc", lw=0.8)
    colour = "C3" if radius > 1 else ("C2" if math.isclose(radius, 1.0, abs_tol=1e-12) else "C0")
    for sign in (1, -1):
        z = radius * np.exp(sign * 1j * angle)
        ax.plot([0, z.real], [0, z.imag], color=colour, lw=1, alpha=0.6)
        ax.plot(z.real, z.imag, "o", color=colour, ms=8)
    ax.annotate(r"$\lambda$", (radius * np.cos(angle), radius * np.sin(angle)), xytext=(6, 4),
                textcoords="offset points")
    ax.annotate(r"$\bar\lambda$", (radius * np.cos(angle), -radius * np.sin(angle)), xytext=(6, -12),
                textcoords="offset points")
    ax.set(xlim=(-lim, lim), ylim=(-lim, lim), aspect="equal", xlabel="Re", ylabel="Im",
           title=f"λ = {radius:.3g} e^(±i {angle:.3g})")

    envelope = radius ** t.astype(float) / math.sin(angle)
    resp.plot(t, K, color=colour, lw=1, label=r"impulse response $K_t$")
    resp.plot(t, envelope, "k--", lw=0.8, label=r"$\pm r^t / \sin\theta$")
    resp.plot(t, -envelope, "k--", lw=0.8)
    top = max(1.05 / math.sin(angle), 1.05 * np.abs(K).max())
    resp.set(xlabel="steps t since the impulse", ylabel="output", xlim=(0, T - 1),
             ylim=(-min(top, 50 / math.sin(angle)), min(top, 50 / math.sin(angle))))
    kept = radius ** T
    verdict = ("kept whole" if math.isclose(radius, 1.0, abs_tol=1e-12)
               else ("amplified" if radius > 1 else "decayed"))
    resp.set_title(f"after T = {T} steps, r^T = {kept:.3g}: the input is {verdict}", fontsize=10)
    resp.legend(loc="upper right", fontsize=8)
    fig.radius, fig.angle, fig.T, fig.kept = radius, angle, T, kept
    return fig


def eigenvalue_widget(radius=EIGENVALUE_DEFAULT["radius"], angle=EIGENVALUE_DEFAULT["angle"],
                      T=EIGENVALUE_DEFAULT["T"]):
    """An ipywidget placing a conjugate pair of eigenvalues and showing the impulse response.

    Controls: the radius r (0.5 to 1.02), the angle θ (0.05 to π − 0.05),
    the number of steps T, and a "unit modulus" checkbox that pins r = 1 (the
    long-memory parameterisation ``ln λ = iθ``). Returns the widget (a
    ``VBox``) with its controls as attributes ``radius``, ``angle``, ``steps``,
    ``unit`` and ``output``.
    """
    import ipywidgets as widgets
    from IPython.display import display

    _check_pair(radius, angle)
    r_slider = widgets.FloatSlider(min=0.5, max=1.02, step=0.001, value=radius, readout_format=".3f",
                                   description="radius r", continuous_update=False)
    a_slider = widgets.FloatSlider(min=0.05, max=round(math.pi - 0.05, 3), step=0.01, value=angle,
                                   readout_format=".2f", description="angle θ", continuous_update=False)
    steps = widgets.IntSlider(min=20, max=2000, step=10, value=T, description="steps T", continuous_update=False)
    unit = widgets.Checkbox(value=math.isclose(radius, 1.0), description="unit modulus (r = 1)")
    output = widgets.Output()

    def redraw(*_):
        fig = eigenvalue_figure(1.0 if unit.value else r_slider.value, a_slider.value, steps.value)
        with output:
            output.clear_output(wait=True)
            display(fig)

    def pin(*_):
        r_slider.disabled = unit.value
        redraw()

    for w in (r_slider, a_slider, steps):
        w.observe(redraw, names="value")
    unit.observe(pin, names="value")
    box = widgets.VBox([widgets.HBox([r_slider, unit]), widgets.HBox([a_slider, steps]), output])
    box.radius, box.angle, box.steps, box.unit, box.output = r_slider, a_slider, steps, unit, output
    pin()
    return box


# ---------------------------------------------------------------- LDStack

@functools.lru_cache(maxsize=4)
def _ldstack_run(form, T, seed):
    from ..models import LDStack, LDStackExact
    from ..models.ldstack import modal_rnn_reference, rnn_reference

    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(1, T, 1, dtype=torch.float64, generator=torch.Generator().manual_seed(seed + 1))
    with torch.no_grad():
        if form == "exact":
            m = LDStackExact(1, 8, depth=T, nonlinearity="tanh", generator=gen).double()
            reference = rnn_reference(x, m.A, m.B, "tanh")
            layers = m.layer_states(x)
            to_real = lambda s: s  # noqa: E731
        else:
            m = LDStack(1, 8, 1, depth=T, eigenvalues="free", init="uniform", generator=gen).double()
            x = 2 * x  # a drive of order 2-4 in the modes: the squashing bites
            drive = torch.view_as_complex((x @ m.input_matrix()).view(1, T, m.hidden_size, 2))
            reference = modal_rnn_reference(m.eigenvalues(), drive)
            layers = m.layer_states(x)
            to_real = lambda s: s.real  # noqa: E731
        errors = np.stack([(s - reference).abs().amax(dim=(0, 2)).numpy() for s in layers])
        return {"form": form, "T": T, "seed": seed, "errors": errors,
                "reference": to_real(reference)[0, :, 0].numpy(),
                "layers": np.stack([to_real(s)[0, :, 0].numpy() for s in layers])}


def ldstack_errors(form="exact", T=LDSTACK_STEPS, seed=0):
    """The LDStack demonstration in numbers (float64, computed by :mod:`rnnlab.models`).

    ``form="exact"``: :class:`~rnnlab.models.LDStackExact` with 8 units, one
    input, depth T, approximating the tanh RNN ``s_t = tanh(A s_{t-1}) + B x_t``
    (:func:`~rnnlab.models.ldstack.rnn_reference`). ``form="modal"``:
    :class:`~rnnlab.models.LDStack` with 8 modes of free eigenvalues
    (initially on the unit circle), approximating the modal RNN
    ``s'_t = σ(λ s'_{t-1}) + B' u_t`` (:func:`~rnnlab.models.ldstack.modal_rnn_reference`).

    Returns a dict: ``errors`` ``(T, T)`` with ``errors[k-1, t-1]`` the
    largest |difference| over the state's entries between layer k and the
    RNN at step t; ``reference`` ``(T,)`` and ``layers`` ``(T, T)``: the first
    state entry (its real part in the modal form) of the RNN and of each
    layer, for plotting.
    """
    if form not in LDSTACK_FORMS:
        raise ValueError(f"form must be one of {sorted(LDSTACK_FORMS)}, got {form!r}")
    check_int("T", T, minimum=2, fn="ldstack_errors")
    return _ldstack_run(form, T, int(seed))


def ldstack_figure(depth=LDSTACK_DEFAULT["depth"], form=LDSTACK_DEFAULT["form"], T=LDSTACK_STEPS, seed=0):
    """Left: the RNN and layer ``depth`` over time. Right: error against time for every depth."""
    run = ldstack_errors(form, T, seed)
    depth = check_int("depth", depth, minimum=1, maximum=T, fn="ldstack_figure")
    t = np.arange(1, T + 1)
    fig = Figure(figsize=(11, 3.9), layout="constrained")
    traj, err = fig.subplots(1, 2)

    traj.axvspan(0.5, depth + 0.5, color="C2", alpha=0.12, lw=0)
    target = "modal RNN" if form == "modal" else "RNN"
    traj.plot(t, run["reference"], "k-", lw=2, label=f"nonlinear {target}")
    traj.plot(t, run["layers"][0], ":", color="#888888", lw=1.2, label="layer 1 (a plain LDS)")
    traj.plot(t, run["layers"][depth - 1], "o--", color="C0", ms=3.5, lw=1.2, label=f"layer {depth}")
    lo, hi = run["reference"].min(), run["reference"].max()
    pad = 0.6 * (hi - lo + 1e-9)
    traj.set(xlabel="step t", ylabel="state entry 1" + (" (real part)" if form == "modal" else ""),
             xlim=(0.5, T + 0.5), ylim=(lo - pad, hi + pad))
    traj.set_title(f"{LDSTACK_FORMS[form].split(':')[0]}: depth {depth} equals the {target} on steps 1..{depth}",
                   fontsize=10)
    traj.legend(fontsize=8, loc="lower left")

    errors = np.maximum(run["errors"], _FLOOR)
    for k in range(1, T + 1):
        if k != depth:
            err.semilogy(t, errors[k - 1], color="#bbbbbb", lw=0.7)
    err.semilogy(t, errors[depth - 1], "o-", color="C0", ms=3.5, lw=1.5, label=f"depth {depth}")
    err.axvline(depth + 0.5, color="C2", lw=1, ls="--")
    err.axhline(1e-12, color="C3", lw=0.8, ls=":", label="1e-12 (rounding level below)")
    exact_steps = int(np.sum(np.cumprod(run["errors"][depth - 1] < 1e-12)))
    err.set(xlabel="step t", ylabel="max |layer − RNN| over the state", xlim=(0.5, T + 0.5),
            ylim=(_FLOOR / 2, max(10.0, errors.max() * 2)))
    err.set_title(f"exact (< 1e-12) for the first {exact_steps} steps; grey: the other depths", fontsize=10)
    err.legend(fontsize=8, loc="lower right")
    fig.depth, fig.form, fig.exact_steps = depth, form, exact_steps
    return fig


def ldstack_widget(depth=LDSTACK_DEFAULT["depth"], form=LDSTACK_DEFAULT["form"]):
    """An ipywidget with a depth slider (1..24) and a choice of form (exact or modal).

    Returns the widget (a ``VBox``) with its controls as attributes ``depth``,
    ``form`` and ``output``.
    """
    import ipywidgets as widgets
    from IPython.display import display

    if form not in LDSTACK_FORMS:
        raise ValueError(f"form must be one of {sorted(LDSTACK_FORMS)}, got {form!r}")
    chooser = widgets.ToggleButtons(options=[(label.split(":")[0], key) for key, label in LDSTACK_FORMS.items()],
                                    value=form, description="form")
    slider = widgets.IntSlider(min=1, max=LDSTACK_STEPS, value=depth, description="depth k",
                               continuous_update=False)
    output = widgets.Output()

    def redraw(*_):
        fig = ldstack_figure(slider.value, chooser.value)
        with output:
            output.clear_output(wait=True)
            display(fig)

    chooser.observe(redraw, names="value")
    slider.observe(redraw, names="value")
    box = widgets.VBox([chooser, slider, output])
    box.depth, box.form, box.output = slider, chooser, output
    redraw()
    return box


# ---------------------------------------------------------------- default states

def static_figure(widget="eigenvalues"):
    """The figure a widget shows in its default state: ``"eigenvalues"`` or ``"ldstack"``."""
    if widget == "eigenvalues":
        return eigenvalue_figure(**EIGENVALUE_DEFAULT)
    if widget == "ldstack":
        return ldstack_figure(**LDSTACK_DEFAULT)
    raise ValueError(f"widget must be 'eigenvalues' or 'ldstack', got {widget!r}")
