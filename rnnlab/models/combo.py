"""Sparse Combo Net and SVD Combo Net: stable "RNNs of RNNs".

Kozachkov, Ennis, Slotine, "RNNs of RNNs: Recursive Construction of Stable
Assemblies of Recurrent Neural Networks", NeurIPS 2022 (arXiv 2106.08928).

Each network is ``p`` modules (subnetwork RNNs) combined with linear feedback,
equation (2) of the paper::

    tau dx/dt = -x + W phi(x) + L x + u(t),       u(t) = W_in input(t) + b_in

with ``W = BlockDiag(W_1, ..., W_p)`` and the feedback of equation (3),
``L = B - M^{-1} B^T M``, where ``M = BlockDiag(M_1, ..., M_p)`` holds the
modules' contraction metrics. Then ``M L + L^T M = 0`` (Corollary 2 with
``C = 0``) and the assembly contracts at the slowest module's rate
(Corollary 1).

- :class:`SparseComboNet` (appendix D): fixed sparse modules drawn at random
  and kept only when they meet Theorem 1; only ``B``, the input and the
  output layers train.
- :class:`SVDComboNet` (appendix E): modules ``W_i = Phi_i^{-1} U_i Sigma_i
  V_i^T Phi_i`` (equation 19), trained; contracting in the diagonal metric
  ``Phi_i^2`` (Theorem 5).

Discretisation: explicit Euler, as in the paper's code (appendix E.3),
``x <- x + alpha * f(x)`` with ``alpha = dt / tau``. The seed's code takes
``alpha`` as an argument and does not state its value; the default here,
``alpha = 0.1``, is this package's choice.

``form="x"`` integrates equation (2) above (the paper's main text);
``form="y"`` integrates the firing-rate form that the appendix E.3 code
implements, ``tau dy/dt = -y + phi(W y + u) + L y``. Both contract in the
same diagonal metrics (Theorems 1 and 5 bound ``P W D`` and ``P D W`` alike).

This module may not import :mod:`rnnlab.theory` (models sit below theory), so
the parameterisations it needs live here, each a small function naming the
equation it implements; :mod:`rnnlab.theory` re-exports them and wraps them
with certificates.
"""
from __future__ import annotations

import math
import warnings
from typing import Sequence

import numpy as np
import scipy.linalg
import scipy.sparse
import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = [
    "SparseComboNet",
    "SVDComboNet",
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
    "ACTIVATION_SLOPES",
]

#: Activations available to the combo nets, with their slope bound ``g``.
ACTIVATION_SLOPES = {"relu": 1.0, "tanh": 1.0, "softplus": 1.0, "sigmoid": 0.25}
_TORCH_ACT = {"relu": F.relu, "tanh": torch.tanh, "softplus": F.softplus, "sigmoid": torch.sigmoid}


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


def _positive(x, name):
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(x).__name__}")
    if not (x > 0 and math.isfinite(x)):
        raise ValueError(f"{name} must be a finite number > 0, got {x}")
    return float(x)


def _sizes(hidden_sizes, name="hidden_sizes"):
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
    sizes = _sizes(sizes, "sizes")
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
    g = _positive(g, "g")
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
    scalar = _positive(scalar, "scalar")
    post_scalar = _positive(post_scalar, "post_scalar")
    if post_scalar > 1.0:
        raise ValueError(f"post_scalar must be in (0, 1] to preserve Theorem 1 (D.2.2), got {post_scalar}")
    g = _positive(g, "g")
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
class _ComboNet(nn.Module):
    """Shared Euler integration of equation (2) for both combo nets.

    ``constraint="on"`` (default) is the paper's feedback ``L = B - M^{-1} B^T M``; ``constraint="off"`` is
    its control (appendix D.3, E.2): ``L = B`` (masked like ``B``), with no certificate by construction.
    Then :meth:`verify_contraction` measures the actual ``L``: ``M`` still certifies the net while the
    symmetric part of ``M^{1/2} L M^{-1/2}`` stays below the modules' rate (a small ``B``). With
    ``lower_only=True`` an unconstrained ``L`` is block lower-triangular, a cascade of contracting modules,
    which contracts in *some* metric (not ``M``); ``lower_only=False`` removes that too.
    """

    def __init__(self, input_size, hidden_sizes, output_size, *, activation, alpha, lower_only,
                 form, readout, b_std, dtype, constraint="on"):
        super().__init__()
        if constraint not in ("on", "off"):
            raise ValueError(f"constraint must be 'on' (L = B - M^-1 B^T M) or 'off' (L = B), got {constraint!r}")
        self.constraint = constraint
        if isinstance(input_size, bool) or not isinstance(input_size, (int, np.integer)) or input_size < 1:
            raise ValueError(f"input_size must be a positive int, got {input_size!r}")
        if output_size is not None and (not isinstance(output_size, (int, np.integer)) or output_size < 1):
            raise ValueError(f"output_size must be a positive int or None, got {output_size!r}")
        if activation not in _TORCH_ACT:
            raise ValueError(f"activation must be one of {sorted(_TORCH_ACT)}, got {activation!r}")
        if form not in ("x", "y"):
            raise ValueError(f"form must be 'x' (equation 2) or 'y' (appendix E.3 code), got {form!r}")
        if readout not in ("last", "all"):
            raise ValueError(f"readout must be 'last' or 'all', got {readout!r}")
        alpha = _positive(alpha, "alpha")
        if alpha > 1:
            raise ValueError(f"alpha (= dt / tau) must be in (0, 1], got {alpha}")
        self.input_size = int(input_size)
        self.hidden_sizes = _sizes(hidden_sizes)
        self.hidden_size = int(sum(self.hidden_sizes))
        self.output_size = None if output_size is None else int(output_size)
        self.activation = activation
        self.g = ACTIVATION_SLOPES[activation]
        self.alpha = alpha
        self.form = form
        self.readout = readout
        self.lower_only = bool(lower_only)
        n = self.hidden_size
        std = 1.0 / math.sqrt(n)
        self.weight_ih = nn.Parameter(torch.randn(n, self.input_size, dtype=dtype) * std)
        self.bias_ih = nn.Parameter(torch.randn(n, dtype=dtype) * std)
        if self.output_size is not None:
            self.weight_ho = nn.Parameter(torch.randn(self.output_size, n, dtype=dtype) * std)
            self.bias_ho = nn.Parameter(torch.randn(self.output_size, dtype=dtype) * std)
        # B is stored as its free entries only, so the parameter count is exact
        mask = block_mask(self.hidden_sizes, lower_only=self.lower_only)
        rows, cols = np.nonzero(mask)
        self.register_buffer("_b_rows", torch.as_tensor(rows, dtype=torch.long), persistent=False)
        self.register_buffer("_b_cols", torch.as_tensor(cols, dtype=torch.long), persistent=False)
        if b_std is None:
            b_std = 1.0 / math.sqrt(float(np.mean(self.hidden_sizes)))  # as in the E.3 code
        if not (b_std >= 0 and math.isfinite(b_std)):
            raise ValueError(f"b_std must be >= 0 or None, got {b_std}")
        self.b_free = nn.Parameter(torch.randn(len(rows), dtype=dtype) * b_std)

    # -- pieces of the dynamics ------------------------------------------------
    def B(self) -> torch.Tensor:
        """The masked ``B`` of equation (3), as a dense ``(n, n)`` matrix."""
        n = self.hidden_size
        B = torch.zeros(n, n, dtype=self.b_free.dtype, device=self.b_free.device)
        return B.index_put((self._b_rows, self._b_cols), self.b_free)

    def metric_diag(self) -> torch.Tensor:  # pragma: no cover - overridden
        raise NotImplementedError

    def recurrent_weight(self) -> torch.Tensor:  # pragma: no cover - overridden
        raise NotImplementedError

    def feedback(self, dtype=None) -> torch.Tensor:
        """``L = B - M^{-1} B^T M`` (equation 3) with the block-diagonal metric; ``B`` itself when
        ``constraint="off"``. ``dtype`` (default: the parameters') is the type it is computed in."""
        dtype = self.b_free.dtype if dtype is None else dtype
        B = self.B().to(dtype)
        if self.constraint == "off":
            return B
        return feedback_matrix(B, self.metric_diag().to(dtype))

    def module_blocks(self):
        """The modules' weights stacked ``(p, s, s)`` when all modules have one size ``s``, else None.

        The forward pass multiplies by the block-diagonal ``W`` as ``p`` small products (a batched matmul),
        ``p`` times fewer operations than the dense ``(n, n)`` product.
        """
        if len(set(self.hidden_sizes)) != 1:
            return None
        W = self.recurrent_weight()
        return torch.stack([W[sl, sl] for sl in self._blocks()])

    def _recurrent_product(self):
        """``x -> x W^T`` for ``x (B, n)``: batched over the modules when they have one size."""
        blocks = self.module_blocks()
        if blocks is None:
            Wt = self.recurrent_weight().T
            return lambda x: x @ Wt
        p, s = blocks.shape[0], blocks.shape[1]
        Wt = blocks.transpose(1, 2)  # (p, s, s): module k maps x_k -> x_k W_k^T

        def product(x):
            return torch.bmm(x.reshape(-1, p, s).transpose(0, 1), Wt).transpose(0, 1).reshape(x.shape)
        return product

    def forward(self, input: torch.Tensor, h0: torch.Tensor | None = None):
        """Run the network over a batch of sequences.

        ``input`` is ``(B, T, input_size)`` (batch first); ``h0`` an optional
        ``(B, hidden_size)`` initial state (zeros by default). Returns
        ``(output, state)``: ``state`` is the final hidden state ``(B, n)``;
        ``output`` is the linear readout of the final state ``(B,
        output_size)`` (``readout="last"``, the paper's sequence
        classification) or of every state ``(B, T, output_size)``
        (``readout="all"``); without an output layer it is the sequence of
        states ``(B, T, n)``.
        """
        if not isinstance(input, torch.Tensor):
            raise TypeError("input must be a torch.Tensor of shape (B, T, input_size)")
        if input.dim() != 3 or input.shape[-1] != self.input_size:
            raise ValueError(
                f"input must have shape (B, T, {self.input_size}), got {tuple(input.shape)}")
        Bsz, T, _ = input.shape
        n = self.hidden_size
        if h0 is None:
            h = input.new_zeros(Bsz, n)
        else:
            if tuple(h0.shape) != (Bsz, n):
                raise ValueError(f"h0 must have shape ({Bsz}, {n}), got {tuple(h0.shape)}")
            h = h0
        Wx = self._recurrent_product()
        L = self.feedback().to(input.dtype)
        phi = _TORCH_ACT[self.activation]
        # unbind, not u[:, t]: the backward of T selects would build T zero tensors of u's full size (O(T^2))
        us = (input @ self.weight_ih.T + self.bias_ih).unbind(1)
        keep = self.output_size is None or self.readout == "all"
        states = []
        for t in range(T):
            if self.form == "x":
                f = -h + Wx(phi(h)) + h @ L.T + us[t]
            else:
                f = -h + phi(Wx(h) + us[t]) + h @ L.T
            h = h + self.alpha * f
            if keep:
                states.append(h)
        if self.output_size is None:
            return torch.stack(states, dim=1), h
        if self.readout == "all":
            return torch.stack(states, dim=1) @ self.weight_ho.T + self.bias_ho, h
        return h @ self.weight_ho.T + self.bias_ho, h

    # -- the certificate -------------------------------------------------------
    @torch.no_grad()
    def _skew_residual(self) -> float:
        m = self.metric_diag().double()
        L = self.feedback(torch.float64)
        R = m[:, None] * L + (m[:, None] * L).T
        scale = float((m[:, None] * L).abs().max()) or 1.0
        return float(R.abs().max()) / scale

    def verify_contraction(self) -> dict:
        """Check the certificate of the whole network; returns a dict.

        ``module_rates``: each module's certified rate in its metric;
        ``rate``: their minimum, the assembly's rate (Corollary 1, ``tau = 1``);
        ``skew_residual``: ``max|M L + L^T M| / max|M L|`` (round-off, ~1e-16,
        with the constraint; of order 1 without it);
        ``feedback_sym_max``: ``mu``, the largest eigenvalue of the symmetric part
        of ``M^{1/2} L M^{-1/2}`` (0 up to round-off with the constraint);
        ``rate_with_feedback``: ``rate - max(mu, 0)``, what the metric ``M``
        still certifies for the assembly when ``L`` is not skew in ``M``;
        ``holds``: all module rates and ``rate_with_feedback`` positive.

        The certificate is for the continuous-time system. For the Euler map,
        ``euler_alpha_bound = 2 lambda' / K^2`` with ``lambda'`` the
        ``rate_with_feedback`` and ``K = 1 + g ||M^{1/2} W M^{-1/2}|| +
        ||M^{1/2} L M^{-1/2}||`` is a step size below which every step provably
        contracts in ``M`` (``||I + alpha F||^2 <= 1 - 2 alpha lambda' + alpha^2
        K^2``); ``euler_contracting`` says whether ``alpha`` is below it. It is
        sufficient, not necessary, and usually far smaller than the step sizes
        that work in practice (:func:`rnnlab.theory.combo_net_report` gives
        sharper discrete-time checks).
        """
        rates = self.module_rates()
        skew = self._skew_residual()
        lam = float(min(rates))
        with torch.no_grad():
            m = self.metric_diag().detach().double()
            s = m.sqrt()
            W = self.recurrent_weight().detach().double()
            L = self.feedback(torch.float64).detach()
            S = s[:, None] * L / s[None, :]
            mu = 0.0 if self.constraint == "on" else float(torch.linalg.eigvalsh((S + S.T) / 2).max())
            K = (1.0 + self.g * float(torch.linalg.matrix_norm(s[:, None] * W / s[None, :], ord=2))
                 + float(torch.linalg.matrix_norm(S, ord=2)))
        lam_fb = lam - max(mu, 0.0)
        holds = bool(lam > 0 and lam_fb > 0 and (self.constraint == "off" or skew < 1e-10))
        bound = 2 * lam_fb / K ** 2 if lam_fb > 0 else 0.0
        return {"holds": holds, "rate": lam, "module_rates": rates, "skew_residual": skew,
                "feedback_sym_max": mu, "rate_with_feedback": lam_fb, "constraint": self.constraint,
                "metric_diag": m.cpu().numpy(), "euler_alpha_bound": bound,
                "euler_contracting": bool(self.alpha <= bound)}

    def _check(self):
        info = self.verify_contraction()
        if self.constraint == "on" and not info["holds"]:
            raise RuntimeError(f"{type(self).__name__}: contraction could not be verified: {info}")
        return info

    def module_rates(self) -> list:  # pragma: no cover - overridden
        raise NotImplementedError

    def _blocks(self):
        edges = np.concatenate([[0], np.cumsum(self.hidden_sizes)])
        return [slice(int(edges[k]), int(edges[k + 1])) for k in range(len(self.hidden_sizes))]


class SparseComboNet(_ComboNet):
    """Sparse Combo Net (appendix D): fixed Theorem-1 modules, trained feedback.

    Parameters
    ----------
    input_size, hidden_sizes, output_size
        ``hidden_sizes`` lists the module sizes (``[32] * 16`` for the paper's
        16 x 32 network). ``output_size=None`` drops the output layer.
    density, scalar, post_scalar
        Module sampling (D.1.1, D.2.2): non-zero density, entries uniform in
        ``[-scalar, scalar]`` before selection, multiplied by ``post_scalar``
        after. The defaults (26.5 %, 0.27, 1) are D.2.1's settings for 32-unit
        modules (about 1-2 % acceptance). The paper's best settings (3.3 %, 30,
        0.2) also give Theorem-1 modules, but every valid diagonal metric of
        such a module is ill-conditioned (along a path of links ``w_1 .. w_k``
        every valid diagonal metric has ``p_first / p_last > (g^k w_1 .. w_k)^2 / 4``;
        the chapter measures a median of 1e5.8 over 30 such modules), so
        ``L = B - M^{-1} B^T M`` gets entries of that size and the Euler step
        ``alpha`` is far above its stability limit: the forward pass blows up
        (a 16 x 32 net overflows after 12 steps in float32 and 98 in float64;
        a wider type only delays it). A warning is raised when the metric's
        condition number exceeds 1e6.
    activation, alpha, form, readout, lower_only, constraint
        ``alpha = dt / tau`` is the Euler step (see the module docstring);
        ``lower_only`` trains only the lower-triangular blocks of ``B`` (D.1.1);
        ``constraint="off"`` is the control ``L = B`` (see :class:`_ComboNet`).
    b_std
        ``B`` starts as ``N(0, b_std^2)``; default 0.01. (The E.3 code uses
        ``1 / sqrt(mean size)``, pass ``b_std=None`` for it: for a 16 x 32
        network the initial ``-I + W + L`` then has eigenvalues far enough out
        that explicit Euler needs ``alpha`` below about 0.004 (sparse) or 0.03
        (SVD) to stay bounded, below the default ``alpha = 0.1``.)
    metric
        ``"explicit"`` (default) or ``"lyapunov"`` (D.1.1's diagonal of the
        Lyapunov solution, replaced by the explicit metric where it fails
        Theorem 1; :attr:`metric_sources` records which was used).
    seed
        Seed of the module sampler (torch's global RNG initialises the trained
        weights).

    The modules ``W`` and their metrics are buffers; contraction is verified at
    construction (:meth:`verify_contraction`), and ``M L + L^T M = 0`` holds by
    construction for every value of ``B``. :attr:`acceptance_rate` reports the
    rejection sampler's acceptance rate.
    """

    def __init__(self, input_size, hidden_sizes, output_size=None, *, density=0.265, scalar=0.27,
                 post_scalar=1.0, activation="relu", alpha=0.1, lower_only=True, form="x", readout="last",
                 b_std=0.01, metric="explicit", seed=None, max_tries=100_000, constraint="on",
                 dtype=torch.float32):
        super().__init__(input_size, hidden_sizes, output_size, activation=activation, alpha=alpha,
                         lower_only=lower_only, form=form, readout=readout, b_std=b_std, dtype=dtype,
                         constraint=constraint)
        rng = np.random.default_rng(seed)
        n = self.hidden_size
        W = np.zeros((n, n))
        p = np.ones(n)
        tries, sources = 0, []
        for sl, size in zip(self._blocks(), self.hidden_sizes):
            Wk, t = sample_theorem1_module(size, density, scalar, post_scalar=post_scalar, g=self.g,
                                           rng=rng, max_tries=max_tries)
            pk, src, _ = theorem1_module_metric(Wk, self.g, method=metric)
            W[sl, sl] = Wk
            p[sl] = pk
            tries += t
            sources.append(src)
        self.acceptance_rate = len(self.hidden_sizes) / tries
        self.metric_sources = sources
        self.register_buffer("weight_hh", torch.as_tensor(W, dtype=dtype))
        # the metric is kept in float64: it can span many orders of magnitude
        self.register_buffer("metric", torch.as_tensor(p, dtype=torch.float64))
        self.certificate = self._check()
        cond = float(p.max() / p.min())
        if cond > 1e6:
            warnings.warn(f"SparseComboNet: the modules' metric has condition number {cond:.2g}, so "
                          f"L = B - M^-1 B^T M has entries up to ~{cond:.1g} |B|; the Euler steps will "
                          f"likely overflow (denser, smaller modules give better-conditioned metrics)",
                          RuntimeWarning, stacklevel=2)

    def recurrent_weight(self):
        return self.weight_hh

    def metric_diag(self):
        return self.metric

    def module_rates(self):
        W = self.weight_hh.double().cpu().numpy()
        p = self.metric.cpu().numpy()
        return [theorem1_rate(W[sl, sl], p[sl], self.g) for sl in self._blocks()]


class SVDComboNet(_ComboNet):
    """SVD Combo Net (appendix E): trained modules ``Phi^{-1} U Sigma V^T Phi``.

    Each module's weight is :func:`svd_module_weight` (equation 19) of its own
    parameters (``log_phi``, ``gen_u``, ``gen_v``, ``sigma_raw``), so every value
    of the parameters is contracting in the metric ``BlockDiag(Phi_i^2)``
    (Theorem 5), and so is the assembly with ``L = B - M^{-1} B^T M``. The
    check at construction (:meth:`verify_contraction`) recomputes the rates
    ``1 - g ||Phi W Phi^{-1}||_2`` numerically. ``activation``, ``alpha``,
    ``form``, ``readout``, ``lower_only``, ``b_std`` and ``constraint`` are as for :class:`SparseComboNet`;
    ``form="y"`` reproduces the update of the paper's code (E.3).

    Initialisation: ``sigma_raw = 1`` as in E.3, ``B ~ N(0, b_std^2)``;
    ``log_phi = 0`` (``Phi = I``); the skew generators ``~ N(0, 1/size)`` (E.3
    starts them at the identity, whose skew part is 0, i.e. ``U = V = I``).
    """

    def __init__(self, input_size, hidden_sizes, output_size=None, *, activation="relu", alpha=0.1,
                 lower_only=True, form="x", readout="last", b_std=0.01, constraint="on",
                 dtype=torch.float32):
        super().__init__(input_size, hidden_sizes, output_size, activation=activation, alpha=alpha,
                         lower_only=lower_only, form=form, readout=readout, b_std=b_std, dtype=dtype,
                         constraint=constraint)
        self.log_phi = nn.ParameterList()
        self.gen_u = nn.ParameterList()
        self.gen_v = nn.ParameterList()
        self.sigma_raw = nn.ParameterList()
        for size in self.hidden_sizes:
            self.log_phi.append(nn.Parameter(torch.zeros(size, dtype=dtype)))
            self.gen_u.append(nn.Parameter(torch.randn(size, size, dtype=dtype) / math.sqrt(size)))
            self.gen_v.append(nn.Parameter(torch.randn(size, size, dtype=dtype) / math.sqrt(size)))
            self.sigma_raw.append(nn.Parameter(torch.ones(size, dtype=dtype)))
        self.certificate = self._check()

    def modules_weights(self):
        """Per-module ``(W_i, Phi_i^2)`` from equation (19)."""
        return [svd_module_weight(lp, gu, gv, sr, self.g)
                for lp, gu, gv, sr in zip(self.log_phi, self.gen_u, self.gen_v, self.sigma_raw)]

    def recurrent_weight(self):
        return torch.block_diag(*[W for W, _ in self.modules_weights()])

    def metric_diag(self):
        return torch.cat([m for _, m in self.modules_weights()])

    @torch.no_grad()
    def module_rates(self):
        rates = []
        for W, m in self.modules_weights():
            W, s = W.double(), m.double().sqrt()
            norm = torch.linalg.matrix_norm(s[:, None] * W / s[None, :], ord=2)
            rates.append(float(1.0 - self.g * norm))
        return rates
