"""The CUDA kernels on a real GPU: ``make test-gpu`` (or ``pytest tests/gpu``).

Without a usable CUDA device every test here FAILS with "no CUDA device: <why>"
(never skips: a green run must mean the kernels ran on a GPU). ``make
test-unit`` leaves this folder out (``--ignore=tests/gpu``); so does the
simulator run, which is no GPU.
"""
import os

import pytest


def cuda_problem():
    """None when torch and numba-cuda can both use a GPU here, else why not (one sentence)."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
        return "NUMBA_ENABLE_CUDASIM is set: numba's simulator is not a GPU (unset it for tests/gpu)"
    import torch

    if not torch.cuda.is_available():
        if not torch.version.cuda:
            return (f"torch {torch.__version__} is a CPU build "
                    f"(`make test-gpu TORCH=torch` installs a CUDA build on a machine with a GPU)")
        return (f"torch {torch.__version__} (CUDA {torch.version.cuda}) finds no GPU "
                f"(no NVIDIA driver, or CUDA_VISIBLE_DEVICES hides the devices)")
    try:
        from numba import cuda
    except ImportError as exc:
        return f"numba-cuda is not installed ({exc}): pip install 'numba-cuda[cu12]'"
    if not cuda.is_available():
        return "torch sees a GPU but numba-cuda does not (numba.cuda.is_available() is False; try `numba -s`)"
    return None


PROBLEM = cuda_problem()
HERE = os.path.dirname(os.path.abspath(__file__))
NOT_RUN = []


def pytest_collection_modifyitems(config, items):
    """Without a GPU, keep one test here to fail (with the reason) and deselect the others."""
    if PROBLEM is None:
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
