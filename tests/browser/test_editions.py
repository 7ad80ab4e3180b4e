"""The notebook editions (full/ and student/) as Jupyter renders them, offline.

Each notebook is rendered by nbconvert's ``lab`` template (the HTML of
JupyterLab's notebook view, markdown rendered with attachments) and typeset
by the book's vendored MathJax 3, configured as JupyterLab configures it
(``$...$`` and ``$$...$$``); then opened in headless Chromium with every
request beyond 127.0.0.1 aborted. Checked: the theorem and exercise titles are
visible with the book's numbers, the math is typeset, no MyST source is left,
solutions are folded in the full edition and absent from the student one.

The numbers themselves are compared with the online book: every numbered
title of the built book (``Theorem 3 (...)``, ``Exercise 12 (...)``) is the one
the editions print (:class:`rnnlab.book.myst.BookIndex`).
"""
from __future__ import annotations

import functools
import html as htmllib
import http.server
import json
import os
import re
import shutil
import threading
from pathlib import Path

import pytest

from pagecheck import serve_files
from rnnlab.book import myst

ROOT = Path(__file__).resolve().parents[2]
MATHJAX = ROOT / "book" / "_static" / "vendor" / "mathjax"
# JupyterLab typesets $...$ and $$...$$ (and \(...\), \[...\]) with MathJax 3.
MATHJAX_CONFIG = """<script>window.MathJax = {tex: {inlineMath: [['$', '$'], ['\\\\(', '\\\\)']],
displayMath: [['$$', '$$'], ['\\\\[', '\\\\]']], processEscapes: true, processEnvironments: true},
options: {ignoreHtmlClass: 'tex2jax_ignore', processHtmlClass: 'tex2jax_process'}};</script>
<script id="MathJax-script" src="mathjax/tex-chtml.js"></script>"""
PAGES = ["full/contraction/01_contraction_in_one_page.ipynb",
         "student/contraction/01_contraction_in_one_page.ipynb",
         "full/scans/01_associative_scan.ipynb"]


@pytest.fixture(scope="module")
def index():
    return myst.BookIndex(ROOT)


def render(notebook: Path, out: Path) -> Path:
    """``notebook`` as nbconvert's lab template renders it, MathJax served beside it."""
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(notebook, as_version=4)
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    # Replace nbconvert's MathJax 2 block (CDN) by the vendored MathJax 3, configured like JupyterLab's.
    body, n = re.subn(r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->", lambda m: MATHJAX_CONFIG,
                      body, flags=re.S)
    assert n == 1, "nbconvert's template no longer has the MathJax block this test replaces"
    # The template's other CDN scripts (require.js for widget views) are not needed offline.
    body = re.sub(r'<script[^>]*src="https?://[^"]*"[^>]*>\s*</script>', "", body)
    page = out / (notebook.parent.parent.name + "-" + notebook.parent.name + "-" + notebook.stem + ".html")
    page.write_text(body, encoding="utf8")
    if not (out / "mathjax").exists():
        shutil.copytree(MATHJAX, out / "mathjax")
    return page


@pytest.fixture(scope="module")
def editions_url(tmp_path_factory):
    out = tmp_path_factory.mktemp("editions")
    for page in PAGES:
        render(ROOT / page, out)
    handler = functools.partial(_Quiet, directory=str(out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", out
    server.shutdown()
    server.server_close()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _open(offline_page, editions_url, page):
    url, out = editions_url
    parts = page.split("/")
    name = f"{parts[0]}-{parts[1]}-{Path(parts[2]).stem}.html"
    p = offline_page.page
    serve_files(p, myst.raw_url(ROOT, ""), ROOT)     # the figures' URLs: this checkout's files
    p.goto(url + name, wait_until="load")
    p.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=60_000)
    p.evaluate("() => MathJax.startup.promise")
    if os.environ.get("RNNLAB_SCREENSHOTS"):
        p.screenshot(path=str(Path(os.environ["RNNLAB_SCREENSHOTS"]) / name.replace(".html", ".png")),
                     full_page=False)
    return p


def _assert_no_myst(p, where):
    text = p.inner_text("#notebook-container, main, body")
    for raw in ("```{", "{prf:", "{cite}`", "{eq}`", "{ref}`", ":label:", "{exercise}", "{solution"):
        assert raw not in text, f"{where}: raw MyST {raw!r} in the rendered page"
    assert not re.search(r"^\([\w-]+\)=$", text, re.M), f"{where}: a (label)= line"


def test_full_edition_theorems_exercises_and_math(offline_page, editions_url, index):
    p = _open(offline_page, editions_url, PAGES[0])
    theorem = index.targets["thm-ctr-forget"]
    title = p.locator("strong", has_text=f"Theorem {theorem.number}").first
    assert title.is_visible()
    # The title's paragraph holds the title; the theorem's display math is typeset.
    assert "Contracting systems forget their initial state" in title.locator("xpath=..").inner_text()
    assert p.locator("mjx-container").count() > 50, "MathJax typeset too little"
    assert p.locator("text=∎").count() >= 1
    ex = index.targets["ex-ctr-robust"]
    heading = p.locator("h3", has_text=f"Exercise {ex.number}")
    assert heading.first.is_visible()
    stars, plain = myst.difficulty(ex.title)
    assert plain in heading.first.inner_text()
    # The solution is folded: its summary shows, its text does not until opened.
    details = p.locator("details", has_text=f"Solution to Exercise {ex.number}").first
    assert details.get_attribute("open") is None
    body = details.locator("p").first
    assert not body.is_visible()
    details.locator("summary").click()
    assert body.is_visible()
    _assert_no_myst(p, PAGES[0])
    assert offline_page.problems() == []


def test_student_edition_has_titles_and_no_solution(offline_page, editions_url, index):
    p = _open(offline_page, editions_url, PAGES[1])
    theorem = index.targets["thm-ctr-forget"]
    assert p.locator("strong", has_text=f"Theorem {theorem.number}").first.is_visible()
    # The student edition numbers its exercises within the notebook.
    from rnnlab.book.editions import local_exercise_numbers

    local = local_exercise_numbers(index, index.targets["ex-ctr-robust"].doc)["ex-ctr-robust"]
    assert p.locator("h3", has_text=f"Exercise {local}").first.is_visible()
    assert p.locator("details").count() == 0 or "Solution" not in p.inner_text("body")
    assert "Solution to Exercise" not in p.content()
    assert p.locator("text=Your answer (ex-ctr-robust)").first.is_visible()
    assert p.locator("mjx-container").count() > 50
    _assert_no_myst(p, PAGES[1])
    assert offline_page.problems() == []


def test_full_edition_figures_show_from_their_urls(offline_page, editions_url):
    p = _open(offline_page, editions_url, PAGES[2])
    p.wait_for_load_state("networkidle")
    images = p.locator("img[alt]")
    shown = [images.nth(i) for i in range(images.count())
             if images.nth(i).evaluate("img => img.complete && img.naturalWidth > 0")]
    nb = json.loads((ROOT / PAGES[2]).read_text())
    linked = sum("".join(c["source"]).count("![") for c in nb["cells"] if c["cell_type"] == "markdown")
    assert linked and len(shown) >= linked, f"{linked} images, {len(shown)} shown"
    _assert_no_myst(p, PAGES[2])
    assert offline_page.problems() == []


def _numbered_titles(html_file):
    """The numbered titles of a built page: ("Theorem", 3, "title"), ("Exercise", 12, "title")..."""
    text = html_file.read_text(encoding="utf8")
    out = []
    for raw in re.findall(r'<p class="admonition-title">(.*?)</p>', text, re.S):
        title = htmllib.unescape(" ".join(re.sub(r"<[^>]+>", "", raw).split()))
        m = re.match(r"^(Theorem|Proposition|Lemma|Definition|Corollary|Exercise) (\d+)(?: \((.*)\))?$", title)
        if m:
            out.append((m.group(1), int(m.group(2))))
    # Figures, markdown or code-cell (myst-nb) ones: "Fig. N" before the caption.
    out += [("Figure", int(n)) for n in re.findall(r'<span class="caption-number">Fig\. (\d+) </span>', text)]
    return out


def test_editions_number_as_the_online_book(built_book, index):
    """Every numbered theorem-like block, exercise and figure of the built book carries the number
    the editions print, and the editions number nothing the book does not."""
    expected = {(t.doc, t.kind, t.number) for t in index.targets.values()
                if t.number is not None and t.kind in ("Theorem", "Proposition", "Lemma", "Definition",
                                                        "Corollary", "Exercise", "Figure")}
    seen = set()
    for doc in myst.toc_order(ROOT):
        page = built_book / f"{doc}.html"
        if page.exists():
            seen |= {(doc, kind, number) for kind, number in _numbered_titles(page)}
    assert seen == expected, (sorted(seen - expected)[:5], sorted(expected - seen)[:5])
    # Equation numbers: the built page prints (n) for each labelled equation the index numbers (n).
    for label, t in index.targets.items():
        if t.kind == "equation":
            page = (built_book / f"{t.doc}.html").read_text(encoding="utf8")
            assert re.search(rf'id="equation-{re.escape(label)}".*?\({t.number}\)', page, re.S), label
