"""The lecture slides (rnnlab.course.slides): one deck per chapter, written from the current pages.

tests/browser/test_slides.py opens the decks in Chromium; these tests read the files.
"""
from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import pytest

from rnnlab.__main__ import main as rnnlab_main
from rnnlab.course import plan, slides

ROOT = slides.ROOT


def _main_line_figures(texts):
    """How many {figure} directives of these markdown cells sit on the main line: not inside a
    folded note (a dropdown or reproduction admonition, a proof, an exercise or a solution).
    A line scanner of its own, independent of the slides' MyST parser."""
    count = 0
    for text in texts:
        stack = []                                      # (fence, folded) of the open directives
        lines = text.split("\n")
        for i, line in enumerate(lines):
            opened = re.match(r"^\s*(`{3,}|:{3,})\{([\w:-]+)\}", line)
            if opened:
                fence, name = opened.groups()
                options = []
                for nxt in lines[i + 1:]:
                    if not re.match(r"^\s*:[\w-]+:", nxt):
                        break
                    options.append(nxt)
                classes = " ".join(o for o in options if o.strip().startswith(":class:"))
                folded = (name in ("prf:proof", "solution", "exercise", "solution-start")
                          or "dropdown" in classes or "reproduction" in classes)
                if name == "figure" and not folded and not any(f for _, f in stack):
                    count += 1
                stack.append((fence, folded))
                continue
            closed = re.match(r"^\s*(`{3,}|:{3,})\s*$", line)
            if closed and stack and closed.group(1)[0] == stack[-1][0][0] \
                    and len(closed.group(1)) >= len(stack[-1][0]):
                stack.pop()
    return count


def _markdown(rel, root=ROOT):
    cells = json.loads((Path(root) / "book" / f"{rel}.ipynb").read_text(encoding="utf8"))["cells"]
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in cells if c["cell_type"] == "markdown"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every deck, written once through ``python -m rnnlab course-slides``: (folder, decks by chapter)."""
    out = tmp_path_factory.mktemp("slides")
    assert rnnlab_main(["course-slides", "--out", str(out)]) == 0
    weeks = {name: slides.plan_weeks(name) for name in plan.PLANS}
    decks = {chapter: slides.read_deck(chapter, ROOT, weeks) for chapter in slides.chapters()}
    return out, decks


def test_every_chapter_yields_a_deck(built):
    out, decks = built
    assert list(decks) == ["scans", "lds", "memory", "lowrank", "contraction"]
    assert {rel.split("/")[0] for rel in plan.lessons()} == set(decks)
    index = (out / "index.html").read_text(encoding="utf8")
    for chapter, deck in decks.items():
        text = (out / chapter / "index.html").read_text(encoding="utf8")
        assert f'href="{chapter}/index.html"' in index
        ours = [rel for rel in plan.lessons() if rel.startswith(chapter + "/")]
        assert [lesson.rel for lesson in deck.lessons] == ours
        n = text.count('<section class="slide ')
        # a title slide; per lesson its ideas, its schematics, its equations and its exercises
        assert n >= 1 + sum(2 + len(lesson.figures) + bool(lesson.equations) for lesson in deck.lessons), chapter
        assert text.count('<section class="slide exercises"') == len(deck.lessons)
        for lesson in deck.lessons:
            assert html.escape(lesson.page.title, quote=False).split("$")[0] in text


def test_every_image_and_script_a_deck_references_exists(built):
    out, decks = built
    for chapter, deck in decks.items():
        folder = out / chapter
        text = (folder / "index.html").read_text(encoding="utf8")
        sources = re.findall(r'<(?:img|script)[^>]*\bsrc="([^"]+)"', text)
        assert any(s.endswith("tex-chtml.js") for s in sources), chapter
        for src in sources:
            assert not re.match(r"^[a-z]+:", src), f"{chapter}: {src} is not a local file"
            assert (folder / src).is_file(), f"{chapter}: {src} does not exist"
        images = re.findall(r'<img src="([^"]+)"', text)
        assert len(images) == sum(len(lesson.figures) for lesson in deck.lessons), chapter
        for lesson in deck.lessons:
            # every {figure} of the page's main line is on a slide (one in a folded note is not)
            directives = _main_line_figures(_markdown(lesson.rel))
            assert len(lesson.figures) == directives, lesson.rel
            for fig in lesson.figures:
                assert fig.path.parent.name == "figures" and fig.path.suffix == ".svg", fig.path
                assert (folder / "figures" / fig.path.name).read_bytes() == fig.path.read_bytes()
                assert f'alt="{html.escape(fig.alt)}"' in text


def test_every_equation_comes_from_the_current_page(built):
    out, decks = built
    extras = slides.extra_equations()
    from rnnlab.book.myst import BookIndex

    index = BookIndex(ROOT)
    for chapter, deck in decks.items():
        text = (out / chapter / "index.html").read_text(encoding="utf8")
        for lesson in deck.lessons:
            source = "\n".join(_markdown(lesson.rel))
            for eq in lesson.equations:
                assert eq.tex in source, (lesson.rel, eq.tex)
                assert html.escape(eq.tex, quote=False) in text, (lesson.rel, eq.tex)
                # the rule: numbered, stated in a definition/theorem/..., or listed in slides_equations.yaml
                assert eq.label or eq.statement or any(s in eq.tex for s in extras.get(lesson.rel, [])), eq.tex
            # every equation the book numbers on the page is a key equation, with its number
            labels = [label for label, t in index.targets.items()
                      if t.doc == f"book/{lesson.rel}" and t.kind == "equation"]
            assert labels == [eq.label for eq in lesson.equations if eq.label], lesson.rel
            for label in labels:
                assert f"\\tag{{{index.targets[label].number}}}" in text, label


def test_equations_of_proofs_solutions_and_exercises_are_not_key_ones():
    scans = [eq.tex for eq in slides.key_equations("scans/01_associative_scan")]
    assert any("x_1 \\circ x_2 = (a_1, b_1)" in tex for tex in scans)          # the definition
    assert not any("(x \\circ y) \\circ z" in tex for tex in scans)              # its proof
    assert not any("M(a_1, b_1)\\, M(a_2, b_2)" in tex for tex in scans)         # a solution
    lds = [eq.tex for eq in slides.key_equations("lds/01_modal_form")]
    assert not any("\\lambda = e^{i\\theta}, \\qquad s'_t" in tex for tex in lds)  # an exercise


def test_every_entry_of_the_equations_file_still_names_one_equation_of_a_lesson():
    extras = slides.extra_equations()
    assert extras
    for rel, snippets in extras.items():
        assert rel in plan.lessons(), f"{slides.EXTRA_EQUATIONS.name}: {rel} is not a lesson page"
        chosen = slides.key_equations(rel, extras=extras)       # ValueError unless each matches one
        for snippet in snippets:
            assert sum(snippet in eq.tex for eq in chosen) == 1, (rel, snippet)
            assert not any(snippet in eq.tex and (eq.label or eq.statement) for eq in chosen), \
                f"{rel}: {snippet!r} is picked by the rule already: drop it from the file"


def test_a_stale_entry_of_the_equations_file_is_an_error_naming_it():
    with pytest.raises(ValueError, match=r"scans/01_associative_scan: '\\\\gone' matches 0"):
        slides.key_equations("scans/01_associative_scan", extras={"scans/01_associative_scan": ["\\gone"]})


def test_every_summary_bullet_comes_from_the_current_page(built):
    out, decks = built
    conv = slides._Html(ROOT)
    for chapter, deck in decks.items():
        text = (out / chapter / "index.html").read_text(encoding="utf8")
        for lesson in deck.lessons:
            # the Summary admonition, found here with a regular expression, not the plan's parser
            pattern = r"```\{admonition\} Summary\n(?::\w+:[^\n]*\n)*(.*?)\n```"
            summary = [m.group(1) for cell in _markdown(lesson.rel) for m in [re.search(pattern, cell, re.S)] if m]
            assert len(summary) == 1, lesson.rel
            bullets = re.findall(r"^- ", summary[0], re.M)
            assert 3 <= len(lesson.page.ideas) == len(bullets), lesson.rel
            for idea in lesson.page.ideas:
                words = re.sub(r"\{\w+(?::\w+)?\}`[^`]*`|\$[^$]*\$", " ", idea).split()
                assert all(w in " ".join(summary[0].split()) for w in words[:6]), idea
                assert conv.inline(idea) in text, idea


def test_the_week_slides_hold_the_plans_key_ideas(built):
    out, decks = built
    weeks = slides.plan_weeks("10")
    assert [w.number for w in weeks] == list(range(1, 11))
    for w in weeks:
        ideas = [i for rel in w.pages for i in plan.read_page(rel, ROOT / "book").ideas]
        assert w.ideas and all(i in ideas for i in w.ideas), w.title
        assert len(w.ideas) <= plan.IDEAS
        chapter = w.pages[0].split("/")[0]
        text = (out / chapter / "index.html").read_text(encoding="utf8")
        if len(w.pages) > 1:
            assert f"Week {w.number} of the 10-week course" in text
            assert html.escape(w.title, quote=False) in text


def test_a_page_change_shows_up_in_the_deck(tmp_path):
    """Edit a Summary bullet and a numbered equation of a copy of the book: the deck follows."""
    root = tmp_path / "repo"
    root.mkdir()
    for name in ("_toc.yml", "_config.yml"):
        shutil.copy(ROOT / name, root / name)
    shutil.copytree(ROOT / "book", root / "book", ignore=shutil.ignore_patterns("_build", ".ipynb_checkpoints"))
    page = root / "book" / "scans" / "01_associative_scan.ipynb"
    nb = json.loads(page.read_text(encoding="utf8"))
    old_idea = "is associative, not commutative: rebracket"
    old_eq = "h_t = a_t\\, h_{t-1} + b_t, \\qquad t = 1, \\dots, T"
    new_idea = "Prefix scans are everywhere, said a page edited by a test"
    new_eq = "h_t = a_t\\, h_{t-1} + b_t + 0, \\qquad t = 1, \\dots, T"
    found = 0
    for cell in nb["cells"]:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if cell["cell_type"] == "markdown" and (old_idea in source or old_eq in source):
            found += 1
            cell["source"] = source.replace(old_idea, new_idea).replace(old_eq, new_eq)
    assert found == 2
    page.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf8")
    out = tmp_path / "slides"
    slides.write_slides(out, root, ["scans"])
    text = (out / "scans" / "index.html").read_text(encoding="utf8")
    assert new_idea in text and old_idea not in text
    assert html.escape(new_eq, quote=False) in text and html.escape(old_eq, quote=False) not in text
    assert sorted(p.name for p in out.iterdir()) == ["_static", "index.html", "scans"]
