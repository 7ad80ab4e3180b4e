"""CUDA backend for ``linear_scan``: numba-cuda kernels.

Two ways to put ``h_t = a_t * h_{t-1} + b_t`` on a GPU:

**Sequential** (:func:`forward_sequential`, :func:`backward_sequential`): one
thread per (batch row, channel) walks through time, exactly like the CPU
kernel's inner loop. Neighbouring threads handle neighbouring channels, so
every time step is one coalesced read of ``a`` and ``b`` and one coalesced
write of ``h``. It is the best kernel whenever ``B * C`` is large enough to
keep the GPU busy, and it reads every input once.

**Chunked** (:func:`forward_chunked`, :func:`backward_chunked`): when
``B * C`` is small and ``T`` is long, one thread per channel leaves most of
the GPU idle. A step ``h -> a_t h + b_t`` is an affine map, and affine maps
compose: ``(A1, B1) o (A2, B2) = (A1 A2, A2 B1 + B2)`` (the earlier step on the
left, as in the book's chapter on scans). So one thread block
takes ``CHUNK_CHANNELS`` channels and splits time into ``CHUNKS`` chunks,
one thread per (chunk, channel):

1. *reduce*: each thread composes the steps of its chunk into one pair ``(A, B)``;
2. *carry scan*: the pairs are scanned across chunks in shared memory
   (Hillis-Steele: ``log2(CHUNKS)`` rounds separated by ``syncthreads``),
   which gives the state entering every chunk;
3. *rescan*: each thread runs its chunk again from that carry and writes ``h``.

It reads ``a`` and ``b`` twice but runs ``CHUNKS`` times more threads.

:func:`choose_kernel` picks between them by shape (one threshold set from
an H200 run -- see the function).

The backward pass (formulas in :mod:`.scan_torch`) is the same kind of scan,
running against the recurrence with coefficients ``conj(a)`` shifted by one
step; ``grad_a`` and ``grad_h0`` are computed in the same pass.

Real GPUs: tensors are wrapped without copying (``cuda.as_cuda_array`` on
detached tensors) and kernels are launched on torch's current stream.
numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``): CPU tensors are accepted
and the kernels get NumPy views, so the tests run every kernel on a machine
without a GPU. Every kernel is also compiled to PTX in the tests
(:func:`kernel_signatures`).

Only what the simulator supports is used: shared memory and ``syncthreads``,
no warp shuffles. Kernels take ``h0`` as an array plus a flag ``has_h0`` (a
0x0 placeholder when there is no initial state), so each kernel has one
signature per dtype.
"""
import contextlib

import torch

from ._backend import cuda_simulator_enabled, launch, launch_kernel, numba_cuda  # noqa: F401 (launch_kernel)

cuda = numba_cuda()     # None without numba-cuda: an error on use only (launch)

# Launch configuration. Shared-memory shapes must be compile-time constants,
# so CHUNKS and CHUNK_CHANNELS are read when a kernel is first compiled. The
# simulator runs every thread as an OS thread: there, blocks are tiny.
if cuda_simulator_enabled():
    SEQUENTIAL_THREADS = 8    # threads per block of the sequential kernels
    CHUNKS = 4                # time chunks per block (threadIdx.y)
    CHUNK_CHANNELS = 4        # channels per block (threadIdx.x)
    SEQUENTIAL_MIN_THREADS = 16384    # B*C at or above which sequential is used
else:
    SEQUENTIAL_THREADS = 256
    CHUNKS = 16
    CHUNK_CHANNELS = 32       # one warp of consecutive channels: coalesced
    # B*C at or above which sequential is used: about a full GPU of threads (an
    # H200 holds 132 SMs x 2048 = 270,336). Measured on an H200 (2026-11-30, GPU
    # time by CUDA events, float32, T = 4096, tools/gpu_scan_kernels.py): at
    # B*C = 16,384 the chunked forward took 0.69 ms (1163 GB/s) against the
    # sequential's 1.97 ms (408 GB/s), forward+backward 2.84 ms against 7.08 ms;
    # at B*C = 4,096, 0.37 ms against 1.88 ms. Blocks of 8 to 256 threads changed
    # the sequential kernel's time by under 5 %. Where sequential overtakes was not
    # measured: 2**18 is the reasoned crossover.
    SEQUENTIAL_MIN_THREADS = 262144

# Shape heuristic (see choose_kernel).
CHUNKED_MIN_STEPS = 4 * CHUNKS   # T below which chunking cannot pay off

# "auto", "sequential" or "chunked"; tests force a kernel with use_kernel().
KERNEL = "auto"


# ---------------------------------------------------------------------------
# Kernels, written as plain Python functions and compiled by cuda.jit on
# first use (so importing this module needs neither a GPU nor numba-cuda).
# Arrays: a (Ba, Ta, C) with Ba in {1, B}, Ta in {1, T} (size-1 dims are
# broadcast by indexing with 0); b, h, g, G, grad_a (B, T, C); h0, grad_h0
# (B, C). Threads are numbered so that consecutive threads own consecutive
# channels (coalesced memory access).
# ---------------------------------------------------------------------------

def forward_sequential(a, b, h0, has_h0, reverse, h):
    """One thread per (i, c): h[i, t, c] for every t, in order."""
    B, T, C = b.shape
    n = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if n >= B * C:
        return
    i = n // C                          # batch row
    c = n % C                           # channel
    ia = i if a.shape[0] > 1 else 0     # a shared over the batch: row 0
    state = h0[i, c] if has_h0 else b.dtype.type(0)
    for s in range(T):
        t = T - 1 - s if reverse else s
        ta = t if a.shape[1] > 1 else 0  # a shared over time: step 0
        state = a[ia, ta, c] * state + b[i, t, c]
        h[i, t, c] = state


def backward_sequential(a, h, g, h0, has_h0, reverse, G, grad_a, grad_h0):
    """One thread per (i, c), walking against the recurrence (fused backward)."""
    B, T, C = g.shape
    n = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if n >= B * C:
        return
    i = n // C
    c = n % C
    ia = i if a.shape[0] > 1 else 0
    zero = g.dtype.type(0)
    carry = zero                        # conj(a_next) * G_next
    for s in range(T):
        t = s if reverse else T - 1 - s
        tp = t + 1 if reverse else t - 1    # previous step of the recurrence
        carry = carry + g[i, t, c]          # G_t
        G[i, t, c] = carry
        if s < T - 1:                       # grad_a_t = G_t conj(h_prev_t)
            grad_a[i, t, c] = carry * h[i, tp, c].conjugate()
        elif has_h0:
            grad_a[i, t, c] = carry * h0[i, c].conjugate()
        else:
            grad_a[i, t, c] = zero
        ta = t if a.shape[1] > 1 else 0
        carry = a[ia, ta, c].conjugate() * carry
    grad_h0[i, c] = carry


def forward_chunked(a, b, h0, has_h0, reverse, h):
    """Block = CHUNK_CHANNELS channels x CHUNKS time chunks of one batch row."""
    B, T, C = b.shape
    x = cuda.threadIdx.x                # channel within the block
    k = cuda.threadIdx.y                # time chunk
    groups = (C + CHUNK_CHANNELS - 1) // CHUNK_CHANNELS
    i = cuda.blockIdx.x // groups
    c = (cuda.blockIdx.x % groups) * CHUNK_CHANNELS + x
    active = c < C    # idle threads still take part in every syncthreads()
    ia = i if a.shape[0] > 1 else 0
    one = b.dtype.type(1)
    zero = b.dtype.type(0)
    length = (T + CHUNKS - 1) // CHUNKS
    s0 = min(k * length, T)             # steps s0 .. s1 - 1 of the recurrence
    s1 = min(s0 + length, T)

    # 1) reduce: compose this chunk's steps into h -> A h + Bk.
    A = one
    Bk = zero
    if active:
        for s in range(s0, s1):
            t = T - 1 - s if reverse else s
            ta = t if a.shape[1] > 1 else 0
            at = a[ia, ta, c]
            A = at * A
            Bk = at * Bk + b[i, t, c]

    # 2) inclusive scan of the chunk maps in shared memory (Hillis-Steele):
    # after the round with offset d, chunk k holds chunks max(0, k-2d+1) .. k.
    sA = cuda.shared.array((CHUNKS, CHUNK_CHANNELS), dtype=b.dtype)
    sB = cuda.shared.array((CHUNKS, CHUNK_CHANNELS), dtype=b.dtype)
    sA[k, x] = A
    sB[k, x] = Bk
    cuda.syncthreads()
    d = 1
    while d < CHUNKS:
        pA = one
        pB = zero
        if k >= d:                          # read before anyone writes...
            pA = sA[k - d, x]
            pB = sB[k - d, x]
        cuda.syncthreads()
        if k >= d:                          # ...then compose: earlier first
            Bk = A * pB + Bk
            A = A * pA
            sA[k, x] = A
            sB[k, x] = Bk
        cuda.syncthreads()
        d *= 2

    # 3) the state entering chunk k: chunks 0 .. k-1 applied to h0.
    carry = zero
    if active and has_h0:
        carry = h0[i, c]
    if k > 0:
        if has_h0:
            carry = sA[k - 1, x] * carry + sB[k - 1, x]
        else:
            carry = sB[k - 1, x]

    # 4) rescan the chunk from its carry, writing the states.
    if active:
        for s in range(s0, s1):
            t = T - 1 - s if reverse else s
            ta = t if a.shape[1] > 1 else 0
            carry = a[ia, ta, c] * carry + b[i, t, c]
            h[i, t, c] = carry


def backward_chunked(a, h, g, h0, has_h0, reverse, G, grad_a, grad_h0):
    """Chunked fused backward: the scan G_s = conj(a_prev_step) G_{s-1} + g_s.

    Steps s = 0 .. T-1 run against the recurrence (s = 0 is its last step).
    The coefficient of step s is conj(a) at the time of step s - 1; step 0
    starts from a zero carry, so its coefficient is taken as 0.
    """
    B, T, C = g.shape
    x = cuda.threadIdx.x
    k = cuda.threadIdx.y
    groups = (C + CHUNK_CHANNELS - 1) // CHUNK_CHANNELS
    i = cuda.blockIdx.x // groups
    c = (cuda.blockIdx.x % groups) * CHUNK_CHANNELS + x
    active = c < C
    ia = i if a.shape[0] > 1 else 0
    one = g.dtype.type(1)
    zero = g.dtype.type(0)
    length = (T + CHUNKS - 1) // CHUNKS
    s0 = min(k * length, T)
    s1 = min(s0 + length, T)

    # 1) reduce this chunk into G -> A G + Bk.
    A = one
    Bk = zero
    if active:
        for s in range(s0, s1):
            t = s if reverse else T - 1 - s
            tn = t - 1 if reverse else t + 1    # time of step s - 1
            coef = zero
            if s > 0:
                coef = a[ia, tn if a.shape[1] > 1 else 0, c].conjugate()
            A = coef * A
            Bk = coef * Bk + g[i, t, c]

    # 2) inclusive scan across chunks, as in forward_chunked.
    sA = cuda.shared.array((CHUNKS, CHUNK_CHANNELS), dtype=g.dtype)
    sB = cuda.shared.array((CHUNKS, CHUNK_CHANNELS), dtype=g.dtype)
    sA[k, x] = A
    sB[k, x] = Bk
    cuda.syncthreads()
    d = 1
    while d < CHUNKS:
        pA = one
        pB = zero
        if k >= d:
            pA = sA[k - d, x]
            pB = sB[k - d, x]
        cuda.syncthreads()
        if k >= d:
            Bk = A * pB + Bk
            A = A * pA
            sA[k, x] = A
            sB[k, x] = Bk
        cuda.syncthreads()
        d *= 2

    # 3) carry entering chunk k (the backward pass starts from zero).
    carry = zero
    if k > 0:
        carry = sB[k - 1, x]

    # 4) rescan: G, and grad_a_t = G_t conj(h_prev_t) in the same pass.
    if active:
        for s in range(s0, s1):
            t = s if reverse else T - 1 - s
            tn = t - 1 if reverse else t + 1
            tp = t + 1 if reverse else t - 1
            if s > 0:
                carry = a[ia, tn if a.shape[1] > 1 else 0, c].conjugate() * carry
            carry = carry + g[i, t, c]
            G[i, t, c] = carry
            if s < T - 1:
                grad_a[i, t, c] = carry * h[i, tp, c].conjugate()
            elif has_h0:
                grad_a[i, t, c] = carry * h0[i, c].conjugate()
            else:
                grad_a[i, t, c] = zero
        if s0 < s1 and s1 == T:         # this chunk holds the first step
            t = T - 1 if reverse else 0
            ta = t if a.shape[1] > 1 else 0
            grad_h0[i, c] = a[ia, ta, c].conjugate() * carry


KERNELS = {
    "forward_sequential": forward_sequential,
    "backward_sequential": backward_sequential,
    "forward_chunked": forward_chunked,
    "backward_chunked": backward_chunked,
}


# ---------------------------------------------------------------------------
# Choosing, compiling and launching.
# ---------------------------------------------------------------------------

def choose_kernel(B, T, C):
    """``"sequential"`` or ``"chunked"`` for a ``(B, T, C)`` problem.

    The sequential kernel runs ``B * C`` threads and reads every input once.
    A GPU needs tens of thousands of threads in flight to hide memory latency
    (a T4 holds 40 SMs x 1024 threads), so when ``B * C`` is below
    ``SEQUENTIAL_MIN_THREADS`` and ``T`` is long enough to be cut into
    ``CHUNKS`` chunks of a few steps (``T >= CHUNKED_MIN_STEPS``), the chunked
    kernel's ``CHUNKS``-fold parallelism is worth reading the inputs twice.
    On an H200 the chunked kernel was 2.9 times faster than the sequential
    one at ``B * C = 16384`` (the constant's comment has the figures): that
    shows only that the crossover lies above 2**14. The line sits at about a
    full device of threads (2**18), a reasoned guess, not a measurement: tune
    it with ``python -m rnnlab.bench scan`` on the GPU at hand.
    """
    if KERNEL != "auto":
        return KERNEL
    if B * C < SEQUENTIAL_MIN_THREADS and T >= CHUNKED_MIN_STEPS:
        return "chunked"
    return "sequential"


@contextlib.contextmanager
def use_kernel(name):
    """Force ``"sequential"`` or ``"chunked"`` (or ``"auto"``) inside a ``with`` block."""
    global KERNEL
    if name not in ("auto", "sequential", "chunked"):
        raise ValueError(f"use_kernel: name must be 'auto', 'sequential' or 'chunked', got {name!r}")
    old, KERNEL = KERNEL, name
    try:
        yield
    finally:
        KERNEL = old


def kernel_signatures():
    """Every ``(name, python_function, signature)`` this backend can launch.

    For ``numba.cuda.compile_ptx(fn, sig, cc=...)``: compiling them all for a
    real GPU's compute capability catches typing errors the simulator cannot.
    """
    from numba import types

    out = []
    for dt in (types.float32, types.float64, types.complex64, types.complex128):
        x3 = types.Array(dt, 3, "C")
        x2 = types.Array(dt, 2, "C")
        flag = types.boolean
        fwd = (x3, x3, x2, flag, flag, x3)                  # a, b, h0, has_h0, reverse, h
        bwd = (x3, x3, x3, x2, flag, flag, x3, x3, x2)      # a, h, g, h0, has_h0, reverse, G, grad_a, grad_h0
        for kind in ("sequential", "chunked"):
            out.append((f"forward_{kind}", KERNELS[f"forward_{kind}"], fwd))
            out.append((f"backward_{kind}", KERNELS[f"backward_{kind}"], bwd))
    return out


def _launch_config(kind, B, C):
    if kind == "sequential":
        threads = SEQUENTIAL_THREADS
        return (B * C + threads - 1) // threads, threads
    groups = (C + CHUNK_CHANNELS - 1) // CHUNK_CHANNELS
    return B * groups, (CHUNK_CHANNELS, CHUNKS)


def _launch(name, kind, like, args):
    """Launch kernel ``{name}_{kind}`` on tensors ``args`` (None passes through)."""
    B, T, C = like.shape
    grid, block = _launch_config(kind, B, C)
    launch(KERNELS[f"{name}_{kind}"], grid, block, like, args, "linear_scan")


def _h0_arg(h0, like):
    """``(h0, has_h0)``: a 0x0 placeholder array stands in for no initial state."""
    if h0 is None:
        return torch.empty((0, 0), dtype=like.dtype, device=like.device), False
    return h0.contiguous(), True


def forward(a, b, h0, reverse):
    B, T, C = b.shape
    b = b.contiguous()
    h = torch.empty_like(b)
    h0_arr, has_h0 = _h0_arg(h0, b)
    kind = choose_kernel(B, T, C)
    _launch("forward", kind, b, (a.contiguous(), b, h0_arr, has_h0, bool(reverse), h))
    return h


def backward(a, h, g, h0, reverse):
    B, T, C = g.shape
    g = g.contiguous()
    G = torch.empty_like(g)
    grad_a = torch.empty_like(g)
    grad_h0 = torch.empty((B, C), dtype=g.dtype, device=g.device)
    h0_arr, has_h0 = _h0_arg(h0, g)
    kind = choose_kernel(B, T, C)
    _launch("backward", kind, g,
            (a.contiguous(), h.contiguous(), g, h0_arr, has_h0, bool(reverse), G, grad_a, grad_h0))
    return G, grad_a, grad_h0
