"""Where rnnlab keeps files it makes: downloads and numba's compiled kernels.

Never inside the installed package: numba's ``cache=True`` writes next to the
source by default (``site-packages/rnnlab/kernels/__pycache__``), and after
``pip uninstall rnnlab`` that folder stays behind; ``import rnnlab`` then
finds an empty namespace package instead of failing, and the notebooks' first
cell would not reinstall it. So :func:`use_user_numba_cache` points numba at
the user's cache folder before any kernel is compiled.
"""
import os
import pathlib
import sys


def cache_dir():
    """``$RNNLAB_CACHE``, else ``$XDG_CACHE_HOME/rnnlab``, else ``~/.cache/rnnlab``."""
    if os.environ.get("RNNLAB_CACHE"):
        return pathlib.Path(os.environ["RNNLAB_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache"
    return pathlib.Path(base) / "rnnlab"


def use_user_numba_cache():
    """Set ``NUMBA_CACHE_DIR`` to ``cache_dir()/numba`` unless the user chose one; if numba
    is already imported, tell its configuration too. Returns the folder numba caches in."""
    if not os.environ.get("NUMBA_CACHE_DIR"):
        os.environ["NUMBA_CACHE_DIR"] = str(cache_dir() / "numba")
    config = sys.modules.get("numba.core.config")
    if config is not None and not getattr(config, "CACHE_DIR", ""):
        config.CACHE_DIR = os.environ["NUMBA_CACHE_DIR"]
    return os.environ["NUMBA_CACHE_DIR"]
