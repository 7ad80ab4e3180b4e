"""``python -m rnnlab grade``: every kind of broken submission gets a row that
says why, and every other notebook is still graded.

The exercises graded here are the test's own (``ex-test-*``, in a module put on
PYTHONPATH and passed with ``--import``), so these tests do not depend on the
chapters' exercises. One module-scoped run grades a folder with one student
per case (kernels run two at a time); the other tests start no kernel.
"""
import contextlib
import csv
import io
import os
import sys
import time

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook  # noqa: E402

from rnnlab.checks import grade  # noqa: E402
from rnnlab.__main__ import main as cli  # noqa: E402
from rnnlab.checks.grade import sandbox as _sandbox  # noqa: E402

UNSAFE = [] if _sandbox.available() else ["--unsafe"]     # bubblewrap: sh tests/ensure_bwrap.sh
from rnnlab.checks import core  # noqa: E402

MODULE = "rnnlab_gradetest_exercises"
EXERCISES = '''
from rnnlab.checks.core import Case, exercise

def _double(x):
    return 2 * x

def _square(x):
    return x * x

def _head(xs):
    return xs[0]

def _network():
    return "blocked"

exercise("ex-test-double", notebook="testch/01_first", name="double", signature="double(x)",
         reference=_double, cases=lambda: [Case((v,)) for v in (1, 2, -3, 0.5)])
exercise("ex-test-square", notebook="testch/01_first", name="square", signature="square(x)",
         reference=_square, cases=lambda: [Case((v,)) for v in (0, 1, 2, -3)])
exercise("ex-test-head", notebook="testch/02_second", name="head", signature="head(xs)",
         reference=_head, cases=lambda: [Case(([1, 2],)), Case(([5],))])
exercise("ex-test-network", notebook="testch/03_net", name="network", signature="network()",
         reference=_network, cases=lambda: [Case(())])
exercise("ex-test-other", notebook="testch/04_other", name="other", signature="other()",
         reference=lambda: 1, cases=lambda: [Case(())])
'''
LABELS = ["ex-test-double", "ex-test-square", "ex-test-head", "ex-test-network"]
CELL_TIMEOUT, TIMEOUT = 10, 30      # generous: a cell that imports rnnlab (torch) on a loaded 2-core machine

DOUBLE = "def double(x):\n    return 2 * x"
SQUARE = "def square(x):\n    return x * x"
FOREVER = "import time\nwhile True:\n    try:\n        time.sleep(0.05)\n    except KeyboardInterrupt:\n        pass"
NETWORK = '''\
import os, socket
def network():
    try:
        socket.create_connection(("192.0.2.1", 80), timeout=3)
        return "connected"
    except OSError as exc:
        if "disabled while grading" not in str(exc):
            return f"not refused by the guard: {exc}"
    return "blocked" if os.environ.get("PIP_NO_INDEX") == "1" else "pip may use the index"'''


def notebook(path, *sources, source=None, nbformat_version=4):
    """A notebook at ``path``: ``"md:..."`` sources are markdown cells, the rest code."""
    cells = [new_markdown_cell(s[3:]) if s.startswith("md:") else new_code_cell(s) for s in sources]
    meta = {"rnnlab": {"student": True, "source": f"book/{source}.ipynb"}} if source else {}
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(new_notebook(cells=cells, metadata=meta), str(path))
    return path


def run_cli(*argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = cli(["grade", *map(str, argv), *UNSAFE])
    return rc, out.getvalue()


def read_rows(path):
    with open(path, newline="") as f:
        return {row["student"]: row for row in csv.DictReader(line for line in f if not line.startswith("#"))}


@pytest.fixture(scope="module")
def graded(exercise_module, tmp_path_factory):
    """One grading run over a folder with one student per case."""
    subs = tmp_path_factory.mktemp("submissions")
    notebook(subs / "alice" / "01_first.ipynb",
             "try:\n    import rnnlab_grade_not_installed\nexcept ImportError:\n"
             "    %pip install -q rnnlab_grade_not_installed\n!pip install nothing",
             DOUBLE, "def square(x):\n    return x + x",
             "open('scratch.txt', 'w').write('x')",
             'print("@@rnnlab-grade-fake@@{\\"label\\": \\"ex-test-square\\", \\"status\\": \\"passed\\"}")\n1 / 0',
             source="testch/01_first")
    notebook(subs / "alice" / "02_second.ipynb", "def head(xs):\n    return xs[0]", source="testch/02_second")
    (subs / "alice" / "notes.txt").write_text("my notes")
    (subs / "alice" / "report.pdf").write_bytes(b"%PDF-1.4\x00\xff")
    # cells reordered (the check before the function), added, deleted (no square); no metadata
    notebook(subs / "bob" / "Copy of 01_first (1).ipynb",
             'from rnnlab.checks import check\ncheck("ex-test-double", double)',
             "md:# my answers", "def double(x):\n    return x * 2", "1 / 0")
    notebook(subs / "carol" / "homework.ipynb", "while True:\n    pass", "def head(xs):\n    return xs[0]")
    notebook(subs / "dave" / "01_first.ipynb", DOUBLE, FOREVER, SQUARE, source="testch/01_first")
    notebook(subs / "erin" / "01_first.ipynb", DOUBLE, "import os\nos._exit(1)", SQUARE, source="testch/01_first")
    (subs / "frank").mkdir()
    (subs / "frank" / "01_first.ipynb").write_text("")
    (subs / "frank" / "02_second.ipynb").write_text('{"cells": [')
    notebook(subs / "gina.ipynb", "def head(xs):\n    return xs[-1]", source="testch/02_second")
    (subs / "hank.py").write_text("def double(x):\n    return 2 * x\n")
    notebook(subs / "ivan" / "01_first.ipynb", "def double(x):\n    while True:\n        pass", SQUARE)
    notebook(subs / "ivan" / "03_net.ipynb", NETWORK, source="testch/03_net")
    notebook(subs / "ivan" / "04_other.ipynb", "def other():\n    return 1", source="testch/04_other")
    before = {p: p.read_bytes() for p in subs.rglob("*") if p.is_file()}

    out = tmp_path_factory.mktemp("out") / "grades.csv"
    start = time.perf_counter()
    rc, printed = run_cli(subs, "--out", out, "--import", exercise_module, "--notebooks", "testch/01_first",
                          "testch/02_second", "testch/03_net", "--timeout", TIMEOUT,
                          "--cell-timeout", CELL_TIMEOUT, "--jobs", 2)
    print(printed)
    return {"rc": rc, "printed": printed, "seconds": time.perf_counter() - start, "rows": read_rows(out),
            "feedback": {p.stem: p.read_text() for p in (out.parent / "feedback").glob("*.md")},
            "subs": subs, "before": before}


def test_exit_code_columns_and_summary(graded):
    assert graded["rc"] == 0
    rows = graded["rows"]
    assert sorted(rows) == ["alice", "bob", "carol", "dave", "erin", "frank", "gina", "hank", "ivan"]
    assert list(rows["alice"]) == ["student", *LABELS, "score", "total", "points", "max_points", "notes"]
    assert all(row["total"] == "4" for row in rows.values())
    assert "graded 9 students, 9 notebooks" in graded["printed"]
    assert sorted(graded["feedback"]) == sorted(rows)


def test_passed_failed_and_non_notebooks_listed(graded):
    alice = graded["rows"]["alice"]
    assert [alice[label] for label in LABELS] == ["passed", "failed 2/4", "passed", "missing"]
    assert alice["score"] == "2"     # a student's fake marker line does not count
    assert "notes.txt: skipped (not a notebook)" in alice["notes"]
    assert "report.pdf: skipped (not a notebook)" in alice["notes"]
    text = graded["feedback"]["alice"]
    assert "case 2 of 4 failed: for x = 1, expected 1, got 2" in text
    assert "x * x" not in text                     # the message shows the case, never the solution
    assert "cell 5" in text and "ZeroDivisionError" in text


def test_cells_reordered_added_deleted(graded):
    bob = graded["rows"]["bob"]       # identified by its file name
    assert [bob[label] for label in LABELS] == ["passed", "not attempted", "missing", "missing"], \
        graded["feedback"]["bob"]
    assert "cell 1" in graded["feedback"]["bob"] and "NameError" in graded["feedback"]["bob"]


def test_cell_timeout_and_identified_by_functions(graded):
    carol = graded["rows"]["carol"]
    assert carol["ex-test-head"] == "passed"
    assert carol["ex-test-double"] == "missing"
    assert f"stopped after {CELL_TIMEOUT} s (the cell time limit)" in graded["feedback"]["carol"]


def test_notebook_timeout_reports_what_was_reached(graded):
    dave = graded["rows"]["dave"]
    assert dave["ex-test-double"] == dave["ex-test-square"] == "timeout"
    assert f"stopped after {TIMEOUT} s (the notebook time limit) in cell 2" in dave["notes"]
    text = graded["feedback"]["dave"]
    assert "its cells for this exercise had run" in text and "this exercise was not reached" in text


def test_kernel_death(graded):
    erin = graded["rows"]["erin"]
    assert erin["ex-test-double"] == erin["ex-test-square"] == "error"
    assert "the kernel died in cell 2" in erin["notes"]


def test_empty_and_corrupt_files(graded):
    frank = graded["rows"]["frank"]
    assert [frank[label] for label in LABELS] == ["missing"] * 4
    assert "01_first.ipynb: empty file" in frank["notes"]
    assert "02_second.ipynb: not valid JSON" in frank["notes"]


def test_flat_layout(graded):
    assert graded["rows"]["gina"]["ex-test-head"] == "failed 1/2"   # every case runs
    hank = graded["rows"]["hank"]
    assert hank["score"] == "0" and "hank.py: skipped (not a notebook)" in hank["notes"]


def test_endless_function_network_and_assignment(graded):
    ivan = graded["rows"]["ivan"]
    assert [ivan[label] for label in LABELS] == ["timeout", "passed", "missing", "passed"]
    assert "did not return within" in graded["feedback"]["ivan"]
    assert "04_other.ipynb: testch/04_other is not part of this assignment" in ivan["notes"]


def test_submissions_untouched(graded):
    after = {p: p.read_bytes() for p in graded["subs"].rglob("*") if p.is_file()}
    assert after == graded["before"]          # nothing changed, nothing added (scratch.txt)


# ----------------------------------------------------------------- no kernels

def test_usage_errors(exercise_module, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli(["grade", str(tmp_path / "nope")])
    assert exit_.value.code == 2
    assert "SUBMISSIONS: no such folder" in capsys.readouterr().err
    assert cli(["grade", str(tmp_path), "--notebooks", "testch/99_none"]) == 2
    assert "--notebooks: no exercises in testch/99_none" in capsys.readouterr().err


def test_help_documents_both_layouts(capsys):
    with pytest.raises(SystemExit):
        cli(["grade", "--help"])
    text = capsys.readouterr().out
    assert "one folder per student" in text and "student = file stem" in text


def test_rerun_overwrites(exercise_module, tmp_path):
    subs = tmp_path / "subs"
    (subs / "zoe").mkdir(parents=True)
    (subs / "zoe" / "01_first.ipynb").write_text("not json at all")
    (subs / "yan.txt").write_text("hello")
    out = tmp_path / "out" / "grades.csv"
    feedback = tmp_path / "fb"
    out.parent.mkdir()
    out.write_text("stale\n")
    for _ in range(2):
        rc, _printed = run_cli(subs, "--out", out, "--feedback", feedback, "--import", exercise_module,
                               "--notebooks", "testch/01_first")
        assert rc == 0
    rows = read_rows(out)
    assert sorted(rows) == ["yan", "zoe"]
    assert rows["zoe"]["ex-test-double"] == "missing" and "not valid JSON" in rows["zoe"]["notes"]
    assert sorted(p.name for p in feedback.iterdir()) == ["yan.md", "zoe.md"]   # no temporary files left


def test_identify(exercise_module):
    exs = core.exercises()
    cells = [{"cell_type": "code", "source": "def head(xs):\n    return xs[0]"}]
    meta = {"rnnlab": {"source": "book/testch/01_first.ipynb"}}
    assert grade.identify(cells, meta, "x.ipynb", exs) == ("testch/01_first", None)
    assert grade.identify([], {}, "Copy of 02_second (2).ipynb", exs) == ("testch/02_second", None)
    assert grade.identify(cells, {}, "homework.ipynb", exs) == ("testch/02_second", None)
    assert grade.identify([], {}, "homework.ipynb", exs)[0] is None


def test_load_and_collect(tmp_path):
    (tmp_path / "a" / "sub").mkdir(parents=True)
    (tmp_path / "a" / "sub" / "x.ipynb").write_text('{"nbformat": 3, "cells": []}')
    (tmp_path / "a" / ".ipynb_checkpoints").mkdir()
    (tmp_path / "a" / ".ipynb_checkpoints" / "x-checkpoint.ipynb").write_text("{}")
    (tmp_path / "b.ipynb").write_text('{"worksheets": []}')
    (tmp_path / ".DS_Store").write_text("")
    students = grade.collect(tmp_path)
    assert {s: [rel for _, rel in files] for s, files in students.items()} == {"a": ["sub/x.ipynb"],
                                                                               "b": ["b.ipynb"]}
    assert "format 3" in grade.load(tmp_path / "a" / "sub" / "x.ipynb")[2]
    assert "not a Jupyter notebook" in grade.load(tmp_path / "b.ipynb")[2]


def test_strip_installs():
    source = ("try:\n    import x\nexcept ImportError:\n    %pip install -q x\n!pip install y \\\n    z\n"
              "pip install w\n!python -m pip install v\nprint('pip install is fine in a string')")
    stripped = grade.strip_installs(source).split("\n")
    assert stripped[3] == "    pass  # rnnlab grade skipped: %pip install -q x"
    assert all(line.lstrip().startswith("pass  #") for line in stripped[4:8])
    assert stripped[8] == source.split("\n")[8]
    compile("\n".join(stripped), "cell", "exec")
