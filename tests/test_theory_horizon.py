"""Recurrent Jacobians and the memory horizon (Tumma et al. 2024, A.4, A.5.1, A.11.5).

The analytic Jacobians against autograd for every cell with rank and
sparsity; products of known Jacobians; a linear RNN whose horizon slope is
log ρ(W) exactly; and the slope against log ρ across ranks and sparsities, as
measured at initialisation.
"""
import math

import pytest
import torch

import rnnlab.theory as th
from rnnlab.models import CfC, GRU, LSTM, RNN

CELLS = {"rnn": RNN, "lstm": LSTM, "gru": GRU, "cfc": CfC}


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def cell(kind, H=5, I=3, rank=None, sparsity=0.0, seed=0, **kw):
    return CELLS[kind](I, H, rank, sparsity, seed=seed, backend="torch", dtype=torch.float64, **kw)


def random_state(kind, B, H, seed):
    g = torch.Generator().manual_seed(seed)
    h = 0.8 * torch.randn(B, H, generator=g, dtype=torch.float64).tanh()
    return (h, torch.randn(B, H, generator=g, dtype=torch.float64)) if kind == "lstm" else h


def linear_rnn(W, I=2):
    """An RNN with recurrent matrix W and no input or bias: h stays 0, so J_t = D(tanh'(0)) W = W exactly."""
    model = cell("rnn", H=W.shape[0], I=I)
    with torch.no_grad():
        model.weight_hh.copy_(W[None])
        model.weight_ih.zero_()
        model.bias.zero_()
    return model


# ---------------------------------------------------------------------------
# Jacobians (A.4): analytic = autograd; the appendix's printed formulas differ.
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("kind", list(CELLS))
@pytest.mark.parametrize("rank, sparsity", [(None, 0.5), (3, 0.3)])
def test_recurrent_jacobian_matches_autograd(kind, rank, sparsity):
    model = cell(kind, rank=rank, sparsity=sparsity, seed=7)
    x = torch.randn(3, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    state = random_state(kind, 3, 5, seed=2)
    J = th.recurrent_jacobian(model, x, state)
    assert J.shape == (3, 5, 5) and J.dtype == torch.float64
    assert torch.allclose(J, th.autograd_jacobian(model, x, state), atol=1e-12, rtol=1e-10)
    if kind == "lstm":
        Jf = th.recurrent_jacobian(model, x, state, full_state=True)
        assert Jf.shape == (3, 10, 10)
        assert torch.allclose(Jf, th.autograd_jacobian(model, x, state, full_state=True), atol=1e-12, rtol=1e-10)
        assert torch.allclose(Jf[:, :5, :5], J)


@pytest.mark.parametrize("kind", ["rnn", "lstm", "cfc"])
def test_appendix_jacobian_differs(kind):
    model = cell(kind, rank=3, sparsity=0.3, seed=7)
    x = torch.randn(3, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    state = random_state(kind, 3, 5, seed=2)
    gap = (th.appendix_jacobian(model, x, state) - th.autograd_jacobian(model, x, state)).abs().max()
    assert gap > 1e-2


def test_appendix_jacobian_has_no_gru():
    model = cell("gru")
    with pytest.raises(ValueError, match="no formula for the GRU"):
        th.appendix_jacobian(model, torch.zeros(2, 3, dtype=torch.float64))


# ---------------------------------------------------------------------------
# Products of known Jacobians.
# ---------------------------------------------------------------------------

def test_products_of_scalar_jacobians():
    a = torch.tensor([0.5, 2.0, 0.1, 3.0, 0.7], dtype=torch.float64)
    J = a[:, None, None] * torch.eye(3, dtype=torch.float64)
    fro = th.cumulative_log_norms(J)
    spec = th.cumulative_log_norms(J, norm="spectral")
    expect = torch.cumsum(torch.log(a).flip(0), 0)               # J_T first: log a_T, log a_T + log a_{T-1}, ...
    assert torch.allclose(spec, expect, atol=1e-14)
    assert torch.allclose(fro, expect + 0.5 * math.log(3), atol=1e-14)


def test_products_follow_the_appendix_order():
    g = torch.Generator().manual_seed(0)
    J = torch.randn(2, 4, 3, 3, generator=g, dtype=torch.float64)
    out = th.cumulative_log_norms(J)
    for b in range(2):
        P = torch.eye(3, dtype=torch.float64)
        for k in range(4):
            P = P @ J[b, 3 - k]                                     # J_T J_{T-1} ... J_{T-k}
            assert float(out[b, k]) == pytest.approx(math.log(float(torch.linalg.matrix_norm(P))), abs=1e-12)


def test_products_do_not_underflow():
    J = 1e-3 * torch.eye(4, dtype=torch.float64).expand(600, 4, 4)
    out = th.cumulative_log_norms(J, norm="spectral")
    k = torch.arange(1, 601, dtype=torch.float64)
    assert torch.isfinite(out).all()                               # 1e-1800 is far below float64's range
    assert torch.allclose(out, k * math.log(1e-3), rtol=1e-12)


def test_zero_jacobian_gives_minus_infinity_not_nan():
    J = torch.eye(2, dtype=torch.float64).repeat(5, 1, 1)
    J[2] = 0
    out = th.cumulative_log_norms(J)                               # the product contains J_3 from k = 3 on
    assert not torch.isnan(out).any()
    assert torch.isfinite(out[:2]).all() and torch.isinf(out[2:]).all()
    assert th.horizon_slope(out) == -math.inf


def test_cumulative_log_norms_errors():
    with pytest.raises(TypeError, match="jacobians must be a torch.Tensor"):
        th.cumulative_log_norms([[1.0]])
    with pytest.raises(ValueError, match=r"jacobians must have shape .* got \(4, 2, 3\)"):
        th.cumulative_log_norms(torch.zeros(4, 2, 3))
    with pytest.raises(ValueError, match="norm must be one of"):
        th.cumulative_log_norms(torch.zeros(4, 2, 2), norm="nuclear")


# ---------------------------------------------------------------------------
# Horizon of a cell.
# ---------------------------------------------------------------------------

def test_linear_rnn_slope_is_log_rho_exactly():
    W = torch.diag(torch.tensor([0.9, -0.5, 0.3, 0.1], dtype=torch.float64))
    hz = th.memory_horizon(linear_rnn(W), norm="spectral", T=60, batch=2)
    k = torch.arange(60, dtype=torch.float64)
    assert torch.allclose(hz.curves, (k * math.log(0.9)).expand(2, 60), atol=1e-12)
    assert hz.slope() == pytest.approx(math.log(0.9), abs=1e-12)
    assert th.memory_horizon(linear_rnn(W), T=60).slope() == pytest.approx(math.log(0.9), abs=1e-9)
    R = torch.block_diag(*(torch.tensor([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]],
                                        dtype=torch.float64) * a for t, a in ((0.4, 0.8), (1.3, 0.6))))
    hz = th.memory_horizon(linear_rnn(R), norm="spectral", T=40)   # a normal, non-diagonal W: ‖W^k‖ = 0.8^k
    assert hz.slope((1, 40)) == pytest.approx(math.log(0.8), abs=1e-12)


@pytest.mark.parametrize("rank, sparsity", [(None, 0.5), (4, 0.0)])
def test_rnn_with_tiny_inputs_follows_log_rho(rank, sparsity):
    model = cell("rnn", H=16, I=16, rank=rank, sparsity=sparsity, seed=0)
    rho = float(th.spectral_radius(model.recurrent_weights().detach()[0]))
    hz = th.memory_horizon(model, T=200, batch=2, scale=1e-6)
    assert hz.slope() == pytest.approx(math.log(rho), abs=5e-3)


def test_memory_horizon_equals_direct_products():
    model = cell("lstm", H=3, I=2, rank=2, sparsity=0.2, seed=3)
    x = torch.randn(2, 6, 2, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    hz = th.memory_horizon(model, x)
    assert hz.full_state and hz.mean_jacobian.shape == (6, 6)
    states, _ = th.run_states(model, x)
    Js = torch.stack([th.autograd_jacobian(model, x[:, t], states[t], full_state=True) for t in range(6)], 1)
    assert torch.allclose(hz.log_norms, th.cumulative_log_norms(Js), atol=1e-12)
    assert torch.allclose(hz.mean_jacobian, Js.mean((0, 1)), atol=1e-12)
    h_only = th.memory_horizon(model, x, full_state=False)
    assert h_only.mean_jacobian.shape == (3, 3)
    Jh = torch.stack([th.autograd_jacobian(model, x[:, t], states[t]) for t in range(6)], 1)
    assert torch.allclose(h_only.log_norms, th.cumulative_log_norms(Jh), atol=1e-12)


def test_memory_horizon_structure_and_defaults():
    model = RNN(4, 8, rank=2, sparsity=0.25, seed=0, backend="torch")      # float32: evaluated on a float64 copy
    hz = th.memory_horizon(model, T=30, batch=5)
    assert hz.log_norms.shape == hz.curves.shape == (5, 30) and hz.mean.shape == (30,)
    assert hz.log_norms.dtype == torch.float64 and torch.equal(hz.steps, torch.arange(1, 31))
    assert torch.all(hz.curves[:, 0] == 0) and torch.allclose(hz.mean, hz.curves.mean(0))
    assert not hz.full_state and hz.norm == "fro"
    ref = th.memory_horizon(model.double(), T=30, batch=5)
    assert torch.allclose(hz.log_norms, ref.log_norms, atol=1e-10)
    x = th.default_drive(model, 30, 5)
    assert x.shape == (5, 30, 4) and torch.equal(x, th.default_drive(model, 30, 5))
    assert torch.equal(th.memory_horizon(model, x).log_norms, ref.log_norms)


def test_memory_horizon_errors():
    rnn = cell("rnn")
    with pytest.raises(ValueError, match="full_state=True is for the LSTM"):
        th.memory_horizon(rnn, full_state=True, T=3)
    with pytest.raises(TypeError, match="full_state must be a bool"):
        th.memory_horizon(rnn, full_state="yes", T=3)
    with pytest.raises(ValueError, match=r"x must be a \(B, T, input_size\) tensor"):
        th.memory_horizon(rnn, torch.zeros(2, 4, 7, dtype=torch.float64))
    with pytest.raises(ValueError, match="norm must be one of"):
        th.memory_horizon(rnn, norm="max", T=3)
    with pytest.raises(TypeError, match="model must be one of"):
        th.memory_horizon(torch.nn.Linear(2, 2), T=3)


def test_horizon_slope():
    k = torch.arange(1, 21, dtype=torch.float64)
    line = 1.5 - 0.25 * k
    assert th.horizon_slope(line) == pytest.approx(-0.25, abs=1e-14)
    bent = torch.where(k <= 10, -1.0 * k, -10 - 0.1 * (k - 10))
    assert th.horizon_slope(bent) == pytest.approx(-0.1, abs=1e-14)               # default window: k >= 10
    assert th.horizon_slope(bent, (1, 10)) == pytest.approx(-1.0, abs=1e-14)
    both = th.horizon_slope(torch.stack([line, bent]))
    assert both.shape == (2,) and both.tolist() == pytest.approx([-0.25, -0.1])
    with pytest.raises(ValueError, match="window must satisfy"):
        th.horizon_slope(line, (5, 30))
    with pytest.raises(TypeError, match="curve must be"):
        th.horizon_slope([1.0, 2.0])


# ---------------------------------------------------------------------------
# Slope against log ρ across ranks and sparsities (A.5.1), as measured.
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def grid():
    return th.horizon_vs_radius(seeds=(0,))


def test_horizon_vs_radius_rows(grid):
    assert len(grid) == 4 * 7
    for r in grid:
        assert math.isfinite(r.slope) and r.slope < 0 and len(r.rho) == {"rnn": 1, "lstm": 4}.get(r.kind, 3)
        assert r.log_rho == pytest.approx(math.log(sum(r.rho) / len(r.rho)))
        assert (r.log_carry is None) == (r.kind == "cfc")
    assert {(r.rank, r.sparsity) for r in grid} == {("full", 0.0), ("full", 0.5), ("full", 0.8), (27, 0.0),
                                                    (16, 0.0), (5, 0.0), (1, 0.0)}


def test_rnn_and_cfc_follow_log_rho_gated_cells_do_not(grid):
    sens = th.horizon_sensitivity(grid)
    assert 0.85 < sens["rnn"]["coefficient"] < 1.1 and sens["rnn"]["correlation"] > 0.99
    assert 0.85 < sens["cfc"]["coefficient"] < 1.25 and sens["cfc"]["correlation"] > 0.98
    assert sens["lstm"]["coefficient"] < 0.25 and sens["gru"]["coefficient"] < 0.25
    for r in grid:
        if r.kind in ("lstm", "gru"):
            # the carry D(f) (LSTM's c) or D(z) (GRU) bounds the decay: slope >= <log f>, <log z>
            assert r.slope > r.log_carry, r
            assert r.slope == pytest.approx(r.log_rho_mean_jacobian, abs=0.05), r


def test_rnn_slope_mean_square_beats_mean_log(grid):
    """RNN: log ρ + ½ log⟨tanh'²⟩ predicts the slope better than A.5.1's (Pascanu's) log ρ + ⟨log tanh'⟩."""
    for r in grid:
        if r.kind == "rnn" and r.rank == "full":
            rms = r.log_rho + r.log_carry_rms
            assert abs(r.slope - rms) < 0.1 < abs(r.slope - r.reference), r
