"""The low-rank and sparse cells (rnnlab.models.cells): init, parameterisation, counts, API, errors, ncps."""
import pytest
import torch

from rnnlab.kernels.cells_torch import GATES
from rnnlab.models import (CELLS, CfC, GRU, LSTM, RNN, init_recurrent, parameter_count, recurrent_matrix,
                           table10_parameter_counts, unmasked_parameter_count)
from rnnlab.models.cells import glorot_uniform, haar_orthogonal

KINDS = tuple(CELLS)


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


# -- init_recurrent ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("n, m", [(6, 6), (7, 3), (3, 7)])
def test_haar_orthogonal_is_orthonormal(n, m):
    Q = haar_orthogonal(n, m, generator=_gen())
    assert Q.shape == (n, m)
    small = min(n, m)
    gram = Q.T @ Q if n >= m else Q @ Q.T
    torch.testing.assert_close(gram, torch.eye(small, dtype=Q.dtype))


def test_haar_orthogonal_is_sign_balanced():
    # Without the sign fix, QR's first column has a positive first entry: half of them must be negative.
    firsts = torch.stack([haar_orthogonal(4, generator=_gen(s))[0, 0] for s in range(200)])
    assert 60 < int((firsts < 0).sum()) < 140


def test_glorot_variance():
    W = glorot_uniform(400, 400, generator=_gen())
    assert abs(W.var().item() * 400 - 1.0) < 0.02
    assert W.abs().max() <= (6 / 800) ** 0.5


@pytest.mark.parametrize("init", ["orthogonal", "glorot"])
def test_full_rank_dense_is_the_draw(init):
    W1, W2, M = init_recurrent(16, init=init, generator=_gen(), dtype=torch.float64)
    assert W2 is None and bool((M == 1).all())
    if init == "orthogonal":
        torch.testing.assert_close(W1 @ W1.T, torch.eye(16, dtype=torch.float64))


def test_orthogonal_rank_split_keeps_unit_singular_values():
    n, r = 32, 5
    W1, W2, M = init_recurrent(n, r, generator=_gen(), dtype=torch.float64)
    assert W1.shape == (n, r) and W2.shape == (r, n)
    torch.testing.assert_close(W1.T @ W1, torch.eye(r, dtype=torch.float64))
    torch.testing.assert_close(W2 @ W2.T, torch.eye(r, dtype=torch.float64))
    s = torch.linalg.svdvals(recurrent_matrix(W1, W2, M))
    torch.testing.assert_close(s[:r], torch.ones(r, dtype=torch.float64))
    assert s[r:].abs().max() < 1e-12


def test_glorot_rank_split_is_the_truncated_svd():
    n, r = 20, 4
    g = _gen(3)
    W1, W2, _ = init_recurrent(n, r, init="glorot", generator=g, dtype=torch.float64)
    W0 = glorot_uniform(n, n, generator=_gen(3), dtype=torch.float64)
    U, S, Vh = torch.linalg.svd(W0)
    torch.testing.assert_close(W1 @ W2, (U[:, :r] * S[:r]) @ Vh[:r])
    # balanced split: both factors carry sqrt of the singular values
    torch.testing.assert_close(torch.linalg.svdvals(W1), S[:r].sqrt())
    torch.testing.assert_close(torch.linalg.svdvals(W2), S[:r].sqrt())


def test_mask_density_and_masked_entries_are_zero():
    n, s = 200, 0.3
    W1, W2, M = init_recurrent(n, None, s, generator=_gen(), dtype=torch.float64)
    assert abs((M == 0).double().mean().item() - s) < 0.01
    assert bool((W1[M == 0] == 0).all())
    W1, W2, M = init_recurrent(n, 7, s, generator=_gen(), dtype=torch.float64)
    assert bool((recurrent_matrix(W1, W2, M)[M == 0] == 0).all())


def test_gates_are_independent_draws_and_concatenated_blocks_share_one():
    n, G = 16, 4
    W1, W2, M = init_recurrent(n, gates=G, generator=_gen(), dtype=torch.float64)
    assert W1.shape == (G, n, n) and M.shape == (G, n, n)
    for g in range(G):
        torch.testing.assert_close(W1[g] @ W1[g].T, torch.eye(n, dtype=torch.float64))
    assert not torch.allclose(W1[0], W1[1])
    C, _, _ = init_recurrent(n, gates=G, init="concatenated", generator=_gen(), dtype=torch.float64)
    K = torch.cat([C[g].T for g in range(G)], 1)       # Keras's recurrent_kernel, inputs × outputs
    torch.testing.assert_close(K @ K.T, torch.eye(n, dtype=torch.float64))
    norms = torch.linalg.matrix_norm(C, ord=2)
    assert bool((norms <= 1 + 1e-12).all()) and float(norms.max()) < 0.95     # Lemma 1, strictly smaller here


def test_same_generator_state_same_draw():
    a = init_recurrent(8, 3, 0.5, generator=_gen(7))
    b = init_recurrent(8, 3, 0.5, generator=_gen(7))
    for x, y in zip(a, b):
        torch.testing.assert_close(x, y)


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(n=8, rank=0), ValueError, "rank must lie in \\[1, n\\]"),
    (dict(n=8, rank=9), ValueError, "rank must lie in \\[1, n\\]"),
    (dict(n=8, rank=2.0), TypeError, "rank must be an int"),
    (dict(n=8, sparsity=1.0), ValueError, "sparsity must lie in \\[0, 1\\)"),
    (dict(n=8, sparsity=-0.1), ValueError, "sparsity must lie in \\[0, 1\\)"),
    (dict(n=8, sparsity="0"), TypeError, "sparsity must be a number"),
    (dict(n=0), ValueError, "n \\(the hidden size\\)"),
    (dict(n=True), TypeError, "n \\(the hidden size\\) must be an int"),
    (dict(n=8, init="he"), ValueError, "init must be one of"),
    (dict(n=8, init="concatenated"), ValueError, "pass gates"),
    (dict(n=8, gates=0), ValueError, "gates must be >= 1"),
    (dict(n=8, gates=2.0), TypeError, "gates must be an int or None"),
])
def test_init_recurrent_errors(kwargs, exc, match):
    """A wrong type is a TypeError, a wrong value a ValueError (rnnlab._validate's convention)."""
    with pytest.raises(exc, match=match):
        init_recurrent(**kwargs)


# -- the cells --------------------------------------------------------------------------------------------

def test_table10_counts():
    rows = {r["cell"]: r for r in table10_parameter_counts()}
    for cell in ("CfC", "RNN", "GRU"):
        assert rows[cell]["ours"] == rows[cell]["by_hand"] == rows[cell]["table10"]
    assert rows["LSTM"]["ours"] == rows["LSTM"]["by_hand"] == 82176 != rows["LSTM"]["table10"] == 81726
    assert 81726 % 4 != 0


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("rank", [None, 1, 16])
def test_parameter_count_by_hand(kind, rank):
    model = CELLS[kind](10, 16, rank=rank, sparsity=0.5, backend="torch", seed=0)
    assert sum(p.numel() for p in model.parameters()) == parameter_count(kind, 10, 16, rank)
    live = unmasked_parameter_count(model)
    if rank is None:
        assert live == parameter_count(kind, 10, 16) - int((model.mask_hh == 0).sum())
    else:
        assert live == parameter_count(kind, 10, 16, rank)


def test_rank16_matches_sparsity_half_at_64():
    # A.11.3: at hidden 64, rank 16 has as many recurrent parameters as sparsity 0.5 (2·64·16 = 64·64/2).
    assert 2 * 64 * 16 == 64 * 64 // 2


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("rank, sparsity", [(None, 0.0), (None, 0.5), (3, 0.0), (3, 0.4)])
def test_forward_equals_steps_and_reference(kind, rank, sparsity):
    torch.manual_seed(0)
    model = CELLS[kind](5, 6, rank=rank, sparsity=sparsity, backend="torch", seed=1).double()
    x = torch.randn(2, 7, 5, dtype=torch.float64)
    out, state = model(x)
    assert out.shape == (2, 7, 6)
    s = None
    for t in range(7):
        h, s = model.step(x[:, t], s)
        torch.testing.assert_close(h, out[:, t])
    if kind == "lstm":
        torch.testing.assert_close(state[0], s[0])
        torch.testing.assert_close(state[1], s[1])
    else:
        torch.testing.assert_close(state, s)


@pytest.mark.parametrize("kind", KINDS)
def test_default_backend_is_the_cpu_kernel_and_matches_the_reference(kind):
    torch.manual_seed(0)
    fast = CELLS[kind](4, 6, rank=3, sparsity=0.3, seed=5).double()
    assert fast.backend == "auto"
    ref = CELLS[kind](4, 6, rank=3, sparsity=0.3, seed=5, backend="torch").double()
    x = torch.randn(3, 9, 4, dtype=torch.float64)
    out_fast, _ = fast(x)
    out_ref, _ = ref(x)
    torch.testing.assert_close(out_fast, out_ref)
    out_fast.square().sum().backward()
    out_ref.square().sum().backward()
    for (name, a), b in zip(fast.named_parameters(), ref.parameters()):
        torch.testing.assert_close(a.grad, b.grad, msg=name)


@pytest.mark.parametrize("kind", KINDS)
def test_state_continues_a_sequence(kind):
    model = CELLS[kind](3, 4, rank=2, sparsity=0.2, backend="torch", seed=0).double()
    x = torch.randn(2, 6, 3, dtype=torch.float64)
    out, _ = model(x)
    a, s = model(x[:, :4])
    b, _ = model(x[:, 4:], s)
    torch.testing.assert_close(torch.cat([a, b], 1), out)


@pytest.mark.parametrize("kind", KINDS)
def test_batch_first_false_and_unbatched(kind):
    model = CELLS[kind](3, 4, backend="torch", seed=0).double()
    x = torch.randn(2, 5, 3, dtype=torch.float64)
    out, _ = model(x)
    model.batch_first = False
    out_tb, _ = model(x.transpose(0, 1))
    torch.testing.assert_close(out_tb, out.transpose(0, 1))
    model.batch_first = True
    single, state = model(x[0])
    torch.testing.assert_close(single, out[0])
    h = state[0] if kind == "lstm" else state
    assert h.shape == (4,)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("rank", [None, 2])
@pytest.mark.parametrize("backend", ["torch", "cpu"])
def test_masked_entries_stay_zero_in_training(kind, rank, backend):
    torch.manual_seed(0)
    model = CELLS[kind](3, 8, rank=rank, sparsity=0.5, backend=backend, seed=2).double()
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    x = torch.randn(4, 5, 3, dtype=torch.float64)
    for _ in range(3):
        opt.zero_grad()
        out, _ = model(x)
        out.pow(2).sum().backward()
        if rank is None:
            assert bool((model.weight_hh.grad[model.mask_hh == 0] == 0).all())
        else:
            assert model.weight_hh_1.grad.abs().sum() > 0 and model.weight_hh_2.grad.abs().sum() > 0
        assert model.weight_ih.grad.abs().sum() > 0
        opt.step()
    W = model.recurrent_weights()
    assert bool((W[model.mask_hh == 0] == 0).all())
    assert bool((W[model.mask_hh == 1] != 0).all())


def test_lstm_forget_bias_is_one_and_others_zero():
    model = LSTM(3, 4, backend="torch")
    b = model.bias.view(4, 4)
    assert bool((b[1] == 1).all()) and bool((b[[0, 2, 3]] == 0).all())


def test_cfc_equals_ncps_cfccell():
    ncps = pytest.importorskip("ncps.torch")
    torch.manual_seed(0)
    I, H = 5, 6
    ours = CfC(I, H, rank=2, sparsity=0.3, backend="torch", seed=0).double()
    with torch.no_grad():
        ours.bias.normal_()
    theirs = ncps.CfCCell(I, H, mode="default", backbone_layers=0).double()
    W = ours.recurrent_weights().detach()
    Wi, b = ours.weight_ih.detach().view(3, H, I), ours.bias.detach().view(3, H)
    with torch.no_grad():
        # F (our gate 0) ↔ time_a at ts = 1 (time_b zero), G (gate 1) ↔ ff2, H (gate 2) ↔ ff1.
        for layer, g in ((theirs.time_a, 0), (theirs.ff2, 1), (theirs.ff1, 2)):
            layer.weight.copy_(torch.cat([Wi[g], W[g]], 1))
            layer.bias.copy_(b[g])
        theirs.time_b.weight.zero_()
        theirs.time_b.bias.zero_()
    x = torch.randn(3, 4, I, dtype=torch.float64)
    out, _ = ours(x)
    h = torch.zeros(3, H, dtype=torch.float64)
    for t in range(4):
        h, _ = theirs(x[:, t], h, 1.0)
        torch.testing.assert_close(h, out[:, t].detach())


@pytest.mark.parametrize("kind", KINDS)
def test_gates_and_shapes(kind):
    model = CELLS[kind](3, 4, rank=2, backend="torch")
    assert model.recurrent_weights().shape == (GATES[kind], 4, 4)
    assert len(model.gate_names) == GATES[kind]
    assert model.weight_hh_1.shape == (GATES[kind], 4, 2) and model.weight_hh is None
    assert "rank=2" in repr(model)


@pytest.mark.parametrize("args, kwargs, exc, match", [
    ((0, 4), {}, ValueError, "input_size must be >= 1"),
    ((3, 4.0), {}, TypeError, "hidden_size must be an int"),
    ((3, 4), dict(rank=5), ValueError, "rank must lie in \\[1, n\\]"),
    ((3, 4), dict(rank=0), ValueError, "rank must lie in \\[1, n\\]"),
    ((3, 4), dict(sparsity=1.0), ValueError, "sparsity must lie in \\[0, 1\\)"),
    ((3, 4), dict(init="zeros"), ValueError, "init must be one of"),
    ((3, 4), dict(batch_first=1), TypeError, "batch_first must be a bool"),
    ((3, 4), dict(seed=0, generator=torch.Generator()), ValueError, "generator or seed"),
    ((3, 4), dict(generator=0), TypeError, "generator must be a torch.Generator"),
    ((3, 4), dict(dtype=torch.int64), ValueError, "real floating dtype"),
])
def test_constructor_errors(args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        RNN(*args, **kwargs)


def test_forward_errors():
    rnn, lstm = RNN(3, 4, backend="torch"), LSTM(3, 4, backend="torch")
    with pytest.raises(ValueError, match="x must have shape \\(B, T, input_size\\).*input_size=3"):
        rnn(torch.randn(2, 5, 4))
    with pytest.raises(ValueError, match="x must have shape"):
        rnn(torch.randn(5))
    with pytest.raises(TypeError, match="x has dtype torch.float64"):
        rnn(torch.randn(2, 5, 3, dtype=torch.float64))
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        rnn([[0.0, 1.0, 2.0]])
    with pytest.raises(ValueError, match="state h must have shape \\(B, H\\) = \\(2, 4\\)"):
        rnn(torch.randn(2, 5, 3), torch.zeros(3, 4))
    with pytest.raises(TypeError, match="state must be a tuple \\(h, c\\)"):
        lstm(torch.randn(2, 5, 3), torch.zeros(2, 4))
    with pytest.raises(ValueError, match="at least one time step"):
        rnn(torch.randn(2, 0, 3))
    with pytest.raises(ValueError, match="x_t must have shape \\(B, input_size\\)"):
        rnn.step(torch.randn(2, 5, 3))
    gru = GRU(3, 4, backend="torch")
    with pytest.raises(TypeError, match="state must be a \\(B, H\\) tensor h"):
        gru(torch.randn(2, 5, 3), (torch.zeros(2, 4), torch.zeros(2, 4)))
