"""The GPU check: every CUDA figure of rnnlab in one command, on the interpreter it finds.

Usage::

    python3 tools/gpu_check.py --out DIR              # on a machine with an NVIDIA GPU
    python3 tools/gpu_check.py --dry-run --out DIR    # anywhere: the same stages in numba's CUDA simulator

It installs nothing and needs only torch, numba, numba-cuda, numpy, scipy,
pytest, hypothesis, matplotlib and tqdm (what the GPU machines lent to this
project hold); ``rnnlab`` is imported from this repository (``PYTHONPATH``),
not from an install. Stages, each in a process of its own:

1. ``device``: ``python -m rnnlab.bench.device``: torch's and numba-cuda's
   versions, the device, and one tiny numba-cuda kernel launched on a torch
   tensor. Without a usable GPU (and without ``--dry-run``) the check stops
   here: ``no CUDA device: <why>`` on stderr, exit status 2, in seconds.
2. ``tests``: ``pytest tests/gpu``: every CUDA kernel against its torch
   reference on the device, forward and backward, and the models on CUDA
   against the CPU.
3. ``scan``, ``lds``, ``memory``, ``cells``: the GPU rows of the benchmarks
   (``python -m rnnlab.bench NAME --backends cuda`` or ``--devices cuda``,
   options in :func:`plan`): ``linear_scan`` against torch's own ops on the
   GPU, LDS and LDStack against cuDNN's LSTM up to T = 16384, the memories,
   the cells against cuDNN.

Sizes and minimum times are set so that the whole check fits in a few
minutes: on an H200 (2026-11-30) it took 329 s, ``tests`` 178 s of it with
numba-cuda's compilation, cached on disk for the later stages
(``book/lds/data/gpu-check-h200.md``); ``--budget`` (default 420 s) bounds it: each
stage gets a time limit from what is left, and a stage that would not fit is
skipped and reported, never silently dropped.

Written to DIR: ``gpu_check.json`` (everything: the device, every stage's
command, status and time, every test's outcome, every benchmark row, the
targets) and ``gpu_check.md`` (the same as Markdown tables), plus the stages'
logs (``logs/``) and the benchmarks' own JSON files. The Markdown is printed
at the end, the summary last. Exit status: 0 when every stage passed, 1 when
a stage failed or timed out, 2 when there is no CUDA device.

``--dry-run`` runs the same stages on the CPU with numba's CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1`` in the stages' environment, so set before numba
is imported) at tiny sizes, each stage with every package outside the GPU
machine's list hidden from ``import`` (``tools/minimal_env.py``); ``tests``
collects ``tests/gpu`` without running it (the simulator cannot afford its
sizes; ``make test-cudasim`` runs the kernels in the simulator). ``make
test`` runs the dry run (``tests/test_gpu_check.py``), so a broken import, a
renamed benchmark option or a bug in this file shows up there, not on the
day a GPU is lent. ``--minimal-env`` hides those packages without the
simulator (``tests/test_gpu_check.py`` checks that way that a machine without
a GPU gets ``no CUDA device`` in seconds). ``--only STAGE...`` reruns some
stages after a fix.

Through the ``device`` tool: one call, carrying nothing, command
``python3 tools/gpu_check.py --out $OUT``, timeout_s 480 (README, "On a GPU").

This file runs the stages; ``tools/gpu_check_report.py`` reads what they left
(the tests' outcomes, the benchmark tables, the targets) and writes the report.
"""
import argparse
import datetime
import json
import os
import pathlib
import shlex
import signal
import subprocess
import sys
import time

from gpu_check_report import (  # noqa: F401  (tools/ is sys.path[0] when this file runs; re-exported)
    HBM_GBPS,
    bench_markdown,
    check_targets,
    fmt_number,
    fmt_ratio,
    fmt_seconds,
    markdown_table,
    md_cell,
    nominal_bandwidth,
    render_markdown,
    short_summary,
    tests_result,
)

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOOLS = ROOT / "tools"

NO_DEVICE_STATUS = 2
STAGES = ("device", "tests", "scan", "lds", "memory", "cells")
BENCHMARKS = ("scan", "lds", "memory", "cells")

# Time limits (seconds) of each stage on a GPU: what it is expected to take, with margin. The check's
# budget (--budget) bounds their sum: a stage gets min(cap, what is left after the later stages' floors).
GPU_CAPS = {"device": 90, "tests": 210, "scan": 90, "lds": 75, "memory": 90, "cells": 60}
DRY_CAPS = {"device": 120, "tests": 120, "scan": 120, "lds": 120, "memory": 180, "cells": 120}
STAGE_FLOOR = 20          # seconds kept for each later stage
DEFAULT_BUDGET = {False: 420, True: 600}

# The targets on the GPU: the scan's (16, 4096, 1024) float32 forward at >= 50 % of the memory
# bandwidth; LDStack(4) ahead of cuDNN's LSTM from T = 1024. The dry run checks the same code on its sizes.
GPU_TARGET_SIZES = {"scan": dict(T=4096, B=16, C=1024), "lds_min_T": 1024}
DRY_TARGET_SIZES = {"scan": dict(T=16, B=2, C=4), "lds_min_T": 16}


def plan(dry_run):
    """``{stage: argv after the interpreter}`` of the benchmark stages (the GPU sizes, or the dry run's)."""
    if dry_run:
        return {
            "scan": ["scan", "--backends", "cuda", "--quick", "--T", "16", "--sizes", "2x4", "--dtypes", "float32",
                     "--min-time", "0", "--loop-max-T", "8", "--threads", "1"],
            "lds": ["lds", "--devices", "cuda", "--quick", "--T", "16", "--batch-size", "2", "--input-size", "2",
                    "--hidden-size", "4", "--output-size", "2", "--models", "lds", "ldstack2", "ldstack4", "lstm",
                    "rnn", "--min-time", "0", "--threads", "1"],
            # Two kinds each (every simulated launch costs about 0.1 s): the others run the same code.
            "memory": ["memory", "--backends", "cuda", "--quick", "--T", "2", "--batch-size", "1", "--value-size", "2",
                       "--kinds", "stack", "deque", "--no-loop", "--min-time", "0", "--threads", "1"],
            "cells": ["cells", "--backends", "cuda", "--quick", "--T", "2", "--batch-size", "1", "--input-size", "2",
                      "--hidden-size", "2", "--kinds", "lstm", "gru", "--min-time", "0", "--threads", "1"],
        }
    return {
        # 12 rows: T 1024 and 4096, B x C up to 16 x 1024 (the target's row), float32 and complex64; the
        # torch loop timed on its first 1024 steps (a Python loop of kernel launches: its rate is flat).
        "scan": ["scan", "--backends", "cuda", "--T", "1024", "4096", "--sizes", "4x64", "16x256", "16x1024",
                 "--dtypes", "float32", "complex64", "--min-time", "0.25", "--loop-max-T", "1024"],
        # LDS and LDStack against cuDNN's LSTM (and RNN) at the default sizes, T = 256 ... 16384; the
        # Python-loop RNN is left out (16384 steps of launches say nothing about the GPU).
        "lds": ["lds", "--devices", "cuda", "--T", "256", "1024", "4096", "16384",
                "--models", "lds", "ldstack2", "ldstack4", "lstm", "rnn", "--min-time", "0.5"],
        # The paper's sizes (T 128 and 256, B 10, m 256), all three memories and the training step; the
        # row-by-row loop is left out (about a minute per row, on the CPU already).
        "memory": ["memory", "--backends", "cuda", "--no-loop", "--min-time", "0.3"],
        # The four cells at the default sizes (B 32, I 256, H 64; T 64 and 1000) against cuDNN and the loop.
        "cells": ["cells", "--backends", "cuda", "--min-time", "0.3"],
    }


# ---------------------------------------------------------------- running a stage

def _environment(dry_run):
    env = dict(os.environ)
    paths = [str(ROOT), str(TOOLS)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"     # the same pytest here and there: no third-party plugins
    env["PYTHONUNBUFFERED"] = "1"
    if dry_run:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    return env


def _python(minimal_env):
    """The interpreter's command; with ``minimal_env`` through tools/minimal_env.py (only the GPU
    machine's packages importable)."""
    return [sys.executable] + (["tools/minimal_env.py"] if minimal_env else [])


def _minimal_env():
    """tools/minimal_env.py as a module."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("minimal_env", TOOLS / "minimal_env.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tail(path, lines=25):
    try:
        text = pathlib.Path(path).read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])


def run_stage(name, argv, log, timeout, env):
    """Run ``argv`` with its output in ``log``; return ``{status, returncode, seconds, timeout_s}``."""
    start = time.perf_counter()
    with open(log, "w") as out:
        out.write("$ " + shlex.join(argv) + "\n")
        out.flush()
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            returncode = proc.wait(timeout=timeout)
            status = "ok" if returncode == 0 else "failed"
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            returncode, status = None, "timeout"
            out.write(f"\n[gpu_check] stage {name} stopped after its time limit of {timeout:.0f} s\n")
    return {"status": status, "returncode": returncode, "seconds": round(time.perf_counter() - start, 2),
            "timeout_s": round(timeout, 1)}


def _read_json(path):
    try:
        return json.loads(pathlib.Path(path).read_text())
    except (OSError, ValueError):
        return None


def _read_jsonl(path):
    out = []
    try:
        lines = pathlib.Path(path).read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


# ---------------------------------------------------------------- the run

def _git_commit():
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=10)
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def _say(msg):
    print(f"[gpu_check] {msg}", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python3 tools/gpu_check.py", description=__doc__.split("\n\n")[0],
        epilog="Exit status 0: every stage passed; 1: a stage failed or timed out; 2: no CUDA device.")
    parser.add_argument("--out", required=True, metavar="DIR", help="where gpu_check.json, gpu_check.md and the "
                                                                    "logs go (created)")
    parser.add_argument("--dry-run", action="store_true",
                        help="the same stages on the CPU in numba's CUDA simulator at tiny sizes (no GPU needed)")
    parser.add_argument("--budget", type=float, metavar="S",
                        help=f"seconds for the whole check (default {DEFAULT_BUDGET[False]}, dry run "
                             f"{DEFAULT_BUDGET[True]}); stages that would not fit are skipped")
    parser.add_argument("--minimal-env", action="store_true",
                        help="run every stage with only the GPU machine's packages importable "
                             "(tools/minimal_env.py); --dry-run implies it")
    parser.add_argument("--only", nargs="+", choices=STAGES[1:], metavar="STAGE",
                        help="run only these stages after the device check (among tests, scan, lds, memory, cells)")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    dry = args.dry_run
    budget = args.budget if args.budget is not None else DEFAULT_BUDGET[dry]
    deadline = start + budget
    out = pathlib.Path(args.out).resolve()
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    env = _environment(dry)
    python = _python(dry or args.minimal_env)
    if dry or args.minimal_env:             # worked out once for every stage
        env["RNNLAB_MINIMAL_ENV_HIDDEN"] = _minimal_env().hidden_list()
    caps = DRY_CAPS if dry else GPU_CAPS
    benches = plan(dry)
    wanted = ("device",) + tuple(s for s in STAGES[1:] if args.only is None or s in args.only)
    doc = {"check": "rnnlab tools/gpu_check.py", "dry_run": dry, "status": None,
           "created": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
           "command": [sys.executable] + sys.argv, "commit": _git_commit(), "budget_s": budget, "total_s": None,
           "device": None, "stages": [], "tests": None, "benchmarks": {}, "tables": {}, "targets": [],
           "problems": []}
    _say(("DRY RUN (numba's CUDA simulator, tiny sizes): " if dry else "") + f"stages {', '.join(wanted)}; "
         f"budget {budget:.0f} s; results in {out}")

    def finish(status):
        doc["status"] = status
        doc["total_s"] = round(time.perf_counter() - start, 1)
        (out / "gpu_check.json").write_text(json.dumps(doc, indent=1, default=str) + "\n")
        md = render_markdown(doc)
        (out / "gpu_check.md").write_text(md + "\n")
        print(md, flush=True)
        print(short_summary(doc), flush=True)
        print(f"wrote {out / 'gpu_check.json'} and {out / 'gpu_check.md'}", flush=True)

    for i, name in enumerate(wanted):
        later = len(wanted) - i - 1
        timeout = min(caps[name], deadline - time.perf_counter() - STAGE_FLOOR * later)
        if name == "device":
            argv = python + ["-m", "rnnlab.bench.device", "--json", str(out / "device.json")]
        elif name == "tests":
            argv = python + ["-m", "pytest", "-p", "no:cacheprovider", "-p", "gpu_check_plugin", "tests/gpu",
                             "-q", "-rfE"] + (["--collect-only"] if dry else [])
        else:
            argv = python + ["-m", "rnnlab.bench"] + benches[name] + ["--json", str(out / f"bench-{name}.json")]
        stage = {"name": name, "command": shlex.join(["python3"] + argv[1:]),
                 "log": f"logs/{name}.log", "summary": None}
        doc["stages"].append(stage)
        if timeout < 10:
            stage.update(status="skipped", returncode=None, seconds=0.0, timeout_s=0.0,
                         summary=f"not run: {deadline - time.perf_counter():.0f} s left of the budget")
            _say(f"{name}: skipped ({stage['summary']})")
            continue
        _say(f"{name}: running (limit {timeout:.0f} s): {stage['command']}")
        result_file = out / {"device": "device.json", "tests": "tests-gpu.jsonl"}.get(name, f"bench-{name}.json")
        result_file.unlink(missing_ok=True)      # an earlier run's into the same DIR
        if name == "tests":
            env = dict(env, RNNLAB_GPU_CHECK_RESULTS=str(result_file))
        stage.update(run_stage(name, argv, logs / f"{name}.log", timeout, env))

        if name == "device":
            report = _read_json(out / "device.json")
            doc["device"] = report
            if report is None:
                problem = f"the device report did not run ({stage['status']}): {_tail(logs / 'device.log', 5)}"
            else:
                problem = report.get("problem")
            if report is not None:
                smoke = report.get("smoke_kernel") or {}
                stage["summary"] = (f"{report.get('device')}"
                                    + (f", sm_{report['capability'].replace('.', '')}" if report.get("capability")
                                       else "")
                                    + f"; torch {report.get('torch')}, numba-cuda {report.get('numba_cuda')}"
                                    + (f"; a numba-cuda kernel ran ({smoke['seconds']:.1f} s with compilation)"
                                       if smoke.get("ok") else ""))
            if dry:
                if report is None or not (report.get("smoke_kernel") or {}).get("ok"):
                    stage["status"] = "failed"
                    doc["problems"].append("device: the simulator's kernel did not run: "
                                           + str((report or {}).get("smoke_kernel") or _tail(logs / "device.log")))
            elif problem is not None:
                stage["status"] = "failed"
                stage["summary"] = f"no CUDA device: {problem}"
                print(f"no CUDA device: {problem}", file=sys.stderr, flush=True)
                finish("no_device")
                return NO_DEVICE_STATUS
        elif name == "tests":
            result = tests_result(_read_jsonl(out / "tests-gpu.jsonl"), dry)
            doc["tests"] = result
            stage["summary"] = result["summary"]
            if dry and stage["status"] == "ok" and not result["counts"].get("collected"):
                stage["status"] = "failed"
                doc["problems"].append("tests: nothing collected in tests/gpu")
        else:
            bench = _read_json(out / f"bench-{name}.json")
            if bench is None:
                if stage["status"] == "ok":
                    stage["status"] = "failed"
                doc["problems"].append(f"{name}: no JSON written ({stage['status']})")
            else:
                doc["benchmarks"][name] = bench
                cuda_rows = [r for r in bench.get("rows", []) if r.get("device") == "cuda"]
                errors = sorted({f"{m}: {e}" for r in cuda_rows for m, e in (r.get("errors") or {}).items()})
                verdicts = ", ".join(f"{n} {k}" for k, n in sorted((bench.get("summary") or {}).items()))
                stage["summary"] = f"cuda rows: {len(cuda_rows)}" + (f"; its own targets: {verdicts}"
                                                                     if verdicts else "")
                if errors:
                    stage["status"] = "failed"
                    doc["problems"].extend(f"{name}: {e}" for e in errors)
                doc["tables"][name] = bench_markdown(name, bench, doc["problems"])
        if stage["status"] != "ok":
            tail = _tail(logs / f"{name}.log")
            stage["log_tail"] = tail
            _say(f"{name}: {stage['status'].upper()} after {stage['seconds']:.1f} s; the end of its log:\n{tail}")
        else:
            _say(f"{name}: ok in {stage['seconds']:.1f} s: {stage['summary']}")

    doc["targets"] = check_targets(doc["benchmarks"], doc["device"] or {},
                                   DRY_TARGET_SIZES if dry else GPU_TARGET_SIZES)
    doc["problems"] = list(dict.fromkeys(doc["problems"]))
    ok = all(s["status"] == "ok" for s in doc["stages"]) and not doc["problems"]
    finish("ok" if ok else "failed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
