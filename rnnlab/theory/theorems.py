"""Theorems 1-6 of "RNNs of RNNs" (appendix C): one function per theorem.

The chapter's third and fourth pages (``book/contraction/03_diagonal_metrics``, ``04_full_metrics``). Each
``certify_theoremN`` decides its theorem's condition for a given ``W`` and slope
bound ``g`` and returns a :class:`rnnlab.theory.certificate.Certificate`; the
conventions (forms, rates, margins) are those of :mod:`rnnlab.theory.contraction`.
This module builds on :mod:`.certificate` (which imports nothing from here);
:mod:`.contraction` and :mod:`rnnlab.theory` export the public names.
"""
from __future__ import annotations

import math

import numpy as np

from ..models.combo import lyapunov_metric, metzler_diagonal_metric, theorem1_matrix, theorem1_rate
from .activations import get_activation
from .certificate import Certificate, sym
from .certificate import TOL as _TOL, check_W as _check_W, check_form as _check_form, check_g as _check_g
from .certificate import psd as _psd, solve as _solve
from .simulation import input_fn as _input_fn, simulate

__all__ = [
    "certify_theorem1", "certify_theorem2", "certify_theorem3", "certify_theorem4", "certify_theorem5",
    "certify_theorem6",
]


# --------------------------------------------------------------------------- #
# Theorem 1
# --------------------------------------------------------------------------- #
def certify_theorem1(W, g=1.0, *, method="explicit", shrink=0.0, zero_nonpositive_diagonal=True,
                     target_rate=0.0):
    """Theorem 1 (appendix C.2): ``P(g|W| - I) + (g|W| - I)^T P < 0``, ``P`` positive diagonal.

    ``|W|`` is the element-wise absolute value with the diagonal rule (an entry
    ``W_ii <= 0`` is set to 0). ``A = g|W| - I`` is Metzler, and a Metzler
    matrix is diagonally stable iff it is Hurwitz (Narendra and Shorten 2010),
    so the condition is decided by the spectral abscissa ``alpha(A)``:
    ``margin = -alpha(A)``. The metric ``P`` comes from

    - ``method="explicit"`` (default): ``P = diag(w / v)``, ``v = -A^{-1} 1``,
      ``w = -A^{-T} 1`` (:func:`rnnlab.models.combo.metzler_diagonal_metric`;
      ``shrink`` trades conditioning for rate);
    - ``method="lmi"``: the best-conditioned diagonal ``P`` with
      ``P A + A^T P <= -2 target_rate P`` (cvxpy);
    - ``method="lyapunov"``: the diagonal of the solution of
      ``A^T M + M A = -I`` (appendix D.1.1's recipe). When that diagonal is not
      a Theorem-1 metric (it often is not), the explicit ``P`` is returned and
      ``details["metric_method"]`` says so.

    ``rate`` is what the proof certifies in ``P``:
    ``2 lambda = lambda_min(-P^{-1/2}(P A + A^T P) P^{-1/2})``, at most
    ``-alpha(A)``; it holds for both system forms.
    """
    W = _check_W(W)
    g = _check_g(g)
    if method not in ("explicit", "lmi", "lyapunov"):
        raise ValueError(f"method must be 'explicit', 'lmi' or 'lyapunov', got {method!r}")
    n = W.shape[0]
    A = theorem1_matrix(W, g, zero_nonpositive_diagonal=zero_nonpositive_diagonal)
    alpha = float(np.linalg.eigvals(A).real.max())
    absW = A + np.eye(n)
    details = {"metzler_matrix": A, "spectral_abscissa": alpha,
               "perron_root": float(np.linalg.eigvals(absW / g).real.max()),
               "identity_rate": theorem1_rate(W, np.ones(n), g,
                                              zero_nonpositive_diagonal=zero_nonpositive_diagonal)}
    name = "Theorem 1 (g|W| - I Metzler, diagonal metric)"
    if alpha >= 0:
        msg = (f"fails: g|W| - I (diagonal rule applied) has spectral abscissa {alpha:.4g} >= 0, so it is not "
               f"Hurwitz and no positive diagonal P exists (short by {alpha:.4g})")
        return Certificate(name, False, None, float("nan"), -alpha, msg, details=details)
    kw = {"zero_nonpositive_diagonal": zero_nonpositive_diagonal}
    used = method
    if method == "lyapunov":
        p = np.diag(lyapunov_metric(A)).copy()
        if theorem1_rate(W, p, g, **kw) <= 0:
            used = "explicit (the diagonal of the Lyapunov solution is not a Theorem-1 metric here)"
            p = metzler_diagonal_metric(A, shrink)
    elif method == "lmi":
        import cvxpy as cp

        if not 0 <= target_rate < -alpha:
            raise ValueError(f"target_rate must be in [0, {-alpha:.4g}) (the abscissa bound), got {target_rate}")
        pv = cp.Variable(n)
        kappa = cp.Variable()
        P = cp.diag(pv)
        cons = [pv >= 1, pv <= kappa, _psd(P @ A + A.T @ P + 2 * target_rate * P) << -1e-6 * np.eye(n)]
        _solve(cp.Problem(cp.Minimize(kappa), cons))
        p = np.asarray(pv.value, dtype=float)
        if theorem1_rate(W, p, g, **kw) <= 0:
            used = "explicit (the LMI solution did not verify)"
            p = metzler_diagonal_metric(A, shrink)
    else:
        p = metzler_diagonal_metric(A, shrink)
    rate = theorem1_rate(W, p, g, **kw)
    details.update(p=p, metric_method=used)
    msg = (f"holds: g|W| - I is Metzler and Hurwitz (spectral abscissa {alpha:.4g}, margin {-alpha:.4g}), so a "
           f"diagonal P exists; the {used.split(' ')[0]} P certifies rate {rate:.4g}")
    if used != method:
        msg += f" [{used}]"
    return Certificate(name, True, np.diag(p), rate, -alpha, msg, form="x", details=details)


# --------------------------------------------------------------------------- #
# Theorem 2
# --------------------------------------------------------------------------- #
def certify_theorem2(W, g=1.0, *, rate=None, form="y", sym_tol=1e-10):
    """Theorem 2 (appendix C.3): ``W = W^T`` and ``g W < I``.

    ``margin = 1 - lambda_max(g W)``. Where it holds, the proof's construction
    is carried out: with ``beta = 2 lambda`` and ``gamma^2 = g / (2 (2 -
    beta))``, ``S = V sqrt(I / (4 gamma^2) - Lambda) V^T``,
    ``R = S / gamma + I / (2 gamma^2)``; then ``W = R - gamma^2 R R``
    (``details["reconstruction_error"]``) and the metric is ``gamma^2 R R``.

    The rate ``lambda`` must satisfy ``(1 - lambda) I >= g W`` and
    ``lambda < 1``; by default ``lambda = min(1 - lambda_max(g W), 0.99)``.

    The proof works with the firing-rate form (4), whose Jacobian is
    ``-I + D W``: ``gamma^2 R R`` is a metric for that form (``form="y"``, the
    default). It is generally *not* a metric for equation (1) (Jacobian
    ``-I + W D``); there the metric is ``W^{-1} (gamma^2 R R) W^{-1} =
    gamma^2 (I - gamma^2 R)^{-2}`` (``form="x"``, needs ``W`` invertible), with
    the same rate. The theorem asks ``phi' > 0``; the inequality is closed in
    ``D``, so slopes equal to 0 (ReLU) are covered too.
    """
    W = _check_W(W)
    g = _check_g(g)
    _check_form(form)
    n = W.shape[0]
    asym = np.abs(W - W.T).max()
    if asym > sym_tol * max(1.0, np.abs(W).max()):
        raise ValueError(f"W must be symmetric for Theorem 2 (max |W - W^T| = {asym:.3g})")
    W = (W + W.T) / 2
    ev, V = np.linalg.eigh(W)
    lmax = float(g * ev.max())
    margin = 1.0 - lmax
    name = "Theorem 2 (symmetric W, gW < I)"
    details = {"lambda_max_gW": lmax}
    if margin <= 0:
        msg = f"fails: lambda_max(gW) = {lmax:.4g} >= 1 (short by {-margin:.4g})"
        return Certificate(name, False, None, float("nan"), margin, msg, form=form, details=details)
    lam = min(margin, 0.99) if rate is None else float(rate)
    if not (0 < lam < 1 and lam <= margin + 1e-12):
        raise ValueError(f"rate must be in (0, min(1, 1 - lambda_max(gW)) = {min(1, margin):.4g}], got {rate}")
    beta = 2 * lam
    gamma2 = g / (2 * (2 - beta))
    gamma = math.sqrt(gamma2)
    S = (V * np.sqrt(np.maximum(1 / (4 * gamma2) - ev, 0.0))) @ V.T
    R = S / gamma + np.eye(n) / (2 * gamma2)
    My = gamma2 * R @ R
    My = (My + My.T) / 2
    recon = float(np.abs(R - gamma2 * R @ R - W).max())
    details.update(R=R, S=S, gamma=gamma, beta=beta, metric_y=My, reconstruction_error=recon)
    Mx = None
    if abs(ev).min() > 1e-12 * max(1.0, abs(ev).max()):
        Ki = np.linalg.inv(np.eye(n) - gamma2 * R)
        Mx = gamma2 * Ki @ Ki
        Mx = (Mx + Mx.T) / 2
    details["metric_x"] = Mx
    if form == "x" and Mx is None:
        raise ValueError("W is singular: the metric of the x form, W^{-1} (gamma^2 R R) W^{-1}, does not exist")
    M = My if form == "y" else Mx
    msg = (f"holds: W is symmetric and lambda_max(gW) = {lmax:.4g} < 1 (margin {margin:.4g}); W = R - gamma^2 R R "
           f"(error {recon:.2g}) with metric gamma^2 R R for the y form (4)"
           + ("" if form == "y" else ", mapped to W^-1 gamma^2 R R W^-1 for the x form (1)")
           + f", rate {lam:.4g}")
    return Certificate(name, True, M, lam, margin, msg, form=form, details=details)


# --------------------------------------------------------------------------- #
# Theorem 3
# --------------------------------------------------------------------------- #
def _pos_diag(P, n, name):
    P = np.asarray(P, dtype=float)
    if P.ndim == 2:
        if P.shape != (n, n) or not np.allclose(P, np.diag(np.diag(P))):
            raise ValueError(f"{name} must be a positive diagonal ({n}, {n}) matrix or a positive vector")
        P = np.diag(P)
    if P.shape != (n,) or not np.all(P > 0):
        raise ValueError(f"{name} must be a positive diagonal ({n}, {n}) matrix or a positive vector")
    return P


def certify_theorem3(W=None, *, P1=None, Q=None, P2=None, tol=1e-8):
    """Theorem 3 (appendix C.4): ``W = -P1 Q P2``, ``P1, P2`` positive diagonal, ``Q = Q^T > 0``.

    Metric ``M = (P1 Q P1)^{-1}``; then ``M J + J^T M = -2 M - 2 P1^{-1} P2 D
    <= -2 M``, so the rate is 1 whatever the slope bound.

    With the factors given, they are checked (and ``W`` against them, if given).
    With ``W`` alone, the condition is decided: ``W = -P1 Q P2`` for some such
    factors iff ``W T`` is symmetric negative definite for some positive
    diagonal ``T`` (take ``T = P2^{-1} P1``); an LMI in ``T`` (cvxpy) finds it,
    normalised to ``trace T = n``, maximising ``s`` with ``-W T >= s I`` and
    ``T >= s I``: ``margin = s``. The returned factors are ``P1 = I``,
    ``Q = -W T``, ``P2 = T^{-1}``.
    """
    name = "Theorem 3 (W = -P1 Q P2)"
    given = [P1 is not None, Q is not None, P2 is not None]
    if any(given) and not all(given):
        raise ValueError("give all three factors P1, Q, P2, or none")
    if all(given):
        Q = _check_W(Q, "Q")
        n = Q.shape[0]
        p1, p2 = _pos_diag(P1, n, "P1"), _pos_diag(P2, n, "P2")
        if not np.allclose(Q, Q.T, atol=1e-12 * max(1, np.abs(Q).max())):
            raise ValueError("Q must be symmetric")
        qmin = float(np.linalg.eigvalsh((Q + Q.T) / 2).min())
        if qmin <= 0:
            raise ValueError(f"Q must be positive definite (smallest eigenvalue {qmin:.3g})")
        Wf = -(p1[:, None] * Q * p2[None, :])
        resid = 0.0
        if W is not None:
            W = _check_W(W)
            if W.shape != Wf.shape:
                raise ValueError(f"W has shape {W.shape} but the factors are {n}x{n}")
            resid = float(np.abs(W - Wf).max() / max(np.abs(W).max(), 1e-300))
        else:
            W = Wf
        holds = resid <= 1e-9
        M = np.linalg.inv(p1[:, None] * Q * p1[None, :])
        M = (M + M.T) / 2
        details = {"P1": np.diag(p1), "Q": Q, "P2": np.diag(p2), "factor_residual": resid}
        if not holds:
            msg = f"fails: W differs from -P1 Q P2 (relative residual {resid:.3g})"
            return Certificate(name, False, None, float("nan"), -resid, msg, details=details)
        msg = (f"holds: W = -P1 Q P2 with lambda_min(Q) = {qmin:.4g}; metric (P1 Q P1)^-1 certifies rate 1")
        return Certificate(name, True, M, 1.0, qmin, msg, details=details)
    if W is None:
        raise ValueError("give W, or the factors P1, Q, P2")
    W = _check_W(W)
    n = W.shape[0]
    import cvxpy as cp

    t = cp.Variable(n)
    s = cp.Variable()
    WT = W @ cp.diag(t)
    cons = [cp.sum(t) == n, t >= s, _psd(-WT) >> s * np.eye(n)]
    iu = np.triu_indices(n, 1)
    if n > 1:
        cons.append(cp.hstack([WT[i, j] - WT[j, i] for i, j in zip(*iu)]) == 0)
    status = _solve(cp.Problem(cp.Maximize(s), cons), allow_infeasible=True)
    if status == "infeasible":  # W T = (W T)^T forces T = 0
        sv, tv = float("-inf"), np.full(n, np.nan)
    else:
        sv, tv = float(s.value), np.asarray(t.value, dtype=float)
    details = {"T": tv, "lmi_margin": sv}
    if sv <= _TOL or not np.all(tv > 0):
        msg = (f"fails: no positive diagonal T makes W T symmetric negative definite (best margin {sv:.3g}), "
               f"so W is not of the form -P1 Q P2")
        return Certificate(name, False, None, float("nan"), sv, msg, details=details)
    Qm = -(W * tv[None, :])
    asym = float(np.abs(Qm - Qm.T).max() / max(np.abs(Qm).max(), 1e-300))
    Qm = (Qm + Qm.T) / 2
    M = np.linalg.inv(Qm)
    M = (M + M.T) / 2
    details.update(P1=np.eye(n), Q=Qm, P2=np.diag(1 / tv), factor_residual=asym)
    msg = (f"holds: W T is symmetric negative definite for T = diag(t) > 0 (LMI margin {sv:.4g}), i.e. "
           f"W = -P1 Q P2 with P1 = I, Q = -W T, P2 = T^-1; metric Q^-1 certifies rate 1")
    return Certificate(name, True, M, 1.0, sv, msg, details=details)


# --------------------------------------------------------------------------- #
# Theorem 4
# --------------------------------------------------------------------------- #
def _topological_order(W):
    """An order of the units making ``W`` lower triangular, or None (the graph has a cycle)."""
    n = W.shape[0]
    adj = (W != 0) & ~np.eye(n, dtype=bool)  # adj[i, j]: unit j feeds unit i
    indeg = adj.sum(axis=1)
    order, ready = [], [i for i in range(n) if indeg[i] == 0]
    while ready:
        j = ready.pop()
        order.append(j)
        for i in np.nonzero(adj[:, j])[0]:
            indeg[i] -= 1
            if indeg[i] == 0:
                ready.append(int(i))
    return order if len(order) == n else None


def certify_theorem4(W, g=1.0, *, eps=None, permute=False):
    """Theorem 4 (appendix C.5): ``gW - I`` triangular and Hurwitz gives a diagonal metric.

    Hurwitz means ``g W_ii < 1`` for all ``i``: ``margin = 1 - g max_i W_ii``.
    The proof's metric is ``Gamma^2`` with ``Gamma = diag(eps^i)``
    (``i = 1..n`` for lower-triangular ``W``; reversed for upper). With
    ``delta = 1 - g max(max_i W_ii, 0)`` and ``N`` the strictly triangular part
    of ``Gamma W Gamma^{-1}``, ``mu_2(Gamma J Gamma^{-1}) <= -delta + g ||N||_2``;
    the default ``eps`` is the largest in ``(0, 1]`` with ``g ||N||_2 <= delta / 2``
    (found by bisection; at least ``delta / (2 g ||W_offdiag||_F)``), so the
    certified rate is ``lambda = delta - g ||N||_2 >= delta / 2`` with the
    best-conditioned metric of the family.
    ``permute=True`` also accepts a ``W`` that is triangular after reordering the
    units (a feed-forward graph); the metric is returned in the original order.
    A ``W`` that is not triangular fails the hypothesis (``holds=False``).
    """
    W = _check_W(W)
    g = _check_g(g)
    n = W.shape[0]
    name = "Theorem 4 (triangular gW - I Hurwitz)"
    lower = not np.any(np.triu(W, 1))
    upper = not np.any(np.tril(W, -1))
    perm = np.arange(n)
    if not (lower or upper):
        order = _topological_order(W) if permute else None
        if order is None:
            why = "not triangular" + (" in any order of the units (its graph has a cycle)" if permute else "")
            return Certificate(name, False, None, float("nan"), float("nan"),
                               f"does not apply: W is {why}", details={"triangular": False})
        perm = np.asarray(order)
        lower = True
    Wp = W[np.ix_(perm, perm)]
    margin = 1.0 - g * float(np.diag(Wp).max())
    details = {"triangular": "lower" if lower else "upper", "order": perm}
    if margin <= 0:
        msg = f"fails: gW - I is triangular but not Hurwitz (max g W_ii = {1 - margin:.4g} >= 1)"
        return Certificate(name, False, None, float("nan"), margin, msg, details=details)
    delta = 1.0 - g * max(float(np.diag(Wp).max()), 0.0)
    off = Wp - np.diag(np.diag(Wp))
    fro = np.linalg.norm(off)
    idx = np.arange(1, n + 1) if lower else np.arange(n, 0, -1)

    def strict_norm(e):
        logG = idx * math.log(e)
        return float(np.linalg.norm(off * np.exp(logG[:, None] - logG[None, :]), 2))

    if eps is None:
        # the paper's "eps small enough", made concrete: the largest eps <= 1
        # with g ||N_eps|| <= delta / 2 (||N_eps|| grows with eps); it is at
        # least delta / (2 g ||W_offdiag||_F), and the best-conditioned choice
        eps = 1.0 if fro == 0 else min(1.0, delta / (2 * g * fro))
        if fro > 0 and eps < 1.0 and g * strict_norm(1.0) > delta / 2:
            lo, hi = math.log(eps), 0.0
            for _ in range(60):
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if g * strict_norm(math.exp(mid)) <= delta / 2 else (lo, mid)
            eps = math.exp(lo)
        elif fro > 0:
            eps = 1.0 if g * strict_norm(1.0) <= delta / 2 else eps
    eps = float(eps)
    if not eps > 0:
        raise ValueError(f"eps must be > 0, got {eps}")
    logG = idx * math.log(eps)
    logG -= logG.max()  # Gamma up to a scale: the largest entry is 1
    ratio = np.exp(logG[:, None] - logG[None, :])  # Gamma_i / Gamma_j
    N = off * ratio
    lam = delta - g * float(np.linalg.norm(N, 2))
    Gamma2 = np.exp(2 * logG)
    if Gamma2.min() < 1e-300:
        details["underflow"] = True
    p = np.empty(n)
    p[perm] = Gamma2
    details.update(eps=eps, delta=delta, Gamma=np.exp(logG), strict_part_norm=float(np.linalg.norm(N, 2)), p=p)
    if lam <= 0:
        msg = (f"holds (gW - I triangular, Hurwitz, margin {margin:.4g}) but eps = {eps:.3g} is too large to "
               f"certify a rate (delta - g||N|| = {lam:.3g}); use a smaller eps")
        return Certificate(name, True, None, float("nan"), margin, msg, details=details)
    reordered = " after reordering the units" if not np.array_equal(perm, np.arange(n)) else ""
    msg = (f"holds: gW - I is {details['triangular']} triangular{reordered}"
           f" with max g W_ii = {1 - margin:.4g} < 1 (margin {margin:.4g}); Gamma = diag(eps^i), eps = {eps:.3g}, "
           f"certifies rate {lam:.4g}")
    return Certificate(name, True, np.diag(p), lam, margin, msg, details=details)


# --------------------------------------------------------------------------- #
# Theorem 5
# --------------------------------------------------------------------------- #
def _scaled_norm(W, p):
    s = np.sqrt(p)
    return float(np.linalg.norm(s[:, None] * W / s[None, :], 2))


def _theorem5_lmi(W, g, t):
    """``max s`` with ``g^2 W^T P W - t P <= -s I``, ``P >= s I``, ``trace P = n`` (P diagonal)."""
    import cvxpy as cp

    n = W.shape[0]
    pv = cp.Variable(n)
    s = cp.Variable()
    Pm = cp.diag(pv)
    cons = [cp.sum(pv) == n, pv >= s, _psd(g * g * W.T @ Pm @ W - t * Pm) << -s * np.eye(n)]
    _solve(cp.Problem(cp.Maximize(s), cons))
    return float(s.value), np.asarray(pv.value, dtype=float)


def certify_theorem5(W, g=1.0, *, P=None, optimize_rate=True, rate_tol=1e-4):
    """Theorem 5 (appendix C.6): ``g^2 W^T P W - P < 0`` with ``P`` positive diagonal.

    Equivalent to ``g ||P^{1/2} W P^{-1/2}||_2 < 1``; the certified rate in the
    metric ``P`` is ``lambda = 1 - g ||P^{1/2} W P^{-1/2}||_2`` (both system
    forms). With ``P`` given it is checked; otherwise the LMI
    ``max s  s.t.  g^2 W^T P W - P <= -s I,  P >= s I,  trace P = n`` is solved
    (cvxpy) and ``margin = s`` (> 0 iff the condition holds). The ``P`` of
    largest margin need not give the largest rate: with ``optimize_rate`` the
    rate is then improved by bisection on ``rho^2`` in the generalised
    eigenvalue problem ``g^2 W^T P W <= rho^2 P`` (to ``rate_tol``).
    ``P = I`` is the maximum-singular-value condition
    (``details["identity_rate"]``).
    """
    W = _check_W(W)
    g = _check_g(g)
    n = W.shape[0]
    name = "Theorem 5 (g^2 W^T P W - P < 0, P diagonal)"
    details = {"identity_rate": 1.0 - g * float(np.linalg.norm(W, 2))}
    if P is not None:
        p = _pos_diag(P, n, "P")
        rate = 1.0 - g * _scaled_norm(W, p)
        S = g * g * W.T @ np.diag(p) @ W - np.diag(p)
        margin = float(-np.linalg.eigvalsh(sym(S)).max())
        details["p"] = p
        if rate <= 0:
            msg = f"fails for the given P: g ||P^1/2 W P^-1/2|| = {1 - rate:.4g} >= 1"
            return Certificate(name, False, None, float("nan"), margin, msg, details=details)
        msg = f"holds for the given P: g ||P^1/2 W P^-1/2|| = {1 - rate:.4g} < 1, rate {rate:.4g}"
        return Certificate(name, True, np.diag(p), rate, margin, msg, details=details)
    sv, p = _theorem5_lmi(W, g, 1.0)
    details["lmi_margin"] = sv
    if sv <= _TOL or not np.all(p > 0):
        msg = (f"fails: no positive diagonal P gives g^2 W^T P W - P < 0 (best margin {sv:.3g} with trace P = n)")
        return Certificate(name, False, None, float("nan"), sv, msg, details=details)
    rate = 1.0 - g * _scaled_norm(W, p)
    if optimize_rate:
        lo, hi = 0.0, 1.0 - rate  # rho = g ||P^1/2 W P^-1/2||
        while hi - lo > rate_tol:
            mid = (lo + hi) / 2
            s_mid, p_mid = _theorem5_lmi(W, g, mid * mid)
            r_mid = 1.0 - g * _scaled_norm(W, p_mid) if np.all(p_mid > 0) else -np.inf
            if s_mid > _TOL and r_mid > rate:
                p, rate = p_mid, r_mid
                hi = min(mid, 1.0 - r_mid)
            else:
                lo = mid
    details["p"] = p
    msg = (f"holds: the LMI g^2 W^T P W - P < 0 has a diagonal solution (margin {sv:.4g} with trace P = n); "
           f"g ||P^1/2 W P^-1/2|| = {1 - rate:.4g}, rate {rate:.4g} (identity metric: {details['identity_rate']:.4g})")
    return Certificate(name, True, np.diag(p), rate, sv, msg, details=details)


# --------------------------------------------------------------------------- #
# Theorem 6
# --------------------------------------------------------------------------- #
def _diag_stability_margin(A):
    """``max s`` with ``P A + A^T P <= -s I``, ``P`` diagonal, ``trace P = n`` (and ``P``)."""
    import cvxpy as cp

    n = A.shape[0]
    pv = cp.Variable(n)
    s = cp.Variable()
    Pm = cp.diag(pv)
    _solve(cp.Problem(cp.Maximize(s), [cp.sum(pv) == n, pv >= s, _psd(Pm @ A + A.T @ Pm) << -s * np.eye(n)]))
    return float(s.value), np.asarray(pv.value, dtype=float)


def certify_theorem6(W, g=None, *, activation="tanh", P=None, x0=None, u=None, T=10.0, dt=0.01, tau=1.0,
                     variant="proof", rng=0):
    """Theorem 6 (appendix C.7): a time-varying metric ``P D(t)``, checked along a trajectory.

    Conditions, with ``D = diag(phi'(x))`` (strictly positive) and ``P``
    positive diagonal:

    1. ``P(gW - I) + (gW^T - I) P <= -c P`` (the inequality the proof uses;
       the theorem's statement prints ``(gW - I)P + P(gW^T - I)``, which is the
       proof's condition with ``P^{-1}`` in place of ``P`` (congruence by
       ``P^{-1}``, same ``c``), and with the same ``P`` differs from it by
       ``2g(PK - KP)``, ``K`` the skew part of ``W``: the two coincide iff
       ``P`` commutes with ``K``. ``variant="statement"`` uses the printed
       one with the given ``P``);
    2. ``dD/dt - c g^{-1} D^2 <= -beta D`` along the trajectory (the proof's
       last step needs ``D^2``; the statement prints ``c g^{-1} D``, used by
       ``variant="statement"``).

    Then ``V = dx^T P D dx`` obeys ``dV/dt <= -beta V``: contraction in the
    state-dependent metric ``P D(x)`` (the statement says "in metric D").
    ``c`` is computed from ``P`` (``P`` from a diagonal-stability LMI when not
    given); the trajectory is simulated with Euler steps from ``x0`` under
    ``u`` (as in :func:`rnnlab.theory.simulation.simulate`), ``dD/dt =
    phi''(x) dx/dt`` exactly. ``rate = beta / 2``, ``margin = beta``
    (the minimum over the trajectory). ``details`` holds the time series,
    both variants' ``c`` and ``beta``, and a variational check: ``V`` along
    the linearised flow decays at ``details["V_rate"] >= beta``.
    """
    W = _check_W(W)
    n = W.shape[0]
    act = get_activation(activation)
    if not act.strictly_increasing:
        raise ValueError(f"Theorem 6 needs phi' > 0 (a strictly increasing activation); {act.name!r} is not")
    g = act.g if g is None else _check_g(g)
    if variant not in ("proof", "statement"):
        raise ValueError(f"variant must be 'proof' or 'statement', got {variant!r}")
    A = g * W - np.eye(n)
    if P is None:
        s, p = _diag_stability_margin(A if variant == "proof" else A.T)
        if s <= _TOL or not np.all(p > 0):
            p = np.ones(n)
    else:
        p = _pos_diag(P, n, "P")

    def c_of(B):
        S = p[:, None] * B
        S = S + S.T
        r = 1 / np.sqrt(p)
        return float(-np.linalg.eigvalsh(r[:, None] * S * r[None, :]).max())

    c_proof, c_statement = c_of(A), c_of(A.T)
    c = c_proof if variant == "proof" else c_statement
    name = "Theorem 6 (time-varying metric P D(t))"
    details = {"p": p, "c": c, "c_proof": c_proof, "c_statement": c_statement, "variant": variant}
    if c <= 0:
        msg = f"fails: condition 1 has no c > 0 for this P (best c = {c:.4g})"
        return Certificate(name, False, None, float("nan"), c, msg, details=details)
    r = np.random.default_rng(rng)
    x0 = r.normal(size=n) if x0 is None else np.asarray(x0, dtype=float)
    if x0.shape != (n,):
        raise ValueError(f"x0 must have shape ({n},), got {x0.shape}")
    times, X = simulate(W, x0, T=T, dt=dt, tau=tau, u=u, activation=act)
    steps = len(times) - 1
    uf = _input_fn(u, n, steps, dt)
    U = np.array([np.broadcast_to(uf(min(k, steps - 1)), (n,)) for k in range(steps + 1)])
    xdot = (-X + act.phi(X) @ W.T + U) / tau
    Dv = act.dphi(X)
    Ddot = act.d2phi(X) * xdot
    if Dv.min() <= 0:
        raise ValueError("phi' vanished along the trajectory (saturated in floating point); Theorem 6 needs D > 0")
    beta_proof_t = np.min(c_proof / g * Dv - Ddot / Dv, axis=1)
    beta_stmt_t = np.min(c_statement / g - Ddot / Dv, axis=1)
    beta_t = beta_proof_t if variant == "proof" else beta_stmt_t
    beta = float(beta_t.min())
    # variational check: V = dx^T P D dx along the linearised flow
    dx = np.ones(n) / math.sqrt(n)
    V = np.empty(steps + 1)
    for k in range(steps + 1):
        V[k] = dx @ (p * Dv[k] * dx)
        if k < steps:
            J = -np.eye(n) + W * Dv[k][None, :]
            dx = dx + dt / tau * (J @ dx)
    V_rate = float(-np.log(V[-1] / V[0]) / (times[-1] / tau)) if V[-1] > 0 else float("inf")
    details.update(times=times, X=X, D=Dv, D_dot=Ddot, beta_t=beta_t, beta_proof=float(beta_proof_t.min()),
                   beta_statement=float(beta_stmt_t.min()), V=V, V_rate=V_rate,
                   time_varying=True,
                   metric_note="the metric is P D(x(t)), time-varying; Certificate.metric holds P")
    if beta <= 0:
        k = int(np.argmin(beta_t))
        msg = (f"fails along the simulated trajectory: condition 2 needs beta > 0 but min_t beta(t) = {beta:.4g} "
               f"(at t = {times[k]:.3g}); condition 1 held with c = {c:.4g}")
        return Certificate(name, False, None, float("nan"), beta, msg, details=details)
    msg = (f"holds along the simulated trajectory (t <= {times[-1]:.3g}): c = {c:.4g}, min_t beta(t) = {beta:.4g}, "
           f"so V = dx^T P D dx decays at rate >= beta (measured {V_rate:.4g})")
    return Certificate(name, True, np.diag(p), beta / 2, beta, msg, details=details)


topological_order = _topological_order      # public, for rnnlab.theory.assembly
