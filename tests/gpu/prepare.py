"""``make test-gpu``'s first step: make sure this environment can run the CUDA kernels.

Usage: ``python tests/gpu/prepare.py --torch SPEC`` (SPEC: the Makefile's
``TORCH``, e.g. ``torch``; split like a shell line, so pip options may follow).

- torch sees a GPU: print it, make sure numba-cuda has the extra of torch's
  CUDA (``cu12``/``cu13``), exit 0.
- torch is a CPU build and an NVIDIA GPU is visible (``nvidia-smi -L``):
  replace it with ``pip install SPEC`` (a CUDA build: PyPI's Linux wheels are),
  then check again.
- otherwise: print ``no CUDA device: <why>`` and exit 1. Nothing is installed
  on a machine without a GPU.
"""
import argparse
import os
import shlex
import shutil
import subprocess
import sys

PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check"]


def probe():
    """``(torch version, torch CUDA version or None, GPU name or None)`` from a fresh interpreter."""
    code = ("import torch; print(torch.__version__); print(torch.version.cuda or ''); "
            "print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if out.returncode != 0:
        return None, None, None
    version, cuda, name = (out.stdout.splitlines() + ["", "", ""])[:3]
    return version, cuda or None, name or None


def visible_gpus():
    """The NVIDIA GPUs the driver lists (``nvidia-smi -L``), or [] (no driver, no GPU)."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    out = subprocess.run([exe, "-L"], capture_output=True, text=True)
    return [line for line in out.stdout.splitlines() if line.startswith("GPU")] if out.returncode == 0 else []


def fail(why):
    print(f"test-gpu: no CUDA device: {why}", file=sys.stderr)
    sys.exit(1)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch", default="torch", help="pip requirement(s) for a CUDA build of torch")
    args = parser.parse_args(argv)
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
        fail("NUMBA_ENABLE_CUDASIM is set: numba's simulator is not a GPU (unset it)")
    version, cuda, name = probe()
    if version is None:
        fail("torch cannot be imported in this environment")
    gpus = visible_gpus()
    if name is None and cuda is None and gpus:
        print(f"test-gpu: torch {version} is a CPU build but the driver lists {len(gpus)} GPU(s): "
              f"installing {args.torch}", flush=True)
        # torch alone first (pip downloads before it removes the old one, so a failed download
        # leaves the CPU build in place), then its CUDA libraries.
        spec = shlex.split(args.torch)
        subprocess.run(PIP + ["install", "-q", "--force-reinstall", "--no-deps", *spec], check=True)
        subprocess.run(PIP + ["install", "-q", *spec], check=True)
        version, cuda, name = probe()
        if cuda is None:
            fail(f"pip installed torch {version}, a CPU build again (a local wheel or index preferred it); "
                 f"install a CUDA build by hand, e.g. {sys.executable} -m pip install torch "
                 f"--index-url https://download.pytorch.org/whl/cu126, and run make test-gpu again")
    if name is None:
        if cuda is None:
            fail(f"torch {version} is a CPU build and no NVIDIA GPU is visible "
                 f"({'nvidia-smi lists none' if shutil.which('nvidia-smi') else 'no nvidia-smi, no driver'}); "
                 f"run make test-gpu on a machine with an NVIDIA GPU (make test-gpu TORCH=torch installs "
                 f"a CUDA build of torch there)")
        fail(f"torch {version} (CUDA {cuda}) finds no GPU"
             + (f" although the driver lists {len(gpus)}" if gpus else " and the driver lists none")
             + " (check the driver, and CUDA_VISIBLE_DEVICES)")
    major = int(cuda.split(".")[0])
    extra = f"cu{major}" if major in (12, 13) else None
    if extra is None:
        fail(f"torch {version} uses CUDA {cuda}; numba-cuda supports CUDA 12 and 13 only")
    from rnnlab.notebook import MIN_NUMBA_CUDA

    spec = f"numba-cuda[{extra}]>={MIN_NUMBA_CUDA}"
    if subprocess.run(PIP + ["install", "-q", spec]).returncode != 0:    # a no-op when already satisfied
        print(f"test-gpu: warning: `pip install {spec}` failed; testing the numba-cuda installed", flush=True)
    print(f"test-gpu: {name}, torch {version} (CUDA {cuda}), numba-cuda[{extra}]", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
