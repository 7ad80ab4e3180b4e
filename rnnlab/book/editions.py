"""The notebook editions that Colab and Jupyter open: ``full/`` and ``student/``.

The chapter notebooks under ``book/`` are MyST, which only the online book
renders. ``python -m rnnlab.book editions`` writes, for every chapter
notebook ``book/<chapter>/<nb>.ipynb``:

* ``full/<chapter>/<nb>.ipynb``, the **full edition**: every markdown cell
  converted by :mod:`rnnlab.book.myst` (numbered theorems and exercises,
  citations, cross-references, figures as PNGs at the repository's URL), the
  solutions as collapsed ``<details>`` blocks and the solution code cells
  folded (their source hidden in JupyterLab, a form titled "Solution to
  Exercise N" in Colab) and placed **after** the exercise's check, so that
  *Run all* checks the reader's starter, not the solution;
* ``student/<chapter>/<nb>.ipynb``, the **student edition**: the same
  conversion of the student notebook of :mod:`rnnlab.checks.student` (no
  solution anywhere; starters, checks, answer cells), exercises numbered
  within the notebook.

In both, guard and reproduction cells (tags ``hide-input``, ``remove-input``,
``hide-cell``) are folded: JupyterLab's ``source_hidden`` and Colab's form
view, titled by the cell's first comment. A reader sees the pictures before
running anything: the figures of the chapter's ``{figure}`` directives as
images, and the stored picture of every captioned code-cell figure and of the
static figure before each widget (only its PNG output; no other output is
kept); a short note before each widget cell says what running it shows.

The *Colab (full)* and *Colab (student)* buttons of every chapter page open
them (:mod:`rnnlab.book.launch`). Both folders are committed and never edited
by hand; a test checks that they are current (:func:`stale_editions`).

Imports go one way: this module uses :mod:`rnnlab.checks.student` (which
imports nothing of :mod:`rnnlab.book`).
"""
from __future__ import annotations

import copy
import json
import pathlib

from ..checks.student import CHECK_TAG, STUDENT_DIR, leaks, student_notebook
from .maintenance import SETUP_MARKER, notebooks
from .myst import BookIndex, Context, MystError, code_cell_figure, convert, solution_title

FULL_DIR = "full"
EDITIONS = {"full": FULL_DIR, "student": STUDENT_DIR}
KEEP_TAGS = ("hide-input", "remove-input", "hide-cell", "remove-cell", "hide-output", "remove-output")
FOLD_TAGS = ("hide-input", "remove-input", "hide-cell")
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

FULL_NOTE = """\
> **Full edition** of the chapter notebook `{source}`, for Jupyter and Colab:
> the exercises with their solutions, folded (click *Solution to Exercise N*
> to open one) and placed after each exercise's check, so that *Run all*
> checks your own function first. Run the first cell, then work top to
> bottom. The student edition, without solutions, is `{student}`. Generated
> by `python -m rnnlab.book editions`: edit the chapter notebook, not this file."""

WIDGET_NOTE = """\
**Interactive figure.** The next cell shows {what} with controls (sliders,
buttons) to change it. Run it to use them: it needs a running kernel (Jupyter,
Colab, VS Code); a viewer without one, such as GitHub's, shows nothing there."""


def _source(cell):
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _lines(text):
    return text.splitlines(keepends=True)


def _markdown(text, attachments=None, tags=None):
    cell = {"cell_type": "markdown", "metadata": {"tags": list(tags)} if tags else {}, "source": _lines(text)}
    if attachments:
        cell["attachments"] = attachments
    return cell


def _doc(rel):
    """``book/x/y`` for the notebook path ``x/y.ipynb`` relative to book/."""
    return "book/" + rel.removesuffix(".ipynb")


def convert_markdown_cell(cell, ctx: Context):
    """The converted copy of one markdown cell (figures are URLs: no attachment is carried)."""
    ctx.attachments = {}
    text = convert(_source(cell), ctx)
    if "attachment:" in text or ctx.attachments:
        raise MystError(f"{ctx.where}: a cell attachment (Colab shows none): use a {{figure}} with a file "
                        "under the chapter's figures/")
    tags = cell.get("metadata", {}).get("tags")
    return _markdown(text, None, tags) if text.strip() else None


def figure_caption_cell(figure, ctx: Context):
    """The markdown cell that follows a code cell whose output the book shows as a numbered figure
    (myst-nb's ``mystnb.figure`` metadata): "*Figure N.* caption", or None without a caption."""
    caption = str(figure.get("caption", "")).strip()
    if not caption:
        return None
    t = ctx.index.targets.get(figure.get("name") or "")
    head = f"Figure {t.number}" if t is not None and t.number else "Figure"
    ctx.attachments = {}
    return _markdown(f"*{head}.* " + convert(caption, ctx).strip())


# --------------------------------------------------------------------------- pictures before running

def _pictures(cell):
    """The PNG outputs of a code cell, as display outputs holding only the PNG."""
    out = []
    for o in cell.get("outputs", []):
        png = o.get("data", {}).get("image/png")
        if png is not None:
            meta = {k: v for k, v in (o.get("metadata") or {}).items() if k == "image/png"}
            out.append({"output_type": "display_data", "data": {"image/png": png}, "metadata": meta})
    return out


def _is_widget(cell):
    return any(WIDGET_MIME in o.get("data", {}) for o in cell.get("outputs", []))


def shown_outputs(nb):
    """``({cell index: outputs to store}, {widget cell index: what it shows})`` for a chapter
    notebook: the PNG of every captioned code-cell figure, and of the static figure among the two
    code cells before each widget cell (each widget of the book has one)."""
    keep, widgets = {}, {}
    code = [(i, c) for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"]
    for k, (i, c) in enumerate(code):
        figure = code_cell_figure(c)
        if figure is not None and str(figure.get("caption", "")).strip() and _pictures(c):
            keep[i] = _pictures(c)
        if _is_widget(c):
            widgets[i] = "an interactive version of this figure"
            for j, prev in reversed(code[max(0, k - 2):k]):
                if _pictures(prev) and not _is_widget(prev):
                    keep[j] = _pictures(prev)
                    widgets[i] = "an interactive version of the figure above"
                    break
            else:
                widgets[i] = "an interactive figure"
    return keep, widgets


# --------------------------------------------------------------------------- code cells

def _fold(source):
    """``source`` with a Colab form title: its first comment line becomes ``# @title ...``."""
    lines = source.split("\n")
    first = lines[0].strip() if lines else ""
    if first.startswith("#") and not first.startswith(SETUP_MARKER) and not first.startswith("# @title"):
        title = first.lstrip("#").strip()
        return "\n".join([f"# @title {title}"] + lines[1:])
    if first.startswith("# @title"):
        return source
    return "# @title (folded: part of the page's checks; it runs with the others)\n" + source


def _code_cell(cell, solution_of=None, outputs=()):
    tags = list(cell.get("metadata", {}).get("tags", []))
    source = _source(cell)
    meta = {"tags": tags} if tags else {}
    if solution_of is not None:
        # Colab shows a cell in "form" view as its @title, the code folded; JupyterLab folds source_hidden.
        source = f"# @title {solution_of} (the code)\n" + source
    elif any(t in tags for t in FOLD_TAGS):
        source = _fold(source)
    if solution_of is not None or any(t in tags for t in FOLD_TAGS):
        meta["cellView"] = "form"
        meta["jupyter"] = {"source_hidden": True}
    return {"cell_type": "code", "execution_count": None, "metadata": meta, "outputs": list(outputs),
            "source": _lines(source)}


def _is_solution(cell):
    """A cell that is all solution: a solution's code, or a markdown cell that is one <details> block."""
    if cell["cell_type"] == "code":
        return _source(cell).startswith("# @title Solution to ")
    text = _source(cell).strip()
    return (cell["cell_type"] == "markdown" and text.startswith("<details>\n<summary><b>Solution to ")
            and text.endswith("</details>") and text.count("<details>") == 1)


def checks_before_solutions(cells):
    """``cells`` with each exercise check moved before the solution cells right above it: *Run all*
    then runs the check on the reader's starter (it prints "not attempted yet"), then the solution
    (which the cells below may use)."""
    out = []
    for cell in cells:
        if cell["cell_type"] == "code" and CHECK_TAG in cell.get("metadata", {}).get("tags", []):
            at = len(out)
            while at > 0 and _is_solution(out[at - 1]):
                at -= 1
            out.insert(at, cell)
        else:
            out.append(cell)
    return out


def _with_widget_notes(cells, notes):
    """``cells`` (pairs of a cell and its chapter cell index or None) with a note before each widget."""
    out = []
    for cell, index in cells:
        if index in notes:
            out.append(_markdown(WIDGET_NOTE.format(what=notes[index])))
        out.append(cell)
    return out


# --------------------------------------------------------------------------- the editions

def full_edition(nb, rel, index):
    """The full edition of chapter notebook ``nb`` (``rel``: its path under book/)."""
    doc = _doc(rel)
    ctx = Context(index, doc, solutions=True)
    keep, widgets = shown_outputs(nb)
    cells = []                      # (cell, chapter cell index or None)
    for n, cell in enumerate(nb["cells"], 1):
        ctx.where = f"book/{rel}, cell {n}"
        if cell["cell_type"] == "markdown":
            out = convert_markdown_cell(cell, ctx)
            if out is not None:
                cells.append((out, None))
        elif cell["cell_type"] == "code":
            title = solution_title(ctx.gated, ctx) if ctx.gated is not None else None
            cells.append((_code_cell(cell, title, keep.get(n - 1, ())), n - 1))
            figure = code_cell_figure(cell)
            if figure is not None and figure_caption_cell(figure, ctx) is not None:
                cells.append((figure_caption_cell(figure, ctx), None))
        else:
            cells.append(({"cell_type": "raw", "metadata": {}, "source": cell["source"]}, None))
    if ctx.gated is not None:
        raise MystError(f"book/{rel}: the gated solution {ctx.gated} has no {{solution-end}}")
    cells = checks_before_solutions(_with_widget_notes(cells, widgets))
    at = 1 if cells and cells[0]["cell_type"] == "markdown" else 0
    cells.insert(at, _markdown(FULL_NOTE.format(source=f"book/{rel}", student=f"{STUDENT_DIR}/{rel}")))
    return _notebook(nb, cells, {"edition": "full", "source": f"book/{rel}"})


def local_exercise_numbers(index, doc):
    """``{label: n}``: the exercises of page ``doc`` numbered 1, 2, ... in the page's order."""
    mine = sorted((t.number, label) for label, t in index.targets.items()
                  if t.doc == doc and t.kind == "Exercise" and t.number is not None)
    return {label: k for k, (_, label) in enumerate(mine, 1)}


def student_edition(nb, rel, index):
    """``(student edition, removed solution text)`` of chapter notebook ``nb``."""
    student, removed = student_notebook(nb, source=f"book/{rel}")
    doc = _doc(rel)
    ctx = Context(index, doc, solutions=False, local_numbers=local_exercise_numbers(index, doc))
    keep, widgets = shown_outputs(nb)
    # The student notebook keeps only tags: its code cells are matched to the chapter's by source.
    chapter_index = {}
    for i, c in enumerate(nb["cells"]):
        if c["cell_type"] == "code":
            chapter_index.setdefault(_source(c), i)
    cells = []
    for n, cell in enumerate(student["cells"], 1):
        ctx.where = f"{STUDENT_DIR}/{rel}, cell {n}"
        if cell["cell_type"] == "markdown":
            out = convert_markdown_cell(cell, ctx)
            if out is not None:
                cells.append((out, None))
        elif cell["cell_type"] == "code":
            i = chapter_index.get(_source(cell))
            cells.append((_code_cell(cell, None, keep.get(i, ())), i))
            figure = code_cell_figure(nb["cells"][i]) if i is not None else None
            if figure is not None and figure_caption_cell(figure, ctx) is not None:
                cells.append((figure_caption_cell(figure, ctx), None))
        else:
            cells.append((cell, None))
    meta = dict(student["metadata"])
    return _notebook(student, _with_widget_notes(cells, widgets), meta.pop("rnnlab")), removed


def _notebook(nb, cells, rnnlab_meta):
    meta = {k: copy.deepcopy(v) for k, v in nb.get("metadata", {}).items() if k in ("kernelspec", "language_info")}
    meta["rnnlab"] = rnnlab_meta
    out = {"cells": cells, "metadata": meta, "nbformat": 4, "nbformat_minor": nb.get("nbformat_minor", 5)}
    if out["nbformat_minor"] >= 5:
        prefix = "student" if rnnlab_meta.get("student") else "full"
        for n, cell in enumerate(cells):
            cell["id"] = f"{prefix}-{n}"
    return out


def dump(nb):
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def edition_files(root=".", editions=("full", "student"), index=None):
    """``{(edition, path under its folder): (text, removed solution text, chapter notebook)}``
    for every chapter notebook, as :func:`write_editions` writes them."""
    root = pathlib.Path(root)
    index = index or BookIndex(root)
    out = {}
    for path in notebooks(root):
        rel = path.relative_to(root / "book").as_posix()
        nb = json.loads(path.read_text(encoding="utf8"))
        if "full" in editions:
            out["full", rel] = (dump(full_edition(nb, rel, index)), "", nb)
        if "student" in editions:
            student, removed = student_edition(nb, rel, index)
            out["student", rel] = (dump(student), removed, nb)
    return out


def _check_leaks(files):
    problems = []
    for (edition, rel), (text, removed, chapter) in files.items():
        if edition == "student":
            problems += [f"{STUDENT_DIR}/{rel}: {p}" for p in leaks(json.loads(text), removed, chapter)]
    if problems:
        raise ValueError("student notebooks would leak:\n" + "\n".join(problems))


def write_editions(root=".", editions=("full", "student"), out=None):
    """Write the editions under ``root`` (or ``out``, a folder that takes the edition folders),
    remove stale notebooks there, return the paths written."""
    root = pathlib.Path(root)
    base = pathlib.Path(out) if out is not None else root
    files = edition_files(root, editions)
    _check_leaks(files)
    written = []
    for (edition, rel), (text, _, _) in files.items():
        path = base / EDITIONS[edition] / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf8") != text:
            path.write_text(text, encoding="utf8")
        written.append(path)
    for edition in editions:
        folder = base / EDITIONS[edition]
        for stale in folder.rglob("*.ipynb"):
            if (edition, stale.relative_to(folder).as_posix()) not in files and ".ipynb_checkpoints" not in stale.parts:
                stale.unlink()
    return written


def stale_editions(root=".", editions=("full", "student")):
    """Problems with the committed edition folders: missing, stale or extra notebooks."""
    root = pathlib.Path(root)
    files = edition_files(root, editions)
    problems = []
    for (edition, rel), (text, _, _) in files.items():
        path = root / EDITIONS[edition] / rel
        if not path.exists():
            problems.append(f"{EDITIONS[edition]}/{rel} is missing")
        elif path.read_text(encoding="utf8") != text:
            problems.append(f"{EDITIONS[edition]}/{rel} is stale")
    for edition in editions:
        folder = root / EDITIONS[edition]
        if folder.exists():
            for path in folder.rglob("*.ipynb"):
                if (edition, path.relative_to(folder).as_posix()) not in files:
                    problems.append(f"{EDITIONS[edition]}/{path.relative_to(folder).as_posix()} has no chapter notebook")
    if problems:
        problems.append("run `python -m rnnlab.book editions` (or `make editions`)")
    return problems


# --------------------------------------------------------------------------- the student half

def student_files(root="."):
    """``{path under student/: (notebook text, removed solution text, chapter notebook)}`` for every
    chapter notebook, as :func:`write_editions` writes the student edition."""
    return {rel: v for (_, rel), v in edition_files(root, ("student",)).items()}


def write_student_notebooks(out, root="."):
    """Write the student edition of every chapter notebook under ``out``
    (``out/<chapter>/<notebook>.ipynb``), remove stale ones there, and return
    the paths written. Raises ValueError if any would leak a solution."""
    out = pathlib.Path(out)
    files = edition_files(root, ("student",))
    _check_leaks(files)
    written = []
    for (_, rel), (text, _, _) in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf8") != text:
            path.write_text(text, encoding="utf8")
        written.append(path)
    for stale in out.rglob("*.ipynb"):
        if ("student", stale.relative_to(out).as_posix()) not in files and ".ipynb_checkpoints" not in stale.parts:
            stale.unlink()
    return written


def stale_student_notebooks(root="."):
    """Problems with the committed ``student/`` folder: missing, stale or extra files."""
    return stale_editions(root, ("student",))
