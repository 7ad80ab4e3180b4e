"""The lecture slides (rnnlab.course.slides) in headless Chromium, with no network.

Every deck is written into a temporary folder, served on 127.0.0.1 and opened at 1280 x 720; the
test walks it with the arrow keys and, on every slide, checks that it is the one shown, that its
math is typeset (as many MathJax formulas as the slide has, no TeX error, no raw ``$$``, ``\\(``
or ``\\[`` left), that every image loaded (``naturalWidth > 0``), that nothing sticks out of the
slide or the viewport, and, for the whole deck, that no console error, failed or non-local
request happened.
"""
from __future__ import annotations

import functools
import http.server
import threading

import pytest

from pagecheck import watch

from rnnlab.course import slides as slides_module

WIDTH, HEIGHT = 1280, 720

CHECK_SLIDE = """
(n) => {
  const problems = [];
  const all = document.querySelectorAll('.slide');
  const slide = all[n];
  if (!slide) return ['no slide ' + (n + 1)];
  if (!slide.classList.contains('current') || getComputedStyle(slide).visibility !== 'visible')
    problems.push('not shown after the arrow key');
  if (location.hash !== '#/' + (n + 1)) problems.push('address ' + location.hash);
  const box = slide.getBoundingClientRect();
  if (box.left < -1 || box.top < -1 || box.right > innerWidth + 1 || box.bottom > innerHeight + 1)
    problems.push('the slide leaves the viewport: ' + JSON.stringify(box));
  // What the slide shows (inside its margins) must fit: its box clips, so its scroll size tells.
  const content = slide.querySelector('.content');
  const inner = content.getBoundingClientRect();
  if (content.scrollHeight > content.clientHeight + 1 || content.scrollWidth > content.clientWidth + 1)
    problems.push('content overflows: ' + content.scrollWidth + ' x ' + content.scrollHeight);
  for (const e of content.querySelectorAll('*')) {
    // Inside a formula, MathJax clips its own parts (the screen readers' copy, a stretched
    // delimiter's extender): the formula's box counts, and the slide's scroll size catches the rest.
    if (e.tagName !== 'MJX-CONTAINER' && e.closest('mjx-container')) continue;
    const b = e.getBoundingClientRect();
    if (b.width === 0 && b.height === 0) continue;
    if (b.left < inner.left - 1 || b.top < inner.top - 1 || b.right > inner.right + 1 || b.bottom > inner.bottom + 1) {
      problems.push('sticks out: <' + e.tagName.toLowerCase() + ' class="' + e.className + '">');
      break;
    }
  }
  const expected = parseInt(slide.dataset.math, 10);
  const typeset = slide.querySelectorAll('mjx-container').length;
  if (typeset !== expected) problems.push('typeset ' + typeset + ' formulas of ' + expected);
  if (slide.querySelector('mjx-merror')) problems.push('TeX error: ' + slide.querySelector('mjx-merror').textContent);
  const text = slide.innerText;
  for (const raw of ['$$', '\\\\(', '\\\\[']) if (text.includes(raw)) problems.push('raw ' + raw + ' in the text');
  if (/\\$[^$\\s][^$]*\\$/.test(text)) problems.push('raw $...$ in the text');
  for (const img of slide.querySelectorAll('img')) {
    const b = img.getBoundingClientRect();
    if (!img.complete || img.naturalWidth === 0) problems.push('image not loaded: ' + img.getAttribute('src'));
    else if (b.width < 100 || b.height < 50) problems.push('image too small: ' + img.getAttribute('src'));
  }
  return problems;
}
"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    """Every deck written once, served on 127.0.0.1: (base URL, [Deck])."""
    out = tmp_path_factory.mktemp("slides")
    written = slides_module.write_slides(out)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(out)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", written
    server.shutdown()
    server.server_close()


def test_every_slide_of_every_deck_renders(decks, browser):
    base, written = decks
    assert [d.chapter for d in written] == slides_module.chapters()
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    try:
        watched = watch(context)
        page = watched.page
        page.goto(base + "index.html")
        links = page.eval_on_selector_all("a", "links => links.map(a => a.getAttribute('href'))")
        assert links == [f"{d.chapter}/index.html" for d in written]
        report = {}
        for deck in written:
            page.goto(f"{base}{deck.chapter}/index.html")
            page.wait_for_selector("body[data-ready]", state="attached", timeout=60_000)
            count = page.evaluate("deck.count")
            assert count == page.evaluate("document.querySelectorAll('.slide').length") > 3, deck.chapter
            for n in range(count):
                if n:
                    page.keyboard.press("ArrowRight")
                problems = page.evaluate(CHECK_SLIDE, n)
                if problems:
                    report[f"{deck.chapter} slide {n + 1}"] = problems
            page.keyboard.press("ArrowRight")                 # past the end: stays on the last
            assert page.evaluate("deck.current()") == count - 1, deck.chapter
            page.keyboard.press("ArrowLeft")
            assert page.evaluate("deck.current()") == count - 2, deck.chapter
            page.keyboard.press("Home")
            assert page.evaluate("deck.current()") == 0, deck.chapter
            if watched.problems():
                report[f"{deck.chapter}: the page"] = watched.problems()
                watched.clear()
        assert not report, "\n".join(f"{where}: {'; '.join(p)}" for where, p in report.items())
    finally:
        context.close()


def test_a_slide_opens_from_the_address(decks, browser):
    base, written = decks
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    try:
        watched = watch(context)
        watched.page.goto(f"{base}{written[0].chapter}/index.html#/3")
        watched.page.wait_for_selector("body[data-ready]", state="attached", timeout=60_000)
        assert watched.page.evaluate("deck.current()") == 2
        assert not watched.problems()
    finally:
        context.close()
