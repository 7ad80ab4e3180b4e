"""Maintenance of the book's notebooks: the shared first cell, the checks of
the stored notebooks, execution in place.

The repository URL is written once, in ``_config.yml`` (``repository.url``).
The first code cell of every notebook installs rnnlab from that URL when it is
missing (on Colab). After changing the URL in a fork, run::

    python -m rnnlab.book sync-setup      # rewrite the first cell of every notebook
    python -m rnnlab.book check           # what the test suite checks
    python -m rnnlab.book execute NB...   # re-execute notebooks in place, as the book build does

A teacher pins one version of rnnlab for a term with
``sync-setup --ref TAG``: the install line becomes
``%pip install "rnnlab @ git+URL@TAG"``. A plain ``sync-setup`` keeps the ref
the notebooks carry (and stops if they disagree); ``sync-setup --unpin``
removes it. ``check`` accepts a pinned first cell when every notebook carries
the same ref; it also verifies that every notebook is listed in ``_toc.yml``
and is stored executed."""
import json
import pathlib
import re

SETUP_MARKER = "# rnnlab setup"

SETUP_TEMPLATE = '''{marker}: works locally, on Colab (installs rnnlab) and on a GPU runtime.
try:
    from rnnlab import setup_notebook  # fails too on an uninstall's leftover folder
except ImportError:
    %env PIP_DISABLE_PIP_VERSION_CHECK=1
    %pip install "rnnlab @ git+{url}{at_ref}"
    import importlib, sys
    for name in [m for m in sys.modules if m == "rnnlab" or m.startswith("rnnlab.")]:
        del sys.modules[name]
    importlib.invalidate_caches()
import rnnlab
device = rnnlab.setup_notebook(seed=0)'''
# The install shows pip's "Successfully installed ..." (no -q): Colab reads it to offer a restart
# when a package that is already imported was upgraded. Nothing that Colab preinstalls is upgraded by
# rnnlab's requirements (pyproject.toml keeps its lower bounds at or below Colab's versions).


def config_value(root, block, key):
    """``block.key`` of ``_config.yml`` (read without a YAML dependency), or None."""
    text = (pathlib.Path(root) / "_config.yml").read_text(encoding="utf8")
    found = re.search(rf"^{block}:\s*\n((?:[ \t]+.*\n?)+)", text, re.M)
    if found:
        m = re.search(rf"^\s+{key}:\s*(\S+)", found.group(1), re.M)
        if m:
            return m.group(1).strip("'\"")
    return None


def repository_url(root="."):
    """``repository.url`` from ``_config.yml``."""
    url = config_value(root, "repository", "url")
    if url is None:
        raise ValueError("_config.yml has no repository.url")
    return url


def setup_cell_source(url, ref=None):
    """The exact source of the first code cell of every notebook: it installs
    rnnlab from ``url``, at the git ref ``ref`` (a tag, branch or commit) if given."""
    at_ref = "" if ref is None else "@" + check_ref(ref)
    return SETUP_TEMPLATE.format(marker=SETUP_MARKER, url=url, at_ref=at_ref)


_REF_CHARS = re.compile(r"[A-Za-z0-9._/+-]+")


def check_ref(ref, what="--ref"):
    """``ref`` if it is a git ref that can follow ``@`` in the install line, else
    ValueError (its message starts with ``what`` and the ref).

    Stricter than ``git check-ref-format``: letters, digits and ``. _ / + -``
    only (no space, quote, ``@``, ``#``, ``%`` or shell character, which the
    quoted pip requirement or its URL would misread), no leading ``-``, no
    ``..``, no empty, leading-dot or ``.lock`` component, no trailing ``.``."""
    why = None
    if not isinstance(ref, str) or not ref:
        why = "it is empty"
    elif not _REF_CHARS.fullmatch(ref):
        bad = sorted({c for c in ref if not _REF_CHARS.fullmatch(c)})
        why = "it contains " + " ".join(repr(c) for c in bad)
    elif ref.startswith("-"):
        why = "it starts with '-'"
    elif ".." in ref:
        why = "it contains '..'"
    elif ref.endswith(".") or any(not part or part.startswith(".") or part.endswith(".lock")
                                  for part in ref.split("/")):
        why = "a part is empty, starts with '.', or ends with '.' or '.lock'"
    if why:
        raise ValueError(f"{what} {ref!r} is not a git ref that rnnlab can pin: {why} "
                         f"(use a tag, branch or commit such as term-2026 or v0.1.0)")
    return ref


_INSTALL = re.compile(r'^\s*%pip install "rnnlab @ git\+(?P<spec>[^"]*)"\s*$', re.M)


def _split_ref(spec):
    """``(url, ref)`` of a ``git+`` requirement's URL, as pip splits it: the
    ref follows the last ``@`` of the path (an ``@`` in the host part is a user)."""
    scheme, sep, rest = spec.partition("://")
    host, slash, path = rest.partition("/")
    if sep and slash and "@" in path:
        path, ref = path.rsplit("@", 1)
        return f"{scheme}://{host}/{path}", ref
    return spec, None


def pinned_ref(source):
    """The git ref the install line of setup cell ``source`` pins, or None
    (no pin, or no install line in the template's form)."""
    m = _INSTALL.search(source)
    return _split_ref(m.group("spec"))[1] if m else None


def notebooks(root="."):
    """Every notebook of the book, sorted."""
    root = pathlib.Path(root)
    return sorted(p for p in (root / "book").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def _first_code_cell(nb):
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            return cell
    return None


class RefDisagreement(ValueError):
    """The notebooks' setup cells pin different refs (or some pin one and some none)."""


def carried_refs(root="."):
    """``{ref or None: [notebook paths]}``: the ref each notebook's setup cell pins."""
    refs = {}
    for path in notebooks(root):
        cell = _first_code_cell(json.loads(path.read_text()))
        if cell is not None and "".join(cell["source"]).startswith(SETUP_MARKER):
            refs.setdefault(pinned_ref("".join(cell["source"])), []).append(path)
    return refs


def describe_refs(refs, root="."):
    """One line per ref of :func:`carried_refs`: the ref and the notebooks that carry it."""
    root = pathlib.Path(root)
    most = max(refs.values(), key=len) if len(refs) > 1 else None
    lines = []
    for ref, paths in sorted(refs.items(), key=lambda kv: (kv[0] is not None, kv[0] or "")):
        if paths is most and len(paths) > 5:
            names = f"the other {len(paths)} notebooks"
        else:
            names = ", ".join(str(p.relative_to(root)) for p in paths)
        lines.append(f"  {'no pin' if ref is None else '@' + ref}: {names}")
    return "\n".join(lines)


def current_ref(root="."):
    """The ref every notebook's setup cell pins (None: none pins one); RefDisagreement
    if they differ."""
    refs = carried_refs(root)
    if len(refs) > 1:
        raise RefDisagreement("the notebooks' setup cells pin different versions of rnnlab:\n"
                              + describe_refs(refs, root)
                              + "\nchoose one: python -m rnnlab.book sync-setup --ref REF "
                              "(or --unpin)")
    return next(iter(refs), None)


KEEP = object()     # sync_setup(ref=KEEP): the ref the notebooks carry


def sync_setup(root=".", ref=KEEP):
    """Rewrite the first code cell of every notebook from ``_config.yml``; return the files changed.

    ``ref``: the git ref to pin (a tag for the term), None to unpin, or by
    default the ref the notebooks already carry (RefDisagreement if they do
    not agree: nothing is written)."""
    if ref is KEEP:
        ref = current_ref(root)
        if ref is not None:
            check_ref(ref, "the notebooks pin")
    source = setup_cell_source(repository_url(root), ref)
    todo = []                      # every notebook is checked before any is written
    for path in notebooks(root):
        nb = json.loads(path.read_text())
        cell = _first_code_cell(nb)
        if cell is None or "".join(cell["source"]) == source:
            continue
        if not "".join(cell["source"]).startswith(SETUP_MARKER):
            raise ValueError(f"{path}: the first code cell is not the rnnlab setup cell")
        cell["source"] = source.splitlines(keepends=True)
        todo.append((path, nb))
    for path, nb in todo:
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    return [path for path, _ in todo]


def toc_files(root="."):
    """The files named in ``_toc.yml`` (without suffix)."""
    text = (pathlib.Path(root) / "_toc.yml").read_text()
    return set(re.findall(r"(?:file|root):\s*(\S+)", text))


def _tokens_deep(text):
    """``(token, directive or None)`` for every markdown-it token of MyST ``text``, the bodies
    of its directives (code blocks excepted) walked too."""
    from .book_index import directive_of, parse

    lines = text.splitlines()
    for tok in parse(text):
        d = directive_of(tok, lines)
        yield tok, d
        if d is not None and d.body.strip() and d.name not in ("code-block", "code"):
            yield from _tokens_deep(d.body)


def stray_amsmath(text):
    """The first line of each amsmath block in MyST ``text``, directive bodies included. A line
    that begins with ``\\begin{pmatrix}`` (or another amsmath environment) outside ``$$`` becomes
    a numbered display of its own, even in the middle of a paragraph's inline math."""
    return [tok.content.strip().splitlines()[0]
            for tok, _ in _tokens_deep(text) if tok.type == "amsmath"]


def untitled_dropdowns(text):
    """The ``prf:`` directives of MyST ``text`` with ``:class: dropdown``: they render without an
    admonition title, so the page's toggle script fails on them (a console error, nothing folds).
    A folded proof goes inside ``{admonition} Proof`` with ``:class: dropdown``."""
    return [d.name for _, d in _tokens_deep(text)
            if d is not None and d.name.startswith("prf:")
            and "dropdown" in str(d.options.get("class", "")).split()]


def untitled_refs(texts, index):
    """``(where, label)`` for each bare ``{ref}`label``` in ``texts`` (pairs ``(where, MyST
    text)``) whose target in ``index`` (a :class:`BookIndex`) is a ``(label)=`` with no heading
    after it (before an admonition or a paragraph). Sphinx has no title to print for it, so the
    build warns "A title or caption not found" and ``-W`` fails; write ``{ref}`text <label>```."""
    untitled = {label for label, t in index.targets.items() if t.kind == "section" and not t.title}
    return [(where, m.group(1).strip()) for where, text in texts
            for m in re.finditer(r"\{ref\}`([^`<]+)`", text) if m.group(1).strip() in untitled]

def check(root="."):
    """Problems with the book's notebooks, one string each (empty when all is well)."""
    root = pathlib.Path(root)
    url = repository_url(root)
    listed = toc_files(root)
    problems = []
    texts = []          # (where, markdown) of every page, for references across pages
    try:
        current_ref(root)
    except RefDisagreement as exc:
        problems.append(str(exc))
    for path in notebooks(root):
        rel = path.relative_to(root)
        nb = json.loads(path.read_text())
        cell = _first_code_cell(nb)
        source = "" if cell is None else "".join(cell["source"])
        ref = pinned_ref(source)        # a pinned cell is the template with that ref
        try:
            if ref is not None:
                check_ref(ref, "its setup cell pins")
            expected = setup_cell_source(url, ref)
        except ValueError as exc:
            problems.append(f"{rel}: {exc} "
                            f"(run python -m rnnlab.book sync-setup --ref REF or --unpin)")
        else:
            if source != expected:
                problems.append(f"{rel}: first code cell is not the setup cell "
                                f"(run python -m rnnlab.book sync-setup)")
        if str(rel.with_suffix("")) not in listed:
            problems.append(f"{rel}: not listed in _toc.yml")
        for n, c in enumerate(nb["cells"], 1):
            if c["cell_type"] == "markdown":
                texts.append((f"{rel}: cell {n}", "".join(c["source"])))
                for line in stray_amsmath("".join(c["source"])):
                    problems.append(
                        f"{rel}: cell {n}: the line {line!r} starts an amsmath block "
                        "(a line beginning with \\begin{pmatrix} and the like): Sphinx numbers it, "
                        "which shifts every later equation number, and it breaks the math around it; "
                        "put the matrix in $$ ... $$ or start the line with other text")
                for name in untitled_dropdowns("".join(c["source"])):
                    problems.append(
                        f"{rel}: cell {n}: a {{{name}}} with :class: dropdown has no title for the "
                        "toggle script (a console error online); fold it inside an "
                        "{admonition} with :class: dropdown instead")
            if c["cell_type"] != "code":
                continue
            src = "".join(c["source"])
            if c is not cell and ("%pip" in src or "pip install" in src):
                problems.append(f"{rel}: cell {n} installs packages; only the setup cell may")
            if src.strip() and c.get("execution_count") is None:
                problems.append(f"{rel}: cell {n} is not executed")
            for out in c.get("outputs", []):
                if out.get("output_type") == "error":
                    problems.append(f"{rel}: cell {n} stores an error ({out.get('ename')})")
    for path in sorted((root / "book").rglob("*.md")):
        texts.append((str(path.relative_to(root)), path.read_text()))
    from .book_index import BookIndex

    for where, label in untitled_refs(texts, BookIndex(root, base_url="")):
        problems.append(f"{where}: {{ref}}`{label}` points at a target with no heading after it, "
                        "so Sphinx has no title to print (the build warns and -W fails); write "
                        f"{{ref}}`its text <{label}>`")
    return problems


def execute(path, timeout=600):
    """Execute a notebook in place, in its own folder (as the book build does);
    return the seconds it took. Needs nbclient (installed with the book extra)."""
    import time

    import nbformat
    from .nbrun import notebook_client

    path = pathlib.Path(path)
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    notebook_client(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    nbformat.write(nb, path)
    return time.perf_counter() - start
