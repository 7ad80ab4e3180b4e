"""The CUDA kernels of ``recurrent_cell``, run in numba's CUDA simulator on CPU tensors and compared
with the torch backend (the readable reference and its hand-written backward, itself tested against
autograd in tests/test_cells_kernels.py).

Run in its own process: ``NUMBA_ENABLE_CUDASIM=1 pytest tests/cudasim -q``. In the simulator a block
has ``THREADS = 8`` threads, so H = 5 gives some threads two units and every gate loop (G*H outputs)
several rounds; B = 2 runs two blocks.
"""
import pytest
import torch

from kernel_cases import F64, TOL, cell_case, check_cells_backend
from rnnlab.kernels import cells_cuda, recurrent_cell, recurrent_cell_ref
from rnnlab.kernels.cells_torch import KINDS


def _inputs(kind, B, T, H, dtype, seed):
    """``(xp, W, h0, c0, g_hs, g_cs)``, ``g_cs`` None but for the LSTM."""
    xp, W, h0, c0, g_hs, g_cs = cell_case(kind, B, T, H, seed, dtype)
    return xp, W, h0, c0, g_hs, (g_cs if kind == "lstm" else None)


def test_simulator_is_on():
    assert cells_cuda.cuda is not None
    assert cells_cuda.THREADS == 8


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_forward_and_backward_match_torch(kind, dtype):
    check_cells_backend(cells_cuda, kind, dtype, [(2, 3, 5), (1, 2, 4), (1, 1, 1)])


@pytest.mark.parametrize("kind", KINDS)
def test_op_gradients_match_autograd_through_reference(kind):
    """The whole op with backend='cuda' (kernels, then the op's dW) against autograd through the reference."""
    xp, W, h0, c0, g_hs, g_cs = _inputs(kind, 2, 3, 4, F64, seed=7)
    results = []
    for fn in (lambda *a: recurrent_cell(kind, *a, backend="cuda"), lambda *a: recurrent_cell_ref(kind, *a)):
        args = [x.clone().requires_grad_() for x in (xp, W, h0, c0) if x is not None]
        hs, cs = fn(*args)
        loss = (hs * g_hs).sum() + ((cs * g_cs).sum() if kind == "lstm" else 0)
        results.append([hs, cs] + list(torch.autograd.grad(loss, args)))
    for x, y in zip(*results):
        if y is None:
            assert x is None
            continue
        torch.testing.assert_close(x, y, **TOL[F64])


def test_hidden_size_limit():
    xp, W, h0, _, _, _ = _inputs("rnn", 1, 1, cells_cuda.MAX_H + 1, torch.float32, seed=0)
    with pytest.raises(ValueError, match="hidden sizes up to"):
        cells_cuda.forward("rnn", xp, W, h0, None)
