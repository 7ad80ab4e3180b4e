"""CPU backend for ``linear_scan``: numba kernels, parallel over (batch, channels).

The recurrence ``h_t = a_t * h_{t-1} + b_t`` is sequential in time but
independent across the batch and across channels. So each parallel *job* owns
one batch row ``i`` and one contiguous block of channels ``first .. last``, and
walks through time; within a time step the innermost loop runs over the
block's channels, which are contiguous in memory in the ``(B, T, C)`` layout,
so LLVM turns it into SIMD instructions (8 or 16 floats at a time).

Details that matter for speed (what each bought, measured on a 2-core
machine, is recorded in :mod:`rnnlab.bench.scan_plain`; measure again with
``python -m rnnlab.bench scan``):

- The state is not copied into a separate buffer: step ``t`` reads the row of
  ``h`` it wrote at step ``t - 1`` (still in the L1 cache). A scratch array
  for the state costs an extra load and store per element.
- Memory is walked in one direction: when time runs backwards (``reverse``,
  and the backward pass of a forward scan), the channels of each row run
  backwards too. The hardware prefetchers follow one steady stream of
  addresses well but lose track of rows read upwards one after another
  downwards.
- The channel index is cast to an *unsigned* integer. numba supports
  negative indices (``x[-1]``) by checking every signed index; when it cannot
  prove an index non-negative, the check stays in the inner loop and keeps
  LLVM from vectorising it.
- With a large batch, a job takes all ``C`` channels of its batch row and so
  streams through one contiguous ``(T, C)`` slab of memory. With a small
  batch (``B = 1``) the channels are split into blocks so that every core
  has work (:func:`channel_block`).
- Small problems run on one thread: waking the thread pool costs more than
  it saves, and on a busy machine every parallel call waits until each of
  its threads gets a core.
- The direction of time is a compile-time constant: ``forward_kernel(reverse)``
  and ``backward_kernel(reverse)`` return the kernel compiled for one
  direction. When the direction was a run-time argument, so that the address
  of every element was chosen at run time between two formulas (``first + k``
  or ``last - k``), LLVM compiled the backward kernel's loops far less well.
- Large outputs reuse the memory of earlier outputs that are no longer used
  (:func:`empty`, from :mod:`._outputs`): a fresh large block page-faults on
  each of its pages when the kernel first writes it.

The backward pass is the same kind of scan running the other way in time
(formulas in :mod:`.scan_torch`), done in one pass that computes ``G``,
``grad_a`` and ``grad_h0`` while the rows it needs are in cache.

The kernels are compiled once per dtype (float32/64, complex64/128) and
direction and cached on disk (``cache=True``). ``fastmath`` stays off, so
results are the same IEEE operations, in the same order, as the torch
reference.
"""
import functools

import numpy as np
import torch
from numba import njit, prange

from ._backend import WIDE_DTYPES, as_numpy, run_channel_blocks
from ._backend import MIN_BLOCK, channel_block  # noqa: F401  (shared with modal_stack_scan; shown in the book)
from ._outputs import empty, empty_cache  # noqa: F401

# Problems with fewer elements (B * T * C) than this run on one thread.
SERIAL_BELOW = 1 << 16


# ---------------------------------------------------------------------------
# Kernels. ``a`` has shape (Ba, Ta, C) with Ba in {1, B} and Ta in {1, T}: a
# size-1 dimension is broadcast by using index 0, never by copying. ``h0`` is
# a (B, C) array or None (numba compiles a separate version for None and
# removes the branch that is not taken). ``block`` is the number of channels
# per job (see channel_block).
#
# The direction of time is fixed when a kernel is compiled: forward_kernel
# and backward_kernel take ``reverse`` and return the kernel for that
# direction (compiled once per direction and dtype, cached on disk; numba
# keys its cache on the values of the closure's variables, here ``up``). In
# the compiled code ``up`` is a constant, so every channel loop walks
# consecutive addresses in one known direction (see the module docstring).
# ---------------------------------------------------------------------------

@functools.cache
def forward_kernel(reverse):
    """The forward kernel for one direction of time: ``kernel(a, b, h0, block, h)``."""
    up = not bool(reverse)                          # walk memory upwards? (a constant)

    @njit(parallel=True, cache=True)
    def kernel(a, b, h0, block, h):
        """Write ``h[i, t] = a[i, t] * h[i, t -/+ 1] + b[i, t]`` for all i, t."""
        B, T, C = b.shape
        n_blocks = (C + block - 1) // block
        for job in prange(B * n_blocks):
            i = job // n_blocks                     # batch row of this job
            first = (job % n_blocks) * block        # its channels: first .. last
            last = min(first + block, C) - 1
            n = last - first + 1
            ia = i if a.shape[0] > 1 else 0         # a shared over the batch: row 0

            # First step of the recurrence (t = 0, or T - 1 when reversed).
            t = 0 if up else T - 1
            ta = t if a.shape[1] > 1 else 0         # a shared over time: step 0
            for k in range(n):
                c = np.uint64(first + k if up else last - k)
                if h0 is None:                      # h_prev = 0
                    h[i, t, c] = b[i, t, c]
                else:
                    h[i, t, c] = a[ia, ta, c] * h0[i, c] + b[i, t, c]

            # Every later step reads the row written by the step before.
            for s in range(1, T):
                t = s if up else T - 1 - s
                tp = t - 1 if up else t + 1         # previous step of the recurrence
                ta = t if a.shape[1] > 1 else 0
                for k in range(n):
                    c = np.uint64(first + k if up else last - k)
                    h[i, t, c] = a[ia, ta, c] * h[i, tp, c] + b[i, t, c]

    return kernel


@functools.cache
def backward_kernel(reverse):
    """The backward kernel for one direction of time (``reverse`` of the forward
    pass): ``kernel(a, h, g, h0, block, G, grad_a, grad_h0)``."""
    up = bool(reverse)                              # against the recurrence (a constant)

    @njit(parallel=True, cache=True)
    def kernel(a, h, g, h0, block, G, grad_a, grad_h0):
        """Backward pass: ``G = dL/db``, ``grad_a`` and ``grad_h0``.

        Walks the steps of the recurrence from last to first::

            G_t      = g_t + conj(a_next) * G_next     (G_last = g_last)
            grad_a_t = G_t * conj(h_prev)               (h_prev of the first step: h0 or 0)
            grad_h0  = conj(a_first) * G_first

        ``grad_a`` has shape ``(B, T, C)``, or ``(B, 1, C)`` when ``a`` is shared
        over time: then the kernel sums the ``grad_a_t`` of row i over time
        (in grad_a's dtype, which may be wider than G's, for an accurate sum) and
        writes the sum to ``grad_a[i, 0]``, instead of writing the full
        ``(B, T, C)`` array for the caller to sum: one large array less to write
        and read.
        """
        B, T, C = g.shape
        n_blocks = (C + block - 1) // block
        summed = grad_a.shape[1] == 1 and T > 1
        n_jobs = B * n_blocks
        for jj in prange(n_jobs):
            # The jobs in reverse order: each thread starts with the rows that the
            # forward pass wrote last, whose h and a are still in the L3 cache
            # (float32 (16, 1024, 256): forward+backward 2-6% faster).
            job = n_jobs - 1 - jj
            i = job // n_blocks
            first = (job % n_blocks) * block
            last = min(first + block, C) - 1
            n = last - first + 1
            ia = i if a.shape[0] > 1 else 0
            # The running sum of grad_a over time, in a local array of grad_a's
            # dtype: LLVM vectorises its update (adding into grad_a itself, which
            # it cannot prove distinct from G and h, is 1.7x slower).
            acc = np.zeros(n if summed else 0, dtype=grad_a.dtype)

            for s in range(T):
                # s counts the steps of the backward pass; t is the time index.
                t = s if up else T - 1 - s
                tn = t - 1 if up else t + 1         # next step of the forward recurrence
                tp = t + 1 if up else t - 1         # previous step of the forward recurrence
                tan = tn if a.shape[1] > 1 else 0   # time index of a_next

                # G_t: the gradient g_t plus what flows back from the next step.
                if s == 0:
                    for k in range(n):
                        c = np.uint64(first + k if up else last - k)
                        G[i, t, c] = g[i, t, c]
                else:
                    for k in range(n):
                        c = np.uint64(first + k if up else last - k)
                        G[i, t, c] = a[ia, tan, c].conjugate() * G[i, tn, c] + g[i, t, c]

                # grad_a_t = G_t * conj(h_prev_t), while G_t is still in cache.
                if summed:                          # a shared over time: sum over t here
                    if s < T - 1:
                        for k in range(n):
                            c = np.uint64(first + k if up else last - k)
                            acc[k] += G[i, t, c] * h[i, tp, c].conjugate()
                    elif h0 is not None:            # first step: h_prev = h0 (0 adds nothing)
                        for k in range(n):
                            c = np.uint64(first + k if up else last - k)
                            acc[k] += G[i, t, c] * h0[i, c].conjugate()
                elif s < T - 1:
                    for k in range(n):
                        c = np.uint64(first + k if up else last - k)
                        grad_a[i, t, c] = G[i, t, c] * h[i, tp, c].conjugate()
                else:                               # first step of the recurrence
                    for k in range(n):
                        c = np.uint64(first + k if up else last - k)
                        if h0 is None:              # h_prev = 0
                            grad_a[i, t, c] = 0
                        else:                       # h_prev = h0
                            grad_a[i, t, c] = G[i, t, c] * h0[i, c].conjugate()

            if summed:
                for k in range(n):
                    c = np.uint64(first + k if up else last - k)
                    grad_a[i, 0, c] = acc[k]

            # What is left of the gradient after the first step reaches h0.
            t = T - 1 if up else 0
            ta = t if a.shape[1] > 1 else 0
            for c in range(first, last + 1):
                grad_h0[i, c] = a[ia, ta, c].conjugate() * G[i, t, c]

    return kernel


# ---------------------------------------------------------------------------
# Torch wrappers (the backend interface of :mod:`.scan_torch`): zero-copy
# NumPy views of contiguous CPU tensors.
# ---------------------------------------------------------------------------

def _run(kernel, shape, inputs, outputs):
    run_channel_blocks(kernel, shape, SERIAL_BELOW, inputs, outputs)


def forward(a, b, h0, reverse):
    h = empty(b.shape, b.dtype)
    _run(forward_kernel(reverse), b.shape,
         (as_numpy(a), as_numpy(b), None if h0 is None else as_numpy(h0)),
         (as_numpy(h),))
    return h


def backward(a, h, g, h0, reverse):
    B, T, C = g.shape
    G = empty(g.shape, g.dtype)
    if a.shape[1] == 1:     # a shared over time: the kernel sums grad_a over t, in double precision
        grad_a = torch.empty((B, 1, C), dtype=WIDE_DTYPES[g.dtype])
    else:
        grad_a = empty(g.shape, g.dtype)
    grad_h0 = torch.empty((B, C), dtype=g.dtype)
    _run(backward_kernel(reverse), g.shape,
         (as_numpy(a), as_numpy(h), as_numpy(g), None if h0 is None else as_numpy(h0)),
         (as_numpy(G), as_numpy(grad_a), as_numpy(grad_h0)))
    if a.shape[1] == 1 and a.shape[0] == 1:
        grad_a = grad_a.sum(0, keepdim=True)           # shared over the batch too: (1, 1, C)
    return G, grad_a.to(g.dtype), grad_h0
