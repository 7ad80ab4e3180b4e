"""The book's structure: setup cell, table of contents, stored outputs, config."""
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
