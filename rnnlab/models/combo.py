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
the parameterisations it needs live beside it, in :mod:`.combo_modules` (the
modules and their metrics, each a small function naming the equation it
implements; re-exported here); :mod:`rnnlab.theory` re-exports them and wraps
them with certificates. :func:`euler_feedback_limit` and the nets'
``euler_margin`` keep the Euler map, not only the flow, certified.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .._validate import check_int, check_optional_int, check_positive
from .common import resolve_generator, seeded_init
from . import combo_modules as _combo_modules
from .combo_modules import (  # the modules and their metrics (page 4 of the chapter), re-exported
    block_mask,
    check_module_sizes,
    feedback_matrix,
    theorem1_matrix,
    theorem1_abscissa,
    theorem1_rate,
    metzler_diagonal_metric,
    lyapunov_metric,
    theorem1_module_metric,
    sample_theorem1_module,
    svd_module_weight,
    sparse_combo_net_num_params,
)

__all__ = [
    "SparseComboNet",
    "SVDComboNet",
    "euler_feedback_limit",
    "ACTIVATION_SLOPES",
    *_combo_modules.__all__,
]

#: Activations available to the combo nets, with their slope bound ``g``.
ACTIVATION_SLOPES = {"relu": 1.0, "tanh": 1.0, "softplus": 1.0, "sigmoid": 0.25}
_TORCH_ACT = {"relu": F.relu, "tanh": torch.tanh, "softplus": F.softplus, "sigmoid": torch.sigmoid}



def euler_feedback_limit(alpha: float, g: float, modules_norm: float, margin: float = 0.0) -> float:
    """The largest ``||M^{1/2} L M^{-1/2}||`` that keeps one Euler step a contraction in ``M``.

    With ``L`` skew-symmetric in the metric (``M L + L^T M = 0``, equation 3) and ``K =
    ||M^{1/2} W M^{-1/2}||`` (``modules_norm``), every Euler step's Jacobian ``I + alpha (-I + W D + L)``,
    ``0 <= D <= g``, has norm in ``M`` at most ``sqrt((1 - alpha)^2 + alpha^2 ||L_M||^2) + alpha g K``
    (``(1 - alpha) I + alpha L_M`` is normal). This returns the ``omega`` with

        sqrt((1 - alpha)^2 + alpha^2 omega^2) + alpha g K = 1 - margin,

    so that ``||L_M|| <= omega`` makes the Euler map contract in ``M`` by ``1 - margin`` per step, for every
    slope pattern. Raises ``ValueError`` when no feedback at all is allowed (the modules alone use up the
    margin at this ``alpha``).
    """
    alpha, g, K, margin = float(alpha), float(g), float(modules_norm), float(margin)
    if not 0 <= margin < 1:
        raise ValueError(f"euler_margin must be in [0, 1), got {margin}")
    room = (1.0 - margin - alpha * g * K) ** 2 - (1.0 - alpha) ** 2
    if 1.0 - margin - alpha * g * K <= 1.0 - alpha or room <= 0:
        raise ValueError(f"no feedback keeps the Euler step below 1 - margin = {1 - margin:g} at alpha = {alpha:g}: "
                         f"the modules alone give sqrt((1 - alpha)^2) + alpha g ||M^1/2 W M^-1/2|| = "
                         f"{1 - alpha + alpha * g * K:.4g} (lower alpha or margin)")
    return math.sqrt(room) / alpha


class _ComboNet(nn.Module):
    """Shared Euler integration of equation (2) for both combo nets.

    ``constraint="on"`` (default) is the paper's feedback ``L = B - M^{-1} B^T M``; ``constraint="off"`` is
    its control (appendix D.3, E.2): ``L = B`` (masked like ``B``), with no certificate by construction.
    Then :meth:`verify_contraction` measures the actual ``L``: ``M`` still certifies the net while the
    symmetric part of ``M^{1/2} L M^{-1/2}`` stays below the modules' rate (a small ``B``). With
    ``lower_only=True`` an unconstrained ``L`` is block lower-triangular, a cascade of contracting modules,
    which contracts in *some* metric (not ``M``); ``lower_only=False`` removes that too.

    ``euler_margin`` (default None: the paper's net) keeps the *discrete-time* certificate: the feedback
    actually used is ``L * min(1, omega / ||M^{1/2} L M^{-1/2}||)`` with ``omega`` from
    :func:`euler_feedback_limit`, so that every Euler step contracts in ``M`` by at least ``1 - euler_margin``
    for every slope pattern and every value of the parameters (a differentiable rescaling, not a projection
    after the step). It needs ``constraint="on"``.
    """

    def __init__(self, input_size, hidden_sizes, output_size, *, activation, alpha, lower_only,
                 form, readout, b_std, dtype, constraint="on", euler_margin=None):
        super().__init__()
        if constraint not in ("on", "off"):
            raise ValueError(f"constraint must be 'on' (L = B - M^-1 B^T M) or 'off' (L = B), got {constraint!r}")
        if euler_margin is not None:
            if constraint != "on":
                raise ValueError("euler_margin needs constraint='on' (L skew-symmetric in the metric)")
            if not 0 <= float(euler_margin) < 1:
                raise ValueError(f"euler_margin must be in [0, 1) or None, got {euler_margin}")
            euler_margin = float(euler_margin)
        self.constraint = constraint
        self.euler_margin = euler_margin
        input_size = check_int("input_size", input_size, minimum=1)
        output_size = check_optional_int("output_size", output_size, minimum=1)
        if activation not in _TORCH_ACT:
            raise ValueError(f"activation must be one of {sorted(_TORCH_ACT)}, got {activation!r}")
        if form not in ("x", "y"):
            raise ValueError(f"form must be 'x' (equation 2) or 'y' (appendix E.3 code), got {form!r}")
        if readout not in ("last", "all"):
            raise ValueError(f"readout must be 'last' or 'all', got {readout!r}")
        alpha = check_positive("alpha", alpha)
        if alpha > 1:
            raise ValueError(f"alpha (= dt / tau) must be in (0, 1], got {alpha}")
        self.input_size = int(input_size)
        self.hidden_sizes = check_module_sizes(hidden_sizes)
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
        L = feedback_matrix(B, self.metric_diag().to(dtype))
        if self.euler_margin is None:
            return L
        return L * self.euler_scale(L)

    def modules_norm_in_metric(self) -> torch.Tensor:
        """``||M^{1/2} W M^{-1/2}||_2`` of the block-diagonal modules (the largest over the blocks)."""
        s = self.metric_diag().double().sqrt()
        W = self.recurrent_weight().double()
        return torch.stack([torch.linalg.matrix_norm(s[sl, None] * W[sl, sl] / s[None, sl], ord=2)
                            for sl in self._blocks()]).max()

    def euler_scale(self, L) -> torch.Tensor:
        """The factor ``min(1, omega / ||M^{1/2} L M^{-1/2}||)`` of ``euler_margin`` (1 without it)."""
        if self.euler_margin is None:
            return torch.ones((), dtype=L.dtype, device=L.device)
        s = self.metric_diag().double().sqrt()
        omega = euler_feedback_limit(self.alpha, self.g, float(self.modules_norm_in_metric().detach()),
                                      self.euler_margin)
        norm = torch.linalg.matrix_norm(s[:, None] * L.double() / s[None, :], ord=2)
        return (omega / torch.clamp(norm, min=omega)).to(L.dtype)

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
        Seed of the module sampler.
    generator, device
        The models' constructor convention (:mod:`rnnlab.models.common`): the
        trained weights are drawn from ``generator`` (None: torch's global RNG),
        then the whole net moves to ``device``.

    The modules ``W`` and their metrics are buffers; contraction is verified at
    construction (:meth:`verify_contraction`), and ``M L + L^T M = 0`` holds by
    construction for every value of ``B``. :attr:`acceptance_rate` reports the
    rejection sampler's acceptance rate.
    """

    def __init__(self, input_size, hidden_sizes, output_size=None, *, density=0.265, scalar=0.27,
                 post_scalar=1.0, activation="relu", alpha=0.1, lower_only=True, form="x", readout="last",
                 b_std=0.01, metric="explicit", seed=None, max_tries=100_000, constraint="on",
                 dtype=torch.float32, euler_margin=None, generator=None, device=None):
        with seeded_init(resolve_generator(generator, fn=type(self).__name__)):
            super().__init__(input_size, hidden_sizes, output_size, activation=activation, alpha=alpha,
                             lower_only=lower_only, form=form, readout=readout, b_std=b_std, dtype=dtype,
                             constraint=constraint, euler_margin=euler_margin)
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
        if device is not None:
            self.to(device)

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
    ``form``, ``readout``, ``lower_only``, ``b_std``, ``constraint``, ``generator`` and ``device`` are as for :class:`SparseComboNet`;
    ``form="y"`` reproduces the update of the paper's code (E.3).

    Initialisation: ``sigma_raw = 1`` as in E.3, ``B ~ N(0, b_std^2)``;
    ``log_phi = 0`` (``Phi = I``); the skew generators ``~ N(0, 1/size)`` (E.3
    starts them at the identity, whose skew part is 0, i.e. ``U = V = I``).

    With ``euler_margin`` the modules train too, and their norm in the metric,
    ``max Sigma``, can approach ``1/g``; at ``alpha = 0.1`` and margin 0.01 the
    Euler step then has no room left for any feedback (``alpha g K`` must stay
    below ``alpha - margin``: :func:`euler_feedback_limit` fails, as a run of
    ours did at epoch 22). So the modules get a share of the step's room: each
    ``W_i`` is scaled by ``euler_module_share * (alpha - margin) / alpha``, which
    keeps ``alpha g K < euler_module_share * (alpha - margin)`` for every value of
    the parameters and leaves the rest to the feedback (default share 0.5).
    """

    def __init__(self, input_size, hidden_sizes, output_size=None, *, activation="relu", alpha=0.1,
                 lower_only=True, form="x", readout="last", b_std=0.01, constraint="on",
                 dtype=torch.float32, euler_margin=None, euler_module_share=0.5, generator=None, device=None):
        with seeded_init(resolve_generator(generator, fn=type(self).__name__)):
            super().__init__(input_size, hidden_sizes, output_size, activation=activation, alpha=alpha,
                             lower_only=lower_only, form=form, readout=readout, b_std=b_std, dtype=dtype,
                             constraint=constraint, euler_margin=euler_margin)
            self.module_scale = 1.0
            if self.euler_margin is not None:
                if not 0 < float(euler_module_share) < 1:
                    raise ValueError(f"euler_module_share must be in (0, 1), got {euler_module_share}")
                if not self.euler_margin < self.alpha:
                    raise ValueError(f"euler_margin ({self.euler_margin:g}) must be below alpha ({self.alpha:g}): "
                                     f"a step contracts by at most 1 - alpha")
                self.module_scale = float(euler_module_share) * (self.alpha - self.euler_margin) / self.alpha
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
        if device is not None:
            self.to(device)

    def modules_weights(self):
        """Per-module ``(W_i, Phi_i^2)`` from equation (19) (``W_i`` scaled by ``module_scale``, 1 without
        ``euler_margin``)."""
        pairs = [svd_module_weight(lp, gu, gv, sr, self.g)
                 for lp, gu, gv, sr in zip(self.log_phi, self.gen_u, self.gen_v, self.sigma_raw)]
        if self.module_scale == 1.0:
            return pairs
        return [(W * self.module_scale, m) for W, m in pairs]

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
