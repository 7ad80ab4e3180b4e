"""Certificates of a trained Combo Net, and what the paper's public code computes as the metric.

Kozachkov, Ennis, Slotine, "RNNs of RNNs" (NeurIPS 2022), appendix D.1.1 and
equation (3); public code kozleo/rnns-of-rnns, ``src/utils.py``.

:func:`combo_net_report` checks a :class:`~rnnlab.models.SparseComboNet` or
:class:`~rnnlab.models.SVDComboNet` as it is (before or after training) on
four levels, from the paper's continuous-time certificate to the discrete
map that training and inference actually run:

1. *the modules*: each module's rate in its own diagonal metric (Theorem 1
   for the sparse modules, Theorem 5 for the SVD ones);
2. *the assembly* (Corollaries 1-2): ``M L + L^T M = 0`` to round-off, or,
   without the constraint, how far the symmetric part of ``M^{1/2} L
   M^{-1/2}`` eats the modules' rate;
3. *the Euler map* ``x -> x + alpha f(x)`` in the same metric: the generic
   step bound of :meth:`verify_contraction`, a sharper norm bound, and a
   search for counterexamples (slope patterns ``D`` at which one Euler step
   expands distances in ``M``);
4. *any constant metric*: a linearisation ``-I + W D + L`` that is not
   Hurwitz at some slope pattern ``D`` rules out every constant metric.

Levels 3 and 4 sample slope patterns: the vertices of ``[0, g]^n`` at random
(half the units on) and, when ``inputs`` are given, the patterns the network
actually visits on them. A counterexample found is a proof (of failure); no
counterexample among the samples proves nothing.

:func:`public_code_find_M` reproduces ``find_M`` of the public code line by
line. Its integrand ``np.exp(W.T * t) * Q * np.exp(W * t)`` is element-wise
(``np.exp`` is not the matrix exponential, ``*`` is not the matrix product),
so its ``[i, i]`` entry is ``exp(2 (|W_ii| - 1) t) = exp(-2t)`` for a module
with zero diagonal, and the "metric" is ``0.5 I`` whatever the module; the
code's own check of the metric is element-wise too and holds for every ``W``
(:func:`public_code_check`). :func:`public_code_metric_report` measures what
``M = 0.5 I`` certifies for Theorem-1 modules (the chapter's answer: none of
those we drew, at the paper's best setting or at D.2.1's).
"""
from __future__ import annotations

import math

import numpy as np
import scipy.integrate
import scipy.linalg
import torch

from ..models.combo import theorem1_module_metric

__all__ = ["combo_net_report", "slope_patterns", "linearisation", "trajectory_distances", "public_code_find_M", "public_code_check",
           "public_code_metric_report"]


# --------------------------------------------------------------------------- #
# the public code's metric, reproduced
# --------------------------------------------------------------------------- #
def public_code_find_M(W_inp):
    """``find_M`` of kozleo/rnns-of-rnns ``src/utils.py``, reproduced as written.

    ``W = |W_inp| - I``, ``Q = I``, and for each ``i`` the diagonal entry
    ``P[i, i] = quad(t -> (np.exp(W.T * t) * Q * np.exp(W * t))[i, i], 0, inf)``;
    off-diagonal entries stay 0. ``np.exp`` and ``*`` act element by element,
    so the integrand is ``exp(2 W_ii t)``: for a module with zero diagonal
    every entry is ``quad(exp(-2t)) = 0.5``. (The integral D.1.1 describes,
    ``int exp(A^T t) Q exp(A t) dt``, is :func:`rnnlab.theory.lyapunov_metric`.)
    """
    W_inp = np.asarray(W_inp, dtype=float)
    if W_inp.ndim != 2 or W_inp.shape[0] != W_inp.shape[1]:
        raise ValueError(f"W_inp must be a square matrix, got shape {W_inp.shape}")
    W = np.abs(W_inp) - np.identity(W_inp.shape[0])
    Q = np.identity(W.shape[0])
    P = np.zeros(W.shape)
    with np.errstate(over="ignore", invalid="ignore"):  # the element-wise exp overflows off the diagonal
        for i in range(W.shape[0]):
            def integrand(t, i=i):
                return (np.exp(np.transpose(W) * t) * Q * np.exp(W * t))[i, i]
            P[i, i] = scipy.integrate.quad(integrand, 0, np.inf)[0]
    return P


def public_code_check(W, M):
    """The public code's acceptance test of a metric (``generate_initial_W_M``), and the real one.

    The code computes ``M * (|W| - I) + (|W| - I)^T * M`` with element-wise
    ``*`` and accepts ``M`` when its largest eigenvalue is negative; for a
    diagonal ``M`` that matrix is ``-2 diag(M)`` whatever ``W`` is. Theorem 1
    asks for the matrix products. Returns ``(code_value, theorem1_value)``:
    the largest eigenvalue of each (a metric passes when it is < 0).
    """
    W = np.asarray(W, dtype=float)
    M = np.asarray(M, dtype=float)
    if W.ndim != 2 or W.shape[0] != W.shape[1] or M.shape != W.shape:
        raise ValueError(f"W and M must be square matrices of one shape, got {W.shape} and {M.shape}")
    A = np.abs(W) - np.identity(W.shape[0])
    code = M * A + np.transpose(A) * M
    real = M @ A + A.T @ M
    return float(np.max(np.linalg.eigvals(code).real)), float(np.linalg.eigvalsh((real + real.T) / 2).max())


def public_code_metric_report(modules):
    """What ``find_M``'s metric certifies for a list of Theorem-1 modules.

    For each module: the diagonal ``find_M`` returns (``unique_diagonal``), the
    code's check and the Theorem-1 check in that metric
    (:func:`public_code_check`), and for comparison the rate of the explicit
    diagonal metric (:func:`rnnlab.theory.theorem1_module_metric`). Returns a
    dict of lists plus ``certified_by_code_metric`` (how many modules the
    ``find_M`` metric really certifies).
    """
    out = {"unique_diagonal": [], "code_check": [], "theorem1_check": [], "explicit_rate": []}
    for W in modules:
        M = public_code_find_M(W)
        code, real = public_code_check(W, M)
        out["unique_diagonal"].append(sorted({round(float(v), 9) for v in np.diag(M)}))
        out["code_check"].append(code)
        out["theorem1_check"].append(real)
        out["explicit_rate"].append(float(theorem1_module_metric(W)[2]))
    out["certified_by_code_metric"] = int(sum(v < 0 for v in out["theorem1_check"]))
    out["modules"] = len(out["code_check"])
    return out


# --------------------------------------------------------------------------- #
# slope patterns
# --------------------------------------------------------------------------- #
def slope_patterns(model, samples=32, *, inputs=None, visited=32, rng=0):
    """Slope patterns ``D`` (vectors of ``phi'``) at which to test the linearisation.

    ``D = 0`` and ``D = g`` (all units off, all on), ``samples`` random
    vertices of ``[0, g]^n`` with half the units on, and, when ``inputs``
    ``(B, T, input_size)`` are given, ``visited`` patterns the network visits
    on them (``phi'`` of the pre-activation at evenly spaced ``(b, t)``; ReLU
    only: its slopes are exactly 0 or ``g``). Returns ``(patterns (k, n),
    kinds)`` with ``kinds[i]`` in ``{"off", "on", "random", "visited"}``.
    """
    n, g = model.hidden_size, model.g
    gen = np.random.default_rng(rng)
    pats = [np.zeros(n), np.full(n, g)]
    kinds = ["off", "on"]
    for _ in range(int(samples)):
        pats.append(g * (gen.random(n) < 0.5))
        kinds.append("random")
    if inputs is not None and visited:
        if model.activation != "relu":
            raise ValueError("visited patterns need activation='relu' (slopes exactly 0 or g)")
        pre = _preactivations(model, inputs)  # (B, T, n)
        flat = pre.reshape(-1, n)
        idx = np.linspace(0, flat.shape[0] - 1, int(visited)).round().astype(int)
        for i in idx:
            pats.append(g * (flat[i] > 0))
            kinds.append("visited")
    return np.stack(pats), kinds


@torch.no_grad()
def _preactivations(model, inputs):
    if not isinstance(inputs, torch.Tensor) or inputs.dim() != 3 or inputs.shape[-1] != model.input_size:
        raise ValueError(f"inputs must be a tensor of shape (B, T, {model.input_size})")
    out_size = model.output_size
    model.output_size = None  # the forward pass returns the states, not the readout
    try:
        states, _ = model(inputs.to(model.b_free.dtype))
    finally:
        model.output_size = out_size
    h0 = torch.zeros_like(states[:, :1])
    prev = torch.cat([h0, states[:, :-1]], 1)  # the state each step starts from
    if model.form == "x":
        return prev.double().numpy()
    W = model.recurrent_weight().detach().double()
    u = inputs.double() @ model.weight_ih.detach().double().T + model.bias_ih.detach().double()
    return (prev.double() @ W.T + u).numpy()


def linearisation(model, D):
    """The Jacobian of the vector field ``f`` at slope pattern ``D`` (a vector of ``phi'``), float64.

    Form ``x`` (equation 2): ``-I + W D + L``; form ``y``: ``-I + D W + L``. One Euler step's Jacobian is
    ``I + alpha`` times it.
    """
    D = np.asarray(D, dtype=float)
    if D.shape != (model.hidden_size,):
        raise ValueError(f"D must be a vector of {model.hidden_size} slopes, got shape {D.shape}")
    W, L = _weights(model)
    return _linearisation(W, L, D, model.form)


def _weights(model):
    with torch.no_grad():
        W = model.recurrent_weight().detach().double().cpu().numpy()
        L = model.feedback(torch.float64).detach().cpu().numpy()
    return W, L


def _linearisation(W, L, D, form):
    WD = W * D[None, :] if form == "x" else D[:, None] * W
    return -np.eye(W.shape[0]) + WD + L


@torch.no_grad()
def trajectory_distances(model, inputs, *, pairs=4, scale=1.0, seed=0):
    """Simulation beside the certificates: two initial states, the same inputs, how their distance evolves.

    For each of ``pairs`` pairs of initial states drawn ``N(0, scale^2)`` the net is run on ``inputs``
    ``(B, T, input_size)`` from both, and the Euclidean distance between the two state sequences is
    recorded at every step (each sequence of the batch separately). Returns a dict: ``final_ratio_max``
    and ``final_ratio_median`` (distance after the last step over the initial distance, over pairs and
    sequences), ``max_step_growth`` (the largest ratio of one step's distance to the previous one's:
    above 1, some step expanded the distance between the two trajectories) and ``steps``; a net that
    overflows counts as infinitely far apart.
    """
    if not isinstance(inputs, torch.Tensor) or inputs.dim() != 3 or inputs.shape[-1] != model.input_size:
        raise ValueError(f"inputs must be a tensor of shape (B, T, {model.input_size})")
    gen = torch.Generator().manual_seed(int(seed))
    dtype = model.b_free.dtype
    x = inputs.to(dtype)
    out_size = model.output_size
    model.output_size = None
    finals, growth = [], []
    try:
        for _ in range(int(pairs)):
            h0 = torch.randn(x.shape[0], model.hidden_size, generator=gen, dtype=dtype) * scale
            h1 = torch.randn(x.shape[0], model.hidden_size, generator=gen, dtype=dtype) * scale
            s0, _ = model(x, h0)
            s1, _ = model(x, h1)
            d = torch.cat([(h0 - h1).norm(dim=-1, keepdim=True), (s0 - s1).norm(dim=-1)], 1).double()
            d = torch.nan_to_num(d, nan=math.inf)  # an overflowing net: infinitely far apart
            finals.append(d[:, -1] / d[:, 0])
            growth.append(torch.nan_to_num(d[:, 1:] / d[:, :-1], nan=math.inf).max())
    finally:
        model.output_size = out_size
    finals = torch.cat(finals)
    return {"final_ratio_max": float(finals.max()), "final_ratio_median": float(finals.median()),
            "max_step_growth": float(max(growth)), "steps": int(x.shape[1]), "pairs": int(pairs)}


# --------------------------------------------------------------------------- #
# the report
# --------------------------------------------------------------------------- #
def _norm2(A):
    """Spectral norm, as the square root of the top eigenvalue of ``A^T A`` (about 2x faster than an SVD)."""
    top = scipy.linalg.eigh(A.T @ A, eigvals_only=True, subset_by_index=[A.shape[1] - 1, A.shape[1] - 1])
    return float(np.sqrt(max(top[0], 0.0)))


def combo_net_report(model, *, samples=32, inputs=None, visited=32, rng=0):
    """The contraction of a Combo Net as it stands, on four levels (see the module docstring).

    Returns a JSON-friendly dict:

    - ``net``, ``constraint``, ``n``, ``modules``, ``alpha``, ``form``;
    - modules: ``module_rate_min``/``_median``/``_max``, ``metric_condition``
      (``max p / min p`` of the diagonal metric);
    - assembly: ``skew_residual``, ``feedback_sym_max`` (``mu``),
      ``rate_with_feedback``, ``continuous_certified``, ``L_norm_in_metric``
      (``||M^{1/2} L M^{-1/2}||``), ``W_norm_in_metric``;
    - Euler map in ``M``: ``euler_alpha_bound`` (the generic bound of
      :meth:`verify_contraction`), ``euler_norm_bound`` = ``||M^{1/2}(I +
      alpha(-I + L)) M^{-1/2}|| + alpha g ||M^{1/2} W M^{-1/2}||`` (< 1
      proves every step contracts in ``M``: ``D`` is diagonal, so ``M^{1/2}
      W D M^{-1/2} = (M^{1/2} W M^{-1/2}) D``, likewise ``D W`` in form
      ``y``), ``euler_certified``; ``euler_max_step_norm`` over the sampled
      patterns and ``euler_counterexample`` (a pattern with step norm > 1:
      one Euler step there expands some distance in ``M``), with the kind of
      pattern that gave the maximum;
    - any constant metric: ``max_abscissa`` (largest real part of an
      eigenvalue of ``-I + W D + L`` (form x) or ``-I + D W + L`` (form y)
      over the patterns; > 0 means no constant metric makes the continuous
      system contract at that ``D``: ``no_constant_metric``) and
      ``max_euler_radius`` (spectral radius of the Euler step's Jacobian; > 1
      likewise for the map: ``euler_no_constant_metric``; the kind of pattern
      that gave it: ``euler_radius_worst_pattern``);
    - ``patterns``: how many of each kind were tested.
    """
    info = model.verify_contraction()
    with torch.no_grad():
        m = model.metric_diag().detach().double().cpu().numpy()
    W, L = _weights(model)
    s = np.sqrt(m)
    Wm = s[:, None] * W / s[None, :]
    Lm = s[:, None] * L / s[None, :]
    n, alpha, g = model.hidden_size, model.alpha, model.g
    eye = np.eye(n)
    rates = np.asarray(info["module_rates"], dtype=float)
    A0 = eye + alpha * (-eye + Lm)
    norm_bound = _norm2(A0) + alpha * g * _norm2(Wm)  # D is diagonal: ||Wm D||, ||D Wm|| <= g ||Wm||
    pats, kinds = slope_patterns(model, samples, inputs=inputs, visited=visited, rng=rng)
    step_norms, abscissae, radii = [], [], []
    for D in pats:
        J = _linearisation(W, L, D, model.form)
        Jm = s[:, None] * J / s[None, :]  # M^{1/2} J M^{-1/2}
        step_norms.append(_norm2(eye + alpha * Jm))
        ev = np.linalg.eigvals(J)
        abscissae.append(float(ev.real.max()))
        radii.append(float(np.abs(1 + alpha * ev).max()))
    worst = int(np.argmax(step_norms))
    counts = {k: kinds.count(k) for k in ("off", "on", "random", "visited")}
    return {
        "net": type(model).__name__, "constraint": model.constraint, "n": n, "modules": len(model.hidden_sizes),
        "alpha": alpha, "form": model.form,
        "module_rate_min": float(rates.min()), "module_rate_median": float(np.median(rates)),
        "module_rate_max": float(rates.max()), "metric_condition": float(m.max() / m.min()),
        "skew_residual": float(info["skew_residual"]), "feedback_sym_max": float(info["feedback_sym_max"]),
        "rate_with_feedback": float(info["rate_with_feedback"]), "continuous_certified": bool(info["holds"]),
        "L_norm_in_metric": _norm2(Lm), "W_norm_in_metric": _norm2(Wm),
        "euler_alpha_bound": float(info["euler_alpha_bound"]),
        "euler_norm_bound": norm_bound,
        "euler_certified": bool(info["holds"] and (info["euler_contracting"] or norm_bound < 1)),
        "euler_max_step_norm": float(step_norms[worst]), "euler_worst_pattern": kinds[worst],
        "euler_counterexample": bool(step_norms[worst] > 1 + 1e-12),
        "max_abscissa": float(max(abscissae)), "max_euler_radius": float(max(radii)),
        "euler_radius_worst_pattern": kinds[int(np.argmax(radii))],
        "no_constant_metric": bool(max(abscissae) > 1e-12),
        "euler_no_constant_metric": bool(max(radii) > 1 + 1e-12),
        "patterns": counts,
    }

