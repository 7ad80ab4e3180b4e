"""Both CUDA kernels of ``linear_scan`` (sequential and chunked), run in
numba's CUDA simulator on CPU tensors and compared with the torch backend.

Run in its own process: ``NUMBA_ENABLE_CUDASIM=1 pytest tests/cudasim -q``.
In the simulator a block has ``CHUNKS = 4`` time chunks of
``CHUNK_CHANNELS = 4`` channels, so small shapes already cover several
channel groups, chunks of unequal length and empty chunks (T < CHUNKS).
"""
import pytest
import torch

from kernel_cases import A_FORMS, DTYPES, TOL, check_scan_backend, scan_case as _make
from rnnlab.kernels import linear_scan, linear_scan_ref
from rnnlab.kernels import scan_cuda

KERNELS = ["sequential", "chunked"]
# (B, T, C): T = 7 is not a multiple of the chunk length (2, 2, 2, 1); T = 3 <
# CHUNKS leaves a chunk empty; C = 5 > CHUNK_CHANNELS gives two channel groups,
# the second with idle threads; B * C = 10 > SEQUENTIAL_THREADS gives two blocks.
SHAPES = [(2, 7, 5), (1, 3, 3), (1, 1, 1)]


def test_simulator_is_on():
    assert scan_cuda.cuda is not None
    assert (scan_cuda.SEQUENTIAL_THREADS, scan_cuda.CHUNKS, scan_cuda.CHUNK_CHANNELS) == (8, 4, 4)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("form", A_FORMS)
def test_forward_and_backward_match_torch(kernel, dtype, form):
    """Backend functions ``forward``/``backward`` against the torch backend,
    for every shape, direction and with or without ``h0``."""
    with scan_cuda.use_kernel(kernel):
        check_scan_backend(scan_cuda, form, dtype, SHAPES)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
@pytest.mark.parametrize("form, reverse, with_h0", [("BTC", False, True), ("C", True, False)])
def test_gradcheck(kernel, dtype, form, reverse, with_h0):
    gen = torch.Generator().manual_seed(1)
    a, b, h0, _ = _make(form, 1, 5, 2, dtype, gen)     # T = 5: chunks of 2, 2, 1 and an empty one
    inputs = (a.requires_grad_(), b.requires_grad_(), h0.requires_grad_() if with_h0 else None)

    def f(a, b, h0):
        return linear_scan(a, b, h0, reverse=reverse, backend="cuda")

    with scan_cuda.use_kernel(kernel):
        assert torch.autograd.gradcheck(f, inputs, fast_mode=True)


def test_auto_chooses_chunked_for_long_thin_problems():
    assert scan_cuda.choose_kernel(1, scan_cuda.CHUNKED_MIN_STEPS, 8) == "chunked"
    assert scan_cuda.choose_kernel(1, scan_cuda.CHUNKED_MIN_STEPS - 1, 8) == "sequential"
    assert scan_cuda.choose_kernel(64, 4096, 512) == "sequential"
    with scan_cuda.use_kernel("sequential"):
        assert scan_cuda.choose_kernel(1, 4096, 8) == "sequential"


def test_linear_scan_through_autograd_auto_kernel():
    """The public op with backend='cuda' on a long, thin problem (chunked)."""
    gen = torch.Generator().manual_seed(2)
    T = scan_cuda.CHUNKED_MIN_STEPS + 3
    a, b, h0, g = _make("TC", 1, T, 3, torch.complex64, gen)
    a.requires_grad_()
    b.requires_grad_()
    h = linear_scan(a, b, h0, backend="cuda")
    (h * g).real.sum().backward()
    a_ref = a.detach().clone().requires_grad_()
    b_ref = b.detach().clone().requires_grad_()
    h_ref = linear_scan_ref(a_ref, b_ref, h0)
    (h_ref * g).real.sum().backward()
    tol = TOL[torch.complex64]
    torch.testing.assert_close(h, h_ref, **tol)
    torch.testing.assert_close(a.grad, a_ref.grad, **tol)
    torch.testing.assert_close(b.grad, b_ref.grad, **tol)


def test_use_kernel_rejects_unknown_name():
    with pytest.raises(ValueError, match="use_kernel: name must be"):
        with scan_cuda.use_kernel("warp"):
            pass
