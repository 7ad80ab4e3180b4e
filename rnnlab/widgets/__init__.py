"""Interactive widgets of the book, one module per chapter topic.

Every module follows one convention: a builder returning an ``ipywidgets``
widget, and ``static_figure(...)`` returning a matplotlib ``Figure`` of the
widget's *default* state. The online book cannot run a kernel, so each
chapter shows the static figure first and the live widget after it.

Figures are built with :class:`matplotlib.figure.Figure` rather than pyplot,
so returning one from a cell displays it exactly once and nothing is left
open in pyplot's figure manager.
"""
from . import scan
from . import contraction  # noqa: E402  (chapter: contraction analysis)

__all__ = ["scan"]
