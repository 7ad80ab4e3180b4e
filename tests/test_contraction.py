"""Contraction certificates of "RNNs of RNNs" (Kozachkov, Ennis, Slotine 2022).

Each certificate is tested on constructed positive and negative cases, its
metric is re-verified exactly over all slope vertices (``rate_in_metric``),
and it is confronted with simulation (``check_certificate``).
"""
import numpy as np
import pytest
import scipy.integrate
import scipy.linalg

import rnnlab.theory as th
from rnnlab.models.combo import theorem1_matrix

RNG = np.random.default_rng


def _confirm(cert, W, g=1.0, activation="relu", seed=0):
    """The certificate's metric is exact over every slope vertex and agrees with simulation."""
    assert cert.holds and cert.metric is not None and cert.rate > 0
    exact, _, is_exact = th.rate_in_metric(W, cert.metric, g, form=cert.form, L=cert.details.get("L"))
    assert is_exact
    assert exact >= cert.rate - 1e-8 * max(1.0, abs(cert.rate))
    # dt=None: the step is chosen so the certificate guarantees that every
    # Euler step contracts; the input is a piecewise-constant function of time.
    chk = th.check_certificate(cert, W, activation=activation, u=th.piecewise_input(W.shape[0], T=10.0, seed=seed),
                               T=10.0, rng=seed)
    assert chk.euler_bound > 0
    assert chk.agrees, str(chk)
    assert chk.rate >= cert.rate * 0.9
    return chk


# --------------------------------------------------------------------------- #
# bad input
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("fn", [th.certify_theorem1, th.certify_theorem2, th.certify_theorem4,
                                th.certify_theorem5, th.find_common_metric])
def test_non_square_W_is_a_value_error_naming_W(fn):
    with pytest.raises(ValueError, match="W"):
        fn(np.ones((2, 3)))


@pytest.mark.parametrize("g", [0.0, -1.0, float("inf")])
@pytest.mark.parametrize("fn", [th.certify_theorem1, th.certify_theorem2, th.certify_theorem4, th.certify_theorem5])
def test_bad_slope_bound_is_a_value_error_naming_g(fn, g):
    with pytest.raises(ValueError, match="g"):
        fn(np.zeros((2, 2)), g)


def test_slope_bound_of_the_wrong_type_is_a_type_error():
    with pytest.raises(TypeError, match="g"):
        th.certify_theorem1(np.zeros((2, 2)), "1")
    with pytest.raises(TypeError, match="W"):
        th.certify_theorem1("W")


def test_theorem2_needs_a_symmetric_W():
    with pytest.raises(ValueError, match="symmetric"):
        th.certify_theorem2(np.array([[0.0, 1.0], [0.0, 0.0]]))


def test_metric_that_is_not_positive_definite_is_rejected():
    W = np.zeros((2, 2))
    bad = np.array([[1.0, 0.0], [0.0, -1.0]])
    with pytest.raises(ValueError, match="positive definite"):
        th.rate_in_metric(W, bad)
    with pytest.raises(ValueError, match="positive definite"):
        th.contraction_rate_continuous(-np.eye(2), bad)
    with pytest.raises(ValueError, match="positive definite"):
        th.feedback_matrix(np.ones((2, 2)), np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match="P"):
        th.certify_theorem5(W, P=np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match="Q"):
        th.certify_theorem3(P1=np.ones(2), Q=bad, P2=np.ones(2))
    with pytest.raises(ValueError, match="symmetric"):
        th.rate_in_metric(W, np.array([[1.0, 0.5], [0.0, 1.0]]))


# --------------------------------------------------------------------------- #
# appendix A.2: the definitions
# --------------------------------------------------------------------------- #
def test_continuous_definition():
    assert th.contraction_rate_continuous(-np.eye(3), np.eye(3)) == pytest.approx(2.0)
    # a constant metric that changes the answer: J is contracting in M but not in I
    J = np.array([[-1.0, 4.0], [0.0, -1.0]])
    assert th.contraction_rate_continuous(J, np.eye(2)) < 0
    M = np.diag([1.0, 16.0])
    assert th.contraction_rate_continuous(J, M) > 0
    cert = th.certify_continuous(J, M)
    assert cert.holds and cert.rate == pytest.approx(cert.margin / 2)
    # a growing metric costs rate: dM/dt = M gives beta - 1
    assert th.contraction_rate_continuous(-np.eye(2), np.eye(2), M_dot=np.eye(2)) == pytest.approx(1.0)
    assert not th.certify_continuous(np.eye(2), np.eye(2)).holds


def test_discrete_definition():
    assert th.contraction_rate_discrete(0.5 * np.eye(2), np.eye(2)) == pytest.approx(0.75)
    assert th.contraction_rate_discrete(np.eye(2), np.eye(2), M_next=0.25 * np.eye(2)) == pytest.approx(0.75)
    cert = th.certify_discrete(0.5 * np.eye(2), np.eye(2))
    assert cert.holds and cert.rate == pytest.approx(np.log(2.0))
    assert not th.certify_discrete(1.1 * np.eye(2), np.eye(2)).holds


def test_rate_in_metric_worst_case_is_a_vertex():
    r = RNG(3)
    W = r.normal(size=(4, 4))
    M = np.eye(4)
    rate, D, exact = th.rate_in_metric(W, M)
    assert exact and set(np.unique(D)) <= {0.0, 1.0}
    interior = r.random((300, 4))
    rate_int, _, _ = th.rate_in_metric(W, M, slopes=interior)
    assert rate_int >= rate - 1e-12


# --------------------------------------------------------------------------- #
# Theorem 1
# --------------------------------------------------------------------------- #
def _theorem1_positive(seed=0, n=6):
    r = RNG(seed)
    W = r.uniform(-1, 1, (n, n)) * (r.random((n, n)) < 0.5)
    np.fill_diagonal(W, r.uniform(-3, 0.2, n))
    A = np.abs(W)
    np.fill_diagonal(A, np.maximum(np.diag(W), 0))
    rho = np.abs(np.linalg.eigvals(A)).max()
    return W * 0.7 / rho


@pytest.mark.parametrize("method", ["explicit", "lmi", "lyapunov"])
def test_theorem1_positive(method):
    W = _theorem1_positive()
    cert = th.certify_theorem1(W, method=method)
    assert cert.holds and cert.margin > 0
    assert np.allclose(cert.metric, np.diag(np.diag(cert.metric)))  # diagonal metric
    _confirm(cert, W)
    # the same diagonal metric certifies the firing-rate form too
    y_rate, _, _ = th.rate_in_metric(W, cert.metric, form="y")
    assert y_rate >= cert.rate - 1e-9


def test_theorem1_diagonal_rule_reduces_conservatism():
    W = np.array([[-5.0, 0.6], [0.6, -5.0]])
    assert th.certify_theorem1(W).holds
    assert not th.certify_theorem1(W, zero_nonpositive_diagonal=False).holds


def test_theorem1_negative_and_the_counterexample_of_c2():
    ce = th.theorem1_counterexample()
    assert ce["eigenvalues"] == pytest.approx([-2.25, 0.25])  # "a positive eigenvalue of 1/4"
    assert np.allclose(ce["WD_sym_minus_I"], [[-1, 1.25], [1.25, -1]])
    assert (ce["linear_eigenvalues"] < 0).all()  # contracting in the identity when linear
    assert not ce["theorem1"].holds and ce["theorem1"].margin == pytest.approx(-1.5)
    assert "fails" in ce["theorem1"].message
    # Theorem 2 covers it, with a metric that is not the identity
    t2 = ce["theorem2"]
    assert t2.holds and not np.allclose(t2.metric / t2.metric[0, 0], np.eye(2))


def test_theorem1_is_the_metzler_hurwitz_test():
    """Diagonal stability (an LMI) <=> g|W| - I Hurwitz, on random matrices either side of the line."""
    import cvxpy as cp

    r = RNG(7)
    outcomes = set()
    for _ in range(8):
        n = 4
        W = r.uniform(-1, 1, (n, n)) * r.uniform(0.2, 0.8)
        np.fill_diagonal(W, 0)
        A = theorem1_matrix(W)
        p = cp.Variable(n)
        s = cp.Variable()
        P = cp.diag(p)
        cp.Problem(cp.Maximize(s), [cp.sum(p) == n, p >= s, (P @ A + A.T @ P) / 2 + (P @ A + A.T @ P).T / 2
                                    << -s * np.eye(n)]).solve(solver="CLARABEL")
        lmi = s.value > 1e-7
        cert = th.certify_theorem1(W)
        assert cert.holds == lmi
        outcomes.add(lmi)
    assert outcomes == {True, False}


# --------------------------------------------------------------------------- #
# Theorem 2
# --------------------------------------------------------------------------- #
def _symmetric(seed, lmax=0.7, n=5):
    r = RNG(seed)
    A = r.normal(size=(n, n)) * 1.5
    W = (A + A.T) / 2
    return W - (np.linalg.eigvalsh(W).max() - lmax) * np.eye(n)


def test_theorem2_R_reproduces_W_and_the_metric_certifies_the_y_form():
    W = _symmetric(0)
    cert = th.certify_theorem2(W)
    R, gamma = cert.details["R"], cert.details["gamma"]
    assert np.abs(R - gamma ** 2 * R @ R - W).max() < 1e-12
    assert np.allclose(cert.metric, gamma ** 2 * R @ R)
    assert cert.form == "y" and cert.rate == pytest.approx(1 - 0.7)
    _confirm(cert, W)


def test_theorem2_metric_for_the_x_form_is_the_transformed_one():
    W = _symmetric(1)
    cy = th.certify_theorem2(W)
    cx = th.certify_theorem2(W, form="x")
    Wi = np.linalg.inv(W)
    assert np.allclose(cx.metric, Wi @ cy.metric @ Wi)
    _confirm(cx, W)
    # gamma^2 R R itself is not a metric for equation (1): the proof is about the y form
    rate_x, _, _ = th.rate_in_metric(W, cy.metric, form="x")
    assert rate_x < 0


def test_theorem2_with_slope_bound_and_negative_cases():
    W = _symmetric(2, lmax=0.8)
    assert th.certify_theorem2(W, g=1.2).holds
    bad = th.certify_theorem2(W, g=1.3)  # g lambda_max = 1.04
    assert not bad.holds and bad.margin == pytest.approx(1 - 1.04)
    assert not th.certify_theorem2(1.5 * np.eye(3)).holds
    c = th.certify_theorem2(W, g=1.2, rate=0.02)  # g lambda_max = 0.96 allows rates up to 0.04
    assert c.rate == 0.02 and th.rate_in_metric(W, c.metric, 1.2, form="y")[0] >= 0.02 - 1e-9
    with pytest.raises(ValueError, match="rate"):
        th.certify_theorem2(W, rate=0.5)


# --------------------------------------------------------------------------- #
# Theorem 3
# --------------------------------------------------------------------------- #
def _theorem3_factors(seed, n=5):
    r = RNG(seed)
    p1, p2 = r.uniform(0.3, 3, n), r.uniform(0.3, 3, n)
    A = r.normal(size=(n, n))
    Q = A @ A.T + 0.3 * np.eye(n)
    return p1, Q, p2, -(p1[:, None] * Q * p2[None, :])


def test_theorem3_given_factors_and_found_factors():
    p1, Q, p2, W = _theorem3_factors(0)
    given = th.certify_theorem3(W, P1=p1, Q=Q, P2=p2)
    assert given.holds and given.rate == 1.0
    assert np.allclose(given.metric, np.linalg.inv(np.diag(p1) @ Q @ np.diag(p1)))
    found = th.certify_theorem3(W)
    assert found.holds and found.margin > 0
    d = found.details
    assert np.allclose(-d["P1"] @ d["Q"] @ d["P2"], W)
    for g in (1.0, 5.0):  # the rate does not depend on the slope bound
        assert th.rate_in_metric(W, found.metric, g)[0] >= 1.0 - 1e-8
    _confirm(found, W)


def test_theorem3_negative():
    r = RNG(1)
    assert not th.certify_theorem3(r.normal(size=(4, 4))).holds  # not symmetrisable
    S = r.normal(size=(4, 4))
    assert not th.certify_theorem3(S + S.T).holds  # symmetric but indefinite
    p1, Q, p2, W = _theorem3_factors(2)
    assert not th.certify_theorem3(W + 0.1, P1=p1, Q=Q, P2=p2).holds
    with pytest.raises(ValueError, match="factors"):
        th.certify_theorem3(W, P1=p1)


# --------------------------------------------------------------------------- #
# Theorem 4
# --------------------------------------------------------------------------- #
def _triangular(seed, n=6):
    r = RNG(seed)
    W = np.tril(r.normal(scale=3, size=(n, n)), -1)
    np.fill_diagonal(W, r.uniform(-2, 0.9, n))
    return W


@pytest.mark.parametrize("case", ["lower", "upper", "permuted"])
def test_theorem4_positive(case):
    W = _triangular(0)
    if case == "upper":
        W = W.T
    if case == "permuted":
        perm = RNG(1).permutation(W.shape[0])
        W = W[np.ix_(perm, perm)]
    cert = th.certify_theorem4(W, permute=(case == "permuted"))
    assert cert.holds
    eps = cert.details["eps"]
    assert 0 < eps <= 1 and cert.rate >= cert.details["delta"] / 2 - 1e-12
    _confirm(cert, W)


def test_theorem4_negative():
    W = _triangular(0)
    W[2, 2] = 1.2
    c = th.certify_theorem4(W)
    assert not c.holds and c.margin == pytest.approx(-0.2)
    c = th.certify_theorem4(RNG(0).normal(size=(4, 4)))
    assert not c.holds and "not triangular" in c.message
    ring = np.roll(np.eye(4), 1, axis=0)  # a cycle: not triangular in any order
    assert not th.certify_theorem4(ring, permute=True).holds


# --------------------------------------------------------------------------- #
# Theorem 5
# --------------------------------------------------------------------------- #
def test_theorem5_finds_more_than_the_singular_value_condition():
    W = np.array([[0.0, 5.0], [0.1, 0.0]])  # ||W|| = 5, but diag scaling gives sqrt(0.5)
    cert = th.certify_theorem5(W)
    assert cert.holds and cert.details["identity_rate"] < 0
    assert cert.rate == pytest.approx(1 - np.sqrt(0.5), abs=1e-3)
    _confirm(cert, W)


def test_theorem5_given_P_and_negative():
    r = RNG(4)
    W = r.normal(size=(5, 5)) * 0.2
    cert = th.certify_theorem5(W, P=np.ones(5))
    assert cert.holds == (np.linalg.norm(W, 2) < 1)
    _confirm(th.certify_theorem5(W), W)
    assert not th.certify_theorem5(1.1 * np.eye(3)).holds  # a self-excitation > 1 cannot be scaled away
    assert not th.certify_theorem5(W, g=10.0).holds


# --------------------------------------------------------------------------- #
# Theorem 6
# --------------------------------------------------------------------------- #
def test_theorem6_along_trajectories():
    r = RNG(5)
    W = r.normal(size=(4, 4)) * 0.2
    good = th.certify_theorem6(W, x0=0.3 * r.normal(size=4), T=5.0)
    assert good.holds and good.margin > 0
    assert good.details["V_rate"] >= good.margin * 0.99  # the variational V decays at least at beta
    # starting saturated, D must grow faster than c D / g allows: condition 2 fails
    bad = th.certify_theorem6(W, x0=4.0 * np.ones(4), T=5.0)
    assert not bad.holds and bad.margin < 0
    with pytest.raises(ValueError, match="increasing"):
        th.certify_theorem6(W, activation="relu")
    with pytest.raises(ValueError, match="time-varying"):
        th.check_certificate(good, W)


def test_theorem6_statement_and_proof_differ_for_nonsymmetric_W():
    W = np.array([[0.0, 0.9], [0.0, 0.0]])
    P = np.array([1.0, 4.0])
    c = th.certify_theorem6(W, P=P, x0=np.array([0.1, -0.1]), T=1.0)
    assert c.details["c_proof"] != pytest.approx(c.details["c_statement"], abs=1e-3)


@pytest.mark.parametrize("g", [1.0, 0.25])
def test_theorem6_printed_condition_is_the_proofs_with_P_inverse(g):
    # (gW - I)P + P(gW^T - I) <= -cP  <=>  P^-1(gW - I) + (gW^T - I)P^-1 <= -cP^-1
    r = RNG(11)
    W = 0.3 * r.normal(size=(4, 4))
    p = r.uniform(0.5, 2.0, size=4)
    stated = th.certify_theorem6(W, g, P=p, variant="statement", T=0.5)
    proved = th.certify_theorem6(W, g, P=1 / p, T=0.5)
    assert stated.details["c_statement"] == pytest.approx(proved.details["c_proof"], rel=1e-10)


def test_theorem6_versions_coincide_iff_P_commutes_with_the_skew_part():
    r = RNG(12)
    W = r.normal(size=(4, 4))
    p = np.array([1.0, 1.0, 2.0, 2.0])
    K = (W - W.T) / 2
    inside = p[:, None] == p[None, :]
    W_commuting = (W + W.T) / 2 + K * inside      # K_ij = 0 wherever p_i != p_j

    def cs(W_):
        d = th.certify_theorem6(W_, P=p, T=0.5).details
        return d["c_proof"], d["c_statement"]

    assert cs(W_commuting)[0] == pytest.approx(cs(W_commuting)[1], abs=1e-12)
    assert cs((W + W.T) / 2)[0] == pytest.approx(cs((W + W.T) / 2)[1], abs=1e-12)
    c_proof, c_statement = cs(W)
    assert abs(c_proof - c_statement) > 1e-3


# --------------------------------------------------------------------------- #
# Theorem 7: one constant metric for several slope patterns
# --------------------------------------------------------------------------- #
def test_theorem7_counterexample_matrices_match_the_appendix():
    r = RNG(6)
    ce = th.theorem7_counterexample(2.0)
    assert np.allclose(ce["W_sym_minus_I"], -np.eye(2))
    for a, b, m in r.uniform(-2, 2, (5, 3)):
        S1, S2 = ce["sym_parts"](a, b, m)
        assert np.allclose(S1, [[2 * m - a, b - m], [b - m, -b]])
        assert np.allclose(S2, [[-a, -(a + m)], [-(a + m), -2 * m - b]])
    ce = th.theorem7_counterexample(4.0, 0.5)
    e = 0.5
    for a, b, m in r.uniform(-2, 2, (5, 3)):
        S1, S2 = ce["sym_parts"](a, b, m)
        # the appendix prints b - m - 2 a eps in the (2, 1) entry; the matrix is symmetric
        assert np.allclose(S1, [[4 * m - a, 2 * b - m - 2 * a * e], [2 * b - m - 2 * a * e, -4 * m * e - b]])
        assert np.allclose(S2, [[4 * m * e - a, -(2 * a + m - 2 * b * e)], [-(2 * a + m - 2 * b * e), -4 * m - b]])


def test_theorem7_search_finds_a_metric_below_the_threshold_and_none_above():
    below = th.theorem7_counterexample(1.9)["search"]
    assert below.holds and below.margin == pytest.approx(0.05, abs=1e-4)
    W = np.array([[0.0, -1.9], [1.9, 0.0]])
    assert th.rate_in_metric(W, below.metric, slopes=np.array([[1.0, 0.0], [0.0, 1.0]]))[0] > 0
    _confirm(below, W)
    for c in (2.0, 2.1, 3.0):
        assert not th.theorem7_counterexample(c)["search"].holds
    # strictly increasing activations: c = 4 with eps <= 0.5 has no metric, eps > 0.5 has one
    assert not th.theorem7_counterexample(4.0, 0.5)["search"].holds
    assert not th.theorem7_counterexample(4.0, 0.4)["search"].holds
    assert th.theorem7_counterexample(4.0, 0.6)["search"].holds


def test_theorem7_thresholds():
    assert th.theorem7_critical_c(0.0, tol=1e-3) == pytest.approx(2.0, abs=2e-3)
    assert th.theorem7_critical_eps(4.0, tol=1e-3) == pytest.approx(0.5, abs=2e-3)


def test_common_metric_over_all_vertices_covers_every_slope():
    W = _theorem1_positive(3, n=4)
    cert = th.find_common_metric(W)  # all 16 vertices of [0, 1]^4
    assert cert.holds
    _confirm(cert, W)


# --------------------------------------------------------------------------- #
# combination: feedback (equation 3), Corollary 2, hierarchy
# --------------------------------------------------------------------------- #
def _modules():
    Ws, rate = th.sample_theorem1_modules(2, 4, density=0.6, scalar=1.0, rng=0)
    assert 0 < rate <= 1
    Wsvd, Msvd = th.svd_module(3, rng=1)
    Ws = Ws + [Wsvd]
    certs = [th.certify_theorem1(W) for W in Ws[:2]] + [th.certify_theorem5(Wsvd, P=np.diag(Msvd))]
    return Ws, certs


@pytest.mark.parametrize("lower_only", [False, True])
def test_feedback_assembly_is_skew_in_the_metric_and_contracts(lower_only):
    Ws, certs = _modules()
    n = sum(W.shape[0] for W in Ws)
    B = RNG(2).normal(size=(n, n))
    cert = th.certify_assembly(Ws, certs, B, lower_only=lower_only)
    L, M = cert.details["L"], cert.metric
    assert np.abs(M @ L + L.T @ M).max() < 1e-12 * np.abs(M @ L).max()
    Bm = B * th.block_mask([4, 4, 3], lower_only=lower_only)
    assert np.allclose(L, Bm - np.linalg.solve(M, Bm.T @ M))
    assert np.allclose(L[th.block_mask([4, 4, 3], diagonal=True) & ~th.block_mask([4, 4, 3])], 0)
    if lower_only:
        # the lower blocks are B, the upper ones -M^-1 B^T M: feedback, not a hierarchy
        mask = th.block_mask([4, 4, 3], lower_only=True)
        assert np.allclose(L[mask], B[mask]) and np.any(L[mask.T])
    assert cert.rate == pytest.approx(min(c.rate for c in certs))
    _confirm(cert, cert.details["W"])


def test_feedback_with_full_metrics_and_corollary2():
    W2 = _symmetric(0, n=3)
    c2 = th.certify_theorem2(W2, form="x")  # a full metric
    p1, Q, p2, W3 = _theorem3_factors(0, n=3)
    c3 = th.certify_theorem3(W3)
    B = RNG(3).normal(size=(6, 6))
    cert = th.certify_assembly([W2, W3], [c2, c3], B)
    assert cert.holds and cert.details["skew_residual"] < 1e-12
    _confirm(cert, cert.details["W"])
    C = np.diag(RNG(4).uniform(0, 1, 6))
    cc = th.certify_assembly([W2, W3], [c2, c3], B, C=C)
    L, M = cc.details["L"], cc.metric
    assert np.allclose(M @ L + L.T @ M, -(C + C.T))
    with pytest.raises(ValueError, match="form"):
        th.certify_assembly([W2, W2], [c2, th.certify_theorem2(W2)], np.zeros((6, 6)))


def test_hierarchical_combination():
    Ws, certs = _modules()
    n = 11
    L = np.tril(RNG(5).normal(scale=2.0, size=(n, n)), -1) * th.block_mask([4, 4, 3], lower_only=True)
    cert = th.certify_hierarchy(Ws, certs, L)
    assert cert.holds and cert.rate > 0
    W = cert.details["W"]
    assert th.rate_in_metric(W, cert.metric, L=L, max_exact_dim=11)[0] >= cert.rate - 1e-9
    chk = th.check_certificate(cert, W, u=th.piecewise_input(n, T=10.0), T=10.0)
    assert chk.agrees
    with pytest.raises(ValueError, match="lower"):
        th.certify_hierarchy(Ws, certs, L.T)


# --------------------------------------------------------------------------- #
# module constructors and the parameter count
# --------------------------------------------------------------------------- #
def test_rejection_sampled_modules_satisfy_theorem1():
    Ws, rate = th.sample_theorem1_modules(5, 16, density=0.4, scalar=0.4, rng=0)
    assert 0 < rate < 0.2  # D.2.1 chose these settings for about 1 % acceptance
    for W in Ws:
        assert np.all(np.diag(W) == 0)
        cert = th.certify_theorem1(W)
        assert cert.holds
    Ws, _ = th.sample_theorem1_modules(2, 8, density=0.5, scalar=1.0, post_scalar=0.5, rng=1)
    assert all(th.certify_theorem1(W).holds and np.abs(W).max() <= 0.5 for W in Ws)
    with pytest.raises(ValueError, match="post_scalar"):
        th.sample_theorem1_module(8, 0.5, 1.0, post_scalar=2.0)
    with pytest.raises(ValueError, match="density"):
        th.sample_theorem1_module(8, 0.0, 1.0)


def test_acceptance_of_sparse_settings():
    out = th.theorem1_acceptance(16, 0.4, 0.4, samples=400, rng=0)
    assert 0.0 < out["rate"] < 0.06
    # very sparse, large entries: the accepted modules are mostly feed-forward (nilpotent |W|)
    # and stay accepted at any scale (D.2.2)
    out = th.theorem1_acceptance(32, 0.033, 30.0, samples=150, rng=0)
    assert out["feedforward_fraction"] > 0.9 and out["scale_up_fraction"] == out["feedforward_fraction"]


def test_lyapunov_metric_is_the_integral_of_D11():
    A = np.array([[-1.0, 0.5], [0.2, -2.0]])
    M = th.lyapunov_metric(A)
    assert np.allclose(A.T @ M + M @ A, -np.eye(2))
    quad, _ = scipy.integrate.quad_vec(lambda t: scipy.linalg.expm(A.T * t) @ scipy.linalg.expm(A * t), 0, np.inf)
    assert np.allclose(M, quad, atol=1e-7)
    with pytest.raises(ValueError, match="Hurwitz"):
        th.lyapunov_metric(np.eye(2))


def test_lyapunov_diagonal_is_checked_and_replaced_when_it_fails():
    found = {"lyapunov": 0, "explicit": 0}
    for seed in range(6):
        W = th.sample_theorem1_modules(1, 16, 0.4, 0.4, rng=seed)[0][0]
        p, how, rate = th.theorem1_module_metric(W, method="lyapunov")
        assert rate > 0
        found["lyapunov" if how == "lyapunov" else "explicit"] += 1
    assert found["explicit"] > 0  # the D.1.1 recipe does not always give a Theorem-1 metric


def test_svd_module_is_theorem5_in_phi_squared():
    W, M = th.svd_module(6, g=2.0, rng=0)
    cert = th.certify_theorem5(W, g=2.0, P=M)
    assert cert.holds and cert.rate > 0
    _confirm(cert, W, g=1.0)


def test_parameter_count_of_D31():
    assert th.sparse_combo_net_num_params(16, 32, 1, 10) == 129034  # MNIST tasks
    assert th.sparse_combo_net_num_params(16, 32, 3, 10) == 130058  # sequential CIFAR10
    assert th.sparse_combo_net_naive_num_params(16, 32, 1, 10) > 129034


def test_certificate_string():
    s = str(th.certify_theorem1(_theorem1_positive()))
    assert "HOLDS" in s and "rate" in s and "metric: diagonal" in s
    assert "FAILS" in str(th.certify_theorem1(np.eye(2) * 2))


# --------------------------------------------------------------------------- #
# properties
# --------------------------------------------------------------------------- #
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2 ** 31 - 1), sizes=st.lists(st.integers(1, 4), min_size=1, max_size=4),
       spread=st.floats(0.0, 6.0), lower_only=st.booleans())
def test_feedback_is_skew_in_any_block_diagonal_metric(seed, sizes, spread, lower_only):
    r = RNG(seed)
    n = sum(sizes)
    B = r.normal(size=(n, n))
    p = np.exp(r.uniform(-spread, spread, n))
    L = th.feedback_matrix(B, p, mask=th.block_mask(sizes, lower_only=lower_only))
    ML = p[:, None] * L
    assert np.abs(ML + ML.T).max() <= 1e-12 * max(1.0, np.abs(ML).max())
    # a full (non-diagonal) metric through the solver path
    A = r.normal(size=(n, n))
    M = A @ A.T + np.eye(n)
    L = th.feedback_matrix(B, M)
    assert np.abs(M @ L + L.T @ M).max() <= 1e-9 * max(1.0, np.abs(M @ L).max())


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2 ** 31 - 1), n=st.integers(1, 7), scale=st.floats(0.05, 3.0))
def test_theorem1_decision_and_metric_agree(seed, n, scale):
    r = RNG(seed)
    W = r.uniform(-scale, scale, (n, n))
    cert = th.certify_theorem1(W)
    if cert.holds:
        p = np.diag(cert.metric)
        A = theorem1_matrix(W)
        S = (p[:, None] * A) + (p[:, None] * A).T
        s = 1 / np.sqrt(p)
        assert np.linalg.eigvalsh(s[:, None] * S * s[None, :]).max() < 0
    else:
        assert np.linalg.eigvals(theorem1_matrix(W)).real.max() >= 0


# --------------------------------------------------------------------------- #
# Theorem 7: the proof's necessary conditions and the (c, eps) map
# --------------------------------------------------------------------------- #
def _am_grid():
    a = np.linspace(0.01, 5, 300)[None, :]
    m = np.linspace(-3, 3, 301)[:, None]
    return a, m


@pytest.mark.parametrize("c, eps", [(2.0, 0.0), (4.0, 0.5), (2.5, 0.2), (4.0, 0.45)])
def test_theorem7_necessary_conditions_have_no_solution_at_or_past_the_threshold(c, eps):
    a, m = _am_grid()
    for b in (0.5, 1.0, 3.0):
        cond = th.theorem7_conditions(a, b, m, c, eps)
        assert not cond["all necessary"].any()
        assert not cond["all exact"].any()


@pytest.mark.parametrize("c, eps", [(1.9, 0.0), (3.9, 0.5), (1.0, 0.3)])
def test_theorem7_conditions_below_the_threshold(c, eps):
    a, m = _am_grid()
    cond = th.theorem7_conditions(a, 1.0, m, c, eps)
    assert cond["all exact"].any()
    # necessary conditions: every exact solution meets them
    assert not (cond["all exact"] & ~cond["all necessary"]).any()
    # the identity metric works below the threshold
    assert th.theorem7_conditions(1.0, 1.0, 0.0, c, eps)["all exact"]


def test_theorem7_conditions_are_the_appendix_inequalities():
    r = RNG(11)
    for a, b, m in r.uniform(-3, 3, (50, 3)):
        c0 = th.theorem7_conditions(a, b, m, 2.0, 0.0)
        assert c0["(11)/(17)"] == (2 * m < a)
        assert c0["(12)/(18)"] == (-2 * m < b)
        assert c0["(13)/(15)"] == (abs(2 * m - (a + b)) > 2 * abs(b - m))
        assert c0["(14)/(16)"] == (abs(-2 * m - (a + b)) > 2 * abs(a + m))
        e = 0.5
        c1 = th.theorem7_conditions(a, b, m, 4.0, e)
        assert c1["(13)/(15)"] == (abs(4 * m - a - b - 4 * m * e) > 2 * abs(2 * b - m - 2 * a * e))
        assert c1["(14)/(16)"] == (abs(4 * m * e - a - b - 4 * m) > 2 * abs(2 * a + m - 2 * b * e))
        assert c1["(11)/(17)"] == (4 * m - a < 0)
        assert c1["(12)/(18)"] == (-4 * m - b < 0)
        # the exact tests agree with the eigenvalues of the matrices of sym_parts
        X1, X2 = th.theorem7_counterexample(4.0, e)["sym_parts"](a, b, m)
        assert c1["X1 < 0"] == (np.linalg.eigvalsh(X1).max() < 0)
        assert c1["X2 < 0"] == (np.linalg.eigvalsh(X2).max() < 0)


def test_theorem7_margin_grid_matches_the_identity_metric():
    cs, epss = np.array([1.0, 1.9, 2.1, 3.0]), np.array([0.0, 0.5])
    grid = th.theorem7_margin_grid(cs, epss)
    assert grid.shape == (2, 4)
    # with trace M = n the identity is optimal: s = 1 - c (1 - eps) / 2
    assert np.allclose(grid, 1 - cs[None, :] * (1 - epss[:, None]) / 2, atol=1e-4)
    with pytest.raises(ValueError, match="eps"):
        th.theorem7_margin_grid(cs, [1.0])


def test_theorem7_conditions_boundary_is_not_definite():
    # c = 1.9, M = [[0.905, -0.05], [-0.05, 1]]: X_1 = [[-1, 1], [1, -1]] is singular; round-off must not
    # make it negative definite (the trace condition (13) holds with equality there)
    cond = th.theorem7_conditions(0.905, 1.0, -0.05, 1.9, 0.0)
    assert not cond["X1 < 0"] and not cond["(13)/(15)"]
    assert not th.theorem7_conditions(1.0, 1.0, 1.0, 1.0, 0.0)["M > 0"]


def test_empirical_check_with_too_large_a_step_is_inconclusive_not_agreeing():
    # The C.2 matrix certified by Theorem 2 (x form): with dt = 0.5 the Euler
    # guarantee is negative, so the simulation can neither confirm nor refute.
    W = th.theorem1_counterexample()["W"]
    cert = th.certify_theorem2(W, form="x")
    chk = th.check_certificate(cert, W, u=np.array([-10.0, 1.0]), T=5.0, dt=0.5, rng=0)
    assert chk.euler_bound <= 0 and chk.agrees is None
    assert "inconclusive" in str(chk)
    auto = th.check_certificate(cert, W, u=np.array([-10.0, 1.0]), T=5.0, rng=0)
    assert auto.euler_bound > 0 and auto.agrees is True


def test_theory_modules_import_one_way():
    """The theory modules import each other one way, with no import inside a function to dodge a cycle
    (issue 37): certificate is the base, theorems and counterexamples build on it, contraction gathers
    the three and none of them imports it."""
    import ast
    import pathlib

    import rnnlab.theory as theory
    import rnnlab.theory.certificate as base
    import rnnlab.theory.contraction as contraction
    import rnnlab.theory.counterexamples as counterexamples
    import rnnlab.theory.theorems as theorems

    folder = pathlib.Path(theory.__file__).parent
    modules = {p.stem for p in folder.glob("*.py")} - {"__init__"}
    graph, late = {}, []
    for name in sorted(modules):
        tree = ast.parse((folder / f"{name}.py").read_text())
        top = {id(node) for node in tree.body}
        graph[name] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                targets = {node.module} if node.module else {a.name for a in node.names}
            elif isinstance(node, (ast.ImportFrom, ast.Import)):
                text = node.module if isinstance(node, ast.ImportFrom) else " ".join(a.name for a in node.names)
                targets = {m for m in modules if f"rnnlab.theory.{m}" in (text or "")}
            else:
                if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module":
                    late.append(f"{name}: importlib.import_module")
                continue
            targets &= modules
            graph[name] |= targets
            if targets and id(node) not in top:
                late.append(f"{name}: {sorted(targets)} imported inside a function")
    assert late == []
    assert graph["certificate"].isdisjoint({"theorems", "counterexamples", "contraction"})
    assert "contraction" not in set().union(*(graph[m] for m in modules - {"contraction"}))
    assert "counterexamples" not in graph["theorems"]
    assert graph["contraction"] == {"certificate", "theorems", "counterexamples"}
    seen, stack = set(), []

    def visit(m):                         # depth-first search: a cycle is a module met on its own path
        assert m not in stack, f"import cycle: {' -> '.join(stack + [m])}"
        if m in seen:
            return
        stack.append(m)
        for dep in graph[m]:
            visit(dep)
        stack.pop()
        seen.add(m)

    for m in sorted(modules):
        visit(m)
    assert not hasattr(contraction, "__getattr__")
    for name in ["certify_theorem1", "certify_theorem6", "find_common_metric", "theorem7_margin_grid"]:
        home = theorems if name.startswith("certify") else counterexamples
        assert getattr(th, name) is getattr(contraction, name) is getattr(home, name)
    assert th.Certificate is contraction.Certificate is base.Certificate
    assert th.rate_in_metric is contraction.rate_in_metric is base.rate_in_metric


def test_the_moved_names_stay_importable_from_contraction():
    """The theorems' and counterexamples' public names keep their old import path (re-exported)."""
    import rnnlab.theory.counterexamples as counterexamples
    import rnnlab.theory.theorems as theorems
    from rnnlab.theory.contraction import certify_theorem1, theorem7_margin_grid

    assert certify_theorem1 is theorems.certify_theorem1
    assert theorem7_margin_grid is counterexamples.theorem7_margin_grid
    with pytest.raises(ImportError, match="cannot import name 'nothing'"):
        from rnnlab.theory.contraction import nothing  # noqa: F401


# --------------------------------------------------------------------------- #
# Each certificate's rate is what its proof gives in its own metric (issue 40)
# --------------------------------------------------------------------------- #
def _theorem1_proof_rate(W, metric, g=1.0):
    """Theorem 1's proof, by hand: ``dV/dt <= |dx|^T (P A + A^T P) |dx|`` with ``A = g|W| - I``
    (a diagonal entry ``W_ii <= 0`` set to 0), ``V = dx^T P dx``; so ``V`` decays at
    ``2 lambda``, the smallest generalised eigenvalue of ``(-(P A + A^T P), P)``."""
    A = np.abs(W)
    np.fill_diagonal(A, np.maximum(np.diag(W), 0.0))
    A = g * A - np.eye(len(W))
    return scipy.linalg.eigh(-(metric @ A + A.T @ metric), metric, eigvals_only=True).min() / 2


@pytest.mark.parametrize("method", ["explicit", "lmi", "lyapunov"])
@pytest.mark.parametrize("g", [1.0, 0.8])
def test_theorem1_rate_is_the_proofs_in_its_own_metric_not_the_abscissa_bound(method, g):
    W = _theorem1_positive()
    cert = th.certify_theorem1(W, g, method=method)
    bound = -np.linalg.eigvals(theorem1_matrix(W, g)).real.max()
    assert cert.margin == pytest.approx(bound, rel=1e-12)
    assert cert.rate == pytest.approx(_theorem1_proof_rate(W, cert.metric, g), rel=1e-9, abs=1e-12)
    # a diagonal metric reaches -alpha(A) only with A's Perron vectors; these metrics do not
    assert 0 < cert.rate < bound * (1 - 1e-6), (cert.rate, bound)


def test_theorem1_rate_reaches_the_bound_when_it_is_tight():
    """W symmetric and nonnegative: the explicit metric is the identity, the rate is
    -alpha(g|W| - I), and the slope g on every unit (Jacobian -I + gW = A) attains it."""
    W = np.array([[0.0, 0.3, 0.1], [0.3, 0.2, 0.0], [0.1, 0.0, 0.0]])
    cert = th.certify_theorem1(W)
    bound = -np.linalg.eigvalsh(theorem1_matrix(W)).max()
    assert np.allclose(cert.metric, np.eye(3) * cert.metric[0, 0])
    assert cert.rate == pytest.approx(bound, rel=1e-9) and cert.margin == pytest.approx(bound, rel=1e-12)
    assert cert.rate == pytest.approx(_theorem1_proof_rate(W, cert.metric), rel=1e-9)
    exact, _, is_exact = th.rate_in_metric(W, cert.metric)
    assert is_exact and exact == pytest.approx(cert.rate, rel=1e-9)


def test_theorem4_rate_is_delta_minus_the_strict_part_in_its_own_metric():
    for W, g in ((_triangular(0), 1.0), (_triangular(3).T, 0.7)):
        cert = th.certify_theorem4(W, g)
        Gamma = np.sqrt(np.diag(cert.metric))
        scaled = Gamma[:, None] * W / Gamma[None, :]
        N = scaled - np.diag(np.diag(scaled))
        delta = 1 - g * max(np.diag(W).max(), 0.0)
        assert cert.rate == pytest.approx(delta - g * np.linalg.norm(N, 2), rel=1e-9)
        assert cert.rate < 0.99 * delta                 # not the margin's bound
    # diagonal W: no strict part, the rate is delta, and the slope g on the largest W_ii attains it
    W = np.diag([0.5, -1.0, 0.2])
    cert = th.certify_theorem4(W)
    assert cert.rate == pytest.approx(0.5, rel=1e-12)
    assert th.rate_in_metric(W, cert.metric)[0] == pytest.approx(0.5, rel=1e-9)


def test_theorem5_rate_is_one_minus_the_scaled_norm_in_its_own_metric():
    r = RNG(4)
    W = r.normal(size=(5, 5)) * 0.2
    given = np.array([1, 1.2, 0.9, 1.1, 1.0])
    for g, cert in ((1.0, th.certify_theorem5(W)), (1.0, th.certify_theorem5(W, P=given)),
                    (0.5, th.certify_theorem5(W, 0.5))):
        assert cert.holds
        s = np.sqrt(np.diag(cert.metric))
        assert cert.rate == pytest.approx(1 - g * np.linalg.norm(s[:, None] * W / s[None, :], 2), rel=1e-9)
    # W = 0.6 I: rate 0.4 in every diagonal metric, attained by the slope 1
    cert = th.certify_theorem5(0.6 * np.eye(3), P=np.array([1.0, 2.0, 3.0]))
    assert cert.rate == pytest.approx(0.4, rel=1e-12)
    assert th.rate_in_metric(0.6 * np.eye(3), cert.metric)[0] == pytest.approx(0.4, rel=1e-9)
