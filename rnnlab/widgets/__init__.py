"""Interactive widgets of the book, one module per chapter topic.

Every module follows one convention: a builder returning an ``ipywidgets``
widget, and ``static_figure(...)`` returning a matplotlib ``Figure`` of the
widget's *default* state. The online book cannot run a kernel, so each
chapter shows the static figure first and the live widget after it.

Figures are built with :class:`matplotlib.figure.Figure` rather than pyplot,
so returning one from a cell displays it exactly once and nothing is left
open in pyplot's figure manager.

The builders use only the ipywidgets API that versions 7.7 and 8 share (Colab
preinstalls 7.7.1; a notebook must not upgrade it): standard controls with
``value``, ``description``, ``options`` as values or ``(label, value)`` pairs,
``Layout(width=...)``, ``observe(..., names="value")``, ``VBox``/``HBox`` and
an ``Output`` that the callbacks draw into with ``display``. Nothing of 8 only
(``description_allow_html``, ``Layout`` or ``style`` traits added in 8, the
``TagsInput``/``Stack`` widgets). ``make test-widgets-ipywidgets7`` runs the
widget tests under 7.7.1, ``make test-unit`` under 8.
"""
from . import scan
from . import contraction  # noqa: E402  (chapter: contraction analysis)

__all__ = ["scan"]
