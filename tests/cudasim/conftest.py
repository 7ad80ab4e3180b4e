"""The CUDA kernels in numba's simulator: a separate pytest process.

numba reads ``NUMBA_ENABLE_CUDASIM`` when it is first imported, so these
tests need a process started with it::

    NUMBA_ENABLE_CUDASIM=1 pytest tests/cudasim -q

Without it, every test in this directory is skipped (the main run also
passes ``--ignore=tests/cudasim``).
"""
import os
import sys

import pytest

SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def pytest_configure(config):
    if SIMULATOR:
        # The simulator runs each CUDA thread as a Python thread, and its block
        # manager busy-polls them to release syncthreads(): a short GIL switch
        # interval (default 5 ms) makes the chunked kernels 2-3x faster here.
        sys.setswitchinterval(2e-4)


def pytest_collection_modifyitems(config, items):
    if SIMULATOR:
        return
    skip = pytest.mark.skip(
        reason="CUDA simulator tests need their own process: NUMBA_ENABLE_CUDASIM=1 pytest tests/cudasim")
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(skip)
