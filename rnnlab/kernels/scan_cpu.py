"""CPU backend for ``linear_scan``: numba kernels, parallel over (batch, channels).

The recurrence ``h_t = a_t * h_{t-1} + b_t`` is sequential in time but
independent across the batch and across channels. So each parallel *job* owns
one batch row ``i`` and one contiguous block of channels ``first .. last``, and
walks through time; within a time step the innermost loop runs over the
block's channels, which are contiguous in memory in the ``(B, T, C)`` layout,
so LLVM turns it into SIMD instructions (8 or 16 floats at a time).

Details that matter for speed (measured on a 2-core machine, see
``python -m rnnlab.bench``):

- The state is not copied into a separate buffer: step ``t`` reads the row of
  ``h`` it wrote at step ``t - 1`` (still in the L1 cache). A scratch array
  for the state costs an extra load and store per element.
- Memory is walked in one direction: when time runs backwards (``reverse``,
  and the backward pass of a forward scan), the channels of each row run
  backwards too. The hardware prefetchers follow one steady stream of
  addresses well but lose track of rows read upwards one after another
  downwards (about 1.4x slower for float32, 1.6x for complex64).
- The channel index is cast to an *unsigned* integer. numba supports
  negative indices (``x[-1]``) by checking every signed index; when it cannot
  prove an index non-negative, the check stays in the inner loop and keeps
  LLVM from vectorising it (1.7x slower for float32).
- With a large batch, a job takes all ``C`` channels of its batch row and so
  streams through one contiguous ``(T, C)`` slab of memory. With a small
  batch (``B = 1``) the channels are split into blocks so that every core
  has work.
- Small problems run on one thread: waking the thread pool costs more than
  it saves, and on a busy machine every parallel call waits until each of
  its threads gets a core.
- The direction of time is a compile-time constant: ``forward_kernel(reverse)``
  and ``backward_kernel(reverse)`` return the kernel compiled for one
  direction. When the direction was a run-time argument, so that the address
  of every element was chosen at run time between two formulas (``first + k``
  or ``last - k``), LLVM compiled the backward kernel's loops far less well:
  at (B, T, C) = (16, 1024, 256) it took 5-14x the forward kernel's time for
  float32 and 1.8-10x for complex64, against 1.3-2.3x now (it moves 5 arrays
  to the forward pass's 3).
- Large outputs reuse the memory of earlier outputs that are no longer used
  (:func:`empty`). glibc returns a freed block above its mmap threshold (at
  most 32 MiB) to the operating system at once, and trims smaller ones off
  the top of its heap depending on what else lies there; a fresh block
  page-faults on each of its 4 KiB pages when the kernel first writes it,
  about 0.4 ms per MiB here, several times the scan itself. At (16, 1024,
  256) a complex64 forward pass took 12-25 ms with a fresh 32 MiB output and
  takes 2-3 ms now; with float32 (16 MiB outputs) forward+backward faulted
  0-27 MiB per call depending on the process, the main reason its time
  varied from 3x to 10x the forward pass's from one process to the next.

What is left of forward+backward against the forward pass, timed plainly
(fresh processes, the allocator's defaults, back-to-back calls: ``python -m
rnnlab.bench scan-plain``): autograd runs the backward on the calling thread
(no hand-off), nothing is copied, and the kernels' ratio with the cache
evicted before every call is the ratio of the arrays they move (8/3 when
``a`` is ``(B, T, C)``). Two things push the plain ratio above that at
(16, 1024, 256) float32: when the same inputs are timed again and again, part
of the forward pass's 48 MiB is still in the 32 MiB L3 cache and it runs
faster than memory allows, while the backward's 80 MiB gains less; and about
0.3-0.6 ms per call is neither kernel (validation, autograd, and Python that
runs with caches just flushed by the kernels), against a forward pass of
about 1 ms (at tiny sizes all of it costs 70 us).

The backward pass is the same kind of scan running the other way in time
(formulas in :mod:`.scan_torch`), done in one pass that computes ``G``,
``grad_a`` and ``grad_h0`` while the rows it needs are in cache.

The kernels are compiled once per dtype (float32/64, complex64/128) and
direction and cached on disk (``cache=True``). ``fastmath`` stays off, so
results are the same IEEE operations, in the same order, as the torch
reference.
"""
import functools
import math
import threading

import numba
import numpy as np
import torch
from numba import njit, prange

from .scan import WIDE_DTYPES

# numba and torch each keep a pool of threads: let numba use no more threads
# than torch, so that the two do not oversubscribe the cores.
numba.set_num_threads(min(numba.config.NUMBA_NUM_THREADS, torch.get_num_threads()))

# Smallest channel block a job gets when the channels are split: 16 float32
# (64 bytes) is one cache line and one AVX-512 register.
MIN_BLOCK = 16

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
# Output memory: large outputs reuse the blocks of freed outputs.
# ---------------------------------------------------------------------------

# Outputs of at least this many bytes reuse memory; smaller ones come from
# torch.empty (glibc serves them from its heap without page faults).
REUSE_MIN_BYTES = 1 << 20
# At most this many bytes of freed blocks are kept for reuse (the oldest go
# first); 0 turns reuse off. empty_cache() gives them all back.
REUSE_MAX_BYTES = 256 << 20

_NP_DTYPES = {torch.float32: np.dtype(np.float32), torch.float64: np.dtype(np.float64),
              torch.complex64: np.dtype(np.complex64), torch.complex128: np.dtype(np.complex128)}
_free_blocks = []                   # freed blocks (uint8 tensors) kept for reuse, oldest first
_pending = []                       # blocks freed while the pool was busy (see _Lease.__del__)
_free_lock = threading.Lock()


class _Lease:
    """One use of a block: NumPy's array of an output has it as its base, the
    output tensor holds that array, so the lease lives exactly as long as the
    last tensor or view using the block; then the block goes back to the pool."""

    __slots__ = ("block", "__array_interface__")

    def __init__(self, block, shape, dtype):
        self.block = block
        self.__array_interface__ = {"version": 3, "shape": tuple(shape), "typestr": dtype.str,
                                    "data": (block.data_ptr(), False)}

    def __del__(self):
        # This runs wherever the last user of the block goes: possibly in a
        # garbage collection inside _take, or while another thread holds the
        # lock. So it never waits for the lock: then the block waits in
        # _pending (list.append is atomic) until the pool is next used.
        try:
            if _free_lock.acquire(blocking=False):
                try:
                    _keep(self.block)
                finally:
                    _free_lock.release()
            else:
                _pending.append(self.block)
        except (TypeError, AttributeError, NameError):  # interpreter shutdown: globals gone
            pass


def _keep(block):
    """Put ``block`` (and any pending ones) in the pool, dropping the oldest
    blocks beyond ``REUSE_MAX_BYTES``. Call with ``_free_lock`` held."""
    while _pending:
        _free_blocks.append(_pending.pop())
    if block is not None:
        _free_blocks.append(block)
    # (a block larger than REUSE_MAX_BYTES, which may have been lowered since, goes too)
    total = sum(b.numel() for b in _free_blocks)
    while total > REUSE_MAX_BYTES:
        total -= _free_blocks.pop(0).numel()


def _take(nbytes):
    """A free block of exactly ``nbytes``, the most recently freed one, or None."""
    with _free_lock:
        _keep(None)
        for k in range(len(_free_blocks) - 1, -1, -1):
            if _free_blocks[k].numel() == nbytes:
                return _free_blocks.pop(k)
    return None


def empty(shape, dtype):
    """An uninitialised CPU tensor of torch dtype ``dtype`` for a kernel's
    output, like ``torch.empty(shape, dtype=dtype)``.

    Outputs of ``REUSE_MIN_BYTES`` or more take the memory of an earlier
    output of the same size that is no longer used, when there is one: its
    pages are already mapped, so the kernel writes it without page faults
    (see the module docstring). The result is an ordinary tensor (made by
    ``torch.from_numpy``, so its storage cannot be resized); its memory goes
    back to the pool when the last tensor or view using it is freed.
    """
    shape = tuple(int(n) for n in shape)
    np_dtype = _NP_DTYPES[dtype]
    nbytes = math.prod(shape) * np_dtype.itemsize
    if not REUSE_MIN_BYTES <= nbytes <= REUSE_MAX_BYTES:
        return torch.empty(shape, dtype=dtype)
    block = _take(nbytes)
    if block is None:
        block = torch.empty(nbytes, dtype=torch.uint8)  # 64-byte aligned, like any torch tensor
    return torch.from_numpy(np.asarray(_Lease(block, shape, np_dtype)))


def empty_cache():
    """Give the memory of freed outputs kept for reuse back to the allocator."""
    with _free_lock:
        _free_blocks.clear()
        _pending.clear()


# ---------------------------------------------------------------------------
# Torch wrappers: zero-copy NumPy views of contiguous CPU tensors.
# ---------------------------------------------------------------------------

def _np(t):
    """A NumPy view of a CPU tensor: no copy when it is already contiguous.

    ``resolve_conj``/``resolve_neg`` materialise torch's lazy conjugate and
    negative views (``x.conj()``), which NumPy cannot represent."""
    if t.is_contiguous() and not t.is_conj() and not t.is_neg():    # the usual case, in fewer calls
        return t.detach().numpy()
    return t.detach().resolve_conj().resolve_neg().contiguous().numpy()


def channel_block(B, C, threads):
    """Channels per job: all of them, unless the batch is too small to give
    ``threads`` threads two jobs each; then blocks of a multiple of
    ``MIN_BLOCK`` channels."""
    jobs_wanted = 2 * threads if threads > 1 else 1
    if B >= jobs_wanted:
        return C
    per_row = -(-jobs_wanted // B)                      # blocks per batch row
    block = -(-C // per_row)                            # ceil(C / per_row)
    block = -(-block // MIN_BLOCK) * MIN_BLOCK          # round up to a cache line
    return min(block, C)


def _run(kernel, shape, inputs, outputs):
    """Call ``kernel(*inputs, block, *outputs)`` on as many threads as torch
    uses now (``torch.set_num_threads`` may have changed since import), and
    on one thread for problems smaller than ``SERIAL_BELOW``."""
    B, T, C = shape
    current = numba.get_num_threads()
    threads = 1 if B * T * C < SERIAL_BELOW else min(current, torch.get_num_threads())
    if threads == current:
        kernel(*inputs, channel_block(B, C, threads), *outputs)
        return
    numba.set_num_threads(threads)                      # thread-local; restored below
    try:
        kernel(*inputs, channel_block(B, C, threads), *outputs)
    finally:
        numba.set_num_threads(current)


def forward(a, b, h0, reverse):
    h = empty(b.shape, b.dtype)
    _run(forward_kernel(reverse), b.shape,
         (_np(a), _np(b), None if h0 is None else _np(h0)),
         (_np(h),))
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
         (_np(a), _np(h), _np(g), None if h0 is None else _np(h0)),
         (_np(G), _np(grad_a), _np(grad_h0)))
    if a.shape[1] == 1 and a.shape[0] == 1:
        grad_a = grad_a.sum(0, keepdim=True)           # shared over the batch too: (1, 1, C)
    return G, grad_a.to(g.dtype), grad_h0
