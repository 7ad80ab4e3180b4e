"""``linear_scan``: the diagonal linear recurrence h_t = a_t * h_{t-1} + b_t.

One autograd Function dispatches to three interchangeable backends that all
implement ``forward``/``backward`` as documented in :mod:`.scan_torch`:

- ``"torch"``: :mod:`rnnlab.kernels.scan_torch`, a readable loop over time;
- ``"cpu"``:   :mod:`rnnlab.kernels.scan_cpu`, numba ``njit(parallel=True)``;
- ``"cuda"``:  :mod:`rnnlab.kernels.scan_cuda`, numba-cuda kernels.

The backward pass is itself a linear scan running the other way in time, so
every backend computes it with the same kind of kernel as the forward pass.
"""
import numpy as np
import torch

from ._backend import backend_module, check_b, check_h0, check_like, check_tensor, resolve_backend
# Kept importable from here, where they were first defined (they live in ._backend now).
from ._backend import BACKENDS, DTYPES, WIDE_DTYPES, cuda_simulator_enabled  # noqa: F401


def _check_inputs(a, b, h0, backend):
    """Validate the arguments of :func:`linear_scan`; return the backend name to use."""
    name = "linear_scan"
    B, T, C = check_b(b, name)
    check_tensor(a, "a", name)
    if a.dtype != b.dtype:
        raise TypeError(f"{name}: a has dtype {a.dtype} but b has {b.dtype}; they must match")
    allowed = {3: (B, T, C), 2: (T, C), 1: (C,)}
    if a.dim() not in allowed or tuple(a.shape) != allowed[a.dim()]:
        raise ValueError(
            f"{name}: a must have shape (B, T, C)={allowed[3]}, (T, C)={allowed[2]} or (C,)={allowed[1]} "
            f"to match b; got {tuple(a.shape)}")
    check_like(a, "a", b, "b", name)
    check_h0(b, h0, name)
    return resolve_backend(b.device, backend, name)


def _as_3d(a):
    """View ``a`` as ``(Ba, Ta, C)`` with size-1 broadcast dims, without copying."""
    if a.dim() == 1:
        return a.view(1, 1, -1)
    if a.dim() == 2:
        return a.unsqueeze(0)
    return a


def _reduce_to(grad, shape):
    """Sum a ``(B, T, C)`` gradient (or one a backend already summed over
    some broadcast dimensions, kept as size 1) down to the shape of ``a``."""
    target = (1,) * (3 - len(shape)) + tuple(shape)
    dims = tuple(d for d in range(3) if target[d] == 1 and grad.shape[d] != 1)
    if dims:
        grad = grad.sum(dims, keepdim=True)
    return grad.reshape(shape)


class LinearScan(torch.autograd.Function):
    """Autograd wrapper: the forward and backward of the chosen backend."""

    @staticmethod
    def forward(ctx, a, b, h0, reverse, backend):
        mod = backend_module("scan", backend)
        a3 = _as_3d(a).contiguous()
        b = b.contiguous()
        h0c = None if h0 is None else h0.contiguous()
        with torch.no_grad():
            h = mod.forward(a3.detach(), b.detach(), None if h0c is None else h0c.detach(), reverse)
        ctx.save_for_backward(a3, h, h0c)
        ctx.a_shape = tuple(a.shape)
        ctx.reverse = reverse
        ctx.backend = backend
        return h

    @staticmethod
    def backward(ctx, g):
        a3, h, h0 = ctx.saved_tensors
        mod = backend_module("scan", ctx.backend)
        G, grad_a, grad_h0 = mod.backward(a3, h, g.contiguous(), h0, ctx.reverse)
        ga = _reduce_to(grad_a, ctx.a_shape) if ctx.needs_input_grad[0] else None
        gh0 = grad_h0 if (h0 is not None and ctx.needs_input_grad[2]) else None
        return ga, G, gh0, None, None


def linear_scan(a, b, h0=None, *, reverse=False, backend="auto"):
    """States of the diagonal linear recurrence ``h_t = a_t * h_{t-1} + b_t``.

    Parameters
    ----------
    a : Tensor, ``(B, T, C)``, ``(T, C)`` or ``(C,)``
        Elementwise transition coefficients; the 2-d and 1-d forms are shared
        across the batch (and, for ``(C,)``, across time: a time-invariant
        system) and are broadcast without copies.
    b : Tensor, ``(B, T, C)``
        Inputs. float32, float64, complex64 or complex128, the dtype of ``a``.
    h0 : Tensor ``(B, C)`` or None
        Initial state (``h_0``, or ``h_{T+1}`` when ``reverse``); zeros if None.
    reverse : bool
        Run backwards in time: ``h_t = a_t * h_{t+1} + b_t`` for t = T .. 1.
    backend : ``"auto"``, ``"torch"``, ``"cpu"`` or ``"cuda"``
        ``"auto"`` takes the CUDA kernels for CUDA tensors and the CPU kernel
        otherwise. ``"torch"`` is the readable reference loop.

    Returns
    -------
    Tensor ``(B, T, C)``: the states ``h_1 .. h_T``. Differentiable with
    respect to ``a``, ``b`` and ``h0``; the backward pass is a linear scan in
    the opposite direction.
    """
    if not isinstance(reverse, (bool, np.bool_)):
        raise TypeError(f"linear_scan: reverse must be True or False, got {reverse!r}")
    name = _check_inputs(a, b, h0, backend)
    return LinearScan.apply(a, b, h0, bool(reverse), name)
