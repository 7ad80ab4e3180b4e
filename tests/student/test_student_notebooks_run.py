"""Every generated student notebook runs top to bottom (``make test-student``).

Executed in its own folder under ``student/``, as a student would; the only
errors allowed are NotImplementedError from an unfilled starter, and every
check cell must say "not attempted yet"."""
import json
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
STUDENT = sorted((ROOT / "student").rglob("*.ipynb"))


def test_there_are_student_notebooks():
    assert STUDENT, "student/ is empty: run `make student`"


@pytest.mark.parametrize("path", STUDENT, ids=[p.relative_to(ROOT / "student").as_posix() for p in STUDENT])
def test_runs_with_only_the_starters_unfinished(path):
    import nbformat
    from rnnlab.book.nbrun import notebook_client

    committed = path.read_text()
    nb = nbformat.reads(committed, as_version=4)
    notebook_client(nb, timeout=600, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    errors, checks = [], 0
    for n, cell in enumerate(nb.cells, 1):
        if cell.cell_type != "code":
            continue
        outputs = cell.get("outputs", [])
        for out in outputs:
            if out.get("output_type") == "error" and out.get("ename") != "NotImplementedError":
                errors.append(f"cell {n}: {out.get('ename')}: {out.get('evalue')}")
        if "exercise-check" in cell.metadata.get("tags", []):
            checks += 1
            text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
            assert "not attempted yet" in text, f"cell {n}: check printed {text!r}"
    assert not errors, "\n".join(errors)
    # nothing of the run is written back: the committed file keeps only its stored pictures
    assert path.read_text() == committed
    assert all(set(o.get("data", {})) == {"image/png"} for c in json.loads(committed)["cells"]
               if c["cell_type"] == "code" for o in c.get("outputs", []))
