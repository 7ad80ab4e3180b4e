"""``modal_stack_scan``'s CUDA kernels on a real GPU against the torch reference.

The cases of ``tests/cudasim/test_stack_scan_cuda_sim.py`` (every dtype,
depths 1 and 3, with and without ``h0`` and inner-layer gradients), then big
shapes: many blocks, partial blocks, long sequences (the two-stage sum of
dL/dλ over blocks of 16 steps), deep stacks.
"""
import pytest
import torch

from rnnlab.kernels import modal_stack_scan, modal_stack_scan_ref, stack_scan_cuda, stack_scan_torch

from gpu_helpers import DTYPES, WIDE, assert_close_scaled, check_stack_scan_backend, stack_case

SHAPES = [(2, 5, 5), (1, 1, 1)]                                  # as in the simulator tests
BIG = [((16, 1024, 64), 4), ((2, 4099, 33), 2), ((64, 256, 300), 6), ((1, 20000, 8), 3)]


def _make(B, T, C, depth, dtype, gen):
    return list(stack_case(B, T, C, depth, dtype, gen))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("depth", [1, 3])
def test_small_shapes_match_torch(dtype, depth, cuda_device):
    check_stack_scan_backend(stack_scan_cuda, dtype, depth, SHAPES, device=cuda_device)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, depth", BIG, ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v))
def test_big_shapes_match_torch(dtype, shape, depth, cuda_device):
    B, T, C = shape
    lam, b, h0, g_last, g_inner = _make(B, T, C, depth, dtype, torch.Generator().manual_seed(B + T + C))
    wide = [x.to(WIDE[dtype]) for x in (lam, b, h0, g_last, g_inner)]
    ref_last, ref_inner = stack_scan_torch.forward(wide[0], wide[1], depth, wide[2])
    ref = stack_scan_torch.backward(wide[0], ref_last, ref_inner, wide[2], wide[3], wide[4])
    dev = [x.to(cuda_device) for x in (lam, b, h0, g_last, g_inner)]
    last, inner = stack_scan_cuda.forward(dev[0], dev[1], depth, dev[2])
    assert_close_scaled(last, ref_last, dtype, f"last {shape} depth={depth}")
    assert_close_scaled(inner, ref_inner, dtype, f"inner {shape} depth={depth}")
    got = stack_scan_cuda.backward(dev[0], ref_last.to(cuda_device, dtype), ref_inner.to(cuda_device, dtype),
                                   dev[2], dev[3], dev[4])
    for name, x, y in zip(("grad_lam", "grad_b", "grad_h0"), got, ref):
        assert_close_scaled(x, y, dtype, f"{name} {shape} depth={depth}")


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_gradcheck(dtype, cuda_device):
    lam, b, h0, _, _ = _make(2, 9, 5, 3, dtype, torch.Generator().manual_seed(1))
    inputs = tuple(x.to(cuda_device).requires_grad_() for x in (lam, b, h0))

    def f(lam, b, h0):
        return tuple(modal_stack_scan(lam, b, 3, h0, backend="cuda", return_layers=True))

    assert torch.autograd.gradcheck(f, inputs, fast_mode=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex64])
def test_public_op_auto_backend_on_cuda_tensors(dtype, cuda_device):
    lam, b, _, g, _ = _make(4, 1000, 48, 4, dtype, torch.Generator().manual_seed(2))
    ref_in = [x.detach().to(WIDE[dtype]).requires_grad_() for x in (lam, b)]
    s_ref = modal_stack_scan_ref(*ref_in, 4)
    (s_ref * g.to(WIDE[dtype]).conj()).real.sum().backward()
    dev_in = [x.detach().to(cuda_device).requires_grad_() for x in (lam, b)]
    s = modal_stack_scan(*dev_in, 4)                           # backend="auto"
    assert s.is_cuda and s.dtype == dtype
    (s * g.to(cuda_device).conj()).real.sum().backward()
    assert_close_scaled(s, s_ref, dtype, "states")
    for name, x, y in zip(("lam", "b"), dev_in, ref_in):
        assert_close_scaled(x.grad, y.grad, dtype, f"grad {name}")
