"""The exercise convention, over every chapter notebook, and the student notebooks.

Every code exercise is: the ``{exercise}`` text, a starter cell (tag
``exercise-starter``) defining the function of its ``rnnlab.checks``
declaration with a body that raises NotImplementedError, a gated solution,
and a check cell (tags ``exercise-check`` and ``nbval-check-output``) whose
stored output says it passed. The student notebooks in ``student/`` are the
generator's output for the current chapters and leak nothing.
"""
import ast
import json
import pathlib
import re

import pytest

from rnnlab import book, checks
from rnnlab.book import editions
from rnnlab.checks import student as st

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = book.notebooks(ROOT)
IDS = [p.relative_to(ROOT / "book").with_suffix("").as_posix() for p in NOTEBOOKS]
LINE_WIDTH = 88


def _load(path):
    return json.loads(path.read_text())


def _src(cell):
    return "".join(cell["source"])


def _tags(cell):
    return cell.get("metadata", {}).get("tags", [])


def _out_text(cell):
    text = []
    for out in cell.get("outputs", []):
        if "text" in out:
            text.append("".join(out["text"]))
        elif "data" in out and "text/plain" in out["data"]:
            text.append("".join(out["data"]["text/plain"]))
    return "".join(text)


def _exercise_labels(nb):
    labels = []
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            labels += re.findall(r"\{exercise\}[^\n]*\n:label: (\S+)", _src(cell))
    return labels


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_code_exercises_follow_the_convention(path):
    nb = _load(path)
    name = path.relative_to(ROOT / "book").with_suffix("").as_posix()
    declared = {ex.label: ex for ex in checks.exercises(notebook=name)}
    labels = _exercise_labels(nb)
    checked = st.checked_labels(nb)
    assert sorted(checked) == sorted(declared), (
        f"{name}: check cells for {sorted(checked)}, rnnlab.checks declares {sorted(declared)}")
    cells = nb["cells"]
    for label, ex in declared.items():
        assert label in labels, f"{label} is declared but has no {{exercise}} in {name}"
        at = {k: i for i, c in enumerate(cells) for k in [label]
              if "exercise-check" in _tags(c) and re.search(rf"check\(\s*\"{label}\"", _src(c))}
        assert at, f"{label}: no check cell tagged exercise-check"
        check_at = at[label]
        check_cell = cells[check_at]
        assert "nbval-check-output" in _tags(check_cell), f"{label}: check cell not tagged nbval-check-output"
        assert _src(check_cell).strip() == f'from rnnlab.checks import check\ncheck("{label}", {ex.name})', (
            f"{label}: the check cell is exactly the import and the call")
        assert f"{label}: passed" in _out_text(check_cell), f"{label}: stored check output is not 'passed'"
        starters = [i for i, c in enumerate(cells[:check_at])
                    if "exercise-starter" in _tags(c) and re.search(rf"^def {ex.name}\(", _src(c), re.M)]
        assert starters, f"{label}: no starter cell defining {ex.name} before its check"
        starter = cells[starters[-1]]
        tree = ast.parse(_src(starter))
        funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
        assert [f.name for f in funcs] == [ex.name], f"{label}: the starter must define only {ex.name}"
        namespace = {}
        exec(compile(tree, f"<starter {label}>", "exec"), namespace)   # defining it runs nothing
        result = checks.evaluate(label, namespace[ex.name])
        assert result.status == "not attempted", f"{label}: starter gives {result.status}: {result.message}"
        between = "".join(_src(c) for c in cells[starters[-1]:check_at] if c["cell_type"] == "markdown")
        assert re.search(rf"\{{solution-start\}}\s+{label}", between), f"{label}: no gated solution between starter and check"
        assert not starter.get("outputs"), f"{label}: the starter cell has output"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_every_exercise_has_a_solution(path):
    nb = _load(path)
    text = "\n".join(_src(c) for c in nb["cells"] if c["cell_type"] == "markdown")
    for label in _exercise_labels(nb):
        assert re.search(rf"\{{solution(-start)?\}}\s+{label}\b", text), f"{label} has no solution"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_output_checks_are_tags_and_code_fits_the_page(path):
    nb = _load(path)
    for n, cell in enumerate(nb["cells"], 1):
        if cell["cell_type"] != "code":
            continue
        src = _src(cell)
        assert "NBVAL_" not in src, f"cell {n}: nbval markers are cell tags, not comments"
        for line in src.splitlines():
            assert len(line) <= LINE_WIDTH, f"cell {n}: a line of {len(line)} characters: {line[:50]}..."


def test_every_declared_exercise_is_in_a_notebook():
    names = set(IDS)
    for ex in checks.exercises():
        assert ex.notebook in names, f"{ex.label}: notebook {ex.notebook} does not exist"


@pytest.mark.parametrize("label", [ex.label for ex in checks.exercises()])
def test_the_reference_passes_and_wrong_answers_fail(label):
    ex = checks.get(label)
    result = checks.evaluate(label, ex.reference)
    # A few small public cases: one for an answer worked by hand, up to ten cheap ones (checks run on Colab).
    assert result.ok and 1 <= result.total <= 10, result.message
    assert result.message == f"{label}: passed, {result.total} of {result.total} cases"
    for wrong in (lambda *a, **k: None, lambda *a, **k: 0.123456, lambda *a, **k: "x"):
        result = checks.evaluate(label, wrong)
        assert result.status == "failed", result.message
        assert "case 1 of" in result.message
    result = checks.evaluate(label, lambda *a, **k: 1 / 0)
    assert result.status == "failed" and "ZeroDivisionError" in result.message


def test_student_folder_is_current():
    assert editions.stale_student_notebooks(ROOT) == []


def test_student_notebooks_leak_nothing():
    files = editions.student_files(ROOT)
    assert files
    for rel, (text, removed, chapter) in files.items():
        student = json.loads(text)
        assert st.leaks(student, removed, chapter) == [], rel
        assert student["metadata"]["rnnlab"] == {"student": True, "source": f"book/{rel}"}
        # every code exercise keeps its starter and its check; no solution directive survives
        code = [c for c in student["cells"] if c["cell_type"] == "code"]
        for label in st.checked_labels(chapter):
            assert any(re.search(rf"check\(\s*\"{label}\"", _src(c)) for c in code), (rel, label)
        assert not any("{solution" in _src(c) for c in student["cells"]), rel


def test_every_exercise_gets_an_answer_cell():
    """Prose exercises where their solution was; code exercises after their check
    (for the questions they ask in words)."""
    for rel, (text, _, chapter) in editions.student_files(ROOT).items():
        student = json.loads(text)
        answers = [re.search(r"\((ex-[\w-]+)\)", _src(c)).group(1)
                   for c in student["cells"] if st.ANSWER_TAG in _tags(c)]
        silent = {ex.label for ex in checks.exercises() if not ex.words}
        assert sorted(answers) == sorted(set(_exercise_labels(chapter)) - silent), rel


# ------------------------------------------------------------- the generator on small cases

def _nb(*cells):
    out = []
    for kind, src, *tags in cells:
        cell = {"cell_type": kind, "metadata": {"tags": tags} if tags else {}, "source": src}
        if kind == "code":
            cell.update(execution_count=3, outputs=[{"output_type": "stream", "name": "stdout",
                                                     "text": "secret 42\n"}])
        out.append(cell)
    return {"cells": out, "metadata": {"kernelspec": {"name": "python3"}, "widgets": {"state": 1}},
            "nbformat": 4, "nbformat_minor": 5}


def test_generator_removes_gated_and_prose_solutions():
    nb = _nb(("markdown", "# Title"),
             ("markdown", "```{exercise} A\n:label: ex-a\n\nWrite f.\n```"),
             ("code", "def f(x):\n    raise NotImplementedError", "exercise-starter"),
             ("markdown", "```{solution-start} ex-a\n:class: dropdown\n```\n\nThe trick is to square it carefully."),
             ("code", "def f(x):\n    return x * x  # the squared solution line"),
             ("markdown", "```{solution-end}\n```\n\n```{exercise} B\n:label: ex-b\n\nProve it.\n```\n\n"
                          "````{solution} ex-b\n:class: dropdown\n\nBy induction on the length n.\n```python\nx\n```\n````\n\nAfter."),
             ("code", "from rnnlab.checks import check\ncheck(\"ex-a\", f)", "exercise-check"))
    student, removed = st.student_notebook(nb, source="book/x/y.ipynb")
    text = json.dumps(student)
    for secret in ("square it carefully", "the squared solution line", "By induction", "secret 42",
                   "{solution", '"widgets"'):
        assert secret not in text
    kinds = [(c["cell_type"], _src(c)[:12]) for c in student["cells"]]
    assert kinds[0] == ("markdown", "# Title")
    assert "Student version" in _src(student["cells"][1])
    srcs = [_src(c) for c in student["cells"]]
    assert any(s.startswith("def f(x):\n    raise NotImplementedError") for s in srcs)
    # ex-b is prose: an answer cell right where its solution was; ex-a is a code
    # exercise: an answer cell (for questions in words) right after its check
    answers = [s for s in srcs if s.startswith("**Your answer")]
    assert answers[0] == "**Your answer (ex-b).** *Write your derivation or explanation here.*"
    assert srcs.index(answers[0]) == srcs.index("After.") - 1
    assert answers[1].startswith("**Your answer (ex-a), in words.**")
    assert srcs.index(answers[1]) == len(srcs) - 1
    assert st.leaks(student, removed, nb) == []
    assert all(c.get("outputs", []) == [] and c.get("execution_count") is None
               for c in student["cells"] if c["cell_type"] == "code")


def test_leak_check_catches_a_leak():
    nb = _nb(("markdown", "```{exercise} A\n:label: ex-a\n```"),
             ("markdown", "```{solution-start} ex-a\n```"),
             ("code", "answer = compute_the_hidden_answer(42)"),
             ("markdown", "```{solution-end}\n```"))
    student, removed = st.student_notebook(nb)
    student["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                             "source": "answer = compute_the_hidden_answer(42)"})
    assert any("solution text present" in p for p in st.leaks(student, removed, nb))
    student["cells"][-1]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "1"}]
    assert any("outputs" in p for p in st.leaks(student, removed, nb))


def test_unclosed_gated_solution_is_an_error():
    nb = _nb(("markdown", "```{solution-start} ex-a\n```"), ("code", "x = 1"))
    with pytest.raises(ValueError, match="ex-a"):
        st.student_notebook(nb)
