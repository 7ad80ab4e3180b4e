"""LDStack: a depth-k stack of linear systems that approximates a nonlinear RNN.

The idea (Kaul 2020, author response): the nonlinear RNN

    s_t = ρ(A s_{t-1}) + B x_t                                   (1)

differs from the LDS ``s_t = A s_{t-1} + B x_t`` only by the multiplicative
deviation ``δ(a) = ρ(a)/a`` of its nonlinearity. Layer 1 of the stack is that
LDS; layer i corrects its transitions with the previous layer's states:

    p_{t-1}^{(i-1)} = δ(A s_{t-1}^{(i-1)}),
    s_t^{(i)} = diag(p_{t-1}^{(i-1)}) A s_{t-1}^{(i)} + B x_t.      (2)

Every layer is *linear* in its own state (a time-varying linear system), so
each can be computed by a scan. If layer i−1 equals the RNN up to step t−1,
then ``diag(p_{t-1}) A s_{t-1} = ρ(A s_{t-1})`` and layer i equals it up to
step t: depth k reproduces (1) exactly for the first k steps (the "simple
recursion"), and depth T for the whole sequence.

Two forms live here:

- :class:`LDStackExact` runs (2) literally, for a general real n×n matrix A
  and an elementwise ρ (``"tanh"``, ``"relu"``, ``"elu"``, ``"identity"`` or a
  callable). Each layer is a time-varying *matrix* recurrence, computed by a
  plain torch loop: the reference that shows the convergence theorem, for
  small n. It approximates the real RNN (1).
- :class:`LDStack` is the fast form: A is the diagonal modal transition λ
  of an :class:`LDS` and the correction acts on the complex modal state
  through the phase-preserving squashing ``σ(z) = z / sqrt(1 + |z|²)``, whose
  deviation ``σ(z)/z = 1/sqrt(1 + |z|²)`` is real and positive. It
  approximates the *modal* nonlinear RNN ``s'_t = σ(λ ⊙ s'_{t-1}) + B' u_t``
  (a diagonal complex RNN, :func:`modal_rnn_reference`), not (1) in companion
  coordinates: a nonlinearity applied mode by mode is not ρ applied to the
  companion state.

Which public code. The modal form follows the public code (shivak/ldstack)
of June-July 2020: ``LDStackInner`` in ``ldstack.py`` (commits 51c7bd1 of
15 June to 5fd973e of 2 July 2020) computes ``α = recipsq(λ·s')``,
``recipsq(a) = rsqrt(1 + a·conj(a))``, and runs the next layer with the
transitions ``α·λ``: the multiplicative deviation that the author response
describes. The latest public code (December 2020, commit 03ef0e3) does
something else: an *additive* deviation ``δ(a) = ρ(a) − a`` (ELU by default),
evaluated on real coordinates obtained from the previous layer's modal
states through a learned complex basis W (``W⁻¹(λ s' + x)``), mapped back
with W and added to the next layer's drive, the transitions staying λ. This
package implements the multiplicative form only.

How the modal form is computed. Each layer is a diagonal linear recurrence
with time-varying coefficients ``a_t = α_t λ``, so the stack *can* be run as
k calls of :func:`rnnlab.linear_scan`, computing every layer's coefficients
from the previous layer's states (:func:`modal_transitions`):
:meth:`LDStack.layer_states_by_scans` does exactly that, and it is how the
book first explains the stack. But layer i at step t needs only layer i−1 at
step t−1, so all layers can also advance *together*, one step at a time:
:func:`rnnlab.kernels.modal_stack_scan` makes one pass over time for all
layers (and one reverse pass for the gradients), reads the drive ``B' u_t``
once instead of k times, and never materialises the k−1 ``(B, T, N)``
coefficient tensors ``a_t`` nor their gradients. That is what
:meth:`LDStack.forward` and :meth:`LDStack.layer_states` use (several times
faster on a CPU); the two agree to rounding (tested).

Note on the input: in (1) the input enters after the nonlinearity, as in the
author response. The Elman form ``h_t = ρ(W h_{t-1} + U x_t)`` is the same
family: ``w_t = s_t − B x_t`` obeys ``w_t = ρ(A w_{t-1} + A B x_{t-1})``.
"""
import math

import torch
from torch import nn

from ..kernels import modal_stack_scan
from .._validate import check_int
from .common import resolve_dtype, resolve_generator
from .lds import LDS

__all__ = [
    "LDStack",
    "LDStackExact",
    "deviation",
    "rnn_reference",
    "squash",
    "squash_factor",
    "modal_rnn_reference",
    "modal_transitions",
    "NONLINEARITIES",
]


# ---------------------------------------------------------------------------
# Nonlinearities and their multiplicative deviations δ(a) = ρ(a) / a
# ---------------------------------------------------------------------------

def _tanh_deviation(a):
    """δ(a) = tanh(a)/a, with its series 1 − a²/3 + 2a⁴/15 near 0 (δ(0) = 1)."""
    small = a.abs() < 1e-3
    safe = torch.where(small, torch.ones_like(a), a)
    a2 = a * a
    return torch.where(small, 1 - a2 / 3 + 2 * a2 * a2 / 15, torch.tanh(safe) / safe)


def _relu_deviation(a):
    """δ(a) = relu(a)/a = 1 for a > 0, 0 otherwise (any value at 0 is exact since relu(0) = 0)."""
    return (a > 0).to(a.dtype)


def _elu_deviation(a):
    """δ(a) = elu(a)/a = 1 for a > 0, expm1(a)/a for a ≤ 0 (δ(0) = 1)."""
    small = a.abs() < 1e-4
    safe = torch.where(small | (a > 0), -torch.ones_like(a), a)
    neg = torch.where(small, 1 + a / 2, torch.expm1(safe) / safe)
    return torch.where(a > 0, torch.ones_like(a), neg)


def _identity_deviation(a):
    """δ(a) = 1: the RNN is the LDS itself."""
    return torch.ones_like(a)


NONLINEARITIES = {
    "tanh": (torch.tanh, _tanh_deviation),
    "relu": (torch.relu, _relu_deviation),
    "elu": (nn.functional.elu, _elu_deviation),
    "identity": (lambda a: a, _identity_deviation),
}


def _generic_deviation(rho, eps=1e-4):
    def delta(a):
        """δ(a) = ρ(a)/a, with the central difference (ρ(ε) − ρ(−ε))/2ε ≈ ρ'(0) for |a| < ε."""
        small = a.abs() < eps
        safe = torch.where(small, torch.ones_like(a), a)
        e = torch.full_like(a, eps)
        return torch.where(small, (rho(e) - rho(-e)) / (2 * eps), rho(safe) / safe)
    return delta


def deviation(nonlinearity):
    """``(ρ, δ)`` for a nonlinearity name or callable, with ``δ(a) = ρ(a)/a`` safe at a = 0.

    At a = 0, δ takes its limit ρ'(0) (for a named ρ) or a central difference
    (for a callable). Exactness of the stack needs ``ρ(0) = 0``: then
    ``δ(0)·0 = ρ(0)`` whatever value δ(0) takes, and only NaNs must be avoided.
    """
    if callable(nonlinearity):
        return nonlinearity, _generic_deviation(nonlinearity)
    if nonlinearity not in NONLINEARITIES:
        raise ValueError(f"nonlinearity must be one of {tuple(NONLINEARITIES)} or a callable, got {nonlinearity!r}")
    return NONLINEARITIES[nonlinearity]


def rnn_reference(x, A, B, nonlinearity="tanh", h0=None):
    """The nonlinear RNN (1), ``s_t = ρ(A s_{t-1}) + B x_t``, as a loop: states ``(B, T, n)``.

    ``x``: ``(B, T, d)``; ``A``: ``(n, n)``; ``B``: ``(n, d)``; ``h0``: ``(B, n)`` or None (zeros).
    """
    rho, _ = deviation(nonlinearity)
    Bsz, T, _ = x.shape
    s = x.new_zeros(Bsz, A.shape[0]) if h0 is None else h0
    drive = (x @ B.t()).unbind(1)
    out = []
    for t in range(T):
        s = rho(s @ A.t()) + drive[t]
        out.append(s)
    return torch.stack(out, 1)


def squash(z):
    """Phase-preserving squashing of a complex state: ``σ(z) = z / sqrt(1 + |z|²)`` (|σ(z)| < 1)."""
    return z * squash_factor(z)


def squash_factor(z):
    """Its multiplicative deviation ``σ(z)/z = 1 / sqrt(1 + |z|²)``: real, in (0, 1], 1 at z = 0."""
    return torch.rsqrt(1 + (z.real * z.real + z.imag * z.imag) if z.is_complex() else 1 + z * z)


def modal_rnn_reference(lam, drive, h0=None):
    """The modal nonlinear RNN that :class:`LDStack` approximates: ``s'_t = σ(λ ⊙ s'_{t-1}) + b_t``.

    ``lam``: ``(N,)`` complex; ``drive`` (``b_t = B' u_t``): ``(B, T, N)`` complex. States ``(B, T, N)``.
    """
    Bsz, T, N = drive.shape
    s = drive.new_zeros(Bsz, N) if h0 is None else h0
    out, drive = [], drive.unbind(1)
    for t in range(T):
        s = squash(lam * s) + drive[t]
        out.append(s)
    return torch.stack(out, 1)


# ---------------------------------------------------------------------------
# Exact form: a general real A, elementwise ρ, torch loops
# ---------------------------------------------------------------------------

class LDStackExact(nn.Module):
    r"""LDStack in its exact form (2) for a general real A: a reference, for small n.

    .. math::

        s_t^{(1)} = A s_{t-1}^{(1)} + B x_t, \qquad
        s_t^{(i)} = \mathrm{diag}\big(δ(A s_{t-1}^{(i-1)})\big) A s_{t-1}^{(i)} + B x_t

    Approximates the RNN ``s_t = ρ(A s_{t-1}) + B x_t`` (:func:`rnn_reference`);
    depth k equals it exactly for the first k steps when ``ρ(A h0) = A h0``
    (for instance h0 = 0 and ρ(0) = 0), else for the first k − 1 steps.
    Each layer is a time-varying matrix recurrence run by a torch loop.

    Parameters: ``A`` (n×n, initialised N(0, 1/n)), ``B`` (n×d, N(0, 1/d)),
    and, if ``output_size`` is given, a linear read-out ``C`` (m×n) with bias.
    ``generator`` draws A and B (the read-out takes torch's own initialiser);
    ``device`` and ``dtype`` place the parameters (:mod:`rnnlab.models.common`).

    ``forward(x, h0=None)`` returns ``(y, s_T)``: y is the last layer's states
    ``(B, T, n)`` (or ``C s + c`` with a read-out), s_T its final state.
    :meth:`layer_states` returns the states of every layer.
    """

    def __init__(self, input_size, hidden_size, output_size=None, *, depth=1, nonlinearity="tanh",
                 batch_first=True, generator=None, device=None, dtype=None):
        super().__init__()
        name = type(self).__name__
        check_int("input_size", input_size, minimum=1, fn=name)
        check_int("hidden_size", hidden_size, minimum=1, fn=name)
        check_int("depth", depth, minimum=1, fn=name)
        if output_size is not None:
            check_int("output_size", output_size, minimum=1, fn=name)
        self.rho, self.delta = deviation(nonlinearity)
        self.input_size, self.hidden_size, self.output_size = input_size, hidden_size, output_size
        self.depth, self.nonlinearity, self.batch_first = depth, nonlinearity, bool(batch_first)
        g, dtype = resolve_generator(generator, fn=name), resolve_dtype(dtype, fn=name)
        self.A = nn.Parameter((torch.randn(hidden_size, hidden_size, generator=g, dtype=torch.float64)
                               / math.sqrt(hidden_size)).to(dtype))
        self.B = nn.Parameter((torch.randn(hidden_size, input_size, generator=g, dtype=torch.float64)
                               / math.sqrt(input_size)).to(dtype))
        self.readout = nn.Linear(hidden_size, output_size, dtype=dtype) if output_size is not None else None
        if device is not None:
            self.to(device)

    def _check_x(self, x):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"LDStackExact: x must be a torch.Tensor, got {type(x).__name__}")
        if x.dim() != 3 or x.shape[-1] != self.input_size:
            raise ValueError(f"LDStackExact: x must have shape (B, T, input_size={self.input_size}) "
                             f"(batch first), got {tuple(x.shape)}")
        return x if self.batch_first else x.transpose(0, 1)

    def layer_states(self, x, h0=None, depth=None):
        """States of layers 1..depth, a list of ``(B, T, n)`` tensors (batch first)."""
        x = self._check_x(x)
        depth = self.depth if depth is None else depth
        check_int("depth", depth, minimum=1)
        Bsz, T, _ = x.shape
        n = self.hidden_size
        s0 = x.new_zeros(Bsz, n) if h0 is None else h0
        drive = (x @ self.B.t()).unbind(1)  # unbind: no O(T^2) select backward
        layers, p = [], None
        for _ in range(depth):
            s, out = s0, []
            ps = None if p is None else p.unbind(1)
            for t in range(T):
                As = s @ self.A.t()
                s = (As if ps is None else ps[t] * As) + drive[t]
                out.append(s)
            states = torch.stack(out, 1)
            layers.append(states)
            # p_{t-1} = δ(A s_{t-1}) for t = 1..T, from s_0 = h0, s_1, .., s_{T-1}
            prev = torch.cat([s0.unsqueeze(1), states[:, :-1]], 1)
            p = self.delta(prev @ self.A.t())
        return layers

    def forward(self, x, h0=None):
        s = self.layer_states(x, h0)[-1]
        y = s if self.readout is None else self.readout(s)
        if not self.batch_first:
            y = y.transpose(0, 1)
        return y, s[:, -1]

    def extra_repr(self):
        return (f"{self.input_size}, {self.hidden_size}, output_size={self.output_size}, depth={self.depth}, "
                f"nonlinearity={self.nonlinearity!r}")


# ---------------------------------------------------------------------------
# Fast modal form on linear_scan
# ---------------------------------------------------------------------------

def modal_transitions(s, lam, s0=None):
    """Corrected transitions of the modal stack: ``a_t = λ / sqrt(1 + |λ s_{t-1}|²)``, ``s_0 = s0`` (or 0).

    ``s``: the previous layer's states, complex ``(B, T, N)``; ``lam``: ``(N,)``;
    returns ``a`` ``(B, T, N)`` for :func:`rnnlab.linear_scan`. Equal to
    ``squash_factor(lam * s_prev) * lam``, with a hand-written backward
    (:class:`_ModalTransitions`) that makes a few passes over memory instead
    of autograd's dozen: on a CPU this step, not the scan, dominated LDStack.
    """
    return _ModalTransitions.apply(s, lam, s0)


class _ModalTransitions(torch.autograd.Function):
    # Complex elementwise kernels (abs, complex × real) are slow on CPU builds of torch;
    # everything here works on view_as_real pairs with real broadcasting ops.

    @staticmethod
    def forward(ctx, s, lam, s0):
        lam_ri = torch.view_as_real(lam)
        c = lam_ri.square().sum(-1)  # |λ|², (N,)
        sr = torch.view_as_real(s)
        alpha = torch.empty(s.shape, dtype=c.dtype, device=s.device)  # |s_{t-1}|², then α_t in place
        torch.addcmul(sr[:, :-1, :, 0] * sr[:, :-1, :, 0], sr[:, :-1, :, 1], sr[:, :-1, :, 1], out=alpha[:, 1:])
        if s0 is None:
            alpha[:, 0] = 0
        else:
            alpha[:, 0] = torch.view_as_real(s0).square().sum(-1)
        alpha.mul_(c).add_(1).rsqrt_()
        ctx.save_for_backward(s, lam, s0, alpha)
        return torch.view_as_complex(alpha.unsqueeze(-1) * lam_ri)

    @staticmethod
    def backward(ctx, g):
        s, lam, s0, alpha = ctx.saved_tensors
        lam_ri = torch.view_as_real(lam)
        c = lam_ri.square().sum(-1)
        gr = torch.view_as_real(g)
        sr = torch.view_as_real(s)
        # a = α λ:  dL/dλ (direct) = Σ_{b,t} α g;  dL/dα = Re(g conj λ)
        grad_lam = torch.complex((alpha * gr[..., 0]).sum((0, 1)), (alpha * gr[..., 1]).sum((0, 1)))
        # α = (1 + c p)^(-1/2), p = |s_prev|²:  w = dL/d(c p) = −α³/2 · dL/dα
        w = torch.addcmul(gr[..., 0] * lam_ri[:, 0], gr[..., 1], lam_ri[:, 1])
        w.mul_(alpha.pow(3)).mul_(-0.5)
        p = torch.addcmul(sr[:, :-1, :, 0] * sr[:, :-1, :, 0], sr[:, :-1, :, 1], sr[:, :-1, :, 1])
        dc = (w[:, 1:] * p).sum((0, 1))  # dL/dc = Σ_t w_t p_t
        grad_s = grad_s0 = None
        if ctx.needs_input_grad[0]:
            # dL/ds_t = 2 s_t dL/dp_{t+1} = 2 c w_{t+1} s_t   (torch's convention for complex grads)
            grad_s = torch.zeros_like(s)
            torch.mul(sr[:, :-1], (w[:, 1:] * (2 * c)).unsqueeze(-1), out=torch.view_as_real(grad_s)[:, :-1])
        if s0 is not None:
            s0r = torch.view_as_real(s0)
            dc = dc + (w[:, 0] * s0r.square().sum(-1)).sum(0)
            if ctx.needs_input_grad[2]:
                grad_s0 = torch.view_as_complex(s0r * (w[:, 0] * (2 * c)).unsqueeze(-1))
        grad_lam = grad_lam + 2 * lam * dc  # c = |λ|²: dL/dλ += 2 λ dL/dc
        return grad_s, grad_lam, grad_s0


class LDStack(LDS):
    r"""LDStack in the fast modal form: k corrected copies of an :class:`LDS`, all run in one pass over time.

    .. math::

        α_{t}^{(i-1)} = \frac{1}{\sqrt{1 + |λ ⊙ s'^{(i-1)}_{t-1}|^2}}, \qquad
        s'^{(i)}_t = α_{t}^{(i-1)} ⊙ λ ⊙ s'^{(i)}_{t-1} + B' u_t

    with α ≡ 1 in layer 1 (a plain LDS). Every layer shares the LDS's λ, B'
    and C' (so the parameter count is the LDS's); the output is the last
    layer's read-out. It approximates the modal nonlinear RNN
    ``s'_t = σ(λ ⊙ s'_{t-1}) + B' u_t`` with the phase-preserving squashing
    ``σ(z) = z/sqrt(1 + |z|²)`` (:func:`modal_rnn_reference`), exactly for the
    first ``depth`` steps when h0 = 0; it does not approximate a real RNN
    ρ(A s) in companion coordinates (see :class:`LDStackExact` for that).

    Takes every argument of :class:`LDS` plus ``depth`` (≥ 1; depth 1 is the LDS), except
    ``algorithm="fft"`` (a convolution computes a plain LDS, not the stack).
    ``forward(x, h0=None)`` returns ``(y, s'_T)`` of the last layer;
    :meth:`layer_states` returns every layer's modal states. Both run
    :func:`rnnlab.kernels.modal_stack_scan` (all layers in one pass over
    time, on the LDS's ``backend``); :meth:`layer_states_by_scans` computes
    the same states as k linear scans with time-varying coefficients.
    Like :meth:`LDS.forward`, :meth:`forward` runs one mode of each conjugate
    pair when the system is real (``conjugate_pairs``, ``pair_modes``).
    """

    def __init__(self, input_size, hidden_size, output_size, *, depth=2, **lds_kwargs):
        check_int("depth", depth, minimum=1)
        if lds_kwargs.get("algorithm", "scan") != "scan":
            raise ValueError(f"LDStack: algorithm must be 'scan' (the FFT convolution computes a plain LDS, "
                             f"not the stack), got {lds_kwargs['algorithm']!r}")
        super().__init__(input_size, hidden_size, output_size, **lds_kwargs)
        self.depth = depth

    def _stack_inputs(self, x, h0, depth):
        depth = self.depth if depth is None else depth
        check_int("depth", depth, minimum=1)
        x = self._check_x(x)
        h0 = self._check_h0(h0, x.shape[0])
        return x, h0, depth

    def layer_states(self, x, h0=None, depth=None):
        """Modal states of layers 1..depth, a list of complex ``(B, T, N)`` tensors.

        All layers in one pass over time (:func:`rnnlab.kernels.modal_stack_scan`).
        """
        x, h0, depth = self._stack_inputs(x, h0, depth)
        return modal_stack_scan(self.eigenvalues(), self._drive(x), depth, h0,
                                backend=self.backend, return_layers=True)

    def layer_states_by_scans(self, x, h0=None, depth=None):
        """The same states as :meth:`layer_states`, computed layer after layer by linear scans.

        Layer 1 is the LDS; layer i is :func:`rnnlab.linear_scan` with the
        time-varying coefficients ``a_t = α_t λ``, ``α_t = 1/sqrt(1 + |λ s'_{t-1}|²)``
        computed from layer i−1's states (:func:`modal_transitions`): the stack
        as the book explains it first. k scans, each reading the drive and
        (after the first) a ``(B, T, N)`` tensor of coefficients.
        """
        x, h0, depth = self._stack_inputs(x, h0, depth)
        drive = self._drive(x)  # the same B' u_t in every layer
        lam = self.eigenvalues()
        layers, a = [], lam
        for i in range(depth):
            s = self._scan(a, drive, h0)
            layers.append(s)
            if i + 1 == depth:
                break
            a = modal_transitions(s, lam, h0)  # α_t λ, α_t = 1/sqrt(1 + |λ s'_{t-1}|²)
        return layers

    def _forward_states(self, lam, drive, h0):
        # LDS.forward, with the last layer's states instead of the LDS's: on one mode of each
        # conjugate pair too, since the correction 1/sqrt(1 + |λ s'|²) is the same for both
        return modal_stack_scan(lam, drive, self.depth, h0, backend=self.backend)

    def extra_repr(self):
        return super().extra_repr() + f", depth={self.depth}"
