"""rnnlab: recurrent networks as dynamical systems.

The package behind the rnnlab book: fast linear-recurrence kernels (numba on
the CPU, numba-cuda on a GPU) with readable torch references, the models of
the four papers the book teaches, their tasks, their theory and one training
loop.
"""
__version__ = "0.1.0"

from .kernels import linear_scan, linear_scan_ref, neural_memory  # noqa: E402
from .notebook import setup_notebook, device_report  # noqa: E402

__all__ = ["linear_scan", "linear_scan_ref", "neural_memory", "setup_notebook", "device_report", "__version__"]
