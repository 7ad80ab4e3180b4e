"""Grade a folder of submitted notebooks: ``python -m rnnlab grade SUBMISSIONS/`` (see
:data:`DESCRIPTION`). Per notebook: :func:`identify`, :func:`prepare` (prelude
cell, install lines stripped, checking cell appended), :func:`run` (a worker
subprocess running :func:`worker`, killed with its kernel at the notebook time
limit), :func:`outcome`; then one CSV row and one feedback file per student.
POSIX only. The worker loads this file by path: no rnnlab imports at the top.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import csv
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

DESCRIPTION = """\
Run each submitted notebook in a fresh kernel (a copy, without its install
lines, with no network and with time limits), check its exercises with
rnnlab.checks, and write a CSV with one row per student and a markdown
feedback file per student. Exit status 0 even when students fail."""
LAYOUT_HELP = """\
SUBMISSIONS layouts (both may be mixed):
  SUBMISSIONS/alice/01_associative_scan.ipynb   one folder per student (student = folder
  SUBMISSIONS/alice/notes.pdf                   name; any depth below it); files that are
                                                not .ipynb are skipped and listed
  SUBMISSIONS/bob.ipynb                         notebooks directly in SUBMISSIONS
                                                (student = file stem)

A notebook is identified by its metadata (rnnlab.source, set in the student
notebooks), else by its file name containing a chapter notebook's name, else
by the exercise functions it defines. The network is off while grading."""

RANK = {"passed": 5, "failed": 4, "not attempted": 3, "timeout": 2, "error": 1, "missing": 0}
PRELUDE_TAG, GRADER_TAG = "rnnlab-grade-prelude", "rnnlab-grade-checks"
INSTALL = re.compile(r"^(?P<indent>[ \t]*)(?:[!%][ \t]*(?:pip3?|conda|mamba|micromamba|uv)\b"
                     r"|(?:python3?[ \t]+-m[ \t]+)?pip3?[ \t]+install\b"
                     r"|![ \t]*python3?[ \t]+-m[ \t]+pip\b)")
DEFINES = re.compile(r"^[ \t]*def[ \t]+(\w+)[ \t]*\(", re.M)
CHECKS = re.compile(r"""check\(\s*["']([\w-]+)["']""")
PROXY = "http://127.0.0.1:9"            # the discard port: nothing answers there
OFFLINE_ENV = {"PIP_NO_INDEX": "1", "UV_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
               **{name: PROXY for name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY",
                                           "ALL_PROXY")}, "no_proxy": "localhost,127.0.0.1",
               "NO_PROXY": "localhost,127.0.0.1", "MPLBACKEND": "Agg", "PYTHONUNBUFFERED": "1"}

# Runs before the student's first cell: refuses connections, datagrams and name
# look-ups for anything but loopback (a guard against accidents, not a sandbox).
PRELUDE = """\
# rnnlab grade: the network is off while grading
def _rnnlab_grade_offline():
    import errno, ipaddress, socket
    def remote(address):
        host = address[0] if isinstance(address, tuple) else address
        host = (host.decode() if isinstance(host, bytes) else str(host)).split("%")[0]
        try:
            return not (host in ("", "localhost") or ipaddress.ip_address(host).is_loopback)
        except ValueError:
            return True
    def refuse(address):
        if isinstance(address, tuple) and remote(address):
            raise ConnectionRefusedError(errno.ECONNREFUSED, f"network access is disabled while grading ({address[0]})")
    def no_lookup(host):
        if host is not None and remote(host):
            raise socket.gaierror(socket.EAI_NONAME, "name look-ups are disabled while grading")
    S, getaddrinfo = socket.socket, socket.getaddrinfo
    connect, connect_ex, sendto = S.connect, S.connect_ex, S.sendto
    S.connect = lambda self, address: refuse(address) or connect(self, address)
    S.connect_ex = lambda self, address: (errno.ECONNREFUSED if isinstance(address, tuple) and remote(address)
                                          else connect_ex(self, address))
    S.sendto = lambda self, data, *args: refuse(args[-1]) or sendto(self, data, *args)
    socket.getaddrinfo = lambda host, *args, **kwargs: no_lookup(host) or getaddrinfo(host, *args, **kwargs)
_rnnlab_grade_offline()
del _rnnlab_grade_offline"""

# Appended after the student's last cell (with the call): checks each exercise
# with a time limit (SIGALRM; the cell limit's interrupt as a fallback) and
# prints one marked JSON line per exercise, so what was printed before a crash counts.
GRADER = """\
# rnnlab grade: check every exercise of this notebook
def _rnnlab_grade(exercises, limit, modules, marker):
    import importlib, json, signal, sys
    def emit(record):
        sys.stdout.write("\\n" + marker + json.dumps(record) + "\\n")
        sys.stdout.flush()
    try:
        for module in ["rnnlab.checks", *modules]:
            importlib.import_module(module)
        from rnnlab.checks import evaluate
    except BaseException as exc:
        return emit({"error": f"the grader could not import the checks ({type(exc).__name__}: {exc})"})
    fired = []
    def alarm(signum, frame):
        fired.append(True)
        raise KeyboardInterrupt(f"stopped after {limit} s")   # evaluate() re-raises it
    names = globals()
    for label, name in exercises:
        if name not in names:
            emit({"label": label, "status": "not attempted",
                  "message": f"{label}: not attempted (no function {name} is defined)"})
            continue
        fired.clear()
        previous = signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, limit)
        try:
            record = evaluate(label, names[name]).as_dict()
        except KeyboardInterrupt:
            fired.append(True)
        except BaseException as exc:
            record = {"label": label, "status": "error",
                      "message": f"{label}: {name} stopped the check ({type(exc).__name__})"}
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        if fired:
            record = {"label": label, "status": "timeout",
                      "message": f"{label}: {name} did not return within {limit} s (an endless loop?)"}
        emit(record)
    emit({"done": True})"""


# ----------------------------------------------------------------- finding the notebooks

def collect(root):
    """``{student: [(path, path relative to the student's folder), ...]}``; hidden files are ignored."""
    students = {}
    for entry in sorted(Path(root).iterdir()):
        if entry.name.startswith((".", "__")):
            continue
        if entry.is_dir():
            files = [p for p in sorted(entry.rglob("*")) if p.is_file() and not any(
                part.startswith((".", "__")) for part in p.relative_to(entry).parts)]
            students.setdefault(entry.name, []).extend((p, p.relative_to(entry).as_posix()) for p in files)
        elif entry.is_file():
            students.setdefault(entry.stem, []).append((entry, entry.name))
    return students


def load(path):
    """``(cells, metadata, None)`` for a readable notebook, else ``(None, None, why)``."""
    try:
        raw = path.read_bytes()
        nb = json.loads(raw.decode("utf-8-sig")) if raw.strip() else None
    except OSError as exc:
        return None, None, f"could not be read ({exc.strerror})"
    except ValueError as exc:
        return None, None, f"not valid JSON ({exc})"
    if nb is None:
        return None, None, "empty file"
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        return None, None, "not a Jupyter notebook (no list of cells)"
    if nb.get("nbformat") != 4:
        return None, None, f"notebook format {nb.get('nbformat')} (save it again with a recent Jupyter)"
    cells = []
    for cell in nb["cells"]:
        cell = cell if isinstance(cell, dict) else {}
        source = cell.get("source", "")
        source = "".join(map(str, source)) if isinstance(source, list) else str(source)
        kind = cell.get("cell_type") if cell.get("cell_type") in ("code", "markdown") else "raw"
        cells.append({"cell_type": kind, "source": source})
    return cells, nb.get("metadata") if isinstance(nb.get("metadata"), dict) else {}, None


def identify(cells, meta, rel, exercises):
    """``(notebook, None)`` or ``(None, why)``: from the metadata, the file name,
    or the exercise functions the code defines (and labels it checks)."""
    source = meta.get("rnnlab", {}).get("source") if isinstance(meta.get("rnnlab"), dict) else None
    if isinstance(source, str) and source.strip():
        return re.sub(r"^(book/)?(.*?)(\.ipynb)?$", r"\2", source.strip()), None
    known = sorted({ex.notebook for ex in exercises})
    named = [nb for nb in known if nb.rsplit("/", 1)[-1].lower() in rel.lower()]
    if named:
        return max(named, key=len), None
    code = "\n".join(c["source"] for c in cells if c["cell_type"] == "code")
    defined, checked = set(DEFINES.findall(code)), set(CHECKS.findall(code))
    score = {nb: sum(ex.name in defined or ex.label in checked for ex in exercises if ex.notebook == nb)
             for nb in known}
    tops = [nb for nb, s in score.items() if s and s == max(score.values())]
    if len(tops) == 1:
        return tops[0], None
    return None, ("could not tell which notebook it is (" + (" or ".join(tops) if tops else
                  "no rnnlab metadata, known file name or exercise function") + ")")


# ----------------------------------------------------------------- running one notebook

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


def prepare(cells, exercises, marker, limit, modules):
    """The notebook to execute: the offline prelude, the student's cells (no
    install lines; cell ``i`` of the submission stays cell ``i``), the checks."""
    body = [_code(strip_installs(c["source"])) if c["cell_type"] == "code"
            else {"cell_type": c["cell_type"], "metadata": {}, "source": c["source"]} for c in cells]
    call = f"_rnnlab_grade({[(ex.label, ex.name) for ex in exercises]!r}, {limit!r}, {list(modules)!r}, {marker!r})"
    return {"nbformat": 4, "nbformat_minor": 4, "metadata": {"kernelspec": {"name": "python3", "language": "python",
            "display_name": "Python 3"}}, "cells": [_code(PRELUDE, PRELUDE_TAG), *body,
                                                    _code(f"{GRADER}\n{call}\ndel _rnnlab_grade", GRADER_TAG)]}


def parse_results(text, marker):
    """The JSON records printed right after ``marker`` (any other output is ignored)."""
    records, at = [], text.find(marker)
    while at >= 0:
        try:
            record = json.JSONDecoder().raw_decode(text, at + len(marker))[0]
            records += [record] if isinstance(record, dict) else []
        except ValueError:
            pass
        at = text.find(marker, at + len(marker))
    return records


def isolation():
    """The command prefix that runs a worker in its own network namespace (``unshare -rn``), or []."""
    try:
        ok = bool(shutil.which("unshare")) and subprocess.run(
            ["unshare", "-rn", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    return ["unshare", "-rn"] if ok else []


# The worker loads this file by path: no `import rnnlab` (and torch) in it.
WORKER_BOOT = ("import importlib.util as u, sys; s = u.spec_from_file_location('rnnlab_grade_worker', "
               "sys.argv[1]); m = u.module_from_spec(s); s.loader.exec_module(m); m.worker(*sys.argv[2:])")


def run(cells, exercises, opts):
    """Execute one notebook in a worker subprocess (killed with its kernel after
    ``opts.timeout`` s); return ``{"events", "timed_out", "marker", "seconds"}``."""
    began, marker = time.perf_counter(), f"@@rnnlab-grade-{uuid.uuid4().hex}@@"
    tmp = Path(tempfile.mkdtemp(prefix="rnnlab-grade-"))
    try:
        for folder in ("work", "tmp"):       # work: the kernel's cwd (empty: the copy is not in it)
            (tmp / folder).mkdir()
        nb = prepare(cells, exercises, marker, opts.cell_timeout, opts.imports)
        (tmp / "notebook.ipynb").write_text(json.dumps(nb))
        command = [*opts.prefix, sys.executable, "-c", WORKER_BOOT, __file__, str(tmp / "notebook.ipynb"),
                   str(tmp / "log.jsonl"), str(opts.cell_timeout), str(opts.cell_timeout * (len(exercises) + 1) + 60)]
        env = {**os.environ, **OFFLINE_ENV, "TMPDIR": str(tmp / "tmp"), "JUPYTER_RUNTIME_DIR": str(tmp / "tmp"),
               "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // opts.jobs)))}
        with open(tmp / "stderr.txt", "wb") as err:
            proc = subprocess.Popen(command, cwd=tmp / "work", env=env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
            try:
                proc.wait(timeout=opts.timeout)
            except subprocess.TimeoutExpired:
                pass
        timed_out = proc.returncode is None
        events = []
        for line in (tmp / "log.jsonl").read_text().splitlines() if (tmp / "log.jsonl").exists() else []:
            try:
                events.append(json.loads(line))
            except ValueError:
                pass
        if not any("grader" in e for e in events):          # killed, or the worker failed
            for pid in [e["kernel"] for e in events if "kernel" in e] + [proc.pid]:
                try:                                         # the kernel leads its own process group
                    os.killpg(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            proc.wait()
            if not timed_out and not any("dead" in e for e in events):
                tail = (tmp / "stderr.txt").read_text(errors="replace").strip().splitlines()[-1:]
                events.append({"failed": f"the grader's worker failed ({' '.join(tail) or proc.returncode})"})
        return {"events": events, "timed_out": timed_out, "marker": marker, "seconds": time.perf_counter() - began}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def worker(nb_path, log_path, cell_timeout, grader_timeout):
    """Execute ``nb_path`` in a fresh kernel (cwd: the current folder), logging one
    JSON line per event: the kernel's pid, each cell started and ended, the death
    of the kernel, and last the grader cell's standard output."""
    sys.modules.setdefault("rfc3987_syntax", None)   # nbformat's optional IRI check: 1.5 s to import
    import nbformat
    from jupyter_client import AsyncKernelManager
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    from rnnlab.book.nbrun import patch_kernel_channels   # absolute: this runs as a loaded file

    patch_kernel_channels()          # no stall after widget cells (jupyter/nbclient#312)

    with open(nb_path) as f:
        nb = nbformat.from_dict(json.load(f))
    log = open(log_path, "a")

    def emit(**record):
        log.write(json.dumps(record) + "\n")
        log.flush()

    def ended(cell, cell_index, execute_reply):
        content = (execute_reply or {}).get("content", {})
        emit(end=cell_index, error=f"{content.get('ename')}: {content.get('evalue')}"
             if content.get("status") == "error" else None)

    km = AsyncKernelManager(kernel_name="python3", transport="ipc", ip=str(Path(nb_path).parent / "kernel"))
    client = NotebookClient(
        nb, km=km, timeout=int(cell_timeout), allow_errors=True, interrupt_on_timeout=True,
        shutdown_kernel="immediate", resources={"metadata": {"path": os.getcwd()}},
        timeout_func=lambda cell: int(grader_timeout if GRADER_TAG in cell.metadata.get("tags", []) else cell_timeout),
        on_notebook_start=lambda notebook: emit(kernel=km.provisioner.pid),
        on_cell_execute=lambda cell, cell_index: emit(start=cell_index), on_cell_executed=ended)
    try:
        client.execute()
    except DeadKernelError:
        emit(dead=True)
    except Exception as exc:  # noqa: BLE001 (becomes a note; the grading goes on)
        emit(failed=f"{type(exc).__name__}: {exc}")
    emit(grader="".join(o.get("text", "") for o in nb.cells[-1].get("outputs", [])
                        if o.get("output_type") == "stream" and o.get("name") == "stdout"))


# ----------------------------------------------------------------- verdicts

def outcome(cells, exercises, execution, opts):
    """``({label: record}, note or None, [cell errors])`` for one executed notebook."""
    events, timed_out = execution["events"], execution["timed_out"]
    records = [r for e in events if "grader" in e for r in parse_results(e["grader"], execution["marker"])]
    results = {r["label"]: r for r in records if r.get("label") in {ex.label for ex in exercises}}
    ended = {e["end"] for e in events if "end" in e}

    def where(i):
        return ("while checking the exercises" if i > len(cells) else "before the first cell" if i < 1
                else f"in cell {i} (`{_first_line(cells[i - 1]['source'])}`)")

    errors = [f"{where(e['end'])[3:]} " + (f"stopped after {opts.cell_timeout} s (the cell time limit)"
                                           if e["error"].startswith("KeyboardInterrupt") else f"raised {e['error']}")
              for e in events if e.get("error") and 1 <= e["end"] <= len(cells)]
    last = max([e["start"] for e in events if "start" in e], default=0)
    note = (f"stopped after {opts.timeout:g} s (the notebook time limit) {where(last)}" if timed_out
            else f"the kernel died {where(last)}" if any("dead" in e for e in events)
            else next((e["failed"] for e in events if "failed" in e), None)
            or next((r["error"] for r in records if "error" in r), None))
    if not note and len(results) < len(exercises):
        note = "the checks printed no result (does the notebook replace sys.stdout?)"
    for ex in exercises:
        if ex.label in results:
            continue
        if timed_out:
            reached = any(i in ended and (ex.name in DEFINES.findall(c["source"]) or
                                          ex.label in CHECKS.findall(c["source"])) for i, c in enumerate(cells, 1))
            results[ex.label] = {"label": ex.label, "status": "timeout", "message": (
                f"{ex.label}: not graded: the notebook did not finish within {opts.timeout:g} s; "
                + ("its cells for this exercise had run" if reached else "this exercise was not reached"))}
        else:
            results[ex.label] = {"label": ex.label, "status": "error", "message": f"{ex.label}: not graded: {note}"}
    return results, note, errors


def _first_line(source):
    line = next((ln.strip() for ln in source.splitlines() if ln.strip() and not ln.strip().startswith("#")), "")
    return line if len(line) <= 50 else line[:47] + "..."


def verdict(record):
    """The CSV's cell: ``passed``, ``failed 2/5``, ``not attempted``, ``error``, ``timeout`` or ``missing``."""
    if record["status"] == "failed":
        return f"failed {record.get('passed', 0)}/{record.get('total', 0)}"
    return record["status"]


def feedback(student, columns, grades, notes, errors):
    """One student's feedback, in markdown: each verdict's message, the notes, the cell errors."""
    passed = sum(grades[ex.label]["status"] == "passed" for ex in columns)
    lines = [f"# Feedback for {student}", "", f"**{passed} of {len(columns)}** exercises passed.", "",
             "| exercise | notebook | result |", "|---|---|---|"]
    lines += [f"| {ex.label} | {ex.notebook} | {verdict(grades[ex.label])} |" for ex in columns]
    lines += ["", "## Each exercise", ""]
    for ex in columns:
        message = grades[ex.label].get("message", "").replace("```", "'''")
        lines += [f"### {ex.label}: {verdict(grades[ex.label])}", "", "```", message, "```", ""]
    for title, items in (("Notes", notes), ("Errors while running your notebooks", errors)):
        lines += [f"## {title}", "", *[f"- {item}" for item in items], ""] if items else []
    return "\n".join(lines)


def write_atomic(path, text):
    """Write ``text`` to ``path`` through a temporary file in the same folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# ----------------------------------------------------------------- command line

def _folder(text):
    if not Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"no such folder: {text}")
    return Path(text)


def add_arguments(parser):
    parser.add_argument("submissions", type=_folder, metavar="SUBMISSIONS", help="the folder of submissions (below)")
    parser.add_argument("--out", type=Path, default=Path("grades.csv"),
                        help="the CSV to write, one row per student (default: grades.csv)")
    parser.add_argument("--feedback", type=Path, metavar="DIR",
                        help="folder for one <student>.md each (default: feedback/ next to --out)")
    parser.add_argument("--notebooks", nargs="+", metavar="NB",
                        help="the assignment's notebooks (e.g. scans/01_associative_scan); a student without "
                             "one gets 'missing' for its exercises (default: every notebook found)")
    parser.add_argument("--timeout", type=float, default=300, metavar="S",
                        help="seconds per notebook before its kernel is killed (default: 300)")
    parser.add_argument("--cell-timeout", type=int, default=60, metavar="S",
                        help="seconds per cell, and per exercise check, before it is interrupted (default: 60)")
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2),
                        help="notebooks run at once (default: half the CPU cores)")
    parser.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                        help="a module that declares more exercises (imported here and in every kernel)")


def plan(students, registry, assignment):
    """``(tasks, notes)``: one ``(student, rel, notebook, cells)`` per notebook to
    run, and each student's notes on the files that will not run."""
    tasks, notes = [], {s: [] for s in students}
    for student, files in students.items():
        for path, rel in files:
            if path.suffix.lower() != ".ipynb":
                notes[student].append(f"{rel}: skipped (not a notebook)")
                continue
            cells, meta, why = load(path)
            nb, why = (None, why) if why else identify(cells, meta, rel, registry)
            if not why and assignment and nb not in assignment:
                why = f"{nb} is not part of this assignment"
            if not why and not any(ex.notebook == nb for ex in registry):
                why = f"{nb} has no exercises to grade"
            if why:
                notes[student].append(f"{rel}: {why}; not graded")
            else:
                tasks.append((student, rel, nb, cells))
    return tasks, notes


def main(args):
    import importlib
    import importlib.util

    from . import checks
    began = time.perf_counter()
    if importlib.util.find_spec("nbclient") is None:
        print("python -m rnnlab grade: error: needs nbclient (pip install 'rnnlab[book]')", file=sys.stderr)
        return 2
    for module in args.imports:
        importlib.import_module(module)
    registry = checks.exercises()
    unknown = [nb for nb in args.notebooks or [] if not checks.exercises(nb)]
    if unknown:
        known = ", ".join(sorted({ex.notebook for ex in registry})) or "none"
        print(f"python -m rnnlab grade: error: --notebooks: no exercises in {', '.join(unknown)} "
              f"(notebooks with exercises: {known})", file=sys.stderr)
        return 2
    students = collect(args.submissions)
    tasks, notes = plan(students, registry, args.notebooks)
    unread = sum(len(n) for n in notes.values())
    columns = [ex for ex in registry if ex.notebook in set(args.notebooks or [t[2] for t in tasks])]
    opts = argparse.Namespace(cell_timeout=args.cell_timeout, timeout=args.timeout, jobs=max(1, args.jobs),
                              imports=args.imports, prefix=isolation())
    graded, errors, counts = {s: {} for s in students}, {s: [] for s in students}, {"timeout": 0, "died": 0}
    with concurrent.futures.ThreadPoolExecutor(opts.jobs) as pool:
        futures = {pool.submit(run, cells, checks.exercises(nb), opts): (student, rel, nb, cells)
                   for student, rel, nb, cells in tasks}
        for n, future in enumerate(concurrent.futures.as_completed(futures), 1):
            student, rel, nb, cells = futures[future]
            try:
                execution = future.result()
            except Exception as exc:  # noqa: BLE001 (one notebook's trouble never stops the others)
                execution = {"events": [{"failed": f"the grader failed ({type(exc).__name__}: {exc})"}],
                             "timed_out": False, "marker": "", "seconds": 0.0}
            results, note, cell_errors = outcome(cells, checks.exercises(nb), execution, opts)
            counts["timeout"] += execution["timed_out"]
            counts["died"] += any("dead" in e for e in execution["events"])
            notes[student] += [f"{rel}: {note}"] if note else []
            errors[student] += [f"{rel}: {e}" for e in cell_errors]
            if sum(t[0] == student and t[2] == nb for t in tasks) > 1:
                notes[student].append(f"{rel}: one of several files for {nb}; the best result of each exercise counts")
            for label, new in results.items():
                old = graded[student].get(label)
                if old is None or (RANK[new["status"]], new.get("passed", 0)) > (RANK[old["status"]], old.get("passed", 0)):
                    graded[student][label] = new
            print(f"[{n}/{len(tasks)}] {student}/{rel}: {sum(r['status'] == 'passed' for r in results.values())} "
                  f"of {len(results)} passed ({execution['seconds']:.1f} s)", flush=True)

    table = io.StringIO()
    writer = csv.writer(table, lineterminator="\n")
    writer.writerow(["student", *[ex.label for ex in columns], "score", "total", "notes"])
    feedback_dir = args.feedback or args.out.parent / "feedback"
    for student in students:
        grades = {ex.label: graded[student].get(ex.label) or {
            "label": ex.label, "status": "missing",
            "message": f"{ex.label}: missing (no notebook {ex.notebook} was submitted)"} for ex in columns}
        shown = notes[student] + ([f"{len(errors[student])} cell(s) raised errors (see the feedback)"]
                                  if errors[student] else [])
        writer.writerow([student, *[verdict(grades[ex.label]) for ex in columns],
                         sum(g["status"] == "passed" for g in grades.values()), len(columns), "; ".join(shown)])
        name = re.sub(r"[^\w.@+-]+", "_", student).lstrip(".") or "_"
        write_atomic(feedback_dir / f"{name}.md", feedback(student, columns, grades, notes[student], errors[student]))
    write_atomic(args.out, table.getvalue())
    print(f"graded {len(students)} students, {len(tasks)} notebooks, {len(columns)} exercises in "
          f"{time.perf_counter() - began:.0f} s: {counts['timeout']} notebooks timed out, {counts['died']} "
          f"kernels died, {unread} files not graded; network off (in-kernel guard"
          f"{', own network namespace' if opts.prefix else ''})")
    print(f"wrote {args.out} and {len(students)} feedback files in {feedback_dir}/")
    return 0
