"""Simulation and the empirical contraction check.

Every certificate in :mod:`rnnlab.theory.contraction` makes a claim about two
trajectories of the same network under the same input: their distance in the
metric ``M`` shrinks at least like ``exp(-lambda t / tau)``. This module puts
the claim to the test: it integrates the network with explicit Euler steps,
as the paper's code does (appendix E.3), from two initial states, and measures
the decay of ``||x_a - x_b||_M``.

The comparison is exact, not heuristic: by the mean-value theorem the
difference obeys ``d_{k+1} = (I + alpha J(Dbar_k)) d_k`` with ``alpha = dt/tau``
and ``Dbar_k`` a diagonal of slopes in ``[0, g]``, so a valid certificate
(``M J + J^T M <= -2 lambda M`` for all such ``D``) guarantees every Euler step
the factor ``sqrt(1 - 2 alpha lambda + alpha^2 K^2)`` with ``K`` a bound on
``||M^{1/2} J M^{-1/2}||``. :func:`empirical_contraction` reports whether every
step met that guarantee.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .activations import get_activation

__all__ = ["simulate", "empirical_contraction", "check_certificate", "EmpiricalCheck", "euler_rate_bound"]


def _input_fn(u, n, steps, dt):
    if u is None:
        return lambda k: 0.0
    if callable(u):
        return lambda k: np.asarray(u(k * dt), dtype=float)
    u = np.asarray(u, dtype=float)
    if u.shape == (n,):
        return lambda k: u
    if u.ndim == 2 and u.shape[1] == n and u.shape[0] >= steps:
        return lambda k: u[k]
    raise ValueError(f"u must be None, a callable t -> ({n},), a constant ({n},) vector or a "
                     f"({steps}, {n}) array, got shape {u.shape}")


def simulate(W, x0, *, T=None, steps=None, dt=0.01, tau=1.0, u=None, activation="relu", L=None, form="x"):
    """Integrate the RNN with explicit Euler steps.

    ``form="x"``: equation (1)/(2), ``tau dx/dt = -x + W phi(x) + L x + u``;
    ``form="y"``: the firing-rate form (4), ``tau dy/dt = -y + phi(W y + u) + L y``.
    ``x0`` is one state ``(n,)`` or a batch ``(k, n)`` (all driven by the same
    input). Give the horizon as ``T`` (time) or ``steps``. ``u`` is None, a
    constant vector, a ``(steps, n)`` array or a callable of time.
    Returns ``(times, X)`` with ``X`` of shape ``(steps + 1,) + x0.shape``.
    """
    W = np.asarray(W, dtype=float)
    if W.ndim != 2 or W.shape[0] != W.shape[1]:
        raise ValueError(f"W must be square, got shape {W.shape}")
    n = W.shape[0]
    x0 = np.asarray(x0, dtype=float)
    if x0.shape[-1] != n or x0.ndim not in (1, 2):
        raise ValueError(f"x0 must have shape ({n},) or (k, {n}), got {x0.shape}")
    if form not in ("x", "y"):
        raise ValueError(f"form must be 'x' or 'y', got {form!r}")
    if dt <= 0 or tau <= 0:
        raise ValueError(f"dt and tau must be > 0, got dt={dt}, tau={tau}")
    if (T is None) == (steps is None):
        raise ValueError("give exactly one of T and steps")
    steps = int(round(T / dt)) if steps is None else int(steps)
    act = get_activation(activation)
    Lm = np.zeros((n, n)) if L is None else np.asarray(L, dtype=float)
    if Lm.shape != (n, n):
        raise ValueError(f"L must have shape {(n, n)}, got {Lm.shape}")
    uf = _input_fn(u, n, steps, dt)
    a = dt / tau
    X = np.empty((steps + 1,) + x0.shape)
    X[0] = x = x0
    for k in range(steps):
        if form == "x":
            f = -x + act.phi(x) @ W.T + x @ Lm.T + uf(k)
        else:
            f = -x + act.phi(x @ W.T + uf(k)) + x @ Lm.T
        x = x + a * f
        X[k + 1] = x
    return np.arange(steps + 1) * dt, X


def _sqrt_pair(M):
    """``M^{1/2}`` and ``M^{-1/2}`` (symmetric), or the diagonal versions."""
    M = np.asarray(M, dtype=float)
    if M.ndim == 1:
        s = np.sqrt(M)
        return np.diag(s), np.diag(1 / s)
    w, V = np.linalg.eigh((M + M.T) / 2)
    if w.min() <= 0:
        raise ValueError("metric is not positive definite")
    return (V * np.sqrt(w)) @ V.T, (V / np.sqrt(w)) @ V.T


def jacobian_norm_bound(W, M, g=1.0, *, L=None, form="x"):
    """``K >= ||M^{1/2} J M^{-1/2}||_2`` for every slope diagonal in ``[0, g]``."""
    W = np.asarray(W, dtype=float)
    n = W.shape[0]
    Mh, Mih = _sqrt_pair(M)
    diagonal = np.asarray(M).ndim == 1 or np.allclose(M, np.diag(np.diag(M)))
    if diagonal:
        part = g * np.linalg.norm(Mh @ W @ Mih, 2)
    elif form == "x":
        part = g * np.linalg.norm(Mh @ W, 2) * np.linalg.norm(Mih, 2)
    else:
        part = g * np.linalg.norm(Mh, 2) * np.linalg.norm(W @ Mih, 2)
    K = 1.0 + part
    if L is not None:
        K += np.linalg.norm(Mh @ np.asarray(L, dtype=float) @ Mih, 2)
    return float(K)


def euler_rate_bound(rate, K, alpha):
    """The per-step rate that a continuous-time rate ``lambda`` guarantees for Euler.

    ``||I + alpha F||^2 <= 1 - 2 alpha lambda + alpha^2 K^2`` when
    ``F_sym <= -lambda I`` and ``||F|| <= K``; returned as
    ``-log(sqrt(.)) / alpha`` (so it tends to ``lambda`` as ``alpha -> 0``,
    and is negative when the step is too large for the bound to guarantee
    contraction).
    """
    q = 1.0 - 2.0 * alpha * rate + alpha * alpha * K * K
    if q <= 0:
        return float("inf")
    return float(-0.5 * np.log(q) / alpha)


@dataclass
class EmpiricalCheck:
    """Outcome of :func:`empirical_contraction`."""

    times: np.ndarray
    distances: np.ndarray
    rate: float
    worst_step_rate: float
    certified_rate: float | None = None
    euler_bound: float | None = None
    agrees: bool | None = None
    details: dict = field(default_factory=dict)

    def __str__(self):
        s = (f"empirical contraction: distance {self.distances[0]:.3g} -> {self.distances[-1]:.3g} "
             f"over t = {self.times[-1]:.3g}; overall rate {self.rate:.4g}, slowest step {self.worst_step_rate:.4g}")
        if self.certified_rate is not None:
            verdict = ("every step agrees" if self.agrees else
                       "DISAGREES with the certificate" if self.agrees is not None else
                       "inconclusive: the Euler step is too large for the certificate to guarantee "
                       "that the discrete map contracts")
            s += (f"\n  certified rate {self.certified_rate:.4g} (Euler guarantee per step {self.euler_bound:.4g}): "
                  + verdict)
        return s


MAX_AUTO_STEPS = 400_000


def piecewise_input(n, *, T=20.0, period=0.5, scale=2.0, seed=0):
    """A random piecewise-constant input ``u(t)``: a new normal level (standard
    deviation ``scale``) every ``period`` time units up to ``T``, held after.

    It drives units in and out of their linear range, so the slopes visit many
    corners of the slope box; as a function of time it works with any Euler step.
    """
    levels = np.random.default_rng(seed).normal(scale=scale, size=(int(np.ceil(T / period)) + 1, n))
    last = len(levels) - 1
    return lambda t: levels[min(int(t / period), last)]


def euler_step_for(rate, K, tau=1.0, dt_max=0.01):
    """The Euler step ``dt`` used to confront a certificate with simulation.

    The largest ``dt <= dt_max`` with ``alpha = dt / tau <= rate / (2 K^2)``:
    then :func:`euler_rate_bound` is positive (``1 - 2 alpha rate + alpha^2
    K^2 <= 1 - 3 alpha rate / 2 < 1``), so the certificate guarantees that
    every Euler step contracts and a simulation can confirm or refute it.
    """
    if rate <= 0 or K <= 0:
        raise ValueError(f"rate and K must be > 0, got rate={rate}, K={K}")
    return float(min(dt_max, tau * 0.5 * rate / K**2))


def empirical_contraction(W, metric, *, x0=None, u=None, T=10.0, dt=None, tau=1.0, activation="relu", L=None,
                          form="x", certified_rate=None, rng=None, scale=3.0, floor=1e-9):
    """Simulate two trajectories under the same input and measure their M-distance.

    ``x0`` is a ``(2, n)`` pair of initial states (random normal with standard
    deviation ``scale`` by default). The analysis stops once the distance has
    fallen below ``floor`` times its initial value (round-off takes over).
    Rates are in units of ``1/tau``: ``rate = -log(d_end / d_0) / (t_end /
    tau)``, ``worst_step_rate = min_k -log(d_{k+1} / d_k) / alpha``. With
    ``certified_rate`` given, ``agrees`` says whether every step met the
    Euler guarantee :func:`euler_rate_bound` (exact for a valid certificate);
    when that guarantee is not positive (the step ``dt / tau`` is too large
    for the certificate to promise that the Euler map contracts), the check is
    inconclusive and ``agrees`` is None. A simulation that overflows is
    reported in ``details["diverged"]``. ``dt=None`` picks the step with
    :func:`euler_step_for` (a certificate's guarantee holds for it), or 0.01
    without a certificate; ``u`` as an array must then have a row per step,
    so prefer a callable of time.
    """
    W = np.asarray(W, dtype=float)
    n = W.shape[0]
    rng = np.random.default_rng(rng)
    if x0 is None:
        x0 = rng.normal(scale=scale, size=(2, n))
    x0 = np.asarray(x0, dtype=float)
    if x0.shape != (2, n):
        raise ValueError(f"x0 must be a (2, {n}) pair of initial states, got {x0.shape}")
    Mh, _ = _sqrt_pair(metric)
    K = None
    if certified_rate is not None:
        K = jacobian_norm_bound(W, metric, get_activation(activation).g, L=L, form=form)
    if dt is None:
        dt = euler_step_for(certified_rate, K, tau) if certified_rate is not None and certified_rate > 0 else 0.01
        if T / dt > MAX_AUTO_STEPS:
            raise ValueError(
                f"confronting rate {certified_rate:.3g} with simulation needs Euler steps dt <= {dt:.3g} "
                f"(Jacobian bound K = {K:.3g}), {T / dt:.0f} steps for T = {T}: shorten T, or pass dt "
                f"(a larger step leaves the check inconclusive)")
    with np.errstate(over="ignore", invalid="ignore"):
        times, X = simulate(W, x0, T=T, dt=dt, tau=tau, u=u, activation=activation, L=L, form=form)
        d = np.linalg.norm((X[:, 0] - X[:, 1]) @ Mh.T, axis=1)
    diverged = not np.all(np.isfinite(d))
    if diverged:  # keep the finite prefix: the distance grew without bound
        n_finite = int(np.argmin(np.isfinite(d)))
        times, d = times[:n_finite], d[:n_finite]
    if d[0] == 0:
        raise ValueError("the two initial states coincide")
    keep = np.nonzero(d > floor * d[0])[0]
    last = int(keep[-1]) if keep.size else 0
    last = max(last, 1)
    alpha = dt / tau
    with np.errstate(divide="ignore"):
        step_rates = -np.log(d[1:last + 1] / d[:last]) / alpha
    rate = float(-np.log(d[last] / d[0]) / (times[last] / tau))
    worst = float(step_rates.min())
    out = EmpiricalCheck(times=times[:last + 1], distances=d[:last + 1], rate=rate, worst_step_rate=worst,
                         details={"step_rates": step_rates, "alpha": alpha, "diverged": diverged})
    if certified_rate is not None:
        bound = euler_rate_bound(certified_rate, K, alpha)
        out.certified_rate = float(certified_rate)
        out.euler_bound = bound
        out.agrees = bool(worst >= bound - 1e-9) if bound > 0 and not diverged else None
        out.details["K"] = K
    return out


def check_certificate(cert, W, **kwargs):
    """Confront a certificate with simulation (:func:`empirical_contraction`).

    Uses the certificate's metric, rate, system form and, for assemblies, its
    feedback ``L`` (``cert.details["L"]``). Keyword arguments go to
    :func:`empirical_contraction` (activation, input, horizon...).
    """
    if not cert.holds or cert.metric is None:
        raise ValueError("only a certificate that holds and carries a metric can be checked")
    if cert.details.get("time_varying"):
        raise ValueError("this certificate's metric is time-varying (Theorem 6); its own details hold the "
                         "check along the trajectory")
    kwargs.setdefault("form", cert.form)
    if "L" in cert.details and "L" not in kwargs:
        kwargs["L"] = cert.details["L"]
    return empirical_contraction(W, cert.metric, certified_rate=cert.rate, **kwargs)


input_fn = _input_fn      # public, for rnnlab.theory.theorems
