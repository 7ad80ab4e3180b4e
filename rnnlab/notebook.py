"""What the first cell of every chapter calls: seed, report the device, and on
Colab with a GPU make sure numba-cuda matches torch's CUDA.

The first cell of every notebook is::

    try:
        import rnnlab
    except ImportError:  # Colab, or any kernel without rnnlab: install it
        %pip install -q "rnnlab @ git+<repository url from _config.yml>"
        import rnnlab
    rnnlab.setup_notebook()
"""
import importlib.util
import os
import platform
import random
import subprocess
import sys

import numpy as np
import torch

from . import __version__


def on_colab():
    """True inside a Google Colab runtime."""
    return "google.colab" in sys.modules or "COLAB_RELEASE_TAG" in os.environ


def cuda_extra_for_torch():
    """The numba-cuda extra (``"cu12"`` or ``"cu13"``) matching torch's CUDA, or None."""
    version = torch.version.cuda
    if not version:
        return None
    major = int(version.split(".")[0])
    return f"cu{major}" if major in (12, 13) else None


def ensure_numba_cuda(quiet=True):
    """On a GPU machine, install ``numba-cuda[cuXY]`` matching torch's CUDA if absent.

    A CUDA toolkit newer than the driver fails with
    ``CUDA_ERROR_UNSUPPORTED_PTX_VERSION``; numba-cuda with the extra that
    matches torch's CUDA links through nvJitLink and avoids it. Returns a
    sentence saying what was done.
    """
    extra = cuda_extra_for_torch()
    if not torch.cuda.is_available() or extra is None:
        return "no GPU: the CPU kernels are used"
    if importlib.util.find_spec("numba_cuda") is not None:
        return "numba-cuda already installed"
    cmd = [sys.executable, "-m", "pip", "install", f"numba-cuda[{extra}]"]
    if quiet:
        cmd.insert(4, "-q")
    subprocess.run(cmd, check=True)
    return f"installed numba-cuda[{extra}] to match torch's CUDA {torch.version.cuda}"


def device_report():
    """One line naming the device rnnlab's kernels will use."""
    parts = [f"rnnlab {__version__}", f"torch {torch.__version__}", f"python {platform.python_version()}"]
    if torch.cuda.is_available():
        parts.append(f"device: cuda ({torch.cuda.get_device_name(0)}), kernels: numba-cuda")
    else:
        parts.append(f"device: cpu ({torch.get_num_threads()} threads), kernels: numba cpu")
    return " | ".join(parts)


def seed_everything(seed=0):
    """Seed Python, NumPy and torch (CPU and GPU)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def setup_notebook(seed=0):
    """Seed everything and print the device line; on Colab with a GPU also
    install numba-cuda for torch's CUDA. Returns the torch device to use."""
    if on_colab() and torch.cuda.is_available():
        print(ensure_numba_cuda())
    seed_everything(seed)
    print(device_report())
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
