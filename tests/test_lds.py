"""The modal LDS: companion form, stable B', the layer against a direct simulation, parameter counts."""
import math

import pytest
import torch

from rnnlab.models import LDS, LDStack, count_parameters, parameter_breakdown
from rnnlab.models.modal import (companion_matrix, log_polar_eigenvalues, modal_input_weights,
                                 modal_input_weights_naive, modal_output_weights, monic_coefficients,
                                 random_root_eigenvalues, uniform_angles, unit_modulus_eigenvalues,
                                 vandermonde_modes, with_conjugates)

C128 = torch.complex128


def _gen(seed):
    return torch.Generator().manual_seed(seed)


# --- companion form and B' --------------------------------------------------

@pytest.mark.parametrize("n", [2, 5, 8, 12])
def test_stable_input_weights_match_diagonalising_the_companion_matrix(n):
    """B' = V⁻¹ e_1 from numerical eigenvectors of A equals the stable formula (float64)."""
    c = torch.randn(n, generator=_gen(n), dtype=torch.float64) / n
    A = companion_matrix(c)
    lam, vecs = torch.linalg.eig(A)
    V = vecs / vecs[0]  # scale each eigenvector to first entry 1, as vandermonde_modes does
    e1 = torch.zeros(n, dtype=C128)
    e1[0] = 1
    direct = torch.linalg.solve(V, e1)
    torch.testing.assert_close(modal_input_weights(lam), direct, rtol=1e-8, atol=1e-10)
    torch.testing.assert_close(modal_input_weights_naive(lam), direct, rtol=1e-8, atol=1e-10)
    # and the eigenvectors are the Vandermonde columns λ^{-k}
    torch.testing.assert_close(vandermonde_modes(lam), V, rtol=1e-8, atol=1e-10)


def test_companion_matrix_roots_and_coefficients():
    lam = random_root_eigenvalues(7, generator=_gen(1))[0]
    c = monic_coefficients(lam)
    assert c.imag.abs().max() < 1e-12  # a real polynomial: the roots are closed under conjugation
    A = companion_matrix(c.real)
    assert A.shape == (7, 7) and torch.all(A[1:, :-1] == torch.eye(6, dtype=A.dtype))
    got = torch.sort(torch.linalg.eigvals(A).to(C128).abs()).values
    torch.testing.assert_close(got, torch.sort(lam.abs()).values, rtol=1e-9, atol=1e-9)
    V = vandermonde_modes(lam)
    torch.testing.assert_close(A.to(C128) @ V, V @ torch.diag(lam), rtol=1e-9, atol=1e-9)


def test_stable_formula_survives_where_the_naive_one_fails():
    """Roots of z^n − r^n (λ_j = r ω^j): B'_i = ∏_{k=1}^{n-1} 1/(1 − ω^k) = 1/n exactly.

    In single precision with n = 160 and r = 0.5, λ^{n-1} and the product both
    underflow: the naive formula gives 0/0, the stable one 1/n.
    """
    n, r = 160, 0.5
    lam = r * torch.exp(2j * math.pi * torch.arange(n, dtype=torch.float64) / n)
    stable = modal_input_weights(lam.to(torch.complex64))
    naive = modal_input_weights_naive(lam.to(torch.complex64))
    torch.testing.assert_close(stable, torch.full((n,), 1 / n, dtype=torch.complex64), rtol=1e-4, atol=1e-6)
    assert not torch.isfinite(naive).all()
    # in double precision both still work here
    torch.testing.assert_close(modal_input_weights_naive(lam), torch.full((n,), 1 / n, dtype=C128))


def test_stable_formula_gradient_is_finite():
    theta = uniform_angles((6,), _gen(0), dtype=torch.float64).requires_grad_()
    Bp = modal_input_weights(with_conjugates(unit_modulus_eigenvalues(theta)))
    Bp.abs().sum().backward()
    assert torch.isfinite(theta.grad).all()


def test_eigenvalue_parameterisations():
    theta = torch.tensor([0.3, -2.0, 7.0], dtype=torch.float64)
    torch.testing.assert_close(unit_modulus_eigenvalues(theta).abs(), torch.ones(3, dtype=torch.float64))
    lam = log_polar_eigenvalues(torch.log(torch.tensor([0.5, 0.9, 1.0], dtype=torch.float64)), theta)
    torch.testing.assert_close(lam, torch.tensor([0.5, 0.9, 1.0], dtype=torch.float64) * torch.exp(1j * theta))
    both = with_conjugates(lam)
    torch.testing.assert_close(both[3:], lam.conj())
    a = uniform_angles((10000,), _gen(0))
    assert a.min() >= -2 * math.pi and a.max() <= 2 * math.pi and a.min() < -6 and a.max() > 6


def test_random_roots_are_in_the_unit_disc():
    lam = random_root_eigenvalues(16, 3, generator=_gen(0))
    assert lam.shape == (3, 16) and (lam.abs() <= 1 + 1e-12).all()
    up = random_root_eigenvalues(8, 2, generator=_gen(0), upper_half=True)
    assert up.shape == (2, 8) and (up.imag > 0).all()


# --- the layer against the companion-form LDS simulated directly -------------

def _simulate_companion(x_u, A, C, s0):
    """s_t = A s_{t-1} + e_1 u_t, y_t = C s_t, for one block; x_u: (B, T)."""
    s, ys = s0, []
    for t in range(x_u.shape[1]):
        s = s @ A.t()
        s = s.clone()
        s[:, 0] += x_u[:, t]
        ys.append(s @ C.t())
    return torch.stack(ys, 1)


@pytest.mark.parametrize("kwargs", [
    dict(eigenvalues="free", init="roots", conjugate_pairs=True),
    dict(eigenvalues="unit", init="uniform", conjugate_pairs=True, mix_inputs=True),
    dict(eigenvalues="free", init="uniform", conjugate_pairs=True, multi_input="average", num_projections=3),
])
@pytest.mark.parametrize("algorithm", ["scan", "fft"])
def test_modal_lds_equals_companion_form_simulation(kwargs, algorithm):
    torch.manual_seed(0)
    d, m = 2, 3
    k = kwargs.get("num_projections", d)
    nb = 6
    model = LDS(d, k * nb, m, readout="complex", use_D=True, bias=True, algorithm=algorithm,
                generator=_gen(5), **kwargs).double()
    lam = model.block_eigenvalues().detach()  # (k, nb)
    # a real companion read-out C_j per block, and C' = C V
    Cs = [torch.randn(m, nb, dtype=torch.float64) for _ in range(k)]
    Cp = torch.cat([modal_output_weights(Cs[j], lam[j]).t() for j in range(k)], 0)  # (N, m)
    scale = k if kwargs.get("multi_input") == "average" else 1  # the layer divides by k when averaging
    with torch.no_grad():
        model.C_re.copy_(Cp.real * scale)
        model.C_im.copy_(Cp.imag * scale)
    B_, T = 3, 25
    x = torch.randn(B_, T, d, dtype=torch.float64)
    s0 = [torch.randn(B_, nb, dtype=torch.float64) for _ in range(k)]
    # the modal initial state s'_0 = V⁻¹ s_0, block by block
    h0 = torch.cat([torch.linalg.solve(vandermonde_modes(lam[j]), s0[j].to(C128).t()).t() for j in range(k)], 1)
    y, sT = model(x, h0)
    u = model.project_inputs(x).detach()
    expect = sum(_simulate_companion(u[..., j], companion_matrix(monic_coefficients(lam[j]).real), Cs[j], s0[j])
                 for j in range(k))
    expect = expect + x @ model.D.detach().t() + model.bias.detach()
    torch.testing.assert_close(y, expect, rtol=1e-8, atol=1e-8)
    assert sT.shape == (B_, k * nb) and sT.dtype == C128


def test_fft_and_scan_agree_with_gradients():
    torch.manual_seed(1)
    kw = dict(eigenvalues="free", init="roots", mix_inputs=True, readout="log", generator=_gen(2))
    a = LDS(3, 12, 4, algorithm="scan", **kw).double()
    b = LDS(3, 12, 4, algorithm="fft", **kw).double()
    b.load_state_dict(a.state_dict())
    x = torch.randn(2, 40, 3, dtype=torch.float64)
    h0 = torch.randn(2, 12, dtype=C128)
    ya, sa = a(x, h0)
    yb, sb = b(x, h0)
    torch.testing.assert_close(ya, yb, rtol=1e-9, atol=1e-10)
    torch.testing.assert_close(sa, sb, rtol=1e-9, atol=1e-10)
    (ya.square().sum() + sa.abs().sum()).backward()
    (yb.square().sum() + sb.abs().sum()).backward()
    for (name, pa), pb in zip(a.named_parameters(), b.parameters()):
        torch.testing.assert_close(pa.grad, pb.grad, rtol=1e-7, atol=1e-9, msg=name)


@pytest.mark.parametrize("kwargs", [
    dict(eigenvalues="free", init="roots"),
    dict(eigenvalues="unit", init="uniform", mix_inputs=True, readout="log", use_D=False, bias=False),
    dict(eigenvalues="free", init="uniform", multi_input="average", num_projections=4),
    dict(eigenvalues="unit", input_weights="ones"),
])
@pytest.mark.parametrize("h0_kind", [None, "symmetric", "asymmetric"])
@pytest.mark.parametrize("depth", [None, 3])
def test_one_mode_per_conjugate_pair_equals_all_modes(kwargs, h0_kind, depth):
    """forward() scans one mode of each conjugate pair: same outputs, final state and gradients as all N
    (the LDS, and the LDStack, whose correction is the same for a mode and its conjugate)."""
    if depth is None:
        model = LDS(3, 24, 4, generator=_gen(3), **kwargs).double()
    else:
        model = LDStack(3, 24, 4, depth=depth, generator=_gen(3), **kwargs).double()
    x = torch.randn(2, 30, 3, dtype=torch.float64, generator=_gen(4))
    h0 = None
    if h0_kind == "symmetric":
        h0 = model._all_modes(torch.randn(2, 12, dtype=C128, generator=_gen(5)))
    elif h0_kind == "asymmetric":
        h0 = torch.randn(2, 24, dtype=C128, generator=_gen(5))
    assert model._use_pairs(h0) == (h0_kind != "asymmetric")
    results = []
    for pair_modes in (True, False):
        model.pair_modes = pair_modes
        model.zero_grad()
        y, sT = model(x, h0)
        (y.sin().sum() + sT.abs().sum()).backward()
        results.append((y, sT, {n: p.grad.clone() for n, p in model.named_parameters()}))
    (y1, s1, g1), (y2, s2, g2) = results
    torch.testing.assert_close(y1, y2, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(s1, s2, rtol=1e-10, atol=1e-10)
    for name in g1:
        torch.testing.assert_close(g1[name], g2[name], rtol=1e-8, atol=1e-10, msg=name)
    # the final state of a pair-mode run is conjugate-symmetric, so continuing from it pairs again
    model.pair_modes = True
    assert model._use_pairs(s1.detach()) == (h0_kind != "asymmetric")


def test_gradcheck_through_the_layer():
    model = LDS(2, 4, 2, eigenvalues="free", init="roots", generator=_gen(0)).double()
    x = torch.randn(1, 6, 2, dtype=torch.float64, requires_grad=True)
    params = dict(model.named_parameters())
    names = ["theta", "log_r", "C_re"]

    def f(x, *ps):
        out, _ = torch.func.functional_call(model, {**params, **dict(zip(names, ps))}, (x,))
        return out
    assert torch.autograd.gradcheck(f, (x, *[params[n].detach().clone().requires_grad_() for n in names]))


def test_batch_first_false_and_state_continuation():
    m = LDS(2, 8, 3, generator=_gen(0)).double()
    x = torch.randn(4, 10, 2, dtype=torch.float64)
    y, s = m(x)
    m.batch_first = False
    y2, s2 = m(x.transpose(0, 1))
    torch.testing.assert_close(y2.transpose(0, 1), y)
    m.batch_first = True
    # running in two halves, passing the state on, gives the same outputs
    y_a, s_a = m(x[:, :4])
    y_b, s_b = m(x[:, 4:], s_a)
    torch.testing.assert_close(torch.cat([y_a, y_b], 1), y)
    torch.testing.assert_close(s_b, s)


def test_unit_modulus_stays_unit_after_training_steps():
    m = LDS(2, 8, 2, eigenvalues="unit", generator=_gen(0))
    opt = torch.optim.Adam(m.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        y, _ = m(torch.randn(3, 12, 2))
        y.square().mean().backward()
        opt.step()
    torch.testing.assert_close(m.eigenvalues().abs(), torch.ones(8))


# --- parameter counts ---------------------------------------------------------

def test_paper_copy_memory_lds_has_3380_parameters():
    """The response's n = 160 LDS: 80 θ + 3200 (complex C', log form) + 100 (E) = 3380."""
    m = LDS(10, 160, 10, eigenvalues="unit", init="uniform", conjugate_pairs=True, multi_input="concat",
            mix_inputs=True, readout="log", use_D=False, bias=False)
    assert parameter_breakdown(m) == {"theta": 80, "mix": 100, "logC_re": 1600, "logC_im": 1600}
    assert count_parameters(m) == 3380
    from rnnlab.experiments.copy_memory import CopyMemoryModel, paper_lds
    assert count_parameters(paper_lds()) == 3380
    assert count_parameters(CopyMemoryModel("lds")) == 3380


def test_independent_parameters_of_the_paper_form():
    """Jacobian rank = count − half of C' (conjugate pairs) − one scale per block (row of E against its C').

    The copying-memory model's form at a small size (3 inputs, 12 modes, 2 outputs): 6 θ + 9 E + 48 C'
    = 63 parameters, of which 24 (C' of the conjugate pairs) + 3 (block scalings) are redundant.
    The book checks 3380 − 1600 − 10 = 1770 on the full model.
    """
    from torch.func import functional_call, jacrev
    model = LDS(3, 12, 2, eigenvalues="unit", init="uniform", conjugate_pairs=True, multi_input="concat",
                mix_inputs=True, readout="log", use_D=False, bias=False, algorithm="fft",
                generator=_gen(0)).double()
    x = torch.randn(4, 20, 3, generator=_gen(1), dtype=torch.float64)
    with torch.no_grad():  # scaling row j of E by c and block j's C' by 1/c changes nothing
        y0, _ = model(x)
        c = torch.tensor([0.5, 2.0, 3.0], dtype=torch.float64)
        model.mix.mul_(c[:, None])
        model.logC_re.sub_(c.log().repeat_interleave(4)[:, None])
        y1, _ = model(x)
    torch.testing.assert_close(y0, y1)
    names = [n for n, _ in model.named_parameters()]
    shapes = [p.shape for _, p in model.named_parameters()]
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])

    def outputs(v):
        params = {n: t.view(s) for n, t, s in zip(names, torch.split(v, [s.numel() for s in shapes]), shapes)}
        return functional_call(model, params, (x,))[0].reshape(-1)

    J = jacrev(outputs)(flat)
    assert J.shape == (4 * 20 * 2, 63)
    s = torch.linalg.svdvals(J / J.norm(dim=0))
    s = s / s[0]
    assert int((s > 1e-12).sum()) == 63 - 24 - 3
    assert s[35] > 1e4 * s[36]


@pytest.mark.parametrize("d,N,m,kw,expect", [
    (1, 8, 1, dict(eigenvalues="unit"), 4 + 2 * 8 + 1 + 1),
    (1, 8, 1, dict(eigenvalues="unit", conjugate_pairs=False), 8 + 2 * 8 + 1 + 1),
    (2, 8, 3, dict(eigenvalues="free"), 2 * 4 + 2 * 8 * 3 + 3 * 2 + 3),
    (2, 12, 3, dict(eigenvalues="free", multi_input="average", num_projections=3, use_D=False, bias=False),
     2 * 6 + 2 * 12 * 3),
])
def test_parameter_counts(d, N, m, kw, expect):
    assert count_parameters(LDS(d, N, m, **kw)) == expect


def test_complex_parameters_count_twice():
    mod = torch.nn.Module()
    mod.p = torch.nn.Parameter(torch.zeros(3, dtype=torch.complex64))
    assert count_parameters(mod) == 6


# --- bad arguments ------------------------------------------------------------

@pytest.mark.parametrize("args,kwargs,exc,word", [
    ((2, 0, 1), {}, ValueError, "hidden_size"),
    ((0, 4, 1), {}, ValueError, "input_size"),
    ((2, 4, 0), {}, ValueError, "output_size"),
    ((2, 4.0, 1), {}, TypeError, "hidden_size"),
    ((2, 4, 1), dict(eigenvalues="polar"), ValueError, "eigenvalues"),
    ((2, 4, 1), dict(init="zeros"), ValueError, "init"),
    ((2, 4, 1), dict(readout="sparse"), ValueError, "readout"),
    ((2, 4, 1), dict(multi_input="sum"), ValueError, "multi_input"),
    ((2, 4, 1), dict(input_weights="random"), ValueError, "input_weights"),
    ((2, 4, 1), dict(algorithm="ode"), ValueError, "algorithm"),
    ((3, 4, 1), {}, ValueError, "multiple"),
    ((2, 6, 1), {}, ValueError, "conjugate_pairs"),
    ((2, 8, 1), dict(multi_input="average", mix_inputs=True), ValueError, "mix_inputs"),
])
def test_bad_arguments(args, kwargs, exc, word):
    with pytest.raises(exc, match=word):
        LDS(*args, **kwargs)


def test_bad_inputs():
    m = LDS(2, 4, 1)
    with pytest.raises(ValueError, match="input_size=2"):
        m(torch.randn(3, 5, 3))
    with pytest.raises(ValueError, match="shape"):
        m(torch.randn(5, 2))
    with pytest.raises(TypeError, match="real floating"):
        m(torch.ones(3, 5, 2, dtype=torch.int64))
    with pytest.raises(ValueError, match="h0"):
        m(torch.randn(3, 5, 2), torch.zeros(3, 5, dtype=torch.complex64))


@pytest.mark.parametrize("model", [lambda: LDS(2, 4, 1), lambda: LDS(2, 4, 1, algorithm="fft"),
                                   lambda: LDStack(2, 4, 1, depth=2)])
def test_input_dtype_must_match_the_parameters(model):
    m = model()
    with pytest.raises(TypeError, match=r"x has dtype torch.float64 but the model's parameters are torch.float32"):
        m(torch.randn(3, 5, 2, dtype=torch.float64))
    y, _ = m.double()(torch.randn(3, 5, 2, dtype=torch.float64))
    assert y.dtype == torch.float64


@pytest.mark.parametrize("model", [lambda: LDS(2, 4, 3), lambda: LDS(2, 4, 3, algorithm="fft"),
                                   lambda: LDStack(2, 4, 3, depth=2)])
def test_empty_sequence_gives_no_outputs_and_keeps_the_state(model):
    m = model()
    y, s = m(torch.randn(5, 0, 2))
    assert y.shape == (5, 0, 3) and s.shape == (5, 4) and not s.any()
    h0 = torch.randn(5, 4, dtype=torch.complex64)
    y, s = m(torch.randn(5, 0, 2), h0)
    assert torch.equal(s, h0)
    y, s = m(torch.randn(0, 7, 2))
    assert y.shape == (0, 7, 3) and s.shape == (0, 4)


@pytest.mark.parametrize("eigenvalues", ["free", "unit"])
@pytest.mark.parametrize("init", ["uniform", "roots"])
@pytest.mark.parametrize("pairs", [True, False])
def test_every_initialisation_gives_finite_input_weights(eigenvalues, init, pairs):
    for seed in range(10):
        m = LDS(2, 32, 1, eigenvalues=eigenvalues, init=init, conjugate_pairs=pairs, generator=_gen(seed))
        lam = m.eigenvalues()
        assert (lam.abs() <= 1 + 1e-6).all()
        if eigenvalues == "unit":
            torch.testing.assert_close(lam.abs(), torch.ones(32))
        Bp = m.input_weights()
        assert torch.isfinite(Bp).all() and Bp.abs().max() < 1e6


def test_input_weights_ones():
    m = LDS(2, 8, 1, input_weights="ones", generator=_gen(0))
    torch.testing.assert_close(m.input_weights(), torch.ones(8, dtype=torch.complex64))


def test_the_modal_parameterisations_keep_their_import_path():
    """rnnlab.models.modal holds the parameterisations; the first version's path rnnlab.models.lds.<name> still
    finds every one (the book imports some from there), though lds no longer lists them as its own."""
    import rnnlab.models.lds as lds_module
    import rnnlab.models.modal as modal_module

    for name in modal_module.__all__:
        assert getattr(lds_module, name) is getattr(modal_module, name), name
        assert name not in lds_module.__all__, name
    from rnnlab.models.lds import companion_matrix as old_path
    assert old_path is companion_matrix
    with pytest.raises(AttributeError, match="no_such_name"):
        lds_module.no_such_name
