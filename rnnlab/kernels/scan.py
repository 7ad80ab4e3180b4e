"""``linear_scan``: the diagonal linear recurrence h_t = a_t * h_{t-1} + b_t.

One autograd Function dispatches to three interchangeable backends that all
implement ``forward``/``backward`` as documented in :mod:`.scan_torch`:

- ``"torch"``: :mod:`rnnlab.kernels.scan_torch`, a readable loop over time;
- ``"cpu"``:   :mod:`rnnlab.kernels.scan_cpu`, numba ``njit(parallel=True)``;
- ``"cuda"``:  :mod:`rnnlab.kernels.scan_cuda`, numba-cuda kernels.

The backward pass is itself a linear scan running the other way in time, so
every backend computes it with the same kind of kernel as the forward pass.
"""
import importlib
import os

import numpy as np
import torch

BACKENDS = ("auto", "torch", "cpu", "cuda")
DTYPES = (torch.float32, torch.float64, torch.complex64, torch.complex128)
# The double-precision dtype in which the kernels sum gradients of shared parameters.
WIDE_DTYPES = {torch.float32: torch.float64, torch.float64: torch.float64,
               torch.complex64: torch.complex128, torch.complex128: torch.complex128}


def cuda_simulator_enabled():
    """True when numba's CUDA simulator is switched on (``NUMBA_ENABLE_CUDASIM=1``)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def _backend_module(name):
    return importlib.import_module(f"rnnlab.kernels.scan_{name}")


def check_b(b, name):
    """Validate the ``(B, T, C)`` input ``b`` of the op ``name``; return its shape."""
    if not isinstance(b, torch.Tensor):
        raise TypeError(f"{name}: b must be a torch.Tensor, got {type(b).__name__}")
    if b.dim() != 3:
        raise ValueError(f"{name}: b must have shape (B, T, C) (3 dims), got {tuple(b.shape)}")
    B, T, C = b.shape
    if T == 0 or B == 0 or C == 0:
        raise ValueError(f"{name}: b must have B, T, C >= 1, got {tuple(b.shape)}")
    if b.dtype not in DTYPES:
        raise TypeError(f"{name}: b has dtype {b.dtype}; expected one of float32, float64, complex64, complex128")
    return B, T, C


def check_h0_and_backend(b, h0, backend, name):
    """Validate the initial state ``h0`` (``(B, C)`` or None) and ``backend`` of
    the op ``name`` against ``b``; return the backend name to use."""
    B, T, C = b.shape
    if h0 is not None:
        if not isinstance(h0, torch.Tensor):
            raise TypeError(f"{name}: h0 must be a torch.Tensor or None, got {type(h0).__name__}")
        if tuple(h0.shape) != (B, C):
            raise ValueError(f"{name}: h0 must have shape (B, C)={(B, C)}, got {tuple(h0.shape)}")
        if h0.dtype != b.dtype:
            raise TypeError(f"{name}: h0 has dtype {h0.dtype} but b has {b.dtype}; they must match")
        if h0.device != b.device:
            raise ValueError(f"{name}: h0 is on {h0.device} but b is on {b.device}; they must be on one device")
    if backend not in BACKENDS:
        raise ValueError(f"{name}: backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "auto":
        return "cuda" if b.is_cuda else "cpu"
    if backend == "cpu" and b.is_cuda:
        raise ValueError(f"{name}: backend='cpu' needs CPU tensors, got CUDA tensors; use backend='cuda' or 'auto'")
    if backend == "cuda" and not b.is_cuda and not cuda_simulator_enabled():
        raise ValueError(
            f"{name}: backend='cuda' needs CUDA tensors (no GPU tensors given); use backend='cpu' or 'auto', "
            "or set NUMBA_ENABLE_CUDASIM=1 to run the CUDA kernels in numba's simulator")
    return backend


def _check_inputs(a, b, h0, backend):
    """Validate the arguments of :func:`linear_scan`; return the backend name to use."""
    name = "linear_scan"
    B, T, C = check_b(b, name)
    if not isinstance(a, torch.Tensor):
        raise TypeError(f"{name}: a must be a torch.Tensor, got {type(a).__name__}")
    if a.dtype != b.dtype:
        raise TypeError(f"{name}: a has dtype {a.dtype} but b has {b.dtype}; they must match")
    allowed = {3: (B, T, C), 2: (T, C), 1: (C,)}
    if a.dim() not in allowed or tuple(a.shape) != allowed[a.dim()]:
        raise ValueError(
            f"{name}: a must have shape (B, T, C)={allowed[3]}, (T, C)={allowed[2]} or (C,)={allowed[1]} "
            f"to match b; got {tuple(a.shape)}")
    if a.device != b.device:
        raise ValueError(f"{name}: a is on {a.device} but b is on {b.device}; they must be on one device")
    return check_h0_and_backend(b, h0, backend, name)


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
        mod = _backend_module(backend)
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
        mod = _backend_module(ctx.backend)
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
