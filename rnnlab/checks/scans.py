"""The code exercises of the scans chapter (book/scans/), declared for rnnlab.checks."""
from .core import Case, exercise  # noqa: F401
