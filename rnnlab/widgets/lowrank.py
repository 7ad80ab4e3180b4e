"""The spectrum of ``W_rec(r, s) = (W1 W2) ⊙ M`` at initialisation, with rank and sparsity sliders.

``spectrum_figure(rank, sparsity, n, init, seed)`` draws one initial
recurrent matrix (:func:`rnnlab.models.init_recurrent`): its eigenvalues in
the complex plane beside the circles the appendix's laws predict (radius
√(r/n) for orthogonal low rank, A.6.3; √(1 − s) for sparse, A.6.1-A.6.2;
the unit circle; √(r(1 − s)/n) for both), and its singular values sorted and normalised by the
largest (A.7), beside those of the dense full-rank draw. ``spectrum_widget()``
is the live version; ``static_figure()`` its default state.
"""
import numpy as np
import torch
from matplotlib.figure import Figure

from .._validate import check_int
from ..models import init_recurrent, recurrent_matrix

__all__ = ["DEFAULT", "recurrent_sample", "spectrum_figure", "static_figure", "spectrum_widget"]

DEFAULT = dict(rank=8, sparsity=0.5, n=64, init="orthogonal", seed=0)
"""The paper's hidden size, rank 8 and sparsity 0.5: a state where every law's circle is drawn and
the eigenvalues fill the smallest one (rank n is full rank: an orthogonal matrix split at rank n is
itself)."""


def recurrent_sample(rank, sparsity, n=64, init="orthogonal", seed=0):
    """One initial ``W_rec(r, s)`` as a float64 numpy array (rank ``n`` or None: full rank)."""
    gen = torch.Generator().manual_seed(seed)
    rank = None if rank in (None, n) else rank
    W1, W2, M = init_recurrent(n, rank, sparsity, init, gen, dtype=torch.float64)
    return recurrent_matrix(W1, W2, M).numpy()


def _circle(ax, radius, **kw):
    t = np.linspace(0, 2 * np.pi, 200)
    ax.plot(radius * np.cos(t), radius * np.sin(t), **kw)


def spectrum_figure(rank=DEFAULT["rank"], sparsity=DEFAULT["sparsity"], n=DEFAULT["n"], init=DEFAULT["init"],
                    seed=DEFAULT["seed"]):
    """Eigenvalues and normalised singular values of one ``W_rec(r, s)`` (a matplotlib Figure)."""
    if not 1 <= check_int("rank", rank, fn="spectrum_figure") <= n:
        raise ValueError(f"rank must be an int in [1, n] = [1, {n}] (n for full rank), got {rank!r}")
    W = recurrent_sample(rank, sparsity, n, init, seed)
    dense = recurrent_sample(n, 0.0, n, init, seed)
    lam = np.linalg.eigvals(W)
    sv = np.linalg.svd(W, compute_uv=False)
    sv_dense = np.linalg.svd(dense, compute_uv=False)
    rho, norm = np.abs(lam).max(), sv[0]

    fig = Figure(figsize=(9.5, 4.2), layout="constrained")
    ax, bx = fig.subplots(1, 2)
    _circle(ax, 1.0, color="0.75", lw=1, label="unit circle")
    if init == "orthogonal" and rank < n:
        _circle(ax, np.sqrt(rank / n), color="C1", ls="--", lw=1.2, label=r"$\sqrt{r/n}$ (truncated Haar)")
    if sparsity > 0:
        _circle(ax, np.sqrt(1 - sparsity), color="C2", ls=":", lw=1.5, label=r"$\sqrt{1-s}$ (RMS rule, full rank)")
    if init == "orthogonal" and rank < n and sparsity > 0:
        _circle(ax, np.sqrt(rank * (1 - sparsity) / n), color="C3", ls="-.", lw=1.2,
                label=r"$\sqrt{r(1-s)/n}$ (both)")
    ax.scatter(lam.real, lam.imag, s=9, color="C0", zorder=3, label="eigenvalues")
    lim = max(1.1, 1.05 * rho)
    ax.set(xlim=(-lim, lim), ylim=(-lim, lim), aspect="equal", xlabel="Re λ", ylabel="Im λ",
           title=f"eigenvalues: ρ(W) = {rho:.3f}")
    ax.legend(loc="upper right", fontsize=7, framealpha=0.9)

    k = np.arange(1, n + 1)
    bx.plot(k, sv_dense / sv_dense[0], color="0.6", lw=1.2, label="dense, full rank")
    bx.plot(k, sv / sv[0], color="C0", lw=1.8, label=f"rank {'full' if rank == n else rank}, s = {sparsity:g}")
    bx.set(xlabel="index (sorted)", ylabel="σ_i / σ_1", ylim=(-0.02, 1.05),
           title=f"singular values: ‖W‖ = {norm:.3f}")
    bx.legend(fontsize=8)
    fig.suptitle(f"W_rec(r, s) at initialisation ({init}, n = {n}, seed {seed})", fontsize=11)
    return fig


def static_figure():
    """The widget's default state (:data:`DEFAULT`): rank 8, sparsity 0.5, n = 64, orthogonal."""
    return spectrum_figure()


def spectrum_widget():
    """Live :func:`spectrum_figure`: rank and sparsity sliders, the initialisation, the size."""
    import ipywidgets as w
    from IPython.display import display

    rank = w.IntSlider(value=DEFAULT["rank"], min=1, max=DEFAULT["n"], description="rank",
                       continuous_update=False)
    sparsity = w.FloatSlider(value=DEFAULT["sparsity"], min=0.0, max=0.95, step=0.05, description="sparsity",
                             continuous_update=False)
    init = w.Dropdown(options=["orthogonal", "glorot"], value=DEFAULT["init"], description="init")
    size = w.Dropdown(options=[64, 128, 256], value=DEFAULT["n"], description="n")
    out = w.Output()
    state = {"resizing": False}

    def resize(*_):
        full = rank.value == rank.max
        state["resizing"] = True
        rank.max = size.value
        rank.value = size.value if full else min(rank.value, size.value)
        state["resizing"] = False
        draw()

    def draw(*_):
        if state["resizing"]:
            return
        out.clear_output(wait=True)
        box.figure = spectrum_figure(rank.value, sparsity.value, size.value, init.value)
        with out:
            display(box.figure)

    box = w.VBox([w.HBox([rank, sparsity]), w.HBox([init, size]), out])
    box.rank, box.sparsity, box.init, box.size = rank, sparsity, init, size
    for c in (rank, sparsity, init):
        c.observe(draw, names="value")
    size.observe(resize, names="value")
    draw()
    return box
