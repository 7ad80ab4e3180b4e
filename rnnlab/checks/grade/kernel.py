"""The kernel side of grading: run one submitted notebook and export its exercise functions.

:func:`prepare` builds the notebook to execute (the offline guard, the
student's cells without their install lines, and last the export cell);
:func:`run` executes it in a worker subprocess (:mod:`.worker`, with nbclient,
in a fresh kernel, in an empty folder, killed with its kernel at the notebook
time limit) and returns what happened: the worker's events (cells started and
ended, errors, a dead kernel) and the export folder's files. The export cell
saves each exercise's function *by value* with cloudpickle (its code, closure
and the globals it uses) as ``<label>.pkl``, or why it could not as
``<label>.why``. Nothing printed or computed in the kernel is a verdict: the
judge (:mod:`rnnlab.checks.grade.judge`) runs the exported functions in
processes of their own and decides.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import sandbox, worker
from ..student import CHECK_CALL as CHECKS
from .candidate import GUARD, OFFLINE_ENV

PRELUDE_TAG, EXPORT_TAG = "rnnlab-grade-prelude", "rnnlab-grade-export"
INSTALL = re.compile(r"^(?P<indent>[ \t]*)(?:[!%][ \t]*(?:pip3?|conda|mamba|micromamba|uv)\b"
                     r"|(?:python3?[ \t]+-m[ \t]+)?pip3?[ \t]+install\b"
                     r"|![ \t]*python3?[ \t]+-m[ \t]+pip\b)")
DEFINES = re.compile(r"^[ \t]*def[ \t]+(\w+)[ \t]*\(", re.M)
OUT_OF_MEMORY = re.compile(r"^MemoryError\b|can't allocate memory|std::bad_alloc|Cannot allocate memory|"
                           r"out of memory", re.I)
MAX_EXPORT = 256 << 20                  # bytes of one exported function read back

PRELUDE = "# rnnlab grade: the network is off while grading\n" + GUARD

# Appended after the student's last cell (with the call). Whatever the student's
# cells did to this kernel, the worst it can do is export something else.
EXPORT = """\
# rnnlab grade: export each exercise's function, by value, for the judge
def _rnnlab_grade_export(exercises, folder):
    import os
    names = globals()
    try:
        import cloudpickle
    except BaseException as exc:
        cloudpickle, failure = None, f"cloudpickle could not be imported ({type(exc).__name__}: {exc})"
    for label, name in exercises:
        if name not in names:
            continue
        try:
            if cloudpickle is None:
                raise RuntimeError(failure)
            data = cloudpickle.dumps(names[name])
        except BaseException as exc:
            with open(os.path.join(folder, label + ".why"), "w") as f:
                f.write(f"{type(exc).__name__}: {exc}"[:500])
            continue
        with open(os.path.join(folder, label + ".pkl"), "wb") as f:
            f.write(data)
    open(os.path.join(folder, ".done"), "w").close()"""


def strip_installs(source):
    """Every install line (``%pip``, ``!pip``, ``pip install``, conda, uv) made a no-op comment."""
    out, indent = [], None                 # indent: of the install line that a "\" continues
    for line in source.split("\n"):
        m = INSTALL.match(line)
        if m or indent is not None:
            indent = m.group("indent") if m else indent
            out.append(f"{indent}pass  # rnnlab grade skipped: {line.strip()}")
            indent = indent if line.rstrip().endswith("\\") else None
        else:
            out.append(line)
    return "\n".join(out)


def _code(source, tag=None):
    return {"cell_type": "code", "execution_count": None, "metadata": {"tags": [tag]} if tag else {},
            "outputs": [], "source": source}


def prepare(cells, exercises, folder):
    """The notebook to execute: the offline prelude, the student's cells (no
    install lines; cell ``i`` of the submission stays cell ``i``), the export cell
    (writing into ``folder``)."""
    body = [_code(strip_installs(c["source"])) if c["cell_type"] == "code"
            else {"cell_type": c["cell_type"], "metadata": {}, "source": c["source"]} for c in cells]
    call = f"_rnnlab_grade_export({[(ex.label, ex.name) for ex in exercises]!r}, {str(folder)!r})"
    return {"nbformat": 4, "nbformat_minor": 4, "metadata": {"kernelspec": {"name": "python3", "language": "python",
            "display_name": "Python 3"}}, "cells": [_code(PRELUDE, PRELUDE_TAG), *body,
                                                    _code(f"{EXPORT}\n{call}\ndel _rnnlab_grade_export", EXPORT_TAG)]}


def isolation():
    """The command prefix that runs a process in its own network namespace (``unshare -rn``), or []."""
    try:
        ok = bool(shutil.which("unshare")) and subprocess.run(
            ["unshare", "-rn", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    return ["unshare", "-rn"] if ok else []


WARM = """\
import copy, importlib, json, sys
labels, modules = json.loads(sys.argv[1]), json.loads(sys.argv[2])
import rnnlab.checks as checks
for module in modules:
    importlib.import_module(module)
for label in labels:                       # each reference on its public cases: numba compiles what they use
    try:
        ex = checks.get(label)
        for case in ex.cases():
            ex.reference(*copy.deepcopy(case.args), **copy.deepcopy(case.kwargs))
    except Exception:
        pass
"""


def numba_seed(exercises, opts, imports=()):
    """A numba cache compiled by the grader itself for this run, before any student code runs:
    a fresh folder (``<folder>/numba``) filled by a process of the grader's own (in a sandbox
    unless ``opts.sandbox`` is off) that computes every exercise's reference on its public cases.
    No student process ever writes it: each kernel and candidate gets a private copy
    (:func:`rnnlab.checks.grade.sandbox.seed_numba_cache`), discarded with its job folder, so a
    file one notebook plants in its cache reaches neither another student nor a later run (and
    the teacher's own cache, which an ``--unsafe`` run or a notebook of one's own could have
    written, is never read). Returns ``(folder, seconds)``; the caller removes ``folder``."""
    began = time.perf_counter()
    job = Path(tempfile.mkdtemp(prefix="rnnlab-numba-"))
    for name in ("work", "tmp", "home", "numba"):
        (job / name).mkdir()
    argv = [sys.executable, "-c", WARM, json.dumps([ex.label for ex in exercises]), json.dumps(list(imports))]
    threads = max(1, os.cpu_count() or 1)
    if getattr(opts, "sandbox", False):
        command = sandbox.command(argv, job, sandbox.environment(threads=threads))
        env, cwd = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, job
    else:
        command, cwd = [*opts.prefix, *argv], job / "work"
        env = environment(job / "tmp", 1, numba=job / "numba")
    proc = sandbox.popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        proc.wait(timeout=max(60.0, float(getattr(opts, "timeout", 300))))
    except subprocess.TimeoutExpired:
        pass
    sandbox.kill_tree(proc)
    return job, time.perf_counter() - began


def environment(tmp, jobs, numba=None):
    """The environment of a kernel or a candidate's process without a sandbox (``--unsafe``):
    offline, its own TMPDIR, its share of threads, its own numba cache folder ``numba``."""
    env = {**os.environ, **OFFLINE_ENV, "TMPDIR": str(tmp), "JUPYTER_RUNTIME_DIR": str(tmp),
           "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // jobs)))}
    if numba is not None:
        env["NUMBA_CACHE_DIR"] = str(numba)
    return env


def kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


NBRUN = Path(__file__).resolve().parents[2] / "book" / "nbrun.py"
MAX_LOG = 4 << 20                       # bytes of the worker's log read back


def _read_exports(tmp, exercises):
    """The export folder's files, read as files a student process wrote: regular files only,
    no symlink followed (the folder itself included), size-capped."""
    exports = {}
    try:
        top = sandbox.open_dir(tmp)
        try:
            folder = sandbox.open_dir("export", dir_fd=top)
        finally:
            os.close(top)
    except OSError:
        return exports
    try:
        for ex in exercises:
            for suffix in ("pkl", "why"):
                if ex.label in exports:
                    continue
                try:
                    data = sandbox.read_regular(f"{ex.label}.{suffix}", MAX_EXPORT, dir_fd=folder)
                except ValueError:
                    exports[ex.label] = ("why", f"its export is larger than {MAX_EXPORT >> 20} MB")
                    continue
                except OSError:
                    continue
                exports[ex.label] = (suffix, data if suffix == "pkl" else data[:500].decode("utf-8", "replace"))
        try:
            done = sandbox.read_regular(".done", 0, dir_fd=folder) == b""
        except (OSError, ValueError):
            done = False
    finally:
        os.close(folder)
    return exports if done else None


def _read_log(path):
    """The worker's events; a log that is not a regular file (the notebook replaced it with a
    FIFO or a link) or is too large is not read, and says so."""
    try:
        text = sandbox.read_regular(path, MAX_LOG).decode("utf-8", "replace")
    except sandbox.NotRegular:
        return [{"failed": "the notebook replaced the grader's log (with a FIFO or a link): its cells' "
                           "errors are not reported"}]
    except ValueError:
        return [{"failed": f"the grader's log grew past {MAX_LOG >> 20} MB: its cells' errors are not reported"}]
    except OSError:
        return []
    events = []
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            continue
        events += [event] if isinstance(event, dict) else []
    return events


def run(cells, exercises, opts):
    """Execute one notebook in a worker subprocess (killed with its kernel after
    ``opts.timeout`` s); return ``{"events", "timed_out", "exported", "exports", "seconds"}``:
    ``exports`` maps a label to ``("pkl", bytes)`` or ``("why", text)``; ``exported``
    says whether the export cell finished.

    With ``opts.sandbox`` (the default of ``python -m rnnlab grade``) the worker, the
    kernel and all they start run in a bubblewrap sandbox of their own
    (:mod:`.sandbox`) whose only writable folder is this notebook's job folder;
    the sandbox (its whole PID namespace) is killed when the notebook ends."""
    began = time.perf_counter()
    boxed = getattr(opts, "sandbox", False)
    tmp = Path(tempfile.mkdtemp(prefix="rnnlab-grade-"))
    proc = None
    try:
        for folder in ("work", "tmp", "export", "home"):  # work: the kernel's cwd (empty: the copy is not in it)
            (tmp / folder).mkdir()
        inside = Path(sandbox.JOB) if boxed else tmp
        nb = prepare(cells, exercises, inside / "export")
        (tmp / "notebook.ipynb").write_text(json.dumps(nb))
        argv = [*sandbox.script(worker), str(inside / "notebook.ipynb"),
                str(inside / "log.jsonl"), str(opts.cell_timeout), str(opts.cell_timeout + 60), EXPORT_TAG, str(NBRUN),
                str(getattr(opts, "kernel_memory", 0))]
        threads = getattr(opts, "threads", None) or max(1, (os.cpu_count() or 1) // max(1, opts.jobs))
        cache = sandbox.seed_numba_cache(getattr(opts, "numba_seed", None), tmp)     # a private copy
        if boxed:
            command = sandbox.command(argv, tmp, sandbox.environment({"JUPYTER_RUNTIME_DIR": f"{sandbox.JOB}/tmp"},
                                                                     threads))
            env, cwd = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, tmp
        else:
            command, env, cwd = [*opts.prefix, *argv], environment(tmp / "tmp", opts.jobs, cache), tmp / "work"
        with open(tmp / "stderr.txt", "wb") as err:
            proc = sandbox.popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
            try:
                proc.wait(timeout=opts.timeout)
            except subprocess.TimeoutExpired:
                pass
            timed_out = proc.returncode is None
            sandbox.kill_tree(proc)             # whatever the notebook left running, finished or not
        events = _read_log(tmp / "log.jsonl")
        if not timed_out and not any(k in e for e in events for k in ("finished", "dead", "failed")):
            try:
                tail = sandbox.read_regular(tmp / "stderr.txt", 1 << 20).decode("utf-8", "replace")
            except (OSError, ValueError):
                tail = ""
            tail = tail.strip().splitlines()[-1:]
            events.append({"failed": f"the grader's worker failed ({' '.join(tail)[:300] or proc.returncode})"})
        exports = None if timed_out else _read_exports(tmp, exercises)
        return {"events": events, "timed_out": timed_out, "exported": exports is not None,
                "exports": exports or {}, "seconds": time.perf_counter() - began}
    finally:
        if proc is not None and proc.poll() is None:
            sandbox.kill_tree(proc)
        shutil.rmtree(tmp, ignore_errors=True)


def first_line(source):
    line = next((ln.strip() for ln in source.splitlines() if ln.strip() and not ln.strip().startswith("#")), "")
    return line if len(line) <= 50 else line[:47] + "..."


def account(cells, exercises, execution, opts):
    """``(unexported, note or None, [cell errors])`` for one executed notebook:
    the records of the exercises the judge cannot grade because the notebook
    never reached its export cell (timeout, dead kernel, failed worker)."""
    events, timed_out = execution["events"], execution["timed_out"]
    ended = {e["end"] for e in events if "end" in e}

    def where(i):
        return ("while exporting the exercises" if i > len(cells) else "before the first cell" if i < 1
                else f"in cell {i} (`{first_line(cells[i - 1]['source'])}`)")

    memory = getattr(opts, "kernel_memory", 0)

    def said(error):
        if error.startswith("KeyboardInterrupt"):
            return f"stopped after {opts.cell_timeout} s (the cell time limit)"
        if memory and OUT_OF_MEMORY.search(error):
            return (f"ran out of memory: it asked for more than the grader's limit of {memory} MB per notebook "
                    f"(raised {error})")
        return f"raised {error}"

    errors = [f"{where(e['end'])[3:]} {said(e['error'])}" for e in events if e.get("error") and 1 <= e["end"] <= len(cells)]
    last = max([e["start"] for e in events if "start" in e], default=0)
    note = (f"stopped after {opts.timeout:g} s (the notebook time limit) {where(last)}" if timed_out
            else f"the kernel died {where(last)}" + (f" (out of memory? the limit is {memory} MB per notebook)"
                                                     if memory else "") if any("dead" in e for e in events)
            else next((e["failed"] for e in events if "failed" in e), None))
    if not note and not execution["exported"]:
        note = "the export cell did not finish (does the notebook stop the kernel or replace open()?)"
    unexported = {}
    for ex in exercises if not execution["exported"] else []:
        if timed_out:
            reached = any(i in ended and (ex.name in DEFINES.findall(c["source"]) or
                                          ex.label in CHECKS.findall(c["source"])) for i, c in enumerate(cells, 1))
            unexported[ex.label] = {"label": ex.label, "status": "timeout", "message": (
                f"{ex.label}: not graded: the notebook did not finish within {opts.timeout:g} s; "
                + ("its cells for this exercise had run" if reached else "this exercise was not reached"))}
        else:
            unexported[ex.label] = {"label": ex.label, "status": "error", "message": f"{ex.label}: not graded: {note}"}
    return unexported, note, errors
