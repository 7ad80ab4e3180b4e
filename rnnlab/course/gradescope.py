"""A Gradescope autograder for the book's notebooks: ``python -m rnnlab autograder --out autograder.zip``.

Gradescope runs a programming assignment's autograder in a container it builds from an
uploaded zip: ``setup.sh`` once, when the image is built (with network), then
``run_autograder`` for each submission, with the bundle unzipped in ``/autograder/source``,
the student's files in ``/autograder/submission`` and the results expected in
``/autograder/results/results.json`` (Gradescope's "autograder specifications").

:func:`bundle` writes that zip:

- ``setup.sh`` installs bubblewrap (the grader's sandbox), a virtual environment, the CPU
  build of torch and ``rnnlab`` pinned at the term's ref (``--ref``, else the ref the
  notebooks pin, else the default branch) from the repository of ``_config.yml``;
- ``run_autograder`` calls :func:`run` (``python -m rnnlab.course.gradescope run``);
- ``config.json``: the notebooks graded, the hidden cases' seed, the limits, the
  visibility of hidden results; the teacher's ``--cases``, ``--weights`` and
  ``--exercises`` files beside it when given.

:func:`run` grades one submission with ``python -m rnnlab grade`` (the same kernels,
sandbox, judge and hidden cases as a class's folder) and writes ``results.json``: per
exercise, a test with the public cases' verdict and message (visible at once, worth 0
points) and a test with its points from every case, public and hidden (visibility
``after_due_date`` by default, so hidden results are not shown before the deadline); no
total, so that Gradescope sums the tests as their visibility allows.
A submission that cannot be graded still gets a ``results.json`` that says why: the
autograder never ends without one.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import shutil
import stat
import sys
import tempfile
import zipfile
from pathlib import Path

from .._io import atomic_write_json

VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder's image (Ubuntu, as root, with network).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends python3 python3-venv python3-pip git bubblewrap
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install --upgrade pip
/autograder/venv/bin/pip install torch --index-url {torch_index}
/autograder/venv/bin/pip install "rnnlab[book] @ git+{url}{at_ref}"
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for each submission: /autograder/submission in, /autograder/results/results.json out.
cd /autograder/source
exec /autograder/venv/bin/python -m rnnlab.course.gradescope run \\
    --source /autograder/source --submission /autograder/submission \\
    --results /autograder/results/results.json
"""


def _repository(root):
    from ..book.maintenance import RefDisagreement, current_ref, repository_url

    url = repository_url(root)
    try:
        ref = current_ref(root)
    except RefDisagreement:   # notebooks that disagree: no pin unless the teacher passes --ref
        ref = None
    return url, ref


def bundle(out, notebooks, seed, *, cases=None, weights=None, exercises=None, ref=None, root=".",
           timeout=300, cell_timeout=60, hidden_visibility="after_due_date", allow_unsafe=False):
    """Write the autograder zip ``out``; return the configuration it holds (a dict)."""
    from ..checks import exercises as registered

    if not notebooks:
        raise ValueError("notebooks: name at least one notebook to grade (e.g. scans/01_associative_scan)")
    if hidden_visibility not in VISIBILITIES:
        raise ValueError(f"hidden_visibility: one of {', '.join(VISIBILITIES)}, got {hidden_visibility!r}")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed: a non-negative integer, got {seed!r}")
    files = {"cases": cases, "weights": weights, "exercises": exercises}
    for name, path in files.items():
        if path is not None and not Path(path).is_file():
            raise ValueError(f"{name}: no file {path}")
    known = {ex.notebook for ex in registered()}     # the teacher's --exercises are imported by now
    unknown = [nb for nb in notebooks if nb not in known]
    if unknown:
        raise ValueError(f"notebooks: no exercises in {', '.join(unknown)} "
                         f"(notebooks with exercises: {', '.join(sorted(known))})")
    url, pinned = _repository(root)
    ref = ref or pinned
    config = {"notebooks": list(notebooks), "seed": seed, "timeout": timeout, "cell_timeout": cell_timeout,
              "hidden_visibility": hidden_visibility, "allow_unsafe": bool(allow_unsafe),
              "rnnlab": f"git+{url}" + (f"@{ref}" if ref else ""),
              **{name: Path(path).name for name, path in files.items() if path is not None}}
    if exercises is not None:
        config["exercises_module"] = Path(exercises).stem
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in (("setup.sh", SETUP_SH.format(torch_index=TORCH_INDEX, url=url,
                                                         at_ref=f"@{ref}" if ref else "")),
                           ("run_autograder", RUN_AUTOGRADER)):
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFREG | 0o755) << 16
            z.writestr(info, text)
        z.writestr("config.json", json.dumps(config, indent=2) + "\n")
        for path in files.values():
            if path is not None:
                z.write(path, Path(path).name)
    return config


# ------------------------------------------------------------------------------------------ grading one

def _submitted(submission, into):
    """Copy the submission's notebooks (regular files, no links, any depth) into ``into``; return their names."""
    names = []
    for path in sorted(Path(submission).rglob("*.ipynb")):
        if path.is_symlink() or not path.is_file() or any(p.is_symlink() for p in path.parents):
            continue
        target = into / path.relative_to(submission)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        names.append(path.relative_to(submission).as_posix())
    return names


def _rows(grades_csv):
    lines = [line for line in Path(grades_csv).read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
    return list(csv.DictReader(io.StringIO("\n".join(lines))))


def _messages(feedback_md):
    """``{label: message}`` from a feedback file (its "### label: verdict" sections' code blocks)."""
    text = Path(feedback_md).read_text(encoding="utf-8")
    found = {}
    for m in re.finditer(r"^### (?P<label>[\w-]+): [^\n]*\n\n```\n(?P<body>.*?)\n```$", text, re.M | re.S):
        found[m["label"]] = m["body"]
    return found


def public_part(message, verdict):
    """``(passed, text)`` of an exercise's public cases, from the grader's message: nothing of the
    hidden cases (how many passed, which failed) before the results are released."""
    lines = message.splitlines()
    head = lines[0] if lines else ""
    counts = re.sub(r" and \d+ of \d+ hidden cases", "", "\n".join(lines[1:]))
    if verdict == "passed" or re.search(r": hidden case \d+ of \d+ failed", head):
        label = head.split(":")[0]
        return True, f"{label}: every public case passed" + ("" if verdict == "passed" else
                                                             " (the hidden cases are shown after the deadline)")
    return False, "\n".join([head, counts]).strip()


def results(grades_csv, feedback_md, weights, hidden_visibility="after_due_date", note=""):
    """Gradescope's results.json (a dict) from the grader's CSV row and feedback file of one student."""
    (row,) = _rows(grades_csv)
    messages = _messages(feedback_md)
    tests = []
    for label, points in weights.items():
        verdict = row.get(label, "missing")
        message = messages.get(label, f"{label}: {verdict}")
        public_ok, public_text = public_part(message, verdict)
        tests.append({"name": f"{label}: public cases", "score": 0.0, "max_score": 0.0,
                      "status": "passed" if public_ok else "failed", "output": public_text,
                      "visibility": "visible"})
        tests.append({"name": f"{label}: all cases, public and hidden", "score": points if verdict == "passed" else 0.0,
                      "max_score": points, "status": "passed" if verdict == "passed" else "failed",
                      "output": message, "visibility": hidden_visibility})
    # No top-level "score": Gradescope then sums the tests' scores, each shown as its visibility says
    # (a total given here would show students the hidden cases' outcome before the deadline).
    out = {"tests": tests, "visibility": "visible",
           "stdout_visibility": "hidden", "output": note or "Graded by python -m rnnlab grade."}
    if row.get("notes"):
        out["output"] += "\n\nNotes: " + row["notes"]
    return out


def _failure(why):
    return {"score": 0.0, "tests": [], "visibility": "visible", "stdout_visibility": "hidden",
            "output": f"This submission could not be graded: {why} Your teacher has been told (the "
                      "autograder's log); nothing was lost: resubmit, or ask."}


def run(source, submission, results_path):
    """Grade one submission as Gradescope asks; always write ``results_path``. Returns 0."""
    source, results_path = Path(source), Path(results_path)
    results_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        out = _run(source, Path(submission))
    except Exception as exc:  # noqa: BLE001 (whatever happens, Gradescope gets a results.json)
        print(f"rnnlab autograder: {type(exc).__name__}: {exc}", file=sys.stderr)
        out = _failure(f"the autograder failed ({type(exc).__name__}).")
    atomic_write_json(results_path, out, indent=2)
    return 0


def _run(source, submission):
    from ..__main__ import main as rnnlab_main
    from ..checks import exercises
    from ..checks.grade import sandbox
    from ..checks.grade.folder import weights as weights_of

    config = json.loads((source / "config.json").read_text(encoding="utf-8"))
    if config.get("exercises_module"):
        sys.path.insert(0, str(source))
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(source), os.environ.get("PYTHONPATH")]))
        __import__(config["exercises_module"])
    unsafe = not sandbox.available()
    if unsafe and not config.get("allow_unsafe"):
        return _failure("the grading machine has no working sandbox (bubblewrap), and this autograder was built "
                        "without --allow-unsafe.")
    with tempfile.TemporaryDirectory(prefix="rnnlab-autograder-") as tmp:
        tmp = Path(tmp)
        student = tmp / "submissions" / "submission"
        student.mkdir(parents=True)
        if not _submitted(submission, student):
            return _failure("no Jupyter notebook (.ipynb) was found in it.")
        argv = ["grade", str(tmp / "submissions"), "--out", str(tmp / "out" / "grades.csv"),
                "--feedback", str(tmp / "out" / "feedback"), "--seed", str(config["seed"]),
                "--timeout", str(config["timeout"]), "--cell-timeout", str(config["cell_timeout"]),
                "--jobs", "1", "--notebooks", *config["notebooks"]]
        for name, flag in (("cases", "--cases"), ("weights", "--weights")):
            if config.get(name):
                argv += [flag, str(source / config[name])]
        if config.get("exercises_module"):
            argv += ["--import", config["exercises_module"]]
        if unsafe:
            argv.append("--unsafe")
        rc = rnnlab_main(argv)
        if rc != 0:
            return _failure(f"the grader stopped (exit status {rc}).")
        graded = [ex for ex in exercises() if ex.notebook in set(config["notebooks"])]
        weight = weights_of(graded, source / config["weights"] if config.get("weights") else None)
        (feedback,) = sorted((tmp / "out" / "feedback").glob("*.md"))
        note = ("Graded by python -m rnnlab grade"
                + (" WITHOUT its sandbox (this machine has none; the autograder was built with --allow-unsafe)."
                   if unsafe else ", each notebook and each function in a sandbox of its own."))
        return results(tmp / "out" / "grades.csv", feedback, weight, config["hidden_visibility"], note)


# ------------------------------------------------------------------------------------------ command line

def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run"]:
        parser = argparse.ArgumentParser(prog="python -m rnnlab.course.gradescope run",
                                         description="grade one Gradescope submission (run_autograder calls this)")
        parser.add_argument("--source", type=Path, default=Path("/autograder/source"))
        parser.add_argument("--submission", type=Path, default=Path("/autograder/submission"))
        parser.add_argument("--results", type=Path, default=Path("/autograder/results/results.json"))
        args = parser.parse_args(argv[1:])
        return run(args.source, args.submission, args.results)
    parser = argparse.ArgumentParser(
        prog="python -m rnnlab autograder", description=__doc__.split("\n\n")[0],
        epilog="The zip is uploaded as a programming assignment's autograder (Ubuntu base image). Each "
               "submission is graded as `python -m rnnlab grade` grades a folder; results.json gives each "
               "exercise a visible test for its public cases and a test with its points (public and hidden "
               "cases) shown after the due date.")
    parser.add_argument("--out", type=Path, default=Path("autograder.zip"), help="the zip to write")
    parser.add_argument("--notebooks", nargs="+", required=True, metavar="NB",
                        help="the assignment's notebooks, e.g. scans/01_associative_scan")
    parser.add_argument("--seed", type=int, required=True, help="seed of the hidden cases (the same for every student)")
    parser.add_argument("--cases", type=Path, help="a Python file of the teacher's hidden cases (see grade --help)")
    parser.add_argument("--weights", type=Path, help="points per exercise (see grade --help)")
    parser.add_argument("--exercises", type=Path, help="a Python file declaring exercises of the teacher's own")
    parser.add_argument("--ref", help="the rnnlab ref to install (default: the one the notebooks pin)")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per notebook (default: 300)")
    parser.add_argument("--cell-timeout", type=int, default=60, help="seconds per cell (default: 60)")
    parser.add_argument("--hidden-visibility", default="after_due_date", choices=VISIBILITIES,
                        help="when students see the scored tests (default: after_due_date)")
    parser.add_argument("--allow-unsafe", action="store_true",
                        help="grade without the sandbox where the container has none (Gradescope still isolates "
                             "each submission in a container of its own, but its code can then read the hidden "
                             "cases' seed and the teacher's files in the bundle)")
    parser.add_argument("--root", type=Path, default=Path("."), help="repository root (where _config.yml is)")
    args = parser.parse_args(argv)
    if args.exercises is not None:
        sys.path.insert(0, str(args.exercises.resolve().parent))
        __import__(args.exercises.stem)
    try:
        config = bundle(args.out, args.notebooks, args.seed, cases=args.cases, weights=args.weights,
                        exercises=args.exercises, ref=args.ref, root=args.root, timeout=args.timeout,
                        cell_timeout=args.cell_timeout, hidden_visibility=args.hidden_visibility,
                        allow_unsafe=args.allow_unsafe)
    except ValueError as exc:
        parser.error(str(exc))
    print(f"wrote {args.out}: {', '.join(config['notebooks'])}, hidden cases from seed {config['seed']}, "
          f"rnnlab {config['rnnlab']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
