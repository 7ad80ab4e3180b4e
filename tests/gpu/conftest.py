"""The CUDA kernels on a real GPU: ``python3 tools/gpu_check.py --out DIR`` (or ``pytest tests/gpu``).

Without a usable CUDA device every test here FAILS with "no CUDA device: <why>"
(never skips: a green run must mean the kernels ran on a GPU). ``make
test-unit`` leaves this folder out (``--ignore=tests/gpu``); so does the
simulator run, which is no GPU. ``tools/gpu_check.py --dry-run`` (part of
``make test-unit``, ``tests/test_gpu_check.py``) collects it under the
simulator with only the GPU machine's packages importable, so an import that
breaks here shows up without a GPU.

On a GPU, run it through ``tools/gpu_check.py``: it checks the device, runs
this folder, then the benchmarks' GPU rows, and writes ``gpu_check.json`` and
``gpu_check.md``. In a session lent a GPU through the ``device`` tool, that is
one call, carrying nothing, first thing: command ``python3 tools/gpu_check.py
--out $OUT`` (timeout_s 480; sized for about 4 minutes on an H100,
compilation included, an estimate until a GPU has run it). The figures in ``gpu_check.md`` replace the book's GPU estimates,
each labelled with the device (its name, torch and CUDA versions, as the
file's title and first line give them), and go into the closing note; a
failure here is fixed on the CPU and the failing stages rerun (``--only
tests``) within the session's device time. ``make test-gpu`` runs the same
check on a machine of your own after putting a CUDA torch into ``.venv``.
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
