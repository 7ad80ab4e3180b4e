"""The book as the online book numbers it: its MyST read with markdown-it, and every label's number.

What the editions (:mod:`rnnlab.book.myst`), the lint and the course plan read
from the chapters' MyST, written once:

* :func:`parse`: the markdown-it tokens of MyST text, with the book's parser
  settings (the extensions of ``_config.yml`` that change the tokens); the
  tokens give the line range of every directive, target and labelled equation,
  and every role with its name and content, so nothing is found by regular
  expressions over the whole text; :func:`directive_of` reads a directive
  (name, argument, options, body) from its fence token;
* :class:`BookIndex`: every label of the book with the number and text the
  online book shows. It numbers what Sphinx numbers, as Sphinx does for a book
  without section numbers: one counter per kind (each theorem-like kind,
  exercises, figures, equations) over the whole book, in the order of
  ``_toc.yml`` (:func:`toc_order`); it also holds the pages' titles and the
  bibliography (:func:`read_bib`);
* where the book lives online: :func:`online_url` (the book), :func:`raw_url`
  (a repository file at the ref the notebooks pin, :func:`files_ref`) and
  :func:`notebook_image` (the file a notebook shows for an image).
"""
from __future__ import annotations

import dataclasses
import json
import pathlib
import re

from .maintenance import RefDisagreement, config_value, current_ref, repository_url

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
    first heading; ``bib`` maps a citation key to ``(authors, year)``;
    ``glossary`` maps a glossary term, lower-cased, to its spelling on
    ``book/glossary.md`` (:func:`read_glossary`)."""

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
        self.glossary = read_glossary(self.root)
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
    url = config_value(root, "html", "baseurl")
    if url is None:
        raise ValueError("_config.yml has no html.baseurl (the online book's address)")
    return url


def plain_title(markdown):
    """A heading's text without Markdown emphasis or code marks (for link texts)."""
    return re.sub(r"[*_`]", "", markdown).strip()


def read_glossary(root="."):
    """``{term.lower(): term}`` for every term of ``book/glossary.md``'s ``{glossary}`` directive.

    Sphinx matches a ``{term}`` role to a glossary term whatever the case, but
    the term's id (the anchor a link needs) keeps the glossary's spelling: the
    editions' links look the spelling up here. In the directive's body a term is
    a line that starts in the first column; its definition is indented."""
    path = pathlib.Path(root) / "book" / "glossary.md"
    if not path.exists():
        return {}
    out = {}
    text = path.read_text(encoding="utf8")
    tokens = parse(text)
    lines = text.splitlines()
    for tok in tokens:
        d = directive_of(tok, lines)
        if d is None or d.name != "glossary":
            continue
        for line in d.body.splitlines():
            if line.strip() and not line[0].isspace():
                out[line.strip().lower()] = line.strip()
    return out


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


def files_ref(root="."):
    """The git ref whose files the editions show: the version of rnnlab that every notebook's setup
    cell pins (``sync-setup --ref TAG``: a term's notebooks show that tag's pictures), else
    ``repository.branch`` of ``_config.yml`` (``main`` without one)."""
    try:
        ref = current_ref(root)
    except (RefDisagreement, OSError, ValueError):
        ref = None
    return ref or config_value(root, "repository", "branch") or "main"


def raw_url(root, rel, ref=None):
    """The absolute URL of the repository file ``rel`` (a path from the repository root) at git ref
    ``ref`` (default :func:`files_ref`) of ``repository.url`` (``_config.yml``): GitHub's raw files
    (``https://raw.githubusercontent.com/OWNER/REPO/REF/rel``), else ``URL/raw/REF/rel``."""
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
