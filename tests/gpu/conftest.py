"""The CUDA kernels on a real GPU: ``make test-gpu`` (or ``pytest tests/gpu``).

Without a usable CUDA device every test here FAILS with "no CUDA device: <why>"
(never skips: a green run must mean the kernels ran on a GPU). ``make
test-unit`` leaves this folder out (``--ignore=tests/gpu``); so does the
simulator run, which is no GPU.
"""
import os

import pytest

from rnnlab.bench.device import cuda_problem


PROBLEM = cuda_problem()
HERE = os.path.dirname(os.path.abspath(__file__))
NOT_RUN = []


def pytest_collection_modifyitems(config, items):
    """Without a GPU, keep one test here to fail (with the reason) and deselect the others
    (``--collect-only`` lists them all: ``tools/gpu_check.py --dry-run`` does)."""
    if PROBLEM is None or config.option.collectonly:
        return
    ours = [item for item in items if str(item.fspath).startswith(HERE + os.sep)]
    if len(ours) > 1:
        NOT_RUN.extend(ours[1:])
        config.hook.pytest_deselected(items=ours[1:])
        items[:] = [item for item in items if item not in NOT_RUN]


@pytest.fixture(autouse=True, scope="session")
def cuda_device():
    """The GPU every test here runs on; fails (never skips) without one."""
    if PROBLEM is not None:
        others = f" ({len(NOT_RUN)} more GPU tests not run)" if NOT_RUN else ""
        pytest.fail(f"no CUDA device: {PROBLEM}{others}", pytrace=False)
    import torch

    return torch.device("cuda", torch.cuda.current_device())


def pytest_terminal_summary(terminalreporter):
    if PROBLEM is not None:
        terminalreporter.write_line(f"tests/gpu: no CUDA device: {PROBLEM}", red=True, bold=True)
    else:
        import torch

        terminalreporter.write_line(f"tests/gpu ran on {torch.cuda.get_device_name()} "
                                    f"(torch {torch.__version__}, CUDA {torch.version.cuda})")
