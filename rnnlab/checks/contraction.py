"""The code exercises of the contraction chapter (book/contraction/), declared for rnnlab.checks.

Every reference answer is computed by the package itself (``rnnlab.theory``,
``rnnlab.models``): the exact vertex check ``rate_in_metric`` with a root
finder, Theorem 4's certificate, the hierarchy certificate, the parameter
count of ``SparseComboNet``. Only ``ex-ctr-flowchart`` solves SDPs (2 x 2
ones, through the package's certificates for Theorems 3 and 5).
"""
import math

import numpy as np

from .core import Case, exercise, hidden

_BOOK = "contraction/"


def _rotation(c):
    return np.array([[0.0, -c], [c, 0.0]])


def _tidy(x):
    """``x`` to 13 significant digits (and no negative zero): a failure message
    then shows 4.0, not the root finder's 3.9999999999999996."""
    return float(f"{x:.13g}") + 0.0


# ----------------------------------------------------------------- 01: one page

def _identity_rate(W):
    import rnnlab.theory as th

    W = np.asarray(W, dtype=float)
    return _tidy(th.rate_in_metric(W, np.eye(W.shape[0]))[0])


exercise(
    "ex-ctr-linear",
    answers=("rnnlab.theory.contraction:rate_in_metric",), fixed=True,
    notebook=_BOOK + "01_contraction_in_one_page",
    name="identity_rate",
    signature="identity_rate(W)",
    reference=_identity_rate,
    cases=lambda: [
        Case((_rotation(1.0),), show="W = [[0, -1], [1, 0]] (c = 1)"),
        Case((_rotation(2.0),), show="W = [[0, -2], [2, 0]] (c = 2)"),
        Case((_rotation(3.0),), show="W = [[0, -3], [3, 0]] (c = 3)"),
        Case((np.array([[-2.0]]),), show="W = [[-2]] (one unit, negative self-weight)"),
        Case((np.array([[0.5, 0.0, 0.0], [2.0, -1.0, 0.0], [0.0, 1.0, 0.3]]),),
             show="W = [[0.5, 0, 0], [2, -1, 0], [0, 1, 0.3]] (a chain of three units)"),
    ],
    hint="the rate is the worst one over every slope matrix D in the box; where in the box is "
         "the worst of a problem linear in D?",
    hints=("W D scales column j of W by D_jj; go through all 2^n corners, D = 0 and "
         "D = I included, and keep the smallest rate.",),
)


def _balancing_weight(W):
    W = np.asarray(W, dtype=float)
    return _tidy(-W[0, 1] / W[1, 0])


exercise(
    "ex-ctr-balance",
    notebook=_BOOK + "01_contraction_in_one_page",
    name="balancing_weight",
    signature="balancing_weight(W)",
    reference=_balancing_weight,
    difficulty=1,
    cases=lambda: [
        Case((np.array([[0.0, -1.0], [2.0, 0.0]]),), show="W = [[0, -1], [2, 0]]"),
        Case((np.array([[0.0, 3.0], [-0.5, 0.0]]),), show="W = [[0, 3], [-0.5, 0]]"),
        Case((np.array([[0.5, -0.2], [1.0, -1.0]]),),
             show="W = [[0.5, -0.2], [1, -1]] (self-weights too)"),
    ],
    hint="write out the off-diagonal entry of M J + J^T M with M = diag(1, p) and J = -I + W, "
         "and set it to zero.",
)


# ---------------------------------------------------- 03 and 04: the theorems

def _theorem4_eps(W, g=1.0):
    import rnnlab.theory as th

    return _tidy(th.certify_theorem4(np.asarray(W, dtype=float), g).details["eps"])


exercise(
    "ex-ctr-thm4",
    answers=("rnnlab.theory.theorems:certify_theorem4",),
    notebook=_BOOK + "03_diagonal_metrics",
    name="theorem4_eps",
    signature="theorem4_eps(W, g=1.0)",
    reference=_theorem4_eps,
    cases=lambda: [
        Case((np.array([[0.5, 0.0], [4.0, 0.5]]),), show="W = [[0.5, 0], [4, 0.5]], g = 1"),
        Case((np.array([[0.5, 0.0], [-2.0, -1.0]]),), show="W = [[0.5, 0], [-2, -1]], g = 1"),
        Case((np.array([[-1.0, 0.0], [3.0, -2.0]]),),
             show="W = [[-1, 0], [3, -2]], g = 1 (negative diagonal)"),
        Case((np.array([[2.0, 0.0], [4.0, 0.0]]), 0.25), show="W = [[2, 0], [4, 0]], g = 0.25"),
        Case((np.array([[0.5, 0.0], [0.1, 0.5]]),),
             show="W = [[0.5, 0], [0.1, 0.5]], g = 1 (weak coupling)"),
        Case((np.array([[0.5, 0.0], [0.0, 0.2]]),),
             show="W = [[0.5, 0], [0, 0.2]], g = 1 (no coupling)"),
    ],
    hint="follow the proof of Theorem 4 with eps as the unknown: which norm must stay below "
         "delta / 2 (the margin delta), and how does it grow with eps?",
    hints=("the proof needs g ||N_eps|| <= delta / 2; a negative diagonal entry does not "
         "lower delta, and eps may not exceed 1.",),
    fixed=True,
)


def _theorem1_abscissa(W, g=1.0):
    import rnnlab.theory as th

    return _tidy(th.certify_theorem1(np.asarray(W, dtype=float), g).details["spectral_abscissa"])


exercise(
    "ex-ctr-thm1-scratch",
    answers=("rnnlab.theory.theorems:certify_theorem1",),
    notebook=_BOOK + "03_diagonal_metrics",
    name="theorem1_abscissa",
    signature="theorem1_abscissa(W, g=1.0)",
    reference=_theorem1_abscissa,
    cases=lambda: [
        Case((np.array([[0.0, 0.3], [2.0, 0.0]]),), show="W = [[0, 0.3], [2, 0]], g = 1"),
        Case((np.array([[0.0, -0.2], [4.0, 0.0]]),), show="W = [[0, -0.2], [4, 0]], g = 1 (the first page's example)"),
        Case((np.array([[-2.0, 0.8], [0.9, 0.0]]),), show="W = [[-2, 0.8], [0.9, 0]], g = 1 (a negative self-weight)"),
        Case((np.array([[0.5, 0.0], [3.0, 0.2]]), 0.25), show="W = [[0.5, 0], [3, 0.2]], g = 0.25"),
        Case((_rotation(3.0),), show="W = [[0, -3], [3, 0]], g = 1 (Theorem 1 fails)"),
    ],
    hint="take |W| entry by entry, set a diagonal entry to 0 where W_ii <= 0, multiply by g, "
         "subtract I, and return the largest real part of the eigenvalues.",
)


def _scaled_norm(W, p):
    """||P^1/2 W P^-1/2||_2 for P = diag(p), by the package's Theorem 5 helper."""
    from ..theory.theorems import _scaled_norm as scaled

    return _tidy(scaled(np.asarray(W, dtype=float), np.asarray(p, dtype=float)))


_CHAIN = np.array([[0.0, 0.3, 0.0], [2.0, 0.0, 0.1], [0.0, -3.0, 0.0]])

exercise(
    "ex-ctr-lmi-numpy",
    answers=("rnnlab.theory.theorems:_scaled_norm",),
    notebook=_BOOK + "03_diagonal_metrics",
    name="scaled_norm",
    signature="scaled_norm(W, p)",
    reference=_scaled_norm,
    difficulty=2,
    cases=lambda: [
        Case((_CHAIN, np.array([1.0, 0.15, 0.005])),
             show="the chain W_chain, p = (1, 0.15, 0.005) (its Perron metric)"),
        Case((_CHAIN, np.ones(3)), show="the chain W_chain, p = (1, 1, 1): its plain norm"),
        Case((np.array([[0.0, 3.0], [0.1, 0.0]]), np.array([1.0, 30.0])),
             show="the loop W = [[0, 3], [0.1, 0]], p = (1, 30)"),
    ],
    hint="P^1/2 W P^-1/2 has the entries sqrt(p_i) W_ij / sqrt(p_j); return its spectral norm "
         "(np.linalg.norm(..., 2)).",
)


_SIGN_GRID = {"W_a": ((0.5, 0.8), (-0.8, 0.5)), "W_b": ((0.5, -0.8), (-0.8, 0.5))}


def _sign_grid(name):
    """(feed-forward, magnitudes, small gain after rescaling) for W_a or W_b of the page, g = 1."""
    import rnnlab.theory as th

    W = np.array(_SIGN_GRID[name])
    return (bool(th.certify_theorem4(W).holds),
            bool(th.certify_theorem1(W).holds),
            bool(th.certify_theorem5(W, optimize_rate=False).holds))


exercise(
    "ex-ctr-sign-grid",
    notebook=_BOOK + "03_diagonal_metrics",
    name="verdicts",
    signature="verdicts(name)",
    reference=_sign_grid,
    difficulty=1,
    cases=lambda: [
        Case(("W_a",), show='name = "W_a", W_a = [[0.5, 0.8], [-0.8, 0.5]]'),
        Case(("W_b",), show='name = "W_b", W_b = [[0.5, -0.8], [-0.8, 0.5]]'),
    ],
    hint="both have the same |W|; is either triangular? Then count the negative entries on the "
         "row-column cycle through all four entries.",
    hints=("an even cycle: flipping row 2 and column 2 turns the matrix into |W|, whose scaled "
           "norms are at least rho(|W|). An odd one: try P = I first.",),
)


def _metric_distances(W, P, xa, xb, u, dt=0.01, steps=2000):
    """The distance in the metric P between two ReLU-network states after each of ``steps`` Euler
    steps of x' = -x + W relu(x) + u(t), the start included: ``steps + 1`` values."""
    W, P = np.asarray(W, dtype=float), np.asarray(P, dtype=float)
    xa, xb = np.array(xa, dtype=float), np.array(xb, dtype=float)
    out = []
    for k in range(steps + 1):
        d = xa - xb
        out.append(np.sqrt(d @ P @ d))
        u_k = np.asarray(u(k * dt), dtype=float)
        xa = xa + dt * (-xa + W @ np.maximum(xa, 0) + u_k)
        xb = xb + dt * (-xb + W @ np.maximum(xb, 0) + u_k)
    return np.array(out)


def _drive(n, seed):
    import rnnlab.theory as th

    return th.piecewise_input(n, T=20.0, seed=seed)


exercise(
    "ex-ctr-thm1-sim",
    notebook=_BOOK + "03_diagonal_metrics",
    name="metric_distances",
    signature="metric_distances(W, P, xa, xb, u, dt=0.01, steps=2000)",
    reference=_metric_distances,
    difficulty=2,
    cases=lambda: [
        Case((np.array([[0.0, 0.3], [2.0, 0.0]]), np.eye(2), [2.0, -1.0], [-1.0, 3.0],
              _drive(2, 0)), {"steps": 200},
             show="the page's W = [[0, 0.3], [2, 0]], P = I, from (2, -1) and (-1, 3), "
                  "u = drive(2), 200 steps"),
        Case((np.array([[0.0, 0.3], [2.0, 0.0]]), np.diag([1.0, 0.2]), [2.0, -1.0],
              [-1.0, 3.0], _drive(2, 0)), {"steps": 200},
             show="the same with P = diag(1, 0.2)"),
        Case((np.array([[0.5, 0.0], [4.0, 0.5]]), np.diag([1.0, 0.01]), [1.0, 1.0],
              [0.0, -1.0], lambda t: np.zeros(2)), {"dt": 0.05, "steps": 40},
             show="W = [[0.5, 0], [4, 0.5]], P = diag(1, 0.01), no input, dt = 0.05, 40 steps"),
    ],
    hint="one Euler step is x <- x + dt (-x + W max(x, 0) + u(k dt)), the same input for both "
         "states; record sqrt(d^T P d) with d = xa - xb before each step and once after the last.",
    rtol=1e-8,
)


def _flowchart_leaf(W, g=1.0):
    from .. figures.contraction_lessons import flowchart_route

    return int(flowchart_route(np.asarray(W, dtype=float), g))


_FLOW_CASES = [
    (((0.4, -0.6), (0.6, 0.4)), 1.0, "W = 0.72 x a rotation, [[0.4, -0.6], [0.6, 0.4]], g = 1"),
    (((-1.0, 2.0), (-2.0, -1.0)), 1.0, "W = [[-1, 2], [-2, -1]], g = 1"),
    (((0.5, 0.2), (0.2, -3.0)), 1.0, "W = [[0.5, 0.2], [0.2, -3]], g = 1 (symmetric)"),
    (((1.5, 0.0), (0.0, 0.0)), 1.0, "W = [[1.5, 0], [0, 0]], g = 1 (symmetric, singular)"),
    (((0.0, 0.5), (0.8, 0.0)), 1.0, "W = [[0, 0.5], [0.8, 0]], g = 1"),
    (((-2.0, -0.75), (-3.0, -2.0)), 1.0, "W = [[-2, -0.75], [-3, -2]], g = 1"),
    (((0.4, 0.4), (0.4, 0.4)), 1.0, "W = [[0.4, 0.4], [0.4, 0.4]], g = 1 (symmetric, singular)"),
    (((0.4, -0.6), (0.6, 0.4)), 1.5, "W = [[0.4, -0.6], [0.6, 0.4]], g = 1.5"),
]


exercise(
    "ex-ctr-flowchart",
    answers=("rnnlab.figures.contraction_lessons:flowchart_route",),
    notebook=_BOOK + "04_full_metrics",
    name="flowchart_leaf",
    signature="flowchart_leaf(W, g=1.0)",
    reference=_flowchart_leaf,
    difficulty=2,
    cases=lambda: [Case((np.array(W), g), show=show) for W, g, show in _FLOW_CASES],
    hint="ask the questions in the flowchart's order and stop at the first yes: symmetric "
         "(then -2 if g lambda_max >= 1, 2 if W is also invertible, else go on), then Theorems "
         "1, 3 and 5 with th.certify_theorem1/3/5(W, ...).holds; 0 if none holds.",
)


# ----------------------------------------------------------------- 03: counterexamples

def _corner_growth(W):
    """Every ReLU corner d -> the largest eigenvalue of the symmetric part of -I + W diag(d)."""
    import itertools

    W = np.asarray(W, dtype=float)
    n = W.shape[0]
    out = {}
    for d in itertools.product((0, 1), repeat=n):
        J = -np.eye(n) + W * np.asarray(d, dtype=float)[None, :]
        out[d] = _tidy(np.linalg.eigvalsh((J + J.T) / 2).max())
    return out


exercise(
    "ex-ctr-corner-growth",
    notebook=_BOOK + "05_counterexamples",
    name="corner_growth",
    signature="corner_growth(W)",
    reference=_corner_growth,
    difficulty=1,
    cases=lambda: [
        Case((np.array([[-9.0, 2.5], [2.5, 0.0]]),),
             show="W = [[-9, 2.5], [2.5, 0]] (the counterexample after Theorem 1)"),
        Case((_rotation(3.0),), show="W = [[0, -3], [3, 0]] (Theorem 7's rotation, c = 3)"),
        Case((np.array([[0.5, 0.0, 0.0], [2.0, -1.0, 0.0], [0.0, 1.0, 0.3]]),),
             show="W = [[0.5, 0, 0], [2, -1, 0], [0, 1, 0.3]]"),
    ],
    hint="D = diag(d) scales column j of W by d_j; the symmetric part of J is (J + J^T) / 2, "
         "and np.linalg.eigvalsh gives its eigenvalues.",
)


def _period_radius(c, t):
    """rho(Phi) for the kicked loop of the ReLU rotation: Phi = e^{A2 t} e^{A1 t}, A_k = -I + W D_k,
    D1 = diag(1, 0), D2 = diag(0, 1), from scipy's matrix exponential."""
    import scipy.linalg

    W = _rotation(c)
    A1 = -np.eye(2) + W * np.array([1.0, 0.0])[None, :]
    A2 = -np.eye(2) + W * np.array([0.0, 1.0])[None, :]
    Phi = scipy.linalg.expm(t * A2) @ scipy.linalg.expm(t * A1)
    return _tidy(np.abs(np.linalg.eigvals(Phi)).max())


exercise(
    "ex-ctr-kicked-loop",
    notebook=_BOOK + "05_counterexamples",
    name="period_radius",
    signature="period_radius(c, t)",
    reference=_period_radius,
    difficulty=2,
    cases=lambda: [
        Case((4.0, 1.0), show="c = 4, t = 1 (the page's kicked loop)"),
        Case((2.5, 1.0), show="c = 2.5, t = 1"),
        Case((3.0, 1.2), show="c = 3, t = 1.2 (just below the two-phase threshold)"),
        Case((1.0, 1.0), show="c = 1, t = 1 (|tr Q| <= 2)"),
        Case((4.0, 0.3), show="c = 4, t = 0.3"),
    ],
    hint="Phi = e^{-2t} Q with Q = (I + t W D2)(I + t W D1); Q has determinant 1, so its "
         "eigenvalues are fixed by its trace.",
    hints=("tr Q = 2 - c^2 t^2. If |tr Q| <= 2 both eigenvalues of Q have modulus 1; otherwise the "
           "larger has modulus (|tr Q| + sqrt(tr Q^2 - 4)) / 2.",),
    rtol=1e-8,
)


def _growing_holds(c):
    """The equal holds t for which the kicked loop grows (rho(Phi) > 1), from _period_radius
    (scipy's matrix exponential): scan t, then locate the ends of the run with brentq."""
    import scipy.optimize

    def log_rho(t):
        return math.log(_period_radius(c, t))

    grid = np.linspace(1e-3, 20.0, 4001)
    up = np.array([log_rho(t) > 0 for t in grid])
    if not up.any():
        return None
    i, j = np.flatnonzero(up)[[0, -1]]
    if not up[i:j + 1].all() or i == 0 or j == len(grid) - 1:
        raise ValueError("the growing holds do not form one interval inside the grid")
    kw = dict(xtol=1e-14, rtol=1e-13)
    return (_tidy(scipy.optimize.brentq(log_rho, grid[i - 1], grid[i], **kw)),
            _tidy(scipy.optimize.brentq(log_rho, grid[j], grid[j + 1], **kw)))


exercise(
    "ex-ctr-break-it",
    notebook=_BOOK + "05_counterexamples",
    name="growing_holds",
    signature="growing_holds(c)",
    reference=_growing_holds,
    difficulty=2,
    cases=lambda: [
        Case((3.5,), show="c = 3.5"),
        Case((4.0,), show="c = 4 (the page's kicked loop)"),
        Case((2.9,), show="c = 2.9 (no equal holds grow)"),
        Case((3.05,), show="c = 3.05, just above the two-phase threshold"),
        Case((8.0,), show="c = 8"),
    ],
    hint="with equal holds t, rho(Phi) > 1 exactly when c t > 2 cosh t (the fold 'Why two-phase "
         "loops need c > 3.02'); the holds that grow lie between the two roots of c t = 2 cosh t.",
    hints=("2 cosh t / t is smallest where t tanh t = 1; if c is not above that minimum return "
           "None, else find one root on each side of it with scipy.optimize.brentq.",),
    rtol=1e-7,
    atol=1e-9,
)


def _identity_threshold(eps, k=1.0):
    import scipy.optimize

    import rnnlab.theory as th

    corners = th.slope_vertices(2, 1.0, lo=eps)

    def rate(c):
        return th.rate_in_metric(np.array([[0.0, -c], [k * c, 0.0]]), np.eye(2), slopes=corners)[0]

    return _tidy(scipy.optimize.brentq(rate, 0.0, 1e6, xtol=1e-13, rtol=1e-14))


exercise(
    "ex-ctr-identity",
    notebook=_BOOK + "05_counterexamples",
    name="identity_threshold",
    signature="identity_threshold(eps, k=1.0)",
    reference=_identity_threshold,
    cases=lambda: [
        Case((0.0,), show="eps = 0 (ReLU), k = 1"),
        Case((0.5,), show="eps = 0.5, k = 1"),
        Case((0.25,), show="eps = 0.25, k = 1"),
        Case((0.0, 2.0), show="eps = 0, k = 2 (the weight 1 -> 2 twice the other)"),
        Case((0.5, 0.25), show="eps = 0.5, k = 0.25"),
        Case((0.9, 3.0), show="eps = 0.9, k = 3"),
    ],
    hint="the identity is a contraction metric while the symmetric part of W D - I is negative"
         " definite at every corner D of the box of slopes.",
    hints=("the diagonal of W D is zero, so at each corner the symmetric part of W D has "
         "eigenvalues +-|s| with s its off-diagonal entry; the identity works while every "
         "|s| is below the leak, 1. Check all four corners of [eps, 1]^2.",),
    fixed=True,
    rtol=1e-8,
)


def _diag_metric_interval(W):
    """The open interval of p > 0 for which diag(1, p) is a metric, from the
    exact vertex check (rate_in_metric) and a root finder: scan p on a
    logarithmic grid, then locate the ends of the feasible run with brentq.
    The set is an interval because the conditions are linear matrix
    inequalities in p."""
    import scipy.optimize

    import rnnlab.theory as th

    W = np.asarray(W, dtype=float)

    def rate(p):
        return th.rate_in_metric(W, np.array([1.0, p]))[0]

    grid = np.logspace(-8, 8, 321)
    ok = np.array([rate(p) > 0 for p in grid])
    if not ok.any():
        return None
    i, j = np.flatnonzero(ok)[[0, -1]]
    if not ok[i:j + 1].all():
        raise ValueError("the feasible p do not form one interval on the grid")
    kw = dict(xtol=1e-15, rtol=1e-13)
    lo = 0.0 if i == 0 else scipy.optimize.brentq(rate, grid[i - 1], grid[i], **kw)
    hi = math.inf if j == len(grid) - 1 else scipy.optimize.brentq(rate, grid[j], grid[j + 1], **kw)
    return (_tidy(lo), _tidy(hi))


exercise(
    "ex-ctr-diag",
    notebook=_BOOK + "05_counterexamples",
    name="diag_metric_interval",
    signature="diag_metric_interval(W)",
    reference=_diag_metric_interval,
    cases=lambda: [
        Case((np.array([[-9.0, 2.5], [2.5, 0.0]]),),
             show="W = [[-9, 2.5], [2.5, 0]] (the C.2 matrix)"),
        Case((_rotation(1.0),), show="W = [[0, -1], [1, 0]]"),
        Case((np.array([[0.0, 0.0], [6.0, 0.0]]),), show="W = [[0, 0], [6, 0]] (one link, 1 -> 2)"),
        Case((np.array([[0.0, 6.0], [0.0, 0.0]]),), show="W = [[0, 6], [0, 0]] (one link, 2 -> 1)"),
        Case((_rotation(3.0),), show="W = [[0, -3], [3, 0]] (Theorem 7: no constant metric)"),
    ],
    hint="a constant metric works for every slope iff it works at the four corners D of the "
         "box (prop-ctr-vertices): write the condition at each corner as inequalities in p.",
    hints=("at each of the four corners D, X = (P W D)_sym - P is 2 x 2: negative definite iff "
         "its (1, 1) entry is negative and its determinant positive; intersect the p-intervals "
         "(lo = 0.0 or hi = math.inf where a side is unbounded, None when empty).",),
    fixed=True,
    rtol=1e-7,
    atol=1e-9,
)


# ----------------------------------------------------------------- 04: networks of networks

def _skew_feedback(B, p):
    """L = B - M^-1 B^T M for M = diag(p), by the package."""
    import rnnlab.theory as th

    return np.asarray(th.feedback_matrix(np.asarray(B, dtype=float), np.asarray(p, dtype=float)),
                      dtype=float)


exercise(
    "ex-ctr-skew-feedback",
    notebook=_BOOK + "06_networks_of_networks",
    name="skew_feedback",
    signature="skew_feedback(B, p)",
    reference=_skew_feedback,
    difficulty=1,
    cases=lambda: [
        Case((np.array([[0.0, 0.0], [2.0, 0.0]]), np.array([1.0, 4.0])),
             show="B = [[0, 0], [2, 0]], p = [1, 4]"),
        Case((np.array([[0.0, 1.0, 0.0], [-2.0, 0.0, 0.5], [3.0, 1.0, 0.0]]),
              np.array([1.0, 0.5, 2.0])),
             show="B = [[0, 1, 0], [-2, 0, 0.5], [3, 1, 0]], p = [1, 0.5, 2]"),
        Case((np.array([[1.0, 2.0], [3.0, 4.0]]), np.ones(2)),
             show="B = [[1, 2], [3, 4]], p = [1, 1] (M = I: L = B - B^T)"),
    ],
    hint="M^-1 B^T M has entry (i, j) equal to B_ji p_j / p_i.",
)


def _euler_step_limit(B, p):
    """The largest Euler step at which the all-off step (1 - alpha) I + alpha L_M contracts."""
    p = np.asarray(p, dtype=float)
    s = np.sqrt(p)
    L = _skew_feedback(B, p)                     # the package's L = B - M^-1 B^T M
    omega = np.linalg.norm(s[:, None] * L / s[None, :], 2)
    return _tidy(2.0 / (1.0 + omega**2))


exercise(
    "ex-ctr-euler-limit",
    notebook=_BOOK + "06_networks_of_networks",
    name="euler_step_limit",
    signature="euler_step_limit(B, p)",
    reference=_euler_step_limit,
    difficulty=2,
    cases=lambda: [
        Case((np.array([[0.0, 0.0], [3.0, 0.0]]), np.array([1.0, 1.0])),
             show="B = [[0, 0], [3, 0]], p = [1, 1] (omega = 3)"),
        Case((np.array([[0.0, 0.0], [3.0, 0.0]]), np.array([1.0, 4.0])),
             show="B = [[0, 0], [3, 0]], p = [1, 4] (the metric rescales the link)"),
        Case((np.array([[0.0, 1.0, 0.0], [-2.0, 0.0, 0.5], [3.0, 1.0, 0.0]]),
              np.array([1.0, 0.5, 2.0])),
             show="B = [[0, 1, 0], [-2, 0, 0.5], [3, 1, 0]], p = [1, 0.5, 2]"),
        Case((np.array([[1.0, 2.0], [2.0, 1.0]]), np.ones(2)),
             show="B = [[1, 2], [2, 1]], p = [1, 1] (symmetric in M: L = 0, limit 2)"),
    ],
    hint="in z = M^1/2 x the all-off step is (1 - alpha) I + alpha L_M with L_M skew-symmetric: "
         "its eigenvalues 1 - alpha +- i alpha omega_k; when is their modulus below 1?",
    hints=("L = B - M^-1 B^T M; L_M = M^1/2 L M^-1/2 has entries L_ij sqrt(p_i / p_j); "
           "omega = ||L_M||_2; the step contracts iff (1 - alpha)^2 + alpha^2 omega^2 < 1, "
           "i.e. alpha < 2 / (1 + omega^2).",),
)


def _hierarchy_weight(M1, lam1, M2, lam2, G, lam):
    """The weight certify_hierarchy gives the second of two modules."""
    import rnnlab.theory as th

    M1, M2, G = (np.atleast_2d(np.asarray(a, dtype=float)) for a in (M1, M2, G))
    n1, n2 = M1.shape[0], M2.shape[0]
    certs = [th.Certificate("module", True, M, float(r), float(r), "given")
             for M, r in ((M1, lam1), (M2, lam2))]
    L = np.zeros((n1 + n2, n1 + n2))
    L[n1:, :n1] = G
    fraction = lam / min(lam1, lam2)
    h = th.certify_hierarchy([np.zeros((n1, n1)), np.zeros((n2, n2))], certs, L, fraction=fraction)
    return _tidy(h.details["weights"][1])


def _hierarchy_cases():
    M1 = np.array([[2.0, 0.5], [0.5, 1.0]])                   # a full (non-diagonal) metric
    G = np.array([[1.0, 0.0], [0.5, -1.0], [2.0, 1.0]])
    return [
        Case((np.eye(1), 1.0, np.eye(1), 0.5, np.array([[2.0]]), 0.25),
             show="M1 = M2 = [[1]], lam1 = 1, lam2 = 0.5, G = [[2]], lam = 0.25"),
        Case((np.diag([1.0, 4.0]), 0.8, np.diag([2.0, 0.5]), 0.6,
              np.array([[1.0, -1.0], [0.5, 2.0]]), 0.3),
             show="M1 = diag(1, 4), lam1 = 0.8, M2 = diag(2, 0.5), lam2 = 0.6, "
                  "G = [[1, -1], [0.5, 2]], lam = 0.3"),
        Case((M1, 0.4, np.diag([1.0, 2.0, 3.0]), 1.0, G, 0.1),
             show="M1 = [[2, 0.5], [0.5, 1]], lam1 = 0.4, M2 = diag(1, 2, 3), lam2 = 1, "
                  "G = [[1, 0], [0.5, -1], [2, 1]] (3 x 2), lam = 0.1"),
        Case((np.eye(1), 0.3, np.eye(1), 0.3, np.array([[1e-3]]), 0.15),
             show="M1 = M2 = [[1]], lam1 = lam2 = 0.3, G = [[0.001]] (weak coupling), lam = 0.15"),
        Case((np.eye(2), 1.0, np.eye(2), 1.0, np.zeros((2, 2)), 0.5),
             show="M1 = M2 = I (2 x 2), lam1 = lam2 = 1, G = 0 (no coupling), lam = 0.5"),
    ]


exercise(
    "ex-ctr-hierarchy",
    answers=("rnnlab.theory.assembly:certify_hierarchy",),
    notebook=_BOOK + "06_networks_of_networks",
    name="hierarchy_weight",
    signature="hierarchy_weight(M1, lam1, M2, lam2, G, lam)",
    reference=_hierarchy_weight,
    cases=_hierarchy_cases,
    hint="gamma = ||M2^{1/2} G M1^{-1/2}||_2 (spectral norm, symmetric square roots); "
         "k = 4 (lam1 - lam)(lam2 - lam) / gamma^2, and 1.0 when G = 0.",
    rtol=1e-8,
)


def _combo_net_num_params(input_size, hidden_sizes, output_size, lower_only=True):
    """Counted on the model itself. The modules' weights do not change the count,
    so they are sampled with tiny entries (every draw meets Theorem 1 at once);
    torch's global random state, which initialises the trained weights, is left
    as it was."""
    import torch

    from rnnlab.models import SparseComboNet

    with torch.random.fork_rng(devices=[]):
        net = SparseComboNet(input_size, list(hidden_sizes), output_size, lower_only=lower_only,
                             scalar=1e-3, seed=0)
    return sum(p.numel() for p in net.parameters() if p.requires_grad)


exercise(
    "ex-ctr-params",
    answers=("rnnlab.models.combo_modules:sparse_combo_net_num_params",),
    notebook=_BOOK + "06_networks_of_networks",
    name="combo_net_num_params",
    signature="combo_net_num_params(input_size, hidden_sizes, output_size, lower_only=True)",
    reference=_combo_net_num_params,
    cases=lambda: [
        Case((1, [32] * 4, 10), show="input_size = 1, hidden_sizes = [32] * 4, output_size = 10"),
        Case((3, [16] * 6, 10), {"lower_only": False},
             show="input_size = 3, hidden_sizes = [16] * 6, output_size = 10, lower_only = False"),
        Case((2, [8], 1), show="input_size = 2, hidden_sizes = [8] (one module), output_size = 1"),
        Case((2, [3, 5, 4], 4), show="input_size = 2, hidden_sizes = [3, 5, 4], output_size = 4"),
        Case((2, [3, 5, 4], 4), {"lower_only": False},
             show="input_size = 2, hidden_sizes = [3, 5, 4], output_size = 4, lower_only = False"),
    ],
    hint="B has n^2 - sum(C_k^2) off-diagonal-block entries (n = sum of the module sizes), "
         "half of them below the diagonal; add the input and output layers' weights and biases.",
)


# ----------------------------------------------------------------- 05: training combo nets

def _skew_euler_limit(alpha, leak=1.0):
    """The largest omega for which one Euler step of x' = (-leak + i omega) x shrinks |x|."""
    return _tidy(math.sqrt(max(0.0, 2.0 * leak / alpha - leak**2)))


exercise(
    "ex-ctr-skew-euler",
    notebook=_BOOK + "07_training_combo_nets",
    name="skew_euler_limit",
    signature="skew_euler_limit(alpha, leak=1.0)",
    reference=_skew_euler_limit,
    cases=lambda: [
        Case((0.1,), show="alpha = 0.1, leak 1 (the Combo Nets' Euler step)"),
        Case((1.0,), show="alpha = 1, leak 1"),
        Case((0.1, 0.5), show="alpha = 0.1, leak 0.5 (a slower unit)"),
        Case((0.01, 2.0), show="alpha = 0.01, leak 2"),
        Case((0.5, 5.0), show="alpha = 0.5, leak 5 (a step too long even without rotation)"),
    ],
    hint='one Euler step multiplies x by a complex number: when is its modulus below 1?',
    hints=("one step multiplies x by 1 + alpha (-leak + i omega); it shrinks |x| when "
         "(1 - alpha leak)^2 + alpha^2 omega^2 < 1; when no omega >= 0 works, return 0.",),
    fixed=True,
)


def _euler_norm_bound(Wm, Lm, alpha, g=1.0):
    """The bound of rnnlab.theory.combo_net_report on one Euler step's norm in the metric."""
    Wm, Lm = np.asarray(Wm, dtype=float), np.asarray(Lm, dtype=float)
    n = Wm.shape[0]
    A0 = np.eye(n) + alpha * (-np.eye(n) + Lm)
    return _tidy(np.linalg.norm(A0, 2) + alpha * g * np.linalg.norm(Wm, 2))


def _euler_cases():
    rng = np.random.default_rng(5)
    S = rng.normal(size=(4, 4))
    skew = S - S.T
    W = rng.normal(size=(4, 4)) * 0.2
    return [
        Case((np.zeros((2, 2)), np.zeros((2, 2)), 0.1), show="W = L = 0, alpha = 0.1"),
        Case((0.5 * np.eye(3), np.zeros((3, 3)), 0.2), show="W = 0.5 I, L = 0, alpha = 0.2"),
        Case((W, skew, 0.1), show="random W (4x4), skew-symmetric L, alpha = 0.1"),
        Case((W, skew, 0.1, 0.25), show="the same with g = 0.25"),
        Case((W, S, 0.3), show="random W, L not skew, alpha = 0.3"),
    ]


exercise(
    "ex-ctr-euler-bound",
    notebook=_BOOK + "07_training_combo_nets",
    name="euler_norm_bound",
    signature="euler_norm_bound(Wm, Lm, alpha, g=1.0)",
    reference=_euler_norm_bound,
    cases=_euler_cases,
    hint="split one step's Jacobian into I + alpha (-I + Lm), which does not depend on D, "
         "and alpha Wm D; bound the second with ||D|| <= g (spectral norms, np.linalg.norm(A, 2)).",
    rtol=1e-8,
)


def _certified_feedback(L, p, modules_norm, alpha, margin, g=1.0):
    """euler_margin's feedback: L * min(1, omega / ||M^1/2 L M^-1/2||), M = diag(p), where omega solves
    sqrt((1 - alpha)^2 + alpha^2 omega^2) + alpha g K = 1 - margin (K = modules_norm)."""
    L = np.asarray(L.detach().cpu() if hasattr(L, "detach") else L, dtype=float)
    s = np.sqrt(np.asarray(p.detach().cpu() if hasattr(p, "detach") else p, dtype=float))
    omega = math.sqrt((1.0 - margin - alpha * g * modules_norm) ** 2 - (1.0 - alpha) ** 2) / alpha
    size = np.linalg.norm(s[:, None] * L / s[None, :], 2)
    return L * min(1.0, omega / size) if size > 0 else L.copy()


def _skew_in_metric(rng, p, scale):
    import torch

    B = rng.normal(size=(len(p), len(p))) * scale
    L = B - B.T * np.asarray(p)[None, :] / np.asarray(p)[:, None]  # M L + L^T M = 0
    return torch.tensor(L, dtype=torch.float64), torch.tensor(p, dtype=torch.float64)


def _feedback_cases():
    rng = np.random.default_rng(11)
    p = [1.0, 2.0, 0.5, 4.0]
    big, small = _skew_in_metric(rng, p, 3.0), _skew_in_metric(rng, p, 0.01)
    zero = (0 * big[0], big[1])
    return [
        Case((*big, 0.76, 0.1, 0.01), show="a large feedback (4x4), M = diag(1, 2, 0.5, 4), "
             "K = 0.76, alpha = 0.1, margin = 0.01: scaled down"),
        Case((*small, 0.76, 0.1, 0.01), show="a small feedback, the same M, K, alpha, margin: unchanged"),
        Case((*zero, 0.76, 0.1, 0.01), show="L = 0: unchanged"),
        Case((*big, 2.0, 0.05, 0.005), {"g": 0.25},
             show="the large feedback, K = 2, alpha = 0.05, margin = 0.005, g = 0.25"),
    ]


exercise(
    "ex-ctr-certified-feedback",
    notebook=_BOOK + "08_keeping_the_certificate",
    name="certified_feedback",
    signature="certified_feedback(L, p, modules_norm, alpha, margin, g=1.0)",
    reference=_certified_feedback,
    cases=_feedback_cases,
    difficulty=2,
    hint="solve the page's Euler certificate for the largest allowed ||L_M|| (omega); "
         "L_M = M^1/2 L M^-1/2 with M = diag(p); scale L by min(1, omega / ||L_M||_2).",
    rtol=1e-8,
)


def _find_m_diagonal(W):
    """The diagonal that the public code's find_M returns, in closed form."""
    d = np.abs(np.diag(np.asarray(W, dtype=float)))
    return [_tidy(0.5 / (1.0 - v)) for v in d]


exercise(
    "ex-ctr-find-m",
    notebook=_BOOK + "09_reproducing",
    name="find_m_diagonal",
    signature="find_m_diagonal(W)",
    reference=_find_m_diagonal,
    cases=lambda: [
        Case((np.array([[0.0, 2.0], [-1.0, 0.0]]),), show="W = [[0, 2], [-1, 0]]"),
        Case((np.array([[0.5, 7.0], [-3.0, 0.0]]),), show="W = [[0.5, 7], [-3, 0]]"),
        Case((np.array([[-0.75, 0.1, 0.0], [0.0, 0.2, 0.0], [9.0, 9.0, 0.0]]),),
             show="W = [[-0.75, 0.1, 0], [0, 0.2, 0], [9, 9, 0]]"),
        Case((np.zeros((4, 4)),), show="W = 0 (4x4)"),
    ],
    hint="np.exp and * act entry by entry: entry (i, i) of the integrand is "
         "exp((|W_ii| - 1) t) * 1 * exp((|W_ii| - 1) t); integrate from 0 to infinity.",
    rtol=1e-8,
)


# ----------------------------------------------------------------- hidden cases (python -m rnnlab grade)
# Drawn with the teacher's seeded NumPy generator; the same shapes and ranges as the public cases.

@hidden("ex-ctr-linear")
def _identity_rate_hidden(rng):
    return [Case((_rotation(float(rng.uniform(0.5, 4.0))),)), Case((rng.normal(size=(2, 2)),)),
            Case((np.tril(rng.normal(size=(3, 3))),))]


@hidden("ex-ctr-balance")
def _balance_hidden(rng):
    a, b = rng.uniform(0.1, 5.0, 2)
    return [Case((np.array([[0.0, -a], [b, 0.0]]),)),
            Case((np.array([[rng.uniform(-1, 1), a], [-b, rng.uniform(-1, 1)]]),))]


@hidden("ex-ctr-thm4")
def _theorem4_hidden(rng):
    cases = []
    for g in (1.0, float(rng.uniform(0.2, 0.9))):
        d = rng.uniform(-1.0, 0.8, 2)
        cases.append(Case((np.array([[d[0], 0.0], [rng.uniform(-4, 4), d[1]]]), g)))
    return cases


# ex-ctr-flowchart has no hidden cases: its answer is one of six leaves, and the public cases
# already reach all six, so no hidden case could have an answer that differs from every public
# one (tests/test_grade_judge.py asks that of every hidden generator).


@hidden("ex-ctr-thm1-scratch")
def _theorem1_scratch_hidden(rng):
    return [Case((rng.normal(size=(2, 2)),)), Case((rng.normal(size=(3, 3)), float(rng.uniform(0.2, 1.0))))]


# ex-ctr-sign-grid has no hidden cases: it asks for the verdicts on the two matrices of the page.


@hidden("ex-ctr-thm1-sim")
def _thm1_sim_hidden(rng):
    W, p = rng.normal(size=(2, 2)), rng.uniform(0.1, 2.0, 2)
    x0 = rng.normal(size=(2, 2))
    return [Case((W, np.diag(p), x0[0], x0[1], _drive(2, int(rng.integers(1, 100)))),
                 {"steps": 150})]


@hidden("ex-ctr-corner-growth")
def _corner_growth_hidden(rng):
    return [Case((rng.normal(size=(2, 2)) * 3,)), Case((rng.normal(size=(3, 3)) * 2,))]


@hidden("ex-ctr-euler-limit")
def _euler_limit_hidden(rng):
    n = int(rng.integers(2, 6))
    return [Case((rng.normal(size=(n, n)) * float(rng.uniform(0.1, 5.0)), rng.uniform(0.2, 5.0, n)))]


@hidden("ex-ctr-skew-feedback")
def _skew_feedback_hidden(rng):
    n = int(rng.integers(2, 6))
    return [Case((rng.normal(size=(n, n)), rng.uniform(0.2, 5.0, n)))]


@hidden("ex-ctr-kicked-loop")
def _period_radius_hidden(rng):
    return [Case((float(rng.uniform(1.0, 5.0)), float(rng.uniform(0.2, 2.0)))) for _ in range(2)]


@hidden("ex-ctr-identity")
def _identity_threshold_hidden(rng):
    return [Case((float(e),)) for e in rng.uniform(0.05, 0.95, 2)] + [
        Case((float(rng.uniform(0.0, 0.9)), float(rng.uniform(0.1, 4.0))))]


@hidden("ex-ctr-diag")
def _diag_hidden(rng):
    return [Case((_rotation(float(rng.uniform(0.3, 1.8))),)),
            Case((np.array([[0.0, 0.0], [rng.uniform(1.0, 8.0), 0.0]]),))]


@hidden("ex-ctr-hierarchy")
def _hierarchy_hidden(rng):
    cases = []
    for n1, n2 in ((1, 2), (2, 2)):
        lam1, lam2 = rng.uniform(0.3, 1.0, 2)
        cases.append(Case((np.diag(rng.uniform(0.5, 3.0, n1)), float(lam1), np.diag(rng.uniform(0.5, 3.0, n2)),
                           float(lam2), rng.normal(size=(n2, n1)), float(min(lam1, lam2) * rng.uniform(0.1, 0.9)))))
    return cases


@hidden("ex-ctr-params")
def _params_hidden(rng):
    return [Case((int(rng.integers(1, 5)), [int(h) for h in rng.integers(2, 10, size=int(rng.integers(1, 5)))],
                  int(rng.integers(1, 6))), {"lower_only": bool(lower)}) for lower in (True, False)]


@hidden("ex-ctr-skew-euler")
def _skew_euler_hidden(rng):
    return [Case((float(a),)) for a in rng.uniform(0.02, 1.9, 2)] + [
        Case((float(rng.uniform(0.01, 0.3)), float(rng.uniform(0.2, 3.0))))]


@hidden("ex-ctr-euler-bound")
def _euler_hidden(rng):
    n = int(rng.integers(2, 6))
    S = rng.normal(size=(n, n))
    return [Case((0.3 * rng.normal(size=(n, n)), S - S.T, float(rng.uniform(0.05, 0.5)))),
            Case((0.3 * rng.normal(size=(n, n)), S, float(rng.uniform(0.05, 0.5)), float(rng.uniform(0.2, 1.0))))]


@hidden("ex-ctr-certified-feedback")
def _certified_feedback_hidden(rng):
    n = int(rng.integers(2, 6))
    p = list(rng.uniform(0.2, 5.0, n))
    return [Case((*_skew_in_metric(rng, p, float(rng.uniform(0.01, 3.0))), float(rng.uniform(0.2, 0.9)),
                  0.1, 0.01))]


@hidden("ex-ctr-find-m")
def _find_m_hidden(rng):
    cases = []
    for n in (2, 4):
        W = rng.normal(size=(n, n)) * 3
        np.fill_diagonal(W, rng.uniform(-0.9, 0.9, n))
        cases.append(Case((W,)))
    return cases
