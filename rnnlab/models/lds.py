"""The modal linear dynamical system (LDS) of Kaul, NeurIPS 2020: the model.

In modal coordinates a single-input LDS is a diagonal complex recurrence,
which :func:`rnnlab.linear_scan` computes:

    s'_t = λ ⊙ s'_{t-1} + B' x_t,      y_t = Re(C' s'_t) + D x_t + bias.

The model (:class:`LDS`) trains λ (through one of the eigenvalue
parameterisations) and C' directly; B' is a function of λ, computed with the
stable formula ``log B'_i = −Σ_{j≠i} log(1 − λ_j/λ_i)`` from the author
response, or fixed to ones. The parameterisations themselves (the companion
form, the Vandermonde change of basis, B', the eigenvalue and read-out
parameterisations) live in :mod:`rnnlab.models.modal`, parameter counting in
:mod:`rnnlab.models.common`. The first version of the package had them all here:
``from rnnlab.models.lds import companion_matrix`` (and the other names of
``modal.__all__``) still works, through this module's ``__getattr__``.
"""
import math

import torch
from torch import nn

from .._validate import check_choice, check_int
from ..kernels import linear_scan
from . import modal as _modal
from .common import count_parameters, parameter_breakdown, resolve_dtype, resolve_generator, tall_matmul
from .modal import (complex_readout, log_polar_eigenvalues, log_readout, modal_input_weights,
                    random_root_eigenvalues, uniform_angles, unit_modulus_eigenvalues, with_conjugates)

__all__ = [
    "LDS",
    "count_parameters",
    "parameter_breakdown",
    "EIGENVALUE_PARAMETERISATIONS",
    "INITIALISATIONS",
    "MULTI_INPUT_MODES",
    "READOUTS",
    "INPUT_WEIGHTS",
]


def __getattr__(name):
    """``rnnlab.models.lds.<name>`` for a name of :mod:`rnnlab.models.modal`: the first version's import path."""
    if name in _modal.__all__:
        return getattr(_modal, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

EIGENVALUE_PARAMETERISATIONS = ("free", "unit")
INITIALISATIONS = ("uniform", "roots")
MULTI_INPUT_MODES = ("concat", "average")
READOUTS = ("complex", "log")
INPUT_WEIGHTS = ("companion", "ones")
ALGORITHMS = ("scan", "fft")


class LDS(nn.Module):
    r"""Diagonal (modal, complex) linear dynamical system, run by :func:`rnnlab.linear_scan`.

    .. math::

        s'_t = λ ⊙ s'_{t-1} + B' u_t, \qquad y_t = \mathrm{Re}(C' s'_t) / k + D x_t + \text{bias}

    ``hidden_size`` N complex modes are split into k blocks of N/k modes; each
    block is one single-input LDS in companion form (so B' is computed per
    block from that block's eigenvalues) driven by one scalar input channel
    ``u_t[j]``. How the d inputs become k channels (``multi_input``):

    - ``"concat"``: k = d, one single-input LDS per input channel, outputs
      summed (the concatenation of their states is read out). With
      ``mix_inputs=True`` the inputs first pass through a trained d×d matrix
      E, ``u = E x`` (the public code's perturbed Luenberger form).
    - ``"average"``: k = ``num_projections`` single-input LDS fed a fixed
      random projection ``u = R x`` (R: k×d, entries N(0, 1/d)), outputs
      averaged (the 1/k above; 1 for ``"concat"``).

    Parameters
    ----------
    input_size, hidden_size, output_size : int
        d, N (total number of complex modes, all blocks together) and m.
    eigenvalues : ``"free"`` or ``"unit"``
        :func:`log_polar_eigenvalues` (train ln r and θ) or
        :func:`unit_modulus_eigenvalues` (train θ only).
    init : ``"uniform"``, ``"roots"`` or None
        ``"uniform"``: θ uniform in [−2π, 2π] with |λ| = 1;
        ``"roots"``: :func:`random_root_eigenvalues` (for ``"unit"`` only
        their angles are kept, and only complex roots are used, since real
        ones would all land on ±1). None: ``"uniform"`` for ``"unit"``,
        ``"roots"`` for ``"free"``.
    conjugate_pairs : bool
        Train one eigenvalue of each conjugate pair (:func:`with_conjugates`),
        so each block is a real companion system; halves the eigenvalue
        parameters. Needs N/k even.
    multi_input : ``"concat"`` or ``"average"``; num_projections : int
        See above. ``num_projections`` (default d) is for ``"average"``.
    mix_inputs : bool
        ``"concat"`` only: train the d×d input mixing matrix E.
    input_weights : ``"companion"`` or ``"ones"``
        B' by :func:`modal_input_weights` (default), or B' = 1.
    readout : ``"complex"`` or ``"log"``
        :func:`complex_readout` or :func:`log_readout` for C' (2·N·m reals).
    use_D, bias : bool
        Train the feed-through D (m×d) and the output bias (m).
    batch_first : bool
        Layout of x and y: ``(B, T, ·)`` if True, else ``(T, B, ·)``.
    backend : str
        Passed to :func:`rnnlab.linear_scan` (``"auto"``: the fast kernel).
    algorithm : ``"scan"`` or ``"fft"``
        How :meth:`forward` computes the outputs. ``"scan"`` (the default):
        the modal states by :func:`rnnlab.linear_scan`, then the read-out.
        ``"fft"``: the same outputs as a convolution of the inputs with the
        impulse response ``K_t = Re(C' diag(λ^t) B')`` (:meth:`impulse_response`),
        by FFT, never forming the ``(B, T, N)`` states; much less memory
        traffic for long sequences on a CPU. Same parameters, same results up
        to rounding. :meth:`states` always scans.
    generator : torch.Generator or None
        Source of randomness for the initialisation (default: torch's global RNG).
    device, dtype
        Where the parameters live and their real dtype (default: the CPU and
        torch's default dtype); the package's constructor convention
        (:mod:`rnnlab.models.common`).

    ``forward(x, h0=None)`` returns ``(y, s'_T)``: the outputs ``(B, T, m)``
    and the final modal state ``(B, N)`` (complex; pass it back as ``h0`` to
    continue a sequence). :meth:`states` returns every modal state.

    Conjugate pairs are computed once. With ``conjugate_pairs=True`` every
    block is a real system: its eigenvalues and input weights come in
    conjugate pairs and its inputs are real, so the state of mode ``i*``
    (eigenvalue ``conj(λ_i)``) is ``conj(s'_i)`` at every step, and the pair's
    read-out is ``Re((C'_i + conj(C'_{i*})) s'_i)``. :meth:`forward` (with
    ``algorithm="scan"``) therefore scans only the first mode of each pair,
    ``N/2`` complex channels: the same outputs and gradients for half the
    memory traffic (a real state of dimension N, like an RNN with N units).
    It does so when ``h0`` is None or itself conjugate-symmetric (as a
    returned ``s'_T`` is), and scans all N modes otherwise or when the
    attribute ``pair_modes`` is set to False. :meth:`states` always returns
    all N modes.

    Parameter count (the author response's copying-memory model)
    -----------------------------------------------------------
    ``LDS(10, 160, 10, eigenvalues="unit", conjugate_pairs=True,
    multi_input="concat", mix_inputs=True, readout="log", use_D=False,
    bias=False)`` has exactly **3380** trained real parameters:

    ======================  =================  =====
    θ (``theta``)           10 blocks × 8       80
    C' (``logC_re/_im``)    2 × 160 × 10      3200
    E (``mix``)             10 × 10            100
    ======================  =================  =====

    The d = 10 one-hot inputs (blank, 8 symbols, go) drive 10 single-input LDS
    of 16 modes each, 8 conjugate pairs of unit-modulus eigenvalues; the
    m = 10 outputs are logits. B' is computed from θ, nothing else is
    trained. This is the configuration of the public code's copying-memory
    notebook (``LuenbergerStack(160, 10, 1, unitary_AB_param(),
    relaxed_log_C_param(), standard_D_param(useD=False))`` on 10-dim inputs).
    Note that with conjugate pairs only ``C'_i + conj(C'_{i*})`` matters for
    each pair, so 1600 of the 3200 read-out parameters are redundant; and
    scaling row j of E by c and block j's C' by 1/c changes nothing (10 more
    directions). The Jacobian of the outputs with respect to the 3380
    parameters has rank 3380 − 1600 − 10 = 1770 (checked in the book's
    "Reproducing the LDStack paper", book/lds/06_reproducing). The copying-memory experiment
    (:func:`rnnlab.experiments.copy_memory.paper_lds`) uses this model with
    ``input_weights="ones"``, which trains much faster and has the same count.
    """

    def __init__(self, input_size, hidden_size, output_size, *, eigenvalues="free", init=None,
                 conjugate_pairs=True, multi_input="concat", num_projections=None, mix_inputs=False,
                 input_weights="companion", readout="complex", use_D=True, bias=True,
                 batch_first=True, backend="auto", algorithm="scan", generator=None, device=None, dtype=None):
        super().__init__()
        name = type(self).__name__
        check_int("input_size", input_size, minimum=1, fn=name)
        check_int("hidden_size", hidden_size, minimum=1, fn=name)
        check_int("output_size", output_size, minimum=1, fn=name)
        check_choice("eigenvalues", eigenvalues, EIGENVALUE_PARAMETERISATIONS, fn=name)
        if init is None:
            init = "uniform" if eigenvalues == "unit" else "roots"
        check_choice("init", init, INITIALISATIONS, fn=name)
        check_choice("multi_input", multi_input, MULTI_INPUT_MODES, fn=name)
        check_choice("input_weights", input_weights, INPUT_WEIGHTS, fn=name)
        check_choice("readout", readout, READOUTS, fn=name)
        check_choice("algorithm", algorithm, ALGORITHMS, fn=name)
        if multi_input == "concat":
            if num_projections is not None and num_projections != input_size:
                raise ValueError(f"num_projections is for multi_input='average'; with 'concat' there is one "
                                 f"block per input channel (got num_projections={num_projections}, "
                                 f"input_size={input_size})")
            k = input_size
        else:
            if mix_inputs:
                raise ValueError("mix_inputs=True is for multi_input='concat' (the 'average' projection is fixed)")
            k = input_size if num_projections is None else num_projections
            check_int("num_projections", k, minimum=1, fn=name)
        if hidden_size % k:
            raise ValueError(f"hidden_size ({hidden_size}) must be a multiple of the number of blocks k={k} "
                             f"(input_size for 'concat', num_projections for 'average')")
        nb = hidden_size // k
        if conjugate_pairs and nb % 2:
            raise ValueError(f"conjugate_pairs=True needs an even number of modes per block; "
                             f"hidden_size/k = {hidden_size}/{k} = {nb}")

        self.input_size, self.hidden_size, self.output_size = input_size, hidden_size, output_size
        self.num_blocks, self.block_size = k, nb
        self.eigenvalue_param, self.init_name = eigenvalues, init
        self.conjugate_pairs = bool(conjugate_pairs)
        self.multi_input, self.mix_inputs = multi_input, bool(mix_inputs)
        self.input_weight_mode, self.readout_mode = input_weights, readout
        self.batch_first, self.backend, self.algorithm = bool(batch_first), backend, algorithm
        # forward() scans one mode of each conjugate pair (see the class docstring); False scans all N
        self.pair_modes = True

        g = resolve_generator(generator, fn=name)
        p = nb // 2 if conjugate_pairs else nb
        dtype = resolve_dtype(dtype, fn=name)
        if init == "uniform":
            # θ uniform in [−2π, 2π] (kept as drawn, not reduced mod 2π), |λ| = 1
            theta0 = uniform_angles((k, p), g, dtype=torch.float64)
            log_r0 = torch.zeros(k, p, dtype=torch.float64)
        else:
            if eigenvalues == "unit" and not conjugate_pairs:
                # the real roots of a real polynomial would all land on ±1 (repeated eigenvalues,
                # infinite B'): take the complex roots and their conjugates as independent eigenvalues
                if nb % 2:
                    raise ValueError(f"init='roots' with eigenvalues='unit' and conjugate_pairs=False needs an even "
                                     f"number of modes per block; hidden_size/k = {nb}")
                lam0 = with_conjugates(random_root_eigenvalues(nb // 2, k, generator=g, upper_half=True))
            else:
                lam0 = random_root_eigenvalues(p, k, generator=g, upper_half=conjugate_pairs)
            theta0, log_r0 = torch.angle(lam0), torch.log(lam0.abs())
        self.theta = nn.Parameter(theta0.to(dtype))
        if eigenvalues == "free":
            self.log_r = nn.Parameter(log_r0.to(dtype))
        else:
            self.register_parameter("log_r", None)

        if multi_input == "average":
            R = torch.randn(k, input_size, generator=g, dtype=torch.float64) / math.sqrt(input_size)
            self.register_buffer("projection", R.to(dtype))
            self.register_parameter("mix", None)
        elif mix_inputs:
            E = torch.eye(input_size, dtype=torch.float64) + \
                torch.randn(input_size, input_size, generator=g, dtype=torch.float64) / math.sqrt(input_size)
            self.mix = nn.Parameter(E.to(dtype))
            self.register_buffer("projection", None)
        else:
            self.register_parameter("mix", None)
            self.register_buffer("projection", None)

        N, m = hidden_size, output_size
        if readout == "complex":
            std = 1.0 / math.sqrt(N)
            self.C_re = nn.Parameter((torch.randn(N, m, generator=g, dtype=torch.float64) * std).to(dtype))
            self.C_im = nn.Parameter((torch.randn(N, m, generator=g, dtype=torch.float64) * std).to(dtype))
        else:
            # ln C' with C' ~ N(1, 0.01²) as in the public code (relaxed_log_C_param)
            c0 = (1.0 + 0.01 * torch.randn(N, m, generator=g, dtype=torch.float64)).to(torch.complex128)
            lc = torch.log(c0)
            self.logC_re = nn.Parameter(lc.real.to(dtype))
            self.logC_im = nn.Parameter(lc.imag.to(dtype))
        if use_D:
            bound = 1.0 / math.sqrt(input_size)
            D = (torch.rand(m, input_size, generator=g, dtype=torch.float64) * 2 - 1) * bound
            self.D = nn.Parameter(D.to(dtype))
        else:
            self.register_parameter("D", None)
        if bias:
            self.bias = nn.Parameter(torch.zeros(m, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        if device is not None:
            self.to(device)  # drawn on the CPU (a generator gives the same numbers everywhere), then moved

    # -- the quantities of the model, each from its parameterisation ---------

    def block_eigenvalues(self):
        """λ per block, complex ``(k, N/k)`` (conjugate pairs, if used, in the second half)."""
        lam = self._trained_eigenvalues()
        return with_conjugates(lam) if self.conjugate_pairs else lam

    def _trained_eigenvalues(self):
        """The eigenvalues the parameters give, ``(k, p)``: one of each pair with conjugate pairs."""
        if self.eigenvalue_param == "unit":
            return unit_modulus_eigenvalues(self.theta)
        return log_polar_eigenvalues(self.log_r, self.theta)

    def eigenvalues(self):
        """All N eigenvalues λ, complex ``(N,)``, block after block."""
        return self.block_eigenvalues().reshape(-1)

    def input_weights(self):
        """B', complex ``(N,)``: :func:`modal_input_weights` per block, or ones."""
        lam = self.block_eigenvalues()
        if self.input_weight_mode == "ones":
            return torch.ones_like(lam).reshape(-1)
        return modal_input_weights(lam).reshape(-1)

    def output_weights(self):
        """C', complex ``(N, m)``."""
        if self.readout_mode == "complex":
            return complex_readout(self.C_re, self.C_im)
        return log_readout(self.logC_re, self.logC_im)

    def project_inputs(self, x):
        """The k scalar input channels u ``(B, T, k)``: x, E x or R x."""
        if self.mix is not None:
            return x @ self.mix.t()
        if self.projection is not None:
            return x @ self.projection.t()
        return x

    # -- forward ------------------------------------------------------------

    def _check_x(self, x):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{type(self).__name__}: x must be a torch.Tensor, got {type(x).__name__}")
        if x.dim() != 3 or x.shape[-1] != self.input_size:
            layout = "(B, T, input_size)" if self.batch_first else "(T, B, input_size)"
            raise ValueError(f"{type(self).__name__}: x must have shape {layout} with input_size={self.input_size}, "
                             f"got {tuple(x.shape)}")
        if x.is_complex() or not x.is_floating_point():
            raise TypeError(f"{type(self).__name__}: x must be a real floating tensor, got {x.dtype}")
        if x.dtype != self.theta.dtype:
            # as torch's own modules do: never compute silently in another precision
            raise TypeError(f"{type(self).__name__}: x has dtype {x.dtype} but the model's parameters are "
                            f"{self.theta.dtype}; convert one of them (x.to({self.theta.dtype}) or "
                            f"model.to({x.dtype}))")
        return x if self.batch_first else x.transpose(0, 1)

    def _complex_dtype(self):
        return torch.complex128 if self.theta.dtype == torch.float64 else torch.complex64

    def _check_h0(self, h0, B):
        if h0 is None:
            return None
        if not isinstance(h0, torch.Tensor) or tuple(h0.shape) != (B, self.hidden_size):
            raise ValueError(f"{type(self).__name__}: h0 must be a tensor of shape (B, hidden_size)="
                             f"{(B, self.hidden_size)}, got {getattr(h0, 'shape', type(h0).__name__)}")
        return h0.to(self._complex_dtype())

    def input_matrix(self, pairs=False):
        """The drive as one real matrix: ``view_as_real(B' u_t) = x_t W_in``, W_in ``(d, 2N)``.

        Block j of B' (the modes of input channel j) sits in row j of a
        block-diagonal ``(k, 2N)`` matrix (real and imaginary parts
        interleaved), preceded by E or R when the inputs are mixed or
        projected. One dense matrix product then makes the whole complex
        drive without complex temporaries (faster, forward and backward).
        ``pairs=True``: only the first mode of each conjugate pair, ``(d, N)``
        (see :meth:`forward`).
        """
        k, nb = self.num_blocks, self.block_size
        Bp = self.input_weights().view(k, nb)
        if pairs:
            Bp = Bp[:, : nb // 2]
        Bp = torch.view_as_real(Bp)  # (k, modes per block, 2)
        eye = torch.eye(k, dtype=Bp.dtype, device=Bp.device)
        W = (eye[:, :, None, None] * Bp[None]).reshape(k, 2 * k * Bp.shape[1])
        if self.mix is not None:
            W = self.mix.t() @ W
        elif self.projection is not None:
            W = self.projection.t() @ W
        return W

    def output_matrix(self, pairs=False):
        """The read-out as one real matrix: ``Re(C' s')/k = view_as_real(s') W_out``, W_out ``(2N, m)``.

        ``pairs=True``: for the first mode of each conjugate pair only,
        ``(N, m)``, with the pair's read-out folded into it:
        ``Re(C'_i s'_i + C'_{i*} conj(s'_i)) = Re((C'_i + conj(C'_{i*})) s'_i)``.
        """
        C = self.output_weights()
        if pairs:
            k, nb = self.num_blocks, self.block_size
            C = C.view(k, nb, -1)
            C = (C[:, : nb // 2] + C[:, nb // 2:].conj()).reshape(-1, self.output_size)
        W = torch.stack([C.real, -C.imag], dim=1).reshape(2 * C.shape[0], self.output_size)
        return W / self.num_blocks if self.multi_input == "average" else W

    def _drive(self, x, pairs=False):
        """``B' u_t`` for every mode: complex ``(B, T, N)`` (``(B, T, N/2)`` with ``pairs``)."""
        B, T, _ = x.shape
        b = x @ self.input_matrix(pairs)  # (B, T, 2N), contiguous
        return torch.view_as_complex(b.view(B, T, -1, 2))

    # -- conjugate pairs: a real system computed on one mode of each pair ----

    def _pair_modes(self, z):
        """``(..., N)`` -> ``(..., N/2)``: the first mode of each conjugate pair."""
        k, nb = self.num_blocks, self.block_size
        return z.unflatten(-1, (k, nb))[..., : nb // 2].flatten(-2)

    def _all_modes(self, z):
        """``(..., N/2)`` -> ``(..., N)``: each mode followed, in its block, by the conjugates."""
        z = z.unflatten(-1, (self.num_blocks, self.block_size // 2))
        return torch.cat([z, z.conj()], dim=-1).flatten(-2)

    def _use_pairs(self, h0):
        """Whether :meth:`forward` may run one mode of each conjugate pair (see there)."""
        if not (self.conjugate_pairs and self.pair_modes):
            return False
        return h0 is None or torch.equal(self._all_modes(self._pair_modes(h0)), h0)

    def states(self, x, h0=None, alpha=None):
        """Modal states ``s'_1 .. s'_T`` (complex ``(B, T, N)``, batch first).

        ``alpha`` (real or complex ``(B, T, N)``) scales the transitions,
        ``s'_t = α_t ⊙ λ ⊙ s'_{t-1} + B' u_t``, as :class:`LDStack` needs;
        None means α = 1 (a time-invariant LDS).
        """
        x = self._check_x(x)
        h0 = self._check_h0(h0, x.shape[0])
        lam = self.eigenvalues()
        a = lam if alpha is None else alpha * lam
        return self._scan(a, self._drive(x), h0)

    def _scan(self, a, drive, h0):
        return linear_scan(a, drive, h0, backend=self.backend)

    def _forward_states(self, lam, drive, h0):
        """The states :meth:`forward` reads out, for eigenvalues ``lam`` (all modes or one per
        pair) and their drive: the LDS's scan (:class:`LDStack`: its last layer)."""
        return self._scan(lam, drive, h0)

    def readout(self, s, x, pairs=False):
        """``y = Re(C' s') / k + D x + bias`` for batch-first s and x (``pairs``: s holds one mode per pair)."""
        B, T, N = s.shape
        y = tall_matmul(torch.view_as_real(s).reshape(B, T, 2 * N), self.output_matrix(pairs))
        if self.D is not None:
            y = y + x @ self.D.t()
        if self.bias is not None:
            y = y + self.bias
        return y

    def _log_eigenvalues(self):
        """ln λ per block, complex ``(k, N/k)``, straight from the parameters (no complex log)."""
        log_r = torch.zeros_like(self.theta) if self.log_r is None else self.log_r
        log_lam = torch.complex(log_r, self.theta)
        return with_conjugates(log_lam) if self.conjugate_pairs else log_lam

    def impulse_response(self, T):
        """Kernel ``K`` ``(k, m, T)`` of the LDS as a convolution: ``K[j, :, τ] = Re(C'_j diag(λ_j^τ) B'_j) / k``.

        ``y_t = Σ_j Σ_{τ=0}^{t-1} K[j, :, τ] u_{t-τ}[j] + D x_t + bias`` (zero
        initial state), where block j has eigenvalues λ_j, input weights
        B'_j and read-out C'_j; the 1/k is for ``"average"`` only.
        """
        k, nb, m = self.num_blocks, self.block_size, self.output_size
        tau = torch.arange(T, device=self.theta.device, dtype=self.theta.dtype)
        powers = torch.exp(self._log_eigenvalues().unsqueeze(-1) * tau)  # (k, nb, T): λ^τ
        CB = self.output_weights().view(k, nb, m) * self.input_weights().view(k, nb, 1)
        K = torch.einsum("kim,kit->kmt", CB, powers).real
        return K / k if self.multi_input == "average" else K

    def _forward_fft(self, x, h0):
        B, T, _ = x.shape
        u = self.project_inputs(x)  # (B, T, k)
        K = self.impulse_response(T)  # (k, m, T)
        n_fft = 1 << (2 * T - 1).bit_length()
        U = torch.fft.rfft(u, n=n_fft, dim=1)  # (B, F, k)
        Kf = torch.fft.rfft(K, n=n_fft, dim=-1)  # (k, m, F)
        Y = torch.matmul(U.transpose(0, 1), Kf.permute(2, 0, 1)).transpose(0, 1)  # (B, F, m): U_f @ K_f per frequency
        y = torch.fft.irfft(Y, n=n_fft, dim=1)[:, :T]
        # final state s'_T = Σ_τ λ^{T-τ} B' u_τ (+ λ^T h0)
        k, nb = self.num_blocks, self.block_size
        log_lam = self._log_eigenvalues()
        tau = torch.arange(T - 1, -1, -1, device=x.device, dtype=x.dtype)
        powers = torch.exp(log_lam.unsqueeze(-1) * tau)  # (k, nb, T): λ^{T-t} for t = 1..T
        sT = torch.matmul(u.permute(2, 0, 1).to(powers.dtype), powers.transpose(1, 2))  # (k, B, nb)
        sT = (sT * self.input_weights().view(k, 1, nb)).transpose(0, 1).reshape(B, self.hidden_size)
        if h0 is not None:
            t1 = torch.arange(1, T + 1, device=x.device, dtype=x.dtype)
            P = torch.exp(log_lam.reshape(-1).unsqueeze(-1) * t1)  # (N, T): λ^t for t = 1..T
            Q = h0.unsqueeze(-1) * self.output_weights()  # (B, N, m)
            scale = 1 / k if self.multi_input == "average" else 1
            y = y + scale * torch.einsum("nt,bnm->btm", P, Q).real
            sT = sT + h0 * torch.exp(log_lam.reshape(-1) * T)
        return y, sT

    def forward(self, x, h0=None):
        if isinstance(x, torch.Tensor) and x.dim() == 3 and x.shape[0] * x.shape[1] == 0:
            return self._forward_empty(x, h0)
        if self.algorithm == "fft":
            xc = self._check_x(x)
            y, sT = self._forward_fft(xc, self._check_h0(h0, xc.shape[0]))
            if self.D is not None:
                y = y + xc @ self.D.t()
            if self.bias is not None:
                y = y + self.bias
        else:
            xc = self._check_x(x)
            h0c = self._check_h0(h0, xc.shape[0])
            if self._use_pairs(h0c):
                s = self._forward_states(self._trained_eigenvalues().reshape(-1), self._drive(xc, pairs=True),
                                         None if h0c is None else self._pair_modes(h0c))
                y, sT = self.readout(s, xc, pairs=True), self._all_modes(s[:, -1])
            else:
                s = self._forward_states(self.eigenvalues(), self._drive(xc), h0c)
                y, sT = self.readout(s, xc), s[:, -1]
        if not self.batch_first:
            y = y.transpose(0, 1)
        return y, sT

    def _forward_empty(self, x, h0):
        """T = 0 (or B = 0): no outputs, and the final state is the initial one (zeros if None)."""
        xc = self._check_x(x)
        h0c = self._check_h0(h0, xc.shape[0])
        y = xc.new_zeros(xc.shape[0], xc.shape[1], self.output_size)
        sT = h0c if h0c is not None else torch.zeros(xc.shape[0], self.hidden_size, dtype=self._complex_dtype(),
                                                     device=xc.device)
        return (y if self.batch_first else y.transpose(0, 1)), sT

    def extra_repr(self):
        return (f"{self.input_size}, {self.hidden_size}, {self.output_size}, eigenvalues={self.eigenvalue_param!r}, "
                f"init={self.init_name!r}, conjugate_pairs={self.conjugate_pairs}, multi_input={self.multi_input!r}, "
                f"blocks={self.num_blocks}x{self.block_size}, mix_inputs={self.mix_inputs}, "
                f"input_weights={self.input_weight_mode!r}, readout={self.readout_mode!r}")
