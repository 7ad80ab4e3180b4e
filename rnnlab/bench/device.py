"""Where a benchmark's ``cuda`` rows run: on a GPU, or in numba's CUDA simulator (a dry run).

On a GPU, ``cuda`` means CUDA tensors and rnnlab's numba-cuda kernels. Under
numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, set before numba is
imported) the CUDA backends take CPU tensors and run every thread of the
kernels as a Python thread: ``tools/gpu_check.py --dry-run`` uses it to run
the benchmarks' ``cuda`` rows on a machine without a GPU, at tiny sizes, so
that a broken option or a table that fails to render shows up in ``make
test`` rather than on the day a GPU is lent. Such rows say ``"simulator":
True``; their times say nothing about a GPU. Without the simulator and
without a GPU, ``cuda`` rows are refused as before.

:func:`cuda_problem` says why the CUDA kernels cannot run on a GPU here (the
reason ``tests/gpu`` and ``tools/gpu_check.py`` print after ``no CUDA
device:``); :func:`device_report` is what ``tools/gpu_check.py`` records of
the device: ``python -m rnnlab.bench.device [--json PATH]`` prints it and
launches one tiny numba kernel on a torch tensor (in the simulator, on a
NumPy array) to show that numba-cuda drives the device.
"""
import os
import sys
import time

import torch

from rnnlab.kernels._backend import numpy_compat_for_numba_cuda

__all__ = ["simulator", "cuda_runs_here", "tensor_device", "SIMULATOR_NOTE", "cuda_problem", "numba_cuda_details",
           "device_report"]

SIMULATOR_NOTE = ("cuda rows ran in numba's CUDA simulator on the CPU (NUMBA_ENABLE_CUDASIM=1): "
                  "they test the plumbing; their times say nothing about a GPU.")


def simulator():
    """True when numba's CUDA simulator is switched on (``NUMBA_ENABLE_CUDASIM=1``)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def cuda_runs_here():
    """Whether ``cuda`` rows can run: a GPU that torch sees, or numba's CUDA simulator."""
    return simulator() or torch.cuda.is_available()


def tensor_device(device):
    """The torch device for the tensors of a row on ``device`` (``"cpu"`` or ``"cuda"``):
    ``"cuda"`` is ``"cpu"`` under the simulator, whose kernels take CPU tensors."""
    device = str(device)
    if device.startswith("cuda") and simulator():
        return "cpu"
    return device


def cuda_problem():
    """None when torch and numba-cuda can both use a GPU here, else why not (one sentence)."""
    if simulator():
        return "NUMBA_ENABLE_CUDASIM is set: numba's simulator is not a GPU (unset it)"
    if not torch.cuda.is_available():
        if not torch.version.cuda:
            return (f"torch {torch.__version__} is a CPU build "
                    f"(`make test-gpu TORCH=torch` installs a CUDA build on a machine with a GPU)")
        return (f"torch {torch.__version__} (CUDA {torch.version.cuda}) finds no GPU "
                f"(no NVIDIA driver, or CUDA_VISIBLE_DEVICES hides the devices)")
    try:
        numpy_compat_for_numba_cuda()
        from numba import cuda
    except ImportError as exc:
        return f"numba-cuda is not installed ({exc}): pip install 'numba-cuda[cu12]'"
    if not cuda.is_available():
        why = numba_cuda_details().get("error")
        return ("torch sees a GPU but numba-cuda does not (numba.cuda.is_available() is False"
                + (f": {why}" if why else "; try `numba -s`") + ")")
    return None


def numba_cuda_details():
    """What numba-cuda found of the CUDA stack (versions of the driver, runtime and NVVM), each entry
    None when it could not be read; ``error``: why numba-cuda could not start, or None."""
    out = {"driver_version": None, "runtime_version": None, "nvvm_version": None, "error": None}
    if simulator():
        return out
    try:
        numpy_compat_for_numba_cuda()
        from numba import cuda

        for key, get in (("driver_version", lambda: cuda.cudadrv.driver.driver.get_version()),
                         ("runtime_version", lambda: cuda.runtime.get_version()),
                         ("nvvm_version", lambda: cuda.cudadrv.nvvm.NVVM().get_version())):
            try:
                out[key] = ".".join(str(v) for v in get())
            except Exception as exc:  # reported, not raised
                out["error"] = out["error"] or f"{key}: {type(exc).__name__}: {str(exc).strip()[:300]}"
    except ImportError as exc:
        out["error"] = f"numba.cuda: {exc}"
    return out


def _version(dist):
    import importlib.metadata

    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


cuda = None      # numba.cuda, imported by _smoke_kernel (the simulator swaps the kernel's global ``cuda``)


def _twice(x):
    """The smoke test's kernel: ``x[i] *= 2``."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        x[i] = 2 * x[i]


def _smoke_kernel():
    """Compile and launch one tiny numba-cuda kernel (on a torch CUDA tensor; on NumPy in the simulator);
    return ``{"ok", "seconds", "error"}``."""
    global cuda
    start = time.perf_counter()
    try:
        import numpy as np
        numpy_compat_for_numba_cuda()
        from numba import cuda

        twice = cuda.jit(_twice)
        if simulator():
            x = np.arange(8, dtype=np.float32)
            twice[1, 8](x)
            got = x.tolist()
        else:
            t = torch.arange(8, dtype=torch.float32, device="cuda")
            twice[1, 32](cuda.as_cuda_array(t))
            torch.cuda.synchronize()
            got = t.cpu().tolist()
        if got != [2.0 * i for i in range(8)]:
            raise AssertionError(f"a numba-cuda kernel that doubles 0..7 gave {got}")
        return {"ok": True, "seconds": time.perf_counter() - start, "error": None}
    except Exception as exc:  # reported, not raised: the report is the point
        return {"ok": False, "seconds": time.perf_counter() - start, "error": f"{type(exc).__name__}: {exc}"}


def _driver():
    """The NVIDIA driver version from ``nvidia-smi``, or None."""
    import shutil
    import subprocess

    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None


def device_report(smoke=True):
    """What a GPU run depends on (JSON-ready): versions, the device, ``problem`` (:func:`cuda_problem`),
    and with ``smoke`` the result of one tiny numba-cuda kernel."""
    import platform

    problem = cuda_problem()
    report = {
        "python": platform.python_version(), "executable": sys.executable, "platform": platform.platform(),
        "torch": torch.__version__, "torch_cuda": torch.version.cuda,
        "cudnn": None, "numba": _version("numba"), "numba_cuda": _version("numba-cuda"),
        "numpy": _version("numpy"), "rnnlab": os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        "simulator": simulator(), "problem": problem,
        "device": None, "capability": None, "multiprocessors": None, "memory_bytes": None,
        "driver": _driver(), "numba_cuda_module": None, "numba_cuda_details": numba_cuda_details(),
        "smoke_kernel": None,
    }
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        report.update(device=props.name, capability=f"{props.major}.{props.minor}",
                      multiprocessors=props.multi_processor_count, memory_bytes=props.total_memory)
        if torch.backends.cudnn.is_available():
            report["cudnn"] = torch.backends.cudnn.version()
    elif simulator():
        report["device"] = "numba CUDA simulator (CPU)"
    try:
        numpy_compat_for_numba_cuda()
        from numba import cuda

        report["numba_cuda_module"] = cuda.__file__
    except ImportError as exc:
        report["numba_cuda_module"] = f"not importable: {exc}"
    if smoke and (problem is None or simulator()):
        report["smoke_kernel"] = _smoke_kernel()
        if not report["smoke_kernel"]["ok"] and problem is None:
            report["problem"] = f"numba-cuda could not run a kernel on {report['device']}: " \
                                f"{report['smoke_kernel']['error']}"
    return report


def main(argv=None):
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="python -m rnnlab.bench.device",
                                     description="The CUDA device as torch and numba-cuda see it (JSON).")
    parser.add_argument("--json", metavar="PATH", help="also write the report to PATH")
    parser.add_argument("--no-smoke", dest="smoke", action="store_false",
                        help="do not compile and launch the tiny numba-cuda kernel")
    args = parser.parse_args(argv)
    report = device_report(smoke=args.smoke)
    text = json.dumps(report, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
