"""The CUDA simulator's shared arrays, as rnnlab runs it (``rnnlab.kernels._backend.numba_cuda``
serialises ``cuda.shared.array`` when it first imports numba-cuda under the simulator): every
thread of a block gets the same array even when threads switch inside the allocation. Upstream's check-then-set gave two threads two arrays now and then (a fresh
``make test`` once failed a neural_memory test that way); a slow ``numpy.empty`` makes it certain."""
import time

import numpy as np
import pytest
from numba import cuda

from rnnlab.kernels._backend import numba_cuda

numba_cuda()                                # applies the fix

THREADS = 8


@cuda.jit
def block_sum(out):
    red = cuda.shared.array(THREADS, dtype=np.float64)
    tid = cuda.threadIdx.x
    red[tid] = tid + 1.0
    cuda.syncthreads()
    if tid == 0:
        total = 0.0
        for k in range(THREADS):
            total += red[k]
        out[0] = total


@pytest.fixture
def slow_empty(monkeypatch):
    """numpy.empty that sleeps: a thread switch inside every allocation."""
    fast = np.empty

    def slow(*args, **kwargs):
        time.sleep(0.005)
        return fast(*args, **kwargs)
    monkeypatch.setattr(np, "empty", slow)


def test_shared_array_is_shared_even_when_threads_switch_inside_allocation(slow_empty):
    for _ in range(3):
        out = np.zeros(1)
        block_sum[1, THREADS](out)
        assert out[0] == THREADS * (THREADS + 1) / 2
