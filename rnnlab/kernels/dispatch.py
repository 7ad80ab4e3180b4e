"""What the ops share around their kernels: choosing a backend, and calling a numba CPU kernel.

- :func:`resolve_backend`: ``"auto"`` → the CUDA kernels for CUDA tensors, the
  CPU kernel otherwise; a backend that cannot run on the given device is a
  ValueError naming the op, never a silently different result.
- :func:`as_numpy` and :func:`run_parallel`: the host side of a numba
  ``njit(parallel=True)`` kernel (NumPy views of CPU tensors; the kernel run on
  torch's number of threads, or on one for small problems, where the start of
  a parallel region costs more than it saves).
"""
import numba
import torch

from .scan import cuda_simulator_enabled

BACKENDS = ("auto", "torch", "cpu", "cuda")


def resolve_backend(device, backend, name):
    """The backend to run on ``device``: ``backend`` itself, or for ``"auto"`` ``"cuda"``/``"cpu"``."""
    if backend not in BACKENDS:
        raise ValueError(f"{name}: backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "auto":
        return "cuda" if device.type == "cuda" else "cpu"
    if backend == "cpu" and device.type == "cuda":
        raise ValueError(f"{name}: backend='cpu' needs CPU tensors, got {device}; use backend='cuda' or 'auto'")
    if backend == "cuda" and device.type != "cuda" and not cuda_simulator_enabled():
        raise ValueError(f"{name}: backend='cuda' needs CUDA tensors, got {device}; use backend='cpu' or 'auto', "
                         "or set NUMBA_ENABLE_CUDASIM=1 to run the CUDA kernels in numba's simulator")
    return backend


def as_numpy(t):
    """A NumPy view of a CPU tensor (a copy only if it is not contiguous)."""
    if t.is_contiguous():
        return t.detach().numpy()
    return t.detach().contiguous().numpy()


def run_parallel(kernel, work, B, serial_below, *args):
    """Call ``kernel(*args)`` on torch's number of threads (at most ``B``), or on one thread when
    ``work < serial_below`` or ``B == 1``."""
    current = numba.get_num_threads()
    threads = 1 if (work < serial_below or B == 1) else min(current, torch.get_num_threads(), B)
    if threads == current:
        kernel(*args)
        return
    numba.set_num_threads(threads)      # thread-local; restored below
    try:
        kernel(*args)
    finally:
        numba.set_num_threads(current)
