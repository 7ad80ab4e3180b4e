"""The Gradescope autograder (rnnlab.course.gradescope): the bundle, and run_autograder's work in a
folder laid out as Gradescope's /autograder (source, submission, results), for an honest, a wrong and a
hostile submission. Exercises of the test's own (``EXERCISES``), so it does not depend on the book."""
from __future__ import annotations

import json
import os
import zipfile

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from rnnlab.checks.grade import sandbox
from rnnlab.course import gradescope

MODULE = "rnnlab_gradescope_exercises"
EXERCISES = '''
from rnnlab.checks.core import Case, exercise

def _double(x):
    return 2 * x

def _square(x):
    return x * x

exercise("ex-gs-double", notebook="gsch/01_first", name="double", signature="double(x)",
         reference=_double, cases=lambda: [Case((v,)) for v in (1, 2, -3)],
         hidden=lambda rng: [Case((float(v),)) for v in rng.normal(size=3)])
exercise("ex-gs-square", notebook="gsch/01_first", name="square", signature="square(x)",
         reference=_square, cases=lambda: [Case((v,)) for v in (0, 1, 2)],
         hidden=lambda rng: [Case((float(v),)) for v in rng.normal(size=3) + 5])
'''
DOUBLE = "def double(x):\n    return 2 * x"
SQUARE = "def square(x):\n    return x * x"
# right on the public cases (0, 1, 2) and wrong on every hidden one (around 5)
SQUARE_PUBLIC_ONLY = "def square(x):\n    return {0: 0, 1: 1, 2: 4}.get(x, 0)"
HOSTILE = '''\
import glob, json, os
for path in glob.glob("/tmp/**/source/config.json", recursive=True) + glob.glob("/tmp/**/results.json", recursive=True):
    try:
        open(path, "w").write(json.dumps({"score": 100}))
    except OSError:
        pass
def double(x):
    return 2 * x'''


def _notebook(path, *sources):
    path.parent.mkdir(parents=True, exist_ok=True)
    nb = new_notebook(cells=[new_code_cell(s) for s in sources],
                      metadata={"rnnlab": {"student": True, "source": "book/gsch/01_first.ipynb"}})
    nbformat.write(nb, str(path))


@pytest.fixture(scope="module")
def bundle_zip(exercise_module, tmp_path_factory):
    folder = tmp_path_factory.mktemp("bundle")
    module_file = next(p for p in map(lambda d: os.path.join(d, f"{MODULE}.py"),
                                      os.environ["PYTHONPATH"].split(os.pathsep)) if os.path.isfile(p))
    out = folder / "autograder.zip"
    config = gradescope.bundle(out, ["gsch/01_first"], 11, exercises=module_file, ref="v1.0",
                               timeout=60, cell_timeout=30, allow_unsafe=not sandbox.available())
    return out, config


def test_the_bundle_holds_what_gradescope_runs(bundle_zip):
    out, config = bundle_zip
    with zipfile.ZipFile(out) as z:
        names = set(z.namelist())
        assert {"setup.sh", "run_autograder", "config.json", f"{MODULE}.py"} <= names
        for script in ("setup.sh", "run_autograder"):
            mode = z.getinfo(script).external_attr >> 16
            assert mode & 0o111, f"{script} is not executable"
        setup = z.read("setup.sh").decode()
        assert "bubblewrap" in setup and "@v1.0" in setup and "download.pytorch.org/whl/cpu" in setup
        assert "rnnlab.course.gradescope run" in z.read("run_autograder").decode()
        assert json.loads(z.read("config.json")) == config
    assert config["seed"] == 11 and config["notebooks"] == ["gsch/01_first"]
    assert config["hidden_visibility"] == "after_due_date"


@pytest.mark.parametrize("bad, match", [
    (dict(notebooks=[]), "notebooks: name at least one"),
    (dict(notebooks=["nowhere/00_x"]), "notebooks: no exercises in nowhere/00_x"),
    (dict(seed=-1), "seed: a non-negative integer"),
    (dict(hidden_visibility="later"), "hidden_visibility: one of"),
    (dict(cases="/no/such/cases.py"), "cases: no file /no/such/cases.py"),
])
def test_bad_input_is_named(exercise_module, tmp_path, bad, match):
    kwargs = dict(notebooks=["gsch/01_first"], seed=1)
    kwargs.update(bad)
    notebooks, seed = kwargs.pop("notebooks"), kwargs.pop("seed")
    with pytest.raises(ValueError, match=match):
        gradescope.bundle(tmp_path / "a.zip", notebooks, seed, **kwargs)


def _autograde(bundle, tmp_path, *sources, name="01_first.ipynb"):
    """Lay out /autograder as Gradescope does, run run_autograder's command, return results.json."""
    root = tmp_path / "autograder"
    with zipfile.ZipFile(bundle) as z:
        z.extractall(root / "source")
    if sources:
        _notebook(root / "submission" / name, *sources)
    else:
        (root / "submission").mkdir(parents=True)
    assert gradescope.main(["run", "--source", str(root / "source"), "--submission", str(root / "submission"),
                            "--results", str(root / "results" / "results.json")]) == 0
    return json.loads((root / "results" / "results.json").read_text())


def _tests(results):
    assert "score" not in results          # Gradescope sums the tests, each shown as its visibility says
    return {t["name"]: t for t in results["tests"]}


def _total(results):
    return sum(t["score"] for t in results["tests"])


def test_honest_wrong_and_hostile_submissions(bundle_zip, tmp_path):
    bundle, _ = bundle_zip
    honest = _autograde(bundle, tmp_path / "honest", DOUBLE, SQUARE)
    tests = _tests(honest)
    assert _total(honest) == 4.0          # two ★★ exercises (no stars in a book: 2 points each)
    for label in ("ex-gs-double", "ex-gs-square"):
        assert tests[f"{label}: public cases"]["status"] == "passed"
        assert tests[f"{label}: public cases"]["visibility"] == "visible"
        scored = tests[f"{label}: all cases, public and hidden"]
        assert (scored["score"], scored["max_score"], scored["visibility"]) == (2.0, 2.0, "after_due_date")

    wrong = _autograde(bundle, tmp_path / "wrong", DOUBLE, SQUARE_PUBLIC_ONLY)
    tests = _tests(wrong)
    assert _total(wrong) == 2.0
    public = tests["ex-gs-square: public cases"]
    assert public["status"] == "passed" and "hidden" not in public["output"].split("(")[0]
    assert "of 3 hidden" not in public["output"]          # nothing of the hidden cases before the deadline
    scored = tests["ex-gs-square: all cases, public and hidden"]
    assert scored["score"] == 0.0 and scored["visibility"] == "after_due_date" and "hidden case" in scored["output"]

    if not sandbox.available():     # without the sandbox the hostile notebook would reach these files
        return
    hostile = _autograde(bundle, tmp_path / "hostile", HOSTILE)
    tests = _tests(hostile)
    assert _total(hostile) == 2.0                      # its double is right; it wrote no results of its own
    assert tests["ex-gs-square: public cases"]["status"] == "failed"
    assert json.loads((tmp_path / "hostile" / "autograder" / "source" / "config.json").read_text())["seed"] == 11


def test_a_submission_without_a_notebook_gets_results_that_say_so(bundle_zip, tmp_path):
    bundle, _ = bundle_zip
    results = _autograde(bundle, tmp_path)
    assert results["score"] == 0.0 and results["tests"] == []
    assert "no Jupyter notebook" in results["output"]


def test_public_part_hides_the_hidden_cases():
    message = "ex-a: hidden case 2 of 3 failed: your value differs\n  3 of 3 cases and 1 of 3 hidden cases passed"
    ok, text = gradescope.public_part(message, "failed 4/6")
    assert ok and "1 of 3" not in text and "hidden case 2" not in text
    message = "ex-a: case 1 of 3 failed: for x=0, expected 0, got 1\n  2 of 3 cases and 3 of 3 hidden cases passed"
    ok, text = gradescope.public_part(message, "failed 5/6")
    assert not ok and "case 1 of 3 failed" in text and "hidden" not in text
