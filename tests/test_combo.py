"""Sparse Combo Net and SVD Combo Net: construction-time certificates, shapes, counts."""
import warnings

import numpy as np
import pytest
import torch

import rnnlab.theory as th
from rnnlab.models import SparseComboNet, SVDComboNet


def _sparse(**kw):
    kw.setdefault("density", 0.5)
    kw.setdefault("scalar", 1.0)
    kw.setdefault("seed", 0)
    return SparseComboNet(3, [6, 6, 6], 5, **kw)


def test_sparse_combo_net_parameter_count_is_the_D31_formula():
    net = _sparse()
    assert sum(p.numel() for p in net.parameters()) == th.sparse_combo_net_num_params(3, 6, 3, 5)
    assert all(not b.requires_grad for b in net.buffers())


def test_sparse_combo_net_is_verified_at_construction():
    net = _sparse()
    info = net.certificate
    assert info["holds"] and info["rate"] > 0 and info["skew_residual"] < 1e-12
    assert 0 < net.acceptance_rate <= 1
    W = net.weight_hh.double().numpy()
    for k in range(3):
        block = W[6 * k:6 * k + 6, 6 * k:6 * k + 6]
        assert th.certify_theorem1(block).holds
    assert not W[:6, 6:].any()  # block diagonal


@pytest.mark.parametrize("form", ["x", "y"])
@pytest.mark.parametrize("cls", [SparseComboNet, SVDComboNet])
def test_certificate_of_the_network_agrees_with_simulation(cls, form):
    torch.manual_seed(0)
    kw = dict(density=0.5, scalar=1.0, seed=0) if cls is SparseComboNet else {}
    net = cls(2, [4, 4], 3, form=form, b_std=0.5, **kw)
    cert = th.certify_combo_net(net)
    assert cert.holds and cert.form == form
    W, L = cert.details["W"], cert.details["L"]
    M = cert.metric
    assert np.abs(M @ L + L.T @ M).max() < 1e-12 * np.abs(M @ L).max()
    assert th.rate_in_metric(W, M, L=L, form=form)[0] >= cert.rate - 1e-9
    assert th.check_certificate(cert, W, u=th.piecewise_input(8, T=10.0), T=10.0).agrees


def test_forward_shapes_and_state():
    torch.manual_seed(0)
    net = _sparse()
    x = torch.randn(2, 7, 3)
    y, h = net(x)
    assert y.shape == (2, 5) and h.shape == (2, 18)
    net.readout = "all"
    y, h2 = net(x)
    assert y.shape == (2, 7, 5) and torch.allclose(h, h2)
    y0, _ = net(x, h0=torch.zeros(2, 18))
    assert torch.allclose(y, y0)
    seq, h3 = SVDComboNet(3, [4, 5])(x)
    assert seq.shape == (2, 7, 9) and torch.allclose(seq[:, -1], h3)


def test_forward_is_the_euler_step_of_equation_2():
    torch.manual_seed(0)
    net = SVDComboNet(1, [3, 3], b_std=0.3, alpha=0.2, dtype=torch.float64)
    x = torch.randn(1, 1, 1, dtype=torch.float64)
    h0 = torch.randn(1, 6, dtype=torch.float64)
    seq, h = net(x, h0=h0)
    W, L = net.recurrent_weight(), net.feedback()
    u = x[:, 0] @ net.weight_ih.T + net.bias_ih
    expect = h0 + 0.2 * (-h0 + torch.relu(h0) @ W.T + h0 @ L.T + u)
    assert torch.allclose(h, expect)


@pytest.mark.parametrize("sizes", [[4, 4, 4], [3, 5]])
@pytest.mark.parametrize("form", ["x", "y"])
@pytest.mark.parametrize("constraint", ["on", "off"])
def test_forward_equals_a_dense_loop(sizes, form, constraint):
    """The batched per-module product (equal sizes) and the dense one (unequal) against the plain loop."""
    torch.manual_seed(1)
    net = SparseComboNet(2, sizes, None, seed=3, b_std=0.2, alpha=0.3, form=form, constraint=constraint,
                         dtype=torch.float64)
    assert (net.module_blocks() is None) == (len(set(sizes)) > 1)
    x = torch.randn(3, 5, 2, dtype=torch.float64)
    W, L = net.recurrent_weight(), net.feedback()
    if constraint == "off":
        assert torch.equal(L, net.B())
    h = torch.zeros(3, sum(sizes), dtype=torch.float64)
    states = []
    for t in range(5):
        u = x[:, t] @ net.weight_ih.T + net.bias_ih
        f = (-h + torch.relu(h) @ W.T + h @ L.T + u if form == "x"
             else -h + torch.relu(h @ W.T + u) + h @ L.T)
        h = h + 0.3 * f
        states.append(h)
    seq, last = net(x)
    assert torch.allclose(seq, torch.stack(states, 1), atol=1e-13) and torch.allclose(last, h, atol=1e-13)


def test_gradients_reach_the_trained_parameters():
    net = SVDComboNet(2, [3, 3], 2)
    y, _ = net(torch.randn(4, 5, 2))
    y.sum().backward()
    for name, p in net.named_parameters():
        assert p.grad is not None, name
    # training cannot break the certificate: any parameter values are contracting
    with torch.no_grad():
        for p in net.parameters():
            p.add_(torch.randn_like(p))
    assert net.verify_contraction()["holds"]


def test_bad_arguments():
    with pytest.raises(ValueError, match="input"):
        _sparse()(torch.randn(2, 7, 4))
    with pytest.raises(ValueError, match="hidden_sizes"):
        SVDComboNet(3, [])
    with pytest.raises(TypeError, match="hidden_sizes"):
        SVDComboNet(3, 8)
    with pytest.raises(ValueError, match="alpha"):
        SVDComboNet(3, [4], alpha=2.0)
    with pytest.raises(ValueError, match="form"):
        SVDComboNet(3, [4], form="z")
    with pytest.raises(ValueError, match="h0"):
        SVDComboNet(3, [4])(torch.randn(2, 5, 3), h0=torch.zeros(3, 4))


def test_paper_best_settings_warn_about_the_metric():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        SparseComboNet(1, [32, 32], 10, density=0.033, scalar=30.0, post_scalar=0.2, seed=0)
    assert any("condition number" in str(w.message) for w in caught)


# ------------------------------------------------------------ the discrete-time certificate (euler_margin)

def test_euler_feedback_limit_puts_the_norm_bound_at_one_minus_the_margin():
    from rnnlab.models.combo import euler_feedback_limit

    alpha, g, K, margin = 0.1, 1.0, 0.8, 0.01
    omega = euler_feedback_limit(alpha, g, K, margin)
    assert np.sqrt((1 - alpha) ** 2 + alpha ** 2 * omega ** 2) + alpha * g * K == pytest.approx(1 - margin)
    with pytest.raises(ValueError, match="no feedback"):
        euler_feedback_limit(0.1, 1.0, 1.5, 0.01)        # the modules alone exceed 1 - margin
    with pytest.raises(ValueError, match="euler_margin"):
        euler_feedback_limit(0.1, 1.0, 0.5, 1.0)


@pytest.mark.parametrize("cls", [SparseComboNet, SVDComboNet])
def test_euler_margin_keeps_every_euler_step_contracting_for_any_B(cls):
    kw = {"seed": 0} if cls is SparseComboNet else {}
    torch.manual_seed(0)
    net = cls(1, [8, 8, 8], 3, euler_margin=0.05, **kw)
    torch.manual_seed(0)
    free = cls(1, [8, 8, 8], 3, **kw)
    with torch.no_grad():
        net.b_free.mul_(300.0)
        free.b_free.copy_(net.b_free)
    bounded = th.combo_net_report(net, samples=8, visited=0)
    unbounded = th.combo_net_report(free, samples=8, visited=0)
    assert bounded["continuous_certified"] and unbounded["continuous_certified"]
    assert bounded["euler_norm_bound"] <= 0.95 + 1e-9
    assert bounded["euler_max_step_norm"] <= 0.95 + 1e-9
    assert unbounded["euler_norm_bound"] > 1
    # a small B is left alone: the rescaling is min(1, omega / ||L_M||)
    with torch.no_grad():
        net.b_free.div_(3e4)
    assert float(net.euler_scale(net.feedback().detach())) == 1.0
    assert torch.allclose(net.feedback(), th.feedback_matrix(net.B(), net.metric_diag().to(net.B().dtype)))


def test_svd_euler_margin_leaves_the_feedback_room_at_any_module_weights():
    """The SVD net's modules train up to ||W_M|| -> 1/g, which alone would use up the Euler step's
    room (alpha g K >= alpha - margin): with euler_margin they are scaled to a share of it."""
    from rnnlab.models.combo import euler_feedback_limit

    torch.manual_seed(0)
    net = SVDComboNet(1, [8, 8, 8], 3, euler_margin=0.01)
    plain = SVDComboNet(1, [8, 8, 8], 3)
    with torch.no_grad():
        for p in list(net.sigma_raw) + list(plain.sigma_raw):
            p.zero_()                                     # Sigma at its ceiling, exp(-1e-3) / g
        net.b_free.mul_(300.0)
    assert float(plain.modules_norm_in_metric()) > 0.99  # the paper's ceiling: no room at margin 0.01
    with pytest.raises(ValueError, match="no feedback"):
        euler_feedback_limit(0.1, 1.0, float(plain.modules_norm_in_metric()), 0.01)
    K = float(net.modules_norm_in_metric())
    assert K < 0.5 * (0.1 - 0.01) / 0.1 and K > 0.44
    report = th.combo_net_report(net, samples=8, visited=0)
    assert report["continuous_certified"]
    assert report["euler_norm_bound"] <= 0.99 + 1e-9 and report["euler_max_step_norm"] <= 0.99 + 1e-9
    with pytest.raises(ValueError, match="below alpha"):
        SVDComboNet(1, [8], 3, euler_margin=0.2)
    with pytest.raises(ValueError, match="euler_module_share"):
        SVDComboNet(1, [8], 3, euler_margin=0.01, euler_module_share=1.0)


def test_euler_margin_is_differentiable_and_needs_the_constraint():
    torch.manual_seed(0)
    net = SparseComboNet(1, [8, 8], 3, seed=0, euler_margin=0.01)
    with torch.no_grad():
        net.b_free.mul_(300.0)
    out, _ = net(torch.randn(2, 5, 1))
    out.sum().backward()
    assert torch.isfinite(net.b_free.grad).all() and net.b_free.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="constraint"):
        SparseComboNet(1, [8, 8], 3, seed=0, constraint="off", euler_margin=0.01)
    with pytest.raises(ValueError, match="euler_margin"):
        SparseComboNet(1, [8, 8], 3, seed=0, euler_margin=1.5)
