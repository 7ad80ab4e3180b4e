"""Auto-checks for the book's code exercises.

In a chapter (or student) notebook, right after the setup cell::

    from rnnlab.checks import check
    check("ex-scans-segmented", segmented_sums)

prints ``passed``, ``not attempted yet`` or the first failing case with its
input, the expected value and yours; it never raises and never shows a
solution. Each chapter declares its exercises in ``rnnlab/checks/<chapter>.py``
(see :func:`rnnlab.checks.core.exercise`); ``python -m rnnlab grade`` uses the
same declarations to grade a folder of submitted notebooks.
"""
from .core import (Case, CheckResult, Exercise, check, close, evaluate, exercise,  # noqa: F401
                   exercises, get, reset_results, results)
from . import scans, lds, memory, contraction, lowrank, foundations  # noqa: F401,E402  (each registers its chapter's exercises)

__all__ = ["check", "evaluate", "exercises", "get", "results", "reset_results",
           "Case", "CheckResult", "Exercise", "exercise", "close"]
