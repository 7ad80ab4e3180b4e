"""The term plans of book/teaching.md (rnnlab.course.plan): current, complete, and adding up."""
from __future__ import annotations

import re
import shutil

import pytest

from rnnlab.course import plan

ROOT = plan.ROOT


def test_the_plans_on_the_page_are_current():
    """book/teaching.md holds the plans as the pages make them today (else: python -m rnnlab.course.plan)."""
    assert plan.main(["--check"]) == 0


def test_the_10_week_plan_covers_every_lesson_once_and_the_short_one_is_a_part_of_it():
    full = [rel for _, pages in plan.PLANS["10"] for rel in pages]
    short = [rel for _, pages in plan.PLANS["5"] for rel in pages]
    assert len(plan.PLANS["10"]) == 10 and len(plan.PLANS["5"]) == 5
    assert sorted(full) == sorted(set(full)) and sorted(short) == sorted(set(short))
    assert set(plan.lessons()) <= set(full)
    assert set(short) < set(full)
    # every chapter has its week in the short course
    assert {rel.split("/")[0] for rel in short} == {rel.split("/")[0] for rel in plan.lessons()}


def test_a_week_adds_up_from_its_pages():
    """The week's reading and lab are the sums of its pages', points as the grader weighs them."""
    text = plan.render("10")
    weeks = re.split(r"\*\*Week \d+: ", text)[1:]
    assert len(weeks) == 10
    total_points = 0
    for (title, pages), week in zip(plan.PLANS["10"], weeks):
        read = [plan.read_page(rel, ROOT / "book") for rel in pages]
        assert f"*Read* (about {plan._time(sum(p.minutes for p in read))})" in week, title
        lab = [e for p in read for e in p.exercises if e[2] != 3]
        points = sum(e[3] for e in lab)
        assert f"{plan._points(points)})" in week, title
        assert all(f"`{e[0]}`" in week for p in read for e in p.exercises), title
        total_points += points
    assert f"for {plan._points(total_points)}." in text


def test_reading_time_is_the_main_line_at_100_words_a_minute():
    page = plan.Page("x/y", "t", words=1001, ideas=[], figures=[], exercises=[])
    assert page.minutes == 15          # 10.01 min, rounded up to 5
    assert plan.Page("x/y", "t", 100, [], [], []).minutes == 5


def test_a_plan_naming_a_page_the_book_lost_fails(monkeypatch):
    monkeypatch.setitem(plan.PLANS, "5", [("gone", ["scans/99_missing"])])
    with pytest.raises(ValueError, match="scans/99_missing is not a page of _toc.yml"):
        plan.render("5")


def test_a_lesson_left_out_of_the_10_week_plan_fails(monkeypatch):
    weeks = [(t, [p for p in pages if p != "lds/01_modal_form"]) for t, pages in plan.PLANS["10"]]
    monkeypatch.setitem(plan.PLANS, "10", weeks)
    with pytest.raises(ValueError, match="leaves out lesson pages: lds/01_modal_form"):
        plan.render("10")


def test_check_fails_on_a_stale_page(tmp_path):
    page = tmp_path / "teaching.md"
    shutil.copy(ROOT / "book" / "teaching.md", page)
    page.write_text(page.read_text(encoding="utf8").replace("**Week 1:", "**Week one:", 1), encoding="utf8")
    assert plan.main(["--check", "--page", str(page)]) == 1
    assert plan.main(["--page", str(page)]) == 0
    assert plan.main(["--check", "--page", str(page)]) == 0


def test_a_summarys_links_are_rebased_to_the_plans_page():
    """A summary bullet links pages relative to its chapter; teaching.md lives one folder up."""
    text = "see {doc}`06_reproducing`, {doc}`the cells <01_cells>` and {doc}`x <../lds/01_modal_form>`"
    assert plan._rebase_docs(text, "lowrank") == ("see {doc}`lowrank/06_reproducing`, {doc}`the cells "
                                                 "<lowrank/01_cells>` and {doc}`x <lds/01_modal_form>`")
    for line in (ROOT / "book" / "teaching.md").read_text(encoding="utf8").splitlines():
        for m in plan.DOC_ROLE.finditer(line):
            target = (m["target"] or m["text"]).strip()
            assert (ROOT / "book" / f"{target}.ipynb").exists() or (ROOT / "book" / f"{target}.md").exists(), line
