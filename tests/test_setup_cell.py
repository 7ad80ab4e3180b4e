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
