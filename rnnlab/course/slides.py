"""Lecture slides: one deck per chapter, written from the chapter's pages.

``python -m rnnlab course-slides --out DIR`` (``make slides`` writes ``_build/slides``) writes
``DIR/<chapter>/index.html`` for every chapter, the schematics they show beside them,
``DIR/index.html`` listing the decks, and MathJax (the book's vendored copy) in
``DIR/_static/``: nothing is loaded from the network. Which pages a deck covers and what it says
is read from the pages, so a deck stays true when a page changes:

- a **title slide**: the chapter's title and its lessons, with the weeks of the term plans
  (:data:`rnnlab.course.plan.PLANS`) that teach them;
- per week of the 10-week plan that has several pages, a **week slide**: the pages to read before
  the lecture and the lecture's key ideas, as :func:`rnnlab.course.plan.render` chooses them (a
  week of one page is its lesson, whose first slide names the week);
- per lesson (a lesson page of ``_toc.yml``, :func:`rnnlab.course.plan.lessons`):
  its **ideas**, the bullets of its *Summary* (:func:`rnnlab.course.plan.read_page`); one
  slide per **schematic** (its ``{figure}`` directives, with the caption); its **key
  equations** (:func:`key_equations`: the labelled ones and those stated in a definition,
  theorem, proposition, lemma or corollary, plus the few listed in ``slides_equations.yaml``),
  at most :data:`EQUATIONS_PER_SLIDE` a slide; and **exercises for the lab**, with their
  stars, points and minutes as the plan gives them (the checks registry, the grader's weights).

A deck is one HTML page (``slides_template.html``): every slide is 1280 x 720, scaled to
the window; the arrow keys, Page Up/Down, space, Home and End move through it, ``#/n`` in the
address opens slide ``n``, ``f`` goes full screen, and printing gives one slide a page (a PDF
for the learning platform). The text of every slide is shrunk, if it must be, until it fits.
"""
from __future__ import annotations

import argparse
import dataclasses
import html
import json
import re
import shutil
import sys
from pathlib import Path

from . import plan

ROOT = plan.ROOT
HERE = Path(__file__).resolve().parent
TEMPLATE = HERE / "slides_template.html"
EXTRA_EQUATIONS = HERE / "slides_equations.yaml"
MATHJAX = Path("book") / "_static" / "vendor" / "mathjax"    # under the repository root
EQUATIONS_PER_SLIDE = 4
STATEMENTS = ("prf:definition", "prf:theorem", "prf:proposition", "prf:lemma", "prf:corollary")
FOLDED = ("prf:proof", "solution", "exercise")     # directives whose equations are not key ones


@dataclasses.dataclass
class Equation:
    tex: str                 # the TeX of the display equation, as on the page
    label: str | None        # its label when the page numbers it
    statement: str | None    # the label of the definition/theorem/... that states it
    section: str             # the heading of the section it is in


@dataclasses.dataclass
class Figure:
    path: Path               # the image file
    name: str | None         # the figure's :name: (for its number)
    alt: str
    caption: str             # MyST


@dataclasses.dataclass
class Lesson:
    page: plan.Page          # what the term plan reads of the page (title, ideas, exercises)
    figures: list
    equations: list

    @property
    def rel(self):
        return self.page.path


@dataclasses.dataclass
class Week:
    plan: str                # "10" or "5"
    number: int
    title: str
    pages: list              # rel paths
    ideas: list              # MyST, as the plan renders them (links relative to book/)


@dataclasses.dataclass
class Deck:
    chapter: str
    title: str
    lessons: list
    weeks: dict              # plan name -> [Week] touching the chapter


# --------------------------------------------------------------------------- reading the pages

def _markdown_cells(path):
    """The markdown cells of a notebook that are on the main line: ``(text, gated)``: cells tagged
    ``reproduction`` are left out; ``gated`` says whether the cell starts inside a gated solution."""
    from ..book.myst import directive_of, parse

    out, gated = [], False
    for cell in json.loads(Path(path).read_text(encoding="utf8"))["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        tags = cell.get("metadata", {}).get("tags", [])
        start = gated
        lines = text.split("\n")
        for tok in parse(text):
            d = directive_of(tok, lines)
            if d is not None and d.name in ("solution-start", "solution-end"):
                gated = d.name == "solution-start"
        if "reproduction" not in tags:
            out.append((text, start))
    return out


def _walk(text, outer=(), gated=False):
    """``(token, directive or None, enclosing directives)`` for every block of MyST ``text`` and,
    recursively, of the directives' bodies; nothing inside a gated solution."""
    from ..book.myst import directive_of, parse

    lines = text.split("\n")
    for tok in parse(text):
        d = directive_of(tok, lines)
        if d is not None and d.name in ("solution-start", "solution-end"):
            gated = d.name == "solution-start"
            continue
        if gated:
            continue
        yield tok, d, outer
        if d is not None and d.body.strip() and d.name not in ("code-block", "code"):
            yield from _walk(d.body, outer + (d,), False)


def _folded(directives):
    for d in directives:
        classes = str(d.options.get("class", "")).split()
        if d.name in FOLDED or "dropdown" in classes or "reproduction" in classes:
            return True
    return False


def _display_equations(path):
    """Every display equation on the main line of ``path``: :class:`Equation`, in page order."""
    out, section = [], ""
    for text, gated in _markdown_cells(path):
        tokens = list(_walk(text, gated=gated))
        for i, (tok, d, outer) in enumerate(tokens):
            if tok.type == "heading_open" and not outer:
                section = tokens[i + 1][0].content.strip()
            if tok.type not in ("math_block", "math_block_label") or _folded(outer):
                continue
            statement = next((o.options.get("label") for o in reversed(outer) if o.name in STATEMENTS), None)
            out.append(Equation(tok.content.strip("\n"), tok.info if tok.type == "math_block_label" else None,
                                statement, section))
    return out


def extra_equations(path=EXTRA_EQUATIONS):
    """``{page: [TeX snippet, ...]}`` of ``slides_equations.yaml``."""
    import yaml

    data = yaml.safe_load(Path(path).read_text(encoding="utf8")) or {}
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise ValueError(f"{path}: expected a mapping of pages to lists of TeX snippets")
    return data


def key_equations(rel, root=ROOT, extras=None):
    """The key equations of lesson ``rel``: the labelled display equations and those stated in a
    definition, theorem, proposition, lemma or corollary, with the ones that ``slides_equations.yaml``
    names for the page (a snippet of their TeX), in page order. A snippet that does not match exactly
    one equation of the page is a ValueError naming it."""
    extras = extra_equations() if extras is None else extras
    found = _display_equations(Path(root) / "book" / f"{rel}.ipynb")
    chosen = [e.label is not None or e.statement is not None for e in found]
    for snippet in extras.get(rel, []):
        hits = [i for i, e in enumerate(found) if snippet in e.tex]
        if len(hits) != 1:
            raise ValueError(f"{EXTRA_EQUATIONS.name}: {rel}: {snippet!r} matches {len(hits)} display "
                             "equations of the page, not one")
        chosen[hits[0]] = True
    return [e for e, keep in zip(found, chosen) if keep]


def schematics(rel, root=ROOT):
    """The ``{figure}`` directives on the main line of lesson ``rel``: :class:`Figure`, in page order."""
    path = Path(root) / "book" / f"{rel}.ipynb"
    out = []
    for text, gated in _markdown_cells(path):
        for tok, d, outer in _walk(text, gated=gated):
            if d is None or d.name != "figure" or _folded(outer):
                continue
            out.append(Figure(path.parent / d.argument, d.options.get("name"),
                              " ".join(str(d.options.get("alt", "")).split()), d.body.strip()))
    return out


def plan_weeks(name, root=ROOT):
    """The weeks of term plan ``name`` as :func:`rnnlab.course.plan.render` writes them: their
    pages (:data:`~rnnlab.course.plan.PLANS`) and the lecture's key ideas (MyST, from the page it
    renders)."""
    text = plan.render(name, root)
    blocks = re.split(r"^\*\*Week (\d+): .*\*\*$", text, flags=re.M)
    weeks = []
    for (title, pages), number, block in zip(plan.PLANS[name], blocks[1::2], blocks[2::2]):
        ideas, inside = [], False
        for line in block.splitlines():
            if line.startswith("- *Lecture*"):
                inside = True
            elif inside and line.startswith("  - ") and not line.startswith("  - Figures to show:"):
                ideas.append(line[4:])
            elif not line.startswith("  "):
                inside = False
        weeks.append(Week(name, int(number), title, list(pages), ideas))
    if len(weeks) != len(plan.PLANS[name]):
        raise ValueError(f"plan {name}: read {len(weeks)} weeks from its page, not {len(plan.PLANS[name])}")
    return weeks


def chapters(root=ROOT):
    """The chapters that have lessons, in the book's order."""
    return list(dict.fromkeys(rel.split("/")[0] for rel in plan.lessons(root)))


def read_deck(chapter, root=ROOT, weeks=None, extras=None):
    """The :class:`Deck` of ``chapter``. ``weeks``: ``{plan name: plan_weeks(name)}``, to read them once."""
    root = Path(root)
    weeks = weeks if weeks is not None else {name: plan_weeks(name, root) for name in plan.PLANS}
    rels = [rel for rel in plan.lessons(root) if rel.split("/")[0] == chapter]
    if not rels:
        raise ValueError(f"{chapter!r} is not a chapter with lessons: {', '.join(chapters(root))}")
    lessons = [Lesson(plan.read_page(rel, root / "book"), schematics(rel, root), key_equations(rel, root, extras))
               for rel in rels]
    index = root / "book" / chapter / "index.md"
    title = next((m.group(1).strip() for m in [re.search(r"^# (.+)$", index.read_text(encoding="utf8"), re.M)] if m),
                 chapter) if index.exists() else chapter
    return Deck(chapter, title, lessons,
                {name: [w for w in ws if any(rel in w.pages for rel in rels)] for name, ws in weeks.items()})


# --------------------------------------------------------------------------- HTML

class _Html:
    """MyST text to HTML: roles as the editions print them (:func:`rnnlab.book.myst.convert`),
    Markdown by markdown-it, math left as ``\\(...\\)`` and ``\\[...\\]`` for MathJax."""

    def __init__(self, root):
        from markdown_it import MarkdownIt
        from mdit_py_plugins.dollarmath import dollarmath_plugin

        from ..book.myst import BookIndex

        self.index = BookIndex(root)

        def math(content, options):
            open_, close = ("\\[", "\\]") if options.get("display_mode") else ("\\(", "\\)")
            return open_ + html.escape(content, quote=False) + close

        self.md = MarkdownIt("commonmark").use(dollarmath_plugin, renderer=math, allow_space=True,
                                               allow_digits=True, double_inline=True)

    def context(self, doc):
        from ..book.myst import Context
        return Context(self.index, doc, where=doc)

    def inline(self, text, doc="book/teaching"):
        """One line of MyST as inline HTML. ``doc``: the page its links are relative to (the plan's
        text is relative to ``book/``, as for ``book/teaching.md``)."""
        from ..book.myst import convert
        return self.md.renderInline(convert(text, self.context(doc)).strip())

    def block(self, text, doc):
        from ..book.myst import convert
        return self.md.render(convert(text, self.context(doc)))

    def number(self, label):
        t = self.index.targets.get(label)
        return t.number if t is not None else None

    def statement(self, label, doc):
        t = self.index.targets.get(label)
        if t is None:
            return ""
        head = f"{t.kind} {t.number}" if t.number else t.kind
        return head + (f" ({self.inline(t.title, doc)})" if t.title else "")


def _stars(n):
    return "★" * (n or 2)


def _week_names(deck, rel):
    """``["week 4 of 10", "week 2 of 5"]``: the weeks of the term plans that teach page ``rel``."""
    return [f"week {w.number} of {name}" for name, weeks in deck.weeks.items() for w in weeks if rel in w.pages]


def _week_kicker(deck, rels):
    """The line above a week's or a lesson's title: its weeks in the 10-week and the 5-week course."""
    parts = []
    for name, weeks in deck.weeks.items():
        numbers = [w.number for w in weeks if set(rels) & set(w.pages)]
        if numbers:
            parts.append(f"{'weeks' if len(numbers) > 1 else 'week'} {', '.join(map(str, numbers))} "
                         f"of the {name}-week course")
    text = " · ".join(parts) or "in no week of the term plans"
    return text[0].upper() + text[1:]


def _slide(kind, body):
    """One slide; ``data-math``: how many formulas MathJax is to typeset on it (the browser test counts them)."""
    math = body.count("\\(") + body.count("\\[")
    return f'<section class="slide {kind}" data-math="{math}"><div class="content">\n{body}\n</div></section>'


def _equation_html(eq, doc, conv, page_title=""):
    tex = eq.tex
    number = conv.number(eq.label) if eq.label else None
    if number is not None:
        tex += f" \\tag{{{number}}}"
    if eq.statement:
        caption = conv.statement(eq.statement, doc)
    else:
        caption = conv.inline(eq.section, doc) if eq.section and eq.section != page_title else ""
    return (f'<div class="equation"><div class="eq-caption">{caption}</div>'
            f'<div class="eq-tex">\\[{html.escape(tex, quote=False)}\\]</div></div>')


def render_deck(deck, conv, figure_url=lambda fig: f"figures/{fig.path.name}", book_title="rnnlab"):
    """The HTML of ``deck``. ``figure_url(figure)``: the address of a figure's image in the deck."""
    slides = []
    lessons_html = "".join(
        f"<li><span class=\"lesson-title\">{conv.inline(lesson.page.title)}</span>"
        f" <span class=\"muted\">({', '.join(_week_names(deck, lesson.rel)) or 'no week of the plans'})</span></li>"
        for lesson in deck.lessons)
    slides.append(_slide("title", f'<p class="kicker">{html.escape(book_title)} · lecture slides</p>\n'
                                  f"<h1>{conv.inline(deck.title)}</h1>\n<ol class=\"lessons\">{lessons_html}</ol>\n"
                                  '<p class="hint">← → to move, f for full screen</p>'))
    shown_weeks = set()
    titles = {lesson.rel: lesson.page.title for lesson in deck.lessons}
    for lesson in deck.lessons:
        doc = f"book/{lesson.rel}"
        for w in deck.weeks.get("10", []):
            # A week of several pages opens with its own slide; a week of one page is its lesson's.
            if lesson.rel in w.pages and w.number not in shown_weeks and len(w.pages) > 1:
                shown_weeks.add(w.number)
                reads = "".join(f"<li>{conv.inline(titles.get(rel) or rel.split('/')[-1])}</li>" for rel in w.pages)
                ideas = "".join(f"<li>{conv.inline(i)}</li>" for i in w.ideas)
                slides.append(_slide(
                    "week", f'<p class="kicker">{_week_kicker(deck, w.pages)}</p>\n'
                            f"<h1>{conv.inline(w.title)}</h1>\n<h3>Read before the lecture</h3><ul>{reads}</ul>\n"
                            f"<h3>The lecture's key ideas</h3><ul class=\"ideas\">{ideas}</ul>"))
        title = conv.inline(lesson.page.title)
        ideas = "".join(f"<li>{conv.inline(i)}</li>" for i in lesson.page.ideas)
        slides.append(_slide("ideas", f'<p class="kicker">{_week_kicker(deck, [lesson.rel])}</p>\n'
                                      f"<h1>{title}</h1>\n<ul class=\"ideas\">{ideas}</ul>"))
        for fig in lesson.figures:
            number = conv.number(fig.name) if fig.name else None
            caption = conv.block(fig.caption, doc) if fig.caption else ""
            head = f"Fig. {number}" if number else "Figure"
            slides.append(_slide(
                "figure", f'<p class="kicker">{title}</p>\n'
                          f'<img src="{html.escape(figure_url(fig))}" alt="{html.escape(fig.alt)}">\n'
                          f'<div class="caption"><b>{head}.</b> {caption}</div>'))
        eqs = lesson.equations
        parts = -(-len(eqs) // EQUATIONS_PER_SLIDE)
        size = -(-len(eqs) // parts) if parts else 0
        for k in range(parts):
            more = f" ({k + 1} of {parts})" if parts > 1 else ""
            slides.append(_slide("equations", f'<p class="kicker">{title}</p>\n<h2>Key equations{more}</h2>\n'
                                 + "\n".join(_equation_html(e, doc, conv, lesson.page.title)
                                             for e in eqs[k * size:(k + 1) * size])))
        rows = []
        for label, ex_title, stars, points, minutes in lesson.page.exercises:
            number = conv.number(label)
            rows.append(f"<tr><td class=\"stars\">{_stars(stars)}</td>"
                        f"<td>{f'Exercise {number}: ' if number else ''}{conv.inline(ex_title, doc)}"
                        + (' <span class="muted">(project material)</span>' if stars == 3 else "")
                        + f"</td><td class=\"num\">{points:g} pt</td><td class=\"num\">{minutes} min</td></tr>")
        body = (f"<table class=\"exercises\">{''.join(rows)}</table>" if rows
                else "<p>This lesson has no exercises.</p>")
        slides.append(_slide("exercises", f'<p class="kicker">{title}</p>\n<h2>Exercises for the lab</h2>\n{body}\n'
                             '<p class="muted small">★ apply · ★★ combine or derive · ★★★ an experiment'
                             ' or a proof; points as the grader gives them</p>'))
    template = TEMPLATE.read_text(encoding="utf8")
    return (template.replace("{{title}}", html.escape(f"{re.sub(r'[*_`$]', '', deck.title)} · lecture slides"))
                    .replace("{{mathjax}}", "../_static/mathjax/tex-chtml.js")
                    .replace("{{chapter}}", html.escape(deck.chapter))
                    .replace("{{slides}}", "\n".join(slides)))


def _index_html(decks, conv):
    items = "".join(f'<li><a href="{d.chapter}/index.html">{conv.inline(d.title)}</a>'
                    f' <span class="muted">({len(d.lessons)} lessons)</span></li>' for d in decks)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Lecture slides</title>\n"
            "<style>body{font-family:system-ui,sans-serif;max-width:50em;margin:3em auto;line-height:1.5}"
            ".muted{color:#57606a}</style></head><body>\n<h1>Lecture slides</h1>\n"
            "<p>One deck a chapter, written from its pages by <code>python -m rnnlab course-slides</code>. "
            "In a deck: ← → (or Page Up/Down, space) move, Home/End go to the ends, f is full screen, "
            "and printing gives one slide a page.</p>\n"
            f"<ol>{items}</ol>\n</body></html>\n")


def write_slides(out, root=ROOT, only=None):
    """Write the decks of ``only`` (default: every chapter) under ``out``; return the :class:`Deck` list."""
    import yaml

    root, out = Path(root), Path(out)
    conv = _Html(root)
    weeks = {name: plan_weeks(name, root) for name in plan.PLANS}
    extras = extra_equations()
    names = only or chapters(root)
    decks = [read_deck(chapter, root, weeks, extras) for chapter in names]
    book_title = (yaml.safe_load((root / "_config.yml").read_text(encoding="utf8")) or {}).get("title") or "rnnlab"
    mathjax = out / "_static" / "mathjax"
    if mathjax.exists():
        shutil.rmtree(mathjax)
    shutil.copytree(root / MATHJAX, mathjax)
    for deck in decks:
        folder = out / deck.chapter
        if folder.exists():
            shutil.rmtree(folder)
        (folder / "figures").mkdir(parents=True)
        for lesson in deck.lessons:
            for fig in lesson.figures:
                if not fig.path.is_file():
                    raise FileNotFoundError(f"{lesson.rel}: the figure {fig.path} does not exist")
                shutil.copy2(fig.path, folder / "figures" / fig.path.name)
        (folder / "index.html").write_text(render_deck(deck, conv, book_title=book_title), encoding="utf8")
    (out / "index.html").write_text(_index_html(decks, conv), encoding="utf8")
    return decks


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m rnnlab course-slides", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "slides",
                        help="folder to write (default %(default)s)")
    parser.add_argument("--chapter", action="append", help="a chapter (repeatable; default: every chapter)")
    parser.add_argument("--root", type=Path, default=ROOT, help="repository root (where _toc.yml is)")
    args = parser.parse_args(argv)
    try:
        decks = write_slides(args.out, args.root, args.chapter)
    except (ValueError, FileNotFoundError) as error:
        print(f"course-slides: {error}", file=sys.stderr)
        return 1
    print(f"wrote {len(decks)} decks to {args.out}: open {args.out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
