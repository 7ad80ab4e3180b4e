"""A property of ``python -m rnnlab grade`` over arbitrary submissions (hypothesis, issue 38).

Whatever the folder holds (folder names in any bytes, files that are notebooks
or not, notebook JSON of any shape, cells of any kind and content), the grader
finishes within its limits, exits 0 and writes one CSV row and one feedback
file per student. Cheap on purpose: few examples, tiny notebooks, short time
limits; a kernel runs only for the examples that hold a readable notebook.
"""
import contextlib
import csv
import io
import json
import math
import os
import shutil
import sys
import tempfile
import time

import pytest

pytest.importorskip("nbclient")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, example, given, settings, strategies as st  # noqa: E402

from rnnlab.__main__ import main as cli  # noqa: E402
from rnnlab.checks import core  # noqa: E402
from rnnlab.checks.grade import sandbox  # noqa: E402

UNSAFE = [] if sandbox.available() else ["--unsafe"]
MODULE = "rnnlab_gradetest_property"
EXERCISES = '''
from rnnlab.checks.core import Case, exercise
exercise("ex-p-double", notebook="testp/01_any", name="double", signature="double(x)",
         reference=lambda x: 2 * x, cases=lambda: [Case((v,)) for v in (1, -2)])
'''
TIMEOUT, CELL_TIMEOUT, JOBS = 20, 4, 2

SNIPPETS = ["def double(x):\n    return 2 * x", "def double(x):\n    return x", "1 / 0", "double = 3",
            "import os\nos._exit(3)", "print('x' * 10000)", "def double(x):\n    return float('nan')",
            "import time\ntime.sleep(60)", "%pip install nothing", "raise SystemExit"]
json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                           | st.text(max_size=20), lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)
cells = st.fixed_dictionaries({
    "cell_type": st.sampled_from(["code", "markdown", "raw", "nonsense"]),
    "source": st.one_of(st.sampled_from(SNIPPETS), st.text(max_size=60), st.lists(st.text(max_size=20), max_size=3),
                        json_values),
    "metadata": st.one_of(st.fixed_dictionaries({"tags": st.lists(st.sampled_from(
        ["exercise-answer", "x"]), max_size=2)}), json_values)})
notebooks = st.one_of(
    st.fixed_dictionaries({"nbformat": st.just(4), "nbformat_minor": st.just(5), "cells": st.lists(cells, max_size=4),
                           "metadata": st.one_of(st.just({"rnnlab": {"source": "book/testp/01_any.ipynb"}}),
                                                 json_values)}),
    json_values)
contents = st.one_of(notebooks.map(lambda nb: json.dumps(nb).encode()), st.binary(max_size=200))
names = st.binary(min_size=1, max_size=12).filter(
    lambda b: b"/" not in b and b"\0" not in b and not b.startswith((b".", b"__")))
files = st.dictionaries(st.one_of(st.sampled_from([b"01_any.ipynb", b"notes.txt"]), names.map(lambda b: b + b".ipynb")),
                        contents, min_size=1, max_size=2)
folders = st.dictionaries(names, files, min_size=1, max_size=2)


@settings(max_examples=4, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(submissions=folders)
@example(submissions={b"caf\xe9 =1+1": {b"01_any.ipynb": json.dumps({
    "nbformat": 4, "nbformat_minor": 5, "metadata": {"rnnlab": {"source": "book/testp/01_any.ipynb"}},
    "cells": [{"cell_type": "code", "source": SNIPPETS[0], "metadata": {}}]}).encode()},
    b"caf\xe8 =1+1": {b"x.ipynb": b"[" * 5000}})
def test_the_grader_always_finishes_with_one_row_per_student(exercise_module, submissions):
    root = tempfile.mkdtemp(prefix="rnnlab-property-")
    try:
        subs = os.path.join(os.fsencode(root), b"subs")
        os.mkdir(subs)
        notebooks_ = 0
        for student, content in submissions.items():
            os.mkdir(os.path.join(subs, student))
            for name, data in content.items():
                with open(os.path.join(subs, student, name), "wb") as f:
                    f.write(data)
                notebooks_ += name.endswith(b".ipynb")
        out = os.path.join(root, "out", "grades.csv")
        began = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            rc = cli(["grade", os.fsdecode(subs), "--out", out, "--import", exercise_module, "--seed", "1",
                      "--notebooks", "testp/01_any", "--timeout", str(TIMEOUT), "--cell-timeout", str(CELL_TIMEOUT),
                      "--jobs", str(JOBS), *UNSAFE])
        seconds = time.perf_counter() - began
        assert rc == 0
        limit = 60 + (TIMEOUT + 2 * CELL_TIMEOUT + 60) * math.ceil(notebooks_ / JOBS)
        assert seconds < limit, (seconds, limit)
        with open(out, encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
        assert len(rows) == len(submissions)
        assert len({row["student"] for row in rows}) == len(submissions)
        assert len(os.listdir(os.path.join(root, "out", "feedback"))) == len(submissions)
    finally:
        shutil.rmtree(root, ignore_errors=True)
