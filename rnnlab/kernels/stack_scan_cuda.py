"""CUDA backend for ``modal_stack_scan``: numba-cuda kernels.

One thread per (batch row, channel) walks through time and advances every
layer of the stack at each step, exactly like the CPU kernel's inner loop
(:mod:`.stack_scan_cpu`); neighbouring threads own neighbouring channels, so
each step is one coalesced read of ``b`` and coalesced reads and writes of
the states. The backward pass (formulas in :mod:`.stack_scan_torch`) is one
thread per (batch row, channel) walking backwards in time through all
layers. It keeps each layer's carry (the gradient reaching the layer's state
at step t-1) in a ``(k, B, C)`` scratch array in global memory (a thread
reads back only what it wrote itself: no synchronisation), and the
gradient reaching layer i-1 through α in a register.

``dL/dλ`` needs a sum over the batch: each thread writes its partial sums
over time and layers (the direct part and ``Σ p w``, see
:mod:`.stack_scan_torch`) into ``(B, C)`` arrays, and torch sums them over
the batch (no atomics). Those partial sums are in the kernel's precision
(float32 kernels never compute in double precision: slow on consumer GPUs).

As for every CUDA op (:func:`._backend.launch_kernel`): tensors are wrapped
without copying and kernels are launched on torch's current stream on a real
GPU; under numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) CPU tensors are
accepted and the kernels get NumPy views. Every kernel is compiled to PTX in the tests
(:func:`kernel_signatures`). ``h0`` is an array plus a flag ``has_h0`` (a
0x0 placeholder when there is no initial state), ``g_inner`` likewise.
"""
import math

import torch

from ._backend import WIDE_DTYPES, cuda_simulator_enabled, launch, numba_cuda
from .stack_scan_torch import abs2

cuda = numba_cuda()     # None without numba-cuda: an error on use only (launch)

# Steps summed into a block sum before it is added to the running sums of dL/dλ (as on the CPU).
FLUSH_STEPS = 16

# Threads per block. The simulator runs every thread as an OS thread: tiny blocks there.
THREADS = 8 if cuda_simulator_enabled() else 256


# ---------------------------------------------------------------------------
# Kernels, plain Python functions compiled by cuda.jit on first use. Arrays:
# lam (C,), lam2 = |λ|² (C,) (real), b, last, g_last, G (B, T, C); inner,
# g_inner (B, T, k-1, C); h0, grad_h0, direct (B, C); through_c (B, C)
# (real); carry (k, B, C). Consecutive threads own consecutive channels.
# ---------------------------------------------------------------------------

def forward_sequential(lam, lam2, b, h0, has_h0, depth, last, inner):
    """One thread per (i, c): every layer's state at every step, in order."""
    B, T, C = b.shape
    n = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if n >= B * C:
        return
    i = n // C
    c = n % C
    zero = b.dtype.type(0)
    one = lam2.dtype.type(1)
    lc = lam[c]
    l2 = lam2[c]
    start = h0[i, c] if has_h0 else zero
    top = depth - 1
    for t in range(T):
        bt = b[i, t, c]
        below = start                   # s^(layer-1)_{t-1}, from the previous layer's iteration
        for layer in range(depth):
            if t == 0:
                own = start
            elif layer == top:
                own = last[i, t - 1, c]
            else:
                own = inner[i, t - 1, layer, c]
            if layer == 0:
                new = lc * own + bt
            else:
                p = below.real * below.real + below.imag * below.imag
                alpha = one / math.sqrt(one + l2 * p)
                new = (alpha * lc) * own + bt
            if layer == top:
                last[i, t, c] = new
            else:
                inner[i, t, layer, c] = new
            below = own


def backward_sequential(lam, lam2, last, inner, h0, has_h0, g_last, g_inner, has_g_inner, depth,
                        G, carry, direct, through_c, grad_h0):
    """One thread per (i, c), backwards in time through every layer (see :mod:`.stack_scan_torch`)."""
    B, T, C = last.shape
    n = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if n >= B * C:
        return
    i = n // C
    c = n % C
    zero = last.dtype.type(0)
    rzero = lam2.dtype.type(0)
    one = lam2.dtype.type(1)
    half = lam2.dtype.type(0.5)
    two = lam2.dtype.type(2)
    lc = lam[c]
    l2 = lam2[c]
    start = h0[i, c] if has_h0 else zero
    top = depth - 1
    for layer in range(depth):
        carry[layer, i, c] = zero
    d_acc = zero                        # Σ α conj(s_prev) z
    e_acc = rzero                       # Σ p w
    d_blk = zero                        # the same over the last FLUSH_STEPS steps: summing in two
    e_blk = rzero                       # stages keeps single-precision round-off small for long T
    for s in range(T):
        t = T - 1 - s
        ext = zero                      # 2 |λ|² w s^(layer-1)_{t-1}: to the layer below
        total = zero                    # dL/db_t
        for layer in range(top, -1, -1):
            z = carry[layer, i, c]
            if layer == top:
                z = z + g_last[i, t, c]
            elif has_g_inner:
                z = z + g_inner[i, t, layer, c]
            total = total + z
            if t == 0:
                own = start
            elif layer == top:
                own = last[i, t - 1, c]
            else:
                own = inner[i, t - 1, layer, c]
            q = own.conjugate() * z
            if layer == 0:
                d_blk = d_blk + q
                carry[layer, i, c] = lc.conjugate() * z + ext
            else:
                below = start if t == 0 else inner[i, t - 1, layer - 1, c]
                p = below.real * below.real + below.imag * below.imag
                alpha = one / math.sqrt(one + l2 * p)
                d_blk = d_blk + alpha * q
                u = lc.real * q.real + lc.imag * q.imag
                w = -half * (alpha * alpha * alpha) * u
                e_blk = e_blk + p * w
                carry[layer, i, c] = (alpha * lc).conjugate() * z + ext
                ext = (two * l2 * w) * below
        G[i, t, c] = total
        if (s + 1) % FLUSH_STEPS == 0:
            d_acc = d_acc + d_blk
            e_acc = e_acc + e_blk
            d_blk = zero
            e_blk = rzero
    d_acc = d_acc + d_blk
    e_acc = e_acc + e_blk
    acc = carry[0, i, c]
    for layer in range(1, depth):
        acc = acc + carry[layer, i, c]
    grad_h0[i, c] = acc
    direct[i, c] = d_acc
    through_c[i, c] = e_acc


KERNELS = {
    "forward_sequential": forward_sequential,
    "backward_sequential": backward_sequential,
}


# ---------------------------------------------------------------------------
# Compiling and launching.
# ---------------------------------------------------------------------------

def kernel_signatures():
    """Every ``(name, python_function, signature)`` this backend can launch
    (for ``numba.cuda.compile_ptx``; see ``tests/test_ptx.py``)."""
    from numba import types

    out = []
    for dt, rt in ((types.float32, types.float32), (types.float64, types.float64),
                   (types.complex64, types.float32), (types.complex128, types.float64)):
        x1, x2, x3, x4 = (types.Array(dt, d, "C") for d in (1, 2, 3, 4))
        r1, r2 = types.Array(rt, 1, "C"), types.Array(rt, 2, "C")
        flag, count = types.boolean, types.int64
        # lam, lam2, b, h0, has_h0, depth, last, inner
        fwd = (x1, r1, x3, x2, flag, count, x3, x4)
        # lam, lam2, last, inner, h0, has_h0, g_last, g_inner, has_g_inner, depth, G, carry, direct, through_c, grad_h0
        bwd = (x1, r1, x3, x4, x2, flag, x3, x4, flag, count, x3, x3, x2, r2, x2)
        out.append(("forward_sequential", forward_sequential, fwd))
        out.append(("backward_sequential", backward_sequential, bwd))
    return out


def _launch(name, like, args):
    """Launch kernel ``name`` with one thread per (batch row, channel) of ``like`` (B, T, C)."""
    B, T, C = like.shape
    grid = (B * C + THREADS - 1) // THREADS
    launch(KERNELS[name], grid, THREADS, like, args, "modal_stack_scan")


def _placeholder(dims, like):
    return torch.empty((0,) * dims, dtype=like.dtype, device=like.device)


def forward(lam, b, depth, h0):
    B, T, C = b.shape
    b = b.contiguous()
    last = torch.empty_like(b)
    inner = torch.empty((B, T, depth - 1, C), dtype=b.dtype, device=b.device)
    has_h0 = h0 is not None
    _launch("forward_sequential", b,
            (lam.contiguous(), abs2(lam).contiguous(), b, h0 if has_h0 else _placeholder(2, b), has_h0,
             int(depth), last, inner))
    return last, inner




def backward(lam, last, inner, h0, g_last, g_inner):
    B, T, C = last.shape
    depth = inner.shape[2] + 1
    lam2 = abs2(lam).contiguous()
    G = torch.empty_like(last)
    carry = torch.empty((depth, B, C), dtype=last.dtype, device=last.device)
    direct = torch.empty((B, C), dtype=last.dtype, device=last.device)
    through_c = torch.empty((B, C), dtype=lam2.dtype, device=last.device)
    grad_h0 = torch.empty((B, C), dtype=last.dtype, device=last.device)
    has_h0 = h0 is not None
    has_g_inner = g_inner is not None
    _launch("backward_sequential", last,
            (lam.contiguous(), lam2, last.contiguous(), inner.contiguous(),
             h0 if has_h0 else _placeholder(2, last), has_h0,
             g_last.contiguous(), g_inner if has_g_inner else _placeholder(4, last), has_g_inner, int(depth),
             G, carry, direct, through_c, grad_h0))
    # Sum the per-(batch, channel) partial sums over the batch in double precision.
    wide = WIDE_DTYPES[last.dtype]
    grad_lam = direct.to(wide).sum(0) + 2 * lam.to(wide) * through_c.to(torch.float64).sum(0)
    return grad_lam.to(last.dtype), G, (grad_h0 if has_h0 else None)
