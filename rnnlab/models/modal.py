"""Modal parameterisations of a single-input linear dynamical system (Kaul, NeurIPS 2020).

A single-input LDS in companion (controllable canonical) form

    s_t = A s_{t-1} + B x_t,      y_t = C s_t + D x_t,

with ``A = companion_matrix(c)`` and ``B = e_1`` is diagonalised by the
Vandermonde matrix of the eigenvalues λ of A (the roots of the polynomial
``z^n + c_1 z^{n-1} + ... + c_n``). In modal coordinates ``s = V s'`` the state
is a diagonal complex recurrence:

    s'_t = λ ⊙ s'_{t-1} + B' x_t,      y_t = Re(C' s'_t) + D x_t + bias,

    B' = V⁻¹ e_1,   B'_i = λ_i^{n-1} / ∏_{j≠i} (λ_i − λ_j),      C' = C V.

This module holds the maths of that change of coordinates and of the ways the
model parameterises λ and C', each a small function named after the equation
it implements, so that the book can show it with ``inspect.getsource``; the
model that uses them is :class:`rnnlab.models.lds.LDS` (which re-exports every
name here, so ``from rnnlab.models.lds import modal_input_weights`` works).
"""
import math

import torch

__all__ = [
    "companion_matrix",
    "monic_coefficients",
    "vandermonde_modes",
    "modal_input_weights",
    "modal_input_weights_naive",
    "modal_output_weights",
    "unit_modulus_eigenvalues",
    "log_polar_eigenvalues",
    "with_conjugates",
    "uniform_angles",
    "random_root_eigenvalues",
    "complex_readout",
    "log_readout",
]


# ---------------------------------------------------------------------------
# Companion form and its diagonalisation
# ---------------------------------------------------------------------------

def companion_matrix(coeffs):
    """Companion matrix of the monic polynomial ``z^n + c_1 z^{n-1} + ... + c_n``.

    ``coeffs`` holds ``(c_1, ..., c_n)`` in its last dimension (any leading
    batch dimensions). The matrix has ``−c`` in its first row and ones on its
    subdiagonal (SciPy's ``scipy.linalg.companion`` convention)::

        A = [[-c_1, -c_2, ..., -c_{n-1}, -c_n],
             [  1,    0,  ...,    0,       0 ],
             [  0,    1,  ...,    0,       0 ],
             ...
             [  0,    0,  ...,    1,       0 ]]

    With ``B = e_1`` the LDS ``s_t = A s_{t-1} + B x_t`` is a shift register
    whose first entry obeys ``z_t = −Σ_k c_k z_{t-k} + x_t``. The
    eigenvalues of A are the roots of the polynomial.
    """
    coeffs = torch.as_tensor(coeffs)
    if coeffs.dim() < 1 or coeffs.shape[-1] < 1:
        raise ValueError("companion_matrix: coeffs must have at least one coefficient, "
                         f"got shape {tuple(coeffs.shape)}")
    n = coeffs.shape[-1]
    A = torch.zeros(coeffs.shape[:-1] + (n, n), dtype=coeffs.dtype, device=coeffs.device)
    A[..., 0, :] = -coeffs
    if n > 1:
        idx = torch.arange(n - 1, device=coeffs.device)
        A[..., idx + 1, idx] = 1
    return A


def monic_coefficients(roots):
    """Coefficients ``(c_1, ..., c_n)`` of ``∏_i (z − λ_i) = z^n + c_1 z^{n-1} + ... + c_n``.

    The inverse of taking the eigenvalues of :func:`companion_matrix`
    (``numpy.poly`` without the leading 1). ``roots`` has shape ``(n,)``.
    """
    roots = torch.as_tensor(roots)
    if roots.dim() != 1:
        raise ValueError(f"monic_coefficients: roots must be 1-d, got shape {tuple(roots.shape)}")
    p = torch.ones(1, dtype=roots.dtype, device=roots.device)
    for r in roots:
        # multiply p(z) by (z - r): coefficients in decreasing powers
        p = torch.cat([p, p.new_zeros(1)]) - r * torch.cat([p.new_zeros(1), p])
    return p[1:]


def vandermonde_modes(lam):
    """Eigenvectors of the companion matrix: ``V[k, i] = λ_i^{-k}``, k = 0..n-1.

    Column i satisfies ``A v_i = λ_i v_i`` for ``A = companion_matrix(c)`` with
    roots λ, scaled so that its first entry is 1; so ``A = V diag(λ) V⁻¹``
    and ``s = V s'`` takes modal coordinates to companion coordinates. Only
    for small n: the powers under- or overflow for large n (which is why the
    model never forms V).
    """
    lam = torch.as_tensor(lam)
    n = lam.shape[-1]
    k = torch.arange(n, device=lam.device, dtype=lam.real.dtype)
    return torch.pow(lam.unsqueeze(-2), -k.to(lam.dtype).unsqueeze(-1))


def modal_input_weights(lam):
    """Modal input weights ``B' = V⁻¹ e_1`` by the stable formula (the author response).

        log B'_i = −Σ_{j≠i} log(1 − λ_j / λ_i)

    which equals ``B'_i = λ_i^{n-1} / ∏_{j≠i} (λ_i − λ_j)`` without forming
    high powers of λ or long products. ``lam`` has shape ``(..., n)`` (one
    companion system per leading index); the result has the same shape.
    Finite as long as the eigenvalues are distinct and non-zero.

    Accuracy: the ratio ``λ_j/λ_i`` is rounded before 1 is subtracted, so two
    eigenvalues a gap ε apart give a relative error of about u/ε (u the unit
    roundoff), the size of the change of B' when an eigenvalue moves by one
    rounding error. Taking the differences first, ``log((λ_i − λ_j)/λ_i)``,
    keeps the error near the naive formula's (tens of u for 16 modes) at the
    same cost; the book's section on the modal form compares the evaluations.
    This function keeps the response's formula.
    """
    lam = torch.as_tensor(lam)
    if not lam.is_complex():
        lam = lam.to(torch.complex128 if lam.dtype == torch.float64 else torch.complex64)
    n = lam.shape[-1]
    ratio = lam.unsqueeze(-2) / lam.unsqueeze(-1)  # ratio[..., i, j] = λ_j / λ_i
    # The diagonal (j = i) is 1 - 1 = 0: add the identity there so that its
    # log is exactly 0 and its gradient stays finite.
    eye = torch.eye(n, dtype=lam.dtype, device=lam.device)
    log_terms = torch.log(1 - ratio + eye)
    return torch.exp(-log_terms.sum(-1))


def modal_input_weights_naive(lam):
    """``B'_i = λ_i^{n-1} / ∏_{j≠i} (λ_i − λ_j)`` computed as written.

    For comparison with :func:`modal_input_weights`: the power and the product
    over- or underflow once n is a few hundred in double precision (sooner in
    single precision: a few dozen for moduli well below 1).
    """
    lam = torch.as_tensor(lam)
    if not lam.is_complex():
        lam = lam.to(torch.complex128 if lam.dtype == torch.float64 else torch.complex64)
    n = lam.shape[-1]
    eye = torch.eye(n, dtype=lam.dtype, device=lam.device)
    diff = lam.unsqueeze(-1) - lam.unsqueeze(-2) + eye  # diff[..., i, j] = λ_i − λ_j, 1 on the diagonal
    return torch.pow(lam, n - 1) / diff.prod(-1)


def modal_output_weights(C, lam):
    """Modal read-out ``C' = C V`` of a companion-form read-out ``C`` (shape ``(m, n)``).

    ``y = C s = C V s' = C' s'``; ``C'_{ji} = Σ_k C_{jk} λ_i^{-k}``. Small n only
    (it forms V). The model trains C' directly instead.
    """
    V = vandermonde_modes(lam)
    C = torch.as_tensor(C).to(V.dtype)
    return C @ V


# ---------------------------------------------------------------------------
# Eigenvalue parameterisations and initialisations
# ---------------------------------------------------------------------------

def unit_modulus_eigenvalues(theta):
    """Unit-modulus eigenvalues: ``ln λ = iθ``, i.e. ``λ = e^{iθ}`` (|λ| = 1).

    Only the angles θ are trained (the author response's long-memory
    parameterisation): the state neither decays nor explodes.
    """
    return torch.polar(torch.ones_like(theta), theta)


def log_polar_eigenvalues(log_r, theta):
    """Free eigenvalues in log-polar form: ``ln λ = ln r + iθ``, i.e. ``λ = r e^{iθ}``.

    Both ``ln r`` and θ are trained; nothing keeps |λ| ≤ 1.
    """
    return torch.polar(torch.exp(log_r), theta)


def with_conjugates(lam_half):
    """A real system's spectrum from one of each conjugate pair: ``[λ, conj(λ)]``.

    Concatenates along the last dimension, so n/2 parameters give n
    eigenvalues closed under conjugation (the companion polynomial is real).
    """
    return torch.cat([lam_half, lam_half.conj()], dim=-1)


def uniform_angles(shape, generator=None, low=-2 * math.pi, high=2 * math.pi, dtype=torch.float32):
    """Angles θ drawn uniformly from ``[low, high]``, by default ``[−2π, 2π]`` (the response's init)."""
    u = torch.rand(shape, generator=generator, dtype=torch.float64)
    return (low + (high - low) * u).to(dtype)


def random_root_eigenvalues(n, num_systems=1, *, generator=None, max_radius=1.0, upper_half=False):
    """Eigenvalues as roots of monic polynomials with random coefficients.

    For each system: the eigenvalues of ``companion_matrix(c)`` with
    ``c_k ~ N(0, 1) / n`` (the author response's initialisation; the scale
    1/n follows the public code), then pulled radially into the disc of
    radius ``max_radius`` (``λ / max(1, |λ|/max_radius)``; None leaves them).

    Returns complex128 of shape ``(num_systems, n)``. With ``upper_half=True``
    it returns ``n`` roots with positive imaginary part instead, one of each
    conjugate pair (for :func:`with_conjugates`), drawing further polynomials
    of degree 2n while real roots leave too few.
    """
    if n < 1:
        raise ValueError(f"random_root_eigenvalues: n must be >= 1, got {n}")
    out = []
    for _ in range(num_systems):
        if not upper_half:
            c = torch.randn(n, generator=generator, dtype=torch.float64) / n
            lam = torch.linalg.eigvals(companion_matrix(c))
        else:
            found = []
            while len(found) < n:
                c = torch.randn(2 * n, generator=generator, dtype=torch.float64) / (2 * n)
                roots = torch.linalg.eigvals(companion_matrix(c))
                found.extend(roots[roots.imag > 1e-9].tolist())
            lam = torch.tensor(found[:n], dtype=torch.complex128)
        if max_radius is not None:
            lam = lam / torch.clamp(lam.abs() / max_radius, min=1.0)
        out.append(lam)
    return torch.stack(out)


# ---------------------------------------------------------------------------
# Read-out parameterisations
# ---------------------------------------------------------------------------

def complex_readout(C_re, C_im):
    """Modal read-out trained directly: ``C' = C_re + i C_im``."""
    return torch.complex(C_re, C_im)


def log_readout(logC_re, logC_im):
    """Modal read-out trained in log space: ``C' = exp(ln|C'| + i arg C')`` (the public code's choice)."""
    return torch.polar(torch.exp(logC_re), logC_im)
