"""Certificates of Combo Nets as they stand (rnnlab.theory.combo_report) and the public code's metric."""
import numpy as np
import pytest
import torch

from rnnlab.models import SparseComboNet, SVDComboNet
from rnnlab.models.combo import sample_theorem1_module, theorem1_module_metric
from rnnlab.theory.combo_report import (combo_net_report, linearisation, public_code_check, public_code_find_M,
                                        public_code_metric_report, slope_patterns)


def test_find_M_is_half_the_identity_for_any_zero_diagonal_module():
    # the element-wise integrand is exp(2 (|W_ii| - 1) t): 0.5 on a zero diagonal, whatever the rest
    for seed in range(3):
        W, _ = sample_theorem1_module(12, 0.3, 1.0, rng=seed)
        assert np.allclose(public_code_find_M(W), 0.5 * np.eye(12), atol=1e-9)
    W = np.array([[0.5, 7.0], [-3.0, 0.0]])  # a positive diagonal entry a gives 1 / (2 (1 - a))
    assert np.allclose(np.diag(public_code_find_M(W)), [1.0, 0.5], atol=1e-8)
    with pytest.raises(ValueError, match="W_inp"):
        public_code_find_M(np.ones(3))


def test_the_public_codes_check_passes_every_matrix_and_the_real_one_does_not():
    M = 0.5 * np.eye(4)
    huge = 100 * np.ones((4, 4)) - 100 * np.eye(4)  # |W| - I far from Hurwitz
    code, real = public_code_check(huge, M)
    assert code == pytest.approx(-1.0) and real > 100
    # a module whose diagonal Theorem-1 metric is not a multiple of I: I fails, the explicit metric works
    W = np.array([[0.0, 3.0], [0.1, 0.0]])  # |W| - I is Hurwitz (3 * 0.1 < 1)
    assert public_code_check(W, 0.5 * np.eye(2))[1] > 0
    p, _, rate = theorem1_module_metric(W)
    assert rate > 0 and public_code_check(W, np.diag(p))[1] < 0


def test_public_code_metric_report_at_the_papers_best_setting():
    rng = np.random.default_rng(0)
    modules = [sample_theorem1_module(32, 0.033, 30.0, post_scalar=0.2, rng=rng)[0] for _ in range(3)]
    rep = public_code_metric_report(modules)
    assert rep["modules"] == 3 and rep["unique_diagonal"] == [[0.5]] * 3
    assert all(c < 0 for c in rep["code_check"])            # the code accepts its metric
    assert rep["certified_by_code_metric"] == 0             # Theorem 1 does not hold in it
    assert all(r > 0 for r in rep["explicit_rate"])         # while a diagonal metric exists


@pytest.mark.parametrize("form", ["x", "y"])
def test_linearisation_is_the_autograd_jacobian_of_the_vector_field(form):
    torch.manual_seed(0)
    net = SparseComboNet(2, [4, 4], None, seed=1, b_std=0.5, form=form, dtype=torch.float64)
    h = torch.randn(8, dtype=torch.float64)
    u = torch.randn(8, dtype=torch.float64) * 0.1
    W, L = net.recurrent_weight(), net.feedback()

    def f(x):
        return (-x + W @ torch.relu(x) + L @ x + u if form == "x"
                else -x + torch.relu(W @ x + u) + L @ x)
    J = torch.autograd.functional.jacobian(f, h).numpy()
    pre = h if form == "x" else W @ h + u
    D = (pre > 0).double().numpy()
    assert np.allclose(linearisation(net, D), J, atol=1e-12)
    with pytest.raises(ValueError, match="D must"):
        linearisation(net, np.ones(3))


def test_slope_patterns_include_the_visited_ones():
    net = SparseComboNet(1, [4, 4], 3, seed=0)
    pats, kinds = slope_patterns(net, 5, inputs=torch.randn(2, 7, 1), visited=4)
    assert pats.shape == (2 + 5 + 4, 8) and kinds.count("visited") == 4 and kinds[:2] == ["off", "on"]
    assert set(np.unique(pats)) <= {0.0, 1.0} and pats[1].sum() == 8
    with pytest.raises(ValueError, match="inputs"):
        slope_patterns(net, 1, inputs=torch.randn(2, 7, 3))


def test_report_of_a_constrained_net_with_small_feedback_certifies_the_euler_map():
    torch.manual_seed(0)
    net = SVDComboNet(1, [4, 4], 2, b_std=0.0, alpha=0.1)
    rep = combo_net_report(net, samples=4)
    # L = 0: one step is (1 - alpha) I + alpha W D, of norm <= 1 - alpha * rate in the metric
    assert rep["continuous_certified"] and rep["euler_certified"] and not rep["euler_counterexample"]
    assert rep["euler_norm_bound"] == pytest.approx(1 - 0.1 * rep["module_rate_min"], abs=1e-6)
    assert rep["euler_max_step_norm"] <= rep["euler_norm_bound"] + 1e-12
    assert rep["max_abscissa"] < 0 and rep["max_euler_radius"] < 1 and not rep["no_constant_metric"]
    assert rep["patterns"] == {"off": 1, "on": 1, "random": 4, "visited": 0}


def test_report_finds_that_a_large_skew_feedback_breaks_the_euler_map_but_not_the_flow():
    torch.manual_seed(0)
    net = SparseComboNet(1, [4, 4], 2, seed=0, b_std=5.0, alpha=0.5)
    rep = combo_net_report(net, samples=4)
    assert rep["continuous_certified"] and rep["skew_residual"] < 1e-12 and rep["max_abscissa"] < 0
    # the eigenvalues of a large M-skew L sit near +-i omega; Euler maps them to 1 + alpha (-1 +- i omega)
    assert rep["euler_counterexample"] and rep["euler_no_constant_metric"] and rep["max_euler_radius"] > 1
    assert not rep["euler_certified"]


def test_report_of_the_control_measures_how_far_L_is_from_skew():
    torch.manual_seed(0)
    off = SparseComboNet(1, [4, 4], 2, seed=0, b_std=3.0, constraint="off")
    rep = combo_net_report(off, samples=2)
    assert rep["constraint"] == "off" and rep["skew_residual"] > 0.1 and rep["feedback_sym_max"] > 0
    assert rep["rate_with_feedback"] == pytest.approx(rep["module_rate_min"] - rep["feedback_sym_max"])
    assert rep["continuous_certified"] == (rep["rate_with_feedback"] > 0)


def test_trajectory_distances_shrink_for_a_contracting_net_and_grow_when_euler_fails():
    from rnnlab.theory.combo_report import trajectory_distances
    torch.manual_seed(0)
    x = torch.randn(3, 30, 1)
    calm = SVDComboNet(1, [4, 4], 2, b_std=0.0, alpha=0.1)
    d = trajectory_distances(calm, x, pairs=2)
    # certified Euler map (bound 1 - alpha * rate): every step shrinks the distance, by at least that bound
    bound = combo_net_report(calm, samples=2)["euler_norm_bound"]
    assert d["max_step_growth"] < 1 and d["final_ratio_max"] < 1 and d["steps"] == 30
    assert d["final_ratio_max"] < 10 * bound ** 30  # within the metric's condition number (Phi = I: 1)
    wild = SparseComboNet(1, [4, 4], 2, seed=0, b_std=5.0, alpha=0.5)
    assert trajectory_distances(wild, x[:, :3], pairs=2)["max_step_growth"] > 1
    assert trajectory_distances(wild, 1e3 * x, pairs=2, scale=1e30)["final_ratio_max"] == float("inf")
    assert wild.output_size == 2  # restored
    with pytest.raises(ValueError, match="inputs"):
        trajectory_distances(calm, torch.randn(3, 30, 2))
