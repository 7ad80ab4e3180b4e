"""rnnlab._io (atomic writes) and rnnlab._validate (argument checks): the shared helpers."""
import json
import os
import stat

import numpy as np
import pytest
import torch

from rnnlab._io import (atomic_open, atomic_path, atomic_save, atomic_write_bytes, atomic_write_json,
                        atomic_write_text)
from rnnlab._validate import (check_choice, check_float, check_fraction, check_int, check_optional_int,
                              check_positive, check_shape)


# ------------------------------------------------------------------------------------------------ _io

def test_text_bytes_json_round_trip_and_no_temporary_left(tmp_path):
    atomic_write_text(tmp_path / "a" / "t.txt", "x\r\ny\n")  # creates the folder, no newline translation
    assert (tmp_path / "a" / "t.txt").read_bytes() == b"x\r\ny\n"
    atomic_write_bytes(tmp_path / "b.bin", b"\x00\x01")
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    atomic_write_json(str(tmp_path / "c.json"), {"é": [1, 2]}, indent=1, ensure_ascii=False)
    assert (tmp_path / "c.json").read_text(encoding="utf-8") == '{\n "é": [\n  1,\n  2\n ]\n}\n'
    atomic_write_json(tmp_path / "d.json", [1], newline=False)
    assert (tmp_path / "d.json").read_text() == "[1]"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a", "b.bin", "c.json", "d.json", "t.txt"]


def test_replaces_and_keeps_umask_permissions(tmp_path):
    p = tmp_path / "f.txt"
    p.write_text("old")
    atomic_write_text(p, "new")
    assert p.read_text() == "new"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o666 & ~umask


def test_failure_leaves_old_file_and_removes_temporary(tmp_path):
    p = tmp_path / "f.txt"
    p.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_open(p) as f:
            f.write("half")
            raise RuntimeError("boom")
    with pytest.raises(RuntimeError):
        with atomic_path(p, suffix=".npz") as tmp:
            np.savez(tmp, a=np.zeros(2))
            raise RuntimeError("boom")
    with pytest.raises(TypeError):
        atomic_write_json(p, {"x": object()})
    with pytest.raises(Exception):
        atomic_save(lambda: 0, p)  # torch.save cannot pickle a lambda
    assert p.read_text() == "old" and [q.name for q in tmp_path.iterdir()] == ["f.txt"]


def test_atomic_path_and_save(tmp_path):
    with atomic_path(tmp_path / "a.npz", suffix=".npz") as tmp:
        assert tmp.endswith(".npz") and os.path.dirname(tmp) == str(tmp_path)
        np.savez(tmp, a=np.arange(3))
    assert np.load(tmp_path / "a.npz")["a"].tolist() == [0, 1, 2]
    atomic_save({"w": torch.ones(2)}, tmp_path / "s.pt")
    assert torch.load(tmp_path / "s.pt", weights_only=True)["w"].tolist() == [1.0, 1.0]
    assert sorted(q.name for q in tmp_path.iterdir()) == ["a.npz", "s.pt"]


def test_atomic_open_refuses_other_modes(tmp_path):
    with pytest.raises(ValueError, match="mode"):
        with atomic_open(tmp_path / "x", "a"):
            pass
    with pytest.raises(TypeError, match="text"):
        atomic_write_text(tmp_path / "x", b"bytes")
    with pytest.raises(TypeError, match="data"):
        atomic_write_bytes(tmp_path / "x", "text")
    assert not list(tmp_path.iterdir())


# ------------------------------------------------------------------------------------------ _validate

def test_check_int():
    assert check_int("n", 3, minimum=1) == 3
    assert type(check_int("n", np.int64(4))) is int
    with pytest.raises(TypeError, match=r"^f: n must be an int, got bool$"):
        check_int("n", True, minimum=0, fn="f")
    with pytest.raises(TypeError, match="got float"):
        check_int("n", 2.0)
    with pytest.raises(ValueError, match=r"^f: n must be >= 1, got 0$"):
        check_int("n", 0, minimum=1, fn="f")
    with pytest.raises(ValueError, match=r"^n must lie in \[1, 4\], got 5$"):
        check_int("n", 5, 1, 4)
    with pytest.raises(ValueError, match=r"^n must be <= 4, got 5$"):
        check_int("n", 5, maximum=4)
    assert check_optional_int("rank", None, 1) is None
    with pytest.raises(TypeError, match=r"rank must be an int or None \(full rank\), got str"):
        check_optional_int("rank", "2", 1, none_means="full rank")
    with pytest.raises(ValueError):
        check_optional_int("rank", 0, 1)


def test_check_float_family():
    assert check_float("x", 1) == 1.0 and type(check_float("x", 1)) is float
    for bad in (True, "1", None):
        with pytest.raises(TypeError, match="x must be a number"):
            check_float("x", bad)
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="finite"):
            check_float("x", bad)
    assert check_float("x", float("inf"), finite=False) == float("inf")
    assert check_positive("lr", 1e-3) == 1e-3
    with pytest.raises(ValueError, match=r"^g: lr must be > 0, got 0.0$"):
        check_positive("lr", 0, fn="g")
    assert check_fraction("p", 0) == 0.0
    with pytest.raises(ValueError, match=r"p must lie in \[0, 1\), got 1.0"):
        check_fraction("p", 1)
    with pytest.raises(ValueError, match=r"p must lie in \(0, 1\), got 0.0"):
        check_fraction("p", 0, low_open=True)


def test_check_choice_and_shape():
    assert check_choice("mode", "a", ("a", "b")) == "a"
    with pytest.raises(ValueError, match=r"^f: mode must be one of 'a', 'b'; got 'c'$"):
        check_choice("mode", "c", ("a", "b"), fn="f")
    with pytest.raises(ValueError):
        check_choice("mode", ["a"], {"a", "b"})  # unhashable: a wrong value, not a crash
    x = torch.zeros(2, 3)
    assert check_shape("x", x, (2, None)) is x
    assert check_shape("x", x, ("B", 3)) is x
    with pytest.raises(ValueError, match=r"x must have shape \(B, 4\), got \(2, 3\)"):
        check_shape("x", x, ("B", 4))
    with pytest.raises(ValueError, match=r"got \(2, 3\)"):
        check_shape("x", x, (2,))
    with pytest.raises(TypeError, match="x must be a tensor, got list"):
        check_shape("x", [1, 2], (2,))


def test_check_finite_matrix():
    from rnnlab._validate import check_finite_matrix

    W = check_finite_matrix("W", [[1, 2], [3, 4]], (2, 2))
    assert W.dtype == np.float64 and W.shape == (2, 2)
    with pytest.raises(ValueError, match=r"^f: W must be a finite 2x2 matrix, got shape \(3,\)$"):
        check_finite_matrix("W", [1, 2, 3], (2, 2), fn="f")
    with pytest.raises(ValueError, match="non-finite entry"):
        check_finite_matrix("W", [[1, np.nan], [0, 1]], (2, 2))
    with pytest.raises(TypeError, match="W must be an array of real numbers, got str"):
        check_finite_matrix("W", "ab", (2, 2))
