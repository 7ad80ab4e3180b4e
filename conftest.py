"""Loaded by every pytest run from the repository (the chapters' nbval runs and
the unit tests): nbval's kernels talk over Unix sockets, so that two notebooks
started side by side cannot pick the same TCP port (rnnlab/book/nbrun.py)."""
from rnnlab.book.nbrun import patch_nbval_kernels

patch_nbval_kernels()
