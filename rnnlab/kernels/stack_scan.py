"""``modal_stack_scan``: every layer of the modal LDStack in one pass over time.

The stack of depth k (:class:`rnnlab.models.LDStack`)::

    s^(1)_t = λ ⊙ s^(1)_{t-1} + b_t
    s^(i)_t = α(λ ⊙ s^(i-1)_{t-1}) ⊙ λ ⊙ s^(i)_{t-1} + b_t      i = 2 .. k
    α(z)    = 1 / sqrt(1 + |z|²),   s^(i)_0 = h0 for every layer

Each layer is a linear recurrence with time-varying coefficients
``a_t = α_t λ``, so k calls of :func:`rnnlab.linear_scan` compute it (the
book's first explanation, :meth:`rnnlab.models.LDStack.layer_states_by_scans`).
But layer i at step t needs only layer i-1 at step t-1: all layers can
advance together, one step at a time. This op does exactly that, in one
pass over time that reads the drive once and never materialises the
``(B, T, C)`` coefficients ``a_t`` of k-1 scans; its backward pass is one
reverse pass over time for all layers (formulas in :mod:`.stack_scan_torch`).

One autograd Function dispatches to three interchangeable backends:

- ``"torch"``: :mod:`rnnlab.kernels.stack_scan_torch`, a readable loop over time;
- ``"cpu"``:   :mod:`rnnlab.kernels.stack_scan_cpu`, numba ``njit(parallel=True)``;
- ``"cuda"``:  :mod:`rnnlab.kernels.stack_scan_cuda`, numba-cuda kernels.
"""
import torch

from ._backend import backend_module, check_b, check_h0, check_like, check_tensor, resolve_backend


def _check_inputs(lam, b, depth, h0, backend):
    """Validate the arguments of :func:`modal_stack_scan`; return the backend name to use."""
    name = "modal_stack_scan"
    B, T, C = check_b(b, name)
    check_tensor(lam, "lam", name)
    if tuple(lam.shape) != (C,):
        raise ValueError(f"{name}: lam must have shape (C,)={(C,)} to match b {tuple(b.shape)}, "
                         f"got {tuple(lam.shape)}")
    check_like(lam, "lam", b, "b", name)
    if isinstance(depth, bool) or not isinstance(depth, int):
        raise TypeError(f"{name}: depth must be an int, got {type(depth).__name__}")
    if depth < 1:
        raise ValueError(f"{name}: depth must be >= 1, got {depth}")
    check_h0(b, h0, name)
    return resolve_backend(b.device, backend, name)


class ModalStackScan(torch.autograd.Function):
    """Autograd wrapper: forward and backward of the chosen backend.

    Outputs ``(last, inner)``: the last layer ``(B, T, C)`` and layers
    1 .. k-1 ``(B, T, k-1, C)``, both saved for the backward pass.
    """

    @staticmethod
    def forward(ctx, lam, b, h0, depth, backend):
        mod = backend_module("stack_scan", backend)
        lam_c = lam.detach().contiguous()
        h0_c = None if h0 is None else h0.detach().contiguous()
        with torch.no_grad():
            last, inner = mod.forward(lam_c, b.detach().contiguous(), depth, h0_c)
        ctx.save_for_backward(lam_c, last, inner, h0_c)
        ctx.backend = backend
        ctx.set_materialize_grads(False)
        return last, inner

    @staticmethod
    def backward(ctx, g_last, g_inner):
        lam, last, inner, h0 = ctx.saved_tensors
        if g_last is None:
            g_last = torch.zeros_like(last)
        mod = backend_module("stack_scan", ctx.backend)
        grad_lam, grad_b, grad_h0 = mod.backward(
            lam, last, inner, h0, g_last.contiguous(),
            None if (g_inner is None or inner.shape[2] == 0) else g_inner.contiguous())
        return (grad_lam if ctx.needs_input_grad[0] else None,
                grad_b if ctx.needs_input_grad[1] else None,
                grad_h0 if (h0 is not None and ctx.needs_input_grad[2]) else None,
                None, None)


def modal_stack_scan(lam, b, depth, h0=None, *, backend="auto", return_layers=False):
    """States of the modal LDStack of depth ``depth``, all layers in one pass over time.

    .. math::

        s^{(1)}_t = λ ⊙ s^{(1)}_{t-1} + b_t, \\qquad
        s^{(i)}_t = α\\big(λ ⊙ s^{(i-1)}_{t-1}\\big) ⊙ λ ⊙ s^{(i)}_{t-1} + b_t, \\qquad
        α(z) = \\frac{1}{\\sqrt{1 + |z|^2}}

    with ``s^(i)_0 = h0`` in every layer (also inside α at t = 1).

    Parameters
    ----------
    lam : Tensor ``(C,)``
        Eigenvalues λ, shared by every layer and the batch; the dtype of ``b``.
    b : Tensor ``(B, T, C)``
        Drive ``b_t``, the same in every layer. float32, float64, complex64 or
        complex128 (for real dtypes ``|z|² = z²``).
    depth : int
        Number of layers k >= 1 (depth 1 is ``linear_scan(lam, b, h0)``).
    h0 : Tensor ``(B, C)`` or None
        Initial state of every layer; zeros if None.
    backend : ``"auto"``, ``"torch"``, ``"cpu"`` or ``"cuda"``
        ``"auto"`` takes the CUDA kernels for CUDA tensors and the CPU kernel
        otherwise; ``"torch"`` is the readable reference loop.
    return_layers : bool
        Return every layer instead of the last one.

    Returns
    -------
    Tensor ``(B, T, C)``: the states ``s^(k)_1 .. s^(k)_T`` of the last layer.
    With ``return_layers=True``, a list of ``depth`` tensors ``(B, T, C)``,
    layers 1 .. k (layers 1 .. k-1 are non-contiguous views of one
    ``(B, T, k-1, C)`` buffer; the last layer is contiguous). Differentiable
    with respect to ``lam``, ``b`` and ``h0``.
    """
    name = _check_inputs(lam, b, depth, h0, backend)
    last, inner = ModalStackScan.apply(lam, b, h0, depth, name)
    if return_layers:
        return [inner[:, :, i] for i in range(depth - 1)] + [last]
    return last
