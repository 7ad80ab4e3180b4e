"""The book's committed data files, wherever a notebook runs: :func:`book_file`.

A light module (no torch, no numba) so that any part of the package can read the
book's committed results (:mod:`rnnlab.control.experts` reads its experts here)
without importing the notebook set-up of :mod:`rnnlab.notebook`, which
re-exports these names for the notebooks (``from rnnlab.notebook import book_file``).
"""
import importlib.metadata
import json
import os
import pathlib
import re
import urllib.parse
import urllib.request

from . import _cache
from ._io import atomic_write_bytes

__all__ = ["book_file", "cache_dir", "find_checkout", "github_repo", "raw_url"]

def cache_dir():
    """Where :func:`book_file` keeps downloaded files: ``$RNNLAB_CACHE``, else
    ``$XDG_CACHE_HOME/rnnlab``, else ``~/.cache/rnnlab`` (:func:`rnnlab._cache.cache_dir`)."""
    return _cache.cache_dir()


def find_checkout(start=None):
    """The repository root above ``start`` (default: the working directory): the
    first folder, going up, that holds ``_config.yml`` and ``book/``; or None."""
    here = pathlib.Path.cwd() if start is None else pathlib.Path(start)
    here = here.resolve()
    for folder in (here, *here.parents):
        if (folder / "_config.yml").is_file() and (folder / "book").is_dir():
            return folder
    return None


def _direct_url(dist="rnnlab"):
    """The PEP 610 record (``direct_url.json``) of how ``dist`` was installed, as a dict, or None
    (not installed, or installed from an index)."""
    # Every distribution of that name on the path: a checkout's own ``rnnlab.egg-info``
    # may come first (when the working directory is the checkout); the installed one has the record.
    for found in importlib.metadata.distributions(name=dist):
        text = found.read_text("direct_url.json")
        if text:
            try:
                return json.loads(text)
            except ValueError:
                continue
    return None


_GITHUB = re.compile(r"^(?:git\+)?(?:https?://|ssh://git@|git@)github\.com[/:]"
                     r"(?P<owner>[^/]+)/(?P<repo>[^/@#?]+?)(?:\.git)?/?(?:[@#?].*)?$")


def github_repo(url):
    """``(owner, repo)`` of a GitHub repository URL (https, ssh or ``git+`` forms), or None."""
    match = _GITHUB.match(url or "")
    return (match.group("owner"), match.group("repo")) if match else None


def raw_url(owner, repo, ref, relpath):
    """Where GitHub serves ``book/<relpath>`` of ``owner/repo`` at ``ref`` (a commit or branch)."""
    quoted = urllib.parse.quote(f"book/{relpath}")
    return f"https://raw.githubusercontent.com/{owner}/{repo}/{ref}/{quoted}"


def _fetch(url, timeout=60):
    """The bytes at ``url`` (tests replace this: no network in the test suite)."""
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read()


def _check_relpath(relpath):
    if not isinstance(relpath, (str, os.PathLike)):
        raise TypeError(f"book_file: relpath must be a str or path, got {type(relpath).__name__}")
    text = pathlib.PurePath(relpath).as_posix()
    parts = pathlib.PurePosixPath(text).parts
    if not parts or text in (".", "") or pathlib.PurePath(relpath).is_absolute() or ".." in parts:
        raise ValueError(f"book_file: relpath must be a path inside book/, like "
                         f"'lds/data/bench-lds-cpu.json', got {str(relpath)!r}")
    return text


def _committed(folder, rel, where, otherwise, there=""):
    """``folder/book/<rel>``, or a FileNotFoundError saying ``where`` it is missing and how to get it."""
    path = folder / "book" / rel
    if path.is_file():
        return path
    raise FileNotFoundError(f"book_file: {path} does not exist {where}; "
                            f"it is committed in the repository: `git pull`{there}, or {otherwise}")


def book_file(relpath):
    """The file ``book/<relpath>`` of the rnnlab repository, as a :class:`pathlib.Path`.

    For committed results that a notebook reads (``book_file("lds/data/bench-lds-cpu.json")``),
    wherever the notebook runs:

    1. in a checkout: the working directory is inside a folder holding
       ``_config.yml`` and ``book/`` (jupyter-book and nbval run a notebook in
       its own folder): that folder's ``book/<relpath>``;
    2. rnnlab installed from a local folder (``pip install -e .``): that
       folder's ``book/<relpath>``, when it exists;
    3. rnnlab installed from a git URL on GitHub (the first cell on Colab,
       ``pip install "rnnlab @ git+https://github.com/<owner>/<repo>"``):
       downloaded once from ``raw.githubusercontent.com`` at the installed
       commit into :func:`cache_dir`, and the cached copy after that;
    4. otherwise :class:`FileNotFoundError`, naming the file and how to get it.
    """
    rel = _check_relpath(relpath)
    checkout = find_checkout()
    if checkout is not None:
        return _committed(checkout, rel, f"in this checkout ({checkout})", f"`git checkout -- book/{rel}`")
    record = _direct_url() or {}
    url = record.get("url", "")
    if url.startswith("file://"):
        folder = pathlib.Path(urllib.request.url2pathname(urllib.parse.urlparse(url).path))
        return _committed(folder, rel, f"(rnnlab is installed from the folder {folder})",
                          "run the notebook in a full checkout", there=" there")
    vcs = record.get("vcs_info") or {}
    repo = github_repo(url) if vcs.get("vcs", "git") == "git" else None
    if repo is not None:
        ref = vcs.get("commit_id") or vcs.get("requested_revision") or "main"
        dest = cache_dir() / repo[0] / repo[1] / ref / "book" / rel
        if dest.is_file():
            return dest
        source = raw_url(*repo, ref, rel)
        try:
            data = _fetch(source)
        except OSError as exc:  # URLError, HTTPError (404), timeouts: all OSError
            raise FileNotFoundError(
                f"book_file: could not download book/{rel} from {source} ({exc}); "
                f"connect to the internet, or clone https://github.com/{repo[0]}/{repo[1]} "
                f"and run the notebook inside it") from exc
        atomic_write_bytes(dest, data)
        return dest
    how = f"installed from {url}" if url else "not installed from a git URL"
    raise FileNotFoundError(
        f"book_file: cannot find book/{rel}: the working directory {pathlib.Path.cwd()} is not inside an "
        f"rnnlab checkout (a folder with _config.yml and book/), and rnnlab was {how}. Clone the repository "
        f"and run the notebook inside it, or install rnnlab with "
        f"`pip install \"rnnlab @ git+https://github.com/<owner>/<repo>\"` so the file can be downloaded")
