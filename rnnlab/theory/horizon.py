"""Recurrent memory horizon: norms of products of recurrent Jacobians (Tumma et al. 2024, A.5.1, A.11.5).

With ``J_t = ∂s_t/∂s_{t−1}`` the recurrent Jacobian at step t (``s = h``, or
``(h, c)`` for the LSTM), the appendix takes the list

    [J_T, J_T J_{T−1}, …, J_T J_{T−1} … J_1]

and plots the norm of each product "in log space", "translated to begin at
0" (A.11.5; Figure 19b uses the Frobenius norm). Entry k is
``‖∂s_T/∂s_{T−k}‖``: how much the state k steps back still moves the last
state. The per-step slope of the curve is the memory's decay rate: the
horizon is roughly ``1 / |slope|`` steps.

For the RNN, A.5.1 (after Pascanu et al. 2013) argues that
``J_t = D(1 − h_t²) W`` and so the slope is about
``log ρ(W) + ⟨log tanh'⟩`` when ``W`` is diagonalisable and the tanh' factors
vary little. :func:`horizon_vs_radius` sets the measured slope beside
``log ρ(W_rec)`` for all four cells across ranks and sparsities, with a
reference per cell (the RNN's Pascanu estimate, the LSTM's ``⟨log f⟩``, the
GRU's ``⟨log z⟩``, and for every cell ``log ρ`` of the time-averaged
Jacobian).

Numerics: float64 throughout (a float32 cell is copied to float64), and the
running product is renormalised at every step with its log scale
accumulated, so thousands of steps neither underflow nor overflow.
"""
import copy
import math
from dataclasses import dataclass

import torch

from ..models.cells import CELLS
from .jacobians import model_kind as _kind, recurrent_jacobian
from .spectra import spectral_radius

NORMS = ("fro", "spectral")


# ---------------------------------------------------------------------------
# Products of Jacobians.
# ---------------------------------------------------------------------------

def _matrix_norm(P, norm):
    return torch.linalg.matrix_norm(P, ord="fro" if norm == "fro" else 2)


def _check_norm(norm):
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")


def _product_log_norms(jacobians, norm):
    """``log‖J_T‖, log‖J_T J_{T−1}‖, …`` from Jacobians ``(B, S, S)`` given latest first: ``(B, T)``.

    The running product is kept divided by its norm; the log of the divisor
    is accumulated. A product that becomes exactly zero stays at ``−inf``.
    """
    out, P, scale = [], None, None
    for J in jacobians:
        P = J.clone() if P is None else P @ J
        nrm = _matrix_norm(P, norm)
        scale = (torch.zeros_like(nrm) if scale is None else scale) + torch.log(nrm)
        out.append(scale.clone())
        P = P / torch.where(nrm > 0, nrm, torch.ones_like(nrm))[:, None, None]
    return torch.stack(out, 1)


def cumulative_log_norms(jacobians, *, norm="fro"):
    """Log-norms of the appendix's list ``[J_T, J_T J_{T−1}, …, J_T … J_1]`` (A.5.1), unshifted.

    Parameters
    ----------
    jacobians : tensor ``(T, S, S)`` or ``(B, T, S, S)``
        ``J_1, …, J_T`` in time order (``J_t = ∂s_t/∂s_{t−1}``).
    norm : ``"fro"`` (Frobenius, as the appendix's Figure 19b) or ``"spectral"``

    Returns
    -------
    tensor ``(T,)`` or ``(B, T)``, float64
        Entry ``k − 1`` is ``log‖J_T J_{T−1} … J_{T−k+1}‖``.
    """
    _check_norm(norm)
    if not isinstance(jacobians, torch.Tensor):
        raise TypeError(f"jacobians must be a torch.Tensor (T, S, S) or (B, T, S, S), got {type(jacobians).__name__}")
    if jacobians.dim() not in (3, 4) or jacobians.shape[-1] != jacobians.shape[-2] or jacobians.shape[-3] == 0:
        raise ValueError(f"jacobians must have shape (T, S, S) or (B, T, S, S) with T >= 1, got "
                         f"{tuple(jacobians.shape)}")
    single = jacobians.dim() == 3
    J = jacobians.detach().to(torch.float64)
    J = J[None] if single else J
    out = _product_log_norms((J[:, t] for t in range(J.shape[1] - 1, -1, -1)), norm)
    return out[0] if single else out


# ---------------------------------------------------------------------------
# The horizon of a cell.
# ---------------------------------------------------------------------------

def default_drive(model, T=100, batch=8, *, scale=1.0, seed=0):
    """The default input: i.i.d. Gaussian ``x_t ~ N(0, scale² I)``, ``(batch, T, input_size)``, float64, seeded.

    With the cells' Glorot-uniform input weights, ``scale = 1`` gives each
    unit's input drive a variance of ``2 I / (I + G H)`` (1 for an RNN with
    ``input_size = hidden_size``); ``scale → 0`` leaves the cell on its
    autonomous dynamics near ``h = 0``.
    """
    gen = torch.Generator().manual_seed(seed)
    return scale * torch.randn(batch, T, model.input_size, generator=gen, dtype=torch.float64)


def _float64(model):
    if model.weight_ih.dtype == torch.float64:
        return model
    return copy.deepcopy(model).double()


def _resolve_full_state(kind, full_state):
    if full_state is None:
        return kind == "lstm"
    if not isinstance(full_state, bool):
        raise TypeError(f"full_state must be a bool or None, got {type(full_state).__name__}")
    if full_state and kind != "lstm":
        raise ValueError(f"full_state=True is for the LSTM, whose state is (h, c); kind={kind!r} has state h")
    return full_state


def run_states(model, x, state=None):
    """The states before every step: a list of ``T`` states ``s_{t−1}`` (``h`` or ``(h, c)``) and the last one."""
    states = []
    with torch.no_grad():
        for t in range(x.shape[1]):
            states.append(state)
            _, state = model.step(x[:, t], state)
    return states, state


@dataclass
class MemoryHorizon:
    """The products' log-norms of one cell on one input batch (A.5.1, A.11.5).

    Attributes
    ----------
    steps : ``(T,)`` long, ``k = 1 … T`` (number of Jacobians in the product)
    log_norms : ``(B, T)``, ``log‖J_T … J_{T−k+1}‖`` per sequence, unshifted
    curves : ``(B, T)``, ``log_norms`` shifted to start at 0 (A.11.5)
    mean : ``(T,)``, the batch mean of ``curves``
    mean_jacobian : ``(S, S)``, the average of ``J_t`` over the batch and time
    norm, full_state : the choices the curves were computed with
    """

    steps: torch.Tensor
    log_norms: torch.Tensor
    curves: torch.Tensor
    mean: torch.Tensor
    mean_jacobian: torch.Tensor
    norm: str
    full_state: bool

    def slope(self, window=None):
        """Per-step slope of :attr:`mean` over ``window`` (see :func:`horizon_slope`)."""
        return horizon_slope(self.mean, window)


def memory_horizon(model, x=None, state=None, *, full_state=None, norm="fro", T=100, batch=8, scale=1.0, seed=0):
    """Memory-horizon curves of a cell (A.5.1; computed as A.11.5 describes).

    Runs the cell on ``x`` from ``state``, takes ``J_t =`` :func:`recurrent_jacobian`
    at every step (at ``(x_t, s_{t−1})``), and returns the log-norms of
    ``[J_T, J_T J_{T−1}, …, J_T … J_1]`` per sequence, shifted to start at 0,
    and their batch mean.

    Parameters
    ----------
    model : ``rnnlab.models.RNN``, ``LSTM``, ``GRU`` or ``CfC``
        Evaluated in float64 (a copy if the cell is float32); any backend.
    x : ``(B, T, input_size)`` tensor or None
        None: :func:`default_drive` ``(model, T, batch, scale=scale, seed=seed)``.
    state : initial state (None: zeros)
    full_state : bool or None
        The LSTM's Jacobian: True (the default for the LSTM, None) uses the
        whole state ``(h, c)``, ``2H × 2H``, because ``c`` carries the memory
        (its ``∂c_t/∂c_{t−1} = D(f_t)`` block); False uses ``∂h_t/∂h_{t−1}`` with
        ``c`` held fixed (the appendix's ``J_t`` of A.4.2, which forgets far
        faster). Other cells have state ``h`` only: None or False.
    norm : ``"fro"`` (the appendix's Figure 19b) or ``"spectral"``

    Returns
    -------
    :class:`MemoryHorizon`
    """
    kind = _kind(model)
    full_state = _resolve_full_state(kind, full_state)
    _check_norm(norm)
    model = _float64(model)
    if x is None:
        x = default_drive(model, T, batch, scale=scale, seed=seed)
    if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[1] == 0 or x.shape[2] != model.input_size:
        got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"x must be a (B, T, input_size) tensor with T >= 1 and input_size={model.input_size}, "
                         f"got {got}")
    x = x.detach().to(device=model.weight_ih.device, dtype=torch.float64)
    states, _ = run_states(model, x, state)
    total = []

    def jacobians():
        with torch.no_grad():
            for t in range(x.shape[1] - 1, -1, -1):
                J = recurrent_jacobian(model, x[:, t], states[t], full_state=full_state)
                total.append(J.mean(0))
                yield J

    log_norms = _product_log_norms(jacobians(), norm)
    curves = log_norms - log_norms[:, :1]
    steps = torch.arange(1, x.shape[1] + 1)
    return MemoryHorizon(steps, log_norms, curves, curves.mean(0), torch.stack(total).mean(0), norm, full_state)


def horizon_slope(curve, window=None):
    """Least-squares slope per step of a log-norm curve over ``window`` (A.5.1's decay rate).

    Parameters
    ----------
    curve : ``(T,)`` or ``(B, T)`` tensor (entry ``k − 1`` for k Jacobians), or a :class:`MemoryHorizon` (its mean)
    window : ``(start, stop)`` or None
        Steps ``k`` with ``start ≤ k ≤ stop`` (1-based, inclusive). None: the
        second half, ``k ∈ [⌈T/2⌉, T]``, which skips the transient of the
        first products (non-normal growth, the initial state).

    Returns
    -------
    float, or a ``(B,)`` tensor for ``(B, T)`` curves; ``−inf`` where the curve reaches ``−inf``.
    """
    if isinstance(curve, MemoryHorizon):
        curve = curve.mean
    if not isinstance(curve, torch.Tensor) or curve.dim() not in (1, 2):
        raise TypeError("curve must be a (T,) or (B, T) tensor or a MemoryHorizon")
    T = curve.shape[-1]
    start, stop = (max(1, math.ceil(T / 2)), T) if window is None else window
    if not 1 <= start < stop <= T:
        raise ValueError(f"window must satisfy 1 <= start < stop <= T = {T}, got {(start, stop)}")
    y = curve[..., start - 1:stop].to(torch.float64)
    k = torch.arange(start, stop + 1, dtype=torch.float64)
    kc = k - k.mean()
    finite = torch.isfinite(y).all(-1)
    yc = torch.where(finite[..., None], y, torch.zeros_like(y))
    s = (yc * kc).sum(-1) / (kc ** 2).sum()
    s = torch.where(finite, s, torch.full_like(s, -math.inf))
    return float(s) if s.dim() == 0 else s


# ---------------------------------------------------------------------------
# Slope against the spectral radius, across ranks and sparsities.
# ---------------------------------------------------------------------------

REFERENCES = {"rnn": "log ρ(W) + ⟨log tanh'⟩ (A.5.1, after Pascanu)", "lstm": "⟨log f⟩ (the c → c carry)",
              "gru": "⟨log z⟩ (the h → h carry)", "cfc": "log ρ(⟨J⟩)"}


def carry_factors(model, x, states):
    """Each cell's carry factor at every step, ``(T, B, H)``: tanh' (RNN), ``f`` (LSTM), ``z`` (GRU); None for the CfC.

    The factor ``d_t`` multiplies the recurrence in the cell's Jacobian: the
    RNN's ``J_t = D(tanh'_t) W``; the LSTM's ``∂c_t/∂c_{t−1} = D(f_t)``; the
    GRU's ``J_t = D(z_t) + …``. Evaluated at the pre-activations of every
    step (``states`` from :func:`run_states`). The CfC has no such single
    factor (its ``J`` mixes three gated matrices).
    """
    kind = _kind(model)
    if kind == "cfc":
        return None
    W = model.recurrent_weights()
    g = {"rnn": 0, "lstm": 1, "gru": 1}[kind]
    out = []
    with torch.no_grad():
        for t, s in enumerate(states):
            h = model._check_state(s, x.shape[0], x[:, t])[0]
            pre = model.input_drive(x[:, t])[:, g] + h @ W[g].T
            out.append(1 - torch.tanh(pre) ** 2 if kind == "rnn" else torch.sigmoid(pre))
    return torch.stack(out)


@dataclass
class HorizonRow:
    """One cell at one (rank, sparsity, seed): the horizon slope beside ``log ρ(W_rec)`` and the references.

    ``log_rho``: log of the mean of ``ρ`` over the cell's recurrent matrices
    (A.11.5's averaging); ``rho``: per matrix. ``slope``: :func:`horizon_slope`
    of the mean curve. ``log_carry``: ``⟨log d⟩`` of the :func:`carry_factors`
    ``d`` (None for the CfC); ``log_carry_rms``: ``½ log⟨d²⟩``, the growth of
    ``‖D(d) v‖`` for a spread-out ``v`` (the RNN's estimate for a normal ``W``
    is ``log ρ + ½ log⟨tanh'²⟩``). ``reference``: the per-cell estimate named
    in ``reference_name`` (:data:`REFERENCES`); ``log_rho_mean_jacobian``:
    ``log ρ`` of the batch- and time-averaged Jacobian, for every cell.
    """

    kind: str
    rank: object
    sparsity: float
    seed: int
    rho: tuple
    log_rho: float
    slope: float
    log_carry: object
    log_carry_rms: object
    reference_name: str
    reference: float
    log_rho_mean_jacobian: float


def horizon_row(model, *, seed=0, T=100, batch=8, scale=1.0, window=None, norm="fro"):
    """:class:`HorizonRow` of one cell on :func:`default_drive` ``(model, T, batch, scale=scale, seed=seed)``."""
    kind = _kind(model)
    m = _float64(model)
    x = default_drive(m, T, batch, scale=scale, seed=seed)
    hz = memory_horizon(m, x, norm=norm)
    with torch.no_grad():
        rho = tuple(float(r) for r in spectral_radius(m.recurrent_weights()))
    log_rho = math.log(sum(rho) / len(rho))
    d = carry_factors(m, x, run_states(m, x)[0])
    carry = None if d is None else float(torch.log(d).mean())
    carry_rms = None if d is None else 0.5 * math.log(float((d ** 2).mean()))
    lrj = math.log(float(spectral_radius(hz.mean_jacobian)))
    reference = {"rnn": log_rho + carry if carry is not None else math.nan, "lstm": carry, "gru": carry,
                 "cfc": lrj}[kind]
    return HorizonRow(kind, m.rank if m.rank is not None else "full", m.sparsity, seed, rho, log_rho,
                      hz.slope(window), carry, carry_rms, REFERENCES[kind], reference, lrj)


def horizon_vs_radius(kinds=("rnn", "lstm", "gru", "cfc"), ranks=(None, 27, 16, 5, 1), sparsities=(0.0, 0.5, 0.8),
                      *, hidden_size=64, input_size=64, seeds=(0,), T=100, batch=8, scale=1.0, window=None,
                      norm="fro", init="orthogonal"):
    """Horizon slope against ``log ρ(W_rec)`` for cells across ranks and sparsities (A.5.1), at initialisation.

    Each cell is built (float64, ``backend="torch"``) with ``seed`` for its
    weights and mask, and driven by :func:`default_drive` with the same seed.
    The settings are the paper's two axes (A.11.3): full rank at each of
    ``sparsities``, and each rank of ``ranks`` (None: full) at sparsity 0;
    defaults: hidden size 64, ranks {full, 27, 16, 5, 1}, sparsities
    {0, 0.5, 0.8}. ``T``, ``batch``, ``scale``: the drive; ``window``: the
    slope's (:func:`horizon_slope`).

    Measured at the defaults (seeds 0 and 1, scale 1; :func:`horizon_sensitivity`):
    the RNN's and the CfC's slopes follow ``log ρ`` one for one (coefficients
    0.95 and 1.05, correlations > 0.99); the LSTM's and the GRU's barely move
    (0.08, 0.15): their carries ``D(f)`` and ``D(z)`` keep the slope above
    ``⟨log f⟩ ≈ −0.35`` and ``⟨log z⟩ ≈ −0.76`` whatever ``W_rec`` is. For the
    RNN, ``log ρ + ½ log⟨tanh'²⟩`` is within 0.07 of the slope at full rank,
    while A.5.1's ``log ρ + ⟨log tanh'⟩`` overstates the decay by 0.39-0.54;
    with ``scale = 0.1`` (tanh' ≈ 1) all three agree with the slope to 0.02.

    Returns
    -------
    list of :class:`HorizonRow`; :func:`horizon_sensitivity` fits the slope against ``log ρ`` per cell.
    """
    rows = []
    settings = [(None, s) for s in sparsities] + [(r, 0.0) for r in ranks if r is not None]
    for kind in kinds:
        for rank, sparsity in settings:
            for seed in seeds:
                model = CELLS[kind](input_size, hidden_size, rank, sparsity, init, seed=seed, backend="torch",
                                    dtype=torch.float64)
                rows.append(horizon_row(model, seed=seed, T=T, batch=batch, scale=scale, window=window, norm=norm))
    return rows


def horizon_sensitivity(rows):
    """Per cell: the least-squares coefficient of the horizon slope on ``log ρ(W_rec)`` and their correlation.

    The Pascanu argument of A.5.1 predicts a coefficient of 1 for the RNN
    (slope ≈ log ρ + a term that A.5.1 assumes independent of W). Returns
    ``{kind: {"coefficient", "correlation", "count"}}``.
    """
    out = {}
    for kind in dict.fromkeys(r.kind for r in rows):
        pts = [(r.log_rho, r.slope) for r in rows if r.kind == kind and math.isfinite(r.slope)]
        if len(pts) < 2:
            continue
        x = torch.tensor([p[0] for p in pts], dtype=torch.float64)
        y = torch.tensor([p[1] for p in pts], dtype=torch.float64)
        xc, yc = x - x.mean(), y - y.mean()
        coef = float((xc * yc).sum() / (xc ** 2).sum())
        corr = float((xc * yc).sum() / torch.sqrt((xc ** 2).sum() * (yc ** 2).sum()))
        out[kind] = {"coefficient": coef, "correlation": corr, "count": len(pts)}
    return out
