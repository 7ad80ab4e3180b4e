"""Issue 38's demonstration: ``python -m rnnlab grade`` on one class with an honest student
and one student per attack, twice.

Builds, in a temporary folder, the submissions of tests/test_grade_hostile.py (its
attacks are imported from there, not copied: each is written so that it earns points
only if it works) and an honest student who hands in the test's assignment answered
right plus the full edition's copy of one or more of the book's notebooks (its
solutions run in the kernel). Runs the grader on that folder twice, as a teacher
would (``python -m rnnlab grade``, the teacher's own hidden cases and a token in the
environment), and prints one table: student, attack, points and maximum of each run,
whether the honest student's grade is the same in both runs, and each run's times
against ``--timeout``. Also checks what the attacks aimed at outside the grades: the
teacher's numba cache, a marker file the daemon and the poisoned cache write, the CSV
rewritten after the run.

    .venv/bin/python tools/grade_attacks.py [--book contraction/01_contraction_in_one_page]

Needs bubblewrap (sh tests/ensure_bwrap.sh); about 5 minutes on 2 cores.
"""
from __future__ import annotations

import argparse
import csv
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import test_grade_hostile as hostile  # noqa: E402  (the attacks, as the tests write them)

ATTACKS = {
    "honest": "none: the assignment answered right, and the book's notebook(s) of the full edition",
    "refgrab": "calls rnnlab.checks.get(...).reference and the module's answer functions",
    "bigvalue": "returns NaN (ex-lds-delay's hole) and a 32 MB array",
    "extra": "hands in an extra notebook, to add its exercise to everyone's max_points",
    "daemon": "double-forks a setsid daemon that appends forged lines to the CSV and the logs",
    "poison": "plants a pickle in every numba index file of its cache (and the teacher's)",
    "looker": "earns points only if it sees another student's (or run's) numba cache files",
    "argvspy": "reads the grader's argv, cwd, env, the other submissions and the teacher's cases",
    "killer": "writes 'finished' to the worker's log, then SIGKILLs its parent",
    "fifo": "replaces the worker's log with a FIFO, symlinks its export to /etc/passwd",
    "leakhidden": "puts the hidden case's input and its process's memory into an exception",
    "memhog": "allocates 16 GB in a cell",
    "'=2+5": "formula injection: folder named =2+5, an answer =HYPERLINK(...)",
    "x y": "name collision with x_y (they used to share one feedback file)",
    "x_y": "name collision with x y (they used to share one feedback file)",
    "caf?": "a folder name that is not UTF-8 (b'caf\\xe9'), a notebook '{}'",
    "deep": "a notebook nested 100,000 lists deep",
    "linker": "a symlink to the honest student's notebook",
}


def build(top, books):
    """The class: the fixture of tests/test_grade_hostile.py, plus the honest student's book notebooks."""
    subs, teacher, numba = top / "submissions", top / "teacher", top / "teacher-cache" / "numba"
    for folder in (subs, teacher, numba / "rnnlab"):
        folder.mkdir(parents=True)
    (teacher / "cases.py").write_text(hostile.TEACHER_CASES)
    (numba / "rnnlab" / "kept.nbi").write_bytes(b"the teacher's own cache")
    paths = {"honest": subs / "honest" / "01_attack.ipynb", "cases": teacher / "cases.py",
             "out": top / "run1" / "grades.csv", "marker": top / "marker" / "attacked.txt", "numba": numba,
             "subs": subs}
    paths["marker"].parent.mkdir()
    hostile.notebook(paths["honest"], hostile.HONEST)
    for book in books:
        source = ROOT / "full" / f"{book}.ipynb"
        (subs / "honest" / source.name).write_bytes(source.read_bytes())
    for student, cells in hostile.attacks(paths).items():
        hostile.notebook(subs / student / "01_attack.ipynb", cells)
    hostile.notebook(subs / "extra" / "01_attack.ipynb", hostile.WRONG)
    hostile.notebook(subs / "extra" / "02_extra.ipynb", ["def extra():\n    return 1"], source="testh/02_extra")
    hostile.notebook(subs / "=2+5" / "01_attack.ipynb",
                     [*hostile.WRONG, 'md:**Your answer (ex-h-prose).**\n\n=HYPERLINK("http://example.invalid","x")'])
    hostile.notebook(subs / "x y" / "01_attack.ipynb", hostile.WRONG)
    hostile.notebook(subs / "x_y" / "01_attack.ipynb", hostile.WRONG)
    os.mkdir(os.path.join(os.fsencode(subs), b"caf\xe9"))
    (subs / os.fsdecode(b"caf\xe9") / "01_attack.ipynb").write_text("{}")
    (subs / "deep").mkdir()
    (subs / "deep" / "01_attack.ipynb").write_text('{"cells": ' + "[" * 100_000 + "]" * 100_000 + "}")
    (subs / "linker").mkdir()
    (subs / "linker" / "01_attack.ipynb").symlink_to(paths["honest"])
    module = top / "module"
    module.mkdir()
    (module / f"{hostile.MODULE}.py").write_text(hostile.EXERCISES)
    return paths, module


def grade(paths, module, out, books, args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(module), os.environ.get("PYTHONPATH")])),
           "NUMBA_CACHE_DIR": str(paths["numba"]), "RNNLAB_TEST_SECRET": hostile.TOKEN}
    command = [sys.executable, "-m", "rnnlab", "grade", str(paths["subs"]), "--out", str(out),
               "--import", hostile.MODULE, "--cases", str(paths["cases"]), "--seed", "3",
               "--notebooks", "testh/01_attack", *books, "--timeout", str(args.timeout),
               "--cell-timeout", str(args.cell_timeout), "--memory", "1024", "--kernel-memory", "3072",
               "--jobs", str(args.jobs)]
    began = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=out.parent)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        sys.exit(f"grade failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    text = out.read_text(encoding="utf-8")
    rows = {r["student"]: r for r in csv.DictReader(line for line in text.splitlines() if not line.startswith("#"))}
    notebook_seconds = [float(s) for s in re.findall(r"\(([\d.]+) s\)$", done.stdout, re.M)]
    return rows, text, seconds, notebook_seconds, done.stdout


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--book", nargs="+", default=["contraction/01_contraction_in_one_page"],
                        help="the book notebooks the honest student hands in, from full/ (default: %(default)s)")
    parser.add_argument("--timeout", type=int, default=240, help="grade's --timeout (s per notebook)")
    parser.add_argument("--cell-timeout", type=int, default=60, help="grade's --cell-timeout")
    parser.add_argument("--jobs", type=int, default=2, help="grade's --jobs")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rnnlab-grade-attacks-") as top:
        top = Path(top)
        paths, module = build(top, args.book)
        out1, out2 = top / "run1" / "grades.csv", top / "run2" / "grades.csv"
        out1.parent.mkdir(exist_ok=True)
        out2.parent.mkdir(exist_ok=True)
        rows1, text1, s1, nb1, printed1 = grade(paths, module, out1, args.book, args)
        time.sleep(2)                              # a daemon that outlived its notebook would write now
        after1 = out1.read_text(encoding="utf-8")
        rows2, _text2, s2, nb2, printed2 = grade(paths, module, out2, args.book, args)
        labels = [c for c in next(iter(rows1.values())) if c.startswith("ex-")]
        print(f"python -m rnnlab grade, twice, on {len(rows1)} students; the honest student also hands in "
              f"{', '.join(args.book)} (full edition); exercises: {', '.join(labels)}")
        print()
        print("| student | attack | points run 1 | points run 2 | max |")
        print("|---|---|---|---|---|")
        for student in sorted(rows1, key=lambda s: (s != "honest", s)):
            r1, r2 = rows1[student], rows2.get(student, {})
            print(f"| {student} | {ATTACKS.get(student, '?')} | {r1['points']} | {r2.get('points', '-')} | "
                  f"{r1['max_points']} |")
        print()
        honest1 = {k: rows1["honest"][k] for k in [*labels, "points"]}
        honest2 = {k: rows2["honest"][k] for k in [*labels, "points"]}
        unearned = {s: r["points"] for rows in (rows1, rows2) for s, r in rows.items()
                    if s != "honest" and r["points"] != "0"}
        print(f"honest student, run 1: {honest1}")
        print(f"honest student's grade equal in both runs: {honest1 == honest2}")
        print(f"honest student passed everything: {all(v == 'passed' for k, v in honest1.items() if k != 'points')}")
        print(f"unearned points (any student but honest, either run): {unearned or 'none'}")
        for n, (seconds, notebooks) in enumerate(((s1, nb1), (s2, nb2)), 1):
            print(f"run {n}: {seconds:.0f} s in all, {len(notebooks)} notebooks, the slowest {max(notebooks):.1f} s "
                  f"(--timeout {args.timeout} s per notebook, --cell-timeout {args.cell_timeout} s); "
                  + re.search(r"\d+ notebooks timed out, \d+ kernels died", printed1 if n == 1 else printed2)[0])
        print(f"grades.csv rewritten after run 1: {after1 != text1}; 'forged' in it: {'forged' in text1}; "
              f"marker written by a daemon or an unpickled cache file: {paths['marker'].exists()}; "
              f"teacher's numba cache: {sorted(p.name for p in (paths['numba'] / 'rnnlab').iterdir())}")
    return 0 if honest1 == honest2 and not unearned else 1


if __name__ == "__main__":
    sys.exit(main())
