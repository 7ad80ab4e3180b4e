"""What the kernels' ops share: backends, dtypes, the host side of numba's CPU
and CUDA kernels. Each op's front file (``scan.py``, ``stack_scan.py``,
``cells.py``, ``memory.py``) holds its validation, its autograd Function and
its public function; its backend files (``<op>_torch.py``, ``<op>_cpu.py``,
``<op>_cuda.py``) hold the maths; everything they have in common is here, and
no op imports another op's files.

- Backends: :data:`BACKENDS`, :func:`resolve_backend` (``"auto"`` → the CUDA
  kernels for CUDA tensors, the CPU kernel otherwise; a backend that cannot
  run on the given device is a ValueError naming the op, never a silently
  different result) and :func:`backend_module`.
- Input checks every op makes alike (:func:`check_tensor`, :func:`check_dtype`,
  :func:`check_like`, :func:`check_b`, :func:`check_h0`).
- Dtypes: :data:`REAL_DTYPES`, :data:`DTYPES`, :data:`WIDE_DTYPES`
  (where kernels sum gradients of shared parameters) and :data:`NP_DTYPES`.
- CPU kernels: :func:`as_numpy` (NumPy views of CPU tensors), and
  :func:`run_parallel` / :func:`run_channel_blocks`, which run an
  ``njit(parallel=True)`` kernel on torch's current number of threads, or on
  one for small problems (where starting a parallel region costs more than it
  saves). numba's thread pool is started by the first parallel run, keeping
  torch's thread count (:func:`start_thread_pool`); importing the kernels
  changes neither library's thread count.
- CUDA kernels: :func:`numba_cuda` (numba-cuda imported on first use, with
  the simulator's shared-array fix), :func:`require_cuda`, the jit cache
  (:func:`jitted`) and :func:`launch_kernel` (zero-copy on torch's current
  stream; NumPy views under ``NUMBA_ENABLE_CUDASIM=1``).
"""
import importlib
import os
import sys
import threading

import numba
import numpy as np
import torch

BACKENDS = ("auto", "torch", "cpu", "cuda")
REAL_DTYPES = (torch.float32, torch.float64)
DTYPES = REAL_DTYPES + (torch.complex64, torch.complex128)
# The double-precision dtype in which the kernels sum gradients of shared parameters.
WIDE_DTYPES = {torch.float32: torch.float64, torch.float64: torch.float64,
               torch.complex64: torch.complex128, torch.complex128: torch.complex128}
NP_DTYPES = {torch.float32: np.dtype(np.float32), torch.float64: np.dtype(np.float64),
             torch.complex64: np.dtype(np.complex64), torch.complex128: np.dtype(np.complex128)}
_DTYPE_NAMES = {REAL_DTYPES: "float32 or float64", DTYPES: "one of float32, float64, complex64, complex128"}


# ---------------------------------------------------------------------------
# Backends.
# ---------------------------------------------------------------------------

def cuda_simulator_enabled():
    """True when numba's CUDA simulator is switched on (``NUMBA_ENABLE_CUDASIM=1``)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


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


def backend_module(op, backend):
    """The module ``rnnlab.kernels.{op}_{backend}`` (imported on first use: the CUDA
    backends need numba-cuda only when they run)."""
    return importlib.import_module(f"rnnlab.kernels.{op}_{backend}")


# ---------------------------------------------------------------------------
# Input checks shared by the ops (each names the op and the argument).
# ---------------------------------------------------------------------------

def check_tensor(x, arg, name, optional=False):
    """A TypeError unless ``x`` is a tensor (or None when ``optional``)."""
    if x is None and optional:
        return
    if not isinstance(x, torch.Tensor):
        kind = "a torch.Tensor or None" if optional else "a torch.Tensor"
        raise TypeError(f"{name}: {arg} must be {kind}, got {type(x).__name__}")


def check_dtype(x, arg, name, allowed):
    """A TypeError unless ``x``'s dtype is in ``allowed`` (:data:`REAL_DTYPES` or :data:`DTYPES`)."""
    if x.dtype not in allowed:
        raise TypeError(f"{name}: {arg} has dtype {x.dtype}; expected {_DTYPE_NAMES[allowed]}")


def check_like(x, arg, ref, ref_arg, name):
    """``x`` must have the dtype and device of ``ref`` (a TypeError / ValueError otherwise)."""
    if x.dtype != ref.dtype:
        raise TypeError(f"{name}: {arg} has dtype {x.dtype} but {ref_arg} has {ref.dtype}; they must match")
    if x.device != ref.device:
        raise ValueError(f"{name}: {arg} is on {x.device} but {ref_arg} is on {ref.device}; "
                         "they must be on one device")


def check_b(b, name):
    """Validate the ``(B, T, C)`` input ``b`` of the scan ops; return its shape."""
    check_tensor(b, "b", name)
    if b.dim() != 3:
        raise ValueError(f"{name}: b must have shape (B, T, C) (3 dims), got {tuple(b.shape)}")
    B, T, C = b.shape
    if T == 0 or B == 0 or C == 0:
        raise ValueError(f"{name}: b must have B, T, C >= 1, got {tuple(b.shape)}")
    check_dtype(b, "b", name, DTYPES)
    return B, T, C


def check_h0(b, h0, name):
    """Validate the initial state ``h0`` (``(B, C)`` or None) of a scan op against ``b``."""
    check_tensor(h0, "h0", name, optional=True)
    if h0 is None:
        return
    B, T, C = b.shape
    if tuple(h0.shape) != (B, C):
        raise ValueError(f"{name}: h0 must have shape (B, C)={(B, C)}, got {tuple(h0.shape)}")
    check_like(h0, "h0", b, "b", name)


# ---------------------------------------------------------------------------
# CPU kernels: NumPy views, and parallel runs sized to torch's threads.
# ---------------------------------------------------------------------------

def plain(t):
    """``t`` detached, contiguous and without torch's lazy conj/neg bits (which NumPy and
    ``__cuda_array_interface__`` cannot represent); no copy when it is already so."""
    if t.is_contiguous() and not t.is_conj() and not t.is_neg():     # the usual case, in fewer calls
        return t.detach()
    return t.detach().resolve_conj().resolve_neg().contiguous()


def as_numpy(t):
    """A NumPy view of a CPU tensor (a copy only if it is not contiguous, or a lazy conj/neg view)."""
    if t.is_contiguous() and not t.is_conj() and not t.is_neg():     # the usual case, in fewer calls
        return t.detach().numpy()
    return plain(t).numpy()


_pool_started = False


def start_thread_pool():
    """Start numba's thread pool (once), keeping torch's thread count.

    Starting numba's OpenMP pool sets OpenMP's thread count, which torch reads
    when both use the same libgomp: a ``torch.set_num_threads`` made before
    would silently be undone (``rnnlab.bench.timing.match_thread_pools``
    sizes both pools on purpose). The first parallel run calls this, so
    importing the kernels starts nothing and changes no thread count."""
    global _pool_started
    if _pool_started:
        return
    threads = torch.get_num_threads()
    numba.get_num_threads()                         # launches numba's pool
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    _pool_started = True


def thread_count(work, serial_below, jobs=None, current=None):
    """Threads for a parallel kernel: one when ``work < serial_below``, else torch's current
    number (``torch.set_num_threads`` may have changed since import), at most numba's
    (``current``, read when not given) and ``jobs``."""
    if work < serial_below:
        return 1
    if current is None:
        start_thread_pool()
        current = numba.get_num_threads()
    threads = min(current, torch.get_num_threads())
    return threads if jobs is None else max(1, min(threads, jobs))


def _call_on_threads(threads, current, kernel, args):
    if threads == current:
        kernel(*args)
        return
    numba.set_num_threads(threads)      # thread-local; restored below
    try:
        kernel(*args)
    finally:
        numba.set_num_threads(current)


def run_on_threads(threads, kernel, *args):
    """Call ``kernel(*args)`` with numba's thread count set to ``threads`` (restored after)."""
    start_thread_pool()
    _call_on_threads(threads, numba.get_num_threads(), kernel, args)


def run_parallel(kernel, work, B, serial_below, *args):
    """Call ``kernel(*args)``, parallel over a batch of ``B``, on torch's number of threads
    (at most ``B``), or on one thread when ``work < serial_below`` or ``B == 1``."""
    start_thread_pool()
    current = numba.get_num_threads()
    _call_on_threads(thread_count(work, serial_below, B, current), current, kernel, args)


# Smallest channel block a job gets when the channels are split: 16 float32
# (64 bytes) is one cache line and one AVX-512 register.
MIN_BLOCK = 16


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


def run_channel_blocks(kernel, shape, serial_below, inputs, outputs):
    """Call ``kernel(*inputs, block, *outputs)`` for a problem of ``shape`` ``(B, T, C)``,
    parallel over (batch row, block of channels) jobs (:func:`channel_block`), on as
    many threads as torch uses now, and on one below ``serial_below`` elements."""
    B, T, C = shape
    start_thread_pool()
    current = numba.get_num_threads()
    threads = thread_count(B * T * C, serial_below, None, current)
    _call_on_threads(threads, current, kernel, (*inputs, channel_block(B, C, threads), *outputs))


# ---------------------------------------------------------------------------
# CUDA kernels: numba-cuda on first use, the jit cache, launches.
# ---------------------------------------------------------------------------

_cuda = None
_cuda_error = None
_cuda_lock = threading.Lock()


def numpy_compat_for_numba_cuda():
    """Give NumPy back ``np.row_stack`` (an alias of ``np.vstack``) where it lacks it.

    NumPy 2.5 removed the alias; numba-cuda up to at least 0.30.4 still registers a
    CUDA overload of ``np.row_stack`` when its target starts (the first kernel
    compiled), so without the alias no kernel compiles: ``AttributeError: module
    'numpy' has no attribute 'row_stack'``, seen on an H200 with numpy 2.5.2
    (NVIDIA/numba-cuda#907, which upstream does not plan to fix). Restoring the
    alias changes nothing for NumPy code (it was ``np.vstack``). Idempotent."""
    import numpy as np

    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack


def numba_cuda():
    """``numba.cuda``, imported on first use (so importing rnnlab needs neither a GPU nor
    numba-cuda), or None when numba-cuda is missing (:func:`require_cuda` then says so).
    Under the simulator, its shared arrays are made safe for its threads first."""
    global _cuda, _cuda_error
    with _cuda_lock:
        if _cuda is None and _cuda_error is None:
            numpy_compat_for_numba_cuda()
            try:  # numba-cuda (pip install "numba-cuda[cu12]"); absent -> error on use only
                from numba import cuda
            except ImportError as exc:  # pragma: no cover - depends on the install
                _cuda_error = exc
            else:
                if cuda_simulator_enabled():
                    _serialise_simulator_shared_arrays()
                _cuda = cuda
    return _cuda


def require_cuda(name):
    """An ImportError naming the op ``name`` when numba-cuda is not installed."""
    if numba_cuda() is None:
        raise ImportError(f"{name}: backend='cuda' needs numba-cuda (pip install 'numba-cuda[cu12]')") \
            from _cuda_error


_jitted = {}


def jitted(fn, name):
    """The ``cuda.jit`` dispatcher of the kernel function ``fn`` of the op ``name``, created on
    first use (compiled for each signature at its first launch, and cached on disk)."""
    require_cuda(name)
    kernel = _jitted.get(fn)
    if kernel is None:
        kernel = _jitted[fn] = _cuda.jit(fn, cache=True)
    return kernel


def launch(fn, grid, block, like, args, name):
    """Compile (once) and launch the kernel function ``fn`` of the op ``name``: :func:`launch_kernel`."""
    launch_kernel(jitted(fn, name), grid, block, like, args, name)


def launch_kernel(kernel, grid, block, like, args, op):
    """Launch a cuda.jit ``kernel`` on ``args`` (tensors are wrapped, other values
    pass through) for the op named ``op``, on the device of the tensor ``like``."""
    if cuda_simulator_enabled():
        # The simulator takes NumPy arrays (views of the CPU tensors: the
        # kernels write straight into the torch outputs).
        if like.is_cuda:
            raise ValueError(f"{op}: under NUMBA_ENABLE_CUDASIM=1 backend='cuda' takes CPU tensors")
        conv = [plain(x).numpy() if isinstance(x, torch.Tensor) else x for x in args]
        kernel[grid, block](*conv)
        return
    if not like.is_cuda:
        raise ValueError(f"{op}: backend='cuda' needs CUDA tensors")
    cuda = numba_cuda()
    with cuda.gpus[like.device.index]:
        # Zero-copy views (__cuda_array_interface__ refuses tensors that
        # require grad, hence detach), launched on torch's current stream so
        # the kernel is ordered with torch's own work.
        conv = [cuda.as_cuda_array(plain(x)) if isinstance(x, torch.Tensor) else x for x in args]
        stream = cuda.external_stream(torch.cuda.current_stream(like.device).cuda_stream)
        kernel[grid, block, stream](*conv)


def _serialise_simulator_shared_arrays():
    """Make the CUDA simulator's ``cuda.shared.array`` safe for its threads.

    The simulator runs every thread of a block as a Python thread and gives
    them one array per call site through a check-then-set on a dict
    (``FakeCUDAShared.array``: ``get``, then ``np.empty`` and store when
    missing), with no lock. Two threads that both find the site missing each
    get an array of their own, so the block's "shared" memory is not shared
    and a reduction or a broadcast through it is silently wrong. It happens
    rarely (a thread switch inside that window): once in a fresh run of
    ``make test``, in a neural_memory test; widening the window with a sleep
    makes it happen every time. This wraps the method in a lock; on a GPU
    nothing changes. Applied by :func:`numba_cuda` when ``NUMBA_ENABLE_CUDASIM=1``.
    """
    try:
        from numba.cuda.simulator import kernelapi
        FakeCUDAShared = kernelapi.FakeCUDAShared
    except (ImportError, AttributeError):   # pragma: no cover - another numba-cuda layout
        return
    if getattr(FakeCUDAShared.array, "_rnnlab_locked", False):
        return
    unlocked = FakeCUDAShared.array
    lock = threading.Lock()

    def array(self, shape, dtype, alignment=None):
        if alignment is not None or shape == 0:        # errors, and dynamic shared memory: no per-site dict
            return unlocked(self, shape, dtype, alignment)
        if isinstance(dtype, kernelapi.types.Type):
            dtype = kernelapi.numpy_support.as_dtype(dtype)
        caller = sys._getframe(1)                      # the call site names the array, as upstream
        site = (caller.f_code.co_filename, caller.f_lineno)
        with lock:
            res = self._allocations.get(site)
            if res is None:
                res = np.empty(shape, dtype)
                self._allocations[site] = res
        return res

    array._rnnlab_locked = True
    array.__doc__ = unlocked.__doc__
    FakeCUDAShared.array = array
