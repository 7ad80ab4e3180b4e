"""CUDA backend for ``recurrent_cell``: numba-cuda kernels, one thread block per batch element.

The equations, gate orders and the backward are those of :mod:`.cells_torch`;
the layout of the products is that of :mod:`.cells_cpu`. A block runs the
whole sequence of its batch element, step after step; its threads share the
step's work and meet at ``syncthreads`` between the phases of a step:

forward, step t
    1. each thread computes some of the G*H pre-activations,
       ``pre[o] = xp[b, t, o] + Σ_k WT[k, o] h[k]`` (``WT = (H_in, G*H)``, so
       neighbouring threads read neighbouring columns: coalesced; ``h`` is in
       shared memory, read by all threads at once), and its activation, into
       shared memory and ``acts``;
    2. each thread updates some hidden units (and LSTM cells) from the gates.
    The GRU has two rounds of 1: r and z with ``h``, then n with ``r ⊙ h``.
backward, step t
    1. ``δh += g_hs[b, t]`` (``δc += g_cs``), unit by unit;
    2. the pre-activation gradients ``δpre`` of each unit, into shared memory
       and ``g_pre``;
    3. ``δh_{t-1}[k] = Σ_r W[r, k] δpre[r]`` (``W`` as ``(G*H, H_in)``: thread
       k reads column k, neighbours read neighbours), plus the GRU's direct
       terms (its ``W_nᵀ δpre_n`` is a round of its own first).

The state (``h``, ``c``; ``δh``, ``δc``) and the step's gates live in shared
memory, whose size must be known when the kernel is compiled: hidden sizes
up to :data:`MAX_H` (checked, with a clear error, before any launch).

Only what numba's CUDA simulator runs is used: shared memory and
``syncthreads``, no warp shuffles, no atomics. Real GPUs: tensors are wrapped
without copying and kernels are launched on torch's current stream
(:func:`rnnlab.kernels._backend.launch_kernel`). Under
``NUMBA_ENABLE_CUDASIM=1`` CPU tensors are accepted and the kernels get NumPy
views. Every kernel is compiled to PTX in the tests (:func:`kernel_signatures`);
float32 kernels compute in float32 (``math.tanh``/``math.exp`` of a float32
are ``tanhf``/``expf``). This backend has not yet been run on a real GPU (none
was available when it was written): only in the simulator and through
``compile_ptx``; ``tests/gpu/test_cells_gpu.py`` is ready for ``make test-gpu``.

One block per batch element keeps a step's threads together (they meet at
``syncthreads`` every step) but leaves most of a GPU idle for small batches;
the CPU kernel's blocks of four elements have no counterpart here.
"""
import math

import torch

from ._backend import cuda_simulator_enabled, launch, numba_cuda

cuda = numba_cuda()     # None without numba-cuda: an error on use only (launch)

KIND_CODES = {"rnn": 0, "lstm": 1, "gru": 2, "cfc": 3}
RNN, LSTM, GRU, CFC = 0, 1, 2, 3

# Threads per block. The simulator runs every thread as an OS thread: a tiny block there
# (fewer threads than gates and units, so every loop below takes several rounds).
THREADS = 8 if cuda_simulator_enabled() else 256

# Largest hidden size: the shared arrays are (4 * MAX_H,) for the gates and (MAX_H,) for each state
# (24 KiB in float64 for the forward's three, below the 48 KiB a block may use statically).
MAX_H = 512
MAX_GH = 4 * MAX_H          # (a constant: shared shapes must be known at compile time)


# ---------------------------------------------------------------------------
# Kernels: grid = B blocks (block b = batch element b), THREADS threads each.
# ---------------------------------------------------------------------------

def forward_sequence(kind, xp, WT, h0, c0, hs, cs, acts):
    """``xp``, ``acts`` ``(B, T, G*H)``; ``WT`` ``(H, G*H)``; ``h0``, ``c0`` ``(B, H)``; ``hs``, ``cs``
    ``(B, T, H)`` (``c0``, ``cs``: empty stand-ins but for the LSTM)."""
    b = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    nth = cuda.blockDim.x
    T = xp.shape[1]
    GH = xp.shape[2]
    H = h0.shape[1]
    h = cuda.shared.array(MAX_H, dtype=xp.dtype)
    c = cuda.shared.array(MAX_H, dtype=xp.dtype)
    a = cuda.shared.array(MAX_GH, dtype=xp.dtype)
    one = xp.dtype.type(1)
    for j in range(tid, H, nth):
        h[j] = h0[b, j]
        if kind == LSTM:
            c[j] = c0[b, j]
    cuda.syncthreads()
    for t in range(T):
        if kind == GRU:
            for o in range(tid, 2 * H, nth):                        # r, z
                acc = xp[b, t, o]
                for k in range(H):
                    acc += WT[k, o] * h[k]
                y = one / (one + math.exp(-acc))
                a[o] = y
                acts[b, t, o] = y
            cuda.syncthreads()
            for j in range(tid, H, nth):                            # u = r ⊙ h, in c
                c[j] = a[j] * h[j]
            cuda.syncthreads()
            for j in range(tid, H, nth):                            # n, then h (unit j only)
                o = 2 * H + j
                acc = xp[b, t, o]
                for k in range(H):
                    acc += WT[k, o] * c[k]
                n = math.tanh(acc)
                acts[b, t, o] = n
                z = a[H + j]
                hn = (one - z) * n + z * h[j]
                h[j] = hn
                hs[b, t, j] = hn
            cuda.syncthreads()
            continue
        for o in range(tid, GH, nth):
            acc = xp[b, t, o]
            for k in range(H):
                acc += WT[k, o] * h[k]
            g = o // H
            if kind == RNN or (kind == LSTM and g == 2) or (kind == CFC and g >= 1):
                y = math.tanh(acc)
            else:
                y = one / (one + math.exp(-acc))
            a[o] = y
            acts[b, t, o] = y
        cuda.syncthreads()                                          # every thread has read h
        for j in range(tid, H, nth):
            if kind == RNN:
                hn = a[j]
            elif kind == LSTM:
                cj = a[H + j] * c[j] + a[j] * a[2 * H + j]
                c[j] = cj
                cs[b, t, j] = cj
                hn = a[3 * H + j] * math.tanh(cj)
            else:
                f = a[j]
                hn = f * a[H + j] + (one - f) * a[2 * H + j]
            h[j] = hn
            hs[b, t, j] = hn
        cuda.syncthreads()


def backward_sequence(kind, Wr, h0, c0, hs, cs, acts, g_hs, g_cs, has_gcs, g_pre, g_h0, g_c0):
    """``Wr`` ``(G*H, H)``: ``W`` with its gates' rows stacked; ``acts``, ``g_pre`` ``(B, T, G*H)``;
    ``g_hs``, ``g_cs`` ``(B, T, H)`` (``g_cs`` read only if ``has_gcs``); writes ``g_pre``, ``g_h0``
    and, for the LSTM, ``g_c0``."""
    b = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    nth = cuda.blockDim.x
    T = acts.shape[1]
    GH = acts.shape[2]
    H = h0.shape[1]
    dh = cuda.shared.array(MAX_H, dtype=acts.dtype)
    dc = cuda.shared.array(MAX_H, dtype=acts.dtype)
    tmp = cuda.shared.array(MAX_H, dtype=acts.dtype)
    gp = cuda.shared.array(MAX_GH, dtype=acts.dtype)
    zero = acts.dtype.type(0)
    one = acts.dtype.type(1)
    for j in range(tid, H, nth):
        dh[j] = zero
        dc[j] = zero
    cuda.syncthreads()
    for i in range(T):
        t = T - 1 - i
        for j in range(tid, H, nth):                                # each thread: its units j
            d = dh[j] + g_hs[b, t, j]
            if kind == RNN:
                y = acts[b, t, j]
                gp[j] = d * (one - y * y)
            elif kind == LSTM:
                dcj = dc[j]
                if has_gcs:
                    dcj += g_cs[b, t, j]
                ig, fg, gg, og = acts[b, t, j], acts[b, t, H + j], acts[b, t, 2 * H + j], acts[b, t, 3 * H + j]
                cprev = c0[b, j] if t == 0 else cs[b, t - 1, j]
                tc = math.tanh(cs[b, t, j])
                dcj += d * og * (one - tc * tc)
                gp[j] = dcj * gg * ig * (one - ig)
                gp[H + j] = dcj * cprev * fg * (one - fg)
                gp[2 * H + j] = dcj * ig * (one - gg * gg)
                gp[3 * H + j] = d * tc * og * (one - og)
                dc[j] = dcj * fg
            elif kind == GRU:
                z, n = acts[b, t, H + j], acts[b, t, 2 * H + j]
                gp[2 * H + j] = d * (one - z) * (one - n * n)
            else:
                f, g, k = acts[b, t, j], acts[b, t, H + j], acts[b, t, 2 * H + j]
                gp[j] = d * (g - k) * f * (one - f)
                gp[H + j] = d * f * (one - g * g)
                gp[2 * H + j] = d * (one - f) * (one - k * k)
            dh[j] = d
        cuda.syncthreads()
        r1 = GH
        if kind == GRU:
            for k in range(tid, H, nth):                            # ∂L/∂(r ⊙ h) = W_nᵀ δpre_n, then r, z
                drh = zero
                for r in range(2 * H, 3 * H):
                    drh += Wr[r, k] * gp[r]
                rg, z, n = acts[b, t, k], acts[b, t, H + k], acts[b, t, 2 * H + k]
                hprev = h0[b, k] if t == 0 else hs[b, t - 1, k]
                gp[k] = drh * hprev * rg * (one - rg)
                gp[H + k] = dh[k] * (hprev - n) * z * (one - z)
                tmp[k] = dh[k] * z + drh * rg                       # the direct paths to h_{t-1}
            cuda.syncthreads()
            r1 = 2 * H
        for o in range(tid, GH, nth):
            g_pre[b, t, o] = gp[o]
        for k in range(tid, H, nth):                                # δh_{t-1} = Σ_g W[g]ᵀ δpre_g (+ direct)
            acc = tmp[k] if kind == GRU else zero
            for r in range(r1):
                acc += Wr[r, k] * gp[r]
            dh[k] = acc
        cuda.syncthreads()
    for j in range(tid, H, nth):
        g_h0[b, j] = dh[j]
        if kind == LSTM:
            g_c0[b, j] = dc[j]


KERNELS = {
    "forward_sequence": forward_sequence,
    "backward_sequence": backward_sequence,
}


# ---------------------------------------------------------------------------
# Compiling and launching.
# ---------------------------------------------------------------------------

def kernel_signatures():
    """Every ``(name, python_function, signature)`` this backend can launch (float32 and float64),
    for ``numba.cuda.compile_ptx``."""
    from numba import types as nt

    out = []
    i64, flag = nt.int64, nt.boolean
    for dt in (nt.float32, nt.float64):
        x2, x3 = (nt.Array(dt, k, "C") for k in (2, 3))
        out += [
            ("forward_sequence", forward_sequence, (i64, x3, x2, x2, x2, x3, x3, x3)),
            ("backward_sequence", backward_sequence, (i64, x2, x2, x2, x3, x3, x3, x3, x3, flag, x3, x2, x2)),
        ]
    return out


def _check_size(H):
    if H > MAX_H:
        raise ValueError(f"recurrent_cell: backend='cuda' supports hidden sizes up to {MAX_H} (its state "
                         f"lives in shared memory), got H={H}; use backend='torch' for larger cells")


def _none(like, dims):
    """A 0-sized stand-in for an array the kind does not use (never the alias of another argument:
    the simulator copies every argument back after the kernel)."""
    return torch.empty((0,) * dims, dtype=like.dtype, device=like.device)


def _launch(name, B, like, args):
    launch(KERNELS[name], B, THREADS, like, args, "recurrent_cell")


def forward(kind, xp, W, h0, c0):
    B, T, G, H = xp.shape
    _check_size(H)
    WT = W.detach().permute(2, 0, 1).reshape(H, G * H).contiguous()
    hs = torch.empty(B, T, H, dtype=xp.dtype, device=xp.device)
    cs = torch.empty(B, T, H, dtype=xp.dtype, device=xp.device) if kind == "lstm" else None
    acts = torch.empty(B, T, G, H, dtype=xp.dtype, device=xp.device)
    lstm = kind == "lstm"
    _launch("forward_sequence", B, xp, (KIND_CODES[kind], xp.reshape(B, T, G * H), WT, h0,
                                        c0 if lstm else _none(xp, 2), hs, cs if lstm else _none(xp, 3),
                                        acts.view(B, T, G * H)))
    return hs, cs, acts


def backward(kind, W, h0, c0, hs, cs, acts, g_hs, g_cs):
    B, T, G, H = acts.shape
    _check_size(H)
    lstm = kind == "lstm"
    g_pre = torch.empty(B, T, G, H, dtype=acts.dtype, device=acts.device)
    g_h0 = torch.empty(B, H, dtype=acts.dtype, device=acts.device)
    g_c0 = torch.empty(B, H, dtype=acts.dtype, device=acts.device) if lstm else None
    has_gcs = lstm and g_cs is not None
    _launch("backward_sequence", B, acts,
            (KIND_CODES[kind], W.reshape(G * H, H), h0, c0 if lstm else _none(h0, 2), hs,
             cs if lstm else _none(hs, 3), acts.reshape(B, T, G * H), g_hs, g_cs if has_gcs else _none(hs, 3),
             has_gcs, g_pre.view(B, T, G * H), g_h0, g_c0 if lstm else _none(h0, 2)))
    return g_pre, g_h0, g_c0
