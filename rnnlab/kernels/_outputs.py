"""Outputs of the CPU kernels that reuse the memory of freed outputs: :func:`empty`.

glibc returns a freed block above its mmap threshold (at most 32 MiB) to the
operating system at once, and trims smaller ones off the top of its heap
depending on what else lies there; a fresh block page-faults on each of its
4 KiB pages when a kernel first writes it. For a scan, which moves a few bytes
per element, those faults can cost several times the kernel itself. So large
outputs take the memory of an earlier output of the same size that is no
longer used: its pages are already mapped. What this buys is measured by
``python -m rnnlab.bench scan --allocator fresh`` (see :mod:`rnnlab.bench.scan`).

A process-wide pool, bounded by :data:`REUSE_MAX_BYTES`; :func:`empty_cache`
gives its memory back.
"""
import math
import threading

import numpy as np
import torch

from ._backend import NP_DTYPES

# Outputs of at least this many bytes reuse memory; smaller ones come from
# torch.empty (glibc serves them from its heap without page faults).
REUSE_MIN_BYTES = 1 << 20
# At most this many bytes of freed blocks are kept for reuse (the oldest go
# first); 0 turns reuse off. empty_cache() gives them all back.
REUSE_MAX_BYTES = 256 << 20

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
    np_dtype = NP_DTYPES[dtype]
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
