"""The auto-checks of the contraction chapter's code exercises (rnnlab/checks/contraction.py).

For every exercise: the package's reference passes its own cases, agrees with
the closed form the solution derives, the notebook's starter (and any function
raising NotImplementedError) is "not attempted", and a plausible wrong answer
fails, naming the case that failed.
"""
import itertools
import math

import numpy as np
import pytest

from rnnlab.checks import evaluate, exercises, get

LABELS = ["ex-ctr-balance", "ex-ctr-linear", "ex-ctr-thm4", "ex-ctr-thm1-scratch", "ex-ctr-identity", "ex-ctr-diag",
          "ex-ctr-hierarchy", "ex-ctr-params", "ex-ctr-skew-euler", "ex-ctr-euler-bound", "ex-ctr-find-m",
          "ex-ctr-certified-feedback", "ex-ctr-corner-growth", "ex-ctr-skew-feedback", "ex-ctr-euler-limit",
          "ex-ctr-flowchart"]


# Exercises whose independent answers live in tests/test_exercises.py (INDEPENDENT, BY_HAND) only.
CHECKED_ELSEWHERE = ["ex-ctr-lmi-numpy", "ex-ctr-sign-grid", "ex-ctr-thm1-sim", "ex-ctr-kicked-loop",
                     "ex-ctr-break-it"]


def test_the_chapter_declares_exactly_its_exercises():
    declared = [ex.label for ex in exercises() if ex.notebook.startswith("contraction/")]
    assert sorted(declared) == sorted(LABELS + CHECKED_ELSEWHERE)


def _fails_at(label, candidate, case, *words):
    result = evaluate(label, candidate)
    assert result.status == "failed", result.message
    assert f"case {case} of {result.total} failed: for " in result.message, result.message
    for word in words:
        assert word in result.message, result.message
    assert "hint:" in result.message
    return result


# ------------------------------------------------------------ closed forms (the solutions)
# A correct answer written the way the solutions derive it must pass: this also
# checks the numerical references (root finders on the exact vertex check).

def _corners(n):
    return [np.array(d) for d in itertools.product([0.0, 1.0], repeat=n)]


def identity_rate(W):
    W = np.asarray(W, dtype=float)
    return min(1.0 - np.linalg.eigvalsh((W * d + (W * d).T) / 2).max()
               for d in _corners(W.shape[0]))


def theorem4_eps(W, g=1.0):
    delta = 1.0 - g * max(W[0, 0], W[1, 1], 0.0)
    w = abs(W[1, 0])
    return 1.0 if w == 0 else min(1.0, delta / (2 * g * w))


def theorem1_abscissa(W, g=1.0):
    A = np.abs(np.asarray(W, dtype=float))
    A[np.diag_indices_from(A)] *= np.diag(W) > 0        # the diagonal rule
    return np.linalg.eigvals(g * A - np.eye(len(A))).real.max()


def identity_threshold(eps, k=1.0):
    return 2.0 / max(abs(k - eps), abs(k * eps - 1), abs(k - 1), eps * abs(k - 1))


def diag_metric_interval(W):
    lo, hi = 0.0, math.inf
    for d in _corners(2):
        A = np.asarray(W, dtype=float) * d
        if A[0, 0] >= 1:
            return None
        qa, qc = -A[1, 0] ** 2 / 4, -A[0, 1] ** 2 / 4
        qb = (A[0, 0] - 1) * (A[1, 1] - 1) - A[0, 1] * A[1, 0] / 2
        if qa < 0:
            disc = qb * qb - 4 * qa * qc
            if disc <= 0:
                return None
            r = sorted(((-qb + s * math.sqrt(disc)) / (2 * qa)) for s in (1, -1))
            lo, hi = max(lo, r[0]), min(hi, r[1])
        elif qb > 0:
            lo = max(lo, -qc / qb)
        else:
            return None
    return (lo, hi) if lo < hi else None


def _sqrtm(M):
    w, V = np.linalg.eigh(np.atleast_2d(M))
    return (V * np.sqrt(w)) @ V.T


def hierarchy_weight(M1, lam1, M2, lam2, G, lam):
    G = np.atleast_2d(G)
    if not np.any(G):
        return 1.0
    gamma = np.linalg.norm(_sqrtm(M2) @ G @ np.linalg.inv(_sqrtm(M1)), 2)
    return 4 * (lam1 - lam) * (lam2 - lam) / gamma**2


def combo_net_num_params(input_size, hidden_sizes, output_size, lower_only=True):
    n = sum(hidden_sizes)
    b = n * n - sum(c * c for c in hidden_sizes)
    return (b // 2 if lower_only else b) + input_size * n + n + n * output_size + output_size


def skew_euler_limit(alpha, leak=1.0):
    return math.sqrt(max(0.0, 2 * leak / alpha - leak**2))


def euler_norm_bound(Wm, Lm, alpha, g=1.0):
    n = len(Wm)
    s = np.linalg.svd(np.eye(n) + alpha * (-np.eye(n) + np.asarray(Lm)), compute_uv=False)[0]
    return s + alpha * g * np.linalg.svd(np.asarray(Wm), compute_uv=False)[0]


def certified_feedback(L, p, modules_norm, alpha, margin, g=1.0):
    # the notebook's solution, in torch: omega from the certificate, ||L_M|| by matrix_norm
    import torch
    omega = ((1 - margin - alpha * g * modules_norm) ** 2 - (1 - alpha) ** 2) ** 0.5 / alpha
    s = p.sqrt()
    size = torch.linalg.matrix_norm(s[:, None] * L / s[None, :], ord=2)
    return L * torch.clamp(omega / size, max=1.0)


def find_m_diagonal(W):
    import scipy.integrate
    a = np.abs(np.diag(W)) - 1
    return [scipy.integrate.quad(lambda t: math.exp(2 * ai * t), 0, math.inf)[0] for ai in a]


def corner_growth(W):
    # the general (non-symmetric) eigenvalue solver on the symmetric part
    W = np.asarray(W, dtype=float)
    n = len(W)
    out = {}
    for d in itertools.product((0, 1), repeat=n):
        A = -np.eye(n) + W @ np.diag(d)
        S = A + A.T
        out[d] = max(np.linalg.eigvals(S).real) / 2
    return out


def skew_feedback(B, p):
    # entry by entry: L_ij = B_ij - B_ji p_j / p_i
    n = len(p)
    return np.array([[B[i][j] - B[j][i] * p[j] / p[i] for j in range(n)] for i in range(n)])


def euler_step_limit(B, p):
    # the all-off step's eigenvalues 1 - alpha +- i alpha omega: omega from L's spectrum
    n = len(p)
    L = np.array([[B[i][j] - B[j][i] * p[j] / p[i] for j in range(n)] for i in range(n)])
    omega = np.abs(np.linalg.eigvals(L)).max()
    return 2 / (1 + omega**2)


def balancing_weight(W):
    # the solution's cross term w12 + p w21 = 0
    return -W[0][1] / W[1][0]


def flowchart_leaf(W, g=1.0):
    # Closed forms for 2 x 2: eigenvalues, trace/determinant tests, and a scan over r for Theorem 5.
    W = np.asarray(W, dtype=float)
    (a, b), (c, d) = W
    if b == c:                                             # symmetric
        lam = (a + d) / 2 + np.hypot((a - d) / 2, b)
        if g * lam >= 1:
            return -2
        if a * d - b * c != 0:
            return 2
    A = g * np.array([[max(a, 0.0), abs(b)], [abs(c), max(d, 0.0)]]) - np.eye(2)
    if np.trace(A) < 0 and np.linalg.det(A) > 0:           # a 2 x 2 Hurwitz test
        return 1
    # W T symmetric (b t2 = c t1 with t > 0) and negative definite
    if a < 0 and d < 0 and (b * c > 0 or b == c == 0) and a * d - b * c > 0:
        return 3
    r = np.logspace(-4, 4, 4001)
    best = min(np.linalg.norm(np.array([[a, b * x], [c / x, d]]), 2) for x in r)
    return 5 if g * best < 1 else 0


CLOSED_FORMS = {"ex-ctr-balance": balancing_weight, "ex-ctr-linear": identity_rate, "ex-ctr-thm4": theorem4_eps,
                "ex-ctr-thm1-scratch": theorem1_abscissa,
                "ex-ctr-identity": identity_threshold, "ex-ctr-diag": diag_metric_interval,
                "ex-ctr-hierarchy": hierarchy_weight, "ex-ctr-params": combo_net_num_params,
                "ex-ctr-skew-euler": skew_euler_limit, "ex-ctr-euler-bound": euler_norm_bound,
                "ex-ctr-find-m": find_m_diagonal, "ex-ctr-certified-feedback": certified_feedback,
                "ex-ctr-corner-growth": corner_growth, "ex-ctr-skew-feedback": skew_feedback,
                "ex-ctr-euler-limit": euler_step_limit, "ex-ctr-flowchart": flowchart_leaf}


def test_the_euler_limit_fails_the_flow_only_answer():
    # the metric forgotten: omega of B - B^T instead of B - M^-1 B^T M (agrees when M = I)
    _fails_at("ex-ctr-euler-limit", lambda B, p: euler_step_limit(B, np.ones(len(p))), 2, "p = [1, 4]")


def test_the_warm_ups_fail_plausible_slips():
    # the transpose's metric ratio turned over, and the symmetric part's eigenvalue of W D, not -I + W D
    _fails_at("ex-ctr-skew-feedback", lambda B, p: np.asarray(B) - np.asarray(B).T
              * np.asarray(p)[:, None] / np.asarray(p)[None, :], 1, "p = [1, 4]")
    _fails_at("ex-ctr-corner-growth", lambda W: {k: v + 1 for k, v in corner_growth(W).items()}, 1,
              "W = [[-9, 2.5], [2.5, 0]]")


@pytest.mark.parametrize("label", LABELS)
def test_the_closed_form_passes(label):
    result = evaluate(label, CLOSED_FORMS[label])
    assert result.status == "passed", result.message


def test_the_diagonal_metric_intervals_are_the_derived_ones():
    ref = get("ex-ctr-diag").reference
    lo, hi = ref(np.array([[-9.0, 2.5], [2.5, 0.0]]))
    assert lo == pytest.approx(25 / 16, rel=1e-10)
    assert hi == pytest.approx(2.2 + math.sqrt(3.84), rel=1e-10)
    assert ref(np.array([[0.0, 0.0], [6.0, 0.0]])) == (0.0, pytest.approx(1 / 9, rel=1e-10))
    assert ref(np.array([[0.0, 6.0], [0.0, 0.0]])) == (pytest.approx(9.0, rel=1e-10), math.inf)
    assert ref(np.array([[0.0, -3.0], [3.0, 0.0]])) is None


def test_the_parameter_count_is_the_papers():
    ref = get("ex-ctr-params").reference
    assert ref(1, [8] * 3, 10) == combo_net_num_params(1, [8] * 3, 10)
    # D.3.1's numbers, by the formula the reference is checked against above
    assert combo_net_num_params(1, [32] * 16, 10) == 129034
    assert combo_net_num_params(3, [32] * 16, 10) == 130058
    assert combo_net_num_params(3, [32] * 24, 10) == 293386


# ------------------------------------------------------------ plausible wrong answers

def test_linear_network_only_fails():
    def wrong(W):                                   # D = I only: the linear network
        W = np.asarray(W, dtype=float)
        return 1.0 - np.linalg.eigvalsh((W + W.T) / 2).max()

    # the rate for c = 1 is one of the answers the exercise asks for: the message says the value is
    # too large, never what it should be (issue 38)
    result = _fails_at("ex-ctr-linear", wrong, 1, "c = 1", "too large")
    assert "0.5" not in result.message.split("hint:")[0]


def test_theorem4_without_the_diagonal_rule_fails():
    def wrong(W, g=1.0):                            # lets a negative diagonal raise delta
        return min(1.0, (1.0 - g * max(W[0, 0], W[1, 1])) / (2 * g * abs(W[1, 0])))

    _fails_at("ex-ctr-thm4", wrong, 3, "negative diagonal")


def test_theorem4_uncapped_fails():
    def wrong(W, g=1.0):
        return (1.0 - g * max(W[0, 0], W[1, 1], 0.0)) / (2 * g * abs(W[1, 0]))

    _fails_at("ex-ctr-thm4", wrong, 5, "weak coupling")


def test_balancing_weight_upside_down_fails():
    _fails_at("ex-ctr-balance", lambda W: -W[1][0] / W[0][1], 1, "W = [[0, -1], [2, 0]]")


def test_theorem1_without_the_diagonal_rule_fails():
    def wrong(W, g=1.0):                            # keeps |W_ii| of a negative self-weight
        A = np.abs(np.asarray(W, dtype=float))
        return np.linalg.eigvals(g * A - np.eye(len(A))).real.max()

    _fails_at("ex-ctr-thm1-scratch", wrong, 3, "negative self-weight")


def test_identity_threshold_ignoring_eps_fails():
    _fails_at("ex-ctr-identity", lambda eps: 2.0, 2, "eps = 0.5", "your value is wrong: values differ (too small)")


def test_diag_metric_from_the_linear_network_fails():
    def wrong(W):                                   # only the corner D = I
        A = np.asarray(W, dtype=float)
        qa, qc = -A[1, 0] ** 2 / 4, -A[0, 1] ** 2 / 4
        qb = (A[0, 0] - 1) * (A[1, 1] - 1) - A[0, 1] * A[1, 0] / 2
        r = np.sort(np.roots([qa, qb, qc]).real)
        return (max(r[0], 0.0), r[1])

    _fails_at("ex-ctr-diag", wrong, 1, "the C.2 matrix", "item 0")


def test_diag_metric_empty_as_nan_fails():
    def wrong(W):
        got = diag_metric_interval(W)
        return (math.nan, math.nan) if got is None else got

    _fails_at("ex-ctr-diag", wrong, 5, "Theorem 7", "your value is wrong")


def test_hierarchy_weight_ignoring_the_metrics_fails():
    def wrong(M1, lam1, M2, lam2, G, lam):          # gamma = ||G||, metrics forgotten
        G = np.atleast_2d(G)
        if not np.any(G):
            return 1.0
        return 4 * (lam1 - lam) * (lam2 - lam) / np.linalg.norm(G, 2) ** 2

    _fails_at("ex-ctr-hierarchy", wrong, 2, "M1 = diag(1, 4)")


def test_parameter_count_training_all_of_B_fails():
    def wrong(input_size, hidden_sizes, output_size, lower_only=True):
        return combo_net_num_params(input_size, hidden_sizes, output_size, lower_only=False)

    _fails_at("ex-ctr-params", wrong, 1, "hidden_sizes = [32] * 4", "expected 7690")


def test_parameter_count_for_equal_modules_only_fails():
    def wrong(input_size, hidden_sizes, output_size, lower_only=True):
        p, C = len(hidden_sizes), hidden_sizes[0]   # assumes all modules of size C
        n = p * C
        b = n * n - p * C * C
        return (b // 2 if lower_only else b) + input_size * n + n + n * output_size + output_size

    _fails_at("ex-ctr-params", wrong, 4, "hidden_sizes = [3, 5, 4]")


def test_euler_exercises_wrong_answers_fail():
    _fails_at("ex-ctr-skew-euler", lambda alpha, leak=1.0: math.sqrt(2 / alpha), 1, "alpha = 0.1")


def test_skew_euler_limit_with_the_leak_forgotten_fails():
    _fails_at("ex-ctr-skew-euler", lambda alpha, leak=1.0: math.sqrt(2 / alpha - 1), 3, "leak 0.5")

    def no_alpha_on_w(Wm, Lm, alpha, g=1.0):       # forgets that W enters through alpha too
        n = len(Wm)
        return (np.linalg.norm(np.eye(n) + alpha * (-np.eye(n) + Lm), 2)
                + g * np.linalg.norm(Wm, 2))
    _fails_at("ex-ctr-euler-bound", no_alpha_on_w, 2, "W = 0.5 I")

    def frobenius(Wm, Lm, alpha, g=1.0):            # the Frobenius norm is not the operator norm
        n = len(Wm)
        return (np.linalg.norm(np.eye(n) + alpha * (-np.eye(n) + Lm))
                + alpha * g * np.linalg.norm(Wm))
    _fails_at("ex-ctr-euler-bound", frobenius, 1, "W = L = 0")


def test_certified_feedback_wrong_answers_fail():
    import torch

    def euclidean(L, p, modules_norm, alpha, margin, g=1.0):  # ||L|| instead of ||L_M||
        omega = ((1 - margin - alpha * g * modules_norm) ** 2 - (1 - alpha) ** 2) ** 0.5 / alpha
        return L * torch.clamp(omega / torch.linalg.matrix_norm(L, ord=2), max=1.0)
    _fails_at("ex-ctr-certified-feedback", euclidean, 1, "a large feedback")

    def always_scaled(L, p, modules_norm, alpha, margin, g=1.0):  # scales up a small feedback too
        omega = ((1 - margin - alpha * g * modules_norm) ** 2 - (1 - alpha) ** 2) ** 0.5 / alpha
        s = p.sqrt()
        return L * omega / torch.linalg.matrix_norm(s[:, None] * L / s[None, :], ord=2)
    _fails_at("ex-ctr-certified-feedback", always_scaled, 2, "a small feedback")


def test_find_m_wrong_answers_fail():
    # the integral the paper describes (matrix exponentials) instead of the code's
    import rnnlab.theory as th
    _fails_at("ex-ctr-find-m", lambda W: list(np.diag(th.lyapunov_metric(np.abs(W) - np.eye(len(W))))),
              1, "W = [[0, 2], [-1, 0]]")
    _fails_at("ex-ctr-find-m", lambda W: [0.5] * len(W), 2, "W = [[0.5, 7], [-3, 0]]")
