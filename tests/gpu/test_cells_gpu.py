"""``recurrent_cell``'s CUDA kernels on a real GPU against the torch reference.

The simulator (tests/cudasim/test_cells_cuda_sim.py) runs tiny cases only; here the benchmark's
sizes (batch 32, hidden 64, 300 steps), a hidden size with more gates than threads per block
(G*H > THREADS), edge shapes, float32 and float64, forward and backward through the op, on a
side stream, and the hidden-size limit.
"""
import pytest
import torch

from rnnlab.kernels import cells_cuda, recurrent_cell
from rnnlab.kernels.cells_torch import KINDS

from gpu_helpers import assert_close_scaled, cell_case


def _case(kind, B, T, H, seed):
    xp, W, h0, c0, w_h, w_c = cell_case(kind, B, T, H, seed)
    return [x for x in (xp, W, h0, c0) if x is not None], (w_h, w_c)


def _run(kind, args, weights, backend, device, dtype):
    req = [x.to(device, dtype).requires_grad_() for x in args]
    hs, cs = recurrent_cell(kind, *req, backend=backend)
    loss = (hs * weights[0].to(device, dtype)).sum()
    if kind == "lstm":
        loss = loss + (cs * weights[1].to(device, dtype)).sum()
    return [hs, cs] + list(torch.autograd.grad(loss, req))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(32, 300, 64), (3, 20, 300), (5, 7, 13), (1, 1, 1)],
                         ids=["bench", "wide", "odd", "tiny"])
def test_cuda_matches_reference(kind, dtype, shape, cuda_device):
    args, weights = _case(kind, *shape, seed=sum(shape))
    ref = _run(kind, args, weights, "torch", "cpu", torch.float64)
    got = _run(kind, args, weights, "cuda", cuda_device, dtype)
    names = ("hs", "cs", "grad xp", "grad W", "grad h0", "grad c0")
    for name, a, b in zip(names, got, ref):
        if b is None:
            assert a is None, name
            continue
        assert a.is_cuda and a.dtype == dtype, name
        assert_close_scaled(a, b, dtype, f"{kind} {shape} {name}")


def test_auto_backend_and_side_stream(cuda_device):
    """backend='auto' takes the kernels for CUDA tensors; they run in order on torch's current stream."""
    args, weights = _case("lstm", 8, 50, 32, seed=1)
    ref = _run("lstm", args, weights, "cuda", cuda_device, torch.float32)
    stream = torch.cuda.Stream(cuda_device)
    with torch.cuda.stream(stream):
        got = _run("lstm", args, weights, "auto", cuda_device, torch.float32)
    stream.synchronize()
    for a, b in zip(got, ref):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_hidden_size_limit(cuda_device):
    H = cells_cuda.MAX_H + 1
    xp = torch.zeros(1, 1, 1, H, device=cuda_device)
    W = torch.zeros(1, H, H, device=cuda_device)
    with pytest.raises(ValueError, match="hidden sizes up to"):
        recurrent_cell("rnn", xp, W, torch.zeros(1, H, device=cuda_device), backend="cuda")
