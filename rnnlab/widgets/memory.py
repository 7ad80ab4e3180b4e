"""Drive a neural stack, queue or deque by hand, and watch its gradients flow back.

Two widgets, each with a static figure of its default state:

- ``memory_widget()``: a memory driven by a short *program* of push and pop
  strengths, one symbol pushed per step (one-hot values, so a read is
  exactly its weights over the symbols). Sliders change the controls of one
  step; the figure shows the strengths of every row after every step and
  what each read returns. ``memory_figure(kind, program, step, controls)``
  draws any state.
- ``backward_widget()``: the backward dynamics at a controller's
  initialisation (appendix B of Grefenstette et al. 2015). Every step pushes
  with ``d = σ(b_d)`` and pops with ``u = σ(b_u)``; the figure shows the
  strengths and how strongly each read ``r_t'`` depends on each push
  decision ``d_t`` (the norm of ∂r_t'/∂d_t, by autograd through the
  package's own op). With ``u > d`` (or ``u = d``, a tie that the
  left-argument rule resolves the same way) a value is gone one step after it was
  pushed and push decisions get gradient from the next read only; a
  negative pop bias keeps values on the memory and lets later reads reach
  them. ``backward_figure(b_u, b_d, kind, T)`` draws any state.

Every number is computed by :func:`rnnlab.neural_memory` (the reference
backend, ``backend="torch"``): the widgets draw what the code does.
"""
import numpy as np
import torch
from matplotlib.figure import Figure

from .._validate import check_int
from ..kernels import neural_memory

__all__ = ["KINDS", "PROGRAMS", "SYMBOLS", "program_controls", "run_program", "memory_figure",
           "static_figure", "memory_widget", "push_jacobian", "backward_figure", "static_backward_figure",
           "backward_widget"]

KINDS = ("stack", "queue", "deque")
SYMBOLS = "ABCDEF"
"""One symbol pushed per step (on the deque: the same symbol at both ends, lower case at the bottom)."""

PROGRAMS = {
    "push 3, pop 3": dict(d=[1, 1, 1, 0, 0, 0], u=[0, 0, 0, 1, 1, 1]),
    "push while popping": dict(d=[1, 1, 1, 1, 1, 1], u=[0, 1, 1, 0.5, 0.5, 0.5]),
    "fractions": dict(d=[0.8, 0.6, 0.9, 0.1, 0.3, 0.2], u=[0, 0.1, 0.3, 0.7, 0.5, 0.4]),
}
"""Programs of push strengths ``d`` and pop strengths ``u``, one per step (six steps). On the
deque the same program drives the top and the bottom gets no pushes or pops unless the sliders
give it some."""

DEFAULT = dict(kind="stack", program="push 3, pop 3", step=6)


def program_controls(kind, program):
    """``(d, u)`` of ``program`` for ``kind``: float64 arrays ``(T,)``, or ``(T, 2)`` for the deque
    (column 0 the top, driven by the program; column 1 the bottom, zero)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if program not in PROGRAMS:
        raise ValueError(f"program must be one of {sorted(PROGRAMS)}, got {program!r}")
    d = np.array(PROGRAMS[program]["d"], dtype=float)
    u = np.array(PROGRAMS[program]["u"], dtype=float)
    if kind == "deque":
        d, u = np.stack([d, np.zeros_like(d)], 1), np.stack([u, np.zeros_like(u)], 1)
    return d, u


def run_program(kind, d, u):
    """Run the memory on one-hot values (symbol t at step t) with controls ``d, u``.

    Returns ``(reads, strengths)`` as NumPy arrays: reads ``(T, m)`` (deque
    ``(T, 2, m)``: top, bottom) whose entry ``k`` is the weight of symbol k
    in the read, strengths ``(T, W)`` in :func:`rnnlab.neural_memory`'s layout.
    """
    d = torch.as_tensor(np.asarray(d, dtype=float))
    u = torch.as_tensor(np.asarray(u, dtype=float))
    T = d.shape[0]
    v = torch.eye(T, dtype=torch.float64)
    if kind == "deque":
        v = torch.stack([v, v], 1)
    r, s = neural_memory(kind, v[None], d[None], u[None], backend="torch")
    return r[0].numpy(), s[0].numpy()


def _row_labels(kind, T):
    """What each column of the strengths holds: the symbol pushed (deque: bottom pushes in lower case),
    or with more steps than symbols the step that pushed it (deque: b3 = bottom push of step 3)."""
    if T > len(SYMBOLS):
        if kind != "deque":
            return [str(i + 1) for i in range(T)]
        return [f"b{T - c}" for c in range(T)] + [f"t{c - T + 1}" for c in range(T, 2 * T)]
    if kind != "deque":
        return [SYMBOLS[i] for i in range(T)]
    # column T - 1 - t: bottom push of step t; column T + t: top push of step t
    return [SYMBOLS[T - 1 - c].lower() for c in range(T)] + [SYMBOLS[c - T] for c in range(T, 2 * T)]


def _heat(ax, data, title, xlabels, ylabels, highlight=None, fmt="{:.2f}", cmap="Blues", vmax=1.0):
    ax.imshow(data, cmap=cmap, vmin=0, vmax=vmax, aspect="auto")
    for (i, j), x in np.ndenumerate(data):
        if abs(x) > 5e-3:
            ax.text(j, i, fmt.format(x), ha="center", va="center", fontsize=7,
                    color="white" if x > 0.6 * vmax else "black")
    ax.set_xticks(range(len(xlabels)), xlabels, fontsize=8)
    ax.set_yticks(range(len(ylabels)), ylabels, fontsize=8)
    ax.set_title(title, fontsize=9)
    if highlight is not None:
        ax.axhspan(highlight - 0.5, highlight + 0.5, fill=False, edgecolor="#e07b00", lw=2)


def memory_figure(kind="stack", program="push 3, pop 3", step=6, controls=None, *, figsize=None):
    """Draw the memory ``kind`` running ``program`` up to step ``step`` (1-based).

    ``controls``: optional ``(d, u)`` replacing the program's (as
    :func:`program_controls` returns them). Left: the strengths of every row
    (columns: the symbol it holds) after steps 1..step, with the current step
    outlined; right: the read after each step, as weights over the symbols.
    """
    d, u = program_controls(kind, program) if controls is None else controls
    T = len(d)
    if not 1 <= step <= T:
        raise ValueError(f"step must be between 1 and {T}, got {step!r}")
    r, s = run_program(kind, d, u)
    steps = [f"step {t + 1}" for t in range(step)]
    reads = [r[:step]] if kind != "deque" else [r[:step, 0], r[:step, 1]]
    names = ["read"] if kind != "deque" else ["read from the top", "read from the bottom"]
    fig = Figure(figsize=figsize or (11, 3.4), layout="constrained")
    axes = fig.subplots(1, 1 + len(reads), width_ratios=[2] + [1] * len(reads))
    _heat(axes[0], s[:step], f"{kind}: strengths after each step (pop, push, read)", _row_labels(kind, T),
          steps, highlight=step - 1)
    for ax, rr, name in zip(axes[1:], reads, names):
        _heat(ax, rr, f"{name}: weight of each symbol", list(SYMBOLS[:T]), steps, highlight=step - 1,
              cmap="Oranges")
    dd, uu = np.asarray(d), np.asarray(u)
    if kind == "deque":
        text = (f"step {step}: top d = {dd[step - 1, 0]:.2f}, u = {uu[step - 1, 0]:.2f}; "
                f"bottom d = {dd[step - 1, 1]:.2f}, u = {uu[step - 1, 1]:.2f}")
    else:
        text = f"step {step}: push d = {dd[step - 1]:.2f}, pop u = {uu[step - 1]:.2f}"
    fig.suptitle(text, fontsize=10)
    return fig


def static_figure():
    """The memory widget's default state: a stack that pushes A, B, C and pops them."""
    return memory_figure(**DEFAULT)


def memory_widget():
    """Live version of :func:`memory_figure`: kind, program, step, and the controls of the current step."""
    import ipywidgets as w
    from IPython.display import display

    kind = w.Dropdown(options=list(KINDS), value=DEFAULT["kind"], description="memory")
    program = w.Dropdown(options=list(PROGRAMS), value=DEFAULT["program"], description="program")
    step = w.IntSlider(value=DEFAULT["step"], min=1, max=6, description="step")
    sliders = {name: w.FloatSlider(min=0, max=1, step=0.05, description=name, continuous_update=False)
               for name in ("d top", "u top", "d bottom", "u bottom")}
    out = w.Output()
    state = {}

    def load_program(*_):
        state["d"], state["u"] = (x.copy() for x in program_controls(kind.value, program.value))
        show_step()

    def show_step(*_):
        t = step.value - 1
        deque = kind.value == "deque"
        state["updating"] = True
        for name, s in sliders.items():
            end = 1 if "bottom" in name else 0
            arr = state["d"] if name.startswith("d") else state["u"]
            s.disabled = "bottom" in name and not deque
            s.value = float(arr[t, end] if deque else (arr[t] if end == 0 else 0.0))
        state["updating"] = False
        draw()

    def edit(change):
        if state.get("updating"):
            return
        t, deque = step.value - 1, kind.value == "deque"
        for name, s in sliders.items():
            arr = state["d"] if name.startswith("d") else state["u"]
            if deque:
                arr[t, 1 if "bottom" in name else 0] = s.value
            elif "bottom" not in name:
                arr[t] = s.value
        draw()

    def draw():
        out.clear_output(wait=True)
        box.figure = memory_figure(kind.value, program.value, step.value, (state["d"], state["u"]))
        with out:
            display(box.figure)

    box = w.VBox([w.HBox([kind, program, step]), w.HBox(list(sliders.values())), out])
    box.kind, box.program, box.step, box.sliders = kind, program, step, sliders
    kind.observe(load_program, names="value")
    program.observe(load_program, names="value")
    step.observe(show_step, names="value")
    for s in sliders.values():
        s.observe(edit, names="value")
    load_program()
    return box


# ---------------------------------------------------------------- backward dynamics

BACKWARD_DEFAULT = dict(b_u=0.5, b_d=0.0, kind="stack", T=10)


def push_jacobian(b_u=0.0, b_d=0.0, kind="stack", T=10):
    """Constant controls ``d = σ(b_d)``, ``u = σ(b_u)`` on one-hot values over ``T`` steps.

    Returns ``(J, s)``: ``J[t', t] = ||∂r_t'/∂d_t||`` (``(T, T)``, zero above
    the diagonal: a read cannot depend on a later push; on the deque the top
    read and the top push) by autograd through :func:`rnnlab.neural_memory`,
    and the strengths ``s (T, W)``.
    """
    if kind not in ("stack", "queue", "deque"):
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    check_int("T", T, minimum=2, fn="push_jacobian")
    sig = torch.sigmoid(torch.tensor([b_d, b_u], dtype=torch.float64))
    v = torch.eye(T, dtype=torch.float64)
    shape = (T,) if kind != "deque" else (T, 2)
    u = torch.full(shape, float(sig[1]), dtype=torch.float64)
    if kind == "deque":
        v = torch.stack([v, v], 1)

    def reads(d_top):
        d = d_top if kind != "deque" else torch.stack([d_top, torch.zeros_like(d_top)], 1)
        r, _ = neural_memory(kind, v[None], d[None], u[None], backend="torch")
        return r[0] if kind != "deque" else r[0, :, 0]

    d0 = torch.full((T,), float(sig[0]), dtype=torch.float64)
    J = torch.autograd.functional.jacobian(reads, d0)           # (T, m, T): ∂r[t', k] / ∂d[t]
    d_full = d0 if kind != "deque" else torch.stack([d0, torch.zeros_like(d0)], 1)
    _, s = neural_memory(kind, v[None], d_full[None], u[None], backend="torch")
    return J.norm(dim=1).numpy(), s[0].numpy()


def backward_figure(b_u=0.0, b_d=0.0, kind="stack", T=10, *, figsize=None):
    """Strengths and ``||∂r_t'/∂d_t||`` under constant controls ``σ(b_d)``, ``σ(b_u)`` (see :func:`push_jacobian`)."""
    J, s = push_jacobian(b_u, b_d, kind, T)
    d, u = 1 / (1 + np.exp(-b_d)), 1 / (1 + np.exp(-b_u))
    fig = Figure(figsize=figsize or (11, 3.8), layout="constrained")
    ax0, ax1, ax2 = fig.subplots(1, 3, width_ratios=[1.4, 1.2, 1])
    steps = [str(t + 1) for t in range(T)]
    _heat(ax0, s, "strengths after each step", _row_labels(kind, T), steps, fmt="{:.1f}")
    ax0.set(xlabel="row (the step that pushed it)" if kind != "deque" else "row", ylabel="step")
    _heat(ax1, J, "‖∂r_t′ / ∂d_t‖: read t′ (rows) on push t (columns)", steps, steps, fmt="{:.1f}",
          cmap="Greens", vmax=max(1e-9, float(J.max())))
    ax1.set(xlabel="push decision at step t", ylabel="read at step t′")
    lags = np.arange(T)
    reach = [np.mean([J[t + k, t] for t in range(T - k)]) for k in lags]
    ax2.bar(lags, reach, color="#2e7d32")
    ax2.set(xlabel="lag t′ − t", ylabel="mean ‖∂r_t′/∂d_t‖", title="how far back push decisions get gradient")
    ax2.title.set_fontsize(9)
    fig.suptitle(f"{kind} at initialisation: push d = σ({b_d:g}) = {d:.2f}, pop u = σ({b_u:g}) = {u:.2f}"
                 + ("  (u ≥ d: every value is popped the step after its push)" if u >= d else ""), fontsize=10)
    return fig


def static_backward_figure():
    """The backward widget's default state: pop bias 0.5, push bias 0, so u = 0.62 > d = 0.5."""
    return backward_figure(**BACKWARD_DEFAULT)


def backward_widget():
    """Live version of :func:`backward_figure`: pop bias, push bias and kind."""
    import ipywidgets as w
    from IPython.display import display

    b_u = w.FloatSlider(value=BACKWARD_DEFAULT["b_u"], min=-3, max=2, step=0.25, description="pop bias b_u",
                        continuous_update=False)
    b_d = w.FloatSlider(value=BACKWARD_DEFAULT["b_d"], min=-2, max=2, step=0.25, description="push bias b_d",
                        continuous_update=False)
    kind = w.Dropdown(options=list(KINDS), value=BACKWARD_DEFAULT["kind"], description="memory")
    out = w.Output()

    def draw(*_):
        out.clear_output(wait=True)
        box.figure = backward_figure(b_u.value, b_d.value, kind.value, BACKWARD_DEFAULT["T"])
        with out:
            display(box.figure)

    box = w.VBox([w.HBox([b_u, b_d, kind]), out])
    box.b_u, box.b_d, box.kind = b_u, b_d, kind
    for c in (b_u, b_d, kind):
        c.observe(draw, names="value")
    draw()
    return box
