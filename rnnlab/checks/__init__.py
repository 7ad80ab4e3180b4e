"""The classroom package: the book's exercises checked, handed out and graded.

In a chapter (or student) notebook, right after the setup cell::

    from rnnlab.checks import check
    check("ex-scans-segmented", segmented_sums)

prints ``passed``, ``not attempted yet`` or the first failing case with its
input, the expected value and yours; it never raises and never shows a
solution. The package, in the order a term uses it:

* **checks**: :mod:`.core` (exercises, cases, the verdict, ``check``) and one
  module per chapter that declares its exercises, ``rnnlab/checks/<chapter>.py``
  (:mod:`.scans`, :mod:`.lds`, :mod:`.memory`, :mod:`.contraction`,
  :mod:`.lowrank`, :mod:`.foundations`, and :mod:`.projects` for the projects' milestone
  functions; see :func:`rnnlab.checks.core.exercise`);
* **the student edition**: :mod:`.student`, the exercise convention of the
  chapter notebooks (starter, solution, check and answer cells and their tags)
  and the student notebook with every solution removed, which
  ``python -m rnnlab.book editions`` writes into ``student/``;
* **grading**: :mod:`.grade`, ``python -m rnnlab grade SUBMISSIONS/``, which
  runs each submitted notebook, judges every exercise in a process no student
  code reached, with the public and hidden cases, and writes the CSV, the
  feedback and ``answers.csv``;
* **the course kit**: :mod:`.grade.kit`, the exercise tables and weekly
  assignments of ``book/teaching.md``, written from the chapters.

``import rnnlab.checks`` imports only :mod:`.core` and the chapter modules
(NumPy; heavy imports wait inside the references): it runs in every student's
kernel. The student edition and the grading are imported when used.
"""
from .core import (Case, CheckResult, Exercise, check, close, evaluate, exercise,  # noqa: F401
                   exercises, get, reset_results, results)
from . import scans, lds, memory, contraction, lowrank, foundations, projects  # noqa: F401,E402  (each registers its chapter's exercises)

__all__ = ["check", "evaluate", "exercises", "get", "results", "reset_results",
           "Case", "CheckResult", "Exercise", "exercise", "close"]
