"""Contraction certificates for the RNN ``tau dx/dt = -x + W phi(x) + u``.

Kozachkov, Ennis, Slotine, "RNNs of RNNs" (NeurIPS 2022), appendices A.2 and C.
One function per theorem decides its condition for a given ``W`` (and slope
bound ``g``, ``0 <= phi' <= g``) and returns a :class:`Certificate`.

Conventions used throughout
---------------------------
- Jacobian of equation (1) ("x form", membrane potentials):
  ``J = -I + W D`` (times ``1/tau``), ``D = diag(phi'(x))`` with entries in
  ``[0, g]``. The firing-rate form (4), ``tau dy/dt = -y + phi(W y + b)``
  ("y form"), has ``J = -I + D W``. A certificate says which form it covers
  (``Certificate.form``); the two differ for Theorem 2.
- ``rate`` (lambda): ``M J + J^T M <= -2 lambda M`` for every admissible
  ``D``, so the ``M``-distance between any two trajectories decays at least
  like ``exp(-lambda t / tau)``. Appendix A.2 writes the same inequality with
  ``beta = 2 lambda``; Corollary 1's proof calls lambda the rate.
- ``margin``: how far the theorem's own condition is from failing, in the
  theorem's own terms (stated in each docstring); negative when it fails.
- For a fixed metric the worst ``D`` over the box ``[0, g]^n`` sits at a
  vertex (the largest eigenvalue of the symmetric part is convex in ``D``),
  so :func:`rate_in_metric` checks the ``2^n`` vertices exactly for small
  ``n``.

LMIs are solved with cvxpy and its open-source solvers (Clarabel, else SCS).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from ..models.combo import (
    lyapunov_metric,
    metzler_diagonal_metric,
    theorem1_matrix,
    theorem1_rate,
)
from .activations import get_activation
from .simulation import _input_fn, simulate

__all__ = [
    "Certificate",
    "sym",
    "jacobian",
    "metric_jacobian_sym",
    "slope_vertices",
    "contraction_rate_continuous",
    "contraction_rate_discrete",
    "certify_continuous",
    "certify_discrete",
    "rate_in_metric",
    "certify_theorem1",
    "theorem1_counterexample",
    "certify_theorem2",
    "certify_theorem3",
    "certify_theorem4",
    "certify_theorem5",
    "certify_theorem6",
    "find_common_metric",
    "theorem7_counterexample",
    "theorem7_critical_c",
    "theorem7_critical_eps",
    "theorem7_conditions",
    "theorem7_margin_grid",
]

_TOL = 1e-7  # LMI margins at or below this count as "no strict solution"


# --------------------------------------------------------------------------- #
# the certificate
# --------------------------------------------------------------------------- #
@dataclass
class Certificate:
    """What a contraction test found.

    ``holds``: the condition held. ``metric``: the metric ``M`` (a full
    matrix) when it held, else None. ``rate``: the certified rate lambda (see
    the module docstring; NaN where there is none). ``margin``: by how much the
    condition held (positive) or failed (negative), in the theorem's terms.
    ``message``: one sentence saying which condition held or failed and by how
    much. ``form``: ``"x"`` (equation 1) or ``"y"`` (equation 4), the system
    the metric is for. ``details``: the intermediate quantities.
    """

    theorem: str
    holds: bool
    metric: np.ndarray | None
    rate: float
    margin: float
    message: str
    form: str = "x"
    details: dict = field(default_factory=dict)

    def __bool__(self):
        return bool(self.holds)

    def __str__(self):
        head = f"{self.theorem}: {'HOLDS' if self.holds else 'FAILS'}"
        lines = [head, f"  {self.message}"]
        if self.metric is not None:
            M = self.metric
            if not np.any(M - np.diag(np.diag(M))):
                kind, w = "diagonal", np.diag(M)
            else:
                kind, w = "full", np.linalg.eigvalsh((M + M.T) / 2)
            cond = w.max() / w.min() if w.min() > 0 else float("inf")
            lines.append(f"  metric: {kind} {M.shape[0]}x{M.shape[0]}, condition number {cond:.3g}")
        if self.holds and np.isfinite(self.rate):
            lines.append(f"  rate lambda = {self.rate:.6g}: distances in the metric shrink like "
                         f"exp(-{self.rate:.4g} t / tau) (system form {self.form})")
        lines.append(f"  margin = {self.margin:.6g}")
        return "\n".join(lines)


# --------------------------------------------------------------------------- #
# input checks and small helpers
# --------------------------------------------------------------------------- #
def _check_W(W, name="W"):
    if isinstance(W, (str, bytes)) or W is None:
        raise TypeError(f"{name} must be a square matrix (array-like), got {type(W).__name__}")
    try:
        W = np.asarray(W, dtype=float)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name} must be a real square matrix: {e}") from None
    if W.ndim != 2 or W.shape[0] != W.shape[1] or W.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty square matrix, got shape {W.shape}")
    if not np.all(np.isfinite(W)):
        raise ValueError(f"{name} has non-finite entries")
    return W


def _check_g(g):
    if isinstance(g, bool) or not isinstance(g, (int, float, np.integer, np.floating)):
        raise TypeError(f"g (the slope bound, 0 <= phi' <= g) must be a real number, got {type(g).__name__}")
    if not (g > 0 and math.isfinite(g)):
        raise ValueError(f"g (the slope bound, 0 <= phi' <= g) must be > 0, got {g}")
    return float(g)


def _check_form(form):
    if form not in ("x", "y"):
        raise ValueError(f"form must be 'x' (equation 1) or 'y' (equation 4), got {form!r}")
    return form


def _as_metric(M, n, name="metric"):
    """A full symmetric positive-definite ``(n, n)`` matrix from a matrix or a diagonal."""
    M = np.asarray(M, dtype=float)
    if M.ndim == 1:
        M = np.diag(M)
    if M.shape != (n, n):
        raise ValueError(f"{name} must have shape ({n}, {n}) or ({n},), got {M.shape}")
    if not np.allclose(M, M.T, rtol=1e-10, atol=1e-12 * max(1.0, np.abs(M).max())):
        raise ValueError(f"{name} must be symmetric")
    M = (M + M.T) / 2
    try:
        np.linalg.cholesky(M)
    except np.linalg.LinAlgError:
        raise ValueError(f"{name} is not positive definite (smallest eigenvalue "
                         f"{np.linalg.eigvalsh(M).min():.3g})") from None
    return M


def _inv_sqrt(M):
    w, V = np.linalg.eigh(M)
    return (V / np.sqrt(w)) @ V.T


def sym(X):
    """Symmetric part ``(X + X^T) / 2``."""
    X = np.asarray(X, dtype=float)
    return (X + np.swapaxes(X, -1, -2)) / 2


def _diag_of(D, n):
    D = np.asarray(D, dtype=float)
    if D.ndim == 2:
        if D.shape != (n, n) or not np.allclose(D, np.diag(np.diag(D))):
            raise ValueError(f"a slope matrix D must be diagonal ({n}, {n})")
        D = np.diag(D)
    if D.shape != (n,):
        raise ValueError(f"a slope vector must have length {n}, got shape {D.shape}")
    if (D < 0).any():
        raise ValueError("slopes must be >= 0 (0 <= phi' <= g)")
    return D


def jacobian(W, D, *, form="x", L=None):
    """``J = -I + W D + L`` (form x, equation 1/2) or ``-I + D W + L`` (form y)."""
    W = _check_W(W)
    n = W.shape[0]
    d = _diag_of(D, n)
    J = -np.eye(n) + (W * d[None, :] if _check_form(form) == "x" else d[:, None] * W)
    if L is not None:
        J = J + _check_W(L, "L")
    return J


def metric_jacobian_sym(W, D, M=None, *, form="x", L=None):
    """``(M J)_sym = (M W D)_sym - M`` (+ ``(M L)_sym``): the matrix that must be ``< 0``.

    This is the expression of the proofs of Theorems 1 and 7 (appendix C.2,
    C.8); with ``M = [[a, m], [m, b]]`` and the 2x2 counterexamples it gives
    the matrices printed in C.8. ``M = None`` means the identity.
    """
    W = _check_W(W)
    n = W.shape[0]
    M = np.eye(n) if M is None else np.asarray(M, dtype=float)
    return sym(M @ jacobian(W, D, form=form, L=L))


def slope_vertices(n, g=1.0, lo=0.0):
    """All ``2^n`` diagonal slope patterns with entries in ``{lo, g}``, shape ``(2^n, n)``.

    ``lo = 0`` and ``g`` are the corners of the box ``0 <= phi' <= g``; use
    ``lo = eps`` for strictly increasing activations (Theorem 7's ``D_1*, D_2*``).
    """
    n = int(n)
    if n < 1 or n > 20:
        raise ValueError(f"n must be between 1 and 20 for vertex enumeration, got {n}")
    return np.array(list(itertools.product([lo, g], repeat=n)), dtype=float)


# --------------------------------------------------------------------------- #
# appendix A.2: the definitions
# --------------------------------------------------------------------------- #
def _stack(J, n=None):
    J = np.asarray(J, dtype=float)
    if J.ndim == 2:
        J = J[None]
    if J.ndim != 3 or J.shape[1] != J.shape[2]:
        raise ValueError(f"J must be a square matrix or a stack (k, n, n), got shape {J.shape}")
    return J


def contraction_rate_continuous(J, M, M_dot=None):
    """Largest ``beta`` with ``dM/dt + M J + J^T M <= -beta M`` (appendix A.2).

    ``J`` may be a stack ``(k, n, n)`` of Jacobians (the minimum over them is
    returned). ``M_dot`` defaults to 0 (a constant metric). The system is
    contracting in ``M`` when the result is positive; the ``M``-distance then
    decays like ``exp(-beta t / 2)``.
    """
    J = _stack(J)
    n = J.shape[1]
    M = _as_metric(M, n)
    Md = np.zeros((n, n)) if M_dot is None else sym(np.asarray(M_dot, dtype=float))
    S = Md + M @ J + np.swapaxes(J, 1, 2) @ M
    Mi = _inv_sqrt(M)
    return float(-np.linalg.eigvalsh(Mi @ sym(S) @ Mi).max())


def contraction_rate_discrete(J, M, M_next=None):
    """Largest ``beta`` with ``J^T M_{t+1} J - M_t <= -beta M_t`` (appendix A.2).

    For ``x_{t+1} = f(x_t, t)`` with Jacobian ``J``; ``M_next`` defaults to
    ``M`` (a constant metric). Contracting when positive: the ``M``-distance
    shrinks by at least ``sqrt(1 - beta)`` per step.
    """
    J = _stack(J)
    n = J.shape[1]
    M = _as_metric(M, n)
    Mn = M if M_next is None else _as_metric(M_next, n, "M_next")
    S = np.swapaxes(J, 1, 2) @ Mn @ J
    Mi = _inv_sqrt(M)
    return float(1.0 - np.linalg.eigvalsh(Mi @ sym(S) @ Mi).max())


def certify_continuous(J, M, M_dot=None):
    """Appendix A.2, continuous time, as a :class:`Certificate` (rate = beta / 2)."""
    beta = contraction_rate_continuous(J, M, M_dot)
    ok = beta > 0
    msg = (f"dM/dt + MJ + J^T M <= -beta M holds with beta = {beta:.4g}" if ok else
           f"dM/dt + MJ + J^T M <= -beta M fails: the best beta is {beta:.4g} <= 0")
    M = _as_metric(M, _stack(J).shape[1])
    return Certificate("Contraction (A.2, continuous time)", ok, M if ok else None,
                       beta / 2 if ok else float("nan"), beta, msg, details={"beta": beta})


def certify_discrete(J, M, M_next=None):
    """Appendix A.2, discrete time, as a :class:`Certificate`.

    ``rate`` is the per-step decay rate ``-log(sqrt(1 - beta))`` of the
    ``M``-distance; ``margin`` is beta.
    """
    beta = contraction_rate_discrete(J, M, M_next)
    ok = beta > 0
    rate = -0.5 * math.log(1 - beta) if 0 < beta < 1 else (float("inf") if beta >= 1 else float("nan"))
    msg = (f"J^T M_next J - M <= -beta M holds with beta = {beta:.4g}" if ok else
           f"J^T M_next J - M <= -beta M fails: the best beta is {beta:.4g} <= 0")
    M = _as_metric(M, _stack(J).shape[1])
    return Certificate("Contraction (A.2, discrete time)", ok, M if ok else None, rate, beta, msg,
                       details={"beta": beta})


def rate_in_metric(W, M, g=1.0, *, form="x", L=None, slopes=None, max_exact_dim=12, samples=4096, rng=0):
    """The contraction rate of the RNN in a given constant metric, over all slopes.

    Returns ``(rate, D_worst, exact)``: ``rate`` is the largest lambda with
    ``M J(D) + J(D)^T M <= -2 lambda M`` for every slope diagonal ``D``;
    positive means contracting in ``M``. With ``slopes=None`` the vertices of
    ``[0, g]^n`` are enumerated (exact, since the worst case is a vertex) when
    ``n <= max_exact_dim``; above that ``samples`` random vertices are tried
    and ``exact`` is False (an upper bound on the true rate, not a proof).
    ``slopes`` may instead be an explicit ``(k, n)`` array of diagonals.
    """
    W = _check_W(W)
    g = _check_g(g)
    n = W.shape[0]
    M = _as_metric(M, n)
    _check_form(form)
    exact = True
    if slopes is None:
        if n <= max_exact_dim:
            Ds = slope_vertices(n, g)
        else:
            r = np.random.default_rng(rng)
            Ds = g * (r.random((samples, n)) < 0.5)
            Ds = np.vstack([Ds, np.zeros(n), np.full(n, g)])
            exact = False
    else:
        Ds = np.asarray(slopes, dtype=float)
        Ds = np.array([_diag_of(D, n) for D in Ds]) if Ds.ndim == 3 else np.atleast_2d(Ds)
        if Ds.shape[1] != n:
            raise ValueError(f"slopes must be (k, {n}) diagonals")
    Mi = _inv_sqrt(M)
    Lm = np.zeros((n, n)) if L is None else _check_W(L, "L")
    worst, worst_D = np.inf, None
    for chunk in np.array_split(Ds, max(1, len(Ds) // 512)):
        if form == "x":
            J = -np.eye(n) + W[None] * chunk[:, None, :] + Lm
        else:
            J = -np.eye(n) + chunk[:, :, None] * W[None] + Lm
        S = sym(M @ J)
        lam = -np.linalg.eigvalsh(Mi @ S @ Mi)[:, -1]
        k = int(np.argmin(lam))
        if lam[k] < worst:
            worst, worst_D = float(lam[k]), chunk[k]
    return worst, worst_D, exact


# --------------------------------------------------------------------------- #
# cvxpy
# --------------------------------------------------------------------------- #
# Clarabel 0.11's chordal-decomposition merge step can panic on sparse LMIs
# (an index underflow in clique_graph.rs); the first attempt skips the merge,
# the second disables the decomposition, SCS is the last resort.
_ATTEMPTS = (
    ("CLARABEL", {"chordal_decomposition_merge_method": "none"}),
    ("CLARABEL", {"chordal_decomposition_enable": False}),
    ("SCS", {}),
)


def _solve(problem, allow_infeasible=False):
    import cvxpy as cp

    installed = cp.installed_solvers()
    last = None
    for solver, opts in _ATTEMPTS:
        if solver not in installed:
            continue
        try:
            problem.solve(solver=solver, **opts)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # noqa: BLE001 - a Rust panic is a BaseException
            last = e
            continue
        if problem.status in ("optimal", "optimal_inaccurate"):
            return problem.status
        if allow_infeasible and problem.status in ("infeasible", "infeasible_inaccurate"):
            return "infeasible"
        last = RuntimeError(f"{solver} returned status {problem.status}")
    raise RuntimeError(f"no open-source SDP solver (Clarabel, SCS) solved the LMI: {last}")


def _psd(expr):
    """Symmetrise a cvxpy expression so that ``>>`` accepts it."""
    return (expr + expr.T) / 2


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
