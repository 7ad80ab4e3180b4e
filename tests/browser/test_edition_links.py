"""Every absolute link of the notebook editions (full/ and student/) that points at the online book
(``html.baseurl`` of _config.yml, published by .github/workflows/book.yml) resolves to a page of the
built book and, when it has one, to an anchor (an ``id``) on that page."""
from __future__ import annotations

import html
import json
import re
from pathlib import Path
from urllib.parse import unquote

from rnnlab.book import myst

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\((https?://[^)\s]+)\)|href=\"(https?://[^\"]+)\"")


def edition_links(base):
    """``{url: first "edition/path, cell n" that uses it}`` for the links under ``base``."""
    links = {}
    for folder in ("full", "student"):
        for path in sorted((ROOT / folder).rglob("*.ipynb")):
            nb = json.loads(path.read_text(encoding="utf8"))
            for n, cell in enumerate(nb["cells"], 1):
                if cell["cell_type"] != "markdown":
                    continue
                for a, b in LINK.findall("".join(cell["source"])):
                    url = html.unescape(a or b)
                    if url.startswith(base):
                        links.setdefault(url, f"{path.relative_to(ROOT)}, cell {n}")
    return links


def test_every_link_of_the_editions_resolves_in_the_built_book(built_book):
    base = myst.online_url(ROOT).rstrip("/") + "/"
    links = edition_links(base)
    assert len(links) > 50, f"only {len(links)} links to the online book: is html.baseurl right?"
    ids = {}
    problems = []
    for url, where in sorted(links.items()):
        page, _, anchor = url[len(base):].partition("#")
        file = built_book / unquote(page or "index.html")
        if not file.is_file():
            problems.append(f"{where}: {url}: no page {page} in the built book")
            continue
        if anchor:
            if file not in ids:
                ids[file] = set(re.findall(r'\bid="([^"]+)"', file.read_text(encoding="utf8")))
            if unquote(anchor) not in ids[file]:
                problems.append(f"{where}: {url}: no anchor #{anchor} on {page}")
    assert problems == [], f"{len(problems)} of {len(links)} links broken:\n" + "\n".join(problems[:20])
