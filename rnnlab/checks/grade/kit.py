"""The exercise tables of the course kit (``book/teaching.md``), written from the chapters.

``python -m rnnlab.checks.grade.kit`` rewrites, in ``book/teaching.md``, every region
between ``<!-- exercises: CHAPTER WEEKS -->`` and ``<!-- end exercises -->``: a table
of the chapter's exercises (notebook, title, label, kind, stars, time) read from the
``{exercise}`` directives of ``book/CHAPTER/*.ipynb`` and the declarations of
:mod:`rnnlab.checks`, then the suggested weekly assignments, ``WEEKS`` being the
notebooks of each week by number (``01+02,03,04``: three weeks), with their
exercises and the time they take. ``--check`` only says whether the page is
current (a test runs it), so the page never lists an exercise the book lost.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from ..._io import atomic_write_text
from .folder import difficulty_of, find_book, titles

MINUTES = {1: 10, 2: 25, 3: 45}
REGION = re.compile(r"(?P<open><!-- exercises: (?P<chapter>[\w-]+) (?P<weeks>[\d+,]+) -->\n)"
                    r"(?P<body>.*?)(?P<close><!-- end exercises -->)", re.S)


def rows(book, chapter):
    """``[(notebook, label, title, stars, checked), ...]`` of a chapter, in book order."""
    from .. import exercises

    checked = {ex.label for ex in exercises()}
    out = []
    for path in sorted((Path(book) / chapter).glob("*.ipynb")):
        for label, title in titles(path).items():
            out.append((path.stem, label, title.lstrip("★ ").strip(), difficulty_of(title), label in checked))
    return out


def _time(minutes):
    hours, rest = divmod(minutes, 60)
    return f"about {hours} h {rest} min".replace("about 0 h ", "about ").replace(" 0 min", "")


def table(book, chapter, weeks):
    """The region's Markdown: the table, then one line per suggested week."""
    found = rows(book, chapter)
    lines = ["| notebook | exercise | label | kind | stars | time |", "|---|---|---|---|---|---|"]
    for nb, label, title, stars, checked in found:
        title, kind = title.replace("|", "\\|"), "code, checked" if checked else "in words"
        lines.append(f"| {nb} | {title} | `{label}` | {kind} | {'★' * (stars or 0) or '-'} | {MINUTES.get(stars, 25)} min |")
    lines += ["", "Suggested assignments (the ★★★ exercises make good projects):", ""]
    for n, week in enumerate(weeks.split(","), 1):
        numbers = week.split("+")
        picked = [r for r in found if r[0][:2] in numbers and r[3] != 3]
        names = ", ".join(f"`{nb}`" for nb in dict.fromkeys(r[0] for r in found if r[0][:2] in numbers))
        minutes = sum(MINUTES.get(r[3], 25) for r in picked)
        labels = ", ".join(f"`{r[1]}`" for r in picked) or "none"
        lines.append(f"- *Week {n}* ({names or ' and '.join(numbers)}): {labels} ({_time(minutes)})")
    return "\n".join(lines) + "\n"


def refresh(text, book):
    """``text`` with every exercises region rewritten from ``book``."""
    return REGION.sub(lambda m: m["open"] + table(book, m["chapter"], m["weeks"]) + m["close"], text)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m rnnlab.checks.grade.kit", description=__doc__.split("\n\n")[0])
    parser.add_argument("--page", type=Path, help="the page to rewrite (default: BOOK/teaching.md)")
    parser.add_argument("--book", type=Path, help="the book's folder of chapters (default: book/ of the checkout "
                                                   "rnnlab runs from, or of the current folder)")
    parser.add_argument("--check", action="store_true", help="say whether the page is current; change nothing")
    args = parser.parse_args(argv)
    try:
        args.book = find_book(args.book)
    except ValueError as exc:
        parser.error(str(exc))
    if args.book is None:
        parser.error("--book: no checkout of the book here (rnnlab is installed, and the current folder holds no "
                     "_toc.yml and book/): run it in a checkout, or give --book BOOK_DIR")
    args.page = args.page or args.book / "teaching.md"
    if not args.page.is_file():
        parser.error(f"--page {args.page}: no such file")
    return update_page(args.page, lambda text: refresh(text, args.book), args.check,
                       stale=f"{args.page} lists other exercises than the book: run python -m rnnlab.checks.grade.kit",
                       done=f"rewrote the exercise tables of {args.page}")


def update_page(page, rewrite, check, stale, done):
    """Rewrite ``page`` with ``rewrite(text)`` and say ``done``; with ``check``, change nothing and
    exit 1 with ``stale`` when the page is not current. Returns the exit status."""
    text = Path(page).read_text(encoding="utf-8")
    new = rewrite(text)
    if check:
        if new != text:
            print(stale, file=sys.stderr)
            return 1
        return 0
    if new != text:
        atomic_write_text(page, new)
        print(done)
    return 0


if __name__ == "__main__":
    sys.exit(main())
