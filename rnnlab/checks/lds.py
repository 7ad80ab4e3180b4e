"""The code exercises of the lds chapter (book/lds/), declared for rnnlab.checks."""
from .core import Case, exercise  # noqa: F401
