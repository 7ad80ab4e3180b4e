"""The code exercises of the contraction chapter (book/contraction/), declared for rnnlab.checks."""
from .core import Case, exercise  # noqa: F401
