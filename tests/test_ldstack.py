"""LDStack: depth k reproduces the nonlinear RNN exactly for the first k steps."""
import pytest
import torch

from rnnlab.models import LDS, LDStack, LDStackExact, count_parameters
from rnnlab.models.ldstack import deviation, modal_rnn_reference, rnn_reference, squash, squash_factor


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _exact_model(depth, nonlinearity, n=5, d=2):
    m = LDStackExact(d, n, depth=depth, nonlinearity=nonlinearity, generator=_gen(depth)).double()
    with torch.no_grad():
        m.A.mul_(2.0)  # make the nonlinearity bite (pre-activations of order 1)
    return m


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu", "elu", torch.sin])
@pytest.mark.parametrize("depth", [1, 2, 3, 5])
def test_exact_form_is_exact_for_the_first_k_steps(nonlinearity, depth):
    m = _exact_model(depth, nonlinearity)
    x = torch.randn(3, 12, 2, dtype=torch.float64, generator=_gen(7))
    rnn = rnn_reference(x, m.A, m.B, nonlinearity)
    layers = m.layer_states(x)
    assert len(layers) == depth
    for i, s in enumerate(layers, start=1):  # layer i is exact for steps 1..i
        torch.testing.assert_close(s[:, :i], rnn[:, :i], rtol=1e-12, atol=1e-12)
    y, sT = m(x)
    torch.testing.assert_close(y, layers[-1])
    torch.testing.assert_close(sT, layers[-1][:, -1])


def test_exact_form_is_not_trivially_exact_and_converges_with_depth():
    x = torch.randn(2, 10, 2, dtype=torch.float64, generator=_gen(1))
    m = _exact_model(10, "tanh")
    rnn = rnn_reference(x, m.A, m.B, "tanh")
    layers = m.layer_states(x)
    # step 2 of layer 1 (a plain LDS) is already wrong; depth T is right everywhere
    assert (layers[0][:, 1] - rnn[:, 1]).abs().max() > 1e-3
    torch.testing.assert_close(layers[-1], rnn, rtol=1e-12, atol=1e-12)
    errors = [(s - rnn).abs().max().item() for s in layers]
    assert errors[-1] < 1e-12 < errors[0]


def test_exact_form_with_initial_state_is_exact_for_k_minus_1_steps():
    m = _exact_model(3, "tanh")
    x = torch.randn(2, 8, 2, dtype=torch.float64, generator=_gen(2))
    h0 = torch.randn(2, 5, dtype=torch.float64, generator=_gen(3))
    rnn = rnn_reference(x, m.A, m.B, "tanh", h0)
    s = m.layer_states(x, h0)[-1]
    torch.testing.assert_close(s[:, :2], rnn[:, :2], rtol=1e-12, atol=1e-12)


def test_exact_form_readout_and_gradients():
    m = LDStackExact(2, 4, 3, depth=3, generator=_gen(0))
    y, _ = m(torch.randn(2, 6, 2))
    assert y.shape == (2, 6, 3)
    y.square().mean().backward()
    assert all(torch.isfinite(p.grad).all() for p in m.parameters())


@pytest.mark.parametrize("depth", [1, 2, 4])
def test_modal_form_is_exact_for_the_first_k_steps_of_the_modal_rnn(depth):
    m = LDStack(2, 8, 3, depth=depth, eigenvalues="free", init="uniform", generator=_gen(depth)).double()
    x = 2 * torch.randn(3, 9, 2, dtype=torch.float64, generator=_gen(5))
    ref = modal_rnn_reference(m.eigenvalues().detach(), m._drive(x).detach())
    layers = m.layer_states(x)
    for i, s in enumerate(layers, start=1):
        torch.testing.assert_close(s[:, :i].detach(), ref[:, :i], rtol=1e-12, atol=1e-12)
    if depth > 1:
        assert (layers[0][:, 1] - ref[:, 1]).abs().max() > 1e-3


def test_modal_form_depth_one_is_the_lds_and_shares_its_parameters():
    kw = dict(eigenvalues="unit", mix_inputs=True, readout="log", use_D=False, bias=False)
    # float64: with companion B' (entries up to ~5e3 here) float32 outputs carry errors ~1e-4 relative,
    # which differ between two equally valid orders of summation
    lds = LDS(10, 160, 10, **kw, generator=_gen(0)).double()
    stack = LDStack(10, 160, 10, depth=1, **kw, generator=_gen(0)).double()
    x = torch.randn(2, 7, 10, dtype=torch.float64)
    torch.testing.assert_close(stack(x)[0], lds(x)[0])
    assert count_parameters(LDStack(10, 160, 10, depth=4, **kw)) == count_parameters(lds) == 3380


def test_modal_form_gradients_are_finite():
    m = LDStack(3, 12, 2, depth=3, generator=_gen(0))
    y, sT = m(torch.randn(2, 20, 3))
    assert y.shape == (2, 20, 2) and sT.shape == (2, 12)
    (y.square().mean() + sT.abs().mean()).backward()
    assert all(torch.isfinite(p.grad).all() for p in m.parameters())


def test_deviation_is_safe_at_zero():
    for name in ["tanh", "relu", "elu", "identity", torch.sin]:
        rho, delta = deviation(name)
        a = torch.tensor([-1.5, -1e-9, 0.0, 1e-9, 0.7], dtype=torch.float64, requires_grad=True)
        d = delta(a)
        assert torch.isfinite(d).all()
        if d.requires_grad:  # relu's and identity's δ are piecewise constant
            d.sum().backward()
            assert torch.isfinite(a.grad).all()
        torch.testing.assert_close(d * a, rho(a), rtol=1e-12, atol=1e-15)
    _, delta = deviation("tanh")
    assert delta(torch.zeros(1, dtype=torch.float64)).item() == 1.0


def test_squash_preserves_phase():
    z = torch.randn(50, dtype=torch.complex128) * 3
    s = squash(z)
    assert (s.abs() < 1).all()
    torch.testing.assert_close(torch.angle(s), torch.angle(z))
    assert squash_factor(torch.zeros(1, dtype=torch.complex128)).item() == 1.0


@pytest.mark.parametrize("cls,args", [(LDStack, (2, 4, 1)), (LDStackExact, (2, 4))])
def test_bad_depth(cls, args):
    with pytest.raises(ValueError, match="depth"):
        cls(*args, depth=0)
    with pytest.raises(TypeError, match="depth"):
        cls(*args, depth=2.0)


def test_bad_nonlinearity_and_sizes():
    with pytest.raises(ValueError, match="nonlinearity"):
        LDStackExact(2, 4, nonlinearity="softsign")
    with pytest.raises(ValueError, match="hidden_size"):
        LDStackExact(2, 0)
    with pytest.raises(ValueError, match="input_size=2"):
        LDStackExact(2, 4)(torch.randn(1, 3, 5))


@pytest.mark.parametrize("backend", ["cpu", "torch"])
@pytest.mark.parametrize("with_h0", [False, True])
def test_fused_stack_equals_composition_of_linear_scans(backend, with_h0):
    """layer_states (all layers in one pass, modal_stack_scan) and layer_states_by_scans
    (k linear scans with a_t = α_t λ) agree, as do the gradients through the model."""
    m = LDStack(2, 8, 3, depth=3, eigenvalues="free", init="uniform", backend=backend, generator=_gen(3)).double()
    x = 2 * torch.randn(3, 10, 2, dtype=torch.float64, generator=_gen(4))
    h0 = torch.randn(3, 8, dtype=torch.complex128, generator=_gen(5)) if with_h0 else None
    fused, scans = m.layer_states(x, h0), m.layer_states_by_scans(x, h0)
    assert len(fused) == len(scans) == 3
    for s, r in zip(fused, scans):
        torch.testing.assert_close(s, r, rtol=1e-12, atol=1e-12)
    params = [p for p in m.parameters() if p.requires_grad]
    y, sT = m(x, h0)
    torch.testing.assert_close(y, m.readout(scans[-1], x))
    torch.testing.assert_close(sT, scans[-1][:, -1])
    w = torch.randn(y.shape, dtype=y.dtype, generator=_gen(6))
    g_fused = torch.autograd.grad((y * w).sum() + sT.abs().sum(), params)
    g_scans = torch.autograd.grad((m.readout(scans[-1], x) * w).sum() + scans[-1][:, -1].abs().sum(), params)
    for a, b in zip(g_fused, g_scans):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_the_stack_has_no_fft_algorithm():
    with pytest.raises(ValueError, match="algorithm"):
        LDStack(2, 8, 1, depth=2, algorithm="fft")
