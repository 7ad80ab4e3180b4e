"""Numba kernels, one recurrence per operation, each with a torch reference.

This package is the only home of numba code in rnnlab; models call the ops
exported here and never import numba themselves. Compiled kernels are cached
in the user's cache folder, not in the package (:mod:`rnnlab._cache`).
"""
from .._cache import use_user_numba_cache

use_user_numba_cache()

from ._backend import cuda_simulator_enabled  # noqa: E402
from .scan import linear_scan  # noqa: E402
from .scan_torch import linear_scan_ref
from .stack_scan import modal_stack_scan
from .stack_scan_torch import modal_stack_scan_ref
from .memory import neural_memory, NeuralMemory
from .memory_torch import neural_memory_backward_ref, neural_memory_loop, neural_memory_ref
from .cells import recurrent_cell
from .cells_torch import cell_step_ref, recurrent_cell_ref, recurrent_cell_backward_ref

__all__ = ["linear_scan", "linear_scan_ref", "modal_stack_scan", "modal_stack_scan_ref", "cuda_simulator_enabled",
           "neural_memory", "NeuralMemory", "neural_memory_ref", "neural_memory_backward_ref", "neural_memory_loop",
           "recurrent_cell", "cell_step_ref", "recurrent_cell_ref", "recurrent_cell_backward_ref"]
