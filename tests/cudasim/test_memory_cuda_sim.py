"""The CUDA kernels of ``neural_memory``, run in numba's CUDA simulator on CPU
tensors and compared with the torch backend (the readable reference and its
hand-written backward, itself tested against autograd in tests/test_memory.py).

Run in its own process: ``NUMBA_ENABLE_CUDASIM=1 pytest tests/cudasim -q``.
In the simulator a block has ``THREADS = 8`` threads, so ``m = 10`` gives
some threads two channels and the tree reductions several levels.
"""
import pytest
import torch

from kernel_cases import F64, TOL, generator, memory_case
from rnnlab.kernels import NeuralMemory, memory_cuda, memory_torch, neural_memory, neural_memory_ref
from rnnlab.kernels.memory_torch import values_buffer

KINDS = ["stack", "queue", "deque"]


def _make(kind, B, T, m, dtype, seed, controls="uniform"):
    """The backend interface's inputs: the values buffer, ``d``, ``u`` as ``(B, T, H)``, and
    gradients of the reads and the strengths (:func:`kernel_cases.memory_case` for the controls)."""
    H = 2 if kind == "deque" else 1
    v, d, u = memory_case(kind, B, T, m, F64, seed, controls)
    gen = generator(seed + 1)
    g_r = torch.randn(B, T, H, m, generator=gen, dtype=F64)
    g_S = torch.randn(B, T, H * T, generator=gen, dtype=F64)
    return [x.to(dtype) for x in (values_buffer(kind, v).contiguous(), d.reshape(B, T, H), u.reshape(B, T, H),
                                  g_r, g_S)]


def test_simulator_is_on():
    assert memory_cuda.cuda is not None
    assert memory_cuda.THREADS == 8


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_forward_and_backward_match_torch(kind, dtype):
    for B, T, m, controls in [(2, 3, 10, "uniform"), (1, 3, 1, "grid"), (1, 3, 10, "ends")]:
        V, d, u, g_r, g_S = _make(kind, B, T, m, dtype, seed=T + m, controls=controls)
        where = f"{kind} {(B, T, m)} {controls}"
        r, S = memory_cuda.forward(kind, V, d, u)
        r_ref, S_ref = memory_torch.forward(kind, V, d, u)
        torch.testing.assert_close(r, r_ref, **TOL[dtype], msg=lambda msg: f"r {where}: {msg}")
        torch.testing.assert_close(S, S_ref, **TOL[dtype], msg=lambda msg: f"S {where}: {msg}")
        for gS in (g_S, None):
            got = memory_cuda.backward(kind, V, d, u, S_ref, g_r, gS)
            ref = memory_torch.backward(kind, V, d, u, S_ref, g_r, gS)
            for name, x, y in zip(("g_V", "g_d", "g_u"), got, ref):
                torch.testing.assert_close(x, y, **TOL[dtype], msg=lambda msg: f"{name} {where}: {msg}")


@pytest.mark.parametrize("kind", KINDS)
def test_step_api_matches_reference(kind):
    B, T, m = 2, 3, 3
    gen = torch.Generator().manual_seed(1)
    shape = (B, T, 2, m) if kind == "deque" else (B, T, m)
    v = torch.randn(shape, generator=gen, dtype=torch.float64, requires_grad=True)
    d = torch.rand(shape[:-1], generator=gen, dtype=torch.float64, requires_grad=True)
    u = torch.rand(shape[:-1], generator=gen, dtype=torch.float64, requires_grad=True)
    mem = NeuralMemory(kind, B, T, m, dtype=torch.float64, backend="cuda")
    reads = torch.stack([mem.step(v[:, t], d[:, t], u[:, t]) for t in range(T)], 1)
    r_ref, s_ref = neural_memory_ref(kind, v, d, u)
    torch.testing.assert_close(reads, r_ref, **TOL[torch.float64])
    torch.testing.assert_close(mem.strengths, s_ref[:, -1], **TOL[torch.float64])
    w = torch.randn(reads.shape, generator=gen, dtype=torch.float64)
    got = torch.autograd.grad((reads * w).sum() + mem.strengths.sum(), (v, d, u))
    ref = torch.autograd.grad((r_ref * w).sum() + s_ref[:, -1].sum(), (v, d, u))
    for x, y in zip(got, ref):
        torch.testing.assert_close(x, y, **TOL[torch.float64])


def test_gradcheck():
    gen = torch.Generator().manual_seed(2)
    v = torch.randn(1, 2, 2, 2, generator=gen, dtype=torch.float64, requires_grad=True)
    d = (0.1 + 0.8 * torch.rand(1, 2, 2, generator=gen, dtype=torch.float64)).requires_grad_()
    u = (0.1 + 0.8 * torch.rand(1, 2, 2, generator=gen, dtype=torch.float64)).requires_grad_()
    assert torch.autograd.gradcheck(lambda v, d, u: neural_memory("deque", v, d, u, backend="cuda"), (v, d, u),
                                    fast_mode=True)
