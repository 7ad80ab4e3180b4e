"""Compile every CUDA kernel (``linear_scan``, ``modal_stack_scan``) for real GPUs, without a GPU.

``numba.cuda.compile_ptx`` types and compiles a kernel through NVVM for a
given compute capability: 7.5 (Colab's T4) and 8.0 (A100). This catches what
the simulator cannot (typing of the real CUDA target, unsupported functions,
float64 leaking into float32 kernels...). It needs numba-cuda's compiler
(``pip install "numba-cuda[cu12]"``), not a GPU.
"""
import os
import re

import pytest

from rnnlab.kernels import scan_cuda, stack_scan_cuda

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

MODULES = {"scan": scan_cuda, "stack_scan": stack_scan_cuda}
SIGNATURES = [(mod, name, fn, sig) for mod, module in MODULES.items()
              for name, fn, sig in module.kernel_signatures()]


@pytest.mark.parametrize("mod", MODULES)
def test_every_kernel_is_listed(mod):
    module = MODULES[mod]
    listed = module.kernel_signatures()
    assert {name for name, _, _ in listed} == set(module.KERNELS)
    assert len(listed) == 4 * len(module.KERNELS)       # four dtypes each


@pytest.mark.parametrize("cc", CCS, ids=lambda cc: f"sm_{cc[0]}{cc[1]}")
@pytest.mark.parametrize("mod, name, fn, sig", SIGNATURES,
                         ids=[f"{mod}-{name}-{sig[0].dtype}" for mod, name, _, sig in SIGNATURES])
def test_compile_ptx(mod, name, fn, sig, cc):
    from numba import cuda

    ptx, restype = cuda.compile_ptx(fn, sig, cc=cc)
    assert f".target sm_{cc[0]}{cc[1]}" in ptx
    assert ".entry" in ptx                                  # a kernel, not a device function
    if str(sig[0].dtype) in ("float32", "complex64"):
        # single-precision kernels must not compute in double precision
        # (slow on consumer GPUs): no f64 instructions, e.g. mul.f64 or cvt.f64.f32
        assert not re.search(r"\.f64\b", ptx), f"{name} {sig[0].dtype} uses float64 arithmetic"
