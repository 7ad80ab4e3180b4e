"""Sphinx extension: a second Colab launch button, for the student version.

sphinx-book-theme puts one "Colab" link in the rocket menu of every notebook
page, to ``book/<chapter>/<notebook>.ipynb`` in the repository. This adds
"Colab (student)" beside it, to the generated student notebook
``student/<chapter>/<notebook>.ipynb`` (no solutions; see
:mod:`rnnlab.book.student`), and relabels the first "Colab (full)". Enabled in
``_config.yml`` under ``sphinx.extra_extensions``.
"""
from .student import STUDENT_DIR


def student_url(full_url):
    """The Colab URL of the student notebook for the Colab URL of a chapter
    notebook (``.../blob/<branch>/book/x/y.ipynb`` -> ``.../blob/<branch>/student/x/y.ipynb``),
    or None when the URL is not a chapter notebook's."""
    head, sep, tail = full_url.partition("/book/")
    if not sep or "/blob/" not in head or not tail.endswith(".ipynb"):
        return None
    return f"{head}/{STUDENT_DIR}/{tail}"


def add_student_launch(app, pagename, templatename, context, doctree):
    for group in context.get("header_buttons", []):
        if group.get("label") != "launch-buttons":
            continue
        buttons = group.get("buttons", [])
        for i, button in enumerate(list(buttons)):
            if button.get("text") != "Colab" or not button.get("url"):
                continue
            url = student_url(button["url"])
            if url is None:
                continue
            button["text"] = "Colab (full)"
            button["tooltip"] = "Launch the chapter with its solutions on Colab"
            buttons.insert(i + 1, {**button, "text": "Colab (student)", "url": url,
                                   "tooltip": "Launch the student version (exercises, no solutions) on Colab"})
            return


def setup(app):
    # After sphinx-book-theme's add_launch_buttons (priority 501).
    app.connect("html-page-context", add_student_launch, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
