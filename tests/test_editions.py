"""The notebook editions (full/ and student/) and the MyST converter behind them.

One small book is built in a temporary folder (two pages, a bibliography, a
figure); each test converts one construct and compares the Markdown with what
the online book shows. Then the real editions: current, and free of MyST.
"""
import json
import pathlib
import re

import pytest

from rnnlab.book import editions, myst

ROOT = pathlib.Path(__file__).resolve().parents[1]
BASE = "https://example.org/book/"

BIB = """@article{smith2001, title={A}, author={Smith, Ann}, journal={J}, year={2001}}
@article{lee2005, title={B}, author={Lee, Bo and Kim, Cy}, journal={J}, year={2005}}
@article{roe2010, title={C}, author={Roe, D. and Poe, E. and M{\\"u}ller, F.}, journal={J}, year={2010}}
"""

PAGE_A = [
    "# Page A\n\nWe follow {cite}`smith2001` and {cite:t}`lee2005`.",
    "(sec-a)=\n## First section\n\n$$\nx = 1\n$$ (eq-a)\n\n```{prf:theorem} Title with $x$\n:label: thm-a\n\nBody.\n```",
    "```{prf:theorem} Unnumbered\n:label: thm-b\n:nonumber:\n\nStatement.\n```\n\n```{prf:proof}\nBecause.\n```",
    "```{exercise} ★★ Derive it\n:label: ex-a\n\nShow {eq}`eq-a`.\n```\n\n```{solution} ex-a\n:class: dropdown\n\nThe answer is 42.\n```",
]
PAGE_B = [
    "# Page B\n\nSee {ref}`sec-a`, {eq}`eq-b`, {eq}`eq-a`, {prf:ref}`thm-a`, {prf:ref}`the theorem <thm-a>`, "
    "{doc}`a`, {doc}`the first page <a>`, {term}`Spectral radius`, {term}`spectral  radius`, {numref}`fig-b`, {ref}`ex-a`.",
    "$$\ny = 2\n$$ (eq-b)\n\n```{prf:proposition} Prop\n:label: prop-b\n\n$$\nz\n$$\n```\n\n"
    "```{prf:theorem} Second\n:label: thm-c\n```",
    "```{note}\nA note with {cite}`roe2010`.\n```\n\n```{admonition} Reproduction notes: timings\n"
    ":class: dropdown reproduction\n\nIt took 3 s.\n```\n\n```{important}\nKey point.\n```",
    "```{figure} figures/pic.svg\n:name: fig-b\n:alt: A red square\n\nThe caption.\n```",
    "```{exercise} ★ Code it\n:label: ex-b\n\nWrite f.\n```",
    "```{solution-start} ex-b\n:class: dropdown\n```\n\nThe idea, in words.",
    ("code", "def f(x):\n    return x"),
    "Still the solution.\n\n```{solution-end}\n```\n\nAfter the solution.",
    ("code", "plot()", {"mystnb": {"figure": {"name": "fig-c", "caption": "A plot of $x$ ({eq}`eq-b`)."},
                                   "image": {"alt": "A line."}}}),
    ("code", "# Guard: the numbers above.\nassert True", {"tags": ["remove-input"]}),
    ("code", "static_figure()"),
    ("code", "the_widget()"),
    "```{exercise} ★★★ Third\n:label: ex-c\n\nWrite g, see {ref}`ex-b`.\n```",
    ("code", "def g(x):\n    raise NotImplementedError", {"tags": ["exercise-starter"]}),
    "```{solution-start} ex-c\n:class: dropdown\n```",
    ("code", "def g(x):\n    return x + 1  # the solution of ex-c"),
    "```{solution-end}\n```",
    ("code", "from rnnlab.checks import check\ncheck(\"ex-c\", g)", {"tags": ["exercise-check"]}),
]
PNG = "iVBORw0KGgo="          # stands for a stored picture (base64)
WIDGET = {"model_id": "abc", "version_major": 2, "version_minor": 0}


def _nb(cells):
    out = []
    for c in cells:
        kind, src, *meta = ("markdown", c) if isinstance(c, str) else c
        cell = {"cell_type": kind, "metadata": meta[0] if meta else {}, "source": src}
        if kind == "code":
            outputs = [{"output_type": "stream", "name": "stdout", "text": "x\n"}]
            if src in ("plot()", "static_figure()"):
                outputs.append({"output_type": "display_data", "metadata": {},
                                "data": {"image/png": PNG, "text/plain": "<Figure>"}})
            if src == "the_widget()":
                outputs = [{"output_type": "display_data", "metadata": {},
                            "data": {"application/vnd.jupyter.widget-view+json": WIDGET, "text/plain": "W"}}]
            cell.update(execution_count=1, outputs=outputs)
        out.append(cell)
    return {"cells": out, "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    root = tmp_path_factory.mktemp("book")
    (root / "_config.yml").write_text(f"title: t\nrepository:\n  url: https://github.com/someone/thebook\n"
                                      f"  branch: main\nhtml:\n  baseurl: {BASE}\n")
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n"
                                   "  - file: book/ch/a\n  - file: book/ch/b\n  - file: book/glossary\n")
    (root / "book" / "ch" / "figures").mkdir(parents=True)
    (root / "book" / "intro.md").write_text("# Intro\n")
    (root / "book" / "glossary.md").write_text(
        "# Glossary\n\n```{glossary}\nSpectral radius\n  The largest |eigenvalue|.\n```\n")
    (root / "book" / "references.bib").write_text(BIB)
    (root / "book" / "ch" / "figures" / "pic.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"/>')
    (root / "book" / "ch" / "figures" / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (root / "book" / "ch" / "a.ipynb").write_text(json.dumps(_nb(PAGE_A)))
    (root / "book" / "ch" / "b.ipynb").write_text(json.dumps(_nb(PAGE_B)))
    return root


@pytest.fixture(scope="module")
def index(book):
    return myst.BookIndex(book)


def _md(nb):
    return [("".join(c["source"]), c) for c in nb["cells"]]


def _full(book, index, name):
    nb = json.loads((book / "book" / "ch" / name).read_text())
    return editions.full_edition(nb, f"ch/{name}", index)


def test_numbers_follow_the_toc_one_counter_per_kind(index):
    t = index.targets
    assert (t["thm-a"].number, t["thm-b"].number, t["thm-c"].number) == (1, None, 2)
    assert t["prop-b"].number == 1 and t["ex-a"].number == 1 and t["ex-b"].number == 2 and t["ex-c"].number == 3
    assert (t["eq-a"].number, t["eq-b"].number, t["fig-b"].number, t["fig-c"].number) == (1, 2, 1, 2)
    assert t["sec-a"].title == "First section" and index.titles["book/ch/a"] == "Page A"


def test_citations_are_author_year_linked_to_the_bibliography(book, index):
    text = _md(_full(book, index, "a.ipynb"))[0][0]
    link = f"{BASE}book/bibliography.html"
    assert f"We follow ([Smith, 2001]({link})) and [Lee and Kim (2005)]({link})." in text
    assert index.bib["roe2010"] == ("Roe et al.", "2010")


def test_theorems_proofs_and_equations(book, index):
    cells = [t for t, _ in _md(_full(book, index, "a.ipynb"))]
    assert "(sec-a)=" not in cells[2]
    assert "$$\nx = 1 \\tag{1}\n$$" in cells[2]
    assert "**Theorem 1** (Title with $x$).\n\nBody." in cells[2]
    assert "**Theorem** (Unnumbered).\n\nStatement." in cells[3]
    assert cells[3].endswith("*Proof.* Because. ∎")


def test_exercise_heading_and_prose_solution(book, index):
    cell = _md(_full(book, index, "a.ipynb"))[4][0]
    assert cell.startswith("### Exercise 1 ★★: Derive it\n\nShow (1).")
    assert ("<details>\n<summary><b>Solution to Exercise 1 (★★ Derive it)</b></summary>\n\n"
            "The answer is 42.\n\n</details>") in cell


def test_references_across_pages_link_to_the_online_book(book, index):
    text = _md(_full(book, index, "b.ipynb"))[0][0]
    a = f"{BASE}book/ch/a.html"
    for expected in (f"[First section]({a}#sec-a)", "(2),", f"[(1)]({a}#equation-eq-a)",
                     f"[Theorem 1]({a}#thm-a)", f"[the theorem]({a}#thm-a)", f"[Page A]({a})",
                     f"[the first page]({a})", f"[Spectral radius]({BASE}book/glossary.html#term-Spectral-radius)",
                     # Sphinx matches a term whatever its case; the id keeps the glossary's spelling.
                     f"[spectral  radius]({BASE}book/glossary.html#term-Spectral-radius)",
                     "Fig. 1", f"[Exercise 1 (★★ Derive it)]({a}#ex-a)"):
        assert expected in text, expected


def test_a_term_the_glossary_does_not_define_is_an_error(book, index):
    ctx = myst.Context(index=index, doc="book/ch/b", where="b.ipynb")
    assert myst.render_role("term", "the spectral radius <SPECTRAL RADIUS>", ctx).endswith("#term-Spectral-radius)")
    with pytest.raises(myst.MystError, match="'Spectral radii'.*does not define"):
        myst.render_role("term", "Spectral radii", ctx)


def test_admonitions_notes_and_figures(book, index):
    cells = _md(_full(book, index, "b.ipynb"))
    prop = cells[2][0]
    assert "**Proposition 1** (Prop).\n\n$$\nz\n$$" in prop and "**Theorem 2** (Second)." in prop
    notes = cells[3][0]
    assert notes.startswith("<blockquote>\n\n**Note**\n\nA note with ([Roe et al., 2010](")
    assert "<details>\n<summary><b>Reproduction notes: timings</b></summary>\n\nIt took 3 s.\n\n</details>" in notes
    assert "<blockquote>\n\n**Important**\n\nKey point.\n\n</blockquote>" in notes
    figure, cell = cells[4]
    # The PNG beside the SVG, at the repository's raw URL (Colab renders no attachment, JupyterLab 4
    # no SVG attachment); the alt text kept.
    assert figure == ("![A red square](https://raw.githubusercontent.com/someone/thebook/main/book/ch/figures/pic.png)"
                      "\n\n*Figure 1.* The caption.")
    assert "attachments" not in cell


def test_gated_solution_folds_across_cells_in_the_full_edition(book, index):
    nb = _full(book, index, "b.ipynb")
    cells = _md(nb)
    summary = "<summary><b>Solution to Exercise 2 (★ Code it)</b></summary>"
    assert cells[6][0].startswith("<details>\n" + summary + "\n\nThe idea, in words.\n\n</details>")
    code = cells[7][1]
    assert code["cell_type"] == "code" and code["outputs"] == [] and code["execution_count"] is None
    assert code["source"][0] == "# @title Solution to Exercise 2 (★ Code it) (the code)\n"
    assert code["metadata"] == {"cellView": "form", "jupyter": {"source_hidden": True}}
    assert cells[8][0] == ("<details>\n" + summary + "\n\nStill the solution.\n\n</details>\n\n"
                           "After the solution.")
    assert nb["metadata"]["rnnlab"] == {"edition": "full", "source": "book/ch/b.ipynb"}


def test_student_edition_has_no_solution_and_converted_text(book, index):
    nb = json.loads((book / "book" / "ch" / "b.ipynb").read_text())
    student, removed = editions.student_edition(nb, "ch/b.ipynb", index)
    text = json.dumps(student)
    for secret in ("The idea, in words", "return x", "Still the solution", "<details>\\n<summary><b>Solution"):
        assert secret not in text
    sources = ["".join(c["source"]) for c in student["cells"]]
    # Numbered within the notebook (the book's Exercise 2 and 3 are this page's 1 and 2), references too.
    assert "### Exercise 1 ★: Code it\n\nWrite f." in sources
    assert "### Exercise 2 ★★★: Third\n\nWrite g, see Exercise 1 (★ Code it)." in sources
    assert "{exercise}" not in text and "{cite}" not in text
    assert "the solution of ex-c" not in text


def test_student_banner_sends_the_student_nowhere_near_the_solutions(book, index):
    nb = json.loads((book / "book" / "ch" / "b.ipynb").read_text())
    student, _ = editions.student_edition(nb, "ch/b.ipynb", index)
    banner = "".join(student["cells"][1]["source"])
    assert "Student version" in banner
    assert "book/" not in banner and "chapter notebook" not in banner and "edit" not in banner.lower()


def test_guard_cells_are_folded_in_both_editions(book, index):
    nb = json.loads((book / "book" / "ch" / "b.ipynb").read_text())
    full = editions.full_edition(nb, "ch/b.ipynb", index)
    student, _ = editions.student_edition(nb, "ch/b.ipynb", index)
    for edition in (full, student):
        guard = next(c for c in edition["cells"] if "assert True" in "".join(c["source"]))
        assert "".join(guard["source"]) == "# @title Guard: the numbers above.\nassert True"
        assert guard["metadata"]["cellView"] == "form"
        assert guard["metadata"]["jupyter"] == {"source_hidden": True}


def test_run_all_checks_the_starter_before_the_solution(book, index):
    nb = json.loads((book / "book" / "ch" / "b.ipynb").read_text())
    sources = ["".join(c["source"]) for c in editions.full_edition(nb, "ch/b.ipynb", index)["cells"]]
    starter = sources.index("def g(x):\n    raise NotImplementedError")
    check = next(i for i, s in enumerate(sources) if 'check("ex-c", g)' in s)
    solution = next(i for i, s in enumerate(sources) if "the solution of ex-c" in s)
    assert starter < check < solution
    assert sources[check + 1].startswith("<details>") or sources[check + 1] == sources[solution]


def test_pictures_show_before_running_and_widgets_say_what_they_show(book, index):
    nb = json.loads((book / "book" / "ch" / "b.ipynb").read_text())
    full = editions.full_edition(nb, "ch/b.ipynb", index)
    student, _ = editions.student_edition(nb, "ch/b.ipynb", index)
    picture = [{"output_type": "display_data", "data": {"image/png": PNG}, "metadata": {}}]
    for edition in (full, student):
        cells = {"".join(c["source"]): (k, c) for k, c in enumerate(edition["cells"])}
        assert cells["plot()"][1]["outputs"] == picture            # a captioned figure
        assert cells["static_figure()"][1]["outputs"] == picture   # the static figure before a widget
        k, widget = cells["the_widget()"]
        assert widget["outputs"] == []
        note = "".join(edition["cells"][k - 1]["source"])
        assert note.startswith("**Interactive figure.** The next cell shows an interactive version of the figure above")


@pytest.mark.parametrize("source, message", [
    ("{unknownrole}`x`", "the role {unknownrole}"),
    ("```{margin}\nx\n```", "the directive {margin}"),
    ("{ref}`no-such-label`", "unknown label 'no-such-label'"),
    ("{cite}`nobody1999`", "unknown citation key 'nobody1999'"),
    ("```{figure} figures/pic.svg\n:name: f\n\nNo alt.\n```", "has no :alt: text"),
])
def test_what_cannot_be_converted_is_an_error_naming_it(index, source, message):
    ctx = myst.Context(index, "book/ch/b", where="book/ch/b.ipynb, cell 9")
    with pytest.raises(myst.MystError, match=re.escape(message)):
        myst.convert(source, ctx)


def test_roles_in_code_spans_and_blocks_stay_as_they_are(index):
    ctx = myst.Context(index, "book/ch/b")
    text = "Write `{cite}` roles.\n\n```python\nx = '{eq}`y`'\n```"
    assert myst.convert(text, ctx) == text


def test_a_role_broken_over_two_lines(index):
    ctx = myst.Context(index, "book/ch/a")
    assert myst.convert("see {ref}`the first\nsection <sec-a>` here", ctx) == "see the first section\n here"


# --------------------------------------------------------------------------- the real editions

MYST_LEFT = [
    (re.compile(r"^\s*(`{3,}|:{3,})\s*\{", re.M), "a fenced block whose info string starts with {"),
    (re.compile(r"\{[\w:.-]+\}`"), "role text {name}`"),
    (re.compile(r"^\([\w-]+\)=\s*$", re.M), "a (label)= line"),
]


@pytest.fixture(scope="module")
def real_editions():
    return editions.edition_files(ROOT)


def test_editions_are_current():
    assert editions.stale_editions(ROOT) == []


def test_every_edition_notebook_is_free_of_myst(real_editions):
    assert {e for e, _ in real_editions} == {"full", "student"}
    for (edition, rel), (text, _, _) in real_editions.items():
        nb = json.loads(text)
        for n, cell in enumerate(nb["cells"], 1):
            if cell["cell_type"] != "markdown":
                continue
            src = "".join(cell["source"])
            for pattern, what in MYST_LEFT:
                assert not pattern.search(src), f"{edition}/{rel}, cell {n}: {what}"


def test_full_edition_keeps_every_cell_of_the_chapter_and_only_pictures(real_editions):
    for (edition, rel), (text, _, chapter) in real_editions.items():
        if edition != "full":
            continue
        nb = json.loads(text)
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        assert len(code) == sum(c["cell_type"] == "code" for c in chapter["cells"]), rel
        for c in code:
            assert c["execution_count"] is None, rel
            assert all(set(o["data"]) == {"image/png"} for o in c["outputs"]), rel


def test_editions_respect_colabs_limits(real_editions):
    """Colab renders no cell attachment (googlecolab/colabtools#3836) and no SVG data URI (#2092);
    the pictures are PNGs at the repository's URL, each a file of the repository."""
    prefix = myst.raw_url(ROOT, "")
    for (edition, rel), (text, _, _) in real_editions.items():
        nb = json.loads(text)
        assert not any("attachments" in c for c in nb["cells"]), f"{edition}/{rel}: a cell attachment"
        assert "data:image/svg" not in text and "attachment:" not in text, f"{edition}/{rel}"
        for c in nb["cells"]:
            if c["cell_type"] != "markdown":
                continue
            for alt, url in re.findall(r"!\[([^\]]*)\]\(([^)\s]+)\)", "".join(c["source"])):
                assert alt.strip(), f"{edition}/{rel}: an image without alt text"
                assert url.startswith(prefix) and url.endswith(".png"), url
                path = ROOT / url[len(prefix):]
                assert path.is_file() and path.stat().st_size < 150_000, url


def test_run_all_never_runs_a_solution_before_its_check(real_editions):
    for (edition, rel), (text, _, _) in real_editions.items():
        last = None
        for c in json.loads(text)["cells"]:
            src, tags = "".join(c["source"]), c.get("metadata", {}).get("tags", [])
            if c["cell_type"] != "code":
                continue
            if "exercise-starter" in tags:
                last = "starter"
            elif src.startswith("# @title Solution to"):
                last = "solution"
            elif "exercise-check" in tags:
                assert last == "starter", f"{edition}/{rel}: a solution runs before {src.splitlines()[-1]}"


def test_every_captioned_figure_shows_before_running(real_editions):
    """A caption ("*Figure N.* ...") follows a picture: an image in its cell, or the cell above
    stores one."""
    for (edition, rel), (text, _, _) in real_editions.items():
        cells = json.loads(text)["cells"]
        for k, c in enumerate(cells):
            src = "".join(c["source"])
            if c["cell_type"] == "markdown" and re.search(r"^\*Figure \d+\.\*", src, re.M):
                caption_at = re.search(r"^\*Figure \d+\.\*", src, re.M).start()
                has_image = "![" in src[:caption_at]
                above = cells[k - 1] if k else {}
                assert has_image or above.get("outputs"), f"{edition}/{rel}, cell {k + 1}: a caption under no picture"


def test_student_edition_folds_as_the_full_edition(real_editions):
    for (edition, rel), (text, _, _) in real_editions.items():
        for c in json.loads(text)["cells"]:
            tags = c.get("metadata", {}).get("tags", [])
            if c["cell_type"] == "code" and any(t in tags for t in editions.FOLD_TAGS):
                assert c["metadata"].get("jupyter") == {"source_hidden": True}, (edition, rel)
                assert c["metadata"].get("cellView") == "form" and c["source"][0].startswith("# @title")


def test_student_exercises_are_numbered_within_the_notebook(real_editions):
    for (edition, rel), (text, _, _) in real_editions.items():
        if edition == "student":
            numbers = [int(n) for c in json.loads(text)["cells"] if c["cell_type"] == "markdown"
                       for n in re.findall(r"^### Exercise (\d+)", "".join(c["source"]), re.M)]
            assert numbers == list(range(1, len(numbers) + 1)), (rel, numbers)


def test_classroom_code_imports_nothing_of_the_books_maintenance():
    """Imports point one way: rnnlab.book (editions) uses rnnlab.checks, never the reverse."""
    import ast

    for path in (ROOT / "rnnlab" / "checks").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf8"))):
            if isinstance(node, ast.ImportFrom):
                name = "." * node.level + (node.module or "")
                assert not (name.startswith("rnnlab.book") or (node.level >= 2 and (node.module or "").startswith("book"))), \
                    f"{path.relative_to(ROOT)} imports {name}"
            elif isinstance(node, ast.Import):
                assert not any(a.name.startswith("rnnlab.book") for a in node.names), path


def test_a_code_cell_figure_gets_its_numbered_caption_below_it(book, index):
    nb = json.loads((book / "book" / "ch" / "b.ipynb").read_text())
    full = editions.full_edition(nb, "ch/b.ipynb", index)
    student, _ = editions.student_edition(nb, "ch/b.ipynb", index)
    for edition in (full, student):
        sources = ["".join(c["source"]) for c in edition["cells"]]
        at = sources.index("plot()")
        assert sources[at + 1] == "*Figure 2.* A plot of $x$ ((2))."
        assert edition["cells"][at]["metadata"].get("mystnb") is None


def test_pinned_notebooks_show_the_pictures_of_their_version(tmp_path):
    """A teacher's ``sync-setup --ref TAG`` pins rnnlab in every setup cell: the pictures come from TAG."""
    from rnnlab.book.maintenance import setup_cell_source

    url = "https://github.com/someone/thebook"
    (tmp_path / "_config.yml").write_text(f"title: t\nrepository:\n  url: {url}\n  branch: main\n"
                                          f"html:\n  baseurl: {BASE}\n")
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/ch/a\n")
    (tmp_path / "book" / "ch" / "figures").mkdir(parents=True)
    (tmp_path / "book" / "ch" / "figures" / "pic.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"/>')
    (tmp_path / "book" / "ch" / "figures" / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    cells = ["# A", ("code", setup_cell_source(url, "term-2026")),
             "```{figure} figures/pic.svg\n:alt: A square\n```"]
    (tmp_path / "book" / "ch" / "a.ipynb").write_text(json.dumps(_nb(cells)))
    index = myst.BookIndex(tmp_path)
    nb = json.loads((tmp_path / "book" / "ch" / "a.ipynb").read_text())
    text = json.dumps(editions.full_edition(nb, "ch/a.ipynb", index))
    assert "https://raw.githubusercontent.com/someone/thebook/term-2026/book/ch/figures/pic.png" in text


def test_every_edition_notebook_is_valid_nbformat(real_editions):
    """Jupyter, Colab and VS Code refuse or repair a notebook that breaks the nbformat schema."""
    import nbformat

    for (edition, rel), (text, _, _) in real_editions.items():
        nbformat.validate(nbformat.reads(text, as_version=4))


# ------------------------------------------------------------- the leak check reads the solutions on its own (issue 40)

from rnnlab.checks import student as st  # noqa: E402

NESTED_THREE = ("```{exercise} Prove it\n:label: ex-n\n\nShow it.\n```\n\n"
                "```{solution} ex-n\n:class: dropdown\n\nFirst, in code:\n```python\nx = 42\n```\n"
                "Then n = 2.\nAnd by induction on n, the rest.\n```\n\nAfter.")
NESTED_FOUR = NESTED_THREE.replace("```{solution} ex-n", "````{solution} ex-n").replace(
    "the rest.\n```\n\nAfter.", "the rest.\n````\n\nAfter.")
NESTED_COLON = NESTED_THREE.replace("```{solution} ex-n", ":::{solution} ex-n").replace(
    "the rest.\n```\n\nAfter.", "the rest.\n:::\n\nAfter.")


def test_solution_lines_follow_nested_fences():
    for source in (NESTED_THREE, NESTED_FOUR, NESTED_COLON):
        inside, outside = st.solution_lines(_nb(["# T", source]))
        assert {"First, in code:", "x = 42", "Then n = 2.", "And by induction on n, the rest."} <= set(inside)
        assert "After." in outside and "Show it." in outside and "Then n = 2." not in outside


def test_solution_lines_of_a_gated_solution_take_its_cells():
    nb = _nb(["Before.\n\n```{solution-start} ex-g\n:class: dropdown\n```\n\nIn words.",
              ("code", "y = 1"), "```{solution-end}\n```\n\nAfter.", ("code", "z = 2")])
    inside, outside = st.solution_lines(nb)
    assert {"In words.", "y = 1", "```{solution-end}"} <= set(inside)
    assert {"Before.", "After.", "z = 2"} <= set(outside) and "y = 1" not in outside


def test_a_solution_with_a_nested_fence_of_the_same_length_is_caught():
    """The remover ends a three-backtick {solution} at its inner code fence's close, so the prose after
    it stays in the student notebook, and the remover never recorded it as removed."""
    nb = _nb(["# T", NESTED_THREE])
    student, removed = st.student_notebook(nb)
    text = json.dumps(student)
    assert "Then n = 2." in text and "Then n = 2." not in removed        # what the remover missed
    problems = st.leaks(student, removed, nb)
    assert any("Then n = 2." in p for p in problems), problems          # 11 characters: no length floor
    assert any("And by induction on n" in p for p in problems), problems


@pytest.mark.parametrize("source", [NESTED_FOUR, NESTED_COLON])
def test_a_solution_with_a_properly_nested_fence_leaks_nothing(source):
    nb = _nb(["# T", source])
    student, removed = st.student_notebook(nb)
    assert "Then n = 2." not in json.dumps(student)
    assert st.leaks(student, removed, nb) == []


def test_a_short_solution_line_copied_into_the_student_notebook_is_caught():
    nb = _nb(["```{exercise} A\n:label: ex-s\n```", ("code", "import numpy as np"),
              "```{solution-start} ex-s\n```", ("code", "import numpy as np\nk = 7"), "```{solution-end}\n```"])
    student, removed = st.student_notebook(nb)
    assert st.leaks(student, removed, nb) == []          # the setup line the solution repeats is no leak
    student["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                             "source": "k = 7"})
    assert any("'k = 7'" in p for p in st.leaks(student, removed, nb))
    # found without the remover's record too
    assert any("'k = 7'" in p for p in st.leaks(student, "", nb))


def test_the_student_edition_refuses_a_nested_fence_leak(book, index):
    nb = json.loads((book / "book" / "ch" / "a.ipynb").read_text())
    nb["cells"][3]["source"] = ("```{exercise} ★★ Derive it\n:label: ex-a\n\nShow it.\n```\n\n"
                                "```{solution} ex-a\n:class: dropdown\n\n```python\nx = 42\n```\n"
                                "Then n = 2.\n```")
    student, removed = editions.student_edition(nb, "ch/a.ipynb", index)
    assert "Then n = 2." in json.dumps(student)
    with pytest.raises(ValueError, match="Then n = 2"):
        editions._check_leaks({("student", "ch/a.ipynb"): (editions.dump(student), removed, nb)})
