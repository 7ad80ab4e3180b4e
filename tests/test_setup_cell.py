"""The notebooks' first cell where rnnlab is missing, or half removed, as a Colab user meets it.

After ``pip uninstall rnnlab`` an installed copy could leave numba's cache folder
(``site-packages/rnnlab/kernels/__pycache__``) behind; ``import rnnlab`` then
succeeded as an empty namespace package, the cell skipped the install, and every
later cell failed. The cell now asks for ``setup_notebook`` itself, and the
kernels cache in the user's folder, never in the package.
"""
import os
import pathlib
import subprocess
import sys
import textwrap

from rnnlab.book import maintenance

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _run_cell(tmp_path, leftover):
    """Run the setup cell in a fresh interpreter whose only rnnlab is ``tmp_path/site/rnnlab``
    (the leftover folder or nothing); ``%pip install`` is replaced by a stand-in that
    installs the package there (a link to this checkout's)."""
    site = tmp_path / "site"
    site.mkdir()
    if leftover:
        (site / "rnnlab" / "kernels" / "__pycache__").mkdir(parents=True)
        (site / "rnnlab" / "kernels" / "__pycache__" / "scan_cpu.linear_scan-1.py311.nbi").write_bytes(b"")
    cell = maintenance.setup_cell_source("https://example.org/rnnlab")
    pip_lines = [line for line in cell.splitlines() if line.strip().startswith("%pip")]
    assert len(pip_lines) == 1 and " -q" not in pip_lines[0]
    assert "%env PIP_DISABLE_PIP_VERSION_CHECK=1" in cell
    cell = cell.replace("%env PIP_DISABLE_PIP_VERSION_CHECK=1", "pass")
    indent = pip_lines[0][:len(pip_lines[0]) - len(pip_lines[0].lstrip())]
    cell = cell.replace(pip_lines[0], f"{indent}_pip_install()")
    program = textwrap.dedent(f"""
        import os, pathlib, shutil, sys
        sys.path.insert(0, {str(site)!r})
        def _pip_install():
            print("Successfully installed rnnlab (stand-in)")
            shutil.rmtree({str(site / 'rnnlab')!r}, ignore_errors=True)
            os.symlink({str(ROOT / 'rnnlab')!r}, {str(site / 'rnnlab')!r})
        """) + cell + "\nprint('rnnlab from', pathlib.Path(rnnlab.__file__).parent, 'device', device)\n"
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "PYTHONPATH")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    env.pop("RNNLAB_CACHE", None)
    out = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_the_cell_installs_over_a_leftover_folder(tmp_path):
    out = _run_cell(tmp_path, leftover=True)
    assert "Successfully installed" in out
    assert f"rnnlab from {tmp_path / 'site' / 'rnnlab'}" in out and "device cpu" in out


def test_the_cell_installs_nothing_when_rnnlab_is_there(tmp_path):
    out = _run_cell(tmp_path, leftover=False)        # the test environment's rnnlab is importable
    assert "Successfully installed" not in out and f"rnnlab from {ROOT / 'rnnlab'}" in out


def test_numba_caches_outside_the_package(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(XDG_CACHE_HOME=str(tmp_path), RNNLAB_CACHE="")
    code = "import rnnlab, numba, os; print(numba.config.CACHE_DIR); print(os.environ['NUMBA_CACHE_DIR'])"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(tmp_path / "rnnlab" / "numba")] * 2
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "mine")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.stdout.split() == [str(tmp_path / "mine")] * 2


# ------------------------------------------------------------ pinning one version for a term
# `python -m rnnlab.book sync-setup --ref TAG` pins rnnlab in every notebook's first cell; a plain
# sync-setup keeps the pin; --unpin removes it. Cheap: a two-notebook book in tmp_path, no kernel.

import json  # noqa: E402

import pytest  # noqa: E402

from rnnlab.book import __main__ as book_cli  # noqa: E402

URL = "https://example.org/fork/rnnlab"


def _book(tmp_path, refs=(None, None)):
    """A book of two notebooks, ``book/a.ipynb`` and ``book/b.ipynb``, whose setup
    cells pin ``refs``."""
    (tmp_path / "book").mkdir()
    (tmp_path / "_config.yml").write_text(f"repository:\n  url: {URL}\n  branch: main\n")
    (tmp_path / "_toc.yml").write_text("root: book/a\nchapters:\n- file: book/b\n")
    for name, ref in zip("ab", refs):
        _write_cell(tmp_path / "book" / f"{name}.ipynb", maintenance.setup_cell_source(URL, ref))
    return tmp_path


def _write_cell(path, source):
    cell = {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [],
            "source": source.splitlines(keepends=True)}
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb, indent=1) + "\n")


def _cells(root):
    return {p.name: "".join(json.loads(p.read_text())["cells"][0]["source"])
            for p in sorted((root / "book").glob("*.ipynb"))}


def _install_lines(root):
    return {name: [ln.strip() for ln in src.splitlines() if "%pip install" in ln]
            for name, src in _cells(root).items()}


def test_sync_setup_ref_pins_every_notebook_and_check_accepts_it(tmp_path, capsys):
    root = _book(tmp_path)
    assert book_cli.main(["sync-setup", "--root", str(root), "--ref", "term-2026"]) == 0
    assert capsys.readouterr().out.count("rewrote") == 2
    pinned = f'%pip install "rnnlab @ git+{URL}@term-2026"'
    assert _install_lines(root) == {"a.ipynb": [pinned], "b.ipynb": [pinned]}
    assert maintenance.check(root) == []
    assert maintenance.current_ref(root) == "term-2026"


def test_a_plain_sync_setup_keeps_the_pin(tmp_path, monkeypatch):
    root = _book(tmp_path, ("term-2026", "term-2026"))
    assert maintenance.sync_setup(root) == []                 # nothing to do: already current
    # the template changes (a maintainer edits it): the re-sync rewrites, and keeps the pin
    edited = maintenance.SETUP_TEMPLATE.replace("import rnnlab\n", "import rnnlab  # new\n")
    monkeypatch.setattr(maintenance, "SETUP_TEMPLATE", edited)
    assert maintenance.check(root) != []
    assert book_cli.main(["sync-setup", "--root", str(root)]) == 0
    for source in _cells(root).values():
        assert "import rnnlab  # new" in source and f"git+{URL}@term-2026\"" in source
    assert maintenance.check(root) == []


def test_unpin_removes_the_ref(tmp_path):
    root = _book(tmp_path, ("term-2026", "term-2026"))
    assert book_cli.main(["sync-setup", "--root", str(root), "--unpin"]) == 0
    plain = f'%pip install "rnnlab @ git+{URL}"'
    assert _install_lines(root) == {"a.ipynb": [plain], "b.ipynb": [plain]}
    assert maintenance.current_ref(root) is None and maintenance.check(root) == []


@pytest.mark.parametrize("ref", ["term 2026", 'a"b', "a'b", "-rf", "a..b", "", "v1;rm", "a@b",
                                 "a#b", "/main", "main/", "a//b", ".hidden", "x.lock", "v1.",
                                 "$(id)"])
def test_a_bad_ref_is_refused_naming_ref_and_nothing_is_written(tmp_path, capsys, ref):
    root = _book(tmp_path)
    before = _cells(root)
    with pytest.raises(SystemExit) as exit_:
        book_cli.main(["sync-setup", "--root", str(root), f"--ref={ref}"])
    assert exit_.value.code == 2
    assert f"--ref {ref!r} is not a git ref" in capsys.readouterr().err
    assert _cells(root) == before
    with pytest.raises(ValueError, match="--ref"):
        maintenance.setup_cell_source(URL, ref)


@pytest.mark.parametrize("ref", ["term-2026", "v0.1.0", "release/2026-spring", "main",
                                 "0123456789abcdef0123456789abcdef01234567", "v1+local_1"])
def test_ordinary_refs_are_accepted(ref):
    source = maintenance.setup_cell_source(URL, ref)
    assert f'"rnnlab @ git+{URL}@{ref}"' in source
    assert maintenance.pinned_ref(source) == ref


def test_notebooks_that_disagree_stop_sync_setup_and_fail_check(tmp_path, capsys):
    root = _book(tmp_path, ("term-2026", None))
    before = _cells(root)
    assert book_cli.main(["sync-setup", "--root", str(root)]) == 2
    err = capsys.readouterr().err
    assert "@term-2026: book/a.ipynb" in err and "no pin: book/b.ipynb" in err
    assert "--ref REF" in err and "--unpin" in err
    assert _cells(root) == before                              # nothing written
    problems = maintenance.check(root)
    assert len(problems) == 1 and "pin different versions" in problems[0]
    assert book_cli.main(["sync-setup", "--root", str(root), "--ref", "term-2026"]) == 0
    assert maintenance.check(root) == []


def test_check_still_flags_a_pinned_cell_that_differs_from_the_template(tmp_path):
    root = _book(tmp_path, ("term-2026", "term-2026"))
    path = root / "book" / "b.ipynb"
    _write_cell(path, maintenance.setup_cell_source(URL, "term-2026") + "\nprint('extra')")
    assert maintenance.check(root) == ["book/b.ipynb: first code cell is not the setup cell "
                                       "(run python -m rnnlab.book sync-setup)"]
    bad = maintenance.setup_cell_source(URL, "term-2026").replace("@term-2026", "@bad..ref")
    _write_cell(path, bad)
    problems = maintenance.check(root)
    assert any("book/b.ipynb: its setup cell pins 'bad..ref'" in p for p in problems), problems


def test_pinned_ref_reads_the_ref_as_pip_does():
    assert maintenance.pinned_ref(maintenance.setup_cell_source(URL)) is None
    ssh = "ssh://git@github.com/owner/rnnlab"            # the @ of the user is not a ref
    assert maintenance.pinned_ref(maintenance.setup_cell_source(ssh)) is None
    assert maintenance.pinned_ref(maintenance.setup_cell_source(ssh, "v2")) == "v2"
    assert maintenance.pinned_ref("# rnnlab setup\nimport rnnlab") is None


def test_the_pin_reaches_both_editions():
    """The editions copy the chapter's first cell: a pinned chapter gives pinned editions."""
    from rnnlab.book import editions
    from rnnlab.book.myst import BookIndex

    rel = "scans/00_dynamical_systems.ipynb"
    nb = json.loads((ROOT / "book" / rel).read_text())
    cell = next(c for c in nb["cells"] if c["cell_type"] == "code")
    url = maintenance.repository_url(ROOT)
    cell["source"] = maintenance.setup_cell_source(url, "term-2026").splitlines(keepends=True)
    index = BookIndex(ROOT)
    full = editions.full_edition(nb, rel, index)
    student, _ = editions.student_edition(nb, rel, index)
    for edition in (full, student):
        first = next(c for c in edition["cells"] if c["cell_type"] == "code")
        assert maintenance.pinned_ref("".join(first["source"])) == "term-2026"
