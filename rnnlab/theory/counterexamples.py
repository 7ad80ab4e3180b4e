"""Where constant metrics fail: the counterexample after Theorem 1 and Theorem 7 (appendix C).

The chapter's fifth page (``book/contraction/05_counterexamples``): the C.2
matrix, the SDP search for a common constant metric over a set of slope
patterns, Theorem 7's rotation, its critical values and the necessary
conditions of its proof. Built on :mod:`.certificate` and :mod:`.theorems` (neither imports
this module); :mod:`.contraction` and :mod:`rnnlab.theory` export the public names.
"""
from __future__ import annotations

import numpy as np

from .certificate import (
    Certificate, _TOL, _check_W, _check_form, _check_g, _diag_of, _psd, _solve, jacobian,
    metric_jacobian_sym, rate_in_metric, slope_vertices, sym,
)
from .theorems import certify_theorem1, certify_theorem2

__all__ = [
    "theorem1_counterexample", "find_common_metric", "theorem7_counterexample", "theorem7_critical_c",
    "theorem7_critical_eps", "theorem7_conditions", "theorem7_margin_grid",
]


def theorem1_counterexample():
    """The counterexample after the proof of Theorem 1 (appendix C.2).

    ``W = [[-9, 2.5], [2.5, 0]]`` is symmetric and Metzler and the *linear*
    system is contracting in the identity (``W - I < 0``), but with
    ``D = diag(0, 1)`` the nonlinear system's ``(W D)_sym - I =
    [[-1, 1.25], [1.25, -1]]`` has the positive eigenvalue ``1/4``. Returns the
    matrices and eigenvalues, and the Theorem-1 and Theorem-2 certificates for
    the same ``W`` (Theorem 1 fails; Theorem 2 holds, with a metric that is not
    the identity).
    """
    W = np.array([[-9.0, 2.5], [2.5, 0.0]])
    D = np.diag([0.0, 1.0])
    S = metric_jacobian_sym(W, D)
    return {
        "W": W,
        "D": D,
        "linear_sym_minus_I": W - np.eye(2),
        "linear_eigenvalues": np.linalg.eigvalsh(W - np.eye(2)),
        "WD_sym_minus_I": S,
        "eigenvalues": np.linalg.eigvalsh(S),
        "theorem1": certify_theorem1(W),
        "theorem2": certify_theorem2(W),
    }


# --------------------------------------------------------------------------- #
# Theorem 7: a common constant metric for a set of slope patterns
# --------------------------------------------------------------------------- #
def find_common_metric(W, slopes="vertices", *, g=1.0, form="x", L=None, tol=_TOL):
    """Search for one constant metric for a set of slope matrices (Theorem 7's question).

    Solves the SDP ``max s  s.t.  (M J(D_k))_sym <= -s I  for all k,
    M >= s I,  trace M = n`` with ``J(D) = -I + W D (+ L)`` (form x) or
    ``-I + D W (+ L)`` (form y); i.e. ``(M W D_k)_sym - M < 0`` for every
    ``D_k``. ``margin = s``: positive iff such an ``M`` exists. ``slopes`` is a
    ``(k, n)`` array of diagonals (or a list of diagonal matrices), or
    ``"vertices"`` for all of ``{0, g}^n``, which covers the whole box
    ``0 <= phi' <= g`` (the constraint is affine in ``D``). The rate in the
    metric found is recomputed exactly over the same slopes.
    """
    W = _check_W(W)
    g = _check_g(g)
    _check_form(form)
    n = W.shape[0]
    if isinstance(slopes, str):
        if slopes != "vertices":
            raise ValueError(f"slopes must be 'vertices' or an array of diagonals, got {slopes!r}")
        Ds = slope_vertices(n, g)
    else:
        Ds = np.asarray(slopes, dtype=float)
        Ds = np.array([_diag_of(D, n) for D in Ds]) if Ds.ndim == 3 else np.atleast_2d(Ds)
        if Ds.shape[1] != n or len(Ds) == 0:
            raise ValueError(f"slopes must be a non-empty (k, {n}) array of diagonals")
    import cvxpy as cp

    M = cp.Variable((n, n), symmetric=True)
    s = cp.Variable()
    cons = [cp.trace(M) == n, M >> s * np.eye(n)]
    for d in Ds:
        J = jacobian(W, d, form=form, L=L)
        cons.append(_psd(M @ J) << -s * np.eye(n))
    _solve(cp.Problem(cp.Maximize(s), cons))
    sv = float(s.value)
    Mv = sym(np.asarray(M.value, dtype=float))
    name = "Common constant metric (Theorem 7 search)"
    details = {"slopes": Ds, "lmi_margin": sv}
    if sv <= tol:
        msg = (f"fails: no constant M > 0 makes (M W D)_sym - M < 0 for all {len(Ds)} slope matrices "
               f"(best margin {sv:.4g} with trace M = n)")
        return Certificate(name, False, None, float("nan"), sv, msg, form=form, details=details)
    rate, Dw, _ = rate_in_metric(W, Mv, g, form=form, L=L, slopes=Ds)
    details["worst_slopes"] = Dw
    msg = (f"holds: a constant metric makes (M W D)_sym - M < 0 for all {len(Ds)} slope matrices "
           f"(margin {sv:.4g} with trace M = n), rate {rate:.4g}")
    return Certificate(name, True, Mv, rate, sv, msg, form=form, details=details)


def theorem7_counterexample(c=2.0, eps=0.0):
    """Theorem 7's counterexample (appendix C.8) for ``W = [[0, -c], [c, 0]]``.

    ``W_sym - I = -I``, so the linear system contracts in the identity, while
    ``D_1 = diag(1, eps)`` and ``D_2 = diag(eps, 1)`` (``eps = 0``: the ReLU case;
    the paper uses ``c = 2, eps = 0`` and ``c = 4, eps = 0.5``) admit no common
    constant metric once ``c >= 2 / (1 - eps)``. Returns the matrices, the
    function giving ``(M W D_k)_sym - M`` for ``M = [[a, m], [m, b]]`` (compare
    with the printed expressions), and the SDP search result.
    """
    c, eps = float(c), float(eps)
    W = np.array([[0.0, -c], [c, 0.0]])
    D1, D2 = np.diag([1.0, eps]), np.diag([eps, 1.0])

    def sym_parts(a, b, m):
        M = np.array([[a, m], [m, b]], dtype=float)
        return metric_jacobian_sym(W, D1, M), metric_jacobian_sym(W, D2, M)

    return {"W": W, "D1": D1, "D2": D2, "W_sym_minus_I": sym(W) - np.eye(2),
            "sym_parts": sym_parts, "search": find_common_metric(W, np.array([[1.0, eps], [eps, 1.0]])),
            "threshold_c": 2.0 / (1.0 - eps) if eps < 1 else float("inf")}


def _bisect(fun, lo, hi, tol):
    """Smallest x in [lo, hi] with fun(x) True, assuming monotone (False ... True)."""
    while hi - lo > tol:
        mid = (lo + hi) / 2
        if fun(mid):
            hi = mid
        else:
            lo = mid
    return (lo + hi) / 2


def theorem7_critical_c(eps=0.0, *, lo=0.0, hi=20.0, tol=1e-5):
    """The smallest ``c`` for which ``[[0, -c], [c, 0]]`` has no common metric for ``D_1, D_2``.

    Found by bisection on the sign of :func:`find_common_metric`'s margin.
    C.8 states the threshold ``c = 2`` for ``eps = 0`` ("any off-diagonal
    magnitude >= 2"); numerically it is ``2 / (1 - eps)``.
    """
    Ds = np.array([[1.0, eps], [eps, 1.0]])

    def none(c):
        return not find_common_metric(np.array([[0.0, -c], [c, 0.0]]), Ds).holds

    return _bisect(none, lo, hi, tol)


def theorem7_critical_eps(c=4.0, *, tol=1e-5):
    """The largest ``eps`` for which ``D_1* = diag(1, eps)``, ``D_2* = diag(eps, 1)`` admit no common metric.

    C.8 shows none exists for ``W_* = [[0, -4], [4, 0]]`` when ``eps <= 0.5``;
    numerically the threshold is ``1 - 2 / c`` (0.5 for ``c = 4``).
    """
    W = np.array([[0.0, -c], [c, 0.0]])

    def exists(e):
        return find_common_metric(W, np.array([[1.0, e], [e, 1.0]])).holds

    return _bisect(exists, 0.0, 1.0, tol)


def theorem7_conditions(a, b, m, c=2.0, eps=0.0):
    """The necessary conditions of C.8's proof for a metric ``M = [[a, m], [m, b]]``.

    For ``W = [[0, -c], [c, 0]]``, ``D_1 = diag(1, eps)``, ``D_2 = diag(eps, 1)``
    the two matrices that must be negative definite are (a direct computation,
    :func:`theorem7_counterexample`'s ``sym_parts``)::

        X_1 = (M W D_1)_sym - M = [[c m - a,            c (b - a eps)/2 - m],
                                   [c (b - a eps)/2 - m, -c m eps - b      ]]
        X_2 = (M W D_2)_sym - M = [[c m eps - a,         c (b eps - a)/2 - m],
                                   [c (b eps - a)/2 - m, -c m - b          ]]

    C.8 uses two necessary conditions for definiteness of a symmetric matrix
    ``X``: diagonal entries of the right sign, and ``|x_ii + x_jj| > 2|x_ij|``.
    With ``(c, eps) = (2, 0)`` they are the appendix's (11)-(14), with
    ``(4, 0.5)`` its (17), (18), (15), (16). ``a``, ``b``, ``m`` may be arrays
    (broadcast together); returns a dict of boolean arrays, the necessary
    conditions first (in the order of the keys below), then their conjunction
    ``"all necessary"``, then the exact tests:

    - ``"a > 0"``, ``"b > 0"``: diagonal of ``M``;
    - ``"(11)/(17)"``: ``(X_1)_11 = c m - a < 0``;
    - ``"(12)/(18)"``: ``(X_2)_22 = -c m - b < 0``;
    - ``"(13)/(15)"``: ``|tr X_1| > 2 |(X_1)_12|``;
    - ``"(14)/(16)"``: ``|tr X_2| > 2 |(X_2)_12|``;
    - ``"M > 0"``, ``"X1 < 0"``, ``"X2 < 0"``: definiteness decided exactly
      (2x2: sign of a diagonal entry and of the determinant; a determinant
      within round-off of 0 counts as not definite), and
      ``"all exact"``, their conjunction: ``M`` is a common metric for both
      slope patterns.

    The other two diagonal conditions, ``(X_1)_22 < 0`` and ``(X_2)_11 < 0``,
    follow from these when ``a, b > 0``, which is why C.8 does not list them.
    """
    a, b, m = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (a, b, m)))
    c, eps = float(c), float(eps)
    x1 = (c * m - a, c * (b - a * eps) / 2 - m, -c * m * eps - b)    # (11, 12, 22) entries of X_1
    x2 = (c * m * eps - a, c * (b * eps - a) / 2 - m, -c * m - b)
    out = {
        "a > 0": a > 0,
        "b > 0": b > 0,
        "(11)/(17)": x1[0] < 0,
        "(12)/(18)": x2[2] < 0,
        "(13)/(15)": np.abs(x1[0] + x1[2]) > 2 * np.abs(x1[1]),
        "(14)/(16)": np.abs(x2[0] + x2[2]) > 2 * np.abs(x2[1]),
    }
    out["all necessary"] = np.logical_and.reduce(list(out.values()))

    def negdef(x):  # boundary cases (determinant 0 up to round-off) count as not definite
        scale = x[0] ** 2 + x[1] ** 2 + x[2] ** 2
        return (x[0] < 0) & (x[0] * x[2] - x[1] ** 2 > 1e-12 * scale)

    out["M > 0"] = negdef((-a, -m, -b))
    out["X1 < 0"] = negdef(x1)
    out["X2 < 0"] = negdef(x2)
    out["all exact"] = out["M > 0"] & out["X1 < 0"] & out["X2 < 0"]
    return out


def theorem7_margin_grid(cs, epss):
    """:func:`find_common_metric`'s margin for ``W = [[0, -c], [c, 0]]`` over a grid of ``(c, eps)``.

    Returns an array of shape ``(len(epss), len(cs))``: entry ``[i, j]`` is the
    SDP margin ``s`` for ``c = cs[j]`` and slopes ``D_1 = diag(1, eps_i)``,
    ``D_2 = diag(eps_i, 1)``; a common constant metric exists iff ``s > 0``.
    One small SDP per point (about 20 ms each): keep the grid coarse.
    """
    cs = np.asarray(cs, dtype=float).ravel()
    epss = np.asarray(epss, dtype=float).ravel()
    if cs.size == 0 or epss.size == 0:
        raise ValueError("cs and epss must be non-empty")
    if np.any(epss < 0) or np.any(epss >= 1):
        raise ValueError(f"every eps must be in [0, 1), got {epss}")
    out = np.empty((epss.size, cs.size))
    for i, e in enumerate(epss):
        Ds = np.array([[1.0, e], [e, 1.0]])
        for j, c in enumerate(cs):
            out[i, j] = find_common_metric(np.array([[0.0, -c], [c, 0.0]]), Ds).margin
    return out
