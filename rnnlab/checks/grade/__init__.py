"""Grade a folder of submitted notebooks: ``python -m rnnlab grade SUBMISSIONS/``.

Three places, three modules:

* :mod:`.folder`, here in the grading process: find the notebooks (never
  writing into the submissions), tell which chapter notebook each is, collect
  the answers in words, weigh the exercises, write the CSV, ``answers.csv``
  and one feedback file per student;
* :mod:`.kernel`, in the student's kernel: run a copy of the notebook (a fresh
  kernel, no network, time limits), then export each exercise's function by
  value (cloudpickle);
* :mod:`.judge`, back here: the grading process is the judge. It built the
  cases (public, hidden from the teacher's seed, the teacher's own) and the
  reference's answers before any notebook ran; it runs each exported function
  in a process of its own (:mod:`.candidate`: no network, memory and time
  limits, killed on overrun), reads back only plain data and compares it with
  its own answers. No student code runs in it, so no notebook cell can change
  ``rnnlab.checks`` for the verdict.

Every kernel and every candidate runs in a sandbox of its own (:mod:`.sandbox`,
bubblewrap: its own PID, user and network namespaces, a private /tmp, HOME and
numba cache, a minimal environment, no view of the grader's files or of the
other submissions); without bubblewrap the command refuses to run unless
``--unsafe`` is given. Anything a student process could have written is read
as a regular file only (no symlink, no FIFO, capped in size), and no process
ID read from such a file is ever signalled.

With ``--address``, each notebook's grading (:func:`grade_one`: its kernel, then
the judge on each exported function, in the same sandboxes) runs as a task on a
Ray cluster (:mod:`.cluster`); everything else stays in this process, which
writes the same files.

Linux only. ``main(args)`` is the command; :func:`add_arguments` its options.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import importlib
import importlib.util
import os
import shutil
import sys
import time
from pathlib import Path

from .folder import (RANK, answers, collect, feedback, identify, load, plan, safe_name,  # noqa: F401
                     answers_table, table, weights, write_atomic, book_statements, clip, feedback_names, scrub,
                     find_book)
from . import sandbox
from .judge import Judge, default_seed, load_cases_file
from .kernel import account, isolation, numba_seed, run, strip_installs  # noqa: F401

DESCRIPTION = """\
Run each submitted notebook in a fresh kernel in a sandbox of its own (a copy,
without its install lines, with no network and with time limits); export each exercise's function
from it; judge every function in a process of its own on the public cases and
on hidden ones, against answers computed before any student code ran; write a
CSV with one row per student (verdicts, points and a total), answers.csv (the
answers in words, one row per exercise and student) and a markdown feedback
file per student. Exit status 0 even when students fail."""
LAYOUT_HELP = """\
SUBMISSIONS layouts (both may be mixed):
  SUBMISSIONS/alice/01_associative_scan.ipynb   one folder per student (student = folder
  SUBMISSIONS/alice/notes.pdf                   name; any depth below it); files that are
                                                not .ipynb are skipped and listed
  SUBMISSIONS/bob.ipynb                         notebooks directly in SUBMISSIONS
                                                (student = file stem)

A notebook is identified by its metadata (rnnlab.source, set in the student
notebooks), else by its file name containing a chapter notebook's name, else
by the exercise functions it defines. Each notebook, and each exercise's
function, runs in a sandbox of its own (bubblewrap: no network, no view of
your files or of the other submissions; --unsafe grades without one).

Points: an exercise is worth its difficulty (★ 1, ★★ 2, ★★★ 3; one whose
title has no stars yet counts as ★★), all of it when every case, public and
hidden, passes, else nothing; --weights FILE overrides (lines 'label,points'
or a JSON object). Hidden cases: drawn from --seed (random unless given; the
CSV's first line records it) and/or read from --cases FILE, a Python file
defining CASES = {label: [Case(...), ...] or a function of a NumPy generator}."""


def _folder(text):
    if not Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"no such folder: {text}")
    return Path(text)


def add_arguments(parser):
    parser.add_argument("submissions", type=_folder, metavar="SUBMISSIONS", help="the folder of submissions (below)")
    parser.add_argument("--out", type=Path, default=Path("grades.csv"),
                        help="the CSV to write, one row per student (default: grades.csv); answers.csv "
                             "goes beside it")
    parser.add_argument("--feedback", type=Path, metavar="DIR",
                        help="folder for one <student>.md each (default: feedback/ next to --out)")
    parser.add_argument("--notebooks", nargs="+", metavar="NB",
                        help="the assignment's notebooks (e.g. scans/01_associative_scan); a student without "
                             "one gets 'missing' for its exercises (default: the book's notebooks that at least "
                             "half the students handed in)")
    parser.add_argument("--seed", type=int, metavar="N",
                        help="seed of the hidden cases (default: a random one, written in the CSV's first line)")
    parser.add_argument("--cases", type=Path, metavar="FILE",
                        help="a Python file of the teacher's own hidden cases: CASES = {label: [Case(...), ...]}")
    parser.add_argument("--weights", type=Path, metavar="FILE",
                        help="points per exercise: lines 'label,points' or a JSON object (default: difficulty)")
    parser.add_argument("--timeout", type=float, default=300, metavar="S",
                        help="seconds per notebook before its kernel is killed (default: 300)")
    parser.add_argument("--cell-timeout", type=int, default=60, metavar="S",
                        help="seconds per cell, and per exercise's cases, before it is stopped (default: 60)")
    parser.add_argument("--memory", type=int, default=4096, metavar="MB",
                        help="memory limit (address space) of each exercise's process, in MB (default: 4096; 0: none)")
    parser.add_argument("--kernel-memory", type=int, default=8192, metavar="MB",
                        help="memory limit (address space) of each notebook's kernel and of each process it "
                             "starts, in MB; a cell that asks for more raises MemoryError, and the feedback "
                             "says so (default: 8192; 0: none)")
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2),
                        help="notebooks run at once (default: half the CPU cores)")
    parser.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                        help="a module that declares more exercises (imported here before grading)")
    parser.add_argument("--book", type=Path, metavar="DIR",
                        help="the book's folder of chapter notebooks, for the exercises' stars (points) and "
                             "statements (answers.csv) (default: book/ of the checkout rnnlab runs from, or of "
                             "the current folder; without one, the stars declared in rnnlab.checks and the "
                             "statements in the students' copies)")
    parser.add_argument("--address", metavar="ADDR",
                        help="grade on a Ray cluster: each notebook's grading is a Ray task, in the same "
                             "sandbox (auto, HOST:PORT or ray://HOST:10001; 'local' starts a Ray on this "
                             "machine). Every node needs bubblewrap and the same rnnlab; the files are "
                             "written here. Ray runs as many notebooks at once as the cluster's CPUs allow "
                             "(local: --jobs x --cpus-per-task CPUs)")
    parser.add_argument("--cpus-per-task", type=float, default=2, metavar="N",
                        help="with --address: CPUs Ray reserves for each notebook (its kernel, then its "
                             "functions one at a time; default: 2)")
    parser.add_argument("--object-store-mb", type=int, default=200, metavar="MB",
                        help="with --address local: the object store of the Ray started here (default: 200)")
    parser.add_argument("--unsafe", action="store_true",
                        help="grade without the sandbox (bubblewrap) where it is missing: notebooks then run "
                             "as you, can read your files and the other submissions, write anywhere you can "
                             "and leave processes behind; only for submissions you trust")


def _error(message):
    print(f"python -m rnnlab grade: error: {message}", file=sys.stderr)
    return 2


def main(args):
    from .. import exercises

    began = time.perf_counter()
    if importlib.util.find_spec("nbclient") is None:
        return _error("needs nbclient (pip install 'rnnlab[book]')")
    for module in args.imports:
        importlib.import_module(module)
    registry = exercises()
    unknown = [nb for nb in args.notebooks or [] if not exercises(nb)]
    if unknown:
        known = ", ".join(sorted({ex.notebook for ex in registry})) or "none"
        return _error(f"--notebooks: no exercises in {', '.join(unknown)} (notebooks with exercises: {known})")
    try:
        extra = load_cases_file(args.cases) if args.cases else {}
    except Exception as exc:  # noqa: BLE001 (the teacher's file: say what is wrong with it)
        return _error(f"--cases {args.cases}: {type(exc).__name__}: {exc}")
    strange = sorted(set(extra) - {ex.label for ex in registry})
    if strange:
        return _error(f"--cases: no exercise {', '.join(strange)}")
    try:
        book = find_book(getattr(args, "book", None))
    except ValueError as exc:
        return _error(str(exc))
    boxed = not args.unsafe
    if boxed and not sandbox.available():
        return _error(sandbox.WHY_NO_SANDBOX)
    if not boxed:
        print(f"python -m rnnlab grade: warning: {sandbox.UNSAFE_GIVES_UP}", file=sys.stderr)
    address = getattr(args, "address", None)
    ray = owns = None
    if address:
        from . import cluster

        if not args.cpus_per_task > 0:
            return _error(f"--cpus-per-task: more than 0, got {args.cpus_per_task:g}")
        try:
            ray, owns = cluster.connect(address, cpus=max(1, args.jobs) * max(1, int(args.cpus_per_task)),
                                        object_store_mb=args.object_store_mb)
            where = cluster.check_nodes(ray, boxed=boxed, cpus_per_task=args.cpus_per_task)
        except cluster.ClusterError as exc:
            if owns:
                ray.shutdown()
            return _error(str(exc))
        print(f"python -m rnnlab grade: Ray at {address}: {where}", flush=True)
    try:
        return _prepared(args, book, boxed, began, registry, extra, ray)
    finally:
        if owns:
            ray.shutdown()


def _prepared(args, book, boxed, began, registry, extra, ray):
    students = collect(args.submissions)
    tasks, notes = plan(students, registry, args.notebooks)
    if not args.notebooks:                  # the course's notebooks: those at least half the class handed in
        need = max(1, (len(students) + 1) // 2)
        handed = {nb: len({t[0] for t in tasks if t[2] == nb}) for nb in {t[2] for t in tasks}}
        for student, rel, nb, _cells in tasks:
            if handed[nb] < need:
                notes[student].append(f"{rel}: {nb} is not part of this assignment ({handed[nb]} of {len(students)} "
                                      "students handed it in; name it with --notebooks to grade it); not graded")
        tasks = [t for t in tasks if handed[t[2]] >= need]
    unread = sum(len(n) for n in notes.values())
    columns = [ex for ex in registry if ex.notebook in set(args.notebooks or [t[2] for t in tasks])]
    try:
        weight = weights(columns, args.weights, book=book)
    except (OSError, ValueError) as exc:
        return _error(f"--weights: {exc}")
    seed = default_seed() if args.seed is None else args.seed
    opts = argparse.Namespace(cell_timeout=args.cell_timeout, timeout=args.timeout, jobs=max(1, args.jobs),
                              prefix=[] if boxed else isolation(), sandbox=boxed, kernel_memory=args.kernel_memory)
    # numba's cache for this run, compiled here before any student code runs; each sandbox gets a copy
    cache, cache_seconds = numba_seed(columns, opts, args.imports)
    try:
        opts.numba_seed = cache / "numba"
        return _grade(args, opts, boxed, began, registry, extra, students, tasks, notes, unread, columns, weight,
                      seed, cache_seconds, book, ray)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def grade_one(cells, nb, judge, opts):
    """One notebook graded: its kernel (:func:`.kernel.run`), then the judge on each exercise's
    exported function. Returns ``(execution, results, note, cell errors)``, plain data (the
    exported functions' bytes left out). The same here and in a Ray task (:mod:`.cluster`)."""
    exs = [ex for ex in judge.exercises if ex.notebook == nb]
    execution = run(cells, exs, opts)
    results, note, cell_errors = account(cells, exs, execution, opts)
    for ex in exs:
        if ex.label not in results:
            results[ex.label] = judge.decide(ex, execution["exports"].get(ex.label))
    return {k: v for k, v in execution.items() if k != "exports"}, results, note, cell_errors


def _locally(tasks, judge, opts):
    """``(index, outcome)`` as each notebook finishes, ``opts.jobs`` at a time in this process."""
    with concurrent.futures.ThreadPoolExecutor(opts.jobs) as pool:
        futures = {pool.submit(grade_one, cells, nb, judge, opts): i for i, (_s, _r, nb, cells) in enumerate(tasks)}
        for future in concurrent.futures.as_completed(futures):
            try:
                yield futures[future], future.result()
            except Exception as exc:  # noqa: BLE001 (one notebook's trouble never stops the others)
                yield futures[future], exc


def _grade(args, opts, boxed, began, registry, extra, students, tasks, notes, unread, columns, weight, seed,
           cache_seconds, book=None, ray=None):
    judge = Judge(columns, seed=seed, extra=extra, memory=args.memory, seconds=args.cell_timeout,
                  prefix=opts.prefix, jobs=opts.jobs, boxed=boxed,
                  numba_seed=opts.numba_seed).prepare()                  # before any student code runs
    secrets = [args.submissions.resolve(), args.submissions, args.out.resolve().parent, args.out.parent.resolve(),
               args.cases and args.cases.resolve(), args.cases, Path.home(), os.getcwd(), sys.prefix]

    if ray is not None:
        from . import cluster

        finished = cluster.run(ray, tasks, judge, opts, cpus_per_task=args.cpus_per_task, imports=args.imports)
    else:
        finished = _locally(tasks, judge, opts)
    outcomes = [None] * len(tasks)
    for n, (i, outcome) in enumerate(finished, 1):          # as they finish: the progress lines
        student, rel, nb, _cells = tasks[i]
        if isinstance(outcome, BaseException):
            note = f"the grader failed ({type(outcome).__name__}: {clip(outcome, 200)})"
            outcome = ({"events": [], "timed_out": False, "seconds": 0.0}, {
                ex.label: {"label": ex.label, "status": "error", "message": f"{ex.label}: not graded: {note}"}
                for ex in judge.exercises if ex.notebook == nb}, note, [])
        outcomes[i] = outcome
        execution, results = outcome[:2]
        print(f"[{n}/{len(tasks)}] {student}/{rel[:80]}: {sum(r['status'] == 'passed' for r in results.values())} "
              f"of {len(results)} passed ({execution['seconds']:.1f} s)", flush=True)

    # merged in the order of the tasks, not as they finished: the same files however they ran
    graded, errors, said = {s: {} for s in students}, {s: [] for s in students}, {s: {} for s in students}
    checked = {ex.label for ex in registry}
    counts = {"timeout": 0, "died": 0}
    for (student, rel, nb, cells), (execution, results, note, cell_errors) in zip(tasks, outcomes):
        counts["timeout"] += execution["timed_out"]
        counts["died"] += any("dead" in e for e in execution["events"])
        notes[student] += [f"{rel}: {note}"] if note else []
        notes[student] += [f"{rel}: {r['label']}: could not be exported" for r in results.values()
                           if "could not be exported" in r.get("message", "")]
        errors[student] += [f"{rel}: {scrub(clip(e, 300), secrets)}" for e in cell_errors]
        if sum(t[0] == student and t[2] == nb for t in tasks) > 1:
            notes[student].append(f"{rel}: one of several files for {nb}; the best result of each exercise counts")
        for label, new in results.items():
            old = graded[student].get(label)
            if old is None or (RANK[new["status"]], new.get("passed", 0)) > (RANK[old["status"]], old.get("passed", 0)):
                graded[student][label] = new
        statements = book_statements(nb, book)  # the book's own words; a student's only where there is none
        for label, their_statement, answer in answers(cells):
            if not answer and label in checked:
                continue                  # a code exercise's cell for words, left empty: nothing to read
            if statements and label not in statements:
                continue                  # not an exercise of the book's notebook
            if answer or label not in said[student]:
                said[student][label] = (label, nb, statements[label] if statements else clip(their_statement, 2000),
                                        clip(answer, 5000))

    feedback_dir = args.feedback or args.out.parent / "feedback"
    stems = feedback_names(students)
    for student in students:
        for record in graded[student].values():
            record["message"] = scrub(clip(record.get("message", ""), 1500), secrets)
    rows = []
    for student in students:
        grades = {ex.label: graded[student].get(ex.label) or {
            "label": ex.label, "status": "missing",
            "message": f"{ex.label}: missing (no notebook {ex.notebook} was submitted)"} for ex in columns}
        shown = notes[student] + ([f"{len(errors[student])} cell(s) raised errors (see the feedback)"]
                                  if errors[student] else [])
        rows.append((student, grades, shown))
        write_atomic(feedback_dir / f"{stems[student]}.md",
                     feedback(student, columns, grades, notes[student], errors[student], weight,
                              sorted(said[student].values(), key=lambda r: (r[1], r[0]))))
    source = f"seed {seed}" + (f" and {args.cases.name}" if args.cases else "")
    header = [f"rnnlab grade: hidden cases from {source} ({judge.describe()}); points: "
              + (f"{args.weights.name}" if args.weights else "difficulty (★ 1, ★★ 2, ★★★ 3, unmarked 2)")
              + "; rerun with --seed " + str(seed) + " for the same cases"]
    write_atomic(args.out, table(header, columns, rows, weight))
    answers_path = args.out.parent / "answers.csv"
    write_atomic(answers_path, answers_table([(label, nb, student, statement, answer)
                                              for student in students
                                              for label, nb, statement, answer in said[student].values()]))
    print(f"graded {len(students)} students, {len(tasks)} notebooks, {len(columns)} exercises in "
          f"{time.perf_counter() - began:.0f} s: {counts['timeout']} notebooks timed out, {counts['died']} "
          f"kernels died, {unread} files not graded; {judge.describe()} (seed {seed}); numba's cache compiled "
          f"for this run in {cache_seconds:.0f} s; "
          + (f"each notebook a task on Ray at {args.address}; " if ray is not None else "")
          + ("each notebook and each candidate in a sandbox of its own (bubblewrap: no network, no view of "
             "other files)" if boxed else "NO SANDBOX (--unsafe); network off (in-kernel guard"
             f"{', own network namespace' if opts.prefix else ''})"))
    print(f"wrote {args.out}, {answers_path} and {len(students)} feedback files in {feedback_dir}/")
    return 0
