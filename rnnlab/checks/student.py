"""The student edition: the chapter notebooks with every solution removed.

The chapter notebooks are the one source. Their exercises follow one
convention (``book/teaching.md`` shows it to teachers; CONTRIBUTING.md to
authors):

* the exercise text, in a markdown ``{exercise}`` directive with a label;
* for a code exercise, a **starter** cell tagged ``exercise-starter``
  (:data:`STARTER_TAG`): the signature to fill in, whose body raises
  ``NotImplementedError``;
* the solution, either a ``{solution}`` directive (prose) or a gated
  ``{solution-start}`` ... ``{solution-end}`` pair whose cells in between
  (text and code) are the solution;
* for a code exercise, a **check** cell tagged ``exercise-check``
  (:data:`CHECK_TAG`): ``check("<label>", <function>)`` from
  :mod:`rnnlab.checks`, whose declaration of the label is in
  ``rnnlab/checks/<chapter>.py``.

:func:`student_notebook` turns a chapter notebook into its student version:
solution directives and every cell between a gated pair are removed, a prose
exercise gets an empty answer cell (tagged ``exercise-answer``,
:data:`ANSWER_TAG`) where its solution was, every output and execution count
is cleared, a code exercise gets an answer cell after its check (for the
questions it asks in words), cell metadata is reduced to tags, notebook
metadata to the kernel's, and attachments no remaining text uses are dropped.
:func:`leaks` lists whatever of a solution (or any output) is still in a
student notebook; the tests run it on every generated notebook. The grader
(:mod:`rnnlab.checks.grade`) reads the answer cells back for the teacher.

Only the standard library, and nothing of :mod:`rnnlab.book`: the book's
maintenance imports this module, never the reverse.
:mod:`rnnlab.book.editions` converts these notebooks (MyST to Markdown, with
:mod:`rnnlab.book.myst`), folds their guard and reproduction cells, shows the
figures the chapter shows, and writes them into ``student/`` (the folder the
book's "Colab (student)" launch button opens; ``python -m rnnlab.book
editions``), beside the full edition in ``full/``; a test checks that both
folders are current.
"""
from __future__ import annotations

import copy
import re

STUDENT_DIR = "student"
STARTER_TAG = "exercise-starter"
CHECK_TAG = "exercise-check"
ANSWER_TAG = "exercise-answer"

_FENCE_OPEN = re.compile(r"^\s*(?P<fence>`{3,}|:{3,})\s*\{(?P<name>[\w-]+)\}\s*(?P<arg>\S*)")
CHECK_CALL = re.compile(r"""check\(\s*["']([\w-]+)["']""")   # the labels a cell checks
_ATTACHMENT_REF = re.compile(r"attachment:([^)\s\"'>]+)")

NOTE = """\
> **Student version** of this notebook: the exercises are here, their
> solutions are not. Run the first cell, then work top to bottom (*Run all*
> works too; folded cells, titled in Colab, are guards and reproduction notes
> that run with the others). For a code exercise, fill in the function of its
> starter cell and run the check cell below it (`check(...)` prints *passed*,
> *not attempted yet*, or the first case that fails). For a derivation, write
> your answer in the cell marked *Your answer*, and save this notebook: it is
> your copy."""

ANSWER = """\
**Your answer ({label}).** *Write your derivation or explanation here.*"""

ANSWER_CODE = """\
**Your answer ({label}), in words.** *The check above tests your function; answer
the exercise's other questions, if it asks any, here.*"""


def _asks_in_words(label):
    """Whether the code exercise ``label`` asks questions in words besides its
    function (``Exercise.words``; an exercise without a check is asked in words)."""
    from . import get

    try:
        return get(label).words
    except KeyError:
        return True


def cell_source(cell):
    """A notebook cell's source as one string (nbformat stores a list of lines or a string)."""
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _lines(text):
    return text.splitlines(keepends=True)


def _closes(line, fence):
    stripped = line.strip()
    return (len(stripped) >= len(fence) and set(stripped) == {fence[0]})


class _Scanner:
    """Walks markdown text line by line, carrying the gated-solution state
    across cells. Removes ``{solution}`` blocks and everything from a
    ``{solution-start}`` to the end of its ``{solution-end}`` directive."""

    def __init__(self):
        self.gated = None            # label of the open gated solution, or None
        self.removed = []            # (label, kind) of each solution removed, in order
        self.removed_text = []       # the removed lines, for the leak check

    def _remove(self, line):
        self.removed_text.append(line if line.endswith("\n") else line + "\n")

    def markdown(self, text):
        """The text split where solutions were removed: a list of ``str``
        pieces (the text kept) and ``(label,)`` markers (a solution of that
        exercise ended here)."""
        pieces, out = [], []
        lines = _lines(text)

        def ended(label):
            pieces.append("".join(out))
            out.clear()
            pieces.append((label,))

        i = 0
        while i < len(lines):
            line = lines[i]
            m = _FENCE_OPEN.match(line)
            if self.gated is not None:
                self._remove(line)
                if m and m.group("name") == "solution-end":
                    i = self._skip_block(lines, i, m.group("fence"))
                    self.removed.append((self.gated, "gated"))
                    ended(self.gated)
                    self.gated = None
                    continue
                i += 1
                continue
            if m and m.group("name") == "solution":
                self._remove(line)
                i = self._skip_block(lines, i, m.group("fence"))
                self.removed.append((m.group("arg"), "prose"))
                ended(m.group("arg"))
                continue
            if m and m.group("name") == "solution-start":
                self._remove(line)
                i = self._skip_block(lines, i, m.group("fence"))
                self.gated = m.group("arg") or "?"
                continue
            if m and m.group("name") == "solution-end":
                raise ValueError("a {solution-end} without a {solution-start}")
            out.append(line)
            i += 1
        pieces.append("".join(out))
        return pieces

    def _skip_block(self, lines, i, fence):
        """Index after the directive that opens at ``lines[i]`` (its closing fence)."""
        j = i + 1
        while j < len(lines):
            self._remove(lines[j])
            if _closes(lines[j], fence):
                return j + 1
            j += 1
        raise ValueError(f"unclosed directive: {lines[i].strip()}")


def _clean_code_cell(cell):
    tags = list(cell.get("metadata", {}).get("tags", []))
    return {"cell_type": "code", "execution_count": None,
            "metadata": {"tags": tags} if tags else {}, "outputs": [],
            "source": cell["source"] if isinstance(cell["source"], list) else _lines(cell["source"])}


def _markdown_cell(text, attachments=None, tags=None):
    cell = {"cell_type": "markdown", "metadata": {"tags": tags} if tags else {}, "source": _lines(text)}
    if attachments:
        cell["attachments"] = attachments
    return cell


def checked_labels(nb):
    """Labels of the code exercises: those called by a check cell."""
    labels = []
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            labels += CHECK_CALL.findall(cell_source(cell))
    return labels


def student_notebook(nb, source="the chapter"):
    """The student version of chapter notebook ``nb`` (a dict; not modified).

    Returns ``(student, removed)``: the new notebook dict and the text of every
    removed solution (markdown lines and code), for :func:`leaks`."""
    code_exercises = set(checked_labels(nb))
    scanner = _Scanner()
    removed_code = []
    cells = []
    for cell in nb["cells"]:
        kind = cell["cell_type"]
        if kind == "code":
            if scanner.gated is not None:
                removed_code.append(cell_source(cell))
                continue
            cells.append(_clean_code_cell(cell))
            if CHECK_TAG in cell.get("metadata", {}).get("tags", []):
                for label in CHECK_CALL.findall(cell_source(cell)):
                    if _asks_in_words(label):
                        cells.append(_markdown_cell(ANSWER_CODE.format(label=label), tags=[ANSWER_TAG]))
            continue
        if kind == "raw":
            if scanner.gated is None:
                cells.append({"cell_type": "raw", "metadata": {}, "source": cell["source"]})
            continue
        for piece in scanner.markdown(cell_source(cell)):
            if isinstance(piece, tuple):
                if piece[0] not in code_exercises:
                    cells.append(_markdown_cell(ANSWER.format(label=piece[0]), tags=[ANSWER_TAG]))
            elif piece.strip():
                used = set(_ATTACHMENT_REF.findall(piece))
                attachments = {k: v for k, v in cell.get("attachments", {}).items() if k in used}
                cells.append(_markdown_cell(piece.strip("\n"), attachments))
    if scanner.gated is not None:
        raise ValueError(f"{source}: the gated solution {scanner.gated} has no {{solution-end}}")
    # The note goes right after the title cell (the first markdown cell).
    at = 1 if cells and cells[0]["cell_type"] == "markdown" else 0
    cells.insert(at, _markdown_cell(NOTE.format(source=source)))
    meta = {k: copy.deepcopy(v) for k, v in nb.get("metadata", {}).items()
            if k in ("kernelspec", "language_info")}
    meta["rnnlab"] = {"student": True, "source": source}
    student = {"cells": cells, "metadata": meta, "nbformat": 4,
               "nbformat_minor": nb.get("nbformat_minor", 5)}
    if student["nbformat_minor"] >= 5:
        for n, cell in enumerate(cells):
            cell["id"] = f"student-{n}"
    removed = "".join(scanner.removed_text) + "".join(c + "\n" for c in removed_code)
    return student, removed


CELL_METADATA = {"tags", "jupyter", "cellView"}
"""The cell metadata a student notebook may carry: tags, JupyterLab's folding, Colab's form view."""


def _picture(output):
    """True for an output that only shows a PNG (a figure the chapter shows, stored for reading)."""
    return (output.get("output_type") == "display_data" and set(output.get("data", {})) == {"image/png"}
            and set(output.get("metadata", {})) <= {"image/png"})


_ANY_FENCE = re.compile(r"^\s*(?P<fence>`{3,}|~{3,}|:{3,})\s*(?P<info>.*?)\s*$")
_DIRECTIVE = re.compile(r"^\{(?P<name>[\w-]+)\}")
_QUOTE = re.compile(r"^[\s>]*")


def solution_lines(nb):
    """``(inside, outside)``: the lines of notebook ``nb`` inside its solutions and
    outside them, read without the remover (:class:`_Scanner`), for :func:`leaks`.

    Each markdown cell's fences are tracked as a stack, as nested directives
    are written: a fence line with an info string (```` ```python ````,
    ```` ```{solution} ex-a ````) opens a block inside the innermost open one;
    a bare fence closes the innermost block if it has the same character and is
    at least as long, else it opens one. Inside is every line of a
    ``{solution}`` block, of a ``{solution-start}`` ... ``{solution-end}`` gate
    (its directives and the cells between them, code included), and of any
    block nested in them: a ``{solution}`` written with three backticks around
    a code fence of three backticks stays one solution here, whatever the
    remover made of it."""
    inside, outside = [], []
    gated = False
    for cell in nb.get("cells", []):
        src = cell_source(cell)
        if cell.get("cell_type") != "markdown":
            (inside if gated else outside).extend(src.splitlines())
            continue
        stack = []                      # open blocks: (fence character, length, directive name)
        for line in src.splitlines():
            in_solution = gated or any(name in ("solution", "solution-start", "solution-end")
                                       for *_, name in stack)
            m = _ANY_FENCE.match(line)
            if m is None:
                (inside if in_solution else outside).append(line)
                continue
            fence, info = m.group("fence"), m.group("info")
            if stack and not info and fence[0] == stack[-1][0] and len(fence) >= stack[-1][1]:
                *_, name = stack.pop()
                (inside if in_solution else outside).append(line)
                if name == "solution-start":
                    gated = True
                elif name == "solution-end":
                    gated = False
                continue
            d = _DIRECTIVE.match(info)
            name = d.group("name") if d else None
            stack.append((fence[0], len(fence), name))
            opens_solution = name in ("solution", "solution-start", "solution-end")
            (inside if in_solution or opens_solution else outside).append(line)
    return inside, outside


def _count(lines, line):
    """How often ``line`` occurs in ``lines`` (each stripped of indentation and
    quote marks): as a whole line, or inside one for a line of 25 characters or
    more (text a conversion may have joined to other text)."""
    if len(line) >= 25:
        return sum(x.count(line) for x in lines)
    return sum(_QUOTE.sub("", x).strip() == line for x in lines)


def leaks(student, removed, chapter=None):
    """What in ``student`` should not be there (an empty list when it is clean):
    solution directives, outputs other than a stored picture (a display of a
    PNG only: the figures the chapter shows), execution counts, metadata beyond
    tags and folding (``jupyter``, ``cellView``), widget state, unused
    attachments, and any line of a solution, however short (one with a letter
    or a digit), that appears in the student notebook more often than the
    chapter notebook ``chapter`` uses it outside its solutions (a line of setup
    code that a solution repeats is not a leak; with no ``chapter``, any is).
    The solutions' lines are those the remover recorded (``removed``) and those
    :func:`solution_lines` finds in ``chapter`` on its own, so that text the
    remover missed (and so never recorded) is still caught."""
    problems = []
    for n, cell in enumerate(student["cells"], 1):
        src = cell_source(cell)
        for line in _lines(src):
            m = _FENCE_OPEN.match(line)
            if m and m.group("name").startswith("solution"):
                problems.append(f"cell {n}: a {{{m.group('name')}}} directive")
        if any(not _picture(out) for out in cell.get("outputs", [])):
            problems.append(f"cell {n}: outputs")
        if cell.get("execution_count") is not None:
            problems.append(f"cell {n}: an execution count")
        if set(cell.get("metadata", {})) - CELL_METADATA:
            problems.append(f"cell {n}: metadata {sorted(cell['metadata'])}")
        used = set(_ATTACHMENT_REF.findall(src))
        if set(cell.get("attachments", {})) - used:
            problems.append(f"cell {n}: unused attachments")
    if set(student.get("metadata", {})) - {"kernelspec", "language_info", "rnnlab"}:
        problems.append(f"notebook metadata {sorted(student['metadata'])}")
    text = [x for c in student["cells"] for x in cell_source(c).splitlines()]
    inside, outside = solution_lines(chapter) if chapter else ([], [])
    seen = set()
    for line in [*removed.splitlines(), *inside]:
        line = _QUOTE.sub("", line).strip()
        if line in seen or not any(ch.isalnum() for ch in line):
            continue
        seen.add(line)
        allowed = _count(outside, line)
        if _count(text, line) > allowed:
            problems.append(f"solution text present: {line[:60]!r}")
    return problems
