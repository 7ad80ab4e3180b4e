"""``linear_scan``'s CUDA kernels (sequential and chunked) on a real GPU against the torch reference.

The cases of ``tests/cudasim/test_scan_cuda_sim.py`` (every dtype, the three
forms of ``a``, both directions, with and without ``h0``), then shapes the
simulator cannot afford: several thread blocks and channel groups, channel
counts that are not a multiple of a warp, long sequences not a multiple of the
chunk count, and a problem the ``auto`` choice sends to each kernel. The
reference runs on the CPU, in double precision for the big shapes.
"""
import pytest
import torch

from rnnlab.kernels import linear_scan, linear_scan_ref, scan_cuda, scan_torch

from gpu_helpers import A_FORMS, DTYPES, WIDE, as_3d as _a3, assert_close_scaled, check_scan_backend
from gpu_helpers import scan_case as _make

KERNELS = ["sequential", "chunked"]
SHAPES = [(2, 7, 5), (1, 3, 3), (1, 1, 1)]                      # as in the simulator tests
# (B, T, C): several blocks of 256 threads; 33 and 300 channels (a partial warp / channel group);
# T not a multiple of CHUNKS = 16; B * C = 32768 (many channels); a long thin problem.
BIG_SHAPES = [(4, 1000, 300), (3, 4099, 33), (64, 200, 512), (1, 20000, 8)]


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("form", A_FORMS)
def test_small_shapes_match_torch(kernel, dtype, form, cuda_device):
    with scan_cuda.use_kernel(kernel):
        check_scan_backend(scan_cuda, form, dtype, SHAPES, device=cuda_device, label=f"{kernel} ")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", BIG_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_big_shapes_match_torch(dtype, shape, cuda_device):
    """Both kernels, forward and backward, against the reference in double precision."""
    B, T, C = shape
    gen = torch.Generator().manual_seed(B * T * C)
    for form in ("BTC", "C"):
        a, b, h0_, g = _make(form, B, T, C, dtype, gen)
        a3 = _a3(a)
        wide = [x.to(WIDE[dtype]) for x in (a3, b, h0_, g)]
        dev = [x.to(cuda_device) for x in (a3, b, h0_, g)]
        for reverse, with_h0 in ((False, True), (True, False)):
            h0_w, h0_d = (wide[2], dev[2]) if with_h0 else (None, None)
            h_ref = scan_torch.forward(wide[0], wide[1], h0_w, reverse)
            ref = scan_torch.backward(wide[0], h_ref, wide[3], h0_w, reverse)
            for kernel in KERNELS:
                where = f"{kernel} {shape} {form} reverse={reverse} h0={with_h0}"
                with scan_cuda.use_kernel(kernel):
                    h = scan_cuda.forward(dev[0], dev[1], h0_d, reverse)
                    assert_close_scaled(h, h_ref, dtype, f"h {where}")
                    got = scan_cuda.backward(dev[0], h_ref.to(cuda_device, dtype), dev[3], h0_d, reverse)
                torch.cuda.synchronize()
                names = ("G", "grad_a", "grad_h0") if with_h0 else ("G", "grad_a")
                for name, x, y in zip(names, got, ref):
                    assert_close_scaled(x, y, dtype, f"{name} {where}")


def test_auto_choice_takes_each_kernel():
    assert scan_cuda.choose_kernel(1, 20000, 8) == "chunked"
    assert scan_cuda.choose_kernel(64, 200, 512) == "chunked"          # B*C = 32768 < 2**18
    assert scan_cuda.choose_kernel(512, 200, 512) == "sequential"      # B*C = 2**18


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
@pytest.mark.parametrize("form, reverse, with_h0", [("BTC", False, True), ("C", True, False)])
def test_gradcheck(kernel, dtype, form, reverse, with_h0, cuda_device):
    gen = torch.Generator().manual_seed(1)
    a, b, h0, _ = _make(form, 2, 37, 3, dtype, gen)     # T = 37: 16 chunks of 3 or 2 steps
    inputs = tuple(x.to(cuda_device).requires_grad_() for x in (a, b, h0))
    if not with_h0:
        inputs = inputs[:2] + (None,)

    def f(a, b, h0):
        return linear_scan(a, b, h0, reverse=reverse, backend="cuda")

    with scan_cuda.use_kernel(kernel):
        assert torch.autograd.gradcheck(f, inputs, fast_mode=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_public_op_auto_backend_on_cuda_tensors(dtype, cuda_device):
    """``backend="auto"`` on CUDA tensors: the CUDA kernels, through autograd, a (T, C) ``a`` broadcast."""
    gen = torch.Generator().manual_seed(2)
    a, b, h0, g = _make("TC", 3, 1500, 70, dtype, gen)
    ref_in = [x.detach().to(WIDE[dtype]).requires_grad_() for x in (a, b, h0)]
    h_ref = linear_scan_ref(*ref_in)
    (h_ref * g.to(WIDE[dtype]).conj()).real.sum().backward()
    dev_in = [x.detach().to(cuda_device).requires_grad_() for x in (a, b, h0)]
    h = linear_scan(*dev_in)                                   # backend="auto"
    assert h.is_cuda and h.dtype == dtype
    (h * g.to(cuda_device).conj()).real.sum().backward()
    assert_close_scaled(h, h_ref, dtype, "h")
    for name, x, y in zip(("a", "b", "h0"), dev_in, ref_in):
        assert x.grad.shape == x.shape
        assert_close_scaled(x.grad, y.grad, dtype, f"grad {name}")


def test_non_contiguous_inputs_and_a_side_stream(cuda_device):
    """Transposed (non-contiguous) inputs, launched inside ``torch.cuda.stream(s)``:
    the kernels must run on torch's current stream, ordered with its work."""
    gen = torch.Generator().manual_seed(3)
    a, b, h0, _ = _make("BTC", 4, 777, 300, torch.float32, gen)
    a_t = a.transpose(1, 2).contiguous().to(cuda_device).transpose(1, 2)   # (B, T, C) views, strided
    b_t = b.transpose(1, 2).contiguous().to(cuda_device).transpose(1, 2)
    assert not a_t.is_contiguous() and not b_t.is_contiguous()
    ref = linear_scan_ref(a.double(), b.double(), h0.double())
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        h = linear_scan(a_t * 1.0, b_t + 0.0, h0.to(cuda_device), backend="cuda")   # inputs made on the stream
        h = h * 2.0
    torch.cuda.current_stream().wait_stream(stream)
    assert_close_scaled(h / 2.0, ref, torch.float32, "h on a side stream")
