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
plugins (the tokens give the line range of every directive, target and
labelled equation, and every role with its name and content), never by
regular expressions over the whole text. :class:`BookIndex` numbers what
Sphinx numbers, as Sphinx does for a book without section numbers: one
counter per kind (each theorem-like kind, exercises, figures, equations) over
the whole book, in the order of ``_toc.yml``. A construct the converter does
not know is an error that names it, never raw MyST left in an edition.
"""
from __future__ import annotations

import dataclasses
import json
import pathlib
import re

# Theorem-like directives of sphinx-proof and their printed names.
PROOF_KINDS = {
    "prf:theorem": "Theorem", "prf:proposition": "Proposition", "prf:lemma": "Lemma",
    "prf:definition": "Definition", "prf:corollary": "Corollary", "prf:conjecture": "Conjecture",
    "prf:axiom": "Axiom", "prf:criterion": "Criterion", "prf:algorithm": "Algorithm",
    "prf:example": "Example", "prf:remark": "Remark", "prf:property": "Property",
    "prf:observation": "Observation", "prf:assumption": "Assumption", "prf:notation": "Notation",
}
ADMONITIONS = {
    "note": "Note", "tip": "Tip", "hint": "Hint", "important": "Important", "warning": "Warning",
    "caution": "Caution", "attention": "Attention", "danger": "Danger", "error": "Error",
    "seealso": "See also", "admonition": None,
}
SOLUTION_DIRECTIVES = ("solution", "solution-start", "solution-end")
CITE_ROLES = ("cite", "cite:p", "cite:ps", "cite:t", "cite:ts", "cite:alp", "cite:year")
DIFFICULTY = re.compile(r"^(★{1,3})\s+")


class MystError(ValueError):
    """A construct of the MyST source that the converter cannot turn into Markdown."""


def _parser():
    from markdown_it import MarkdownIt
    from mdit_py_plugins.amsmath import amsmath_plugin
    from mdit_py_plugins.colon_fence import colon_fence_plugin
    from mdit_py_plugins.deflist import deflist_plugin
    from mdit_py_plugins.dollarmath import dollarmath_plugin
    from mdit_py_plugins.myst_blocks import myst_block_plugin
    from mdit_py_plugins.myst_role import myst_role_plugin

    # The extensions of _config.yml's parse.myst_enable_extensions that change the tokens.
    return (MarkdownIt("commonmark").enable("table")
            .use(myst_role_plugin).use(myst_block_plugin)
            .use(dollarmath_plugin, allow_labels=True, allow_space=True, allow_digits=True,
                 double_inline=True)
            .use(colon_fence_plugin).use(amsmath_plugin).use(deflist_plugin))


_MD = None


def parse(text):
    """The markdown-it tokens of MyST ``text`` (the book's parser settings)."""
    global _MD
    if _MD is None:
        _MD = _parser()
    return _MD.parse(text)


# --------------------------------------------------------------------------- directives

@dataclasses.dataclass
class Directive:
    name: str            # "prf:theorem", "exercise", "note", ...
    argument: str        # the text after the name on the opening line (a title, a label, a path)
    options: dict        # ":label: x" lines or a --- YAML block
    body: str            # the content after the options
    start: int           # first line (0-based) in the text parsed
    end: int             # line after the closing fence
    indent: str          # indentation of the opening line


def directive_of(token, lines):
    """The :class:`Directive` of a fence token whose info string is ``{name} ...``, else None."""
    if token.type not in ("fence", "colon_fence"):
        return None
    m = re.match(r"^\{([\w:.-]+)\}\s*(.*)$", token.info.strip())
    if not m:
        return None
    options, body = _split_options(token.content)
    first = lines[token.map[0]]
    return Directive(m.group(1), m.group(2).strip(), options, body, token.map[0], token.map[1],
                     first[:len(first) - len(first.lstrip())])


def _split_options(content):
    body_lines = content.splitlines()
    options = {}
    if body_lines and body_lines[0].strip() == "---":
        try:
            end = body_lines.index("---", 1)
        except ValueError:
            raise MystError("a directive's --- option block is not closed") from None
        import yaml

        options = yaml.safe_load("\n".join(body_lines[1:end])) or {}
        body_lines = body_lines[end + 1:]
    else:
        while body_lines and re.match(r"^:[\w-]+:", body_lines[0]):
            key, _, value = body_lines.pop(0)[1:].partition(":")
            options[key.strip()] = value.strip()
    while body_lines and not body_lines[0].strip():
        body_lines.pop(0)
    return options, "\n".join(body_lines).rstrip() + ("\n" if body_lines else "")


def difficulty(title):
    """``(stars, title without them)`` of an exercise title (``("", title)`` without a difficulty)."""
    m = DIFFICULTY.match(title)
    return (m.group(1), title[m.end():]) if m else ("", title)


# --------------------------------------------------------------------------- the book's index

@dataclasses.dataclass
class Target:
    doc: str             # "book/scans/01_associative_scan"
    kind: str            # "Theorem", "Exercise", "Figure", "equation", "section", "Solution"...
    number: int | None   # as the book prints it (None: not numbered)
    title: str           # a directive's title, a section's heading, a figure's caption


def _page_cells(path):
    """The cells of a book page that the index reads, in order: ``("markdown", text)`` for
    each markdown cell (or the whole .md), ``("figure", name, caption)`` for a code cell whose
    output myst-nb shows as a numbered figure (cell metadata ``mystnb.figure``)."""
    path = pathlib.Path(path)
    if path.suffix != ".ipynb":
        return [("markdown", path.read_text(encoding="utf8"))]
    nb = json.loads(path.read_text(encoding="utf8"))
    out = []
    for c in nb["cells"]:
        if c["cell_type"] == "markdown":
            out.append(("markdown", "".join(c["source"]) if isinstance(c["source"], list) else c["source"]))
        elif c["cell_type"] == "code":
            fig = code_cell_figure(c)
            if fig is not None:
                out.append(("figure", fig.get("name"), str(fig.get("caption", "")).strip()))
    return out


def code_cell_figure(cell):
    """The ``mystnb.figure`` metadata of a code cell (name, caption), or None."""
    fig = (cell.get("metadata", {}).get("mystnb") or {}).get("figure")
    return fig if isinstance(fig, dict) else None


def toc_order(root="."):
    """The pages of ``_toc.yml`` in reading order (paths without suffix, relative to root)."""
    text = (pathlib.Path(root) / "_toc.yml").read_text(encoding="utf8")
    return re.findall(r"^\s*-?\s*(?:file|root):\s*(\S+)\s*$", text, re.M)


def _heading_text(token_inline):
    return token_inline.content.strip()


class BookIndex:
    """Every label of the book with the number and text the online book shows.

    Built from the pages of ``_toc.yml`` in order. ``targets`` maps a label
    to its :class:`Target`; ``titles`` maps a page (``book/x/y``) to its
    first heading; ``bib`` maps a citation key to ``(authors, year)``."""

    def __init__(self, root=".", base_url=None):
        self.root = pathlib.Path(root)
        self.base_url = (base_url if base_url is not None else online_url(root)).rstrip("/") + "/"
        self.targets: dict[str, Target] = {}
        self.titles: dict[str, str] = {}
        self.counters: dict[str, int] = {}
        self.exercise_by_label: dict[str, Target] = {}
        docs = toc_order(root)
        # A notebook missing from the toc (the book check reports it) is indexed after the toc's pages.
        docs += sorted(p.relative_to(self.root).with_suffix("").as_posix()
                       for p in (self.root / "book").rglob("*.ipynb")
                       if ".ipynb_checkpoints" not in p.parts
                       and p.relative_to(self.root).with_suffix("").as_posix() not in docs)
        for doc in docs:
            path = next((self.root / f"{doc}{s}" for s in (".ipynb", ".md")
                         if (self.root / f"{doc}{s}").exists()), None)
            if path is None:
                continue
            self._pending = []        # targets waiting for the next block (a heading names them)
            for kind, *rest in _page_cells(path):
                if kind == "markdown":
                    self._collect(doc, rest[0])
                else:
                    self._code_figure(doc, *rest)
            for label in self._pending:
                self.targets[label] = Target(doc, "section", None, "")
        self.bib = read_bib(self.root)
        self.files_ref = files_ref(self.root)

    def _next(self, kind):
        self.counters[kind] = self.counters.get(kind, 0) + 1
        return self.counters[kind]

    def _code_figure(self, doc, name, caption):
        # A code cell's figure (myst-nb): numbered like a {figure} when it has a name and a caption.
        for label in self._pending:
            self.targets[label] = Target(doc, "section", None, "")
        self._pending.clear()
        if name and caption:
            self.targets[name] = Target(doc, "Figure", self._next("Figure"), caption)

    def _collect(self, doc, text):
        tokens = parse(text)
        lines = text.splitlines()
        pending_targets = self._pending
        for i, tok in enumerate(tokens):
            if tok.type == "myst_target":
                pending_targets.append(tok.content)
                continue
            if tok.type == "heading_open":
                title = _heading_text(tokens[i + 1])
                if doc not in self.titles:
                    self.titles[doc] = plain_title(title)
                for label in pending_targets:
                    self.targets[label] = Target(doc, "section", None, title)
                pending_targets.clear()
                continue
            if tok.level == 0 and tok.nesting >= 0 and pending_targets:
                # A target before anything but a heading: {ref} needs an explicit title for it.
                for label in pending_targets:
                    self.targets[label] = Target(doc, "section", None, "")
                pending_targets.clear()
            if tok.type == "math_block_label":
                self.targets[tok.info] = Target(doc, "equation", self._next("equation"), "")
                continue
            d = directive_of(tok, lines)
            if d is None:
                continue
            label = d.options.get("label") or d.options.get("name")
            numbered = "nonumber" not in d.options
            if d.name in PROOF_KINDS:
                kind = PROOF_KINDS[d.name]
                number = self._next(kind) if numbered else None
                if label:
                    self.targets[label] = Target(doc, kind, number, d.argument)
            elif d.name == "exercise":
                number = self._next("Exercise") if numbered else None
                if label:
                    t = Target(doc, "Exercise", number, d.argument)
                    self.targets[label] = t
            elif d.name == "figure":
                # Sphinx numbers a figure that has an id (a :name:) and a caption.
                if label and d.body.strip():
                    self.targets[label] = Target(doc, "Figure", self._next("Figure"), d.body.strip())
            elif d.name == "math" and label:
                self.targets[label] = Target(doc, "equation", self._next("equation"), "")
            # Labels inside a directive's body (a labelled equation in a theorem) count too.
            if d.body.strip() and d.name not in ("code-block", "code"):
                outer, self._pending = self._pending, []
                self._collect(doc, d.body)
                self._pending = outer

    def page_url(self, doc, anchor=None):
        return f"{self.base_url}{doc}.html" + (f"#{anchor}" if anchor else "")

    def get(self, label, where):
        try:
            return self.targets[label]
        except KeyError:
            raise MystError(f"{where}: unknown label {label!r}") from None


def online_url(root="."):
    """``html.baseurl`` of ``_config.yml``: where the online book lives."""
    from .maintenance import config_value

    url = config_value(root, "html", "baseurl")
    if url is None:
        raise ValueError("_config.yml has no html.baseurl (the online book's address)")
    return url


def plain_title(markdown):
    """A heading's text without Markdown emphasis or code marks (for link texts)."""
    return re.sub(r"[*_`]", "", markdown).strip()


def read_bib(root="."):
    """``{key: (authors, year)}`` from ``book/references.bib``, as author_year citations print them."""
    path = pathlib.Path(root) / "book" / "references.bib"
    if not path.exists():
        return {}
    import codecs

    import latexcodec  # noqa: F401  (registers the "ulatex" codec; a dependency of pybtex)
    from pybtex.database import parse_file

    def clean(text):
        return codecs.decode(text, "ulatex").replace("{", "").replace("}", "")

    out = {}
    for key, entry in parse_file(str(path)).entries.items():
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        lasts = [clean(" ".join(p.prelast_names + p.last_names)) for p in people]
        if len(lasts) == 1:
            authors = lasts[0]
        elif len(lasts) == 2:
            authors = f"{lasts[0]} and {lasts[1]}"
        elif lasts:
            authors = f"{lasts[0]} et al."
        else:
            authors = clean(entry.fields.get("title", key))
        out[key] = (authors, entry.fields.get("year", "n.d."))
    return out


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
        return f"[{title or term}]({index.page_url('book/glossary', glossary_anchor(term))})"
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


def files_ref(root="."):
    """The git ref whose files the editions show: the version of rnnlab that every notebook's setup
    cell pins (``sync-setup --ref TAG``: a term's notebooks show that tag's pictures), else
    ``repository.branch`` of ``_config.yml`` (``main`` without one)."""
    from .maintenance import RefDisagreement, config_value, current_ref

    try:
        ref = current_ref(root)
    except (RefDisagreement, OSError, ValueError):
        ref = None
    return ref or config_value(root, "repository", "branch") or "main"


def raw_url(root, rel, ref=None):
    """The absolute URL of the repository file ``rel`` (a path from the repository root) at git ref
    ``ref`` (default :func:`files_ref`) of ``repository.url`` (``_config.yml``): GitHub's raw files
    (``https://raw.githubusercontent.com/OWNER/REPO/REF/rel``), else ``URL/raw/REF/rel``."""
    from .maintenance import repository_url

    url = repository_url(root).rstrip("/").removesuffix(".git")
    branch = ref or files_ref(root)
    m = re.match(r"^https://github\.com/([^/]+)/([^/]+)$", url)
    if m:
        return f"https://raw.githubusercontent.com/{m.group(1)}/{m.group(2)}/{branch}/{rel}"
    return f"{url}/raw/{branch}/{rel}"


NOTEBOOK_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif")


def notebook_image(path):
    """The file a notebook shows for the book's image ``path``: itself when it is a PNG, JPEG
    or GIF, the PNG beside it for an SVG (``python -m rnnlab.figures`` writes both)."""
    path = pathlib.Path(path)
    if path.suffix.lower() in NOTEBOOK_IMAGE_SUFFIXES:
        return path
    if path.suffix.lower() == ".svg":
        return path.with_suffix(".png")
    return None


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
