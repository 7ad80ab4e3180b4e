"""Maintenance of the book's notebooks: the shared first cell, the checks of
the stored notebooks, execution in place.

The repository URL is written once, in ``_config.yml`` (``repository.url``).
The first code cell of every notebook installs rnnlab from that URL when it is
missing (on Colab). After changing the URL in a fork, run::

    python -m rnnlab.book sync-setup      # rewrite the first cell of every notebook
    python -m rnnlab.book check           # what the test suite checks
    python -m rnnlab.book execute NB...   # re-execute notebooks in place, as the book build does

``check`` also verifies that every notebook is listed in ``_toc.yml`` and is
stored executed."""
import json
import pathlib
import re

SETUP_MARKER = "# rnnlab setup"

SETUP_TEMPLATE = '''{marker}: works locally, on Colab (installs rnnlab) and on a GPU runtime.
try:
    from rnnlab import setup_notebook  # fails too on an uninstall's leftover folder
except ImportError:
    %env PIP_DISABLE_PIP_VERSION_CHECK=1
    %pip install "rnnlab @ git+{url}"
    import importlib, sys
    for name in [m for m in sys.modules if m == "rnnlab" or m.startswith("rnnlab.")]:
        del sys.modules[name]
    importlib.invalidate_caches()
import rnnlab
device = rnnlab.setup_notebook(seed=0)'''
# The install shows pip's "Successfully installed ..." (no -q): Colab reads it to offer a restart
# when a package that is already imported was upgraded. Nothing that Colab preinstalls is upgraded by
# rnnlab's requirements (pyproject.toml keeps its lower bounds at or below Colab's versions).


def config_value(root, block, key):
    """``block.key`` of ``_config.yml`` (read without a YAML dependency), or None."""
    text = (pathlib.Path(root) / "_config.yml").read_text(encoding="utf8")
    found = re.search(rf"^{block}:\s*\n((?:[ \t]+.*\n?)+)", text, re.M)
    if found:
        m = re.search(rf"^\s+{key}:\s*(\S+)", found.group(1), re.M)
        if m:
            return m.group(1).strip("'\"")
    return None


def repository_url(root="."):
    """``repository.url`` from ``_config.yml``."""
    url = config_value(root, "repository", "url")
    if url is None:
        raise ValueError("_config.yml has no repository.url")
    return url


def setup_cell_source(url):
    """The exact source of the first code cell of every notebook."""
    return SETUP_TEMPLATE.format(marker=SETUP_MARKER, url=url)


def notebooks(root="."):
    """Every notebook of the book, sorted."""
    root = pathlib.Path(root)
    return sorted(p for p in (root / "book").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def _first_code_cell(nb):
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            return cell
    return None


def sync_setup(root="."):
    """Rewrite the first code cell of every notebook from ``_config.yml``; return the files changed."""
    source = setup_cell_source(repository_url(root))
    changed = []
    for path in notebooks(root):
        nb = json.loads(path.read_text())
        cell = _first_code_cell(nb)
        if cell is None or "".join(cell["source"]) == source:
            continue
        if not "".join(cell["source"]).startswith(SETUP_MARKER):
            raise ValueError(f"{path}: the first code cell is not the rnnlab setup cell")
        cell["source"] = source.splitlines(keepends=True)
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
        changed.append(path)
    return changed


def toc_files(root="."):
    """The files named in ``_toc.yml`` (without suffix)."""
    text = (pathlib.Path(root) / "_toc.yml").read_text()
    return set(re.findall(r"(?:file|root):\s*(\S+)", text))


def check(root="."):
    """Problems with the book's notebooks, one string each (empty when all is well)."""
    root = pathlib.Path(root)
    source = setup_cell_source(repository_url(root))
    listed = toc_files(root)
    problems = []
    for path in notebooks(root):
        rel = path.relative_to(root)
        nb = json.loads(path.read_text())
        cell = _first_code_cell(nb)
        if cell is None or "".join(cell["source"]) != source:
            problems.append(f"{rel}: first code cell is not the setup cell (run python -m rnnlab.book sync-setup)")
        if str(rel.with_suffix("")) not in listed:
            problems.append(f"{rel}: not listed in _toc.yml")
        for n, c in enumerate(nb["cells"], 1):
            if c["cell_type"] != "code":
                continue
            src = "".join(c["source"])
            if c is not cell and ("%pip" in src or "pip install" in src):
                problems.append(f"{rel}: cell {n} installs packages; only the setup cell may")
            if src.strip() and c.get("execution_count") is None:
                problems.append(f"{rel}: cell {n} is not executed")
            for out in c.get("outputs", []):
                if out.get("output_type") == "error":
                    problems.append(f"{rel}: cell {n} stores an error ({out.get('ename')})")
    return problems


def execute(path, timeout=600):
    """Execute a notebook in place, in its own folder (as the book build does);
    return the seconds it took. Needs nbclient (installed with the book extra)."""
    import time

    import nbformat
    from .nbrun import notebook_client

    path = pathlib.Path(path)
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    notebook_client(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    nbformat.write(nb, path)
    return time.perf_counter() - start
