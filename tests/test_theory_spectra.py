"""Spectra of W_rec(r, s) and the appendix's laws at initialisation (Tumma et al. 2024, A.6, A.7, A.10, A.11.5).

Exact small cases for every statistic, then the laws table: its structure,
and the verdicts that were measured (the ones that do not sit at the edge of
the tolerance).
"""
import math

import numpy as np
import pytest
import scipy.integrate
import torch

import rnnlab.theory as th
from rnnlab.models import GRU, LSTM, RNN
from rnnlab.models.cells import haar_orthogonal
from rnnlab.theory.laws import VERDICTS


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def rotation(theta, a=1.0):
    c, s = math.cos(theta), math.sin(theta)
    return a * torch.tensor([[c, -s], [s, c]], dtype=torch.float64)


# ---------------------------------------------------------------------------
# Exact small cases.
# ---------------------------------------------------------------------------

def test_diagonal_matrix():
    W = torch.diag(torch.tensor([1.0, -3.0, 2.0]))
    assert float(th.spectral_radius(W)) == pytest.approx(3.0, abs=1e-14)
    assert float(th.spectral_norm(W)) == pytest.approx(3.0, abs=1e-14)
    lam = th.eigenvalues(W)
    assert lam.dtype == torch.complex128
    assert torch.allclose(lam.real, torch.tensor([-3.0, 2.0, 1.0], dtype=torch.float64))
    assert torch.allclose(th.singular_values(W), torch.tensor([1.0, 2 / 3, 1 / 3], dtype=torch.float64))
    assert torch.allclose(th.singular_values(W, normalise=False), torch.tensor([3.0, 2.0, 1.0], dtype=torch.float64))
    p = np.array([3.0, 2.0, 1.0]) / 6
    assert float(th.effective_rank(W)) == pytest.approx(math.exp(-(p * np.log(p)).sum()), rel=1e-12)
    assert float(th.effective_rank(W, "participation")) == pytest.approx(14 ** 2 / 98, rel=1e-12)
    assert float(th.effective_rank(W, "stable")) == pytest.approx(14 / 9, rel=1e-12)


def test_scaled_rotation():
    W = rotation(0.7, 0.8)
    assert float(th.spectral_radius(W)) == pytest.approx(0.8, abs=1e-14)
    assert float(th.spectral_norm(W)) == pytest.approx(0.8, abs=1e-14)
    lam = th.eigenvalues(W)
    assert torch.allclose(lam.abs(), torch.full((2,), 0.8, dtype=torch.float64))
    assert sorted(torch.angle(lam).tolist()) == pytest.approx([-0.7, 0.7])
    for method in th.spectra.EFFECTIVE_RANKS:
        assert float(th.effective_rank(W, method)) == pytest.approx(2.0, abs=1e-12)


def test_non_normal_radius_and_norm_differ():
    W = torch.tensor([[0.5, 10.0], [0.0, 0.5]], dtype=torch.float64)
    assert float(th.spectral_radius(W)) == pytest.approx(0.5, abs=1e-12)
    assert float(th.spectral_norm(W)) == pytest.approx(float(np.linalg.norm(W.numpy(), 2)), rel=1e-12)
    assert float(th.spectral_norm(W)) > 10


def test_effective_rank_of_orthogonal_and_projector():
    Q = haar_orthogonal(20, generator=torch.Generator().manual_seed(0))
    P = Q[:, :7] @ Q[:, :7].T
    for method in th.spectra.EFFECTIVE_RANKS:
        assert float(th.effective_rank(Q, method)) == pytest.approx(20.0, rel=1e-10)
        assert float(th.effective_rank(P, method)) == pytest.approx(7.0, rel=1e-8)
        assert float(th.effective_rank(3.0 * Q, method)) == pytest.approx(20.0, rel=1e-10)   # scale-invariant


def test_zero_matrix():
    Z = torch.zeros(4, 4)
    assert float(th.spectral_radius(Z)) == 0.0
    assert torch.equal(th.singular_values(Z), torch.zeros(4, dtype=torch.float64))
    for method in th.spectra.EFFECTIVE_RANKS:
        assert float(th.effective_rank(Z, method)) == 0.0


def test_stacks_numpy_and_dtypes():
    W = torch.stack([torch.diag(torch.tensor([1.0, -3.0, 2.0])), torch.eye(3)])
    rho = th.spectral_radius(W.float())
    assert rho.shape == (2,) and rho.dtype == torch.float64
    assert rho.tolist() == pytest.approx([3.0, 1.0])
    assert th.spectral_norm(W).shape == (2,)
    assert th.eigenvalues(W).shape == (2, 3) and th.singular_values(W).shape == (2, 3)
    assert th.effective_rank(W).tolist() == pytest.approx([float(th.effective_rank(W[0])), 3.0])
    assert float(th.spectral_radius(W[0].numpy())) == pytest.approx(3.0)
    assert th.spectral_radius(W[0]).shape == ()


@pytest.mark.parametrize("bad, err, match", [
    ([[1.0, 0.0], [0.0, 1.0]], TypeError, "W must be a torch.Tensor or numpy.ndarray"),
    (torch.zeros(2, 3), ValueError, r"W must be a square matrix .* got shape \(2, 3\)"),
    (torch.zeros(2, 2, 2, 2), ValueError, "W must be a square matrix"),
    (torch.zeros(3), ValueError, "W must be a square matrix"),
    (torch.zeros(0, 0), ValueError, "n >= 1"),
    (torch.zeros(2, 2, dtype=torch.bool), TypeError, "W must hold numbers"),
])
def test_bad_input_names_the_argument(bad, err, match):
    for fn in (th.spectral_radius, th.spectral_norm, th.eigenvalues, th.singular_values, th.effective_rank):
        with pytest.raises(err, match=match):
            fn(bad)


def test_bad_method():
    with pytest.raises(ValueError, match="method must be one of"):
        th.effective_rank(torch.eye(2), "nuclear")


# ---------------------------------------------------------------------------
# A cell's spectra, averaged over its matrices (A.11.5).
# ---------------------------------------------------------------------------

def test_cell_spectra_averages_over_gates():
    cell = LSTM(5, 16, rank=4, sparsity=0.3, seed=0, backend="torch", dtype=torch.float64)
    out = th.cell_spectra(cell)
    per = out["per_matrix"]
    assert out["gates"] == ("i", "f", "g", "o")
    assert per["spectral_radius"].shape == (4,) and per["singular_values"].shape == (4, 16)
    W = cell.recurrent_weights().detach()
    assert out["spectral_radius"] == pytest.approx(float(th.spectral_radius(W).mean()))
    assert out["spectral_norm"] == pytest.approx(float(th.spectral_norm(W).mean()))
    assert out["effective_rank"] == pytest.approx(float(th.effective_rank(W).mean()))
    assert torch.allclose(out["singular_values"], th.singular_values(W).mean(0))
    assert float(out["singular_values"][0]) == pytest.approx(1.0)             # curves start at 1
    assert torch.all(out["eigenvalue_moduli"][:-1] >= out["eigenvalue_moduli"][1:] - 1e-12)


def test_cell_spectra_orthogonal_full_rank_and_concatenated():
    own = th.cell_spectra(GRU(3, 32, seed=1, backend="torch"))
    assert own["spectral_radius"] == pytest.approx(1.0, abs=1e-5)
    assert own["spectral_norm"] == pytest.approx(1.0, abs=1e-5)
    assert own["effective_rank"] == pytest.approx(32.0, rel=1e-4)
    concat = th.cell_spectra(LSTM(3, 32, init="concatenated", seed=1, backend="torch"))
    assert all(v < 1.0 for v in concat["per_matrix"]["spectral_norm"].tolist())       # Lemma 1
    assert concat["spectral_radius"] < 0.75
    stack = th.cell_spectra(RNN(3, 8, seed=2, backend="torch").recurrent_weights().detach())
    assert stack["gates"] == (0,)


def test_truncated_haar_mean_modulus():
    assert th.truncated_haar_mean_modulus(1.0) == 1.0
    mu = 1e-6
    assert th.truncated_haar_mean_modulus(mu) == pytest.approx(2 / 3 * math.sqrt(mu), rel=1e-5)   # uniform disk
    for mu in (0.1, 0.25, 0.6):
        dens = lambda r: 2 * r * (1 - mu) / mu / (1 - r * r) ** 2          # noqa: E731  radial density
        mass = scipy.integrate.quad(dens, 0, math.sqrt(mu))[0]
        mean = scipy.integrate.quad(lambda r: r * dens(r), 0, math.sqrt(mu))[0]
        assert mass == pytest.approx(1.0, rel=1e-10)
        assert th.truncated_haar_mean_modulus(mu) == pytest.approx(mean, rel=1e-10)
    with pytest.raises(ValueError, match="ratio"):
        th.truncated_haar_mean_modulus(0.0)


# ---------------------------------------------------------------------------
# The laws.
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def laws64():
    return th.initialisation_laws(64)


def _rows(rows, law, quantity=None, setting=""):
    return [r for r in rows if r.law == law and (quantity is None or r.quantity == quantity) and setting in r.setting]


def test_laws_structure(laws64):
    rows = laws64
    assert {r.law for r in rows} == {"A.6.1", "A.6.2", "A.6.3", "A.6.4", "A.7", "Lemma 1", "A.10"}
    assert all(isinstance(r, th.LawRow) and r.n == 64 for r in rows)
    assert all(r.verdict in VERDICTS and math.isfinite(r.measured) and r.sd >= 0 for r in rows)
    # The paper's grid at n = 64: five ranks, four sparsities, both axes.
    assert th.paper_grid(64) == ((1, 5, 16, 27, 64), (0.0, 0.2, 0.5, 0.8))
    assert len(_rows(rows, "A.6.1", "ρ(W)")) == 4 and len(_rows(rows, "A.6.3", "‖W‖")) == 5
    assert len(_rows(rows, "A.7", "erank vs s")) == 2 * 5 and len(_rows(rows, "A.7", "erank vs r")) == 2 * 4
    for r in _rows(rows, "A.6.1"):
        assert not math.isnan(r.rel_error) and r.note.startswith("rel. error")
    table = th.laws_table(rows)
    assert table.count("\n") == len(rows) + 1 and table.startswith("| law |")
    verdicts = th.law_verdicts(rows)
    assert set(v[0] for v in verdicts.values()) <= {"holds", "holds in part", "fails"}
    assert ("A.6.3", "‖W‖") in verdicts


def test_laws_exact_identities(laws64):
    rows = laws64
    for r in _rows(rows, "A.6.3", "‖W‖") + _rows(rows, "A.6.4", "‖W_r‖"):
        assert r.verdict == "holds", r
    lemma = _rows(rows, "Lemma 1", "max ‖W_g‖")
    assert [r.verdict for r in lemma] == ["holds", "holds"]
    assert lemma[0].measured < 0.97 and lemma[1].measured < 0.9                 # G = 3, 4: well below 1
    for r in _rows(rows, "A.10", "max_i |σ_i(W1 W2) − 1|, i ≤ r"):
        assert r.verdict == "fails" and r.measured < 1e-12                        # all singular values are 1


def test_laws_qualitative_verdicts_as_measured(laws64):
    rows = laws64
    assert _rows(rows, "A.6.2", "‖W‖ vs s")[0].verdict == "holds"               # non-monotonic in s
    assert _rows(rows, "A.6.4", "ρ(W) vs rank")[0].verdict == "holds"
    assert all(r.verdict == "holds" for r in _rows(rows, "A.7", "erank vs r"))
    # Sparsity slows the decay of a low-rank matrix's singular values, but not at full rank: an orthogonal
    # matrix's flat spectrum only decays faster, a Glorot matrix's (Marchenko-Pastur) shape barely moves.
    for r in _rows(rows, "A.7", "erank vs s"):
        assert r.verdict == ("fails" if r.setting.endswith("r=full") else "holds"), r
    assert th.law_verdicts(rows)[("A.7", "erank vs s")][0] == "holds in part"
    for r in _rows(rows, "A.10", "‖W1 W2‖, Glorot factors"):
        if "r=1 " not in r.setting:
            assert r.verdict == "holds" and r.measured > 1.15 * r.predicted, r


def test_lowrank_radius_reading(laws64):
    """A.6.3's "E[λ] = √r": the largest |λ| approaches √(r/n), the mean |λ| does not (Życzkowski-Sommers)."""
    for r in _rows(laws64, "A.6.3", "mean |λ| of the r nonzero λ"):
        full = "r=64 " in r.setting
        if r.claimed:
            assert r.verdict == ("holds" if full else "fails"), r
            assert full or r.rel_error < -0.2
        elif "r=16 " in r.setting or "r=27 " in r.setting:
            assert r.verdict == "holds", r
    rows = th.initialisation_laws(512, 2, ranks=(216, 512), laws=["A.6.3"])
    rho = _rows(rows, "A.6.3", "ρ(W) = max|λ|", "r=216 ")[0]
    assert rho.verdict == "holds" and 0 < rho.rel_error < 0.05
    zs = [r for r in _rows(rows, "A.6.3", "mean |λ| of the r nonzero λ", "r=216 ")]
    assert [r.verdict for r in zs] == ["fails", "holds"]


def test_glorot_sparse_laws_at_n512():
    rows = th.initialisation_laws(512, 1, sparsities=(0.5, 0.9), laws=["A.6.1"])
    assert len(rows) == 4 and all(r.verdict == "holds" for r in rows)
    assert all(abs(r.rel_error) < 0.04 for r in rows)


@pytest.mark.parametrize("kwargs, match", [
    (dict(ranks=(1, 5)), "ranks must be increasing ints"),
    (dict(ranks=(5, 1, 8)), "ranks must be increasing ints"),
    (dict(sparsities=(0.0, 1.0)), "sparsities must be increasing floats"),
    (dict(laws=["A.9"]), "laws must be a subset"),
    (dict(tol=0.0), "tol must be > 0"),
])
def test_laws_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        th.initialisation_laws(8, 1, **kwargs)


def test_lowrank_laws_command_writes_rows_that_read_back(tmp_path, capsys):
    import json

    from rnnlab.experiments import lowrank_laws
    from rnnlab.theory.laws import laws_from_json

    out = tmp_path / "laws.json"
    lowrank_laws.main(["--n", "16", "--seeds", "2", "--out", str(out)])
    printed = capsys.readouterr().out
    assert "| law | quantity |" in printed and "wrote" in printed
    data = json.loads(out.read_text())
    assert data["meta"]["n"] == 16 and data["meta"]["seeds"] == [0, 1]
    assert "--n 16" in data["meta"]["command"]
    rows = laws_from_json(data["rows"])
    again = th.initialisation_laws(16, 2)
    assert [(r.law, r.quantity, r.setting) for r in rows] == [(r.law, r.quantity, r.setting) for r in again]
    assert [r.measured for r in rows] == pytest.approx([r.measured for r in again])
