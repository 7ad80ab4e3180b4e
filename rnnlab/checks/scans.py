"""The code exercises of the scans chapter (book/scans/), declared for rnnlab.checks.

Every reference answer comes from the package (the counting scans of
:mod:`rnnlab.kernels.scan_algorithms`, :func:`rnnlab.linear_scan_ref` and
autograd through it) or, where the package has no such function, from its
plain NumPy definition; never from a copy of the book's solution.
"""
from .core import Case, exercise

NB1 = "scans/01_associative_scan"
NB2 = "scans/02_gradients_and_kernels"


def _counting_scan(algorithm, n, *args):
    """The counting scan ``algorithm`` of scan_algorithms on ``n`` identity-like pairs."""
    import numpy as np

    from rnnlab.kernels import scan_algorithms as sa

    return getattr(sa, algorithm)(np.ones(n), np.zeros(n), *args)


# ------------------------------------------------------------ 01_associative_scan

_COUNTED = {"hillis_steele": "hillis_steele_scan", "blelloch": "blelloch_scan"}


def _work_and_depth(algorithm, n):
    r = _counting_scan(_COUNTED[algorithm], n)
    return (r.work, r.depth)


exercise(
    "ex-scans-counts", notebook=NB1, name="work_and_depth",
    signature="work_and_depth(algorithm, n)",
    reference=_work_and_depth,
    cases=lambda: [Case((alg, n), show=f'algorithm = "{alg}", n = {n}')
                   for alg, ns in (("hillis_steele", (1, 3, 300, 1024)),
                                   ("blelloch", (1, 8, 5, 4097)))
                   for n in ns],
    hint="count the combines of each step by hand for a small n that is not a power of two, "
         "and compare with the powers of two on either side of it.",
    hints=("Hillis-Steele: step d has offset 2^(d-1) and updates the slots t > 2^(d-1), and the "
         "last offset may be well below n when n is not a power of two. Blelloch: count one "
         "up-sweep and one down-sweep level for n = 2^k first; other lengths are padded with "
         "identities to the next power of two before the sweeps.",),
    fixed=True,
)


def _segmented_sums(x, starts):
    """Running sums that restart at ``starts``, by their definition (one
    ``numpy.cumsum`` per segment)."""
    import numpy as np

    x = np.asarray(x)
    cuts = [s for s in starts if s > 0]
    return np.concatenate([np.cumsum(part) for part in np.split(x, cuts)])


def _segmented_cases():
    import numpy as np

    return [
        Case((np.arange(1, 13), [0, 4, 5, 9]),
             show="x = np.arange(1, 13), starts = [0, 4, 5, 9]"),
        Case((np.arange(1, 7), []), show="x = np.arange(1, 7), starts = [] (one segment)"),
        Case((np.array([2.0, -1.0, 0.5, 3.0, -2.0]), [2]),
             show="x = [2.0, -1.0, 0.5, 3.0, -2.0], starts = [2]"),
        Case((np.array([4.0, 5.0, 6.0]), [0, 1, 2]),
             show="x = [4.0, 5.0, 6.0], starts = [0, 1, 2]"),
        Case((np.arange(1, 9), [7]), show="x = np.arange(1, 9), starts = [7]"),
        Case((np.array([7.0]), [0]), show="x = [7.0], starts = [0]"),
    ]


exercise(
    "ex-scans-segmented", notebook=NB1, name="segmented_sums",
    signature="segmented_sums(x, starts)",
    reference=_segmented_sums,
    cases=_segmented_cases,
    hint="a transition a_t = 0 makes step t forget the past and a_t = 1 keeps it; "
         "choose the pairs (a_t, b_t) so that the second components of the scan are "
         "the sums you want.",
)


def _chunked_torch_reference(a, b, p):
    """The inclusive scan ``(A_t, B_t)`` along time: ``A`` the running product of
    ``a``, ``B`` the states from ``h_0 = 0`` (``p`` changes nothing)."""
    import torch

    from rnnlab import linear_scan_ref

    return torch.cumprod(a, dim=1), linear_scan_ref(a, b)


def _chunked_torch_cases():
    cases = []
    for seed, (B, T, C), p in [(41, (1, 16, 1), 4), (42, (2, 12, 3), 3), (43, (1, 8, 2), 1),
                               (44, (2, 8, 1), 8), (45, (3, 10, 2), 5)]:
        a, b, _, _ = _problem(seed, B, T, C, _float64())
        cases.append(Case((a, b, p), show=f"float64, B, T, C = {B}, {T}, {C}, p = {p}"))
    return cases


def _float64():
    import torch

    return torch.float64


exercise(
    "ex-scans-chunked-torch", notebook=NB1, name="chunked_scan_torch",
    signature="chunked_scan_torch(a, b, p)",
    reference=_chunked_torch_reference,
    cases=_chunked_torch_cases,
    difficulty=3,
    hint="reshape (B, T, C) to (B, p, L, C) so that chunk c is row c; then every loop runs "
         "over the L steps of a chunk for all chunks at once. The carry of chunk c composes "
         "the totals of chunks 0 .. c - 1 (the identity for chunk 0).",
)


def _reset_layer_reference(x, a, W, starts):
    """The states of ``h_t = a_t * h_{t-1} + x_t W`` from ``h_0 = 0``, with ``a_t = a`` and
    ``a_t = 0`` where ``starts`` is True, by the package's loop."""
    from rnnlab import linear_scan_ref

    b = x @ W
    a_t = a * (~starts).to(b.dtype).unsqueeze(-1)
    return linear_scan_ref(a_t.contiguous(), b)


def _reset_layer_cases():
    import torch

    cases = []
    for seed, (B, T, D, C) in [(51, (1, 6, 1, 1)), (52, (2, 16, 3, 4)), (53, (3, 13, 2, 5)),
                               (54, (2, 1, 2, 3)), (55, (1, 100, 4, 2))]:
        gen = torch.Generator().manual_seed(seed)
        x = torch.randn(B, T, D, generator=gen, dtype=torch.float64)
        a = 2 * torch.rand(C, generator=gen, dtype=torch.float64) - 1
        W = torch.randn(D, C, generator=gen, dtype=torch.float64) / D ** 0.5
        starts = torch.rand(B, T, generator=gen) < 0.2
        starts[:, 0] = seed % 2 == 0          # a start at t = 1 changes nothing (h_0 = 0)
        cases.append(Case((x, a, W, starts),
                          show=f"float64, B, T = {B}, {T}, d_in = {D}, C = {C}, "
                               f"{int(starts.sum())} starts"))
    return cases


exercise(
    "ex-scans-layer", notebook=NB1, name="layer_with_resets",
    signature="layer_with_resets(x, a, W, starts)",
    reference=_reset_layer_reference,
    cases=_reset_layer_cases,
    difficulty=2,
    hint="a transition a_t = 0 makes the state forget the past; build the transitions of all "
         "steps as a tensor (B, T, C), equal to a except where a sequence starts, and scan.",
)


def _swapped_reference(a, b):
    """What Hillis-Steele computes with every combine's operands swapped: step d writes
    ``x_t o x_{t - 2^(d-1)}``, i.e. ``(a_t a_s, a_s b_t + b_s)``, into slot t, slot by slot."""
    import torch

    a, b = a.clone(), b.clone()
    T, offset = a.shape[1], 1
    while offset < T:
        old_a, old_b = a.clone(), b.clone()
        for t in range(offset, T):
            s = t - offset
            a[:, t] = old_a[:, t] * old_a[:, s]
            b[:, t] = old_a[:, s] * old_b[:, t] + old_b[:, s]
        offset *= 2
    return a, b


def _swapped_cases():
    cases = []
    for seed, (B, T, C) in [(61, (1, 6, 1)), (62, (2, 8, 3)), (63, (1, 13, 2)), (64, (2, 1, 1))]:
        a, b, _, _ = _problem(seed, B, T, C, _float64())
        cases.append(Case((a, b), show=f"float64, B, T, C = {B}, {T}, {C}"))
    return cases


exercise(
    "ex-scans-swap", notebook=NB1, name="swapped_hillis_steele",
    signature="swapped_hillis_steele(a, b)",
    reference=_swapped_reference,
    cases=_swapped_cases,
    difficulty=1,
    hint="copy hillis_steele_torch and exchange the roles of the two slices a[:, :-offset] "
         "(the earlier slot) and a[:, offset:] (the later one) in the combine, for a and b.",
)


# ------------------------------------------------------------ 02_gradients_and_kernels

def _problem(seed, B, T, C, dtype, shared_a=False, with_h0=True):
    """A seeded random recurrence: transitions of modulus in [0.5, 1) (a random
    sign, or phase when complex), normal inputs ``b``, ``h0`` and ``g``."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    shape = (C,) if shared_a else (B, T, C)
    modulus = 0.5 + 0.5 * torch.rand(shape, generator=gen, dtype=torch.float64)
    if dtype.is_complex:
        angle = 2 * torch.pi * torch.rand(shape, generator=gen, dtype=torch.float64)
        a = torch.polar(modulus, angle)
    else:
        a = modulus * torch.sign(torch.randn(shape, generator=gen, dtype=torch.float64))
    b = torch.randn(B, T, C, generator=gen, dtype=dtype)
    h0 = torch.randn(B, C, generator=gen, dtype=dtype) if with_h0 else None
    g = torch.randn(B, T, C, generator=gen, dtype=dtype)
    return a.to(dtype), b, h0, g


def _describe(dtype, B, T, C, shared_a=False, h0="(B, C)"):
    name = str(dtype).replace("torch.", "")
    a = "(C,)" if shared_a else "(B, T, C)"
    return f"{name}, B, T, C = {B}, {T}, {C}: a {a}, b (B, T, C), h0 {h0}"


def _reverse_reference(a, b, h0=None):
    from rnnlab import linear_scan_ref

    return linear_scan_ref(a, b, h0, reverse=True)


def _backward_reference(a, h, h0, g):
    """The gradients of a, b and h0 through h = linear_scan_ref(a, b, h0), by autograd.
    ``h`` is the stored output; b enters only through it, so any b that gives h works."""
    import torch

    from rnnlab import linear_scan_ref

    h_prev = torch.cat([h0[:, None], h[:, :-1]], dim=1)
    b = h - a * h_prev                                     # h_t - a_t h_{t-1}
    leaves = [x.clone().requires_grad_(True) for x in (a, b, h0)]
    return tuple(torch.autograd.grad(linear_scan_ref(*leaves), leaves, g))


def _backward_cases():
    import torch

    from rnnlab import linear_scan_ref

    f64, c128 = torch.float64, torch.complex128
    cases = []
    setups = [(31, f64, (2, 5, 3)), (32, c128, (2, 5, 3)), (33, c128, (2, 1, 3)),
              (34, f64, (1, 4, 1)), (35, c128, (1, 7, 2))]
    for seed, dtype, (B, T, C) in setups:
        a, b, h0, g = _problem(seed, B, T, C, dtype)
        h = linear_scan_ref(a, b, h0)
        show = (_describe(dtype, B, T, C).replace("b (B, T, C)", "h (B, T, C)")
                + ", g (B, T, C)")
        cases.append(Case((a, h, h0, g), show=show))
    return cases


exercise(
    "ex-scans-backward", notebook=NB2, name="scan_backward",
    signature="scan_backward(a, h, h0, g)",
    reference=_backward_reference,
    cases=_backward_cases,
    hint="walk t from the last step to the first: G_t = g_t + carry, then the carry for "
         "step t - 1 is conj(a_t) G_t. The gradient of a_t multiplies G_t by the conjugated "
         "state before step t; the carry left after step 1 is the gradient of h0.",
)


def _flip_cases():
    import torch

    f64, c128 = torch.float64, torch.complex128
    cases = []
    setups = [(1, f64, (2, 5, 3), True), (2, c128, (2, 5, 3), True), (3, f64, (1, 6, 2), False),
              (4, c128, (2, 1, 3), True), (5, f64, (1, 4, 1), True)]
    for seed, dtype, (B, T, C), with_h0 in setups:
        a, b, h0, _ = _problem(seed, B, T, C, dtype, with_h0=with_h0)
        args = (a, b, h0) if with_h0 else (a, b)
        show = _describe(dtype, B, T, C, h0="(B, C)" if with_h0 else "omitted")
        cases.append(Case(args, show=show))
    return cases


exercise(
    "ex-scans-flip", notebook=NB2, name="reverse_by_flipping",
    signature="reverse_by_flipping(a, b, h0=None)",
    reference=_reverse_reference,
    cases=_flip_cases,
    hint="which dimension of a (B, T, C) tensor is time? Flip every input that varies "
         "along it, scan forwards, and think about the order of the result.",
)


def _shared_grad_reference(a, b, h0, g):
    import torch

    from rnnlab import linear_scan_ref

    a = a.clone().requires_grad_(True)
    (grad_a,) = torch.autograd.grad(linear_scan_ref(a, b, h0), a, g)
    return grad_a


def _shared_cases():
    import torch

    f64, c128 = torch.float64, torch.complex128
    cases = []
    setups = [(11, f64, (2, 5, 3), False), (12, c128, (2, 5, 3), False),
              (13, c128, (2, 1, 3), False), (14, f64, (1, 4, 1), False),
              (15, c128, (2, 6, 2), True)]
    for seed, dtype, (B, T, C), zero_h0 in setups:
        a, b, h0, g = _problem(seed, B, T, C, dtype, shared_a=True)
        if zero_h0:
            h0 = torch.zeros_like(h0)
        show = _describe(dtype, B, T, C, shared_a=True, h0="zeros (B, C)" if zero_h0 else "(B, C)")
        cases.append(Case((a, b, h0, g), show=show + ", g (B, T, C)"))
    return cases


exercise(
    "ex-scans-shared", notebook=NB2, name="shared_transition_grad",
    signature="shared_transition_grad(a, b, h0, g)",
    reference=_shared_grad_reference,
    cases=_shared_cases,
    hint="the shared a_c is used at every step of every sequence: add up the per-step "
         "gradients of the complex backward-pass proposition (mind the conjugates and "
         "which state multiplies a_t).",
)


def _matrix_loop(A, b, h0):
    """The states of h_t = A_t h_{t-1} + b_t, a plain loop: (B, T, N)."""
    import torch

    h, states = h0, []
    for t in range(A.shape[1]):
        h = (A[:, t] @ h[..., None])[..., 0] + b[:, t]
        states.append(h)
    return torch.stack(states, dim=1)


def _matrix_grads_reference(A, b, h0, g):
    import torch

    leaves = [x.clone().requires_grad_(True) for x in (A, b, h0)]
    return tuple(torch.autograd.grad(_matrix_loop(*leaves), leaves, g))


def _matrix_problem(seed, B, T, N, dtype):
    """Seeded random matrix transitions (entries of standard deviation 0.5 / sqrt(N)),
    inputs, initial states and direct gradients."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    A = torch.randn(B, T, N, N, generator=gen, dtype=dtype) * (0.5 / N ** 0.5)
    b = torch.randn(B, T, N, generator=gen, dtype=dtype)
    h0 = torch.randn(B, N, generator=gen, dtype=dtype)
    g = torch.randn(B, T, N, generator=gen, dtype=dtype)
    return A, b, h0, g


def _matrix_cases():
    import torch

    f64, c128 = torch.float64, torch.complex128
    setups = [(21, f64, (2, 5, 3)), (22, c128, (2, 5, 3)), (23, c128, (1, 1, 2)),
              (24, f64, (1, 4, 1)), (25, c128, (2, 6, 4))]
    cases = []
    for seed, dtype, (B, T, N) in setups:
        name = str(dtype).replace("torch.", "")
        show = (f"{name}, B, T, N = {B}, {T}, {N}: A (B, T, N, N), b (B, T, N), "
                "h0 (B, N), g (B, T, N)")
        cases.append(Case(_matrix_problem(seed, B, T, N, dtype), show=show))
    return cases


exercise(
    "ex-scans-matrix-backward", notebook=NB2, name="matrix_scan_grads",
    signature="matrix_scan_grads(A, b, h0, g)",
    reference=_matrix_grads_reference,
    cases=_matrix_cases,
    hint="write the part of dL that flows through h_t as Re(G_t^H dh_t) and move A_t to "
         "the other side of the product: a number's conjugate becomes a matrix's conjugate "
         "transpose. The gradient of A_t is an outer product of two vectors.",
)


# ex-scans-chunks (the chunked scan's depth) moved with the CUDA kernels to the Performance page,
# book/lds/05_speed: it is declared in rnnlab/checks/lds.py.


# ------------------------------------------------------------ hidden cases (python -m rnnlab grade)
# Drawn with the teacher's seeded NumPy generator; the same shapes and ranges as the public cases.

from .core import hidden  # noqa: E402


@hidden("ex-scans-counts")
def _counts_hidden(rng):
    return [Case((alg, int(n))) for alg in ("hillis_steele", "blelloch")
            for n in rng.choice(range(6, 3000), size=2, replace=False)]


@hidden("ex-scans-segmented")
def _segmented_hidden(rng):
    cases = []
    for n in (9, 14):
        starts = sorted(int(s) for s in rng.choice(n, size=3, replace=False))
        cases.append(Case((rng.normal(size=n), starts)))
    return cases


def _seeded_problem(rng, B, T, C, dtype, **kwargs):
    return _problem(int(rng.integers(2 ** 31)), B, T, C, dtype, **kwargs)


@hidden("ex-scans-backward")
def _backward_hidden(rng):
    import torch

    from rnnlab import linear_scan_ref

    cases = []
    for dtype in (torch.float64, torch.complex128):
        a, b, h0, g = _seeded_problem(rng, 2, 6, 3, dtype)
        cases.append(Case((a, linear_scan_ref(a, b, h0), h0, g)))
    return cases


@hidden("ex-scans-flip")
def _flip_hidden(rng):
    import torch

    a, b, h0, _ = _seeded_problem(rng, 2, 6, 3, torch.complex128)
    a2, b2, _, _ = _seeded_problem(rng, 1, 5, 2, torch.float64, with_h0=False)
    return [Case((a, b, h0)), Case((a2, b2))]


@hidden("ex-scans-shared")
def _shared_hidden(rng):
    import torch

    return [Case(_seeded_problem(rng, 2, 5, 3, dtype, shared_a=True)) for dtype in (torch.float64, torch.complex128)]


@hidden("ex-scans-matrix-backward")
def _matrix_hidden(rng):
    import torch

    return [Case(_matrix_problem(int(rng.integers(2 ** 31)), 2, 5, 3, dtype))
            for dtype in (torch.float64, torch.complex128)]
