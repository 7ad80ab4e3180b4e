"""The modules of the Combo Nets and their metrics: the parameterisations of appendices D.1.1 and E.

The chapter's sixth page (``book/contraction/06_networks_of_networks``, "Building the modules"): the block
mask of ``B`` and the feedback ``L = B - M^{-1} B^T M`` of equation (3), Theorem 1's Metzler matrix, rate and
explicit diagonal metric, the Lyapunov metric of D.1.1, the rejection sampler of sparse Theorem-1 modules, the
SVD module of equation (19) and the parameter count of D.3.1. :mod:`rnnlab.models.combo` (the networks)
re-exports every name here.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import scipy.linalg
import scipy.sparse
import torch

from .._validate import check_positive

__all__ = [
    "block_mask",
    "feedback_matrix",
    "theorem1_matrix",
    "theorem1_abscissa",
    "theorem1_rate",
    "metzler_diagonal_metric",
    "lyapunov_metric",
    "theorem1_module_metric",
    "sample_theorem1_module",
    "svd_module_weight",
    "sparse_combo_net_num_params",
]


# --------------------------------------------------------------------------- #
# validation helpers
# --------------------------------------------------------------------------- #
def _square(W, name="W"):
    W = np.asarray(W, dtype=float)
    if W.ndim != 2 or W.shape[0] != W.shape[1]:
        raise ValueError(f"{name} must be a square 2-D matrix, got shape {W.shape}")
    if not np.all(np.isfinite(W)):
        raise ValueError(f"{name} has non-finite entries")
    return W


def check_module_sizes(hidden_sizes, name="hidden_sizes"):
    if isinstance(hidden_sizes, (int, np.integer)):
        raise TypeError(f"{name} must be a sequence of module sizes, e.g. [32] * 16")
    sizes = [int(s) for s in hidden_sizes]
    if not sizes or any(s < 1 for s in sizes):
        raise ValueError(f"{name} must be a non-empty sequence of positive ints, got {hidden_sizes}")
    return sizes


# --------------------------------------------------------------------------- #
# the feedback combination, equation (3)
# --------------------------------------------------------------------------- #
def block_mask(sizes: Sequence[int], *, lower_only: bool = False, diagonal: bool = False) -> np.ndarray:
    """Boolean mask of the blocks of ``B`` that train (appendix D.1.1).

    The paper trains only the off-diagonal blocks of ``B`` (diagonal blocks
    would be self-connections of a module) and, for speed, only the
    lower-triangular ones. ``lower_only`` keeps blocks ``(i, j)`` with
    ``i > j``; ``diagonal=True`` also keeps the diagonal blocks.
    """
    sizes = check_module_sizes(sizes, "sizes")
    edges = np.concatenate([[0], np.cumsum(sizes)])
    n = int(edges[-1])
    mask = np.zeros((n, n), dtype=bool)
    for i in range(len(sizes)):
        for j in range(len(sizes)):
            keep = (i > j) if lower_only else (i != j)
            if i == j and diagonal:
                keep = True
            if keep:
                mask[edges[i]:edges[i + 1], edges[j]:edges[j + 1]] = True
    return mask


def feedback_matrix(B, metric, mask=None, C=None):
    """``L = B - M^{-1} B^T M - M^{-1} C``: equation (3), Corollary 2.

    ``B`` is masked first when ``mask`` is given (:func:`block_mask`).
    ``metric`` is either the diagonal of a diagonal metric (a vector) or a full
    symmetric positive-definite matrix ``M``. ``C`` (optional) must have a
    positive semi-definite symmetric part; then ``M L + L^T M = -(C + C^T)``,
    and ``C = None`` (the paper's choice) gives ``M L + L^T M = 0``.
    Works on NumPy arrays and on torch tensors (differentiable in ``B``).
    """
    is_torch = isinstance(B, torch.Tensor)
    if B.ndim != 2 or B.shape[0] != B.shape[1]:
        raise ValueError(f"B must be a square matrix, got shape {tuple(B.shape)}")
    n = B.shape[0]
    if mask is not None:
        if tuple(mask.shape) != (n, n):
            raise ValueError(f"mask must have shape {(n, n)}, got {tuple(mask.shape)}")
        B = B * (torch.as_tensor(mask, device=B.device) if is_torch else np.asarray(mask))
    Bt = B.T
    if metric.ndim == 1:
        if metric.shape[0] != n:
            raise ValueError(f"metric (a diagonal) must have length {n}, got {metric.shape[0]}")
        if (metric <= 0).any():
            raise ValueError("metric must be positive definite: a diagonal metric needs entries > 0")
        L = B - Bt * metric[None, :] / metric[:, None]
        if C is not None:
            L = L - C / metric[:, None]
        return L
    if tuple(metric.shape) != (n, n):
        raise ValueError(f"metric must have shape {(n, n)} or ({n},), got {tuple(metric.shape)}")
    solve = torch.linalg.solve if is_torch else np.linalg.solve
    rhs = Bt @ metric if C is None else Bt @ metric + C
    return B - solve(metric, rhs)


# --------------------------------------------------------------------------- #
# Theorem 1 modules (appendix D.1.1, D.2.2)
# --------------------------------------------------------------------------- #
def theorem1_matrix(W, g: float = 1.0, *, zero_nonpositive_diagonal: bool = True) -> np.ndarray:
    """``g|W| - I`` with the diagonal rule of Theorem 1 (Metzler by construction).

    ``|W|`` is the element-wise absolute value, except that a diagonal entry
    ``W_ii <= 0`` is set to 0 ("may be set to zero to reduce conservatism",
    proof of Theorem 1, appendix C.2).
    """
    W = _square(W)
    g = check_positive("g", g)
    A = np.abs(W)
    if zero_nonpositive_diagonal:
        d = np.diag(W)
        A[np.diag_indices_from(A)] = np.where(d > 0, d, 0.0)
    return g * A - np.eye(W.shape[0])


def theorem1_abscissa(W, g: float = 1.0, **kw) -> float:
    """Spectral abscissa (largest real part of an eigenvalue) of ``g|W| - I``.

    Theorem 1 holds iff this is negative: ``g|W| - I`` is Metzler, and a
    Metzler matrix is Hurwitz iff it is diagonally stable (Narendra and
    Shorten 2010, quoted after the proof in C.2).
    """
    return float(np.linalg.eigvals(theorem1_matrix(W, g, **kw)).real.max())


def _scaled_sym(A, p):
    """``P^{-1/2} (P A + A^T P) P^{-1/2}`` for diagonal ``P = diag(p)``."""
    S = p[:, None] * A
    S = S + S.T
    s = 1.0 / np.sqrt(p)
    return s[:, None] * S * s[None, :]


def theorem1_rate(W, p, g: float = 1.0, **kw) -> float:
    """Rate ``lambda`` that Theorem 1's proof certifies in the metric ``diag(p)``.

    The proof bounds ``dV/dt <= |dx|^T (P A + A^T P) |dx|`` with
    ``A = g|W| - I``, ``V = dx^T P dx``; so ``V`` decays like
    ``exp(-2 lambda t / tau)`` (the distance like ``exp(-lambda t / tau)``) with
    ``2 lambda = lambda_min(-P^{-1/2}(P A + A^T P) P^{-1/2})``. Positive iff
    ``diag(p)`` is a Theorem-1 metric. Computed in the congruence-scaled form,
    which stays accurate when ``p`` spans many orders of magnitude.
    """
    p = np.asarray(p, dtype=float)
    A = theorem1_matrix(W, g, **kw)
    if p.shape != (A.shape[0],) or not np.all(p > 0):
        raise ValueError(f"p must be a positive vector of length {A.shape[0]} (the metric's diagonal)")
    return float(-np.linalg.eigvalsh(_scaled_sym(A, p)).max() / 2)


def metzler_diagonal_metric(A, shrink: float = 0.0) -> np.ndarray:
    """A diagonal ``P`` with ``P A + A^T P < 0`` for a Metzler Hurwitz ``A``.

    The explicit construction behind the Metzler/Hurwitz equivalence: with
    ``v = -A^{-1} 1 > 0`` and ``w = -A^{-T} 1 > 0``, ``P = diag(w / v)`` makes
    ``P A + A^T P`` a symmetric Metzler matrix with ``(P A + A^T P) v =
    P A v + A^T w < 0``, hence negative definite. ``shrink`` in ``[0, 1)``
    applies the construction to ``A + shrink * |alpha(A)| I`` instead, which
    certifies a rate of at least ``shrink * |alpha(A)|`` at the price of a
    worse-conditioned ``P``. Returns the diagonal of ``P``, normalised to
    geometric mean 1.
    """
    A = _square(A, "A")
    off = A - np.diag(np.diag(A))
    if (off < 0).any():
        raise ValueError("A must be Metzler (non-negative off-diagonal entries)")
    if not 0.0 <= shrink < 1.0:
        raise ValueError(f"shrink must be in [0, 1), got {shrink}")
    alpha = float(np.linalg.eigvals(A).real.max())
    if alpha >= 0:
        raise ValueError(f"A must be Hurwitz (its spectral abscissa is {alpha:.4g} >= 0)")
    As = A + shrink * (-alpha) * np.eye(A.shape[0])
    one = np.ones(A.shape[0])
    v = np.linalg.solve(-As, one)
    w = np.linalg.solve(-As.T, one)
    if not (np.all(v > 0) and np.all(w > 0) and np.all(np.isfinite(v)) and np.all(np.isfinite(w))):
        raise np.linalg.LinAlgError("metzler_diagonal_metric: A is too ill-conditioned for the construction")
    logp = np.log(w) - np.log(v)
    return np.exp(logp - logp.mean())


def lyapunov_metric(A, Q=None) -> np.ndarray:
    """The solution ``M`` of ``A^T M + M A = -Q`` (SciPy's Lyapunov solver).

    ``Q`` defaults to ``I``. This is the metric that appendix D.1.1 obtained by
    integrating ``exp(A^T t) Q exp(A t)`` from 0 to infinity with
    ``scipy.integrate.quad``; the Bartels-Stewart solver returns the same
    integral without quadrature. ``A`` must be Hurwitz (otherwise the integral
    diverges and ``M`` is not positive definite).
    """
    A = _square(A, "A")
    n = A.shape[0]
    Q = np.eye(n) if Q is None else _square(Q, "Q")
    if Q.shape != A.shape:
        raise ValueError(f"Q must have shape {A.shape}, got {Q.shape}")
    alpha = float(np.linalg.eigvals(A).real.max())
    if alpha >= 0:
        raise ValueError(
            f"A must be Hurwitz for the Lyapunov equation to give a metric (spectral abscissa {alpha:.4g})")
    M = scipy.linalg.solve_continuous_lyapunov(A.T, -Q)
    return (M + M.T) / 2


def theorem1_module_metric(W, g: float = 1.0, method: str = "explicit"):
    """A diagonal Theorem-1 metric for a module: ``(p, method_used, rate)``.

    ``method="explicit"`` uses :func:`metzler_diagonal_metric` on
    ``A = g|W| - I``. ``method="lyapunov"`` follows appendix D.1.1: solve
    ``A^T M + M A = -I`` and keep only the diagonal of ``M``. That diagonal is
    *not* always a Theorem-1 metric (we find it fails for most modules drawn
    with the paper's best sparse settings); when it fails the explicit
    construction is used instead and ``method_used`` says so.
    """
    A = theorem1_matrix(W, g)
    if method not in ("explicit", "lyapunov"):
        raise ValueError(f"method must be 'explicit' or 'lyapunov', got {method!r}")
    if method == "lyapunov":
        p = np.diag(lyapunov_metric(A)).copy()
        p = np.exp(np.log(p) - np.log(p).mean())
        rate = theorem1_rate(W, p, g)
        if rate > 0:
            return p, "lyapunov", rate
        method = "explicit (lyapunov diagonal failed Theorem 1)"
    p = metzler_diagonal_metric(A)
    return p, method, theorem1_rate(W, p, g)


def _rng(rng):
    if rng is None or isinstance(rng, (int, np.integer)):
        return np.random.default_rng(rng)
    if isinstance(rng, np.random.Generator):
        return rng
    raise TypeError("rng must be None, an int seed or a numpy.random.Generator")


def sample_theorem1_module(size: int, density: float, scalar: float, *, post_scalar: float = 1.0,
                           g: float = 1.0, rng=None, max_tries: int = 100_000):
    """Draw a random module meeting Theorem 1 by rejection (appendix D.1.1, D.2.2).

    Each candidate is ``scipy.sparse.random(size, size, density)`` with
    non-zero entries uniform in ``[-scalar, scalar]``, its diagonal zeroed; it
    is kept when ``g|W| - I`` is Hurwitz (Theorem 1). The kept matrix is then
    multiplied by ``post_scalar`` (the "post-select scalar" of D.2.2), which
    must be in ``(0, 1]`` so that Theorem 1 still holds. Returns
    ``(W, tries)``: the number of candidates drawn, so ``1 / tries`` estimates
    the acceptance rate.
    """
    size = int(size)
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    if not 0.0 < density <= 1.0:
        raise ValueError(f"density must be in (0, 1], got {density}")
    scalar = check_positive("scalar", scalar)
    post_scalar = check_positive("post_scalar", post_scalar)
    if post_scalar > 1.0:
        raise ValueError(f"post_scalar must be in (0, 1] to preserve Theorem 1 (D.2.2), got {post_scalar}")
    g = check_positive("g", g)
    rng = _rng(rng)
    eye = np.eye(size)
    for tries in range(1, int(max_tries) + 1):
        W = scipy.sparse.random(size, size, density=density, random_state=rng,
                                data_rvs=lambda k: rng.uniform(-scalar, scalar, k)).toarray()
        np.fill_diagonal(W, 0.0)
        if np.linalg.eigvals(g * np.abs(W) - eye).real.max() < 0:
            return W * post_scalar, tries
    raise RuntimeError(
        f"no {size}x{size} module met Theorem 1 in {max_tries} tries "
        f"(density={density}, scalar={scalar}); lower them or raise max_tries")


# --------------------------------------------------------------------------- #
# SVD modules, equation (19)
# --------------------------------------------------------------------------- #
def svd_module_weight(log_phi, gen_u, gen_v, sigma_raw, g: float = 1.0, sigma_eps: float = 1e-3):
    """``W = Phi^{-1} U Sigma V^T Phi`` (equation 19) and its metric ``Phi^2``.

    - ``U = exp(A_u - A_u^T)``, ``V = exp(A_v - A_v^T)``: the matrix exponential
      of a skew-symmetric matrix is orthogonal (Lezcano-Casado and
      Martinez-Rubio 2019), via ``torch.linalg.matrix_exp``.
    - ``Sigma = exp(-sigma_raw^2 - sigma_eps) / g``, in ``(0, 1/g)`` as required,
      as in the paper's code (appendix E.3) with the ``1/g`` made explicit.
    - ``Phi = exp(log_phi)``: positive, hence nonsingular. (The E.3 code stores
      ``Phi`` itself; the exponential keeps it away from 0 during training.)

    Then ``Phi W Phi^{-1} = U Sigma V^T`` has norm ``max Sigma < 1/g``, which is
    Theorem 5 with ``P = Phi^2``. (The E.3 code builds the mirror image,
    ``Phi U Sigma V^T Phi^{-1}`` with metric ``Phi^{-2}``; both are valid.)
    Returns ``(W, metric_diag)``.
    """
    U = torch.linalg.matrix_exp(gen_u - gen_u.transpose(-1, -2))
    V = torch.linalg.matrix_exp(gen_v - gen_v.transpose(-1, -2))
    S = torch.exp(-sigma_raw ** 2 - sigma_eps) / g
    phi = torch.exp(log_phi)
    core = (U * S.unsqueeze(-2)) @ V.transpose(-1, -2)
    W = core * phi.unsqueeze(-2) / phi.unsqueeze(-1)
    return W, phi ** 2


# --------------------------------------------------------------------------- #
# parameter count, appendix D.3.1
# --------------------------------------------------------------------------- #
def sparse_combo_net_num_params(num_modules: int, module_size: int, input_size: int, output_size: int) -> int:
    """Trainable parameters of an ``M x C`` Sparse Combo Net (appendix D.3.1).

    ``(n^2 - M C^2) / 2 + i n + n o + n + o`` with ``n = M C``: the
    lower-triangular off-diagonal blocks of ``B``, the input layer's weights
    and biases, the output layer's weights and biases. For ``16 x 32`` this is
    129034 with ``i = 1, o = 10`` (MNIST tasks) and 130058 with ``i = 3``
    (sequential CIFAR10), the appendix's counts.
    """
    M, C, i, o = (int(v) for v in (num_modules, module_size, input_size, output_size))
    if min(M, C, i, o) < 1:
        raise ValueError("num_modules, module_size, input_size and output_size must be >= 1")
    n = M * C
    return (n * n - M * C * C) // 2 + i * n + n * o + n + o


# --------------------------------------------------------------------------- #
# the networks
# --------------------------------------------------------------------------- #
