"""CPU backend for ``modal_stack_scan``: numba kernels, parallel over (batch, channels).

Like :mod:`.scan_cpu`, each parallel *job* owns one batch row and one
contiguous block of channels and walks through time; here it advances *all*
layers at each step (layer i at step t needs only layers i and i-1 at step
t-1, both in the rows written at step t-1, still in the L1 cache). The
innermost loop runs over the block's channels, contiguous in memory, so LLVM
vectorises it. The drive ``b_t`` is read from memory once per step for all
layers.

Memory layout of the saved states: the last layer in its own contiguous
``(B, T, C)`` array (the op's output, read by the model's read-out without a
copy) and layers 1 .. k-1 in one ``(B, T, k-1, C)`` array, so that a job
writes (forward) and reads (backward) two steady streams of addresses.

The backward pass (formulas in :mod:`.stack_scan_torch`) walks time
backwards, layers from k down to 1 and — following :mod:`.scan_cpu`'s rule
of walking memory in one direction — channels downwards too. Per job it keeps
``carry[i]``, the gradient that reaches layer i's state at step t-1 through
step t, and ``ext``, the gradient that reaches layer i-1 through α. It sums
the two parts of ``dL/dλ`` (direct, and through ``|λ|²``) per (batch row,
channel): over ``FLUSH_STEPS`` steps in the states' precision, then into
double-precision arrays ``(B, C)`` (double-precision accumulators inside the
inner loop halve its vector width: the backward pass took 1.5x longer); the
caller sums them over the batch.

The tricks of :mod:`.scan_cpu` apply: unsigned channel indices (no check for
negative indices in the inner loop, which would block vectorisation), thread
count matched to torch (:func:`._backend.run_channel_blocks`), one thread for small
problems. Two more keep the inner loops vectorised: they have no branches
(the backward pass adds the loss gradients into the carries in a separate
loop), and ``error_model="numpy"`` (a division by zero gives inf instead of
raising, which would need a check of every divisor: numba's default
``"python"`` error model keeps LLVM from vectorising the loop at all).
``α = 1 / sqrt(1 + |λ|² |s|²)`` is computed from the previous layer's saved
state in both passes (one square root and one division per element and
layer; cheaper than storing and reloading α). Constants are of the array's
dtype, so float32 kernels never compute in double precision. ``fastmath``
stays off: the same IEEE operations as the torch reference.

Measured (2 cores, B = 16, T = 1024, C = 128, complex64, depth 4):
forward 5-8 ms, backward about 15 ms; the forward pass is limited by writing
the 64 MB of saved states.
"""
import numpy as np
import torch
from numba import njit, prange, types
from numba.extending import intrinsic, overload

from ._backend import WIDE_DTYPES, as_numpy, run_channel_blocks
from .stack_scan_torch import abs2

# Problems whose k layers hold fewer elements (B * k*T * C) than this run on one thread.
SERIAL_BELOW = 1 << 16


# ---------------------------------------------------------------------------
# A real number times a complex one, without promoting the real number to a
# complex one first: numba computes ``x * z`` as ``(x + 0j) * z``, and the
# products with that zero (which LLVM may not drop with fastmath off) cost
# four operations per element. Same values for finite inputs.
# ---------------------------------------------------------------------------

@intrinsic
def _complex_from(typingctx, re, im):
    """The complex number ``re + i im`` of the precision of ``re`` and ``im``."""
    if re != im or re not in (types.float32, types.float64):
        return None
    sig = (types.complex64 if re == types.float32 else types.complex128)(re, im)

    def codegen(context, builder, signature, args):
        z = context.make_complex(builder, signature.return_type)
        z.real, z.imag = args
        return z._getvalue()
    return sig, codegen


def _scale(x, z):
    """``x * z`` for a real ``x``."""
    return x * z


@overload(_scale)
def _scale_impl(x, z):
    if isinstance(z, types.Complex):
        return lambda x, z: _complex_from(x * z.real, x * z.imag)
    return lambda x, z: x * z


# ---------------------------------------------------------------------------
# One step of one layer over channels first .. last of a job. Rows are 1-d
# contiguous arrays (views of one time step of one layer); channels are
# global indices into them. Forward steps walk channels upwards, backward
# steps downwards.
# ---------------------------------------------------------------------------


@njit(cache=True, error_model="numpy")
def _forward_first(lam, own_prev, bt, dst, first, n):
    """Layer 1: ``dst = λ own_prev + b_t``."""
    for k in range(n):
        c = np.uint64(first + k)
        dst[c] = lam[c] * own_prev[c] + bt[c]


@njit(cache=True, error_model="numpy")
def _forward_corrected(lam, lam2, below_prev, own_prev, bt, dst, first, n):
    """Layer i >= 2: ``dst = (α λ) own_prev + b_t``, α = 1/sqrt(1 + |λ|² |below_prev|²)."""
    one = lam2.dtype.type(1)
    for k in range(n):
        c = np.uint64(first + k)
        x = below_prev[c]
        p = x.real * x.real + x.imag * x.imag
        alpha = one / np.sqrt(one + lam2[c] * p)
        dst[c] = _scale(alpha, lam[c]) * own_prev[c] + bt[c]


@njit(parallel=True, cache=True, error_model="numpy")
def forward_kernel(lam, lam2, b, h0, depth, block, last, inner):
    """States of all layers: ``last`` (B, T, C) is layer k, ``inner`` (B, T, k-1, C) layers 1 .. k-1.

    ``h0`` is a (B, C) array (zeros when there is no initial state).
    """
    B, T, C = b.shape
    n_blocks = (C + block - 1) // block
    top = depth - 1
    for job in prange(B * n_blocks):
        i = job // n_blocks
        first = (job % n_blocks) * block
        n = min(first + block, C) - first
        for t in range(T):
            bt = b[i, t]
            for layer in range(depth):
                dst = last[i, t] if layer == top else inner[i, t, layer]
                if t == 0:
                    own_prev = h0[i]
                    below_prev = h0[i]
                else:
                    own_prev = last[i, t - 1] if layer == top else inner[i, t - 1, layer]
                    below_prev = inner[i, t - 1, layer - 1] if layer > 0 else own_prev
                if layer == 0:
                    _forward_first(lam, own_prev, bt, dst, first, n)
                else:
                    _forward_corrected(lam, lam2, below_prev, own_prev, bt, dst, first, n)


@njit(cache=True, error_model="numpy")
def _add_into(dst, src, last, n):
    """``dst += src`` over channels last .. last - n + 1."""
    for k in range(n):
        c = np.uint64(last - k)
        dst[c] += src[c]


@njit(cache=True, error_model="numpy")
def _backward_first(lam, own_prev, carry, ext, G, direct, last, n):
    """Layer 1 at step t. On entry ``carry`` holds z (the total gradient of
    the state): dL/db += z; direct += conj(s_prev) z; carry = conj(λ) z + ext."""
    for k in range(n):
        c = np.uint64(last - k)
        z = carry[c]
        G[c] += z
        direct[c] += own_prev[c].conjugate() * z
        carry[c] = lam[c].conjugate() * z + ext[c]


@njit(cache=True, error_model="numpy")
def _backward_corrected(lam, lam2, below_prev, own_prev, carry, ext, G, direct, through_c, last, n):
    """Layer i >= 2 at step t (see :mod:`.stack_scan_torch`). On entry
    ``carry`` holds z: dL/db += z; q = conj(s_prev) z; direct += α q;
    w = -α³ Re(conj(λ) q) / 2; through_c += p w; carry = conj(α λ) z + ext;
    ext = 2 |λ|² w below_prev (for layer i-1)."""
    one = lam2.dtype.type(1)
    half = lam2.dtype.type(0.5)
    two = lam2.dtype.type(2)
    for k in range(n):
        c = np.uint64(last - k)
        z = carry[c]
        G[c] += z
        x = below_prev[c]
        p = x.real * x.real + x.imag * x.imag
        alpha = one / np.sqrt(one + lam2[c] * p)
        q = own_prev[c].conjugate() * z
        direct[c] += _scale(alpha, q)
        lc = lam[c]
        u = lc.real * q.real + lc.imag * q.imag
        w = -half * (alpha * alpha * alpha) * u
        through_c[c] += p * w
        carry[c] = _scale(alpha, lc).conjugate() * z + ext[c]
        ext[c] = _scale(two * lam2[c] * w, x)


# Steps between two flushes of a job's partial sums of dL/dλ (kept in the
# dtype of the states, as wide accumulators would halve the vector width of
# the inner loop) into the double-precision accumulators.
FLUSH_STEPS = 16


@njit(parallel=True, cache=True, error_model="numpy")
def backward_kernel(lam, lam2, last, inner, h0, g_last, g_inner, has_g_inner, depth, block,
                    G, direct, through_c, grad_h0):
    """One reverse pass over time for all layers.

    Writes ``G = dL/db`` (B, T, C) and ``grad_h0`` (B, C); adds the direct
    part of ``dL/dλ`` into ``direct`` (B, C) and ``Σ p w`` into ``through_c``
    (B, C) (both zero on entry, of a wider dtype: the kernel sums
    ``FLUSH_STEPS`` steps of every layer in the states' precision, then adds
    that partial sum into them). ``g_inner`` is ``dL/d inner`` when
    ``has_g_inner``, else a placeholder. The inner loops have no branches
    (LLVM would not vectorise them otherwise): the loss gradients are first
    added into the carries; ``G``'s row and ``ext`` are zeroed at each step.
    """
    B, T, C = last.shape
    n_blocks = (C + block - 1) // block
    top = depth - 1
    for job in prange(B * n_blocks):
        i = job // n_blocks
        first = (job % n_blocks) * block
        n = min(first + block, C) - first
        hi = first + n - 1                      # channels run hi .. first
        carry = np.zeros((depth, C), dtype=last.dtype)
        ext = np.empty(C, dtype=last.dtype)
        part_direct = np.zeros(C, dtype=last.dtype)
        part_c = np.zeros(C, dtype=lam2.dtype)
        for s in range(T):
            t = T - 1 - s
            Gt = G[i, t]
            Gt[first:first + n] = 0
            ext[first:first + n] = 0
            _add_into(carry[top], g_last[i, t], hi, n)
            if has_g_inner:
                for layer in range(top - 1, -1, -1):
                    _add_into(carry[layer], g_inner[i, t, layer], hi, n)
            for layer in range(top, -1, -1):
                if t == 0:
                    own_prev = h0[i]
                    below_prev = h0[i]
                else:
                    own_prev = last[i, t - 1] if layer == top else inner[i, t - 1, layer]
                    below_prev = inner[i, t - 1, layer - 1] if layer > 0 else own_prev
                if layer == 0:
                    _backward_first(lam, own_prev, carry[layer], ext, Gt, part_direct, hi, n)
                else:
                    _backward_corrected(lam, lam2, below_prev, own_prev, carry[layer], ext, Gt,
                                        part_direct, part_c, hi, n)
            if (s + 1) % FLUSH_STEPS == 0 or s == T - 1:
                for c in range(first, first + n):
                    direct[i, c] += part_direct[c]
                    through_c[i, c] += part_c[c]
                    part_direct[c] = 0
                    part_c[c] = 0
        # what is left of every layer's gradient after step 1 reaches h0
        for c in range(first, first + n):
            acc = carry[0, c]
            for layer in range(1, depth):
                acc += carry[layer, c]
            grad_h0[i, c] = acc


# ---------------------------------------------------------------------------
# Torch wrappers.
# ---------------------------------------------------------------------------

def _work(B, T, C, depth):
    """The shape :func:`._run` sizes the thread pool by: k layers of (B, T, C)."""
    return (B, T * depth, C)


def _run(kernel, shape, inputs, outputs):
    run_channel_blocks(kernel, shape, SERIAL_BELOW, inputs, outputs)


def forward(lam, b, depth, h0):
    B, T, C = b.shape
    last = torch.empty((B, T, C), dtype=b.dtype)
    inner = torch.empty((B, T, depth - 1, C), dtype=b.dtype)
    start = torch.zeros((B, C), dtype=b.dtype) if h0 is None else h0
    _run(forward_kernel, _work(B, T, C, depth),
         (as_numpy(lam), as_numpy(abs2(lam)), as_numpy(b), as_numpy(start), depth),
         (as_numpy(last), as_numpy(inner)))
    return last, inner


def backward(lam, last, inner, h0, g_last, g_inner):
    B, T, C = last.shape
    depth = inner.shape[2] + 1
    wide = WIDE_DTYPES[last.dtype]
    G = torch.empty((B, T, C), dtype=last.dtype)
    direct = torch.zeros((B, C), dtype=wide)
    through_c = torch.zeros((B, C), dtype=torch.float64)
    grad_h0 = torch.empty((B, C), dtype=last.dtype)
    start = torch.zeros((B, C), dtype=last.dtype) if h0 is None else h0
    has_g_inner = g_inner is not None
    g_inner_arr = g_inner if has_g_inner else torch.empty((0, 0, 0, 0), dtype=last.dtype)
    _run(backward_kernel, _work(B, T, C, depth),
         (as_numpy(lam), as_numpy(abs2(lam)), as_numpy(last), as_numpy(inner), as_numpy(start),
          as_numpy(g_last), as_numpy(g_inner_arr), has_g_inner, depth),
         (as_numpy(G), as_numpy(direct), as_numpy(through_c), as_numpy(grad_h0)))
    lam_w = lam.to(wide)
    grad_lam = (direct.sum(0) + 2 * lam_w * through_c.sum(0)).to(last.dtype)
    return grad_lam, G, (None if h0 is None else grad_h0)
