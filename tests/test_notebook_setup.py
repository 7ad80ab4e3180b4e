"""The first cell's helper: device report, seeding, numba-cuda install on a GPU
runtime; and book_file, which finds the book's data files (downloads mocked)."""
import json
import pathlib
import sys
import urllib.error

import pytest
import torch

import rnnlab
from rnnlab import bookdata, notebook


def test_device_report_names_the_device():
    line = rnnlab.device_report()
    assert line.startswith(f"rnnlab {rnnlab.__version__}")
    assert ("device: cuda" in line) == torch.cuda.is_available()


def test_setup_notebook_seeds_and_returns_the_device(capsys):
    dev = rnnlab.setup_notebook(seed=3)
    first = torch.rand(3)
    rnnlab.setup_notebook(seed=3)
    assert torch.equal(first, torch.rand(3))
    assert dev.type == ("cuda" if torch.cuda.is_available() else "cpu")
    assert "device:" in capsys.readouterr().out


def test_cuda_extra_matches_torch_cuda(monkeypatch):
    monkeypatch.setattr(torch.version, "cuda", None)
    assert notebook.cuda_extra_for_torch() is None
    monkeypatch.setattr(torch.version, "cuda", "12.4")
    assert notebook.cuda_extra_for_torch() == "cu12"
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    assert notebook.cuda_extra_for_torch() == "cu13"
    monkeypatch.setattr(torch.version, "cuda", "11.8")
    assert notebook.cuda_extra_for_torch() is None


def test_no_install_without_a_gpu():
    if not torch.cuda.is_available():
        assert notebook.ensure_numba_cuda() == "no GPU: the CPU kernels are used"


# ---------------------------------------------------------------- numba-cuda on a GPU runtime

class _Done:
    def __init__(self, returncode=0, stderr=""):
        self.returncode, self.stderr, self.stdout = returncode, stderr, ""


def _fake_gpu(monkeypatch, cuda="12.6"):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.version, "cuda", cuda)


def test_frozen_requirements_pin_what_is_loaded():
    pins = notebook.frozen_requirements()
    names = {p.split("==")[0] for p in pins}
    assert {"torch", "numpy"} <= names          # imported by this process
    assert all(p.count("==") == 1 for p in pins)
    assert f"torch=={torch.__version__}" in pins


def test_frozen_requirements_pin_only_loaded_and_cuda_libraries(monkeypatch):
    monkeypatch.setattr(notebook, "_loaded_top_level_names", lambda: {"numpy"})
    names = {p.split("==")[0] for p in notebook.frozen_requirements()}
    assert "numpy" in names and "torch" not in names
    assert all(n == "numpy" or n.startswith("nvidia-") for n in names)


def test_numba_cuda_install_pins_loaded_packages(monkeypatch):
    """The pip command: numba-cuda[cuXY]>=MIN with a constraints file of the loaded packages."""
    _fake_gpu(monkeypatch, "12.6")
    monkeypatch.setattr(notebook, "_installed_version", lambda dist: None)
    monkeypatch.setattr(notebook, "_numba_cuda_imported", lambda: False)
    monkeypatch.setattr(notebook, "_redirect_numba_cuda", lambda: None)
    calls = []

    def run(cmd, **kwargs):
        constraints = cmd[cmd.index("-c") + 1]
        with open(constraints) as f:
            calls.append((cmd, f.read().split()))
        return _Done(0)

    monkeypatch.setattr(notebook.subprocess, "run", run)
    msg = notebook.ensure_numba_cuda()
    (cmd, pins), = calls
    assert cmd[:3] == [sys.executable, "-m", "pip"] and "install" in cmd
    assert cmd[-1] == f"numba-cuda[cu12]>={notebook.MIN_NUMBA_CUDA}"
    assert cmd[cmd.index("--upgrade-strategy") + 1] == "only-if-needed"
    assert "--no-deps" not in cmd
    assert f"torch=={torch.__version__}" in pins and any(p.startswith("numpy==") for p in pins)
    assert msg.startswith("installed numba-cuda") and "12.6" in msg
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    calls.clear()
    notebook.ensure_numba_cuda()
    assert calls[0][0][-1].startswith("numba-cuda[cu13]")


def test_numba_cuda_install_failure_is_reported_not_raised(monkeypatch):
    _fake_gpu(monkeypatch)
    monkeypatch.setattr(notebook, "_installed_version", lambda dist: "0.2.0")   # Colab's old one
    monkeypatch.setattr(notebook, "_numba_cuda_imported", lambda: False)
    monkeypatch.setattr(notebook.subprocess, "run",
                        lambda cmd, **kw: _Done(1, "ERROR: ResolutionImpossible: cuda-bindings==12.6.0"))
    msg = notebook.ensure_numba_cuda()
    assert msg.startswith("could not install numba-cuda[cu12]") and "ResolutionImpossible" in msg
    assert "restart the runtime" in msg


def test_numba_cuda_recent_enough_is_kept(monkeypatch):
    _fake_gpu(monkeypatch)
    monkeypatch.setattr(notebook, "_installed_version", lambda dist: "0.30.4")
    monkeypatch.setattr(notebook, "_redirect_numba_cuda", lambda: None)
    monkeypatch.setattr(notebook.subprocess, "run", lambda *a, **k: pytest.fail("pip must not run"))
    assert notebook.ensure_numba_cuda() == "numba-cuda 0.30.4 already installed"


def test_numba_cuda_already_imported_is_not_replaced(monkeypatch):
    _fake_gpu(monkeypatch)
    monkeypatch.setattr(notebook, "_installed_version", lambda dist: "0.2.0")
    monkeypatch.setattr(notebook, "_numba_cuda_imported", lambda: True)
    monkeypatch.setattr(notebook.subprocess, "run", lambda *a, **k: pytest.fail("pip must not run"))
    msg = notebook.ensure_numba_cuda()
    assert "already imported" in msg and "restart the runtime" in msg


def test_version_tuple():
    assert notebook._version_tuple("0.20.1") == (0, 20, 1)
    assert notebook._version_tuple("0.0.17.1") < notebook._version_tuple(notebook.MIN_NUMBA_CUDA)
    assert notebook._version_tuple("0.30.4") >= notebook._version_tuple("0.20")
    assert notebook._version_tuple("1.0rc1") == (1, 0)


# ---------------------------------------------------------------- book_file

REPO = pathlib.Path(__file__).resolve().parents[1]
COMMIT = "0123456789abcdef0123456789abcdef01234567"
GIT_RECORD = {"url": "https://github.com/someone/rnnlab-fork.git",
              "vcs_info": {"vcs": "git", "commit_id": COMMIT, "requested_revision": "main"}}


@pytest.fixture
def outside(tmp_path, monkeypatch):
    """Run from a folder outside any checkout, with an empty cache."""
    cwd = tmp_path / "content"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("RNNLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(bookdata, "_fetch", lambda url, timeout=60: pytest.fail(f"unexpected download {url}"))
    return tmp_path


def test_book_file_in_a_checkout(monkeypatch):
    monkeypatch.chdir(REPO / "book" / "lds")            # where nbval and jupyter-book run the notebook
    path = notebook.book_file("lds/data/bench-lds-cpu.json")
    assert isinstance(path, pathlib.Path)
    assert path == REPO / "book" / "lds" / "data" / "bench-lds-cpu.json" and path.is_file()
    monkeypatch.chdir(REPO)
    assert notebook.book_file(pathlib.PurePosixPath("lds/data/bench-lds-cpu.json")) == path
    with pytest.raises(FileNotFoundError, match="does not exist in this checkout"):
        notebook.book_file("lds/data/missing.json")


def test_book_file_rejects_paths_outside_the_book():
    for bad in ("/etc/passwd", "../README.md", "lds/../../x", "", "."):
        with pytest.raises(ValueError, match="relpath must be a path inside book/"):
            notebook.book_file(bad)
    with pytest.raises(TypeError):
        notebook.book_file(3)


def test_book_file_from_an_editable_install(outside, monkeypatch):
    monkeypatch.setattr(bookdata, "_direct_url", lambda: {"url": REPO.as_uri(), "dir_info": {"editable": True}})
    assert notebook.book_file("lds/data/bench-lds-cpu.json") == REPO / "book/lds/data/bench-lds-cpu.json"
    with pytest.raises(FileNotFoundError, match="installed from the folder"):
        notebook.book_file("lds/data/missing.json")


def test_book_file_downloads_once_at_the_installed_commit(outside, monkeypatch):
    monkeypatch.setattr(bookdata, "_direct_url", lambda: GIT_RECORD)
    urls = []

    def fetch(url, timeout=60):
        urls.append(url)
        return b'{"rows": []}'

    monkeypatch.setattr(bookdata, "_fetch", fetch)
    path = notebook.book_file("lds/data/bench-lds-cpu.json")
    assert urls == [f"https://raw.githubusercontent.com/someone/rnnlab-fork/{COMMIT}/book/lds/data/bench-lds-cpu.json"]
    assert path == outside / "cache" / "someone" / "rnnlab-fork" / COMMIT / "book/lds/data/bench-lds-cpu.json"
    assert json.loads(path.read_text()) == {"rows": []}
    assert notebook.book_file("lds/data/bench-lds-cpu.json") == path and len(urls) == 1   # cached
    assert not list(path.parent.glob(".*.part"))


def test_book_file_download_failure_names_the_file(outside, monkeypatch):
    monkeypatch.setattr(bookdata, "_direct_url", lambda: GIT_RECORD)

    def offline(url, timeout=60):
        raise urllib.error.URLError("Temporary failure in name resolution")

    monkeypatch.setattr(bookdata, "_fetch", offline)
    with pytest.raises(FileNotFoundError, match=r"could not download book/lds/data/x\.json from https://raw"):
        notebook.book_file("lds/data/x.json")
    assert not (outside / "cache").exists() or not any((outside / "cache").rglob("x.json"))


def test_book_file_without_checkout_or_git_install(outside, monkeypatch):
    monkeypatch.setattr(bookdata, "_direct_url", lambda: None)
    with pytest.raises(FileNotFoundError, match=r"cannot find book/lds/data/x\.json.*Clone the repository"):
        notebook.book_file("lds/data/x.json")
    monkeypatch.setattr(bookdata, "_direct_url", lambda: {"url": "https://gitlab.com/a/b.git",
                                                          "vcs_info": {"vcs": "git", "commit_id": COMMIT}})
    with pytest.raises(FileNotFoundError, match="installed from https://gitlab.com/a/b.git"):
        notebook.book_file("lds/data/x.json")


def test_github_repo_forms():
    assert notebook.github_repo("https://github.com/rnnlab/rnnlab") == ("rnnlab", "rnnlab")
    assert notebook.github_repo("https://github.com/rnnlab/rnnlab.git") == ("rnnlab", "rnnlab")
    assert notebook.github_repo("git+https://github.com/a/b.git@main") == ("a", "b")
    assert notebook.github_repo("git@github.com:a/b.git") == ("a", "b")
    assert notebook.github_repo("ssh://git@github.com/a/b") == ("a", "b")
    assert notebook.github_repo("https://gitlab.com/a/b") is None
    assert notebook.github_repo("") is None


def test_direct_url_of_this_install():
    """This test environment installs rnnlab with `pip install -e .`: the record names the checkout."""
    record = bookdata._direct_url()
    if record is None:
        pytest.skip("rnnlab is not installed with a direct_url.json here")
    if record["url"].startswith("file://"):
        assert record["url"] == REPO.as_uri()


def test_book_file_lives_in_a_light_module_that_the_package_imports():
    """rnnlab.bookdata holds book_file without torch or the notebook set-up; rnnlab.notebook re-exports it,
    and the control experts read their files through it, not through the notebook set-up module."""
    import ast
    import inspect

    import rnnlab.control.experts as experts

    def imported(module):
        tree = ast.parse(inspect.getsource(module))
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                names.add("." * node.level + (node.module or ""))
        return names

    assert notebook.book_file is bookdata.book_file
    assert not {"torch", "numpy", ".notebook"} & imported(bookdata)
    assert "..bookdata" in imported(experts) and "..notebook" not in imported(experts)
