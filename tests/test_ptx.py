"""Compile every CUDA kernel (``linear_scan``, ``modal_stack_scan``, ``neural_memory``, ``recurrent_cell``)
for real GPUs, without a GPU.

``numba.cuda.compile_ptx`` types and compiles a kernel through NVVM for a
given compute capability: 7.5 (Colab's T4) and 8.0 (A100). This catches what
the simulator cannot (typing of the real CUDA target, unsupported functions,
float64 leaking into float32 kernels...). It needs numba-cuda's compiler
(``pip install "numba-cuda[cu12]"``), not a GPU.

The ``neural_memory`` kernels call device functions (``cuda.jit(device=True)``),
which numba-cuda compiles for the compute capability of the *current device*
when it types the caller; without a GPU there is none, so :func:`_device_cc`
lends the dispatcher a stand-in device with the capability being compiled for.
"""
import contextlib
import os
import re
import types

import pytest

from rnnlab.kernels import cells_cuda, memory_cuda, scan_cuda, stack_scan_cuda

CCS = [(7, 5), (8, 0)]


def _nvvm_unavailable():
    """None when compile_ptx works here, else the reason it does not."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
        return "NUMBA_ENABLE_CUDASIM is set: the simulator cannot compile PTX"
    try:
        from numba import cuda

        def probe(x):
            x[0] = 1.0

        cuda.compile_ptx(probe, "void(float32[:])", cc=(7, 5))
    except Exception as exc:  # ImportError, NvvmSupportError, CudaSupportError...
        return f"numba-cuda's NVVM compiler is unavailable ({type(exc).__name__}: {exc}); install numba-cuda[cu12]"
    return None


REASON = _nvvm_unavailable()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")

MODULES = {"scan": scan_cuda, "stack_scan": stack_scan_cuda, "memory": memory_cuda, "cells": cells_cuda}
DTYPE_COUNTS = {"scan": 4, "stack_scan": 4, "memory": 2, "cells": 2}     # memory, cells: float32 and float64 only
SIGNATURES = [(mod, name, fn, sig) for mod, module in MODULES.items()
              for name, fn, sig in module.kernel_signatures()]


def _dtype(sig):
    """The dtype of a signature's first array argument (some kernels start with integers)."""
    return next(a.dtype for a in sig if hasattr(a, "dtype"))


@contextlib.contextmanager
def _device_cc(cc):
    """Device functions called by a kernel are compiled for ``get_current_device()``'s
    compute capability: stand in a device with capability ``cc`` (no GPU needed)."""
    import numba.cuda.dispatcher as dispatcher

    old = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=cc)
    try:
        yield
    finally:
        dispatcher.get_current_device = old


@pytest.mark.parametrize("mod", MODULES)
def test_every_kernel_is_listed(mod):
    module = MODULES[mod]
    listed = module.kernel_signatures()
    assert {name for name, _, _ in listed} == set(module.KERNELS)
    assert len(listed) == DTYPE_COUNTS[mod] * len(module.KERNELS)       # one per dtype each


@pytest.mark.parametrize("cc", CCS, ids=lambda cc: f"sm_{cc[0]}{cc[1]}")
@pytest.mark.parametrize("mod, name, fn, sig", SIGNATURES,
                         ids=[f"{mod}-{name}-{_dtype(sig)}" for mod, name, _, sig in SIGNATURES])
def test_compile_ptx(mod, name, fn, sig, cc):
    from numba import cuda

    with _device_cc(cc):
        ptx, restype = cuda.compile_ptx(fn, sig, cc=cc)
    assert f".target sm_{cc[0]}{cc[1]}" in ptx
    assert ".entry" in ptx                                  # a kernel, not a device function
    if str(_dtype(sig)) in ("float32", "complex64"):
        # single-precision kernels must not compute in double precision
        # (slow on consumer GPUs): no f64 instructions, e.g. mul.f64 or cvt.f64.f32
        assert not re.search(r"\.f64\b", ptx), f"{name} {_dtype(sig)} uses float64 arithmetic"
