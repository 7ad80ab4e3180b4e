"""What the first cell of every chapter calls: seed, report the device, and on
Colab with a GPU make sure numba-cuda matches torch's CUDA; and
:func:`book_file`, which finds the book's committed data files wherever a
notebook runs (in a checkout, or alone on Colab).

The first cell of every notebook (``SETUP_TEMPLATE`` in
:mod:`rnnlab.book.maintenance`, written by ``python -m rnnlab.book sync-setup``)
is, in short::

    try:
        from rnnlab import setup_notebook
    except ImportError:  # Colab, or any kernel without rnnlab: install it
        %pip install "rnnlab @ git+<repository url from _config.yml>[@<the term's tag>]"
        ...
    import rnnlab
    device = rnnlab.setup_notebook(seed=0)
"""
import importlib
import importlib.metadata
import importlib.util
import os
import platform
import random
import re
import subprocess
import sys
import tempfile

import numpy as np
import torch

from . import __version__
# the book's data files live in the light rnnlab.bookdata (what the rest of the package imports)
from .bookdata import book_file, cache_dir, find_checkout, github_repo, raw_url  # noqa: F401

#: The oldest numba-cuda that :func:`ensure_numba_cuda` accepts: from 0.16 on,
#: numba-cuda links through nvJitLink (cuda.core's Linker), which compiles PTX
#: newer than the driver (the ``CUDA_ERROR_UNSUPPORTED_PTX_VERSION`` fix); 0.20
#: is also what the ``cuda`` extra of pyproject.toml asks for (the PTX tests).
MIN_NUMBA_CUDA = "0.20"


def on_colab():
    """True inside a Google Colab runtime."""
    return "google.colab" in sys.modules or "COLAB_RELEASE_TAG" in os.environ


def cuda_extra_for_torch():
    """The numba-cuda extra (``"cu12"`` or ``"cu13"``) matching torch's CUDA, or None."""
    version = torch.version.cuda
    if not version:
        return None
    major = int(version.split(".")[0])
    return f"cu{major}" if major in (12, 13) else None


# ---------------------------------------------------------------- numba-cuda on a GPU runtime

def _installed_version(dist):
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _version_tuple(text):
    """``"0.20.1"`` -> ``(0, 20, 1)`` (leading numeric release only; enough to compare with a minimum)."""
    match = re.match(r"\d+(\.\d+)*", text or "")
    return tuple(int(p) for p in match.group(0).split(".")) if match else ()


def _site_dirs():
    import site
    dirs = set(site.getsitepackages()) | {site.getusersitepackages()}
    dirs |= {p for p in sys.path if p.endswith(("site-packages", "dist-packages"))}
    return sorted((os.path.realpath(d) for d in dirs if d and os.path.isdir(d)), key=len, reverse=True)


def _loaded_top_level_names():
    """Top-level import names in use by this process: imported modules, and the
    package folders of every shared library it has mapped (``/proc/self/maps``;
    torch loads its CUDA libraries from ``site-packages/nvidia/...`` by path,
    without importing them)."""
    names = {name.partition(".")[0] for name in list(sys.modules)}
    sites = _site_dirs()
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split(None, 5)[5].strip() for line in f if len(line.split(None, 5)) == 6}
    except OSError:  # not Linux
        paths = set()
    for path in paths:
        real = os.path.realpath(path) if path.startswith("/") else path
        for site_dir in sites:
            if real.startswith(site_dir + os.sep):
                names.add(real[len(site_dir) + 1:].split(os.sep, 1)[0])
                break
    return names


def frozen_requirements():
    """``name==version`` for every installed distribution this process has loaded.

    Those are the distributions that a ``pip install`` run from this process
    must not change: Python keeps the old modules (and the dynamic loader the
    old libraries) until the runtime restarts. They are: the distributions
    providing an imported module, those whose shared libraries are mapped,
    and every ``nvidia-*`` distribution (the CUDA libraries that torch
    requires at exact versions and may load later). Returns a sorted list.
    """
    try:
        from packaging.version import InvalidVersion, Version
    except ImportError:  # pragma: no cover - packaging comes with matplotlib
        InvalidVersion, Version = ValueError, str
    owners = importlib.metadata.packages_distributions()
    wanted = set()
    for name in _loaded_top_level_names():
        wanted.update(owners.get(name, ()))
    pins = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if not name or not dist.version:
            continue
        try:
            Version(dist.version)
        except InvalidVersion:  # pip would reject the whole constraints file
            continue
        if name in wanted or name.lower().startswith("nvidia-"):
            key = re.sub(r"[-_.]+", "-", name).lower()
            pins.setdefault(key, f"{key}=={dist.version}")
    return sorted(pins.values())


def _redirect_numba_cuda():
    """Make ``import numba.cuda`` load numba-cuda in this process.

    numba-cuda installs ``_numba_cuda_redirector.pth``, which Python runs only
    at start-up: after installing numba-cuda into a running kernel, its
    redirector must be imported by hand (before ``numba.cuda`` is first
    imported) or numba's own, older CUDA target is used.
    """
    importlib.invalidate_caches()
    if importlib.util.find_spec("_numba_cuda_redirector") is not None:
        importlib.import_module("_numba_cuda_redirector")


def _numba_cuda_command(spec, constraints_file, quiet):
    cmd = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check",
           "--upgrade-strategy", "only-if-needed", "-c", constraints_file, spec]
    if quiet:
        cmd.insert(4, "-q")
    return cmd


def _numba_cuda_imported():
    """True when ``numba.cuda`` (numba's own or numba-cuda's) is already imported here."""
    return "numba.cuda" in sys.modules or "numba_cuda" in sys.modules


def ensure_numba_cuda(quiet=True):
    """On a GPU machine, make sure ``numba-cuda[cuXY]`` (XY: torch's CUDA major) is installed.

    A CUDA toolkit newer than the driver fails with
    ``CUDA_ERROR_UNSUPPORTED_PTX_VERSION``; numba-cuda (at least
    :data:`MIN_NUMBA_CUDA`) with the extra that matches torch's CUDA links
    through nvJitLink and avoids it. Colab preinstalls an older numba-cuda
    (with RAPIDS), which is replaced here.

    The install never changes a package this process has already loaded: pip
    runs with a constraints file pinning :func:`frozen_requirements` (every
    distribution with an imported module or a mapped shared library, and all
    ``nvidia-*`` CUDA libraries, which torch pins exactly), so it may only add
    packages or change ones nobody has loaded; where that is impossible pip
    fails and this says so, instead of forcing a runtime restart. Returns a
    sentence saying what was done; never raises for a failed install.
    """
    extra = cuda_extra_for_torch()
    if not torch.cuda.is_available() or extra is None:
        return "no GPU: the CPU kernels are used"
    have = _installed_version("numba-cuda")
    if have is not None and _version_tuple(have) >= _version_tuple(MIN_NUMBA_CUDA):
        if not _numba_cuda_imported():
            _redirect_numba_cuda()
        return f"numba-cuda {have} already installed"
    if _numba_cuda_imported():
        found = f"numba-cuda {have}" if have else "numba's own CUDA target"
        return (f"numba.cuda is already imported ({found}): restart the runtime and run this cell "
                f"first, so that numba-cuda[{extra}]>={MIN_NUMBA_CUDA} can be installed")
    spec = f"numba-cuda[{extra}]>={MIN_NUMBA_CUDA}"
    with tempfile.NamedTemporaryFile("w", suffix="-constraints.txt", delete=False) as f:
        f.write("\n".join(frozen_requirements()) + "\n")
        constraints = f.name
    try:
        done = subprocess.run(_numba_cuda_command(spec, constraints, quiet), capture_output=quiet, text=True)
    finally:
        os.unlink(constraints)
    if done.returncode != 0:
        why = (done.stderr or "").strip().splitlines()[-3:] if quiet else []
        return (f"could not install {spec} without changing a package already loaded "
                f"(pip exit status {done.returncode}{': ' + ' | '.join(why) if why else ''}); "
                f"the CUDA kernels may fail to link: restart the runtime and run "
                f"`pip install \"{spec}\"` before anything else")
    _redirect_numba_cuda()
    return (f"installed numba-cuda {_installed_version('numba-cuda')} [{extra}] to match torch's CUDA "
            f"{torch.version.cuda} (no loaded package changed)")


# ---------------------------------------------------------------- report, seeds, the first cell

def device_report():
    """One line naming the device rnnlab's kernels will use."""
    parts = [f"rnnlab {__version__}", f"torch {torch.__version__}", f"python {platform.python_version()}"]
    if torch.cuda.is_available():
        parts.append(f"device: cuda ({torch.cuda.get_device_name(0)}), kernels: numba-cuda")
    else:
        parts.append(f"device: cpu ({torch.get_num_threads()} threads), kernels: numba cpu")
    return " | ".join(parts)


def seed_everything(seed=0):
    """Seed Python, NumPy and torch (CPU and GPU)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def setup_notebook(seed=0):
    """Seed everything and print the device line; on Colab with a GPU also
    install numba-cuda for torch's CUDA. Returns the torch device to use."""
    if on_colab() and torch.cuda.is_available():
        print(ensure_numba_cuda())
    seed_everything(seed)
    print(device_report())
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")

