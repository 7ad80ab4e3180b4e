"""The first cell's helper: device report, seeding, numba-cuda extra choice."""
import torch

import rnnlab
from rnnlab import notebook


def test_device_report_names_the_device():
    line = rnnlab.device_report()
    assert line.startswith(f"rnnlab {rnnlab.__version__}")
    assert ("device: cuda" in line) == torch.cuda.is_available()


def test_setup_notebook_seeds_and_returns_the_device(capsys):
    dev = rnnlab.setup_notebook(seed=3)
    first = torch.rand(3)
    rnnlab.setup_notebook(seed=3)
    assert torch.equal(first, torch.rand(3))
    assert dev.type == ("cuda" if torch.cuda.is_available() else "cpu")
    assert "device:" in capsys.readouterr().out


def test_cuda_extra_matches_torch_cuda(monkeypatch):
    monkeypatch.setattr(torch.version, "cuda", None)
    assert notebook.cuda_extra_for_torch() is None
    monkeypatch.setattr(torch.version, "cuda", "12.4")
    assert notebook.cuda_extra_for_torch() == "cu12"
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    assert notebook.cuda_extra_for_torch() == "cu13"
    monkeypatch.setattr(torch.version, "cuda", "11.8")
    assert notebook.cuda_extra_for_torch() is None


def test_no_install_without_a_gpu():
    if not torch.cuda.is_available():
        assert notebook.ensure_numba_cuda() == "no GPU: the CPU kernels are used"
