"""python -m rnnlab.book lint: the mechanical conventions of CONTRIBUTING.md."""
import pathlib

import pytest

from rnnlab.book import lint

ROOT = pathlib.Path(__file__).resolve().parents[1]

TOP = ("```{admonition} What you will learn\n:class: tip\n- a\n```\n\n"
       "```{admonition} What you need\n:class: seealso\n- b\n```")
BOTTOM = ("```{admonition} Summary\n:class: tip\n- a\n```\n\n"
          "```{admonition} Where next\n:class: seealso\nNext.\n```")
EXERCISE = "```{exercise} ★★ Derive\n:label: ex-x\n\nDo it.\n```"


def _cell(kind, src, tags=(), outputs=(), meta=None):
    cell = {"cell_type": kind, "metadata": dict(meta or {}), "source": src}
    if tags:
        cell["metadata"]["tags"] = list(tags)
    if kind == "code":
        cell.update(execution_count=1, outputs=list(outputs))
    return cell


def _out(text):
    return {"output_type": "stream", "name": "stdout", "text": text}


def _nb(*middle, top=TOP, bottom=BOTTOM, after=()):
    cells = [_cell("markdown", "# Title\n\n" + top), _cell("code", "# rnnlab setup"),
             *middle, _cell("markdown", EXERCISE), _cell("markdown", bottom), *after]
    return {"cells": cells}


def _rules(nb):
    problems, exemptions = lint.lint_notebook(nb, "book/x/y.ipynb")
    return sorted(p.rule for p in problems), exemptions


def test_a_page_that_follows_the_conventions_passes():
    nb = _nb(_cell("markdown", "The kernel is fast. A commit is a good thing."),
             _cell("code", "print(1)", outputs=[_out("the kernel equals the reference: largest difference 3e-16\n")]))
    assert _rules(nb) == ([], [])


def test_the_frame_is_required_and_placed():
    assert _rules(_nb(top=""))[0] == ["frame", "frame"]
    assert _rules(_nb(bottom=""))[0] == ["frame", "frame"]
    # Summary before the last exercise
    nb = _nb()
    nb["cells"].insert(2, nb["cells"].pop(-1))
    assert "frame" in _rules(nb)[0]
    # only reproduction notes after Where next
    notes = "```{admonition} Reproduction notes\n:class: dropdown reproduction\nRan on this machine.\n```"
    assert _rules(_nb(after=[_cell("markdown", notes), _cell("code", "x", tags=["reproduction"])])) == ([], [])
    assert _rules(_nb(after=[_cell("markdown", "More teaching.")]))[0] == ["frame"]


def test_every_exercise_needs_a_difficulty():
    nb = _nb(_cell("markdown", "```{exercise} No stars\n:label: ex-y\n```"))
    problems, _ = lint.lint_notebook(nb, "n")
    assert [p.rule for p in problems] == ["difficulty"] and "ex-y" in problems[0].message


@pytest.mark.parametrize("text", [
    "It ran on this machine.", "on 2 cores", "two-core machine", "the load average was high", "as the issue asked",
    "both targets PASS", "we pressed Ctrl-C", "at commit 51c7bd1", "run `x` with python -m rnnlab.bench",
    "the run reversal-stack-s0-h32-m16-e16-v8-lr0.005 stalled",
])
def test_logistics_in_the_main_line_is_flagged(text):
    assert _rules(_nb(_cell("markdown", text)))[0] == ["logistics"]


def test_logistics_is_allowed_in_notes_code_and_math():
    notes = f"```{{admonition}} Reproduction notes\n:class: dropdown reproduction\nOn 2 cores, PASS.\n```"
    ok = [notes, "Run `python -m rnnlab.bench` (in code).", "```bash\nmake test\n```",
          "$$\n\\text{PASS}\n$$"]
    for text in ok:
        assert _rules(_nb(_cell("markdown", text)))[0] == [], text
    assert _rules(_nb(_cell("markdown", "On 2 cores.", tags=["reproduction"])))[0] == []


def test_figures_need_alt_text():
    fig = "```{figure} figures/a.svg\n:name: fig-a\n\nCaption.\n```\n\n![](figures/b.png)"
    problems, _ = lint.lint_notebook(_nb(_cell("markdown", fig)), "n")
    assert [p.rule for p in problems] == ["alt-text", "alt-text"]


def test_bare_true_false_outputs_are_flagged_unless_hidden():
    rows = _out("kernel matches: True\nreference matches: True\n")
    assert _rules(_nb(_cell("code", "print(x)", outputs=[rows])))[0] == ["checks"]
    assert _rules(_nb(_cell("code", "assert x", tags=["remove-input"], outputs=[rows])))[0] == []
    result = {"output_type": "execute_result", "data": {"text/plain": "True"}, "metadata": {}, "execution_count": 1}
    assert _rules(_nb(_cell("code", "x == y", outputs=[result])))[0] == ["checks"]


def test_an_exemption_needs_a_reason_and_is_listed():
    meta = {"rnnlab": {"lint-exempt": "quotes the paper's own words"}}
    rules, exemptions = _rules(_nb(_cell("markdown", "It said PASS.", meta=meta)))
    assert rules == [] and exemptions == [(3, "quotes the paper's own words")]
    empty = {"rnnlab": {"lint-exempt": "  "}}
    assert _rules(_nb(_cell("markdown", "It said PASS.", meta=empty)))[0] == ["logistics"]


def test_the_conforming_chapters_pass():
    """book/conforming.txt: the chapters brought to the conventions must stay there."""
    chapters = lint.conforming(ROOT)
    for chapter in chapters:
        assert (ROOT / "book" / chapter).is_dir(), f"{lint.CONFORMING} names {chapter}, not a folder of book/"
    results = lint.lint(ROOT, [ROOT / "book" / c for c in chapters]) if chapters else {}
    text, failed = lint.report(results, chapters)
    assert not failed, text


def test_a_code_cell_figure_needs_alt_text():
    meta = {"mystnb": {"figure": {"name": "fig-x", "caption": "A plot."}}}
    assert _rules(_nb(_cell("code", "plot()", meta=meta)))[0] == ["alt-text"]
    meta["mystnb"]["image"] = {"alt": "Two falling lines."}
    assert _rules(_nb(_cell("code", "plot()", meta=meta)))[0] == []


SANITIZE = lint.sanitize_patterns(ROOT)


def _checked(text, src="print(x)"):
    return _cell("code", src, tags=["nbval-check-output"], outputs=[_out(text)])


@pytest.mark.parametrize("text", [
    "largest difference 5.6e-17\n",               # roundoff digits the sanitizer does not mask here
    "sigma_1771 is below 5e-16 sigma_1\n",        # a computed tiny bound
    "the two agree: 0e+00\n",                     # a computed zero, 1e-16 elsewhere
    "the kernel's error 2.3e-05\n",               # a measured error in scientific notation
    "0.1 + 0.2 = 0.30000000000000004\n",          # full repr precision
])
def test_a_checked_output_that_prints_roundoff_is_flagged(text):
    problems, _ = lint.lint_notebook(_nb(_checked(text)), "book/x/y.ipynb")
    assert [p.rule for p in problems] == ["roundoff"], problems


@pytest.mark.parametrize("text", [
    "numerical rank (singular values above 1e-12 sigma_1): 1770\n",   # a threshold, mantissa 1
    "every singular value past the 1770th is below 1e-14 sigma_1\n",
    "0.99 ** 2000 = 1.864e-09\n",                                       # a value, not roundoff
    "beta in P: +1.8733, rate 0.0491094\n",
    "T = 2000: baseline cross-entropy 0.01029 nats per step\n",
])
def test_a_checked_output_that_states_facts_passes(text):
    assert _rules(_nb(_checked(text)))[0] == []


def test_a_measured_difference_is_masked_for_nbval_and_needs_its_assertion():
    text = "the CPU kernel equals the reference, largest difference 3e-16\n"
    assert "largest difference ROUNDOFF" in lint.sanitized(text, SANITIZE)
    guarded = _checked(text, "gap = f()\nprint(gap)\nassert gap < 1e-12")
    problems, _ = lint.lint_notebook(_nb(guarded), "book/x/y.ipynb", SANITIZE)
    assert problems == []
    problems, _ = lint.lint_notebook(_nb(_checked(text)), "book/x/y.ipynb", SANITIZE)
    assert [p.rule for p in problems] == ["roundoff"] and "asserts no bound" in problems[0].message
    # without nbval's sanitizer the digits themselves are the problem
    problems, _ = lint.lint_notebook(_nb(guarded), "book/x/y.ipynb")
    assert [p.rule for p in problems] == ["roundoff"] and "'3e-16'" in problems[0].message


def test_roundoff_in_an_unchecked_cell_is_allowed():
    cell = _cell("code", "print(gap)", outputs=[_out("largest difference 3e-16\n")])
    assert _rules(_nb(cell))[0] == []


def test_the_sanitizer_masks_only_the_measured_value():
    masked = lint.sanitized("stack: largest difference 1e-16; queue 3 of 3 rows; took 2 s\n", SANITIZE)
    assert masked == "stack: largest difference ROUNDOFF; queue 3 of 3 rows; took TIME\n"


def test_page_words_counts_the_main_line_and_the_folded_parts_apart(tmp_path):
    """Main line: paragraphs, headings, admonitions and exercises; folded: solutions (a directive, or
    the cells between solution-start and solution-end), dropdowns and reproduction notes; code
    spans, code blocks and math count nowhere."""
    import json

    cells = [
        ("markdown", [], "# Four words in title\n\nOne two three `code span` $x^2$ four.\n\n$$a + b$$\n"),
        ("markdown", [], "```{admonition} Three word title\n:class: dropdown\nfolded five words here now\n```\n"),
        ("markdown", [], "```{exercise} ★ Two words\nAsk one thing.\n```\n"),
        ("markdown", [], "```{solution-start} ex-a\n```\nsolved in four words\n"),
        ("code", [], "x = 1\n"),
        ("markdown", [], "still inside the solution\n```{solution-end}\n```\nback on main\n"),
        ("markdown", ["reproduction"], "a tagged note of seven words here\n"),
        ("markdown", [], "```{solution} ex-b\nthree folded words\n```\n```python\nnot = counted\n```\n"),
    ]
    nb = {"cells": [{"cell_type": t, "metadata": {"tags": tags}, "source": s, **({"outputs": [], "execution_count": None} if t == "code" else {})}
                    for t, tags, s in cells], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "page.ipynb"
    path.write_text(json.dumps(nb), encoding="utf8")
    # main: 4 (title) + 4 (paragraph) + 2 (exercise title) + 3 (its body, ★ not a word) + 3 (back on main)
    # folded: 3 + 5 (dropdown) + 4 + 4 (gated) + 7 (tagged) + 1 (its label ex-b) + 3 (solution body)
    assert lint.page_words(path) == {"main": 16, "folded": 27}


def test_is_lesson_excludes_index_reproducing_and_performance_pages():
    assert lint.is_lesson("book/lds/01_modal_form.ipynb")
    assert lint.is_lesson("lowrank/06_closed_loop")
    for page in ("book/lds/index.md", "book/lds/06_reproducing.ipynb", "book/lds/05_speed.ipynb",
                 "scans/03_performance"):
        assert not lint.is_lesson(page), page
