"""The GPU as a user meets it: the device is real, numba-cuda is the CUDA target,
and the models give on CUDA what they give on the CPU (forward and gradients)."""
import copy

import pytest
import torch

from rnnlab.models import LDS, LDStack

from gpu_helpers import assert_close_scaled


def test_the_device_is_a_real_gpu_and_numba_cuda_drives_it(cuda_device):
    from numba import cuda

    assert torch.cuda.is_available() and torch.version.cuda
    assert cuda.is_available()
    # numba-cuda (the package), not numba's old built-in CUDA target: the one that
    # links through nvJitLink and so runs PTX newer than the driver.
    assert "numba_cuda" in cuda.__file__, cuda.__file__
    x = torch.arange(10, dtype=torch.float32, device=cuda_device)
    assert cuda.as_cuda_array(x).shape == (10,)


@pytest.mark.parametrize("make", [
    lambda: LDS(8, 128, 8),
    lambda: LDS(8, 128, 8, eigenvalues="unit"),
    lambda: LDStack(8, 128, 8, depth=4),
], ids=["lds", "lds-unit", "ldstack4"])
def test_models_on_cuda_match_cpu(make, cuda_device):
    torch.manual_seed(0)
    cpu = make().double()
    gpu = copy.deepcopy(cpu).float().to(cuda_device)
    x = torch.randn(16, 1024, 8, dtype=torch.float64)
    g = torch.randn(16, 1024, 8, dtype=torch.float64)
    y_cpu, _ = cpu(x)
    y_gpu, _ = gpu(x.float().to(cuda_device))
    assert y_gpu.is_cuda
    assert_close_scaled(y_gpu, y_cpu, torch.float32, "outputs")
    grads_cpu = torch.autograd.grad(y_cpu, list(cpu.parameters()), g)
    grads_gpu = torch.autograd.grad(y_gpu, list(gpu.parameters()), g.float().to(cuda_device))
    for (name, _), a, b in zip(cpu.named_parameters(), grads_gpu, grads_cpu):
        assert_close_scaled(a, b, torch.float32, f"grad {name}")
