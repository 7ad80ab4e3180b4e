"""``tools/gpu_check.py``, the one command a session lent a GPU runs, tested without a GPU.

- the package, the kernels, the models, the benchmarks and ``tests/gpu`` import with only the GPU
  machine's packages (``tools/minimal_env.py`` hides every other installed distribution);
- the dry run (``--dry-run``: every stage in numba's CUDA simulator at tiny sizes, with only those
  packages) passes and writes the JSON and the Markdown;
- without a GPU (and without ``--dry-run``) it says ``no CUDA device`` at once, exit status 2;
- the GPU plan's benchmark options parse, and the pieces (tables, targets) behave.
"""
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOOLS = ROOT / "tools"


def _load(name):
    """``tools/NAME.py`` as a module, with ``tools/`` importable while it loads (as when it runs as a script)."""
    spec = importlib.util.spec_from_file_location(f"_tools_{name}", TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(TOOLS))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(TOOLS))
    return module


gpu_check = _load("gpu_check")
report = _load("gpu_check_report")


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


IMPORTS = r"""
import importlib, json, pkgutil, sys
sys.path.insert(0, "tests/gpu")
names = ["rnnlab", "rnnlab.bench.__main__", "rnnlab.bench.device", "rnnlab.bench.timing"]
for pkg in ("rnnlab.kernels", "rnnlab.models", "rnnlab.bench"):
    names += [pkg] + [m.name for m in pkgutil.iter_modules(importlib.import_module(pkg).__path__, pkg + ".")]
names += ["conftest", "gpu_helpers", "test_scan_gpu", "test_stack_scan_gpu", "test_memory_gpu", "test_cells_gpu",
          "test_models_gpu"]
for name in names:
    importlib.import_module(name)
from rnnlab.bench.__main__ import build_parser
build_parser()                                   # imports every benchmark module
hidden = set(__import__("minimal_env").blocked_modules())
try:
    import cvxpy
    hid = False
except ModuleNotFoundError:
    hid = True
print(json.dumps({"imported": len(names), "loaded_hidden": sorted(hidden & set(sys.modules)),
                  "cvxpy_hidden": hid, "cvxpy_spec": importlib.util.find_spec("cvxpy") is None}))
"""


def test_minimal_environment_imports():
    """rnnlab, its kernels (CUDA ones included, numba's real CUDA target), models, benchmarks and
    tests/gpu import with nothing but torch, numba, numba-cuda, numpy, scipy, pytest, hypothesis,
    matplotlib, tqdm and their requirements."""
    out = subprocess.run([sys.executable, str(TOOLS / "minimal_env.py"), "-c", IMPORTS], cwd=ROOT,
                         env=_env(PYTHONPATH=os.pathsep.join([str(ROOT), str(TOOLS)])),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["imported"] > 30
    assert result["loaded_hidden"] == []
    if importlib.util.find_spec("cvxpy") is not None:      # installed here: the finder must hide it
        assert result["cvxpy_hidden"] and result["cvxpy_spec"]


def test_minimal_env_allows_the_gpu_packages_and_hides_the_rest():
    minimal_env = _load("minimal_env")
    allowed = minimal_env.allowed_distributions()
    assert {"torch", "numba", "numpy", "pytest"} <= allowed
    hidden = minimal_env.blocked_modules()
    assert not hidden & {"torch", "numba", "numpy", "scipy", "matplotlib", "pytest", "tqdm", "rnnlab", "os"}
    for present in ("cvxpy", "ipywidgets", "sklearn", "yaml", "nbformat"):
        if importlib.util.find_spec(present) is not None:
            assert present in hidden, present


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu-check-dry")
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "tools/gpu_check.py", "--dry-run", "--out", str(out)], cwd=ROOT,
                          env=_env(), capture_output=True, text=True, timeout=600)
    return proc, out, time.perf_counter() - start


def test_dry_run_passes(dry_run):
    proc, out, seconds = dry_run
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    doc = json.loads((out / "gpu_check.json").read_text())
    assert doc["dry_run"] is True and doc["status"] == "ok" and doc["problems"] == []
    assert [s["name"] for s in doc["stages"]] == list(gpu_check.STAGES)
    assert all(s["status"] == "ok" for s in doc["stages"]), doc["stages"]
    assert doc["device"]["simulator"] and doc["device"]["smoke_kernel"]["ok"]
    assert doc["tests"]["counts"].get("collected", 0) > 100 and not doc["tests"]["failures"]
    for name in gpu_check.BENCHMARKS:
        rows = [r for r in doc["benchmarks"][name]["rows"] if r["device"] == "cuda"]
        assert rows and all(r.get("simulator") for r in rows), name
    assert [t["name"] for t in doc["targets"]] == ["scan_bandwidth", "ldstack4_vs_lstm"]
    assert all(t["status"] in ("PASS", "MISS", "N/A") for t in doc["targets"])
    assert "gpu_check: ok" in proc.stdout


def test_dry_run_markdown(dry_run):
    proc, out, _ = dry_run
    md = (out / "gpu_check.md").read_text()
    assert md.startswith("# rnnlab GPU check: DRY RUN")
    for name in gpu_check.STAGES:
        assert f"| {name} | ok |" in md
    for name in gpu_check.BENCHMARKS:
        assert f"\n## {name}\n" in md
    assert "| ? |" not in md and " ? |" not in md          # no column lost its key
    tables = [line for line in md.splitlines() if line.startswith("|")]
    assert len(tables) > 20


def test_without_gpu_it_says_no_cuda_device_at_once(tmp_path):
    """No GPU (CUDA_VISIBLE_DEVICES hides any) and no --dry-run: exit status 2, 'no CUDA device: <why>'
    on stderr, within 30 s, with only the GPU machine's packages importable; the JSON says so too."""
    import resource

    def cpu():
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    start, cpu0 = time.perf_counter(), cpu()
    proc = subprocess.run([sys.executable, "tools/gpu_check.py", "--minimal-env", "--out", str(tmp_path)],
                          cwd=ROOT, env=_env(CUDA_VISIBLE_DEVICES=""), capture_output=True, text=True, timeout=120)
    seconds, cpu_seconds = time.perf_counter() - start, cpu() - cpu0
    assert proc.returncode == gpu_check.NO_DEVICE_STATUS, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "no CUDA device: " in proc.stderr
    # Under 30 s; on a machine shared past its CPUs (1-min load above their count) the wall clock says
    # little, so the CPU time the check used must then be under 30 s and the wall clock under 120 s.
    busy = os.getloadavg()[0] > (os.cpu_count() or 1)
    assert cpu_seconds < 30 and seconds < (120 if busy else 30), f"took {seconds:.0f} s ({cpu_seconds:.0f} s CPU)"
    doc = json.loads((tmp_path / "gpu_check.json").read_text())
    assert doc["status"] == "no_device" and [s["name"] for s in doc["stages"]] == ["device"]


def test_the_gpu_plan_parses_and_measures_the_targets():
    from rnnlab.bench.__main__ import build_parser

    parser = build_parser()
    for dry in (False, True):
        for name, argv in gpu_check.plan(dry).items():
            args = parser.parse_args(argv + ["--no-json"])
            assert args.benchmark == name
            assert (args.backends if name != "lds" else args.devices) == ["cuda"]
    scan = parser.parse_args(gpu_check.plan(False)["scan"])
    want = gpu_check.GPU_TARGET_SIZES["scan"]
    assert want["T"] in scan.T and (want["B"], want["C"]) in scan.sizes and "float32" in scan.dtypes
    lds = parser.parse_args(gpu_check.plan(False)["lds"])
    assert max(lds.T) == 16384 and min(lds.T) <= 256 and "ldstack4" in lds.models and "lstm" in lds.models


def test_markdown_table_reports_missing_keys():
    problems = []
    table = gpu_check.markdown_table([{"T": 4, "fwd_s": 1e-3}], [("T", "T", str), ("fwd", "fwd_s", gpu_check.fmt_seconds),
                                                                 ("floor", "floor_s", gpu_check.fmt_seconds)],
                                     problems, "scan")
    assert "| 4 | 1 ms | ? |" in table
    assert problems == ["scan: rows lack the key(s) floor_s (column 'floor')"]


def test_targets():
    assert gpu_check.nominal_bandwidth("NVIDIA H100 80GB HBM3") == 3350
    assert gpu_check.nominal_bandwidth("NVIDIA H100 PCIe") == 2000
    assert gpu_check.nominal_bandwidth("NVIDIA GH200 480GB") == 4000
    assert gpu_check.nominal_bandwidth("NVIDIA H200") == 4800
    assert gpu_check.nominal_bandwidth("numba CUDA simulator (CPU)") is None
    sizes = gpu_check.GPU_TARGET_SIZES
    scan = {"rows": [{"backend": "cuda", "device": "cuda", "dtype": "float32", "a": "BTC", "T": 4096, "B": 16,
                      "C": 1024, "fwd_GBps": 2000.0, "floor_GBps": 2800.0}]}
    lds = {"rows": [{"device": "cuda", "T": 256, "speedup_ldstack4": 0.5, "lstm_impl": "cudnn"},
                    {"device": "cuda", "T": 1024, "speedup_ldstack4": 1.5, "lstm_impl": "cudnn"},
                    {"device": "cuda", "T": 4096, "speedup_ldstack4": 3.0, "lstm_impl": "cudnn"}]}
    got = gpu_check.check_targets({"scan": scan, "lds": lds}, {"device": "NVIDIA H100 80GB HBM3"}, sizes)
    assert [t["status"] for t in got] == ["PASS", "PASS"]
    assert abs(got[0]["value"] - 2000 / 3350) < 1e-9 and got[1]["value"] == 1.5
    lds["rows"][1]["speedup_ldstack4"] = 0.9
    scan["rows"][0]["fwd_GBps"] = 1000.0
    got = gpu_check.check_targets({"scan": scan, "lds": lds}, {"device": "NVIDIA H100 80GB HBM3"}, sizes)
    assert [t["status"] for t in got] == ["MISS", "MISS"]
    got = gpu_check.check_targets({}, {}, sizes)
    assert [t["status"] for t in got] == ["N/A", "N/A"]


def test_tests_result_counts_and_failures():
    records = [{"nodeid": "a", "outcome": "passed", "when": "call", "duration": 0.5, "message": None},
               {"nodeid": "b", "outcome": "failed", "when": "call", "duration": 2.0, "message": "AssertionError: x"},
               {"nodeid": "c", "outcome": "error", "when": "setup", "duration": 0.0, "message": "no CUDA device"},
               {"exitstatus": 1}]
    result = gpu_check.tests_result(records, dry_run=False)
    assert result["counts"] == {"passed": 1, "failed": 1, "error": 1} and result["exitstatus"] == 1
    assert [f["nodeid"] for f in result["failures"]] == ["b", "c"]
    assert result["slowest"][0] == {"nodeid": "b", "seconds": 2.0}


def test_bench_device_helpers(monkeypatch):
    from rnnlab.bench import device

    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    assert device.simulator() and device.cuda_runs_here() and device.tensor_device("cuda") == "cpu"
    assert device.cuda_problem().startswith("NUMBA_ENABLE_CUDASIM is set")
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM")
    assert not device.simulator() and device.tensor_device("cpu") == "cpu"
    import torch

    if not torch.cuda.is_available():
        assert device.tensor_device("cuda") == "cuda" and device.cuda_problem()


def test_compile_time_tool_lists_every_kernel_signature():
    compile_time = _load("compile_time")
    listed = compile_time.signatures()
    assert len(listed) == 36 and {m for m, _, _ in listed} == set(compile_time.MODULES)


def test_skipped_scan_rows_are_listed_not_tabulated():
    problems = []
    row = {"device": "cuda", "backend": "cuda", "dtype": "float32", "a": "BTC", "T": 4, "B": 1, "C": 2}
    keys = [c[1] for c in report._scan_columns()]
    full = dict(row, **{k: 1.0 for key in keys for k in (key if isinstance(key, tuple) else (key,)) if k not in row})
    skipped = dict(row, T=8, skipped="needs about 9 GB, 1 GB available")
    text = gpu_check.bench_markdown("scan", {"rows": [full, skipped]}, problems)
    assert problems == [] and "Not measured: float32 T=8 1x2: needs about 9 GB" in text
    assert len([line for line in text.splitlines() if line.startswith("| float32")]) == 1


def test_numpy_gets_row_stack_back_for_numba_cuda(monkeypatch):
    """numba-cuda 0.30.4 registers an overload of ``np.row_stack`` when its CUDA target starts;
    NumPy 2.5 removed the alias, and on an H200 with numpy 2.5.2 no kernel compiled until
    rnnlab restored it (NVIDIA/numba-cuda#907)."""
    import numpy as np

    from rnnlab.kernels._backend import numba_cuda, numpy_compat_for_numba_cuda

    monkeypatch.delattr(np, "row_stack", raising=False)
    numpy_compat_for_numba_cuda()
    assert np.row_stack is np.vstack
    numpy_compat_for_numba_cuda()                      # idempotent
    assert np.row_stack is np.vstack
    monkeypatch.delattr(np, "row_stack")
    import rnnlab.kernels._backend as backend
    monkeypatch.setattr(backend, "_cuda", None)
    monkeypatch.setattr(backend, "_cuda_error", None)
    numba_cuda()                                       # the first use restores it too
    assert np.row_stack is np.vstack
