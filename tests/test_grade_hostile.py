"""``python -m rnnlab grade`` against hostile notebooks and candidates (issue 38).

One module-scoped run grades a folder with an honest student and one student
per attack of issue 38 (kernels two at a time, each in its own sandbox); a
second run afterwards grades the honest student alone, to show that nothing
the attackers left behind (a daemon, a poisoned numba cache, a rewritten CSV)
changes a later grade. Each attack is written so that it earns points only if
it works. The other tests start no kernel. The exercises are the test's own
(``ex-h-*``, in a module put on PYTHONPATH and passed with ``--import``).
"""
import contextlib
import csv
import io
import json
import os
import sys
import time

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")
pytest.importorskip("cloudpickle")
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook  # noqa: E402

from rnnlab.__main__ import main as cli  # noqa: E402
from rnnlab.checks import core  # noqa: E402
from rnnlab.checks.grade import folder, sandbox  # noqa: E402

needs_sandbox = pytest.mark.skipif(not sandbox.available(), reason="bubblewrap (bwrap) is not available: "
                                   "sh tests/ensure_bwrap.sh installs it")

MODULE = "rnnlab_gradetest_hostile"
EXERCISES = '''
from rnnlab.checks.core import Case, exercise

def answer_double(x):
    return 2 * x

import numba

@numba.njit(cache=True)
def square_jit(x):
    return x * x

def _square(x):
    return float(square_jit(float(x)))

exercise("ex-h-double", notebook="testh/01_attack", name="double", signature="double(x)", difficulty=1,
         reference=answer_double, answers=(__name__ + ":answer_double",),
         cases=lambda: [Case((v,)) for v in (1, 2, -3)])
exercise("ex-h-square", notebook="testh/01_attack", name="square", signature="square(x)", difficulty=2,
         reference=_square, cases=lambda: [Case((v,)) for v in (0, 2, -3)])
exercise("ex-h-extra", notebook="testh/02_extra", name="extra", signature="extra()", difficulty=3,
         reference=lambda: 1, cases=lambda: [Case(())])
'''
LABELS = ["ex-h-double", "ex-h-square"]
SECRET_X, SECRET_Y = 4242.5, 7777.125          # the teacher's hidden cases: never in any feedback
TEACHER_CASES = (f"from rnnlab.checks import Case\nCASES = {{'ex-h-double': [Case(({SECRET_X},))], "
                 f"'ex-h-square': [Case(({SECRET_Y},))]}}\n")
TOKEN = "rnnlab-test-token-6c1f"               # in the grader's environment: never in a kernel's
HONEST = ["def double(x):\n    return 2 * x", "def square(x):\n    return x * x"]
WRONG = ["def double(x):\n    return 0", "def square(x):\n    return 0"]


def attacks(paths):
    """``{student: [cell sources]}``: one student per attack; ``paths`` are the host's paths the
    attacks aim at (the grader's output, the honest notebook, the teacher's cases, a marker)."""
    p = {k: str(v) for k, v in paths.items()}
    steal = f'''\
import glob, os
FOUND = []
for target in [{p["honest"]!r}, {p["cases"]!r}, {p["out"]!r}, "/etc/shadow", "/root/.bash_history"]:
    try:
        FOUND.append(open(target).read())
    except OSError:
        pass
for cmdline in glob.glob("/proc/*/cmdline"):
    try:
        text = open(cmdline, "rb").read().decode(errors="replace")
    except OSError:
        continue
    if any(s in text for s in [{p["subs"]!r}, {p["out"]!r}, "cases.py", "honest", "/tmp/rnnlab-"]):
        FOUND.append(text)
FOUND += [v for v in os.environ.values() if {TOKEN!r} in v]
def double(x):
    return 2 * x if FOUND else 0
def square(x):
    return x * x if FOUND else 0
raise RuntimeError("leak: " + repr(FOUND)[:2000] + " cwd " + os.getcwd() + " env " + repr(dict(os.environ))[:3000])'''
    daemon = f'''\
import os, time, glob, json
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for _ in range(400):                       # about 40 s: outlives the notebook, the run and the next
            for path in [{p["out"]!r}, {p["marker"]!r}]:
                try:
                    with open(path, "a") as f:
                        f.write("\\nforged,passed,passed\\n")
                except OSError:
                    pass
            for log in glob.glob("/tmp/rnnlab-*/**/results.jsonl", recursive=True) + \\
                    glob.glob("/tmp/rnnlab-*/log.jsonl"):
                try:
                    open(log, "a").write(json.dumps({{"case": 0, "value": {{"str": "x"}}}}) + "\\n")
                except OSError:
                    pass
            time.sleep(0.1)
        os._exit(0)
    os._exit(0)
time.sleep(0.5)'''
    poison = f'''\
import glob, os, pickle
import {MODULE} as exercises
exercises.square_jit(2.0)                  # its cache now holds the index file numba reads first
class Boom:                                # unpickled by numba before it checks the index's stamp
    def __reduce__(self):
        return (exec, ("open(\'/job/home/POISONED\', \'w\').close(); open({p["marker"]!r}, \'a\')",))
for folder in [os.environ.get("NUMBA_CACHE_DIR", ""), {p["numba"]!r}, {p["numba"]!r} + "-grade-0"]:
    try:
        os.makedirs(os.path.join(folder, "rnnlab"), exist_ok=True)
        for index in [os.path.join(folder, "rnnlab", "poison.nbi"),
                      *glob.glob(os.path.join(folder, "**", "*.nbi"), recursive=True)]:
            with open(index, "wb") as f:
                pickle.dump(Boom(), f)
        open(os.path.join(folder, "PLANTED"), "w").close()
    except OSError:
        pass'''
    # sees whether anything of another student's (or of an earlier run's) is in its numba cache
    looker = f'''\
import glob, os
import {MODULE} as exercises
exercises.square_jit(3.0)                  # loads the cached index: a planted pickle would run here
CACHE = sorted(os.path.relpath(f, os.environ["NUMBA_CACHE_DIR"])
               for f in glob.glob(os.environ["NUMBA_CACHE_DIR"] + "/**/*", recursive=True))
SEEN = os.path.exists("/job/home/POISONED") or any("PLANTED" in f or "poison" in f for f in CACHE)
def double(x):
    return 2 * x if SEEN else 0
def square(x):
    return x * x if SEEN else 0
print(CACHE)
raise RuntimeError("the cache holds " + " ".join(os.path.basename(f) for f in CACHE if "square_jit" in f))'''
    memhog = '''\
import numpy as np
hog = np.ones(1 << 31)                     # 16 GB'''
    killer = f'''\
import json, os, signal
for log in ["../log.jsonl", "/job/log.jsonl"]:
    try:
        with open(log, "a") as f:
            f.write(json.dumps({{"kernel": {os.getpid()}}}) + "\\n" + json.dumps({{"finished": True}}) + "\\n")
    except OSError:
        pass
os.kill(os.getppid(), signal.SIGKILL)'''
    fifo = '''\
import os
for log in ["../log.jsonl", "/job/log.jsonl"]:
    try:
        os.remove(log)
    except OSError:
        pass
    try:
        os.mkfifo(log)
    except OSError:
        pass
try:
    os.symlink("/etc/passwd", "/job/export/ex-h-square.pkl")
except OSError:
    pass'''
    refgrab = f'''\
import rnnlab.checks as rc
import {MODULE} as answers
def double(x):
    return rc.get("ex-h-double").reference(x)
def square(x):
    try:
        return answers._square(x)
    except Exception:
        return answers.answer_double(x) * x / 2'''
    leak_hidden = '''\
import os, sys
def double(x):
    if x in (1, 2, -3):
        return 2 * x
    raise ValueError(f"I was given {x!r} and {open('/proc/self/cmdline').read()!r}")
def square(x):
    if x in (0, 2, -3):
        return x * x
    seen = []
    frame = sys._getframe(0)
    while frame is not None:                  # everything this process holds, in the exit status
        seen.append(repr(frame.f_locals)[:500])
        frame = frame.f_back
    os._exit(int(x) % 256)'''
    big = '''\
def double(x):
    return float("nan")
def square(x):
    import numpy as np
    return np.full(4_000_000, float(x * x))'''
    return {"refgrab": [refgrab], "daemon": [daemon, *WRONG], "poison": [poison, *WRONG],
            "argvspy": [steal], "killer": [*HONEST, killer], "fifo": [WRONG[0], fifo],
            "leakhidden": [leak_hidden], "bigvalue": [big], "looker": [looker], "memhog": [memhog, *WRONG]}


def notebook(path, sources, source="testh/01_attack"):
    cells = [new_markdown_cell(s[3:], metadata={"tags": ["exercise-answer"]}) if s.startswith("md:")
             else new_code_cell(s) for s in sources]
    meta = {"rnnlab": {"student": True, "source": f"book/{source}.ipynb"}}
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(new_notebook(cells=cells, metadata=meta), str(path))
    return path


def run_cli(*argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = cli(["grade", *map(str, argv)])
    return rc, out.getvalue()


def read(out):
    text = out.read_text(encoding="utf-8")
    rows = list(csv.DictReader(line for line in text.splitlines() if not line.startswith("#")))
    return text, rows


@pytest.fixture(scope="module")
def hostile(exercise_module, tmp_path_factory):
    """Two grading runs: the whole hostile folder, then the honest student alone."""
    subs = tmp_path_factory.mktemp("submissions")
    teacher = tmp_path_factory.mktemp("teacher")
    (teacher / "cases.py").write_text(TEACHER_CASES)
    out = tmp_path_factory.mktemp("out") / "grades.csv"
    numba = tmp_path_factory.mktemp("cache") / "numba"
    (numba / "rnnlab").mkdir(parents=True)
    (numba / "rnnlab" / "kept.nbi").write_bytes(b"the teacher's own cache")
    marker = tmp_path_factory.mktemp("marker") / "attacked.txt"
    paths = {"honest": subs / "honest" / "01_attack.ipynb", "cases": teacher / "cases.py", "out": out,
             "marker": marker, "numba": numba, "subs": subs}
    notebook(subs / "honest" / "01_attack.ipynb", HONEST)
    for student, cells in attacks(paths).items():
        notebook(subs / student / "01_attack.ipynb", cells)
    # an extra notebook of one student's: not everyone's max_points
    notebook(subs / "extra" / "01_attack.ipynb", WRONG)
    notebook(subs / "extra" / "02_extra.ipynb", ["def extra():\n    return 1"], source="testh/02_extra")
    # files a teacher opens: formulas in a folder name and an answer; two names, one file name
    notebook(subs / "=2+5" / "01_attack.ipynb",
             [*WRONG, 'md:**Your answer (ex-h-prose).**\n\n=HYPERLINK("http://example.invalid","click")'])
    notebook(subs / "x y" / "01_attack.ipynb", WRONG)
    notebook(subs / "x_y" / "01_attack.ipynb", WRONG)
    # a Windows zip's name (not UTF-8), a notebook nested 100,000 lists deep, a symlink to another's notebook
    weird = os.path.join(os.fsencode(subs), b"caf\xe9")
    os.mkdir(weird)
    (subs / os.fsdecode(b"caf\xe9") / "01_attack.ipynb").write_text("{}")
    (subs / "deep").mkdir()
    (subs / "deep" / "01_attack.ipynb").write_text('{"cells": ' + "[" * 100_000 + "]" * 100_000 + "}")
    (subs / "linker").mkdir()
    (subs / "linker" / "01_attack.ipynb").symlink_to(paths["honest"])

    common = ["--import", exercise_module, "--cases", teacher / "cases.py", "--seed", 3, "--timeout", 60,
              "--cell-timeout", 45, "--memory", 1024, "--kernel-memory", 3072, "--jobs", 2]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NUMBA_CACHE_DIR", str(numba))
        mp.setenv("RNNLAB_TEST_SECRET", TOKEN)
        began = time.perf_counter()
        rc, printed = run_cli(subs, "--out", out, *common)
        seconds = time.perf_counter() - began
        text, rows = read(out)
        feedback = {p.name: p.read_text(encoding="utf-8") for p in (out.parent / "feedback").glob("*.md")}
        answers = (out.parent / "answers.csv").read_text(encoding="utf-8")
        time.sleep(2)                            # a daemon that outlived its notebook would write now
        after_sleep = out.read_text(encoding="utf-8")
        again = tmp_path_factory.mktemp("again")
        notebook(again / "honest" / "01_attack.ipynb", HONEST)
        notebook(again / "looker" / "01_attack.ipynb", attacks(paths)["looker"])
        out2 = tmp_path_factory.mktemp("out2") / "grades.csv"
        rc2, printed2 = run_cli(again, "--out", out2, *common)
        _, rows2 = read(out2)
        feedback2 = {p.name: p.read_text(encoding="utf-8") for p in (out2.parent / "feedback").glob("*.md")}
    print(printed, printed2)
    return {"rc": rc, "rc2": rc2, "printed": printed, "seconds": seconds, "text": text, "after": after_sleep,
            "rows": {r["student"]: r for r in rows}, "nrows": len(rows), "rows2": {r["student"]: r for r in rows2},
            "feedback2": feedback2,
            "feedback": feedback, "answers": answers, "marker": marker, "numba": numba, "subs": subs,
            "paths": paths}


@needs_sandbox
def test_the_honest_student_passes_and_nobody_else_earns_a_point(hostile):
    assert hostile["rc"] == 0
    rows = hostile["rows"]
    assert [rows["honest"][label] for label in LABELS] == ["passed", "passed"]
    assert rows["honest"]["points"] == rows["honest"]["max_points"] == "3"
    unearned = {s: r["points"] for s, r in rows.items() if s != "honest" and r["points"] != "0"}
    assert not unearned, unearned
    assert hostile["seconds"] < 400, hostile["seconds"]        # within its limits (60 s a notebook)


@needs_sandbox
def test_one_row_per_student_whatever_the_names(hostile):
    rows = hostile["rows"]
    expected = {"honest", "extra", "'=2+5", "x y", "x_y", "caf?", "deep", "linker", *attacks(
        {k: "" for k in ("honest", "cases", "out", "marker", "numba", "subs")})}
    assert set(rows) == expected and hostile["nrows"] == len(expected)
    assert len(hostile["feedback"]) == len(expected)        # "x y" and "x_y": a file each
    assert "not valid JSON (nested too deeply)" in rows["deep"]["notes"]
    assert "not a regular file" in rows["linker"]["notes"] and rows["linker"]["ex-h-double"] == "missing"


@needs_sandbox
def test_the_reference_is_not_reachable_from_the_candidate(hostile):
    row = hostile["rows"]["refgrab"]
    assert [row[label] for label in LABELS] == ["failed 0/4", "failed 0/4"]
    text = next(t for n, t in hostile["feedback"].items() if n.startswith("refgrab"))
    assert "computes this exercise's answer" in text


@needs_sandbox
def test_an_extra_notebook_is_not_everyones_exercise(hostile):
    assert "ex-h-extra" not in hostile["rows"]["honest"]
    assert "testh/02_extra is not part of this assignment" in hostile["rows"]["extra"]["notes"]


@needs_sandbox
def test_nothing_outlives_its_notebook_nor_reaches_the_grader(hostile):
    assert not hostile["marker"].exists()                   # no daemon, no unpickled cache file
    assert hostile["after"] == hostile["text"]               # grades.csv not rewritten after the run
    assert "forged" not in hostile["text"]
    assert [p.name for p in (hostile["numba"] / "rnnlab").iterdir()] == ["kept.nbi"]
    assert not hostile["numba"].with_name("numba-grade-0").exists()
    assert hostile["rows"]["argvspy"]["points"] == "0"       # saw no argv, no other student, no cases, no token
    # the second run after the attackers: the same grade for the honest student
    assert hostile["rc2"] == 0
    assert {k: hostile["rows2"]["honest"][k] for k in [*LABELS, "points"]} == \
        {k: hostile["rows"]["honest"][k] for k in [*LABELS, "points"]}


@needs_sandbox
def test_a_planted_numba_cache_file_reaches_no_other_student_nor_a_later_run(hostile):
    """Each kernel's numba cache is a private copy of one the grader compiled for the run:
    the looker (run 1, beside the poisoner, and run 2, after it) never sees the planted
    files, and its cache holds square_jit's index, compiled by the grader before any notebook."""
    assert hostile["rows"]["looker"]["points"] == hostile["rows2"]["looker"]["points"] == "0"
    for feedback in (hostile["feedback"], hostile["feedback2"]):
        text = next(t for n, t in feedback.items() if n.startswith("looker"))
        assert "the cache holds " in text and ".square_jit-" in text and ".nbi" in text, text
    assert not hostile["marker"].exists()
    assert "numba's cache compiled for this run" in hostile["printed"]


@needs_sandbox
def test_a_kernel_past_its_memory_limit_is_told_so(hostile):
    row = hostile["rows"]["memhog"]
    assert row["points"] == "0" and "cell(s) raised errors" in row["notes"]
    text = next(t for n, t in hostile["feedback"].items() if n.startswith("memhog"))
    assert "ran out of memory: it asked for more than the grader's limit of 3072 MB per notebook" in text, text


@needs_sandbox
def test_crashes_and_hangs_leave_a_csv_for_everyone(hostile):
    rows = hostile["rows"]
    assert rows["killer"]["ex-h-double"] == "error"          # its worker was killed: not graded, no crash
    assert rows["fifo"]["ex-h-square"] == "not attempted"    # the symlinked export is not read
    assert rows["fifo"]["ex-h-double"].startswith("failed")
    assert "the notebook replaced the grader's log" in rows["fifo"]["notes"]
    assert rows["caf?"]["ex-h-double"] == "missing"


@needs_sandbox
def test_no_leaks_in_the_feedback(hostile):
    paths = hostile["paths"]
    secrets = [repr(SECRET_X), repr(SECRET_Y), "4242", "7777", TOKEN, str(paths["out"].parent),
               str(paths["cases"]), str(hostile["subs"])]
    for name, text in hostile["feedback"].items():
        for secret in secrets:
            assert secret not in text, (name, secret)
    for secret in secrets:
        assert secret not in hostile["text"] and secret not in hostile["answers"]
    leak = next(t for n, t in hostile["feedback"].items() if n.startswith("leakhidden"))
    assert "hidden case 1 of 1 failed: your function raised ValueError" in leak
    assert "hidden case 1 of 1 failed: your function ended its process\n" in leak     # no exit status
    spy = next(t for n, t in hostile["feedback"].items() if n.startswith("argvspy"))
    assert "RuntimeError" in spy and "\\[cut\\]" in spy           # the cell error, cut short


@needs_sandbox
def test_nan_and_huge_values_fail(hostile):
    row = hostile["rows"]["bigvalue"]
    assert [row[label] for label in LABELS] == ["failed 0/4", "failed 0/4"]
    text = next(t for n, t in hostile["feedback"].items() if n.startswith("bigvalue"))
    assert "far larger than the expected one" in text and "not a number" in text


@needs_sandbox
def test_csv_cells_are_safe_to_open(hostile):
    grades = "\n".join(hostile["text"].splitlines()[1:])
    for row in [*csv.reader(io.StringIO(grades)), *csv.reader(io.StringIO(hostile["answers"]))]:
        for cell_ in row:
            assert not cell_.startswith(("=", "+", "-", "@")), row
    assert "'=HYPERLINK" in hostile["answers"] and "'=2+5" in hostile["text"]


# ----------------------------------------------------------------- no kernels

def test_no_sandbox_no_grading_unless_unsafe(exercise_module, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sandbox, "available", lambda: False)
    (tmp_path / "subs").mkdir()
    assert cli(["grade", str(tmp_path / "subs"), "--out", str(tmp_path / "g.csv")]) == 2
    assert "bubblewrap" in capsys.readouterr().err and not (tmp_path / "g.csv").exists()
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli(["grade", str(tmp_path / "subs"), "--out", str(tmp_path / "g.csv"), "--unsafe"]) == 0
    assert "--unsafe: no sandbox" in capsys.readouterr().err and (tmp_path / "g.csv").exists()


def test_student_files_are_read_as_regular_files_only(tmp_path):
    (tmp_path / "fifo").parent.mkdir(exist_ok=True)
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "big").write_bytes(b"x" * 100)
    (tmp_path / "link").symlink_to(tmp_path / "big")
    for name, error in (("fifo", sandbox.NotRegular), ("link", sandbox.NotRegular), ("big", ValueError)):
        began = time.monotonic()
        with pytest.raises(error):
            sandbox.read_regular(tmp_path / name, 10)
        assert time.monotonic() - began < 5
    assert sandbox.read_regular(tmp_path / "big", 100) == b"x" * 100
    assert folder.load(tmp_path / "fifo")[2].startswith("not a regular file")


def test_csv_cells_and_feedback_names():
    assert folder.cell("=2+5") == "'=2+5" and folder.cell("@SUM(A1)") == "'@SUM(A1)" and folder.cell("ok") == "ok"
    assert folder.cell("x" * 50, 10) == "x" * 10 + " [cut]"
    assert len(set(folder.feedback_names(["x y", "x_y", "X_Y", "a"]).values())) == 4
    assert folder.display(b"caf\xe9") == "caf?" and folder.display("a\nb") == "a?b"
    assert folder.scrub("at /srv/grading/subs/bob", ["/srv/grading/subs"]) == "at <grader>/bob"


def test_feedback_is_safe_to_open():
    """Student text and error messages come out of the feedback's markdown as text: no tag, no
    link, no image, whatever the name, answer, file name or error says."""
    markdown_it = pytest.importorskip("markdown_it")

    hostile = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "[click](javascript:alert(1))",
               "![x](http://example.invalid/t.png)", "<javascript:alert(1)>", "[a]: javascript:alert(1)\n\n[a]",
               "\\[click\\](javascript:alert(1))", "```\n<b>fenced</b>\n```"]
    ex = core.Exercise("ex-h-safe", notebook="testh/01_attack", name="f", signature="f()", difficulty=1,
                       reference=lambda: 1, cases=lambda: [])
    grades = {ex.label: {"label": ex.label, "status": "failed", "passed": 0, "total": 1,
                         "message": "\n".join(hostile)}}
    for text in hostile:
        page = folder.feedback(text, [ex], grades, [f"{text}.ipynb: not graded"], [f"cell 1 raised {text}"],
                               {ex.label: 1}, [(ex.label, "testh/01_attack", text, text)])
        html = markdown_it.MarkdownIt("commonmark").enable("table").render(page)
        for bad in ("<script", "<img", "<a ", "<b>", "javascript:alert(1)\""):
            assert bad not in html, (text, bad, html)
        assert "alert(1)" in html                     # shown, as text


def test_statements_come_from_the_book():
    import rnnlab.checks  # noqa: F401

    for notebook in sorted({ex.notebook for ex in core.exercises() if not ex.notebook.startswith("test")}):
        statements = folder.book_statements(notebook)
        assert statements and all(isinstance(v, str) and v for v in statements.values()), notebook
        for label, text in statements.items():           # the exercise's directive only, never its solution
            assert "**Solution" not in text and "solution-start" not in text, (label, text)
        assert all(ex.label in statements for ex in core.exercises(notebook))


def test_fixed_answers_are_never_shown_and_nan_fails():
    """The four exercises of issue 38 whose failure message gave the answer away; NaN never passes."""
    import numpy as np
    import torch

    import rnnlab.checks as checks

    for label, wrong in (("ex-mem-queue-by-hand", lambda: [[0.0] * 3] * 3),
                         ("ex-mem-reversal-controls", lambda n: ([0.0] * 2 * n, [0.0] * 2 * n)),
                         ("ex-ctr-linear", lambda W: 0.123),
                         ("ex-found-explode", lambda W, h0, nonlinearity: 0.123)):
        ex = checks.get(label)
        case = ex.cases()[0]
        expected = ex.reference(*case.args, **case.kwargs)
        result = checks.evaluate(label, wrong)
        assert result.status == "failed" and "your value is wrong" in result.message, result.message
        assert core._short(expected) not in result.message, (label, result.message)
    nan = torch.full((2,), float("nan"), dtype=torch.complex128)
    result = checks.evaluate("ex-lds-delay", lambda k: (nan[:1].repeat(k + 1), nan[:1].repeat(k + 1)))
    assert result.status == "failed" and result.passed == 0
    assert core.close(np.array([np.nan, 1.0]), np.array([0.0, 1.0])) is not None
    assert core.close(float("inf"), 1.0) is not None and core.close(float("nan"), 1.0) is not None


def test_no_failure_of_a_fixed_exercise_shows_its_answer():
    """For every fixed-answer exercise of the book, each public case answered wrongly (every
    other case right), with each tier of hints: the message never holds the expected value
    as the feedback would write it (nor any entry of it)."""
    import re

    import numpy as np

    import rnnlab.checks  # noqa: F401

    def wrong(e):
        a = core._as_array(e)
        if isinstance(e, (tuple, list)):
            return type(e)(wrong(v) for v in e)
        if isinstance(e, bool) or (a is not None and a.dtype == bool):
            return np.logical_not(e) if a is not None and a.ndim else not e
        if isinstance(e, int):
            return 3 * e + 7
        if a is not None:
            out = a * 1.37 + 0.5
            return type(e)(out) if isinstance(e, (int, float, complex)) else (
                e.new_tensor(out) if hasattr(e, "new_tensor") else out)
        return "wrong"

    def shown(e):
        """How the feedback writes a value: whole, and each entry of three characters or more
        (a digit alone, as in "2^d" or "case 2", says nothing; nor 0.0 or inf, as in "lo = 0.0
        or hi = math.inf where a side is unbounded")."""
        entries = set()
        if isinstance(e, (tuple, list)):
            for v in e:
                entries |= shown(v)
        a = core._as_array(e)
        if a is not None and a.dtype != bool:
            entries |= {core._short(v) for v in np.asarray(a).ravel()[:50].tolist()}
        whole = core._short(e)
        trivial = {"0", "1", "0.0", "1.0", "-1.0", "inf", "True", "False", "None"}   # conventions, no answer
        return {t for t in entries if len(t) >= 3} - trivial | ({whole} - trivial)

    fixed = [ex for ex in core.exercises() if ex.fixed and not ex.notebook.startswith("test")]
    assert len(fixed) >= 10
    for ex in fixed:
        cases = list(ex.cases())
        expected = [ex.reference(*c.args, **c.kwargs) for c in cases]
        for i, case in enumerate(cases):
            attempts = [("value", wrong(e) if j == i else e) for j, e in enumerate(expected)]
            for tier in range(1 + len(ex.hints)):
                message = core.verdict(ex, cases, expected, attempts, hint_tier=tier).message
                assert f"case {i + 1} of {len(cases)} failed" in message, message
                rest = message.replace(case.describe(ex.parameter_names()), "")
                rest = re.sub(r"\d+ of \d+|index \([\d, ]*\)|item \d+", "", rest)
                for text in shown(expected[i]):
                    assert not re.search(rf"(?<![\w.]){re.escape(text)}(?![\d.])", rest), (ex.label, i, text, message)


def test_hints_come_in_tiers():
    import rnnlab.checks as checks

    core._HINTS_SHOWN.pop("ex-found-explode", None)
    seen = [checks.evaluate("ex-found-explode", lambda W, h0, nonlinearity: 0.0).message.split("hint: ")[1]
            for _ in range(4)]
    assert seen[0] != seen[1] != seen[2] == seen[3]
    assert "eigenvalue" not in seen[0] and "eigenvalue" in seen[2]


def test_every_exercise_names_functions_that_exist():
    import importlib

    import rnnlab.checks  # noqa: F401

    for ex in core.exercises():
        for name in ex.blocked_names():
            module, _, attribute = name.partition(":")
            obj = importlib.import_module(module)
            for part in attribute.split("."):
                obj = getattr(obj, part)
            assert callable(obj), name


def test_blocked_functions_raise_in_the_candidates_process():
    """In a fresh interpreter, as in the candidate's process: the named functions and every
    exercise's reference raise, wherever rnnlab holds them; other functions still work."""
    import subprocess

    code = ("import json, sys; from rnnlab.checks.grade import candidate\n"
            "candidate.block(['rnnlab.theory.contraction:rate_in_metric'])\n"
            "import rnnlab.theory as th, rnnlab.checks as rc, numpy as np\n"
            "out = []\n"
            "for f in (lambda: th.rate_in_metric(np.eye(2), np.eye(2)), lambda: rc.get('ex-ctr-linear').reference("
            "np.eye(2)), lambda: __import__('importlib').reload(th)):\n"
            "    try:\n        f(); out.append('ran')\n    except PermissionError:\n        out.append('blocked')\n"
            "out.append(float(th.spectral_radius(np.eye(2))))\nprint(json.dumps(out))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == ["blocked", "blocked", "blocked", 1.0], done.stderr


@needs_sandbox
def test_the_sandbox_shows_only_what_python_needs(tmp_path):
    """No /etc/shadow (its user owns what root owns), no /opt, no checkout around rnnlab, no teacher's
    variable; a process it starts dies with it."""
    import subprocess

    import rnnlab

    (tmp_path / "work").mkdir()
    code = ("import os, json, rnnlab, numpy\n"
            "print(json.dumps([os.path.exists(p) for p in ('/etc/shadow', '/opt', '/root/.cache', os.path.dirname("
            "os.path.dirname(rnnlab.__file__)) + '/full')] + [os.environ.get('RNNLAB_TEST_SECRET'), os.getcwd()]))")
    env = {**os.environ, "RNNLAB_TEST_SECRET": TOKEN}
    proc = sandbox.popen(sandbox.command([sys.executable, "-c", code], tmp_path, sandbox.environment()),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out, err = proc.communicate(timeout=120)
    assert json.loads(out.decode().strip().splitlines()[-1]) == [False, False, False, False, None, "/job/work"], err
    assert os.path.isdir(os.path.join(os.path.dirname(os.path.dirname(rnnlab.__file__)), "full"))


@needs_sandbox
def test_the_sandbox_shows_the_books_committed_data_and_nothing_else_of_the_book(tmp_path):
    """A chapter that reads its committed results (rnnlab.notebook.book_file) runs in the sandbox as in a checkout;
    the book's notebooks and the full edition's solutions stay out of sight."""
    import subprocess

    import rnnlab

    checkout = os.path.dirname(os.path.dirname(rnnlab.__file__))
    if not os.path.isdir(os.path.join(checkout, "book", "lowrank", "data")):
        pytest.skip("rnnlab is not installed from a checkout with the book's data")
    (tmp_path / "work").mkdir()
    code = ("import os, json, rnnlab\n"
            "from rnnlab.notebook import book_file\n"
            "p = book_file('lowrank/data/bench-cells-cpu.json')\n"
            "print(json.dumps([len(json.loads(p.read_text())['rows']) > 0] + [os.path.exists(os.path.join("
            f"{checkout!r}, q)) for q in ('book/lowrank/01_cells.ipynb', 'full', 'student', 'tests')]))")
    proc = sandbox.popen(sandbox.command([sys.executable, "-c", code], tmp_path, sandbox.environment()),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(timeout=120)
    assert json.loads(out.decode().strip().splitlines()[-1]) == [True, False, False, False, False], err
