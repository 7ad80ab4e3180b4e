"""Every Colab launch link of the built book opens a notebook that exists in the
repository at that path; the student link's notebook holds no solution.

The links name the repository of ``_config.yml`` (``repository.url`` and
``branch``); the path after ``blob/<branch>/`` is checked in this checkout.
"""
import json
import re
from html.parser import HTMLParser

from rnnlab import book
from rnnlab.checks import student as st
from rnnlab.book.launch import student_url

from conftest import ROOT

COLAB = "https://colab.research.google.com/github/"


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links = []          # (href, text)
        self._open = None

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self._open = [dict(attrs).get("href", ""), ""]

    def handle_data(self, data):
        if self._open is not None:
            self._open[1] += data

    def handle_endtag(self, tag):
        if tag == "a" and self._open is not None:
            self.links.append((self._open[0], " ".join(self._open[1].split())))
            self._open = None


def _colab_links(html_file):
    parser = _Links()
    parser.feed(html_file.read_text(encoding="utf8"))
    return [(href, text) for href, text in parser.links if href.startswith(COLAB)]


def _repo_path(href):
    owner_repo = re.match(r"https://github\.com/([^/]+/[^/]+?)/?$", book.repository_url(ROOT)).group(1)
    branch = re.search(r"^\s+branch:\s*(\S+)", (ROOT / "_config.yml").read_text(), re.M).group(1)
    prefix = f"{COLAB}{owner_repo}/blob/{branch}/"
    assert href.startswith(prefix), f"{href} does not point at {owner_repo}@{branch}"
    return href[len(prefix):]


def test_every_chapter_page_launches_the_full_and_the_student_notebook(built_book):
    pages = 0
    for nb_path in book.notebooks(ROOT):
        rel = nb_path.relative_to(ROOT).with_suffix(".html")
        html = built_book / rel
        assert html.exists(), f"{rel} was not built"
        links = _colab_links(html)
        texts = sorted(text for _, text in links)
        assert texts == ["Colab (full)", "Colab (student)"], f"{rel}: launch links {links}"
        for href, text in links:
            path = _repo_path(href)
            assert (ROOT / path).is_file(), f"{rel}: {text} opens {path}, which does not exist"
            if text == "Colab (full)":
                assert path == f"full/{nb_path.relative_to(ROOT / 'book').as_posix()}", path
                full = json.loads((ROOT / path).read_text())
                assert full["metadata"]["rnnlab"] == {"edition": "full",
                                                      "source": nb_path.relative_to(ROOT).as_posix()}
            else:
                assert path.startswith(f"{st.STUDENT_DIR}/"), path
                student = json.loads((ROOT / path).read_text())
                chapter = json.loads(nb_path.read_text())
                _, removed = st.student_notebook(chapter, source=nb_path.relative_to(ROOT).as_posix())
                assert st.leaks(student, removed, chapter) == [], f"{path} leaks a solution"
                assert student["metadata"]["rnnlab"]["student"] is True
        pages += 1
    assert pages >= 10


def test_markdown_pages_have_no_colab_launch(built_book):
    for page in ("book/intro.html", "book/teaching.html", "book/scans/index.html"):
        assert _colab_links(built_book / page) == [], page


def test_student_url_maps_the_chapter_path():
    base = "https://colab.research.google.com/github/o/r/blob/main/"
    assert student_url(base + "book/lds/02_ldstack.ipynb") == base + "student/lds/02_ldstack.ipynb"
    assert student_url(base + "book/intro.md") is None
    assert student_url("https://example.org/book/x.ipynb") is None
