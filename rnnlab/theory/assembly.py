"""Combining contracting modules: feedback (equation 3), hierarchy, module constructors.

Kozachkov, Ennis, Slotine, "RNNs of RNNs" (NeurIPS 2022): appendix A.2.1
(feedback and hierarchical combinations), C.1 (Corollaries 1 and 2), D.1.1 and
D.2 (Sparse Combo Net modules), D.3.1 (parameter count), E.1 (SVD modules).

The parameterisations themselves (:func:`feedback_matrix`, :func:`block_mask`,
the Theorem-1 sampler, the Lyapunov metric, equation 19) live in
:mod:`rnnlab.models.combo`, because the models use them and models may not
import theory; they are re-exported here.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.linalg
import torch

from ..models.combo import (
    block_mask,
    feedback_matrix,
    lyapunov_metric,
    metzler_diagonal_metric,
    sample_theorem1_module,
    sparse_combo_net_num_params,
    svd_module_weight,
    theorem1_abscissa,
    theorem1_module_metric,
)
from .certificate import Certificate, as_metric as _as_metric, check_g as _check_g, check_W as _check_W
from .theorems import topological_order as _topological_order

__all__ = [
    "block_mask",
    "feedback_matrix",
    "lyapunov_metric",
    "metzler_diagonal_metric",
    "sample_theorem1_module",
    "theorem1_module_metric",
    "sparse_combo_net_num_params",
    "sparse_combo_net_naive_num_params",
    "svd_module_weight",
    "block_diag_metric",
    "skew_residual",
    "certify_assembly",
    "certify_hierarchy",
    "sample_theorem1_modules",
    "theorem1_acceptance",
    "svd_module",
    "certify_combo_net",
]


def block_diag_metric(metrics, weights=None):
    """``BlockDiag(k_1 M_1, ..., k_p M_p)`` (Corollary 1); ``k_i = 1`` by default."""
    Ms = []
    for i, M in enumerate(metrics):
        M = np.asarray(M, dtype=float)
        M = np.diag(M) if M.ndim == 1 else M
        Ms.append(_as_metric(M, M.shape[0], f"metrics[{i}]"))
    if weights is None:
        weights = np.ones(len(Ms))
    weights = np.asarray(weights, dtype=float)
    if weights.shape != (len(Ms),) or not np.all(weights > 0):
        raise ValueError(f"weights must be {len(Ms)} positive numbers")
    return scipy.linalg.block_diag(*[k * M for k, M in zip(weights, Ms)])


def skew_residual(L, M):
    """``max|M L + L^T M| / max|M L|``: zero (to round-off) for ``L = B - M^{-1} B^T M``."""
    L = np.asarray(L, dtype=float)
    M = np.asarray(M, dtype=float)
    M = np.diag(M) if M.ndim == 1 else M
    ML = M @ L
    scale = np.abs(ML).max()
    return float(np.abs(ML + ML.T).max() / scale) if scale > 0 else 0.0


def _module_inputs(Ws, certificates):
    if len(Ws) != len(certificates) or len(Ws) == 0:
        raise ValueError("give one certificate per module (and at least one module)")
    Ws = [_check_W(W, f"Ws[{i}]") for i, W in enumerate(Ws)]
    forms = set()
    for i, (W, c) in enumerate(zip(Ws, certificates)):
        if not isinstance(c, Certificate):
            raise TypeError(f"certificates[{i}] must be a Certificate")
        if not c.holds or c.metric is None:
            raise ValueError(f"module {i} is not certified ({c.theorem}: {c.message})")
        if c.metric.shape != W.shape:
            raise ValueError(f"module {i}: metric shape {c.metric.shape} does not match W {W.shape}")
        forms.add(c.form)
    if len(forms) > 1:
        raise ValueError(f"the modules' certificates are for different system forms: {sorted(forms)}")
    return Ws, forms.pop()


def certify_assembly(Ws, certificates, B, *, lower_only=False, mask=None, weights=None, C=None):
    """Corollary 1 / equation (3): modules combined with ``L = B - M^{-1} B^T M``.

    ``Ws`` are the modules' weights, ``certificates`` their certificates (each
    holding, with a metric ``M_i`` and rate ``lambda_i``), ``B`` an ``(n, n)``
    matrix, masked to its off-diagonal blocks (``lower_only=True``: the
    lower-triangular blocks only, as in D.1.1) unless ``mask`` is given.
    ``C`` (optional, with positive semi-definite symmetric part) adds
    Corollary 2's ``-M^{-1} C``. The assembly
    ``tau dx/dt = -x + W phi(x) + L x + u`` with ``W = BlockDiag(W_i)`` is
    contracting in ``M = BlockDiag(k_i M_i)`` at rate ``min_i lambda_i``
    (Corollary 1). ``details``: ``W``, ``L``, ``sizes``, ``skew_residual``
    (``M L + L^T M`` relative to ``M L``, round-off for ``C = None``).
    """
    Ws, form = _module_inputs(Ws, certificates)
    sizes = [W.shape[0] for W in Ws]
    n = sum(sizes)
    B = _check_W(B, "B")
    if B.shape != (n, n):
        raise ValueError(f"B must be ({n}, {n}) for modules of sizes {sizes}, got {B.shape}")
    if mask is None:
        mask = block_mask(sizes, lower_only=lower_only)
    M = block_diag_metric([c.metric for c in certificates], weights)
    Cm = None
    if C is not None:
        Cm = _check_W(C, "C")
        if Cm.shape != (n, n):
            raise ValueError(f"C must be ({n}, {n})")
        if np.linalg.eigvalsh((Cm + Cm.T) / 2).min() < -1e-12 * max(1, np.abs(Cm).max()):
            raise ValueError("C must have a positive semi-definite symmetric part (Corollary 2)")
    L = feedback_matrix(B, M, mask=np.asarray(mask, dtype=bool), C=Cm)
    resid = skew_residual(L, M) if Cm is None else float(
        np.abs(M @ L + L.T @ M + Cm + Cm.T).max() / max(np.abs(M @ L).max(), 1e-300))
    rates = [c.rate for c in certificates]
    rate = float(min(rates))
    W = scipy.linalg.block_diag(*Ws)
    holds = resid < 1e-9
    details = {"W": W, "L": L, "B": B * mask, "sizes": sizes, "skew_residual": resid, "module_rates": rates}
    name = "Network of networks (Corollary 1, L = B - M^-1 B^T M)"
    if not holds:
        msg = f"fails: M L + L^T M is not 0 (relative residual {resid:.3g}); the metric is too ill-conditioned"
        return Certificate(name, False, None, float("nan"), -resid, msg, form=form, details=details)
    msg = (f"holds: {len(Ws)} certified modules (rates {', '.join(f'{r:.3g}' for r in rates)}) combined with "
           f"L = B - M^-1 B^T M (M L + L^T M = 0 to {resid:.1e}); the assembly contracts at rate {rate:.4g}")
    return Certificate(name, True, M, rate, rate, msg, form=form, details=details)


def _sqrt_and_inv_sqrt(M):
    w, V = np.linalg.eigh(M)
    return (V * np.sqrt(w)) @ V.T, (V / np.sqrt(w)) @ V.T


def certify_hierarchy(Ws, certificates, L, *, fraction=0.5):
    """Hierarchical combination (A.2.1): modules fed forward through a block-lower-triangular ``L``.

    ``tau dx/dt = -x + W phi(x) + L x + u`` with ``W = BlockDiag(W_i)`` and
    ``L`` strictly block-lower-triangular (module ``i`` receives from modules
    ``j < i`` only) is contracting in a block-diagonal metric
    ``BlockDiag(k_i M_i)``. The weights are built recursively: with the first
    modules contracting at ``lambda_S`` in ``M_S``, the next at ``lambda_b`` in
    ``M_b``, coupling ``G`` and ``gamma = ||M_b^{1/2} G M_S^{-1/2}||``, the
    weight ``k = 4 (lambda_S - lambda)(lambda_b - lambda) / gamma^2`` with
    ``lambda = fraction * min(lambda_S, lambda_b)`` makes the pair contract at
    ``lambda`` (Young's inequality on the cross term). ``details["weights"]``
    holds the ``k_i``.
    """
    Ws, form = _module_inputs(Ws, certificates)
    if not 0 < fraction < 1:
        raise ValueError(f"fraction must be in (0, 1), got {fraction}")
    sizes = [W.shape[0] for W in Ws]
    n = sum(sizes)
    L = _check_W(L, "L")
    if L.shape != (n, n):
        raise ValueError(f"L must be ({n}, {n}) for modules of sizes {sizes}, got {L.shape}")
    upper = ~block_mask(sizes, lower_only=True)
    if np.any(L[upper]):
        raise ValueError("L must be strictly block-lower-triangular (module i fed only by modules j < i)")
    edges = np.concatenate([[0], np.cumsum(sizes)])
    MS = certificates[0].metric
    lamS = certificates[0].rate
    weights = [1.0]
    rates = [lamS]
    for i in range(1, len(Ws)):
        Mb, lamb = certificates[i].metric, certificates[i].rate
        G = L[edges[i]:edges[i + 1], :edges[i]]
        Mbh, _ = _sqrt_and_inv_sqrt(Mb)
        _, MSih = _sqrt_and_inv_sqrt(MS)
        gamma = float(np.linalg.norm(Mbh @ G @ MSih, 2))
        if gamma == 0:
            k, lam = 1.0, min(lamS, lamb)
        else:
            lam = fraction * min(lamS, lamb)
            k = 4 * (lamS - lam) * (lamb - lam) / gamma ** 2
        weights.append(k)
        MS = scipy.linalg.block_diag(MS, k * Mb)
        lamS = lam
        rates.append(lam)
    M = MS
    W = scipy.linalg.block_diag(*Ws)
    details = {"W": W, "L": L, "sizes": sizes, "weights": np.array(weights), "rates_by_level": rates}
    msg = (f"holds: {len(Ws)} certified modules in a feed-forward hierarchy; block weights k = "
           f"{', '.join(f'{k:.3g}' for k in weights)} give a block-diagonal metric with rate {lamS:.4g}")
    return Certificate("Hierarchical combination (A.2.1)", True, M, float(lamS), float(lamS), msg, form=form,
                       details=details)


# --------------------------------------------------------------------------- #
# module constructors
# --------------------------------------------------------------------------- #
def sample_theorem1_modules(count, size, density, scalar, *, post_scalar=1.0, g=1.0, rng=None,
                            max_tries=100_000):
    """``count`` Theorem-1 modules by rejection sampling (D.1.1, D.2.2).

    Returns ``(Ws, acceptance_rate)`` with the acceptance rate over all the
    candidates drawn (the appendix chose its settings for about 1 %).
    """
    count = int(count)
    if count < 1:
        raise ValueError(f"count must be >= 1, got {count}")
    rng = np.random.default_rng(rng)
    Ws, tries = [], 0
    for _ in range(count):
        W, t = sample_theorem1_module(size, density, scalar, post_scalar=post_scalar, g=g, rng=rng,
                                      max_tries=max_tries)
        Ws.append(W)
        tries += t
    return Ws, count / tries


def theorem1_acceptance(size, density, scalar, *, samples=1000, g=1.0, rng=None, scale_up=1e4):
    """How often a random sparse module meets Theorem 1 (D.2.1, D.2.2).

    Draws ``samples`` candidates as in :func:`sample_theorem1_module` and
    returns a dict: ``rate`` (fraction meeting Theorem 1), ``accepted``,
    ``feedforward_fraction`` (accepted modules whose graph has no cycle, i.e.
    triangular after reordering: nilpotent ``|W|``, Theorem 4 territory),
    ``scale_up_fraction`` (accepted modules still meeting Theorem 1 after
    multiplying by ``scale_up``; D.2.2 reports about 85 % for 32 units, 5 %
    density, scalar 10, factor 10000).
    """
    import scipy.sparse

    rng = np.random.default_rng(rng)
    acc = []
    for _ in range(int(samples)):
        W = scipy.sparse.random(size, size, density=density, random_state=rng,
                                data_rvs=lambda k: rng.uniform(-scalar, scalar, k)).toarray()
        np.fill_diagonal(W, 0.0)
        if theorem1_abscissa(W, g) < 0:
            acc.append(W)
    ff = [(_topological_order(W) is not None) for W in acc]
    up = [theorem1_abscissa(W * scale_up, g) < 0 for W in acc]
    return {"rate": len(acc) / int(samples), "accepted": len(acc), "samples": int(samples),
            "feedforward_fraction": float(np.mean(ff)) if acc else float("nan"),
            "scale_up_fraction": float(np.mean(up)) if acc else float("nan")}


def svd_module(size, g=1.0, *, rng=None, phi_scale=0.5):
    """A random SVD module ``W = Phi^{-1} U Sigma V^T Phi`` (equation 19) and its metric.

    Generators and ``sigma_raw`` are drawn at random, ``log Phi ~ N(0,
    phi_scale^2)``; computed in float64 with :func:`svd_module_weight` (torch's
    matrix exponential). Returns ``(W, metric)`` with ``metric = Phi^2`` as a
    diagonal matrix: a Theorem-5 metric with rate ``1 - max Sigma g > 0``.
    """
    g = _check_g(g)
    size = int(size)
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    r = np.random.default_rng(rng)
    t = lambda a: torch.as_tensor(a, dtype=torch.float64)  # noqa: E731
    W, m = svd_module_weight(t(r.normal(scale=phi_scale, size=size)),
                             t(r.normal(size=(size, size)) / math.sqrt(size)),
                             t(r.normal(size=(size, size)) / math.sqrt(size)),
                             t(r.normal(size=size)), g)
    return W.numpy(), np.diag(m.numpy())


def sparse_combo_net_naive_num_params(num_modules, module_size, input_size, output_size):
    """The naive count ``n^2 + i n + n o + n + o`` that D.3.1 corrects (all of ``L`` trained)."""
    n = int(num_modules) * int(module_size)
    return n * n + int(input_size) * n + n * int(output_size) + n + int(output_size)


def certify_combo_net(model):
    """A :class:`Certificate` for a :class:`~rnnlab.models.SparseComboNet` or ``SVDComboNet``.

    Re-runs the model's own check (module rates in their diagonal metrics,
    ``M L + L^T M = 0``) and returns the assembly's metric (diagonal), rate
    and, in ``details``, ``W`` and ``L`` as float64 arrays for
    :func:`rnnlab.theory.check_certificate`.
    """
    info = model.verify_contraction()
    with torch.no_grad():
        W = model.recurrent_weight().double().cpu().numpy()
        L = model.feedback(torch.float64).cpu().numpy()
    p = info["metric_diag"]
    name = f"{type(model).__name__} (Corollary 1)"
    details = {"W": W, "L": L, "module_rates": info["module_rates"], "skew_residual": info["skew_residual"]}
    if not info["holds"]:
        return Certificate(name, False, None, float("nan"), info["rate"],
                           f"fails: module rates {info['module_rates']}, skew residual {info['skew_residual']:.3g}",
                           form=model.form, details=details)
    msg = (f"holds: {len(model.hidden_sizes)} modules with rates >= {info['rate']:.4g} in their diagonal metrics, "
           f"M L + L^T M = 0 to {info['skew_residual']:.1e}")
    return Certificate(name, True, np.diag(p), info["rate"], info["rate"], msg, form=model.form, details=details)
