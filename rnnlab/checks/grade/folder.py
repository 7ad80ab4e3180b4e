"""The folder and CSV side of grading: find the notebooks, name them, write what a teacher reads.

:func:`collect` and :func:`load` read the submissions folder (never writing
into it), :func:`identify` tells which chapter notebook a file is, :func:`plan`
lists what will run; :func:`answers` collects the prose answers (cells tagged
``exercise-answer`` in the student notebooks); :func:`weights` gives each
exercise its points; :func:`table`, :func:`feedback` and :func:`answers_table`
write the grades CSV, one markdown file per student and ``answers.csv``.
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
from pathlib import Path

from ..._io import atomic_write_text
from ..student import ANSWER_TAG
from .kernel import CHECKS, DEFINES

RANK = {"passed": 5, "failed": 4, "not attempted": 3, "timeout": 2, "error": 1, "missing": 0}
DEFAULT_DIFFICULTY = 2       # an exercise whose title has no stars yet counts as ★★
ANSWER_HEAD = re.compile(r"^\s*\*\*Your answer \((?P<label>[\w-]+)\)[^*]*\*\*\s*(?:\*[^*]*\*)?", re.I)
LABEL_LINE = re.compile(r"^\s*:label:\s*(?P<label>[\w-]+)\s*$", re.M)
STARS = re.compile(r"^\s*(★{1,3})(?!★)")


# ----------------------------------------------------------------- finding the notebooks

MAX_NOTEBOOK = 32 << 20     # bytes of one submitted notebook read
MAX_FILES = 10_000          # files listed per student


def display(name):
    """A file or folder name as text a teacher can read: bytes that are not UTF-8 (a Windows
    zip's names) and control characters become "?"; never raises."""
    raw = os.fsencode(name) if isinstance(name, str) else bytes(name)
    text = raw.decode("utf-8", "replace").replace("\ufffd", "?")
    return "".join(c if c.isprintable() else "?" for c in text)[:200] or "?"


def _unique(name, taken):
    if name not in taken:
        return name
    k = 2
    while f"{name} ({k})" in taken:
        k += 1
    return f"{name} ({k})"


def collect(root):
    """``{student: [(path, path relative to the student's folder), ...]}``; hidden files are ignored.
    Nothing is followed: a symbolic link (to a file or a folder) is listed as itself (and
    not graded); names are made readable (:func:`display`) and unique (``"x (2)"``)."""
    students, folders = {}, {}
    try:
        entries = sorted(os.scandir(root), key=lambda e: os.fsencode(e.name))
    except OSError:
        return students
    for entry in entries:
        if entry.name.startswith((".", "__")):
            continue
        path = Path(entry.path)
        if entry.is_dir(follow_symlinks=False):
            name = display(entry.name)
            if name in folders:                     # two folders whose names read the same
                name = _unique(name, students)
            folders[name] = entry.name
            files = []
            for top, dirs, names in os.walk(path, followlinks=False):
                dirs[:] = sorted((d for d in dirs if not d.startswith((".", "__"))), key=os.fsencode)
                links = [d for d in dirs if os.path.islink(os.path.join(top, d))]
                dirs[:] = [d for d in dirs if d not in links]
                for f in sorted([*names, *links], key=os.fsencode):
                    if f.startswith((".", "__")):
                        continue
                    full = Path(top) / f
                    files.append((full, "/".join(display(part) for part in full.relative_to(path).parts)))
                if len(files) > MAX_FILES:
                    break
            students.setdefault(name, []).extend(files[:MAX_FILES])
        else:
            stem = entry.name[:-len(Path(entry.name).suffix)] if Path(entry.name).suffix else entry.name
            students.setdefault(display(stem), []).append((path, display(entry.name)))
    return students


def load(path):
    """``(cells, metadata, None)`` for a readable notebook, else ``(None, None, why)``.
    A cell is ``{"cell_type", "source", "tags"}``. The file is read as a student wrote it:
    a regular file only (no symbolic link, FIFO or device), at most 32 MB."""
    from .sandbox import NotRegular, read_regular

    try:
        raw = read_regular(path, MAX_NOTEBOOK)
    except NotRegular:
        return None, None, "not a regular file (a symbolic link?)"
    except ValueError:
        return None, None, f"larger than {MAX_NOTEBOOK >> 20} MB"
    except OSError as exc:
        return None, None, f"could not be read ({exc.strerror})"
    try:
        nb = json.loads(raw.decode("utf-8-sig")) if raw.strip() else None
    except RecursionError:
        return None, None, "not valid JSON (nested too deeply)"
    except ValueError as exc:
        return None, None, f"not valid JSON ({str(exc)[:100]})"
    if nb is None:
        return None, None, "empty file"
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        return None, None, "not a Jupyter notebook (no list of cells)"
    if nb.get("nbformat") != 4:
        return None, None, f"notebook format {str(nb.get('nbformat'))[:20]} (save it again with a recent Jupyter)"
    cells = []
    try:
        for cell in nb["cells"]:
            cell = cell if isinstance(cell, dict) else {}
            source = cell.get("source", "")
            source = "".join(x if isinstance(x, str) else "" for x in source) if isinstance(source, list) \
                else source if isinstance(source, str) else ""
            kind = cell.get("cell_type") if cell.get("cell_type") in ("code", "markdown") else "raw"
            meta = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
            tags = meta.get("tags") if isinstance(meta.get("tags"), list) else []
            cells.append({"cell_type": kind, "source": source.replace("\x00", ""),
                          "tags": [t for t in tags if isinstance(t, str)]})
    except RecursionError:
        return None, None, "not a Jupyter notebook (nested too deeply)"
    meta = nb.get("metadata") if isinstance(nb.get("metadata"), dict) else {}
    return cells, meta, None


def identify(cells, meta, rel, exercises):
    """``(notebook, None)`` or ``(None, why)``: from the metadata, the file name,
    or the exercise functions the code defines (and labels it checks)."""
    source = meta.get("rnnlab", {}).get("source") if isinstance(meta.get("rnnlab"), dict) else None
    if isinstance(source, str) and source.strip():
        return re.sub(r"^(book/|full/|student/)?(.*?)(\.ipynb)?$", r"\2", source.strip()), None
    known = sorted({ex.notebook for ex in exercises})
    named = [nb for nb in known if nb.rsplit("/", 1)[-1].lower() in rel.lower()]
    if named:
        return max(named, key=len), None
    code = "\n".join(c["source"] for c in cells if c["cell_type"] == "code")
    defined, checked = set(DEFINES.findall(code)), set(CHECKS.findall(code))
    score = {nb: sum(ex.name in defined or ex.label in checked for ex in exercises if ex.notebook == nb)
             for nb in known}
    tops = [nb for nb, s in score.items() if s and s == max(score.values())]
    if len(tops) == 1:
        return tops[0], None
    return None, ("could not tell which notebook it is (" + (" or ".join(tops) if tops else
                  "no rnnlab metadata, known file name or exercise function") + ")")


def plan(students, registry, assignment):
    """``(tasks, notes)``: one ``(student, rel, notebook, cells)`` per notebook to
    run, and each student's notes on the files that will not run."""
    tasks, notes = [], {s: [] for s in students}
    for student, files in students.items():
        for path, rel in files:
            if path.suffix.lower() != ".ipynb":
                notes[student].append(f"{rel}: skipped (not a notebook)")
                continue
            cells, meta, why = load(path)
            nb, why = (None, why) if why else identify(cells, meta, rel, registry)
            if not why and assignment and nb not in assignment:
                why = f"{nb} is not part of this assignment"
            if not why and not any(ex.notebook == nb for ex in registry):
                why = f"{nb} has no exercises to grade"
            if why:
                notes[student].append(f"{rel}: {why}; not graded")
            else:
                tasks.append((student, rel, nb, cells))
    return tasks, notes


# ----------------------------------------------------------------- answers in words

def _statement(text):
    """An exercise statement as plain Markdown: from the cell's last heading on (a cell
    may end a section before its exercise starts), MyST fences and options dropped."""
    heads = [m.start() for m in re.finditer(r"^#{1,6} ", text, re.M)]
    text = text[heads[-1]:] if heads else text
    lines = []
    for line in text.splitlines():
        fence = re.match(r"^\s*(`{3,}|:{3,})\s*\{(\w[\w-]*)\}\s*(.*)$", line)
        if fence:
            lines.append(f"**{fence.group(2).capitalize()}{': ' + fence.group(3) if fence.group(3) else ''}**")
        elif not re.match(r"^\s*(`{3,}|:{3,})\s*$|^\s*:[\w-]+:", line):
            lines.append(line)
    return "\n".join(lines).strip()


def answers(cells):
    """``[(label, statement, answer), ...]``: each cell tagged ``exercise-answer``,
    its label from its heading (*Your answer (ex-...)*), the exercise statement
    (the last markdown cell before it that names the label, else the one just
    before), the student's text without the heading ("" when left empty)."""
    found = []
    for i, cell in enumerate(cells):
        if ANSWER_TAG not in cell.get("tags", []):
            continue
        head = ANSWER_HEAD.match(cell["source"])
        before = [c for c in cells[:i] if c["cell_type"] == "markdown" and ANSWER_TAG not in c.get("tags", [])]
        label = head.group("label") if head else next(
            (m.group("label") for c in reversed(before) for m in [LABEL_LINE.search(c["source"])] if m), None)
        if label is None:
            continue
        statement = next((c["source"] for c in reversed(before) if label in c["source"]),
                         before[-1]["source"] if before else "")
        text = cell["source"][head.end():] if head else cell["source"]
        found.append((label, _statement(statement), text.strip()))
    return found


# ----------------------------------------------------------------- points

def difficulty_of(title):
    """The stars a title starts with: 1, 2 or 3, or None (``"★★ Blelloch's work"`` -> 2)."""
    m = STARS.match(title or "")
    return len(m.group(1)) if m else None


EXERCISE_TITLE = re.compile(r"\{exercise\}[ \t]*(?P<title>[^\n]*)\n(?:[ \t]*:[\w-]+:.*\n)*?"
                            r"[ \t]*:label:[ \t]*(?P<label>[\w-]+)")


def checkout(*starts):
    """The root of a checkout of the book's repository (a folder holding ``_toc.yml`` and ``book/``):
    the first of ``starts`` that is one, else the checkout this ``rnnlab`` package was imported
    from, else the current folder if it is one; None otherwise (an installed ``rnnlab``, run
    away from a checkout)."""
    here = Path(__file__).resolve()
    try:
        cwd = [Path.cwd()]
    except OSError:                         # a current folder that was removed
        cwd = []
    for root in [*map(Path, starts), *here.parents[2:4], *cwd]:
        if (root / "_toc.yml").is_file() and (root / "book").is_dir():
            return root
    return None


def find_book(book=None, flag="--book"):
    """The book's folder of chapter notebooks: ``book`` when given (ValueError naming ``flag``
    when it is not one), else ``book/`` of :func:`checkout`, else None."""
    if book is not None:
        book = Path(book)
        if not book.is_dir() or not any(book.glob("*/*.ipynb")):
            raise ValueError(f"{flag} {book}: not the book's folder of chapters (the book/ folder of a checkout "
                             "of the repository, holding CHAPTER/NN_*.ipynb)")
        return book
    root = checkout()
    return root / "book" if root else None


BOOK = find_book()      # the chapters, when rnnlab runs from a checkout (or from inside one); else None


def _book_cells(path):
    """The cells of a book notebook, each source as one string ([] if unreadable)."""
    try:
        cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
        return [{**c, "source": "".join(c["source"]) if isinstance(c["source"], list) else c["source"]}
                for c in cells]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def titles(path):
    """``{label: title}`` of the ``{exercise}`` directives in a chapter notebook ({} if unreadable)."""
    text = "\n".join(c["source"] for c in _book_cells(path))
    return {m.group("label"): m.group("title").strip() for m in EXERCISE_TITLE.finditer(text)}


def difficulty(ex, book=BOOK):
    """An exercise's difficulty: the stars of its title in the chapter notebook where
    the book is at hand (a checkout), else the one declared in rnnlab.checks, else None."""
    stars = difficulty_of(titles(Path(book) / f"{ex.notebook}.ipynb").get(ex.label)) if book else None
    return stars or ex.difficulty


def weights(exercises, path=None, book=BOOK):
    """``{label: points}``: from ``path`` (JSON ``{label: points}``, or lines ``label,points``
    / ``label points`` with ``#`` comments) where it names the exercise, else the
    exercise's :func:`difficulty` (★ 1, ★★ 2, ★★★ 3; unmarked: ★★). ValueError on a bad file."""
    out = {ex.label: float(difficulty(ex, book) or DEFAULT_DIFFICULTY) for ex in exercises}
    if path is None:
        return out
    text = Path(path).read_text(encoding="utf-8")
    if str(path).lower().endswith(".json"):
        given = json.loads(text)
        if not isinstance(given, dict):
            raise ValueError(f"{path}: expected a JSON object {{label: points}}")
    else:
        given = {}
        for n, line in enumerate(text.splitlines(), 1):
            line = line.split("#", 1)[0].strip()
            if not line or line.lower().replace(" ", "") in ("label,points", "exercise,points"):
                continue
            parts = [p.strip() for p in re.split(r"[,;\t ]+", line) if p.strip()]
            if len(parts) != 2:
                raise ValueError(f"{path}, line {n}: expected 'label,points', got {line!r}")
            given[parts[0]] = parts[1]
    for label, value in given.items():
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{path}: {label}: points must be a number, got {value!r}") from None
        if not value >= 0 or value == float("inf"):
            raise ValueError(f"{path}: {label}: points must be 0 or more, got {value!r}")
        if label not in out:
            known = ", ".join(sorted(out)) or "none"
            raise ValueError(f"{path}: {label} is not an exercise being graded (graded: {known})")
        out[label] = value
    return out


def points(record, weight):
    """Full points for an exercise that passed every case (public and hidden), else none."""
    return weight if record["status"] == "passed" else 0.0


def number(x):
    return f"{x:g}"


# ----------------------------------------------------------------- what the teacher reads

def verdict(record):
    """The CSV's cell: ``passed``, ``failed 2/5``, ``not attempted``, ``error``, ``timeout`` or ``missing``."""
    if record["status"] == "failed":
        return f"failed {record.get('passed', 0)}/{record.get('total', 0)}"
    return record["status"]


def table(header, columns, rows, weight):
    """The grades CSV: ``header`` as a ``#`` comment line, then one row per student
    (``rows``: ``(student, grades, notes)``)."""
    out = io.StringIO()
    out.write("".join(f"# {line}\n" for line in header))
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["student", *[ex.label for ex in columns], "score", "total", "points", "max_points", "notes"])
    top = sum(weight[ex.label] for ex in columns)
    for student, grades, notes in rows:
        got = sum(points(grades[ex.label], weight[ex.label]) for ex in columns)
        writer.writerow([cell(student), *[verdict(grades[ex.label]) for ex in columns],
                         sum(g["status"] == "passed" for g in grades.values()), len(columns), number(got),
                         number(top), cell("; ".join(notes), 2000)])
    return out.getvalue()


MARKUP = re.compile(r"([\\`\[\]])")


def inert(text):
    """Student text or an error message made inert in markdown: HTML's ``& < >`` become
    entities (no tag, no ``<javascript:...>`` autolink), and the brackets (without which no
    link, image or link reference forms), the backtick and the backslash are escaped with a
    backslash, so that a ``<script>``, an ``<img onerror=...>`` or a ``[click](javascript:...)``
    shows as the text it is."""
    text = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return MARKUP.sub(r"\\\1", text)


def feedback(student, columns, grades, notes, errors, weight, said=()):
    """One student's feedback, in markdown: each verdict's message and points, the
    answers in words under their statements, the notes, the cell errors. Whatever a
    student wrote or caused (their name, answers, file names, error messages) is made
    :func:`inert`, or shown in a code block (the checks' messages)."""
    passed = sum(grades[ex.label]["status"] == "passed" for ex in columns)
    got = sum(points(grades[ex.label], weight[ex.label]) for ex in columns)
    top = sum(weight[ex.label] for ex in columns)
    lines = [f"# Feedback for {inert(student)}", "", f"**{passed} of {len(columns)}** exercises passed, "
             f"**{number(got)} of {number(top)}** points.", "",
             "| exercise | notebook | result | points |", "|---|---|---|---|"]
    lines += [f"| {ex.label} | {ex.notebook} | {verdict(grades[ex.label])} | "
              f"{number(points(grades[ex.label], weight[ex.label]))} of {number(weight[ex.label])} |"
              for ex in columns]
    lines += ["", "## Each exercise", ""]
    for ex in columns:
        message = grades[ex.label].get("message", "").replace("```", "'''")
        lines += [f"### {ex.label}: {verdict(grades[ex.label])}", "", "```", message, "```", ""]
    if said:
        lines += ["## Your answers in words", "", "Graded by your teacher, not by the checks.", ""]
        for label, notebook, statement, answer in said:
            quoted = "\n".join("> " + inert(line) if line else ">" for line in statement.splitlines())
            lines += [f"### {inert(label)} ({inert(notebook)})", "", quoted or "> (no statement found)", "",
                      inert(answer) if answer else "*(no answer)*", ""]
    for title, items in (("Notes", notes), ("Errors while running your notebooks", errors)):
        lines += [f"## {title}", "", *[f"- {inert(item)}" for item in items], ""] if items else []
    return "\n".join(lines)


def book_statements(notebook, book=BOOK):
    """``{label: statement}`` of the ``{exercise}`` directives in the book's notebook (the
    text a teacher wrote, never a student's); {} without the book at hand."""
    if book is None:
        return {}
    found = {}
    for cell in _book_cells(Path(book, f"{notebook}.ipynb")):
        if cell.get("cell_type") != "markdown":
            continue
        for block in EXERCISE_BLOCK.finditer(cell["source"]):       # the directive only: never its solution
            m = LABEL_LINE.search(block.group(0))
            if m:
                found.setdefault(m.group("label"), _statement(block.group(0)))
    return found


EXERCISE_BLOCK = re.compile(r"^[ \t]*(?P<fence>`{3,}|:{3,})[ \t]*\{exercise\}[^\n]*\n.*?^[ \t]*(?P=fence)[ \t]*$",
                            re.M | re.S)


FORMULA = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def cell(value, limit=None):
    """A CSV cell a spreadsheet shows as text: one that starts like a formula (``=``, ``+``,
    ``-``, ``@``, a tab) gets a leading ``'``; text is cut at ``limit`` characters."""
    text = str(value)
    if limit is not None and len(text) > limit:
        text = text[:limit] + " [cut]"
    return "'" + text if text.startswith(FORMULA) else text


def clip(text, limit=300):
    """Student text or an error message, cut at ``limit`` characters."""
    text = str(text)
    return text if len(text) <= limit else text[:limit] + " [cut]"


def scrub(text, secrets):
    """``text`` without the grader's own paths (the submissions, the output, the cases file)."""
    for secret in sorted({str(s) for s in secrets if s and len(str(s)) > 3}, key=len, reverse=True):
        text = text.replace(secret, "<grader>")
    return text


def feedback_names(students):
    """``{student: file stem}``: :func:`safe_name`, made unique (``x y`` and ``x_y`` each get their own)."""
    out, taken = {}, set()
    for student in students:
        stem = base = safe_name(student)
        k = 2
        while stem.lower() in taken:
            stem, k = f"{base}-{k}", k + 1
        taken.add(stem.lower())
        out[student] = stem
    return out


def answers_table(said):
    """``answers.csv``: one row per exercise and student (sorted by exercise), with
    the statement and empty ``points`` and ``comment`` columns for the teacher."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["exercise", "notebook", "student", "answer", "points", "comment", "statement"])
    for label, notebook, student, statement, answer in sorted(said, key=lambda r: (r[1], r[0], r[2])):
        writer.writerow([cell(label), cell(notebook), cell(student), cell(answer, 5000), "", "", cell(statement)])
    return out.getvalue()


def write_atomic(path, text):
    """Write ``text`` to ``path`` atomically (:func:`rnnlab._io.atomic_write_text`)."""
    atomic_write_text(path, text)


def safe_name(student):
    return (re.sub(r"[^\w.@+-]+", "_", student, flags=re.ASCII).lstrip(".") or "_")[:100]
