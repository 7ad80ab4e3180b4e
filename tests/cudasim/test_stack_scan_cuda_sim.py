"""The CUDA kernels of ``modal_stack_scan``, run in numba's CUDA simulator on
CPU tensors and compared with the torch backend (the readable reference).

Run in its own process: ``NUMBA_ENABLE_CUDASIM=1 pytest tests/cudasim -q``.
In the simulator a block has ``THREADS = 8`` threads, so ``B * C = 10``
already takes two blocks, the second with idle threads.
"""
import pytest
import torch

from kernel_cases import DTYPES, TOL, check_stack_scan_backend, stack_case as _make
from rnnlab.kernels import modal_stack_scan, modal_stack_scan_ref
from rnnlab.kernels import stack_scan_cuda

SHAPES = [(2, 5, 5), (1, 1, 1)]


def test_simulator_is_on():
    assert stack_scan_cuda.cuda is not None
    assert stack_scan_cuda.THREADS == 8


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("depth", [1, 3])
def test_forward_and_backward_match_torch(dtype, depth):
    check_stack_scan_backend(stack_scan_cuda, dtype, depth, SHAPES)


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_gradcheck(dtype):
    lam, b, h0, _, _ = _make(1, 3, 2, 2, dtype, torch.Generator().manual_seed(1))
    inputs = (lam.requires_grad_(), b.requires_grad_(), h0.requires_grad_())

    def f(lam, b, h0):
        return tuple(modal_stack_scan(lam, b, 2, h0, backend="cuda", return_layers=True))

    assert torch.autograd.gradcheck(f, inputs, fast_mode=True)


def test_public_op_through_autograd():
    lam, b, _, g, _ = _make(2, 4, 3, 3, torch.complex64, torch.Generator().manual_seed(2))
    lam.requires_grad_()
    b.requires_grad_()
    s = modal_stack_scan(lam, b, 3, backend="cuda")
    (s * g).real.sum().backward()
    lam_r, b_r = lam.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    s_r = modal_stack_scan_ref(lam_r, b_r, 3)
    (s_r * g).real.sum().backward()
    tol = TOL[torch.complex64]
    torch.testing.assert_close(s, s_r, **tol)
    torch.testing.assert_close(lam.grad, lam_r.grad, **tol)
    torch.testing.assert_close(b.grad, b_r.grad, **tol)
