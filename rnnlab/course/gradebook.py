"""The grades of ``python -m rnnlab grade`` for a learning platform's gradebook:
``python -m rnnlab gradebook grades.csv --lms canvas|moodle --column "Lab 3" ...``.

- **Canvas** imports a CSV laid out as its own gradebook export (Grades, Export): the columns
  ``Student``, ``ID``, ``SIS User ID``, ``SIS Login ID``, ``Section``, then one column per
  assignment, and a first row ``Points Possible``. So the export is the template
  (``--template``): its rows are kept as they are, the assignment's column is added (or
  filled) with each student's points, and every other column is dropped so that the import
  changes nothing else. A student is matched by ``--match`` (default ``SIS Login ID``).
- **Moodle** imports any CSV (Grades, Import, CSV file) whose columns the teacher maps: here an
  identifier column (``--id-header``, default ``Email address``, one of Moodle's choices
  to match users on), the grade column and a feedback column for it.

With ``--answers answers.csv --answers-max M`` the points a teacher wrote into the grader's
``answers.csv`` (the answers in words) are added to each student's points, and ``M`` to the
maximum; an answer left unmarked is an error, never a silent 0.

The grader names a student by the submissions folder; ``--roster`` maps those names to the
platform's identifiers (a CSV with the columns ``student`` and ``id``); without it the
folder names are the identifiers. Students of the grades without an identifier, and
platform rows without a grade, are listed on the terminal, never guessed: in Canvas a row
without a grade keeps an empty cell (not 0). Every cell is written so that a spreadsheet
shows it as text (no formula).
"""
from __future__ import annotations

import argparse
import csv
import io
import sys
from pathlib import Path

from .._io import atomic_write_text

CANVAS_FIXED = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
POINTS_POSSIBLE = "Points Possible"


def read_grades(path):
    """``(rows, max_points)`` of a grades CSV written by ``python -m rnnlab grade``: rows
    ``{student: (points, passed, total)}``."""
    from ..checks.grade.folder import FORMULA

    lines = [line for line in Path(path).read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
    reader = csv.DictReader(io.StringIO("\n".join(lines)))
    need = {"student", "points", "max_points", "score", "total"}
    if not reader.fieldnames or not need <= set(reader.fieldnames):
        raise ValueError(f"grades: {path} is not a CSV of python -m rnnlab grade (it needs the columns "
                         f"{', '.join(sorted(need))})")
    rows, top = {}, None
    for row in reader:
        name = row["student"]
        if name.startswith("'") and name[1:].startswith(FORMULA):   # the grader's guard against formulas
            name = name[1:]
        rows[name] = (float(row["points"]), int(row["score"]), int(row["total"]))
        top = float(row["max_points"])
    return rows, top


def read_answers(path):
    """``{student: points}``: the points a teacher wrote into the ``points`` column of the
    ``answers.csv`` that ``python -m rnnlab grade`` wrote (one row per exercise and student),
    summed per student. Every row must be marked (0 for an answer worth nothing): a row left
    empty is an error, never a silent 0."""
    from ..checks.grade.folder import FORMULA

    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        if not reader.fieldnames or not {"exercise", "student", "points"} <= set(reader.fieldnames):
            raise ValueError(f"answers: {path} is not the answers.csv of python -m rnnlab grade (it needs "
                             "the columns exercise, student and points)")
        totals, unmarked = {}, []
        for n, row in enumerate(reader, 2):
            name = row["student"] or ""
            if name.startswith("'") and name[1:].startswith(FORMULA):   # the grader's guard against formulas
                name = name[1:]
            text = (row["points"] or "").strip()
            if not text:
                unmarked.append(f"line {n} ({row['exercise']}, {name})")
                continue
            try:
                points = float(text)
            except ValueError:
                raise ValueError(f"answers: {path}, line {n}: points {text!r} is not a number") from None
            if points < 0 or points != points or points == float("inf"):
                raise ValueError(f"answers: {path}, line {n}: points {text!r} must be a number >= 0")
            totals[name] = totals.get(name, 0.0) + points
    if unmarked:
        raise ValueError(f"answers: {len(unmarked)} answer(s) in {path} have no points yet, first "
                         f"{unmarked[0]}: write the points of each (0 for none), or leave --answers out")
    return totals


def add_answers(grades, top, written, written_max):
    """``(grades, top, problems)`` with each student's points for answers in words added
    (``written``, from :func:`read_answers`) and ``written_max`` added to the maximum."""
    if not written_max > 0:
        raise ValueError(f"answers-max: {written_max} must be > 0: the most points the answers in words "
                         "can give together")
    problems = []
    for student, points in written.items():
        if points > written_max:
            raise ValueError(f"answers: {student} has {_number(points)} points for answers in words, more "
                             f"than --answers-max {_number(written_max)}")
        if student not in grades:
            problems.append(f"{student}: answers in words marked, but not in the grades (left out)")
    out = {s: (p + written.get(s, 0.0), passed, total) for s, (p, passed, total) in grades.items()}
    return out, top + written_max, problems


def read_roster(path):
    """``{student: id}`` from a CSV with the columns ``student`` and ``id``."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        if not reader.fieldnames or not {"student", "id"} <= set(reader.fieldnames):
            raise ValueError(f"roster: {path} needs the columns student and id")
        roster = {}
        for n, row in enumerate(reader, 2):
            if row["student"] in roster:
                raise ValueError(f"roster: {path}, line {n}: {row['student']} is listed twice")
            roster[row["student"]] = row["id"].strip()
    return roster


def _text(value):
    from ..checks.grade.folder import cell

    return cell(value)


def _number(x):
    from ..checks.grade.folder import number

    return number(x)


def canvas(grades, top, template, column, match="SIS Login ID", roster=None):
    """``(csv text, problems)``: Canvas's import file from its gradebook export ``template``."""
    with open(template, newline="", encoding="utf-8-sig") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        body = list(reader)
    if not header or not set(CANVAS_FIXED) <= set(header):
        raise ValueError(f"template: {template} is not a Canvas gradebook export (it needs the columns "
                         f"{', '.join(CANVAS_FIXED)})")
    if match not in header:
        raise ValueError(f"match: no column {match!r} in {template}")
    index = {name: header.index(name) for name in CANVAS_FIXED}
    by_id = {(roster or {}).get(s, s): g for s, g in grades.items()}
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*CANVAS_FIXED, column])
    seen, problems = set(), []
    for row in body:
        fixed = [row[index[name]] if index[name] < len(row) else "" for name in CANVAS_FIXED]
        if fixed[0].strip() == POINTS_POSSIBLE or (fixed[0].strip() == "" and fixed[3] == "" and any(
                POINTS_POSSIBLE in c for c in row)):
            writer.writerow([*map(_text, fixed), _number(top)])
            continue
        key = row[header.index(match)] if header.index(match) < len(row) else ""
        if key in by_id:
            seen.add(key)
            writer.writerow([*map(_text, fixed), _number(by_id[key][0])])
        else:
            writer.writerow([*map(_text, fixed), ""])
            if fixed[0] and fixed[0] != "Test Student":
                problems.append(f"{fixed[0]} ({match} {key}): no grade (left empty)")
    for key in sorted(set(by_id) - seen):
        problems.append(f"{key}: graded, but no row of the Canvas export has this {match}")
    return out.getvalue(), problems


def moodle(grades, top, column, id_header="Email address", roster=None):
    """``(csv text, problems)``: a CSV for Moodle's grade import (identifier, grade, feedback)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([id_header, column, f"{column} (feedback)"])
    problems = []
    for student, (points, passed, total) in sorted(grades.items()):
        ident = (roster or {}).get(student) if roster is not None else student
        if not ident:
            problems.append(f"{student}: graded, but the roster gives no identifier (left out)")
            continue
        writer.writerow([_text(ident), _number(points),
                         _text(f"{passed} of {total} exercises passed, {_number(points)} of {_number(top)} points; "
                               "see your feedback file")])
    return out.getvalue(), problems


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m rnnlab gradebook", description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("grades", type=Path, help="the CSV written by python -m rnnlab grade")
    parser.add_argument("--lms", choices=["canvas", "moodle"], required=True)
    parser.add_argument("--column", required=True, help="the assignment's name in the gradebook")
    parser.add_argument("--out", type=Path, required=True, help="the CSV to import")
    parser.add_argument("--roster", type=Path, help="CSV: student (the submissions folder's name), id")
    parser.add_argument("--template", type=Path, help="canvas: the gradebook export (Grades, Export) to fill")
    parser.add_argument("--match", default="SIS Login ID",
                        help="canvas: the export's column the roster's ids are (default: SIS Login ID)")
    parser.add_argument("--id-header", default="Email address",
                        help="moodle: the identifier column's header (default: Email address)")
    parser.add_argument("--answers", type=Path,
                        help="the answers.csv of the same grading, with the points column filled in: "
                             "each student's points for answers in words are added to the grade")
    parser.add_argument("--answers-max", type=float,
                        help="with --answers: the most points the answers in words give together")
    args = parser.parse_args(argv)
    if (args.answers is None) != (args.answers_max is None):
        parser.error("--answers and --answers-max go together: the marked answers.csv and the most "
                     "points its answers in words give")
    extra = []
    try:
        grades, top = read_grades(args.grades)
        if args.answers is not None:
            grades, top, extra = add_answers(grades, top, read_answers(args.answers), args.answers_max)
        roster = read_roster(args.roster) if args.roster else None
        if roster is not None:
            missing = sorted(set(grades) - set(roster))
            grades_known = {s: g for s, g in grades.items() if s in roster}
        else:
            missing, grades_known = [], grades
        if args.lms == "canvas":
            if args.template is None:
                parser.error("--lms canvas needs --template: Canvas's gradebook export (Grades, Export), "
                             "whose rows identify the students")
            text, problems = canvas(grades_known, top, args.template, args.column, args.match, roster)
        else:
            text, problems = moodle(grades_known, top, args.column, args.id_header, roster)
    except (OSError, ValueError) as exc:
        parser.error(str(exc))
    problems = [f"{s}: graded, but not in the roster (left out)" for s in missing] + extra + problems
    atomic_write_text(args.out, text)
    print(f"wrote {args.out}: {len(grades_known)} graded students for {args.lms} ({args.column!r}, "
          f"out of {_number(top)} points)")
    for p in problems:
        print(f"  {p}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
