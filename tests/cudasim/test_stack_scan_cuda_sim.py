"""The CUDA kernels of ``modal_stack_scan``, run in numba's CUDA simulator on
CPU tensors and compared with the torch backend (the readable reference).

Run in its own process: ``NUMBA_ENABLE_CUDASIM=1 pytest tests/cudasim -q``.
In the simulator a block has ``THREADS = 8`` threads, so ``B * C = 10``
already takes two blocks, the second with idle threads.
"""
import pytest
import torch

from kernel_cases import DTYPES, TOL, stack_case as _make
from rnnlab.kernels import modal_stack_scan, modal_stack_scan_ref
from rnnlab.kernels import stack_scan_cuda, stack_scan_torch

SHAPES = [(2, 5, 5), (1, 1, 1)]


def test_simulator_is_on():
    assert stack_scan_cuda.cuda is not None
    assert stack_scan_cuda.THREADS == 8


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("depth", [1, 3])
def test_forward_and_backward_match_torch(dtype, depth):
    gen = torch.Generator().manual_seed(depth)
    for B, T, C in SHAPES:
        lam, b, h0_, g_last, g_inner_ = _make(B, T, C, depth, dtype, gen)
        for h0 in (None, h0_):
            for g_inner in (None, g_inner_):
                where = f"{(B, T, C)} depth={depth} h0={h0 is not None} g_inner={g_inner is not None}"
                last, inner = stack_scan_cuda.forward(lam, b, depth, h0)
                ref_last, ref_inner = stack_scan_torch.forward(lam, b, depth, h0)
                torch.testing.assert_close(last, ref_last, **TOL[dtype], msg=lambda m: f"last {where}: {m}")
                torch.testing.assert_close(inner, ref_inner, **TOL[dtype], msg=lambda m: f"inner {where}: {m}")
                got = stack_scan_cuda.backward(lam, ref_last, ref_inner, h0, g_last, g_inner)
                ref = stack_scan_torch.backward(lam, ref_last, ref_inner, h0, g_last, g_inner)
                for name, x, y in zip(("grad_lam", "grad_b", "grad_h0"), got, ref):
                    if y is None:
                        assert x is None
                    else:
                        torch.testing.assert_close(x, y, **TOL[dtype], msg=lambda m: f"{name} {where}: {m}")


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
