"""``recurrent_cell``: the time loop of an RNN, LSTM, GRU or CfC as one op.

The cells of Tumma et al. (2024), appendix A.4, with every recurrent matrix a
plain ``(H, H)`` matrix (the models build ``W_rec(r, s) = (W1 W2) ⊙ M`` and
pass it in). Three interchangeable backends implement the interface
documented in :mod:`.cells_torch`:

- ``"torch"``: :mod:`rnnlab.kernels.cells_torch`, readable loops (the oracle);
- ``"cpu"``:   :mod:`rnnlab.kernels.cells_cpu`, numba ``njit(parallel=True)``;
- ``"cuda"``:  :mod:`rnnlab.kernels.cells_cuda`, numba-cuda kernels.

Each backend's forward returns the states and the gates' activations; its
backward returns the pre-activation gradients ``δpre`` by the hand-written
backward through time. The matrices' gradient ``∂L/∂W[g] = Σ_{b,t} δpre_g ⊗ u_g``
is then one matrix product over all steps (:func:`.cells_torch.weight_grad`),
and the input drive's gradient is ``δpre`` itself.
"""
import torch
from torch.autograd.function import once_differentiable

from . import cells_torch
from ._backend import REAL_DTYPES as DTYPES, backend_module, check_dtype, check_like, check_tensor, resolve_backend
from .cells_torch import GATES, KINDS


def check_kind(kind, name):
    """Validate ``kind``; return its number of gates G."""
    if not isinstance(kind, str) or kind not in KINDS:
        raise ValueError(f"{name}: kind must be one of {KINDS}, got {kind!r}")
    return GATES[kind]


def _check_inputs(kind, xp, W, h0, c0, backend):
    name = "recurrent_cell"
    G = check_kind(kind, name)
    for arg, x in (("xp", xp), ("W", W), ("h0", h0)):
        check_tensor(x, arg, name)
    if xp.dim() != 4 or xp.shape[2] != G:
        raise ValueError(f"{name}: for kind={kind!r} xp must have shape (B, T, {G}, H) (the input drive of "
                         f"each of its {G} gates), got {tuple(xp.shape)}")
    B, T, _, H = xp.shape
    if B == 0 or T == 0 or H == 0:
        raise ValueError(f"{name}: xp must have B, T, H >= 1, got {tuple(xp.shape)}")
    if tuple(W.shape) != (G, H, H):
        raise ValueError(f"{name}: for kind={kind!r} W must have shape (G, H, H) = {(G, H, H)} to match xp "
                         f"{tuple(xp.shape)}, got {tuple(W.shape)}")
    if tuple(h0.shape) != (B, H):
        raise ValueError(f"{name}: h0 must have shape (B, H) = {(B, H)}, got {tuple(h0.shape)}")
    if kind == "lstm":
        if c0 is None:
            raise ValueError(f"{name}: kind='lstm' needs the initial cell state c0 (B, H)")
        check_tensor(c0, "c0", name)
        if tuple(c0.shape) != (B, H):
            raise ValueError(f"{name}: c0 must have shape (B, H) = {(B, H)}, got {tuple(c0.shape)}")
    elif c0 is not None:
        raise ValueError(f"{name}: c0 is the LSTM's cell state; kind={kind!r} has none (pass c0=None)")
    check_dtype(xp, "xp", name, DTYPES)
    for arg, x in (("W", W), ("h0", h0), ("c0", c0)):
        if x is not None:
            check_like(x, arg, xp, "xp", name)
    return resolve_backend(xp.device, backend, name)


class RecurrentCellFunction(torch.autograd.Function):
    """Autograd wrapper: the chosen backend's forward and hand-written backward."""

    @staticmethod
    def forward(ctx, xp, W, h0, c0, kind, backend):
        mod = backend_module("cells", backend)
        with torch.no_grad():
            xp_, W_, h0_ = xp.detach().contiguous(), W.detach().contiguous(), h0.detach().contiguous()
            c0_ = None if c0 is None else c0.detach().contiguous()
            hs, cs, acts = mod.forward(kind, xp_, W_, h0_, c0_)
        ctx.save_for_backward(W_, h0_, c0_, hs, cs, acts)
        ctx.kind, ctx.backend = kind, backend
        ctx.set_materialize_grads(False)
        return (hs, cs) if kind == "lstm" else hs

    @staticmethod
    @once_differentiable
    def backward(ctx, g_hs, g_cs=None):
        W, h0, c0, hs, cs, acts = ctx.saved_tensors
        if g_hs is None:
            g_hs = torch.zeros_like(hs)
        g_hs = g_hs.contiguous()
        g_cs = None if g_cs is None else g_cs.contiguous()
        g_pre, g_h0, g_c0 = backend_module("cells", ctx.backend).backward(
            ctx.kind, W, h0, c0, hs, cs, acts, g_hs, g_cs)
        g_W = cells_torch.weight_grad(ctx.kind, h0, hs, acts, g_pre) if ctx.needs_input_grad[1] else None
        return (g_pre if ctx.needs_input_grad[0] else None, g_W,
                g_h0 if ctx.needs_input_grad[2] else None,
                g_c0 if ctx.kind == "lstm" and ctx.needs_input_grad[3] else None, None, None)


def recurrent_cell(kind, xp, W, h0, c0=None, *, backend="auto"):
    """Hidden states of an RNN, LSTM, GRU or CfC over a whole sequence, by one op.

    Parameters
    ----------
    kind : ``"rnn"``, ``"lstm"``, ``"gru"`` or ``"cfc"``
        The cell; its equations and gate order are in :mod:`.cells_torch`.
    xp : Tensor ``(B, T, G, H)``
        The input drive ``W_i x_t + b`` of each of the cell's G gates (1, 4,
        3, 3) at every step. float32 or float64.
    W : Tensor ``(G, H, H)``
        The gates' recurrent matrices (rows are outputs, as torch's
        ``weight_hh``). Any matrix: low rank and sparsity live in how the model
        builds it.
    h0 : Tensor ``(B, H)``
        The initial hidden state.
    c0 : Tensor ``(B, H)`` or None
        The LSTM's initial cell state; ``None`` for the other cells.
    backend : ``"auto"``, ``"torch"``, ``"cpu"`` or ``"cuda"``
        ``"auto"`` takes the CUDA kernels for CUDA tensors and the CPU kernel
        otherwise; ``"torch"`` is the readable reference loop.

    Returns
    -------
    hs : Tensor ``(B, T, H)``
        The hidden state after every step.
    cs : Tensor ``(B, T, H)`` or None
        The LSTM's cell state after every step; ``None`` for the other cells.

    Differentiable with respect to ``xp``, ``W``, ``h0`` and ``c0`` by a
    hand-written backward through time (never autograd through a kernel).
    """
    name = _check_inputs(kind, xp, W, h0, c0, backend)
    out = RecurrentCellFunction.apply(xp, W, h0, c0, kind, name)
    return out if kind == "lstm" else (out, None)
