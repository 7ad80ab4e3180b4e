"""``neural_memory``'s CUDA kernels and ``NeuralMemory`` on a real GPU against the torch reference.

The simulator (tests/cudasim/test_memory_cuda_sim.py) runs tiny cases only; here the paper's sizes
(batch 10, values 256, sequences of 131 steps) and ties, in float32 and float64, forward and backward,
and a MemoryLSTM step by step on CUDA against the same model on the CPU.
"""
import copy

import pytest
import torch

from rnnlab import neural_memory
from rnnlab.kernels import NeuralMemory
from rnnlab.models import MemoryLSTM

from gpu_helpers import assert_close_scaled, memory_case


def _case(kind, B, T, m, dtype, seed, grid=False):
    """Values and controls in float64 (moved to ``dtype`` by the tests); ``grid``: controls on a
    quarter grid, many exact ties."""
    return memory_case(kind, B, T, m, torch.float64, seed, "grid" if grid else "uniform")


@pytest.mark.parametrize("kind", ["stack", "queue", "deque"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape, grid", [((10, 131, 256), False), ((3, 40, 5), True), ((1, 1, 1), False)],
                         ids=["paper", "ties", "tiny"])
def test_cuda_matches_reference(kind, dtype, shape, grid, cuda_device):
    v, d, u = _case(kind, *shape, dtype, seed=sum(shape), grid=grid)
    ref_in = [x.clone().requires_grad_() for x in (v, d, u)]
    r_ref, s_ref = neural_memory(kind, *ref_in, backend="torch")
    g = torch.randn(r_ref.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    grads_ref = torch.autograd.grad(r_ref, ref_in, g)
    gpu_in = [x.to(cuda_device, dtype).requires_grad_() for x in (v, d, u)]
    r, s = neural_memory(kind, *gpu_in, backend="cuda")
    assert r.is_cuda and s.is_cuda
    assert_close_scaled(r, r_ref, dtype, "reads")
    assert_close_scaled(s, s_ref, dtype, "strengths")
    grads = torch.autograd.grad(r, gpu_in, g.to(cuda_device, dtype))
    for name, a, b in zip(("v", "d", "u"), grads, grads_ref):
        assert_close_scaled(a, b, dtype, f"grad {name}")


@pytest.mark.parametrize("kind", ["stack", "deque"])
def test_step_api_on_cuda_matches_whole_sequence(kind, cuda_device):
    v, d, u = (x.to(cuda_device) for x in _case(kind, 4, 30, 16, torch.float64, seed=3))
    r_all, _ = neural_memory(kind, v, d, u, backend="cuda")
    memory = NeuralMemory(kind, 4, 30, 16, dtype=torch.float64, device=cuda_device)
    assert memory.backend == "cuda"
    r = torch.stack([memory.step(v[:, t], d[:, t], u[:, t]) for t in range(30)], 1)
    assert_close_scaled(r, r_all, torch.float64, "reads step by step")


def test_memory_lstm_on_cuda_matches_cpu(cuda_device):
    torch.manual_seed(0)
    cpu = MemoryLSTM(16, 16, "stack", hidden_size=32, value_size=8, embedding_size=8).double()
    gpu = copy.deepcopy(cpu).to(cuda_device)
    inputs = torch.randint(1, 36, (5, 20))
    y_cpu, y_gpu = cpu(inputs), gpu(inputs.to(cuda_device))
    assert_close_scaled(y_gpu, y_cpu, torch.float64, "logits")
    g = torch.randn(y_cpu.shape, dtype=torch.float64)
    grads_cpu = torch.autograd.grad(y_cpu, list(cpu.parameters()), g)
    grads_gpu = torch.autograd.grad(y_gpu, list(gpu.parameters()), g.to(cuda_device))
    for (name, _), a, b in zip(cpu.named_parameters(), grads_gpu, grads_cpu):
        assert_close_scaled(a, b, torch.float64, f"grad {name}")
