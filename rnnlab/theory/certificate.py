"""The contraction certificate and what every theorem builds on.

Kozachkov, Ennis, Slotine, "RNNs of RNNs" (NeurIPS 2022), appendix A.2: the
:class:`Certificate` every test returns, the Jacobians of the RNN
``tau dx/dt = -x + W phi(x) + u`` (and of the firing-rate form), the
definitions of contraction in continuous and discrete time, the exact check of
a given metric over the slope box (:func:`rate_in_metric`), and the helpers the
theorem modules share: input checks and cvxpy's solvers. The conventions
(forms, rates, margins) are stated once, in :mod:`rnnlab.theory.contraction`.

Imports go one way: :mod:`.theorems` and :mod:`.counterexamples` build on this
module, which imports neither; :mod:`.contraction` gathers the public names of
the three (the chapter's pages 1 to 3) and :mod:`rnnlab.theory` exports them.
Its private helpers (input checks, the LMI solver) are shared with those two
and :mod:`.assembly`.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

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
# input checks and small helpers (shared by the theory modules)
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


# The helpers under public names, for the modules that build on this one (theorems, assembly); they
# keep their underscore names here, which the chapter's listings show.
TOL, check_W, check_g, check_form, as_metric, solve, psd = _TOL, _check_W, _check_g, _check_form, _as_metric, _solve, _psd
