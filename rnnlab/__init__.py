"""rnnlab: recurrent networks as dynamical systems.

The package behind the rnnlab book: fast linear-recurrence kernels (numba on
the CPU, numba-cuda on a GPU) with readable torch references, the models of
the four papers the book teaches, their tasks, their theory and one training
loop.

The four recurrence ops of :mod:`rnnlab.kernels` are here at the top, each
with its readable torch reference: :func:`linear_scan` (the diagonal linear
recurrence), :func:`modal_stack_scan` (the LDStack's layers),
:func:`neural_memory` (the continuous stack, queue and deque) and
:func:`recurrent_cell` (RNN, LSTM, GRU and CfC cells over a sequence).
"""
__version__ = "0.1.0"

from .kernels import (linear_scan, linear_scan_ref, modal_stack_scan, modal_stack_scan_ref,  # noqa: E402
                      neural_memory, neural_memory_ref, recurrent_cell, recurrent_cell_ref)
from .notebook import setup_notebook, device_report  # noqa: E402

__all__ = ["linear_scan", "linear_scan_ref", "modal_stack_scan", "modal_stack_scan_ref", "neural_memory",
           "neural_memory_ref", "recurrent_cell", "recurrent_cell_ref", "setup_notebook", "device_report",
           "__version__"]
