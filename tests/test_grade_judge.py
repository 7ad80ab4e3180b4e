"""``python -m rnnlab grade`` decides every verdict away from student code.

One module-scoped run grades a folder of five students (kernels two at a
time): an honest one, one who patches the checks (and numpy) from a notebook
cell and prints forged results, one whose functions tamper from inside their
own bodies (patching, forging result lines, walking stack frames, exiting the
interpreter), one who hard-codes the public answers, and one whose functions
cannot be exported. None of the tampering passes; the hard-coded answers fail
the hidden cases (the exercises' own generator, and the teacher's ``--cases``
file). The other tests start no kernel. The exercises are the test's own
(``ex-j-*``, in a module put on PYTHONPATH and passed with ``--import``).
"""
import contextlib
import csv
import io
import json
import os
import sys

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")
pytest.importorskip("cloudpickle")
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook  # noqa: E402

from rnnlab.__main__ import main as cli  # noqa: E402
from rnnlab.checks.grade import sandbox as _sandbox  # noqa: E402

UNSAFE = [] if _sandbox.available() else ["--unsafe"]     # bubblewrap: sh tests/ensure_bwrap.sh
from rnnlab.checks import core  # noqa: E402
from rnnlab.checks.grade import candidate, folder, judge  # noqa: E402

MODULE = "rnnlab_gradetest_judge_exercises"
EXERCISES = '''
import numpy as np
from rnnlab.checks.core import Case, exercise, hidden

NB = "testj/01_judge"
exercise("ex-j-double", notebook=NB, name="double", signature="double(x)", difficulty=1,
         reference=lambda x: 2 * x, cases=lambda: [Case((v,)) for v in (1, 2, -3)])
exercise("ex-j-square", notebook=NB, name="square", signature="square(x)",
         reference=lambda x: x * x, cases=lambda: [Case((v,)) for v in (0, 2, -3)])
exercise("ex-j-cube", notebook=NB, name="cube", signature="cube(x)", difficulty=3,
         reference=lambda x: x ** 3, cases=lambda: [Case((v,)) for v in (1, 2)])
exercise("ex-j-cumsum", notebook=NB, name="running", signature="running(x)", difficulty=2,
         reference=lambda x: np.cumsum(x), cases=lambda: [Case((np.arange(4.0),)), Case((np.ones(3),))])

@hidden("ex-j-double")
def _double_hidden(rng):
    return [Case((int(v),)) for v in rng.integers(10, 1000, size=3)]

@hidden("ex-j-cube")
def _cube_hidden(rng):
    return [Case((int(v),)) for v in rng.integers(3, 50, size=2)]

@hidden("ex-j-cumsum")
def _cumsum_hidden(rng):
    return [Case((rng.normal(size=n),)) for n in (5, 7)]
'''
LABELS = ["ex-j-double", "ex-j-square", "ex-j-cube", "ex-j-cumsum"]
TEACHER_CASES = "from rnnlab.checks import Case\nCASES = {'ex-j-square': [Case((7,)), Case((11,))]}\n"
WEIGHTS = "# points\nex-j-cube,5\n"

HONEST = ["import numpy as np",
          "def double(x):\n    return 2 * x",
          "def square(x):\n    return x * x",
          "def cube(x):\n    return x ** 3",
          "def running(x):\n    return np.cumsum(x)",
          "md:**Your answer (ex-j-prose).** *Write your derivation or explanation here.*\n\nBecause 2 + 2 = 4."]

# A notebook cell patches everything the verdict could go through, then prints forged results.
CELL_PATCH = '''\
import numpy as np, rnnlab.checks as checks, rnnlab.checks.core as core
from rnnlab.checks import CheckResult
def _passed(label, candidate=None, *args, **kwargs):
    return CheckResult(label=label, status="passed", passed=9, total=9, message=f"{label}: passed, 9 of 9 cases")
checks.evaluate = core.evaluate = _passed
checks.check = core.check = lambda label, candidate: print(f"{label}: passed")
core.close = checks.close = lambda *args, **kwargs: None
core.verdict = lambda ex, *args, **kwargs: _passed(ex.label)
core.Exercise.agree = lambda self, got, expected: None
for ex in core.exercises():
    ex.reference = lambda *args, **kwargs: 0
np.isclose = lambda *args, **kwargs: np.ones(1, dtype=bool)
np.allclose = np.array_equal = lambda *args, **kwargs: True
import rnnlab.checks.grade.judge as judge
judge.decode = lambda value, depth=0: 0
for label in ("ex-j-double", "ex-j-square", "ex-j-cube", "ex-j-cumsum"):
    print(f'{label}: passed, 3 of 3 cases')
    print('@@rnnlab-grade-x@@' + '{"label": "%s", "status": "passed"}' % label)'''
WRONG = ["def double(x):\n    return 0", "def square(x):\n    return 0", "def cube(x):\n    return 0",
         "def running(x):\n    return np.zeros(len(x))"]

# Each function tampers from inside its own body, in the process that runs it.
BODY = ["import numpy as np",
        '''def double(x):
    import numpy, rnnlab.checks as checks, rnnlab.checks.core as core
    core.close = checks.close = lambda *args, **kwargs: None
    checks.evaluate = core.evaluate = lambda *args, **kwargs: None
    numpy.isclose = lambda *args, **kwargs: numpy.ones(1, dtype=bool)
    print("ex-j-double: passed, 3 of 3 cases")
    return -1''',
        '''def square(x):
    import os
    print("ex-j-square: passed")
    os._exit(0)''',
        '''def cube(x):
    import sys
    frame = sys._getframe(1)
    while frame is not None:                 # walk up to the harness, rewrite what it holds
        for name in ("cases", "args"):
            if name in frame.f_locals and isinstance(frame.f_locals[name], list):
                frame.f_locals[name].clear()
        frame.f_globals.pop("encode", None)
        frame = frame.f_back
    sys.exit(0)''',
        '''def running(x):
    # Forged results that look right: one line per case (2 public, 2 hidden) in the candidate's own
    # format, the public ones correct, then "done" and a passing verdict, on every descriptor it has.
    import base64, json, os
    import numpy as np
    def value(v):
        v = np.ascontiguousarray(v, dtype=np.float64)
        return {"ndarray": {"dtype": v.dtype.str, "shape": list(v.shape),
                            "data": base64.b64encode(v.tobytes()).decode("ascii")}}
    guesses = [np.cumsum(np.arange(4.0)), np.cumsum(np.ones(3)), np.cumsum(np.ones(5)), np.cumsum(np.ones(7))]
    lines = [{"case": i, "value": value(g)} for i, g in enumerate(guesses)]
    lines += [{"done": True}, {"label": "ex-j-cumsum", "status": "passed", "passed": 4, "total": 4, "hidden": 2,
                               "message": "ex-j-cumsum: passed, 2 of 2 cases and 2 of 2 hidden cases"}]
    data = "".join(json.dumps(line) + "\\n" for line in lines).encode()
    for fd in range(3, 64):
        try:
            os.write(fd, data)
        except OSError:
            pass
    os._exit(0)''']

# The public answers, hard-coded: right on every public case, nothing else.
HARDCODED = ["import numpy as np",
             "def double(x):\n    return {1: 2, 2: 4, -3: -6}.get(x, 0)",
             "def square(x):\n    return {0: 0, 2: 4, -3: 9}.get(x, 0)",
             "def cube(x):\n    return {1: 1, 2: 8}.get(x, 0)",
             "def running(x):\n    return {4: np.array([0., 1., 3., 6.]), 3: np.array([1., 2., 3.])}.get(len(x), x)"]

UNEXPORTABLE = ["log = open('log.txt', 'w')",
                "def double(x):\n    log.write('called')\n    return 2 * x",
                "square = (x * x for x in range(3))",
                "def cube(x):\n    return x ** 3"]


def notebook(path, sources, answer_tag=True):
    cells = []
    for s in sources:
        if s.startswith("md:"):
            cells.append(new_markdown_cell(s[3:], metadata={"tags": ["exercise-answer"]} if answer_tag else {}))
        else:
            cells.append(new_code_cell(s))
    cells.insert(0, new_markdown_cell("```{exercise} ★★ Why\n:label: ex-j-prose\nWhy is 2 + 2 = 4?\n```"))
    meta = {"rnnlab": {"student": True, "source": "book/testj/01_judge.ipynb"}}
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(new_notebook(cells=cells, metadata=meta), str(path))


def run_cli(*argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = cli(["grade", *map(str, argv), *UNSAFE])
    return rc, out.getvalue()


@pytest.fixture(scope="module")
def graded(exercise_module, tmp_path_factory):
    subs = tmp_path_factory.mktemp("submissions")
    notebook(subs / "honest" / "01_judge.ipynb", HONEST)
    notebook(subs / "cellpatch" / "01_judge.ipynb", ["import numpy as np", *WRONG, CELL_PATCH])
    notebook(subs / "bodytamper" / "01_judge.ipynb", BODY)
    notebook(subs / "hardcoded" / "01_judge.ipynb", HARDCODED)
    notebook(subs / "unexportable" / "01_judge.ipynb", UNEXPORTABLE)
    teacher = tmp_path_factory.mktemp("teacher")
    (teacher / "cases.py").write_text(TEACHER_CASES)
    (teacher / "weights.csv").write_text(WEIGHTS)
    out = tmp_path_factory.mktemp("out") / "grades.csv"
    rc, printed = run_cli(subs, "--out", out, "--import", exercise_module, "--seed", 1234,
                          "--cases", teacher / "cases.py", "--weights", teacher / "weights.csv",
                          "--timeout", 60, "--cell-timeout", 20, "--memory", 1024, "--jobs", 2)
    print(printed)
    text = out.read_text()
    rows = {r["student"]: r for r in csv.DictReader(line for line in text.splitlines() if not line.startswith("#"))}
    with open(out.parent / "answers.csv", newline="") as f:
        said = list(csv.DictReader(f))
    return {"rc": rc, "printed": printed, "text": text, "rows": rows, "answers": said,
            "feedback": {p.stem: p.read_text() for p in (out.parent / "feedback").glob("*.md")}}


def test_honest_student_passes_everything(graded):
    assert graded["rc"] == 0
    honest = graded["rows"]["honest"]
    assert [honest[label] for label in LABELS] == ["passed"] * 4
    assert (honest["points"], honest["max_points"]) == ("10", "10")     # 1 + 2 (unmarked) + 5 (--weights) + 2
    assert "passed, 3 of 3 cases and 3 of 3 hidden cases" in graded["feedback"]["honest"]


def test_seed_and_weights_recorded(graded):
    first = graded["text"].splitlines()[0]
    assert first.startswith("# rnnlab grade: hidden cases from seed 1234 and cases.py")
    assert "weights.csv" in first and "--seed 1234" in first


def test_patching_the_checks_from_a_cell_passes_nothing(graded):
    row = graded["rows"]["cellpatch"]
    assert [row[label] for label in LABELS] == ["failed 0/6", "failed 1/5", "failed 0/4", "failed 0/4"]
    assert row["points"] == "0"


def test_tampering_inside_the_candidate_passes_nothing(graded):
    row = graded["rows"]["bodytamper"]
    # running() forged well-formed results: they count as its return values (right on the public
    # cases it knows), the hidden cases' expected values are the judge's own, its verdict line is ignored
    assert [row[label] for label in LABELS] == ["failed 0/6", "failed 0/5", "failed 0/4", "failed 2/4"]
    assert row["points"] == "0"
    text = graded["feedback"]["bodytamper"]
    assert "ex-j-cumsum: hidden case 1 of 2 failed: your value differs" in text
    assert "your function ended its process (exit status 0)" in text
    assert "raised SystemExit" in text


def test_hard_coded_public_answers_fail_the_hidden_cases(graded):
    row = graded["rows"]["hardcoded"]
    assert [row[label] for label in LABELS] == ["failed 3/6", "failed 3/5", "failed 2/4", "failed 2/4"]
    text = graded["feedback"]["hardcoded"]
    assert "ex-j-square: hidden case 1 of 2 failed: your value differs" in text    # the teacher's cases
    assert "3 of 3 cases and 0 of 3 hidden cases passed" in text
    assert "expected" not in text.split("ex-j-double: hidden case")[1].split("\n")[0]   # no hidden answer shown


def test_unexportable_functions_get_a_row_that_says_so(graded):
    row = graded["rows"]["unexportable"]
    assert [row[label] for label in LABELS] == ["error", "error", "passed", "not attempted"]
    assert "ex-j-double: could not be exported" in row["notes"]
    text = graded["feedback"]["unexportable"]
    assert "double could not be exported to the grader" in text and "generator" in text


def test_answers_in_words_collected(graded):
    said = {(r["student"], r["exercise"]): r for r in graded["answers"]}
    assert said["honest", "ex-j-prose"]["answer"] == "Because 2 + 2 = 4."
    assert "Why is 2 + 2 = 4?" in said["honest", "ex-j-prose"]["statement"]
    text = graded["feedback"]["honest"]
    assert "## Your answers in words" in text and "> Why is 2 + 2 = 4?" in text and "Because 2 + 2 = 4." in text


# ----------------------------------------------------------------- no kernels

def test_hidden_cases_follow_the_seed(exercise_module):
    ex = core.get("ex-j-double")
    draw = lambda seed: [c.args for c in judge.Judge([ex], seed=seed).hidden_cases(ex)]  # noqa: E731
    assert draw(5) == draw(5) != draw(6)


def test_values_come_back_as_plain_data_only():
    import numpy as np
    import torch

    value = (1, 2.5, float("nan"), 1 + 2j, "s", [True, None], {"k": np.arange(3)}, np.float32(1.5),
             torch.tensor([1 + 1j, 2j], dtype=torch.complex128), torch.ones(2, dtype=torch.float16))
    back = judge.decode(json.loads(json.dumps(candidate.encode(value))))
    assert core.close(back, value) is None and isinstance(back[8], torch.Tensor) and back[8].dtype == torch.complex128
    for bad in (object(), np.array([object()]), lambda: 1):
        with pytest.raises(candidate.Unsupported):
            candidate.encode(bad)
    for forged in ({"ndarray": {"dtype": "O", "shape": [1], "data": ""}}, {"pickle": "x"}, {"float": "1e400"},
                   {"ndarray": {"dtype": "<f8", "shape": [2], "data": "AAAAAAAAAAA="}}):
        with pytest.raises(ValueError):
            judge.decode(forged)


def test_weights(exercise_module, tmp_path):
    exs = [core.get(label) for label in LABELS]
    assert folder.weights(exs, book=None) == {"ex-j-double": 1, "ex-j-square": 2, "ex-j-cube": 3, "ex-j-cumsum": 2}
    (tmp_path / "w.json").write_text('{"ex-j-double": 4}')
    assert folder.weights(exs, tmp_path / "w.json", book=None)["ex-j-double"] == 4
    (tmp_path / "w.csv").write_text("ex-j-nope,1\n")
    with pytest.raises(ValueError, match="not an exercise being graded"):
        folder.weights(exs, tmp_path / "w.csv", book=None)
    assert [folder.difficulty_of(t) for t in ("★★ Blelloch", "★ x", "★★★ y", "Plain", "★★★★ z")] == [2, 1, 3, None,
                                                                                                        None]


def test_book_titles_agree_with_declared_difficulty():
    """The stars of a chapter's exercise title are its difficulty; where rnnlab.checks
    also declares one (for graders without the book at hand), the two agree."""
    import rnnlab.checks  # noqa: F401  (registers the chapters)

    wrong = [f"{ex.label}: title {folder.difficulty(ex)} stars, declared {ex.difficulty}"
             for ex in core.exercises() if ex.difficulty is not None and folder.difficulty(ex) != ex.difficulty]
    assert not wrong, "make difficulty= in rnnlab/checks/<chapter>.py match the title: " + "; ".join(wrong)
    assert folder.titles(folder.BOOK / "scans" / "01_associative_scan.ipynb")      # the titles are found


def test_the_chapters_hidden_cases_compute_and_differ_from_the_public_ones():
    """Every chapter exercise with a generator gets hidden cases whose reference runs, and at least
    one of them has an answer that none of the public answers matches (so hard-coding fails)."""
    import rnnlab.checks  # noqa: F401  (registers the chapters)

    exs = [ex for ex in core.exercises() if ex.hidden is not None]
    assert len(exs) >= 30
    problems = judge.Judge(exs, seed=11).prepare().problems
    assert not [p.error for p in problems.values() if p.error]
    for p in problems.values():
        public = len(p.cases) - p.hidden
        assert p.hidden >= 1
        assert any(all(p.exercise.agree(p.expected[k], p.expected[i]) is not None for k in range(public))
                   for i in range(public, len(p.cases))), p.exercise.label


def test_the_course_kit_lists_the_books_exercises():
    """book/teaching.md's exercise tables are written from the chapters (python -m rnnlab.checks.grade.kit)."""
    from rnnlab.checks.grade import kit

    page = folder.BOOK / "teaching.md"
    text = page.read_text(encoding="utf-8")
    assert text.count("<!-- exercises: ") >= 5
    assert kit.refresh(text, folder.BOOK) == text, "book/teaching.md is stale: run python -m rnnlab.checks.grade.kit"


def test_the_book_is_found_from_a_checkout_and_named_when_missing(tmp_path, monkeypatch, capsys):
    """book/ is found by what a checkout holds (_toc.yml and book/), not by the package's depth; an
    installed rnnlab run away from a checkout has none, and the commands say which option to give."""
    from rnnlab.checks.grade import kit

    root = folder.checkout()
    assert root is not None and folder.find_book() == root / "book" == folder.BOOK
    with pytest.raises(ValueError, match=r"--book .*not the book's folder of chapters"):
        folder.find_book(tmp_path)
    monkeypatch.setattr(folder, "__file__", str(tmp_path / "site-packages/rnnlab/checks/grade/folder.py"))
    monkeypatch.chdir(tmp_path)
    assert folder.checkout() is None and folder.find_book() is None
    with pytest.raises(SystemExit):
        kit.main(["--check"])
    assert "--book: no checkout of the book here" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        kit.main(["--check", "--book", str(root / "book"), "--page", str(tmp_path / "none.md")])
    err = capsys.readouterr().err
    assert "--page" in err and "no such file" in err
    assert folder.checkout(root) == root                                  # an explicit start wins
