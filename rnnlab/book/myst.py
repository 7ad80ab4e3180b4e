"""MyST to the Markdown that Jupyter and Colab render.

The chapter notebooks are written in MyST (directives such as
``{prf:theorem}`` and ``{exercise}``, roles such as ``{cite}`` and ``{eq}``),
which only the online book renders: JupyterLab, Notebook 7 and Colab show a
directive as a grey code box and a role as its source text. This module turns
one markdown cell into plain Markdown and HTML that all three render, with
the numbers the online book shows:

* theorem-like directives (``prf:theorem``, ``prf:proposition``, ...): a
  bold, numbered title, then the body; proofs start with *Proof.* and end
  with ∎;
* exercises: a heading with the number, the difficulty and the title;
* solutions: a collapsed ``<details>`` block (the full edition);
* admonitions: a ``<blockquote>`` with a bold title; dropdown admonitions (the
  reproduction notes) a collapsed ``<details>`` block;
* figures: the image as a Markdown image at an absolute URL, the
  repository's raw file (:func:`raw_url`; an SVG schematic is shown by the PNG
  that ``rnnlab.figures`` writes beside it), with its alt text, and its
  caption, numbered: JupyterLab 4 and Notebook 7 do not render an SVG cell
  attachment and Colab renders no cell attachment and no SVG data URI, while
  every notebook front end (and GitHub's viewer) shows a PNG at a URL;
* roles: ``{cite}`` as "(Author, year)" linked to the online bibliography,
  ``{eq}``/``{ref}``/``{numref}``/``{prf:ref}``/``{doc}``/``{term}`` as the
  text the book shows, linked to the online page when the target lies on
  another page; ``(label)=`` targets removed, equation labels turned into
  ``\\tag{n}``.

Directives and roles are found with markdown-it and MyST's own parser
plugins, and the numbers come from :class:`BookIndex`: both live in
:mod:`rnnlab.book.book_index`, whose public names are importable from here
too. A construct the converter does not know is an error that names it,
never raw MyST left in an edition.
"""
from __future__ import annotations

import dataclasses
import pathlib
import re

from .book_index import (  # noqa: F401  (split off from this module; re-exported)
    ADMONITIONS,
    DIFFICULTY,
    NOTEBOOK_IMAGE_SUFFIXES,
    PROOF_KINDS,
    SOLUTION_DIRECTIVES,
    BookIndex,
    Directive,
    MystError,
    Target,
    code_cell_figure,
    difficulty,
    directive_of,
    files_ref,
    notebook_image,
    online_url,
    parse,
    plain_title,
    raw_url,
    read_bib,
    toc_order,
)

# The citation roles of sphinxcontrib-bibtex, printed as "(Author, year)".
CITE_ROLES = ("cite", "cite:p", "cite:ps", "cite:t", "cite:ts", "cite:alp", "cite:year")


# --------------------------------------------------------------------------- conversion

@dataclasses.dataclass
class Context:
    index: BookIndex
    doc: str                          # the page being converted, "book/x/y"
    solutions: bool = True            # full edition: solutions as <details>
    attachments: dict = dataclasses.field(default_factory=dict)   # kept empty: figures are URLs
    where: str = ""                   # for error messages: "book/x/y.ipynb, cell 12"
    gated: str | None = None          # label of the gated solution open across cells
    local_numbers: dict | None = None  # {exercise label: number within the notebook} (student edition)

    def localised(self, label, target: Target):
        """``target`` with the number this edition prints: an exercise of this notebook numbered
        within it when ``local_numbers`` is set (the student edition), else the book's number."""
        if self.local_numbers and label in self.local_numbers and target.doc == self.doc:
            return dataclasses.replace(target, number=self.local_numbers[label])
        return target

    def link(self, text, target: Target, anchor):
        """``text``, linked to the online page when ``target`` lies on another page."""
        if target.doc == self.doc:
            return text
        return f"[{text}]({self.index.page_url(target.doc, anchor)})"


def _title_and_label(content):
    m = re.match(r"^(.*?)\s*<([^<>]+)>$", content.strip(), re.S)
    return (m.group(1).strip(), m.group(2).strip()) if m else (None, content.strip())


def _target_text(t: Target):
    """What ``{ref}`` prints for a target (sphinx-proof and sphinx-exercise print the number and title)."""
    if t.kind == "section":
        return plain_title(t.title)
    if t.kind == "equation":
        return f"({t.number})"
    if t.kind == "Exercise":
        stars, title = difficulty(t.title)
        head = f"Exercise {t.number}" if t.number else "Exercise"
        return f"{head} ({t.title})" if t.title else head
    if t.kind == "Figure":
        return f"Fig. {t.number}"
    head = f"{t.kind} {t.number}" if t.number else t.kind
    return f"{head} ({t.title})" if t.number is None and t.title else head


def _anchor(label, t: Target):
    return f"equation-{label}" if t.kind == "equation" else label


def render_role(name, content, ctx: Context):
    """The Markdown for the role ``{name}`content```."""
    index = ctx.index
    if name in CITE_ROLES:
        keys = [k.strip() for k in content.split(",") if k.strip()]
        url = index.page_url("book/bibliography")
        parts = []
        for key in keys:
            if key not in index.bib:
                raise MystError(f"{ctx.where}: unknown citation key {key!r}")
            authors, year = index.bib[key]
            if name.startswith("cite:t"):
                parts.append(f"[{authors} ({year})]({url})")
            elif name == "cite:year":
                parts.append(f"[{year}]({url})")
            else:
                parts.append(f"[{authors}, {year}]({url})")
        return "; ".join(parts) if name.startswith("cite:t") or name == "cite:year" else f"({'; '.join(parts)})"
    if name == "eq":
        t = index.get(content.strip(), ctx.where)
        return ctx.link(f"({t.number})", t, _anchor(content.strip(), t))
    if name in ("ref", "prf:ref", "numref"):
        title, label = _title_and_label(content)
        t = ctx.localised(label, index.get(label, ctx.where))
        if name == "numref":
            text = (title.replace("%s", str(t.number)).replace("{number}", str(t.number))
                    if title else _target_text(t))
        elif name == "prf:ref" and title is None:
            text = (f"{t.kind} {t.number}" if t.number else (t.title or t.kind))
        elif title is None and t.kind == "Figure":
            text = plain_title(t.title) or _target_text(t)
        else:
            text = title if title else _target_text(t)
        return ctx.link(text, t, _anchor(label, t))
    if name == "doc":
        title, target = _title_and_label(content)
        here = pathlib.PurePosixPath(ctx.doc).parent
        doc = str(pathlib.PurePosixPath(*_normalise((here / target).parts)))
        if doc not in index.titles:
            raise MystError(f"{ctx.where}: {{doc}} names an unknown page {target!r}")
        return f"[{title or index.titles[doc]}]({index.page_url(doc)})"
    if name == "term":
        title, term = _title_and_label(content)
        spelled = index.glossary.get(" ".join(term.split()).lower())
        if spelled is None:
            raise MystError(f"{ctx.where}: {{term}} names {term!r}, which book/glossary.md does not define")
        return f"[{title or term}]({index.page_url('book/glossary', glossary_anchor(spelled))})"
    if name in ("math",):
        return f"${content}$"
    if name in ("abbr",):
        return _title_and_label(content)[0] or content
    raise MystError(f"{ctx.where}: the role {{{name}}} has no conversion (rnnlab/book/myst.py)")


def _normalise(parts):
    out = []
    for p in parts:
        if p == "..":
            out.pop()
        elif p != ".":
            out.append(p)
    return out


def glossary_anchor(term):
    """The id Sphinx gives a glossary term (``term-`` and the term, spaces as hyphens)."""
    from unicodedata import normalize

    text = normalize("NFKD", f"term-{term}").encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^a-zA-Z0-9_.:-]+", "-", " ".join(text.split()))
    return re.sub(r"^[^a-zA-Z]+|-+$", "", text) or "term"


def _replace_roles(lines, tok, ctx):
    """Replace, in ``lines`` (the token's range), every role markdown-it found in inline ``tok``."""
    roles = [c for c in tok.children or [] if c.type == "myst_role"]
    if not roles:
        return
    lo, hi = tok.map
    text = "\n".join(lines[lo:hi])
    codes = [c.content for c in tok.children if c.type == "code_inline"]
    for role in roles:
        name = role.meta["name"]
        ticks = "`" * (_longest_tick_run(role.content) + 1)
        source = f"{{{name}}}{ticks}{role.content}{ticks}"
        if source not in text:
            # markdown-it folds a role that spans lines: find it with its line breaks.
            pattern = re.escape(f"{{{name}}}{ticks}") + r"\s*".join(
                re.escape(w) for w in role.content.split()) + re.escape(ticks)
            m = re.search(pattern, text)
            if not m:
                raise MystError(f"{ctx.where}: cannot locate the role {source!r}")
            source = m.group(0)
        if source.count("\n") > 1:
            raise MystError(f"{ctx.where}: the role {source!r} spans more than two lines")
        if any(source in code for code in codes):
            raise MystError(f"{ctx.where}: the role {source!r} also appears in a code span")
        # A role broken over two lines keeps its line break, so that line numbers stay those of the tokens.
        text = text.replace(source, render_role(name, role.content, ctx) + "\n" * source.count("\n"), 1)
    lines[lo:hi] = text.split("\n")


def _longest_tick_run(text):
    runs = re.findall(r"`+", text)
    return max((len(r) for r in runs), default=0)


def convert(text, ctx: Context):
    """Markdown (and HTML) for the MyST ``text`` of one markdown cell (or a directive's body).

    Gated solutions (``{solution-start}`` ... ``{solution-end}``, across cells)
    follow ``ctx.gated``: the text between them becomes a collapsed
    ``<details>`` block in the full edition (``ctx.solutions``); the student
    edition removes solutions before converting."""
    tokens = parse(text)
    lines = text.split("\n")
    blocks = []                      # (start, end, replacement lines), from the block tokens
    gate_marks = []                  # (line, "start"/"end", label)
    for tok in tokens:
        if tok.type == "inline" and tok.map:
            _replace_roles(lines, tok, ctx)
    for tok in tokens:
        if tok.type == "myst_target":
            blocks.append((tok.map[0], tok.map[1], []))
        elif tok.type == "myst_line_comment":
            blocks.append((tok.map[0], tok.map[1], []))
        elif tok.type == "myst_block_break":
            blocks.append((tok.map[0], tok.map[1], ["---"]))
        elif tok.type == "math_block_label":
            t = ctx.index.get(tok.info, ctx.where)
            blocks.append((tok.map[0], tok.map[1], _display_math(tok.content, t.number)))
        elif tok.type in ("fence", "colon_fence"):
            d = directive_of(tok, lines)
            if d is None:
                continue
            if d.name == "solution-start":
                gate_marks.append((d.start, "start", d.argument))
                blocks.append((d.start, d.end, []))
                continue
            if d.name == "solution-end":
                gate_marks.append((d.start, "end", None))
                blocks.append((d.start, d.end, []))
                continue
            out = render_directive(d, ctx)
            blocks.append((d.start, d.end, [d.indent + line if line else "" for line in out]))
    for start, end, new in sorted(blocks, key=lambda b: b[0], reverse=True):
        lines[start:end] = new
        shift = len(new) - (end - start)
        gate_marks = [(line + shift if line > start else line, kind, label) for line, kind, label in gate_marks]
    return _wrap_gated("\n".join(lines), sorted(gate_marks), ctx)


def _wrap_gated(text, marks, ctx):
    """Wrap the parts of ``text`` inside a gated solution in ``<details>`` (full edition)."""
    if not marks and ctx.gated is None:
        return text
    lines = text.split("\n")
    pieces, start, gated = [], 0, ctx.gated
    for line, kind, label in marks + [(len(lines), "eof", None)]:
        pieces.append((gated, "\n".join(lines[start:line])))
        start = line
        if kind == "start":
            gated = label or "?"
        elif kind == "end":
            gated = None
    ctx.gated = gated
    out = []
    for label, piece in pieces:
        if not piece.strip():
            continue
        if label is None:
            out.append(piece.strip("\n"))
        elif not ctx.solutions:
            raise MystError(f"{ctx.where}: solution text in a student edition")
        else:
            out.append(_details(solution_title(label, ctx), piece.strip("\n")))
    return "\n\n".join(out)


def solution_title(label, ctx):
    t = ctx.localised(label, ctx.index.get(label, ctx.where))
    return f"Solution to {_target_text(t)}"


def _details(summary, body):
    return f"<details>\n<summary><b>{summary}</b></summary>\n\n{body.strip()}\n\n</details>"


def _display_math(content, number):
    body = content.strip("\n")
    tag = f"\\tag{{{number}}}" if number is not None else ""
    return ["$$", body + (" " + tag if tag else ""), "$$"]


def render_directive(d: Directive, ctx: Context):
    """The lines that replace directive ``d``."""
    body = convert(d.body, dataclasses.replace(ctx, gated=None)).strip("\n") if d.body.strip() else ""
    label = d.options.get("label")
    if d.name in PROOF_KINDS:
        kind = PROOF_KINDS[d.name]
        t = ctx.index.targets.get(label) if label else None
        number = t.number if t is not None else None
        if label is None and "nonumber" not in d.options:
            raise MystError(f"{ctx.where}: a {{{d.name}}} without a :label: (the editions number by label)")
        head = f"{kind} {number}" if number else kind
        title = f"**{head}** ({convert_inline(d.argument, ctx)})." if d.argument else f"**{head}.**"
        return [title, "", *body.split("\n")] if body else [title]
    if d.name == "prf:proof":
        return _proof(body)
    if d.name == "exercise":
        if not label:
            raise MystError(f"{ctx.where}: an {{exercise}} without a :label:")
        t = ctx.localised(label, ctx.index.get(label, ctx.where))
        stars, title = difficulty(d.argument)
        head = f"Exercise {t.number}" if t.number else "Exercise"
        head += f" {stars}" if stars else ""
        head += f": {convert_inline(title, ctx)}" if title else ""
        return [f"### {head}", "", *body.split("\n")]
    if d.name == "solution":
        if not ctx.solutions:
            raise MystError(f"{ctx.where}: a {{solution}} in a student edition")
        return _details(solution_title(d.argument, ctx), body).split("\n")
    if d.name in ADMONITIONS:
        title = ADMONITIONS[d.name] or d.argument
        if d.name != "admonition" and d.argument:
            title = d.argument
        if not title:
            raise MystError(f"{ctx.where}: an {{admonition}} without a title")
        title = convert_inline(title, ctx)
        classes = str(d.options.get("class", "")).split()
        if "dropdown" in classes:
            return _details(title, body).split("\n")
        return ["<blockquote>", "", f"**{title}**", "", *body.split("\n"), "", "</blockquote>"]
    if d.name in ("figure", "image"):
        return _figure(d, body, ctx)
    if d.name == "math":
        t = ctx.index.targets.get(label) if label else None
        return _display_math(d.body, t.number if t else None)
    if d.name in ("code-block", "code", "sourcecode"):
        return [f"```{d.argument}", *d.body.rstrip("\n").split("\n"), "```"]
    if d.name in ("glossary",):
        raise MystError(f"{ctx.where}: a {{glossary}} belongs on book/glossary.md, not in a notebook")
    raise MystError(f"{ctx.where}: the directive {{{d.name}}} has no conversion (rnnlab/book/myst.py)")


def convert_inline(text, ctx):
    """One line of MyST (a title) converted: its roles replaced."""
    return convert(text, dataclasses.replace(ctx, gated=None)).strip()


_PLAIN_END = re.compile(r"^(?!\s*(\$\$|```|~~~|<|\||#|>|[-*+]\s|\d+\.\s)).*\S")


def _proof(body):
    lines = body.split("\n") if body else []
    if lines and _PLAIN_END.match(lines[0]):
        lines[0] = f"*Proof.* {lines[0]}"
    else:
        lines = ["*Proof.*", ""] + lines
    if lines and _PLAIN_END.match(lines[-1]) and not lines[-1].strip().endswith("$$"):
        lines[-1] = lines[-1].rstrip() + " ∎"
    else:
        lines += ["", "∎"]
    return lines


def _markdown_alt(text):
    return " ".join(str(text).split()).replace("[", "(").replace("]", ")")


def _figure(d: Directive, body, ctx: Context):
    src = d.argument
    alt = str(d.options.get("alt", "")).strip()
    if not alt:
        raise MystError(f"{ctx.where}: the {{{d.name}}} {src} has no :alt: text")
    if re.match(r"^https?://", src):
        url = src
    else:
        path = (ctx.index.root / pathlib.PurePosixPath(ctx.doc).parent / src)
        if not path.exists():
            raise MystError(f"{ctx.where}: the image {src} does not exist ({path})")
        shown = notebook_image(path)
        if shown is None:
            raise MystError(f"{ctx.where}: the image {src} is not SVG, PNG, JPEG or GIF")
        if not shown.exists():
            raise MystError(f"{ctx.where}: the notebooks show {src} as {shown.name}, which does not exist "
                            "(python -m rnnlab.figures writes a PNG beside each schematic)")
        url = raw_url(ctx.index.root, shown.resolve().relative_to(ctx.index.root.resolve()).as_posix(),
                      ctx.index.files_ref)
    image = f"![{_markdown_alt(alt)}]({url})"
    if d.name == "image":
        return [image]
    label = d.options.get("name") or d.options.get("label")
    t = ctx.index.targets.get(label) if label else None
    caption = body.strip()
    head = f"Figure {t.number}" if t is not None and t.number else "Figure"
    return [image, "", f"*{head}.* {caption}" if caption else f"*{head}.*"]
