"""The book's structure: setup cell, table of contents, stored outputs, config."""
import json
import pathlib
import re

import pytest

from rnnlab import book

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_every_notebook_is_clean_listed_and_starts_with_the_setup_cell():
    assert book.notebooks(ROOT), "the book has no notebooks"
    assert book.check(ROOT) == []


def test_setup_cell_uses_the_one_repository_url():
    url = book.repository_url(ROOT)
    assert url.startswith("https://")
    assert f"git+{url}" in book.setup_cell_source(url)


def test_every_toc_entry_exists():
    for name in book.toc_files(ROOT):
        matches = [p for p in (ROOT / (name + ext) for ext in (".md", ".ipynb")) if p.exists()]
        assert matches, f"_toc.yml names {name}, which does not exist"


def test_sources_are_not_served_next_to_pages():
    config = (ROOT / "_config.yml").read_text()
    assert re.search(r"^\s+html_copy_source:\s*false", config, re.M)


def test_no_control_characters_in_cell_sources():
    # A LaTeX command written through a Python string without r"" turns "\\t" or
    # "\\r" into a TAB or a carriage return, and "$\\tanh$" renders broken.
    bad = []
    for path in book.notebooks(ROOT):
        cells = json.loads(path.read_text())["cells"]
        for index, cell in enumerate(cells):
            text = "".join(cell["source"])
            if re.search(r"[\x00-\x09\x0b-\x1f]", text):
                bad.append(f"{path.relative_to(ROOT)} cell {index}")
    assert not bad, "control characters in: " + ", ".join(bad)


def test_sync_setup_rewrites_a_stale_cell(tmp_path):
    (tmp_path / "book").mkdir()
    (tmp_path / "_config.yml").write_text("repository:\n  url: https://example.org/fork/rnnlab\n  branch: main\n")
    (tmp_path / "_toc.yml").write_text("root: book/a\n")
    stale = book.setup_cell_source("https://old.example/rnnlab")
    nb = '{"cells": [{"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [], "source": %s}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'
    import json
    (tmp_path / "book" / "a.ipynb").write_text(nb % json.dumps(stale))
    assert book.check(tmp_path) != []
    assert book.sync_setup(tmp_path) == [tmp_path / "book" / "a.ipynb"]
    assert book.check(tmp_path) == []


def test_repository_url_missing_is_a_clear_error(tmp_path):
    (tmp_path / "_config.yml").write_text("title: x\n")
    with pytest.raises(ValueError, match="repository.url"):
        book.repository_url(tmp_path)


def test_a_line_beginning_with_a_matrix_environment_is_caught():
    # amsmath turns a line that begins with \begin{pmatrix} into a numbered display of its own,
    # even inside a paragraph's $...$: the inline math breaks and every later equation number
    # shifts (the online book and the editions then disagree). Inside $$ it is harmless.
    from rnnlab.book.maintenance import stray_amsmath
    inline = "so $Q =\n\\begin{pmatrix} 1 & 0 \\\\ 0 & 1\\end{pmatrix}\n= I$ holds.\n"
    assert stray_amsmath(inline) == ["\\begin{pmatrix} 1 & 0 \\\\ 0 & 1\\end{pmatrix}"]
    assert stray_amsmath("```{solution} ex\n:class: dropdown\n\n" + inline + "```\n")
    display = "so\n\n$$\nQ =\n\\begin{pmatrix} 1 & 0 \\\\ 0 & 1\\end{pmatrix}\n$$\n\nholds.\n"
    assert stray_amsmath(display) == []
    assert stray_amsmath("one $Q = \\begin{pmatrix} 1 \\end{pmatrix}$ line\n") == []


def test_a_folded_proof_without_a_title_is_caught():
    # sphinx-togglebutton looks for the admonition title of every .dropdown; a {prf:proof} has none,
    # and the page throws "Cannot read properties of null (reading 'insertAdjacentHTML')".
    from rnnlab.book.maintenance import untitled_dropdowns
    bare = "```{prf:proof}\n:class: dropdown\n\nIt holds.\n```\n"
    assert untitled_dropdowns(bare) == ["prf:proof"]
    folded = "````{admonition} Proof\n:class: dropdown\n```{prf:proof}\nIt holds.\n```\n````\n"
    assert untitled_dropdowns(folded) == []


def test_a_bare_reference_to_an_untitled_target_is_caught():
    # A (label)= before an admonition has no title: {ref}`label` makes Sphinx warn "A title or
    # caption not found", and the README's build (-W) fails; {ref}`text <label>` is fine.
    from rnnlab.book.book_index import Target
    from rnnlab.book.maintenance import untitled_refs

    class Index:
        targets = {"ex-limits": Target("book/a", "section", None, ""),
                   "ex-sec": Target("book/b", "section", None, "A section")}
    bare = ("c: cell 2", "See {ref}`ex-limits` and {ref}`ex-sec`.")
    titled = ("d: cell 3", "See {ref}`the limits <ex-limits>`.")
    assert untitled_refs([bare, titled], Index) == [("c: cell 2", "ex-limits")]


def test_the_book_index_leaves_a_target_before_an_admonition_untitled(tmp_path):
    from rnnlab.book.book_index import BookIndex
    (tmp_path / "book").mkdir()
    (tmp_path / "_toc.yml").write_text("root: book/a\n")
    (tmp_path / "_config.yml").write_text("repository:\n  url: https://example.org/x/y\n")
    (tmp_path / "book" / "a.md").write_text(
        "# A\n\n(ex-limits)=\n```{admonition} Limits\n:class: dropdown\nText.\n```\n\n"
        "(ex-sec)=\n## A section\n")
    targets = BookIndex(tmp_path, base_url="https://example.org").targets
    assert targets["ex-limits"].title == "" and targets["ex-sec"].title == "A section"
