"""``python -m rnnlab.book lint``: the mechanical part of CONTRIBUTING.md, checked.

For every chapter notebook:

* **frame**: admonitions titled *What you will learn* and *What you need*
  before the second code cell; *Summary* and *Where next* after the last
  exercise, followed by nothing but reproduction notes (cells tagged
  ``reproduction``, markdown cells holding only reproduction admonitions) and
  hidden guard cells (``remove-input``);
* **difficulty**: every ``{exercise}`` title starts with ★, ★★ or ★★★;
* **logistics**: no main-line prose (markdown outside reproduction notes, code
  spans, code blocks and math) uses the vocabulary of :data:`LOGISTICS`;
* **alt text**: every ``{figure}``/``{image}`` has ``:alt:``, every Markdown image
  a non-empty alt text, every code cell shown as a figure (``mystnb.figure``) an
  ``mystnb.image.alt``;
* **checks**: no printed output line that is a bare ``True``/``False`` verdict
  (a check prints a sentence; a guard assertion lives in a ``remove-input`` cell);
* **roundoff**: no cell whose output nbval compares (tagged
  ``nbval-check-output``) prints digits that are rounding error, which differ
  from one CPU to the next: a number in scientific notation that is 0 or below
  1e-11 (a difference of 3e-16, a singular value at 5e-16 sigma_1), unless it
  is a round power of ten (the threshold of "below 1e-12"); a difference or
  error printed in scientific notation; a float with 12 or more significant
  digits (see :func:`roundoff_numbers`).

A cell is exempted from every rule by a reason in its metadata,
``{"rnnlab": {"lint-exempt": "why"}}``; the report lists the exemptions it
accepted. ``book/conforming.txt`` lists the chapters that conform: the lint
fails (exit 1) when one of their notebooks has a problem, and reports the
others' problems without failing.
"""
from __future__ import annotations

import dataclasses
import json
import pathlib
import re

from ..checks.student import cell_source
from .maintenance import notebooks
from .myst import ADMONITIONS, DIFFICULTY, code_cell_figure, directive_of, parse

CONFORMING = "book/conforming.txt"
REPRODUCTION_TAG = "reproduction"
TOP = ("What you will learn", "What you need")
BOTTOM = ("Summary", "Where next")

# The record of how a number was made, which belongs in the reproduction notes (TEACHING.md).
LOGISTICS = {
    "this machine": re.compile(r"\b(this|our|the same) machine\b", re.I),
    "a count of cores": re.compile(r"\b(\d+|two|one|four|eight|sixteen)[ -](CPU[ -])?cores?\b", re.I),
    "load average": re.compile(r"\bload average\b", re.I),
    "the issue": re.compile(r"\b(the|this|an|that) issue\b", re.I),
    "a PASS/FAIL verdict": re.compile(r"\b(PASS|FAIL|PASSED|FAILED)\b"),
    "Ctrl-C": re.compile(r"\bCtrl[- ]?C\b", re.I),
    "a commit hash": re.compile(r"\bcommit [0-9a-f]{6,40}\b|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"),
    "a shell command": re.compile(r"\bpython3? -m\b|\bmake (test|book|bench|student|editions)\b|\bpip install\b"),
    "a run-folder name": re.compile(r"\b[a-z]+(?=(?:-[\w.]+){4,})(?=\S*\d)(?:-[\w.]+){4,}\b"),
    "wall-clock time": re.compile(r"\bwall[- ]clock\b", re.I),
    "a process signal": re.compile(r"\bSIG(STOP|CONT|INT|KILL|TERM)\b"),
}
_BOOL_LINE = re.compile(r"(^|[:=]\s*)(True|False)\s*$")
CHECKED_TAG = "nbval-check-output"
ROUNDOFF_BELOW = 1e-11
_SCI = re.compile(r"(?<![\w.])[-+]?(?P<mantissa>\d+(?:\.\d*)?|\.\d+)[eE](?P<exponent>[-+]?\d+)(?![\w.])")
_LONG = re.compile(r"(?<![\w.])[-+]?(?:0\.0*)?(?P<digits>\d+\.?\d*)(?![\w.])")
_MEASURED = re.compile(r"\b(difference|differences|error|errors|discrepancy|residual)\b", re.I)


SANITIZE = "book/nbval_sanitize.cfg"
MASKED = "ROUNDOFF"
"""What ``book/nbval_sanitize.cfg``'s roundoff rule puts in place of a measured
difference ("largest difference 3e-16" compares as "largest difference
ROUNDOFF"): the value is printed for the reader, and its cell asserts its bound."""


def sanitize_patterns(root="."):
    """The ``(regex, replacement)`` pairs of the nbval sanitize file under ``root``
    (the format nbval reads: ``regex:``/``replace:`` line pairs), or ``[]``."""
    path = pathlib.Path(root) / SANITIZE
    if not path.exists():
        return []
    return re.findall(r"^regex: (.*)$\n^replace: (.*)$", path.read_text(encoding="utf8"), flags=re.M)


def sanitized(text, patterns):
    """``text`` as nbval compares it after the sanitize ``patterns``."""
    for regex, replace in patterns:
        text = re.sub(regex, replace, text)
    return text


def roundoff_numbers(text):
    """The numbers of a checked output ``text`` that print rounding error, each as
    ``(number, why)``: the digits of such a number change with the CPU's
    instructions (vector width, FMA, BLAS kernel, thread count), so a checked
    output must state the fact instead ("below 1e-12", "exactly 0", the rank).

    * a number in scientific notation that is 0 (``0e+00``: a computed difference
      that happened to be exactly 0 here) or below :data:`ROUNDOFF_BELOW` in
      magnitude, unless its mantissa is 1 (``1e-15``, a threshold);
    * a number in scientific notation on a line that reports a difference or an
      error, unless its mantissa is 1;
    * a float printed with 12 or more significant digits (``0.30000000000000004``).
    """
    found = []
    for line in text.splitlines():
        measured = bool(_MEASURED.search(line))
        for m in _SCI.finditer(line):
            mantissa = float(m.group("mantissa"))
            value = mantissa * 10.0 ** int(m.group("exponent"))
            if mantissa == 1:
                continue
            if value == 0 or abs(value) < ROUNDOFF_BELOW:
                found.append((m.group(0), "a rounding-error magnitude"))
            elif measured:
                found.append((m.group(0), "the digits of a measured difference or error"))
        for m in _LONG.finditer(_SCI.sub(" ", line)):
            digits = m.group("digits").replace(".", "").lstrip("0")
            if "." in m.group(0) and len(digits) >= 12:
                found.append((m.group(0), "a float at full precision"))
    return found


@dataclasses.dataclass
class Problem:
    notebook: str
    cell: int | None      # 1-based, None for the whole notebook
    rule: str
    message: str

    def __str__(self):
        where = f"{self.notebook}" + (f", cell {self.cell}" if self.cell else "")
        return f"{where}: [{self.rule}] {self.message}"


def _tags(cell):
    return cell.get("metadata", {}).get("tags", []) or []


def _output_text(cell):
    """The text nbval compares of a code cell: its streams and plain-text results."""
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            parts.append("".join(out.get("text", "")))
        elif "data" in out and "text/plain" in out["data"]:
            data = out["data"]["text/plain"]
            parts.append("".join(data) if isinstance(data, list) else data)
    return "\n".join(parts)


def exemption(cell):
    """The reason a cell is exempted from the lint, or None."""
    reason = (cell.get("metadata", {}).get("rnnlab") or {}).get("lint-exempt")
    return str(reason).strip() or None if reason is not None else None


def _classes(d):
    return str(d.options.get("class", "")).split()


def _admonition_titles(text):
    """Titles of the admonitions in a markdown text (top level and nested)."""
    titles = []
    lines = text.split("\n")
    for tok in parse(text):
        d = directive_of(tok, lines)
        if d is not None and d.name in ADMONITIONS:
            titles.append(d.argument.strip())
            titles += _admonition_titles(d.body)
    return titles


def _is_reproduction_only(text):
    """A markdown text made only of reproduction admonitions (and blank lines)."""
    lines = text.split("\n")
    covered = set()
    found = False
    for tok in parse(text):
        d = directive_of(tok, lines)
        if d is not None and REPRODUCTION_TAG in _classes(d):
            covered.update(range(d.start, d.end))
            found = True
    return found and all(i in covered or not line.strip() for i, line in enumerate(lines))


def main_line_prose(text):
    """The prose of a markdown text that a student reads on the main line: text of
    paragraphs, headings, lists and tables, and of directive bodies (exercises,
    theorems, solutions, admonitions), but not of reproduction admonitions, code
    spans, code blocks or math. Returns a list of strings."""
    out = []
    lines = text.split("\n")
    for tok in parse(text):
        d = directive_of(tok, lines)
        if d is not None:
            if REPRODUCTION_TAG in _classes(d) or d.name in ("code-block", "code", "math"):
                continue
            out.append(d.argument)
            out += main_line_prose(d.body)
            continue
        if tok.type == "inline":
            out.append("".join(c.content if c.type == "text" else " " for c in tok.children or []
                               if c.type in ("text", "softbreak", "hardbreak")))
    return [t for t in out if t.strip()]


def _figures_without_alt(text):
    problems = []
    lines = text.split("\n")
    for tok in parse(text):
        d = directive_of(tok, lines)
        if d is not None:
            if d.name in ("figure", "image") and not str(d.options.get("alt", "")).strip():
                problems.append(f"the {{{d.name}}} {d.argument} has no :alt: text")
            if d.name not in ("code-block", "code", "math"):
                problems += _figures_without_alt(d.body)
            continue
        if tok.type == "inline":
            for child in tok.children or []:
                if child.type == "image" and not "".join(c.content for c in child.children or []).strip():
                    problems.append(f"the image {child.attrs.get('src')} has no alt text")
    return problems


def _exercise_titles(text):
    lines = text.split("\n")
    found = []
    for tok in parse(text):
        d = directive_of(tok, lines)
        if d is not None and d.name == "exercise":
            found.append((d.options.get("label", "?"), d.argument))
    return found


def lint_notebook(nb, name, sanitize=()):
    """``(problems, exemptions)`` of one notebook: lists of :class:`Problem` and
    ``(cell, reason)``. ``sanitize``: nbval's ``(regex, replacement)`` pairs
    (:func:`sanitize_patterns`), applied to checked outputs before the roundoff rule."""
    problems, exemptions = [], []
    cells = nb["cells"]
    code_seen = 0
    top_found, bottom_at, last_exercise = set(), {}, None
    for n, cell in enumerate(cells, 1):
        reason = exemption(cell)
        if reason:
            exemptions.append((n, reason))
        kind = cell["cell_type"]
        text = cell_source(cell)
        if kind == "code":
            code_seen += 1
            figure = code_cell_figure(cell)
            alt = ((cell.get("metadata", {}).get("mystnb") or {}).get("image") or {}).get("alt", "")
            if figure is not None and not reason and not str(alt).strip():
                problems.append(Problem(name, n, "alt-text", f"the figure {figure.get('name', '')} of this code "
                                        "cell has no alt text (metadata mystnb.image.alt)"))
            if not reason and CHECKED_TAG in _tags(cell):
                compared = sanitized(_output_text(cell), sanitize)
                if MASKED in compared and not re.search(r"^\s*assert\b", text, re.M):
                    problems.append(Problem(name, n, "roundoff", "the checked output prints a measured "
                                            "difference that nbval does not compare (it reads "
                                            f"{MASKED}), and the cell asserts no bound on it: add the "
                                            "assertion"))
                for number, why in roundoff_numbers(compared):
                    problems.append(Problem(name, n, "roundoff", f"the checked output prints {number!r}, "
                                            f"{why}, whose digits differ between CPUs: print the fact "
                                            "('below 1e-12', 'exactly 0', a rank), or print the value in a "
                                            "cell nbval does not compare, guarded by an assertion"))
            if reason or REPRODUCTION_TAG in _tags(cell) or "remove-input" in _tags(cell):
                continue
            bools = [line for out in cell.get("outputs", []) if out.get("output_type") == "stream"
                     for line in "".join(out.get("text", "")).splitlines() if _BOOL_LINE.search(line.strip())]
            for out in cell.get("outputs", []):
                data = out.get("data", {}).get("text/plain")
                if out.get("output_type") == "execute_result" and data is not None:
                    plain = "".join(data).strip()
                    if plain in ("True", "False") or re.fullmatch(r"[\[(](\s*(True|False),?\s*)+[\])]", plain):
                        bools.append(plain)
            if bools:
                problems.append(Problem(name, n, "checks", f"{len(bools)} output line(s) that are a bare "
                                        f"True/False verdict (first: {bools[0][:70]!r}); print a sentence, or "
                                        f"guard in a remove-input cell"))
            continue
        if kind != "markdown":
            continue
        titles = _admonition_titles(text)
        if code_seen < 2:
            top_found.update(t for t in titles if t in TOP)
        for t in titles:
            if t in BOTTOM:
                bottom_at[t] = n
        for label, title in _exercise_titles(text):
            last_exercise = n
            if reason:
                continue
            if not DIFFICULTY.match(title):
                problems.append(Problem(name, n, "difficulty", f"the exercise {label} ({title!r}) has no "
                                        "difficulty: start its title with ★, ★★ or ★★★ and a space"))
        if reason:
            continue
        for msg in _figures_without_alt(text):
            problems.append(Problem(name, n, "alt-text", msg))
        if REPRODUCTION_TAG in _tags(cell):
            continue
        for prose in main_line_prose(text):
            for what, pattern in LOGISTICS.items():
                m = pattern.search(prose)
                if m:
                    lo = max(0, m.start() - 30)
                    problems.append(Problem(name, n, "logistics", f"{what} in the main line: "
                                            f"…{' '.join(prose[lo:m.end() + 30].split())}… "
                                            "(move it into reproduction notes)"))
    for t in TOP:
        if t not in top_found:
            problems.append(Problem(name, None, "frame", f"no {t!r} admonition before the second code cell"))
    for t in BOTTOM:
        if t not in bottom_at:
            problems.append(Problem(name, None, "frame", f"no {t!r} admonition at the end"))
        elif last_exercise is not None and bottom_at[t] < last_exercise:
            problems.append(Problem(name, bottom_at[t], "frame", f"{t!r} comes before the last exercise "
                                    f"(cell {last_exercise})"))
    if "Where next" in bottom_at:
        for n, cell in enumerate(cells[bottom_at["Where next"]:], bottom_at["Where next"] + 1):
            tags = _tags(cell)
            if (REPRODUCTION_TAG in tags or "remove-input" in tags or "remove-cell" in tags or exemption(cell)
                    or (cell["cell_type"] == "markdown" and _is_reproduction_only(cell_source(cell)))):
                continue
            problems.append(Problem(name, n, "frame", "only reproduction notes may follow 'Where next'"))
            break
    return problems, exemptions


def conforming(root="."):
    """The chapters (folders of book/) listed in book/conforming.txt."""
    path = pathlib.Path(root) / CONFORMING
    if not path.exists():
        return []
    return [line.split("#")[0].strip() for line in path.read_text(encoding="utf8").splitlines()
            if line.split("#")[0].strip()]


def lint(root=".", paths=None):
    """``{notebook path relative to root: (problems, exemptions)}`` for the chapter
    notebooks (or those under ``paths``: notebooks or chapter folders)."""
    root = pathlib.Path(root)
    selected = notebooks(root)
    if paths:
        wanted = [pathlib.Path(p).resolve() for p in paths]
        selected = [nb for nb in selected
                    if any(nb.resolve() == w or w in nb.resolve().parents for w in wanted)]
        if not selected:
            raise ValueError(f"no chapter notebook under {', '.join(map(str, paths))}")
    out = {}
    patterns = sanitize_patterns(root)
    for path in selected:
        rel = path.relative_to(root).as_posix()
        out[rel] = lint_notebook(json.loads(path.read_text(encoding="utf8")), rel, patterns)
    return out


def report(results, chapters):
    """The lint's report (a string) and whether a conforming chapter failed."""
    lines, failed = [], False
    for rel, (problems, exemptions) in results.items():
        chapter = rel.split("/")[1]
        listed = chapter in chapters
        status = "ok" if not problems else ("FAILS (conforming chapter)" if listed else "does not conform yet")
        failed |= listed and bool(problems)
        rules = sorted({p.rule for p in problems})
        lines.append(f"{rel}: {status}" + (f": {len(problems)} problem(s) ({', '.join(rules)})" if problems else ""))
        for p in problems:
            lines.append(f"    {p}")
        for cell, reason in exemptions:
            lines.append(f"    exemption accepted: cell {cell}: {reason}")
    ok = sum(1 for problems, _ in results.values() if not problems)
    lines.append(f"{ok} of {len(results)} notebooks pass; conforming chapters ({CONFORMING}): "
                 f"{', '.join(chapters) or 'none'}")
    return "\n".join(lines), failed


# --------------------------------------------------------------------------- words

WORD = re.compile(r"[^\W\d_][\w'’-]*|\d[\d.,]*")
LESSON_WORDS = 2300   # a lesson's main line reads in 20 to 30 minutes (TEACHING.md)
# Pages of a chapter that are not lessons: its index, its "Reproducing" page, optional performance pages.
NOT_A_LESSON = re.compile(r"^(index|\d+_reproducing|\d+_speed|\d+_performance)$")


def is_lesson(path):
    """True for a chapter's lesson page (``book/lds/01_modal_form.ipynb``), False for its index,
    its Reproducing page, an optional performance page (TEACHING.md, "A chapter") and the pages of
    the projects part (``book/projects/``: multi-week projects, not lessons of a term plan)."""
    page = pathlib.PurePath(str(path))
    return not (NOT_A_LESSON.match(page.stem) or "projects" in page.parts[:-1])


def _split_prose(text, gated):
    """``(main, folded, gated)``: the prose of one markdown text, on the main line and folded, and
    whether the text ends inside a ``{solution-start}``/``{solution-end}`` pair (``gated`` says
    whether it begins in one: everything there is folded). Folded: solutions, reproduction notes,
    dropdown admonitions. Code, math and code spans count nowhere."""
    main, folded = [], []
    lines = text.split("\n")
    for tok in parse(text):
        d = directive_of(tok, lines)
        if d is not None:
            if d.name in ("solution-start", "solution-end"):
                gated = d.name == "solution-start"
                continue
            if d.name in ("code-block", "code", "math"):
                continue
            inner_main, inner_folded, _ = _split_prose(d.body, gated)
            if (gated or d.name == "solution" or REPRODUCTION_TAG in _classes(d)
                    or "dropdown" in _classes(d)):
                folded += [d.argument] + inner_main + inner_folded
            else:
                main += [d.argument] + inner_main
                folded += inner_folded
            continue
        if tok.type == "inline":
            text_ = "".join(c.content if c.type == "text" else " " for c in tok.children or []
                            if c.type in ("text", "softbreak", "hardbreak"))
            (folded if gated else main).append(text_)
    return main, folded, gated


def page_words(path):
    """Words of a notebook's markdown a student reads: ``{"main": n, "folded": m}``. The main line
    is what a reader meets scrolling down; folded is what they open (solutions, dropdowns,
    reproduction notes, cells tagged ``reproduction``)."""
    nb = json.loads(pathlib.Path(path).read_text(encoding="utf8"))
    counts, gated = {"main": 0, "folded": 0}, False
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        main, folded, gated = _split_prose(text, gated)
        if REPRODUCTION_TAG in cell.get("metadata", {}).get("tags", []):
            main, folded = [], folded + main
        counts["main"] += sum(len(WORD.findall(t)) for t in main)
        counts["folded"] += sum(len(WORD.findall(t)) for t in folded)
    return counts
