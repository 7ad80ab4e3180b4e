"""What the GPU tests share: ``tests/kernel_cases.py`` (dtypes, tolerances, input builders and the
comparison scaled to the reference's size), importable through this module also when only
``tests/gpu`` is on ``sys.path`` (``tests/test_gpu_check.py`` imports these files that way, with
only the GPU machine's packages)."""
import os
import sys

_TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from kernel_cases import (A_FORMS, DTYPES, SINGLE, TOL, WIDE, as_3d, assert_close_scaled,  # noqa: E402,F401
                          cell_case, check_cells_backend, check_scan_backend, check_stack_scan_backend, memory_case, scan_case,
                          stack_case)
