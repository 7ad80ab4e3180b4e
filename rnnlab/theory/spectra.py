"""Spectra of recurrent matrices (Tumma et al. 2024, appendices A.5-A.7 and A.11.5).

Small functions over one matrix ``(n, n)`` or a stack ``(G, n, n)`` (a cell's
G recurrent matrices), all computed in float64 (complex128 for complex input):

- :func:`spectral_radius` ``ρ(W) = max |λ_i|`` and :func:`spectral_norm`
  ``‖W‖ = σ_1`` (A.6's two quantities);
- :func:`eigenvalues` sorted by decreasing modulus (the eigenspectra of
  Figures 15, 17, 25) and :func:`singular_values` normalised by the largest
  (the decay curves of Figures 14, 16, 21; A.11.5);
- :func:`effective_rank`: one number for "how fast the singular values
  decay" (A.5.2, A.7). Default: the entropy effective rank of Roy & Vetterli
  (2007), ``exp(−Σ p_i log p_i)`` with ``p_i = σ_i / Σ_j σ_j``; it is n for
  an orthogonal matrix, r for r equal nonzero singular values, and does not
  change when W is scaled, so it measures the *shape* of the normalised
  spectrum the appendix plots. Also: the participation ratio
  ``(Σ σ_i²)² / Σ σ_i⁴`` and the stable rank ``‖W‖_F² / ‖W‖²``;
- :func:`matrix_spectra` (every statistic per matrix) and
  :func:`cell_spectra`, the average over a cell's recurrent matrices that
  A.11.5 plots for the LSTM, GRU and CfC.

Scalar statistics come back as float64 tensors: shape ``()`` for one matrix,
``(G,)`` for a stack (``float(...)`` of the first gives a Python number).
"""
import math

import numpy as np
import torch


EFFECTIVE_RANKS = ("entropy", "participation", "stable")


def as_matrices(W, name="W"):
    """``W`` as a float64 (or complex128) tensor: ``(n, n)`` or ``(G, n, n)``; clear errors otherwise.

    Accepts a torch tensor (detached, moved to the CPU) or a NumPy array.
    """
    if isinstance(W, np.ndarray):
        W = torch.from_numpy(W)
    if not isinstance(W, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor or numpy.ndarray of shape (n, n) or (G, n, n), "
                        f"got {type(W).__name__}")
    if W.dim() not in (2, 3) or W.shape[-1] != W.shape[-2] or W.shape[-1] == 0:
        raise ValueError(f"{name} must be a square matrix (n, n) or a stack of them (G, n, n) with n >= 1, "
                         f"got shape {tuple(W.shape)}")
    if W.dtype == torch.bool:
        raise TypeError(f"{name} must hold numbers, got dtype {W.dtype}")
    dtype = torch.complex128 if W.is_complex() else torch.float64
    return W.detach().to(device="cpu", dtype=dtype)


def spectral_radius(W):
    """``ρ(W) = max_i |λ_i(W)|`` (A.6): ``()`` for ``(n, n)``, ``(G,)`` for ``(G, n, n)``."""
    return torch.linalg.eigvals(as_matrices(W)).abs().amax(-1)


def spectral_norm(W):
    """``‖W‖ = σ_1(W)``, the largest singular value (A.6): ``()`` or ``(G,)``."""
    return torch.linalg.svdvals(as_matrices(W))[..., 0]


def eigenvalues(W):
    """Eigenvalues (complex128) sorted by decreasing modulus (A.7's eigenspectra): ``(n,)`` or ``(G, n)``."""
    lam = torch.linalg.eigvals(as_matrices(W))
    order = torch.argsort(lam.abs(), dim=-1, descending=True, stable=True)
    return torch.gather(lam, -1, order)


def singular_values(W, *, normalise=True):
    """Singular values in decreasing order, divided by the largest when ``normalise`` (A.11.5).

    A.11.5 normalises "the sorted set of singular values by the spectral
    norm", so every decay curve starts at 1. A zero matrix has no such curve:
    its normalised singular values are returned as zeros.
    """
    s = torch.linalg.svdvals(as_matrices(W))
    if not normalise:
        return s
    top = s[..., :1]
    return torch.where(top > 0, s / torch.where(top > 0, top, torch.ones_like(top)), torch.zeros_like(s))


def _entropy_rank(s):
    total = s.sum(-1, keepdim=True)
    p = s / torch.where(total > 0, total, torch.ones_like(total))
    plogp = torch.where(p > 0, p * torch.log(torch.where(p > 0, p, torch.ones_like(p))), torch.zeros_like(p))
    return torch.exp(-plogp.sum(-1))


def effective_rank(W, method="entropy"):
    """Effective rank of ``W`` from its singular values σ: ``()`` or ``(G,)`` (A.5.2, A.7).

    Parameters
    ----------
    W : (n, n) or (G, n, n) tensor or array
    method : ``"entropy"`` (default), ``"participation"`` or ``"stable"``
        - ``"entropy"``: Roy & Vetterli (2007), ``exp(H(p))`` with
          ``p_i = σ_i / Σ σ_j``. Orthogonal: n; r equal nonzero σ: r.
        - ``"participation"``: ``(Σ σ_i²)² / Σ σ_i⁴``, the participation
          ratio of the eigenvalues σ_i² of ``W Wᵀ`` (also n and r above).
        - ``"stable"``: ``Σ σ_i² / σ_1²`` (``‖W‖_F² / ‖W‖²``), the most
          sensitive of the three to the top singular value.

        All three are invariant under ``W → cW``; a slower decay of the
        normalised singular values gives a larger effective rank. A zero
        matrix has effective rank 0.
    """
    if method not in EFFECTIVE_RANKS:
        raise ValueError(f"method must be one of {EFFECTIVE_RANKS}, got {method!r}")
    s = torch.linalg.svdvals(as_matrices(W))
    if method == "entropy":
        return torch.where(s[..., 0] > 0, _entropy_rank(s), torch.zeros_like(s[..., 0]))
    s2 = s ** 2
    if method == "participation":
        den = (s2 ** 2).sum(-1)
        return torch.where(den > 0, s2.sum(-1) ** 2 / torch.where(den > 0, den, torch.ones_like(den)),
                           torch.zeros_like(den))
    top = s2[..., 0]
    return torch.where(top > 0, s2.sum(-1) / torch.where(top > 0, top, torch.ones_like(top)), torch.zeros_like(top))


def matrix_spectra(W, *, method="entropy"):
    """Every statistic of each matrix of ``W`` ``(n, n)`` or ``(G, n, n)``: a dict of tensors.

    Keys: ``spectral_radius``, ``spectral_norm``, ``effective_rank`` (by
    ``method``), ``singular_values`` (normalised by the largest, A.11.5),
    ``eigenvalue_moduli`` (``|λ|`` in decreasing order). One eigen- and one
    singular-value decomposition per matrix.
    """
    W = as_matrices(W)
    if method not in EFFECTIVE_RANKS:
        raise ValueError(f"method must be one of {EFFECTIVE_RANKS}, got {method!r}")
    s = torch.linalg.svdvals(W)
    moduli = torch.sort(torch.linalg.eigvals(W).abs(), dim=-1, descending=True).values
    return {"spectral_radius": moduli[..., 0], "spectral_norm": s[..., 0],
            "effective_rank": effective_rank(W, method), "singular_values": singular_values(W),
            "eigenvalue_moduli": moduli}


def cell_spectra(model, *, method="entropy"):
    """A cell's spectra averaged over its recurrent matrices (A.11.5).

    "For recurrent networks that have more than one set of recurrent weights
    (CfCs, LSTMs, GRUs), [...] we compute and plot a single statistic that
    represents the average over the statistics of each of the individual
    recurrent weight matrices." Each statistic of :func:`matrix_spectra` is
    computed per matrix, then averaged (curves pointwise).

    Parameters
    ----------
    model : a cell with ``recurrent_weights()`` (``rnnlab.models.RNN``, ``LSTM``,
        ``GRU``, ``CfC``), or a tensor ``(G, n, n)`` / ``(n, n)`` of matrices
    method : effective-rank definition, see :func:`effective_rank`

    Returns
    -------
    dict
        The averages (floats for ``spectral_radius``, ``spectral_norm``,
        ``effective_rank``; ``(n,)`` tensors for ``singular_values`` and
        ``eigenvalue_moduli``), ``gates`` (the matrices' names, or indices) and
        ``per_matrix`` (the dict of :func:`matrix_spectra`, ``(G, ...)``).
    """
    if hasattr(model, "recurrent_weights"):
        with torch.no_grad():
            W = model.recurrent_weights()
        gates = tuple(getattr(model, "gate_names", range(W.shape[0])))
    else:
        W = as_matrices(model, "model")
        W = W if W.dim() == 3 else W[None]
        gates = tuple(range(W.shape[0]))
    per = matrix_spectra(as_matrices(W, "model.recurrent_weights()"), method=method)
    out = {k: (float(v.mean()) if v.dim() == 1 else v.mean(0)) for k, v in per.items()}
    out["gates"] = gates
    out["per_matrix"] = per
    return out


def truncated_haar_mean_modulus(ratio):
    """Mean ``|λ|`` of the eigenvalues of a ``k × k`` block of a large Haar orthogonal matrix, ``ratio = k/n``.

    Życzkowski & Sommers (2000): at fixed ``μ = k/n`` and large n the
    eigenvalues fill the disk ``|z|² ≤ μ`` with density
    ``(1 − μ)/(π μ) (1 − |z|²)^−2``. Its edge is A.6.3's ``√μ`` (the spectral
    radius); its mean modulus is ``1/√μ − (1 − μ)/μ · artanh √μ``, smaller.
    """
    if not 0.0 < ratio <= 1.0:
        raise ValueError(f"ratio must lie in (0, 1], got {ratio}")
    if ratio == 1.0:
        return 1.0
    a = math.sqrt(ratio)
    return 1.0 / a - (1.0 - ratio) / ratio * math.atanh(a)


entropy_rank = _entropy_rank      # public, for rnnlab.theory.laws
