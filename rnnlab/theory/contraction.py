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

This module gathers the public names of three, one per page of the chapter:
:mod:`.certificate` holds the certificate, the definitions of appendix A.2 and
the exact check over the slope box (page 1); :mod:`.theorems` Theorems 1-6
(page 2); :mod:`.counterexamples` the C.2 counterexample and Theorem 7 (page
3). Imports go one way: the theorems build on the certificate, the
counterexamples on both, this module on all three, and none of them imports
this one. :mod:`rnnlab.theory` exports the same names.
"""
from . import certificate, counterexamples, theorems
from .certificate import *  # noqa: F403  (the names of each module's __all__)
from .counterexamples import *  # noqa: F403
from .theorems import *  # noqa: F403

__all__ = [*certificate.__all__, *theorems.__all__, *counterexamples.__all__]
