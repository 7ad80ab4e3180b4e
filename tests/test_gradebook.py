"""python -m rnnlab gradebook: the grader's CSV as a Canvas or Moodle import."""
from __future__ import annotations

import csv
import io
from types import SimpleNamespace

import pytest

from rnnlab.checks.grade.folder import table
from rnnlab.course import gradebook


def _grades(path):
    """A grades CSV as python -m rnnlab grade writes it (folder.table), for four students."""
    columns = [SimpleNamespace(label="ex-a"), SimpleNamespace(label="ex-b")]
    weight = {"ex-a": 1.0, "ex-b": 2.0}
    passed, failed = {"status": "passed"}, {"status": "failed", "passed": 1, "total": 3}
    rows = [("alice", {"ex-a": passed, "ex-b": passed}, []),
            ("bob", {"ex-a": passed, "ex-b": failed}, []),
            ("=2+5", {"ex-a": failed, "ex-b": failed}, []),
            ("dan", {"ex-a": failed, "ex-b": passed}, [])]
    path.write_text(table(["rnnlab grade: seed 1"], columns, rows, weight), encoding="utf-8")
    return path


def _read(text):
    return list(csv.reader(io.StringIO(text)))


def test_read_grades_takes_the_graders_csv(tmp_path):
    grades, top = gradebook.read_grades(_grades(tmp_path / "grades.csv"))
    assert top == 3.0
    assert grades == {"alice": (3.0, 2, 2), "bob": (1.0, 1, 2), "=2+5": (0.0, 0, 2), "dan": (2.0, 1, 2)}


def test_canvas_fills_the_export_and_changes_nothing_else(tmp_path):
    export = tmp_path / "export.csv"
    export.write_text(
        "Student,ID,SIS User ID,SIS Login ID,Section,Lab 1 (101),Current Score\n"
        "    Points Possible,,,,,10,(read only)\n"
        "\"Smith, Alice\",11,s1,alice,Sec A,9,90\n"
        "\"Jones, Bob\",12,s2,bob,Sec A,7,70\n"
        "\"Eve, Erin\",13,s3,erin,Sec B,,\n"
        "Test Student,14,,,Sec A,,\n", encoding="utf-8")
    roster = tmp_path / "roster.csv"
    roster.write_text("student,id\nalice,alice\nbob,bob\n=2+5,mallory\ndan,dan\n", encoding="utf-8")
    assert gradebook.main([str(_grades(tmp_path / "g.csv")), "--lms", "canvas", "--column", "Lab 2",
                           "--template", str(export), "--roster", str(roster), "--out", str(tmp_path / "c.csv")]) == 0
    rows = _read((tmp_path / "c.csv").read_text())
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Lab 2"]
    assert rows[1][0].strip() == "Points Possible" and rows[1][-1] == "3"
    assert rows[2] == ["Smith, Alice", "11", "s1", "alice", "Sec A", "3"]
    assert rows[3][-1] == "1" and rows[4][-1] == "" and rows[5][-1] == ""   # erin: no grade, empty not 0


def test_canvas_reports_who_could_not_be_matched(tmp_path, capsys):
    grades = {"alice": (3.0, 2, 2), "zoe": (1.0, 1, 2)}
    export = tmp_path / "export.csv"
    export.write_text("Student,ID,SIS User ID,SIS Login ID,Section\n\"Smith, Alice\",11,s1,alice,A\n"
                      "\"Lee, Kim\",15,s5,kim,A\n", encoding="utf-8")
    text, problems = gradebook.canvas(grades, 3.0, export, "Lab")
    assert any("zoe" in p and "no row" in p for p in problems)
    assert any("Lee, Kim" in p and "no grade" in p for p in problems)


def test_moodle_writes_identifier_grade_and_feedback(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("student,id\nalice,alice@uni.edu\nbob,bob@uni.edu\n=2+5,=cmd|x\n", encoding="utf-8")
    assert gradebook.main([str(_grades(tmp_path / "g.csv")), "--lms", "moodle", "--column", "Lab 2",
                           "--roster", str(roster), "--out", str(tmp_path / "m.csv")]) == 0
    rows = _read((tmp_path / "m.csv").read_text())
    assert rows[0] == ["Email address", "Lab 2", "Lab 2 (feedback)"]
    assert rows[1][:2] == ["'=cmd|x", "0"]                       # a formula-like id is shown as text
    assert rows[2] == ["alice@uni.edu", "3", "2 of 2 exercises passed, 3 of 3 points; see your feedback file"]
    assert "dan" not in (tmp_path / "m.csv").read_text()        # not in the roster: left out, reported


@pytest.mark.parametrize("argv, message", [
    (["--lms", "canvas", "--column", "x"], "--lms canvas needs --template"),
    (["--lms", "moodle", "--column", "x", "--roster", "/no/roster.csv"], "/no/roster.csv"),
])
def test_bad_input_is_named(tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit):
        gradebook.main([str(_grades(tmp_path / "g.csv")), *argv, "--out", str(tmp_path / "o.csv")])
    assert message in capsys.readouterr().err


def test_a_file_that_is_not_the_graders_is_refused(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("name,score\na,1\n")
    with pytest.raises(ValueError, match="is not a CSV of python -m rnnlab grade"):
        gradebook.read_grades(bad)


def _answers(path, rows):
    """An answers.csv as python -m rnnlab grade writes it (folder.answers_table), with
    the teacher's points filled in: ``rows`` are (exercise, student, points)."""
    from rnnlab.checks.grade.folder import answers_table

    said = [(label, "lds/01", student, "the statement", "an answer") for label, student, _ in rows]
    lines = answers_table(said).splitlines()
    body = list(csv.reader(io.StringIO("\n".join(lines))))
    marks = {(label, student): points for label, student, points in rows}
    header = body[0]
    for row in body[1:]:
        student = row[2][1:] if row[2].startswith("'=") else row[2]
        row[header.index("points")] = marks[(row[0], student)]
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(body)
    path.write_text(out.getvalue(), encoding="utf-8")
    return path


def test_answers_in_words_are_added_to_the_grade(tmp_path):
    answers = _answers(tmp_path / "answers.csv", [("ex-w1", "alice", "2"), ("ex-w2", "alice", "1.5"),
                                                   ("ex-w1", "bob", "0"), ("ex-w1", "=2+5", "1")])
    assert gradebook.main([str(_grades(tmp_path / "g.csv")), "--lms", "moodle", "--column", "Lab 2",
                           "--answers", str(answers), "--answers-max", "5",
                           "--out", str(tmp_path / "m.csv")]) == 0
    rows = {r[0]: r for r in _read((tmp_path / "m.csv").read_text())[1:]}
    assert rows["alice"][1] == "6.5" and "6.5 of 8 points" in rows["alice"][2]   # 3 checked + 3.5 written
    assert rows["bob"][1] == "1" and rows["dan"][1] == "2"                      # dan wrote nothing: + 0
    assert rows["'=2+5"][1] == "1"                                              # the formula guard undone


@pytest.mark.parametrize("marks, extra, message", [
    ([("ex-w1", "alice", "")], ["--answers-max", "3"], "have no points yet, first line 2 (ex-w1, alice)"),
    ([("ex-w1", "alice", "two")], ["--answers-max", "3"], "points 'two' is not a number"),
    ([("ex-w1", "alice", "4")], ["--answers-max", "3"], "more than --answers-max 3"),
    ([("ex-w1", "alice", "1")], [], "--answers and --answers-max go together"),
])
def test_unmarked_or_bad_answers_are_refused(tmp_path, capsys, marks, extra, message):
    answers = _answers(tmp_path / "answers.csv", marks)
    with pytest.raises(SystemExit):
        gradebook.main([str(_grades(tmp_path / "g.csv")), "--lms", "moodle", "--column", "x",
                        "--answers", str(answers), *extra, "--out", str(tmp_path / "o.csv")])
    assert message in capsys.readouterr().err
    assert not (tmp_path / "o.csv").exists()
