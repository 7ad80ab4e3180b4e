"""The committed severity sweep of lowrank/04 (rnnlab.experiments.imitation_severity): its shape
and its normalised returns, recomputed from the stored means."""
import json
import pathlib

import pytest

DATA = pathlib.Path(__file__).resolve().parents[1] / "book" / "lowrank" / "data" / "pendulum-severity.json"


@pytest.fixture(scope="module")
def sweep():
    return json.loads(DATA.read_text())


def test_grid_is_complete(sweep):
    from rnnlab.experiments.imitation_severity import POLICIES, SEVERITIES
    assert set(sweep["policies"]) == set(POLICIES)
    got = {(r["shift"], r["p"]) for r in sweep["rows"]}
    assert got == {(s, p) for s in ("noise", "dropout", "offset") for p in SEVERITIES}
    assert "imitation_severity" in sweep["command"]


def test_normalised_is_affine_in_the_means(sweep):
    for row in sweep["rows"]:
        e, z = row["expert"]["mean"], row["zero"]["mean"]
        for pol in row["policies"].values():
            # the mean of per-episode (R - z) / (e - z) is (mean R - z) / (e - z)
            assert pol["normalised"] == pytest.approx((pol["mean"] - z) / (e - z), abs=1e-9)


def test_in_distribution_rows_agree(sweep):
    base = [r for r in sweep["rows"] if r["p"] == 0]
    assert len(base) == 3
    for r in base[1:]:
        assert r["expert"] == base[0]["expert"] and r["policies"] == base[0]["policies"]


@pytest.mark.parametrize("argv, message", [(["--episodes", "1"], "--episodes 1"),
                                           (["--epochs", "0"], "--epochs 0"),
                                           (["--threads", "0"], "--threads 0")])
def test_bad_arguments_are_named(tmp_path, capsys, argv, message):
    from rnnlab.experiments.imitation_severity import main
    with pytest.raises(SystemExit):
        main(["--out", str(tmp_path / "x.json"), *argv])
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()
