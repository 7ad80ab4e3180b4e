"""Run Python as if only the GPU machine's packages were installed.

The machines lent with a GPU hold Python 3.12 with torch, numba, numba-cuda,
numpy, scipy, pytest, hypothesis, matplotlib and tqdm (:data:`ALLOWED`) and
no package index. This module hides every other installed distribution from
``import`` so that a run here shows what a run there would meet:

- :func:`allowed_distributions`: :data:`ALLOWED` and everything they require
  (their ``Requires-Dist`` without extras, recursively; numba-cuda's ``cu12``
  and ``cu13`` extras too), as installed here;
- :func:`blocked_modules`: the top-level modules of every *other* installed
  distribution (``importlib.metadata.packages_distributions``). The standard
  library, ``rnnlab`` and files that belong to no distribution stay importable;
- :func:`install`: wraps every finder of ``sys.meta_path`` so that none
  finds those modules: ``import`` raises ``ModuleNotFoundError`` and
  ``importlib.util.find_spec`` returns None, as if they were absent.

Command line: ``python tools/minimal_env.py -m MODULE [ARGS...]``,
``python tools/minimal_env.py -c CODE`` or ``python tools/minimal_env.py
SCRIPT [ARGS...]`` runs it with the finder installed (``--list`` prints what
is allowed and what is blocked). ``tools/gpu_check.py --dry-run`` runs every
stage this way; ``tests/test_gpu_check.py`` imports the package, the kernels,
the models, the benchmarks and ``tests/gpu`` this way.
"""
import importlib.abc
import importlib.metadata
import os
import re
import runpy
import sys

#: The distributions the GPU machines hold (see the device tool's KINDS.md), beside the standard library.
ALLOWED = ("torch", "numba", "numba-cuda", "numpy", "scipy", "pytest", "hypothesis", "matplotlib", "tqdm")
#: Extras of allowed distributions whose requirements are there too (numba-cuda's CUDA bindings).
ALLOWED_EXTRAS = {"numba-cuda": ("cu12", "cu13")}
#: Never blocked: the package under test, and what the interpreter's start-up itself imports.
ALWAYS = {"rnnlab", "_distutils_hack", "sitecustomize", "usercustomize"}


def _norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def allowed_distributions(allowed=ALLOWED, extras=ALLOWED_EXTRAS):
    """Normalised names of the installed distributions in ``allowed`` and of all they require."""
    from packaging.markers import UndefinedEnvironmentName
    from packaging.requirements import InvalidRequirement, Requirement

    todo = [(_norm(a), tuple(extras.get(a, ()))) for a in allowed]
    seen = set()
    while todo:
        name, dist_extras = todo.pop()
        if name in seen:
            continue
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        seen.add(name)
        for text in dist.requires or ():
            try:
                req = Requirement(text)
            except InvalidRequirement:
                continue
            if req.marker is not None:
                try:
                    ok = any(req.marker.evaluate({"extra": e}) for e in ("",) + dist_extras)
                except UndefinedEnvironmentName:
                    ok = False
                if not ok:
                    continue
            todo.append((_norm(req.name), ()))
    return seen


def blocked_modules(allowed=ALLOWED):
    """Top-level module names that only distributions outside :func:`allowed_distributions` provide."""
    keep = allowed_distributions(allowed)
    blocked = set()
    for module, dists in importlib.metadata.packages_distributions().items():
        if module in ALWAYS or module in sys.stdlib_module_names or not module.isidentifier():
            continue
        if not any(_norm(d) in keep for d in dists):
            blocked.add(module)
    return blocked


def hidden_list():
    """:func:`blocked_modules` as the value of ``$RNNLAB_MINIMAL_ENV_HIDDEN``."""
    return ",".join(sorted(blocked_modules()))


class _Hiding(importlib.abc.MetaPathFinder):
    """One of ``sys.meta_path``'s finders that finds nothing of the hidden modules: to ``import`` and to
    ``importlib.util.find_spec`` they are absent (``ModuleNotFoundError``, ``None``), as on a machine
    without them."""

    def __init__(self, finder, hidden, refused):
        self.finder, self.hidden, self.refused = finder, hidden, refused

    def find_spec(self, fullname, path=None, target=None):
        top = fullname.partition(".")[0]
        if top in self.hidden:
            if top not in self.refused:
                self.refused.append(top)
            return None
        find = getattr(self.finder, "find_spec", None)
        return None if find is None else find(fullname, path, target)

    def __getattr__(self, name):           # invalidate_caches, find_distributions, ...
        return getattr(self.finder, name)


def install(allowed=ALLOWED):
    """Hide every distribution outside ``allowed`` from ``import``; return the list of the hidden modules
    that something tried to import (it grows as they are asked for).

    ``$RNNLAB_MINIMAL_ENV_HIDDEN`` (the hidden modules, comma-separated, as :func:`hidden_list` gives
    them), when set, saves working them out again: ``tools/gpu_check.py`` passes it to its stages.
    Raises RuntimeError when a hidden module is already imported (the check would be void)."""
    cached = os.environ.get("RNNLAB_MINIMAL_ENV_HIDDEN")
    if cached is not None and allowed == ALLOWED:
        hidden = frozenset(m for m in cached.split(",") if m)
    else:
        hidden = frozenset(blocked_modules(allowed))
    already = sorted(m for m in hidden if m in sys.modules)
    if already:
        raise RuntimeError(f"minimal_env.install: already imported, cannot be hidden: {', '.join(already)}")
    refused = []
    sys.meta_path[:] = [_Hiding(f, hidden, refused) for f in sys.meta_path]
    sys.path_importer_cache.clear()
    return refused


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    if argv[0] == "--list":
        keep = sorted(allowed_distributions())
        print("allowed distributions:", " ".join(keep))
        print("hidden modules:", " ".join(sorted(blocked_modules())))
        return 0
    install()
    if argv[0] == "-m" and len(argv) >= 2:
        sys.argv = [argv[1]] + argv[2:]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    elif argv[0] == "-c" and len(argv) >= 2:
        sys.argv = ["-c"] + argv[2:]
        sys.path.insert(0, "")
        exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
    else:
        sys.argv = argv
        sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
        runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
