"""CUDA backend for ``neural_memory``: numba-cuda kernels, one thread block per batch element.

The maths, layout and backward dynamics are those of :mod:`.memory_torch`;
the per-step structure is that of :mod:`.memory_cpu`. A step has two kinds
of work:

- the strengths: pops, pushes and read weights, O(W) scalar work along
  running sums, done by thread 0 of the block;
- the values: a read ``r[j] = Σ_c w_c V[c, j]`` and, in the backward pass,
  ``∂L/∂V[c, j] += w_c g_r[j]`` and ``γ_c = Σ_j g_r[j] V[c, j]``, done by all
  threads of the block, each owning the channels ``j = tid, tid + THREADS, ...``
  (neighbouring threads read neighbouring channels: coalesced). ``γ_c`` is
  a sum over channels: each thread's partial sum goes through a tree
  reduction in shared memory (``syncthreads`` between levels).

Threads meet at ``syncthreads`` between the two kinds of work; the read
weights, their count and the scratch strengths live in a per-block scratch
array in global memory (``work``), the counts in shared memory. Only what
numba's CUDA simulator runs is used: shared memory and ``syncthreads``, no
warp shuffles, no atomics.

As for the CPU backend, one device function computes a step forward
(:func:`dev_step_forward`) and one its backward (:func:`dev_step_backward`);
the whole-sequence kernels loop over the steps and the step kernels (for
``NeuralMemory.step``) run one.

Real GPUs: tensors are wrapped without copying and kernels are launched on
torch's current stream (:func:`rnnlab.kernels._backend.launch_kernel`). Under
``NUMBA_ENABLE_CUDASIM=1`` CPU tensors are accepted and the kernels get
NumPy views. Every kernel is compiled to PTX in the tests
(:func:`kernel_signatures`). This backend has not yet been run on a real GPU
(no GPU was available when it was written): only in the simulator and
through ``compile_ptx``.
"""
import torch
from numba import types

from . import memory_cpu
from ._backend import cuda_simulator_enabled, launch, numba_cuda

cuda = numba_cuda()     # None without numba-cuda: an error on use only (launch)

KIND_CODES = {"stack": 0, "queue": 1, "deque": 2}
STACK, QUEUE, DEQUE = 0, 1, 2

# Threads per block: a power of two (tree reduction). The simulator runs every
# thread as an OS thread: a tiny block there.
THREADS = 8 if cuda_simulator_enabled() else 128

# Rows of the per-block scratch array ``work (B, WORK_ROWS, W)``.
WORK_ROWS = 6


def _device(fn):
    """A device function when numba-cuda is present (plain Python otherwise: never launched)."""
    return cuda.jit(device=True)(fn) if cuda is not None else fn


# ---------------------------------------------------------------------------
# Device functions. Thread 0 runs the scalar pieces (as in memory_cpu).
# ---------------------------------------------------------------------------

# The pops are memory_cpu's scalar loops (one row after another along a running
# sum), compiled a second time, as device functions that thread 0 runs.
_pop = _device(memory_cpu.pop.py_func)
_pop_backward = _device(memory_cpu.pop_backward.py_func)


@_device
def _read_weights(s, first, n, step, w, info):
    """Thread 0: the weights ``w[c]`` of the rows read, ``info[0]`` = their count,
    ``info[1]`` = 1 if the read runs out inside the last of them."""
    zero = s.dtype.type(0)
    one = s.dtype.type(1)
    ahead = zero
    k = 0
    cut = 0
    while k < n:
        c = first + k * step
        room = one - ahead
        if room <= zero:
            break
        if s[c] <= room:
            w[c] = s[c]
        else:
            w[c] = room
            cut = 1
        ahead += s[c]
        k += 1
    info[0] = k
    info[1] = cut


@_device
def _head(kind, t, T, h):
    """``(first, n, step, far_is_new)`` of read head h at step t (see memory_cpu.one_step_forward)."""
    if kind == DEQUE:
        if h == 0:
            return T + t, 2 * t + 2, -1, True
        return T - 1 - t, 2 * t + 2, 1, True
    if kind == STACK:
        return t, t + 1, -1, False
    return 0, t + 1, 1, True


@_device
def _block_sum(red, x, tid, nth):
    """Sum of ``x`` over the block's threads (every thread gets it)."""
    red[tid] = x
    cuda.syncthreads()
    stride = nth // 2
    while stride > 0:
        if tid < stride:
            red[tid] += red[tid + stride]
        cuda.syncthreads()
        stride //= 2
    total = red[0]
    cuda.syncthreads()
    return total


@_device
def dev_step_forward(kind, t, T, s_prev, s, V, d, u, r, tmp, w, info, tid, nth):
    """Step t for one batch element; every thread of the block calls it."""
    zero = s.dtype.type(0)
    W = s.shape[0]
    m = V.shape[1]
    for c in range(tid, W, nth):
        s[c] = zero
    cuda.syncthreads()
    if tid == 0:
        if kind == DEQUE:
            lo = T - t
            n = 2 * t
            _pop(s_prev, tmp, lo + n - 1, n, -1, u[0])
            _pop(tmp, s, lo, n, 1, u[1])
            s[lo - 1] = d[1]
            s[lo + n] = d[0]
        elif kind == STACK:
            _pop(s_prev, s, t - 1, t, -1, u[0])
            s[t] = d[0]
        else:
            _pop(s_prev, s, 0, t, 1, u[0])
            s[t] = d[0]
    cuda.syncthreads()
    H = 2 if kind == DEQUE else 1
    for h in range(H):
        first, n, step, far = _head(kind, t, T, h)
        if tid == 0:
            _read_weights(s, first, n, step, w, info)
        cuda.syncthreads()
        nread = info[0]
        for j in range(tid, m, nth):
            acc = zero
            for k in range(nread):
                c = first + k * step
                acc += w[c] * V[c, j]
            r[h, j] = acc
        cuda.syncthreads()


@_device
def dev_step_backward(kind, t, T, s_prev, s, V, d, u, gr, gs, gV, gd, gu, tmp, tmp2, w, gw, info, red, tid, nth):
    """Backward of step t for one batch element: ``gs`` in place (∂L/∂s_t in,
    ∂L/∂s_{t-1} out, zero outside the old rows); every thread calls it."""
    zero = s.dtype.type(0)
    m = V.shape[1]
    H = 2 if kind == DEQUE else 1
    for h in range(H):
        first, n, step, far = _head(kind, t, T, h)
        last = first + (n - 1) * step
        if tid == 0:
            _read_weights(s, first, n, step, w, info)
            info[2] = 1 if (far and info[0] < n and s[last] <= zero) else 0
        cuda.syncthreads()
        nread = info[0]
        for k in range(nread + info[2]):
            c = first + k * step if k < nread else last
            if k >= nread or s[c] > zero or k == 0 or k == n - 1:   # (old rows of strength 0: ∂L/∂s unused)
                partial = zero
                for j in range(tid, m, nth):
                    partial += gr[h, j] * V[c, j]
                    if k < nread:
                        gV[c, j] += w[c] * gr[h, j]
                total = _block_sum(red, partial, tid, nth)
                if tid == 0:
                    gw[c] = total
            elif tid == 0:
                gw[c] = zero
        if tid == 0:
            for k in range(nread):
                c = first + k * step
                if k == nread - 1 and info[1] == 1:     # the read runs out here
                    for k2 in range(k):
                        gs[first + k2 * step] -= gw[c]
                else:
                    gs[c] += gw[c]
            if info[2] == 1:                            # tie min(0, 0) at the far pushed row
                gs[last] += gw[last]
        cuda.syncthreads()
    if tid == 0:
        if kind == DEQUE:
            lo = T - t
            n = 2 * t
            gd[0] = gs[lo + n]
            gd[1] = gs[lo - 1]
            _pop(s_prev, tmp, lo + n - 1, n, -1, u[0])
            gu[1] = _pop_backward(tmp, lo, n, 1, u[1], gs, tmp2)
            gu[0] = _pop_backward(s_prev, lo + n - 1, n, -1, u[0], gs, tmp2)
        else:
            lo = 0
            n = t
            gd[0] = gs[t]
            if kind == STACK:
                gu[0] = _pop_backward(s_prev, t - 1, t, -1, u[0], gs, tmp2)
            else:
                gu[0] = _pop_backward(s_prev, 0, t, 1, u[0], gs, tmp2)
        for c in range(gs.shape[0]):
            if c < lo or c >= lo + n:
                gs[c] = zero
    cuda.syncthreads()


# ---------------------------------------------------------------------------
# Kernels: grid = B blocks (block b = batch element b), THREADS threads each.
# ---------------------------------------------------------------------------

def forward_sequence(kind, V, d, u, S, r, work):
    """Whole sequences: ``S (B, T, W)``, ``r (B, T, H, m)``; ``work (B, WORK_ROWS, W)`` scratch."""
    b = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    nth = cuda.blockDim.x
    info = cuda.shared.array(4, dtype=types.int32)
    T = S.shape[1]
    W = S.shape[2]
    zeros = work[b, 0]
    for c in range(tid, W, nth):
        zeros[c] = S.dtype.type(0)
    cuda.syncthreads()
    for t in range(T):
        s_prev = S[b, t - 1] if t > 0 else zeros
        dev_step_forward(kind, t, T, s_prev, S[b, t], V[b], d[b, t], u[b, t], r[b, t], work[b, 1], work[b, 2],
                         info, tid, nth)


def backward_sequence(kind, V, d, u, S, gr, gS, has_gS, gV, gd, gu, work):
    """Whole sequences backwards in time; ``gV`` must be zero on entry."""
    b = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    nth = cuda.blockDim.x
    info = cuda.shared.array(4, dtype=types.int32)
    red = cuda.shared.array(THREADS, dtype=S.dtype)
    T = S.shape[1]
    W = S.shape[2]
    zeros = work[b, 0]
    gs = work[b, 5]
    for c in range(tid, W, nth):
        zeros[c] = S.dtype.type(0)
        gs[c] = S.dtype.type(0)
    cuda.syncthreads()
    for i in range(T):
        t = T - 1 - i
        if has_gS:
            for c in range(tid, W, nth):
                gs[c] += gS[b, t, c]
        cuda.syncthreads()
        s_prev = S[b, t - 1] if t > 0 else zeros
        dev_step_backward(kind, t, T, s_prev, S[b, t], V[b], d[b, t], u[b, t], gr[b, t], gs, gV[b], gd[b, t],
                          gu[b, t], work[b, 1], work[b, 2], work[b, 3], work[b, 4], info, red, tid, nth)


def forward_step(kind, t, T, s_prev, V, d, u, s, r, work):
    """One step for the batch (``NeuralMemory.step``): ``s (B, W)``, ``r (B, H, m)``."""
    b = cuda.blockIdx.x
    info = cuda.shared.array(4, dtype=types.int32)
    dev_step_forward(kind, t, T, s_prev[b], s[b], V[b], d[b], u[b], r[b], work[b, 1], work[b, 2], info,
                     cuda.threadIdx.x, cuda.blockDim.x)


def backward_step(kind, t, T, s_prev, s, V, d, u, gr, gs, gV, gd, gu, work):
    """Backward of one step for the batch; ``gs (B, W)`` in place."""
    b = cuda.blockIdx.x
    info = cuda.shared.array(4, dtype=types.int32)
    red = cuda.shared.array(THREADS, dtype=s.dtype)
    dev_step_backward(kind, t, T, s_prev[b], s[b], V[b], d[b], u[b], gr[b], gs[b], gV[b], gd[b], gu[b],
                      work[b, 1], work[b, 2], work[b, 3], work[b, 4], info, red, cuda.threadIdx.x, cuda.blockDim.x)


KERNELS = {
    "forward_sequence": forward_sequence,
    "backward_sequence": backward_sequence,
    "forward_step": forward_step,
    "backward_step": backward_step,
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
        x2, x3, x4 = (nt.Array(dt, k, "C") for k in (2, 3, 4))
        out += [
            ("forward_sequence", forward_sequence, (i64, x3, x3, x3, x3, x4, x3)),
            ("backward_sequence", backward_sequence, (i64, x3, x3, x3, x3, x4, x3, flag, x3, x3, x3, x3)),
            ("forward_step", forward_step, (i64, i64, i64, x2, x3, x2, x2, x2, x3, x3)),
            ("backward_step", backward_step, (i64, i64, i64, x2, x2, x3, x2, x2, x3, x2, x3, x2, x2, x3)),
        ]
    return out


def _launch(name, B, like, args):
    launch(KERNELS[name], B, THREADS, like, args, "neural_memory")


def _work(B, W, like):
    return torch.empty(B, WORK_ROWS, W, dtype=like.dtype, device=like.device)


def forward(kind, V, d, u):
    B, T, H = d.shape
    S = torch.empty(B, T, H * T, dtype=V.dtype, device=V.device)
    r = torch.empty(B, T, H, V.shape[2], dtype=V.dtype, device=V.device)
    _launch("forward_sequence", B, V, (KIND_CODES[kind], V.contiguous(), d.contiguous(), u.contiguous(), S, r,
                                       _work(B, H * T, V)))
    return r, S


def backward(kind, V, d, u, S, g_r, g_S):
    B, T, H = d.shape
    g_V = torch.zeros_like(V)
    g_d = torch.empty_like(d)
    g_u = torch.empty_like(u)
    has_gS = g_S is not None
    gS = g_S.contiguous() if has_gS else torch.empty((0, 0, 0), dtype=V.dtype, device=V.device)
    _launch("backward_sequence", B, V, (KIND_CODES[kind], V.contiguous(), d.contiguous(), u.contiguous(),
                                        S.contiguous(), g_r.contiguous(), gS, has_gS, g_V, g_d, g_u,
                                        _work(B, S.shape[2], V)))
    return g_V, g_d, g_u


def step_forward(kind, t, s_prev, V, d_t, u_t):
    B, W = s_prev.shape
    H = d_t.shape[1]
    s = torch.empty(B, W, dtype=V.dtype, device=V.device)
    r = torch.empty(B, H, V.shape[2], dtype=V.dtype, device=V.device)
    _launch("forward_step", B, V, (KIND_CODES[kind], int(t), W // H, s_prev.contiguous(), V, d_t.contiguous(),
                                   u_t.contiguous(), s, r, _work(B, W, V)))
    return s, r


def step_backward(kind, t, s_prev, s_t, V, d_t, u_t, g_r, g_s, g_V):
    B, W = s_prev.shape
    H = d_t.shape[1]
    gs = g_s.detach().clone().contiguous()
    g_d = torch.empty_like(d_t)
    g_u = torch.empty_like(u_t)
    _launch("backward_step", B, V, (KIND_CODES[kind], int(t), W // H, s_prev.contiguous(), s_t.contiguous(), V,
                                    d_t.contiguous(), u_t.contiguous(), g_r.contiguous(), gs, g_V, g_d, g_u,
                                    _work(B, W, V)))
    return gs, g_d, g_u
