"""The code exercises of the lds chapter (book/lds/), declared for rnnlab.checks.

Each reference computes its answer with the package (``modal_input_weights``,
``LDStackExact`` and ``rnn_reference``, ``modal_stack_scan_ref``, the ``LDS``
model's own ``input_weights``/``output_weights``, the ``LDS`` itself for the
modal LDS written from scratch); the delay line is checked by its impulse
response, whatever eigenvalues the answer chooses. Heavy imports stay inside
the functions.
"""
import math

from .core import Case, close, exercise, hidden


# ----------------------------------------------------------------- helpers

def _c128(values):
    import torch

    return torch.tensor(values, dtype=torch.complex128)


def _polar(r, angle):
    return complex(r * math.cos(angle), r * math.sin(angle))


def _int_list(got, expected):
    """Compare a list of ints, accepting any sequence (tuple, array, tensor) of them."""
    try:
        if hasattr(got, "tolist"):
            got = got.tolist()
        got = list(got)
    except TypeError:
        return close(got, expected)
    if len(got) != len(expected):
        return f"expected {len(expected)} numbers (one per layer), got {len(got)}"
    if any(g != e for g, e in zip(got, expected)):
        return "values differ"
    return None


# ----------------------------------------------------------------- 01_modal_form

def _modal_lds_reference(theta, C, x):
    import torch

    from rnnlab.models import LDS

    n, m = C.shape
    model = LDS(1, n, m, eigenvalues="unit", conjugate_pairs=False, input_weights="ones",
                readout="complex", use_D=False, bias=False).double()
    with torch.no_grad():
        model.theta.copy_(theta.reshape(1, n))
        model.C_re.copy_(C.real)
        model.C_im.copy_(C.imag)
        return model(x)[0]


def _modal_lds_cases():
    import torch

    def case(n, m, B, T, seed, show):
        g = torch.Generator().manual_seed(seed)
        theta = (torch.rand(n, generator=g, dtype=torch.float64) * 4 - 2) * math.pi
        C = torch.complex(torch.randn(n, m, generator=g, dtype=torch.float64),
                          torch.randn(n, m, generator=g, dtype=torch.float64))
        x = torch.randn(B, T, 1, generator=g, dtype=torch.float64)
        return Case((theta, C, x), show=show)

    return [
        case(1, 1, 1, 5, 0, "one mode, one output, one sequence of 5 steps"),
        case(4, 2, 3, 20, 1, "4 modes, 2 outputs, a batch of 3 sequences of 20 steps"),
        case(16, 10, 2, 200, 2, "16 modes, 10 outputs, 200 steps"),
        case(8, 1, 5, 1, 3, "8 modes, sequences of a single step"),
        case(32, 3, 1, 1000, 4, "32 modes, 1000 steps (|lambda| = 1: nothing fades)"),
    ]


exercise(
    "ex-lds-scratch", notebook="lds/01_modal_form", name="modal_lds",
    answers=("rnnlab.models.lds:LDS",),
    signature="modal_lds(theta, W, x)",
    reference=_modal_lds_reference, cases=_modal_lds_cases, rtol=1e-8, atol=1e-8,
    difficulty=2,
    hint="unroll s'_t = lambda * s'_{t-1} + x_t: y_t = sum over tau <= t of K_{t - tau} x_tau "
         "with K_l = Re(sum_j lambda_j^l W_j), lambda = exp(i theta); a T x T table of the "
         "lags t - tau (zero where tau > t) turns the sum into one tensor product.")


def _two_mode_reference(lam):
    from rnnlab.models.lds import modal_input_weights

    return modal_input_weights(lam)


def _two_mode_cases():
    return [
        Case((_c128([_polar(0.8, 0.3), _polar(0.5, -1.1)]),),
             show="lam = (0.8 e^{0.3i}, 0.5 e^{-1.1i})"),
        Case((_c128([_polar(0.9, 0.5), _polar(0.9, -0.5)]),),
             show="lam = 0.9 e^{±0.5i} (a conjugate pair)"),
        Case((_c128([0.5, -0.5]),), show="lam = (0.5, -0.5) (real, opposite signs)"),
        Case((_c128([10.0, 0.01j]),), show="lam = (10, 0.01i) (very different moduli)"),
        Case((_c128([0.9, 0.9 + 1e-6]),), show="lam = (0.9, 0.9 + 1e-6) (nearly equal)"),
    ]


exercise(
    "ex-lds-bprime-2", notebook="lds/01_modal_form", name="two_mode_input_weights",
    answers=("rnnlab.models.lds:modal_input_weights",),
    signature="two_mode_input_weights(lam)",
    reference=_two_mode_reference, cases=_two_mode_cases,
    difficulty=2,
    hint="V has the rows (1, 1) and (1/lam_1, 1/lam_2): V B' = e_1 is two linear "
         "equations in B'_1 and B'_2.")


def _impulse_response(lam, C, steps):
    """h_m = Re sum_j C_j lambda_j^m, m = 0 .. steps - 1 (the response to x_1 = 1, B' = 1)."""
    import torch

    lam = torch.as_tensor(lam, dtype=torch.complex128).reshape(-1)
    C = torch.as_tensor(C, dtype=torch.complex128).reshape(-1)
    m = torch.arange(steps, dtype=torch.float64)
    return (C[:, None] * lam[:, None] ** m).sum(0).real


def _delay_reference(k):
    import torch

    n = k + 1
    j = torch.arange(n, dtype=torch.float64)
    lam = torch.polar(torch.ones(n, dtype=torch.float64), 2 * math.pi * j / n)
    return lam, lam ** (-k) / n


def _modes_pair(got):
    """``got`` as two flat complex128 tensors (lam, C), or a message saying what is wrong."""
    import torch

    try:
        lam, C = got
        lam = torch.as_tensor(lam, dtype=torch.complex128).reshape(-1)
        C = torch.as_tensor(C, dtype=torch.complex128).reshape(-1)
    except (TypeError, ValueError, RuntimeError):
        return "expected a pair (lam, C) of complex tensors of the same length n"
    if lam.shape != C.shape:
        return f"lam has {lam.numel()} entries but C has {C.numel()}"
    return lam, C


def _delay_compare(got, expected):
    import torch

    pair = _modes_pair(got)
    if isinstance(pair, str):
        return pair
    lam, C = pair
    k = expected[0].numel() - 1
    if lam.numel() > 64 * (k + 1):
        return f"{lam.numel()} modes are far more than a delay of {k} steps needs"
    if not bool(torch.isfinite(lam).all() and torch.isfinite(C).all()):
        return "lam and C must be finite numbers (no NaN or inf)"
    if not bool((lam.abs() <= 1 + 1e-9).all()):        # written so that NaN fails too
        return "an eigenvalue lies outside the unit circle (|lambda| > 1)"
    h = _impulse_response(lam, C, 2 * k + 1)
    want = torch.zeros(2 * k + 1, dtype=torch.float64)
    want[k] = 1.0
    err = (h - want).abs()
    if not bool((err <= 1e-8).all()):
        m = int(err.argmax())
        return (f"the response to one impulse at step 1 is {h[m].item():.4g} at lag {m} "
                f"(wanted {want[m].item():.0f}: 1 at lag {k}, 0 at every other lag up to {2 * k})")
    return None


def _delay_cases():
    return [Case((k,), show=f"k = {k}") for k in (1, 2, 5, 10, 40)]


exercise(
    "ex-lds-delay", notebook="lds/01_modal_form", name="delay_line",
    fixed=True,
    signature="delay_line(k)",
    reference=_delay_reference, cases=_delay_cases, compare=_delay_compare, difficulty=3,
    hint="the response at lag m is a sum over the modes of W_j lambda_j^m: what must it be at "
         "each lag from 0 to k?",
    hints=("with B' = 1 the response at lag m is Re sum_j W_j lambda_j^m: choose the "
         "eigenvalues so that the powers lambda^m repeat, and W so that the sum over "
         "modes cancels at every lag but k.",))


# ----------------------------------------------------------------- 02_ldstack

def _first_miss_reference(A, B, x, k):
    import torch

    from rnnlab.models.ldstack import rnn_reference

    with torch.no_grad():
        rnn = rnn_reference(x, A, B, "tanh")
        s, p = x.new_zeros(x.shape[0], A.shape[0]), None      # layers 1..k, one after another
        for _ in range(k):
            states = []
            for t in range(k + 1):
                As = s @ A.T if t else torch.zeros_like(s)
                s = (As if p is None else p[t] * As) + x[:, t] @ B.T
                states.append(s)
            a = [torch.zeros_like(s)] + [v @ A.T for v in states[:-1]]
            p = [torch.where(v == 0, torch.ones_like(v), torch.tanh(v) / torch.where(v == 0, 1.0, v))
                 for v in a]
        return s - rnn[:, k]


def _first_miss_cases():
    import torch

    def randn(*shape, seed, scale=1.0):
        return scale * torch.randn(*shape, dtype=torch.float64,
                                   generator=torch.Generator().manual_seed(seed))

    one = torch.tensor([[2.0]], dtype=torch.float64), torch.tensor([[1.0]], dtype=torch.float64)
    return [
        Case((*one, torch.ones(1, 3, 1, dtype=torch.float64), 2),
             show="the worked example: A = [[2]], B = [[1]], x = 1, 1, 1, k = 2"),
        Case((*one, torch.ones(1, 3, 1, dtype=torch.float64), 1),
             show="the worked example with k = 1 (the LDS)"),
        Case((randn(3, 3, seed=0), randn(3, 2, seed=1), randn(2, 6, 2, seed=2), 3),
             show="A (3, 3), B (3, 2), x (2, 6, 2), k = 3"),
        Case((randn(4, 4, seed=3, scale=0.7), randn(4, 1, seed=4), randn(3, 5, 1, seed=5), 4),
             show="A (4, 4), B (4, 1), x (3, 5, 1), k = 4 (T = k + 1)"),
    ]


exercise(
    "ex-ldstack-miss", notebook="lds/02_ldstack", name="first_miss",
    signature="first_miss(A, B, x, k)",
    reference=_first_miss_reference, cases=_first_miss_cases,
    difficulty=1,
    hint="layer k is exact at step k, so s^(k)_(k+1) - s_(k+1) only differs in the factor "
         "that multiplies A s_k: the correction handed over by layer k - 1 (1 for k = 1) "
         "against delta(A s_k) = tanh(A s_k) / (A s_k).")


def _exact_steps_reference(stack, x, h0):
    import torch

    from rnnlab.models.ldstack import rnn_reference

    with torch.no_grad():
        rnn = rnn_reference(x, stack.A, stack.B, stack.nonlinearity, h0)
        layers = stack.layer_states(x, h0)
    counts = []
    for s in layers:
        agree = (s - rnn).abs().amax(dim=(0, 2)) < 1e-12       # per step
        counts.append(int(torch.cumprod(agree, 0).sum()))     # leading steps that agree
    return counts


def _exact_steps_cases():
    import torch

    from rnnlab.models import LDStackExact

    def stack(nonlinearity, depth, seed):
        return LDStackExact(2, 5, depth=depth, nonlinearity=nonlinearity,
                            generator=torch.Generator().manual_seed(seed)).double()

    def randn(*shape, seed):
        return torch.randn(*shape, dtype=torch.float64,
                           generator=torch.Generator().manual_seed(seed))

    def positive_start(s, batch):
        # h0 with A h0 = (1, ..., 1): then ρ(A h0) = A h0 for ReLU and ELU
        with torch.no_grad():
            h = torch.linalg.solve(s.A, torch.ones(s.hidden_size, dtype=torch.float64))
        return h.expand(batch, -1).clone()

    relu, elu = stack("relu", 5, 3), stack("elu", 5, 3)
    x = randn(2, 8, 2, seed=4)
    return [
        Case((stack("tanh", 5, 3), x, randn(2, 5, seed=5)),
             show="tanh stack of depth 5, x of shape (2, 8, 2), random h0"),
        Case((stack("tanh", 5, 3), x, torch.zeros(2, 5, dtype=torch.float64)),
             show="tanh stack of depth 5, x of shape (2, 8, 2), h0 = 0"),
        Case((relu, x, positive_start(relu, 2)),
             show="ReLU stack of depth 5, x of shape (2, 8, 2), h0 with A h0 = 1"),
        Case((elu, x, positive_start(elu, 2)),
             show="ELU stack of depth 5, x of shape (2, 8, 2), h0 with A h0 = 1"),
        Case((stack("tanh", 3, 7), randn(1, 1, 2, seed=8), randn(1, 5, seed=9)),
             show="tanh stack of depth 3, one step (x of shape (1, 1, 2)), random h0"),
    ]


exercise(
    "ex-ldstack-h0", notebook="lds/02_ldstack", name="leading_exact_steps",
    signature="leading_exact_steps(stack, x, h0)",
    reference=_exact_steps_reference, cases=_exact_steps_cases, compare=_int_list,
    difficulty=2,
    hint="start the RNN (rnn_reference) and every layer (layer_states) from the same h0, "
         "and count steps from t = 1 until the first step that differs by 1e-12 or more.")


def _second_layer_reference(lam, drive):
    from rnnlab.kernels import modal_stack_scan_ref

    return modal_stack_scan_ref(lam, drive, 2)


def _second_layer_cases():
    import torch

    def cplx(*shape, seed, scale=1.0):
        g = torch.Generator().manual_seed(seed)
        return scale * torch.complex(torch.randn(*shape, dtype=torch.float64, generator=g),
                                     torch.randn(*shape, dtype=torch.float64, generator=g))

    inside = torch.polar(torch.tensor([0.95, 0.8, 0.5, 0.99], dtype=torch.float64),
                         torch.tensor([0.3, -2.0, 1.2, 3.0], dtype=torch.float64))
    unit = torch.polar(torch.ones(3, dtype=torch.float64),
                       torch.tensor([0.1, 1.7, -2.9], dtype=torch.float64))
    return [
        Case((inside, cplx(2, 6, 4, seed=0, scale=2.0)),
             show="4 modes inside the unit circle, drive (2, 6, 4) with |b| about 2"),
        Case((unit, cplx(3, 5, 3, seed=1)),
             show="3 unit-modulus modes, drive (3, 5, 3)"),
        Case((inside, cplx(2, 1, 4, seed=2)), show="one step: drive of shape (2, 1, 4)"),
        Case((inside, torch.zeros(1, 4, 4, dtype=torch.complex128)),
             show="zero drive of shape (1, 4, 4)"),
        Case((_c128([_polar(1.0, 0.5)]), cplx(1, 8, 1, seed=3, scale=5.0)),
             show="one mode e^{0.5i}, a large drive of shape (1, 8, 1)"),
    ]


exercise(
    "ex-ldstack-by-hand", notebook="lds/03_modal_stack", name="second_layer",
    answers=("rnnlab.kernels.stack_scan_torch:modal_stack_scan_ref",),
    signature="second_layer(lam, drive)",
    reference=_second_layer_reference, cases=_second_layer_cases,
    difficulty=1,
    hint="layer 1 is linear_scan(lam, drive); layer 2 scans the transitions "
         "modal_transitions(layer1, lam) over the same drive.")


def _newton_round_reference(A, B, x, guess, rho):
    import torch

    f = getattr(torch, rho)
    states = []
    for t in range(x.shape[1]):                        # the tangent at a = A g_(t-1), step by step
        before = guess[:, t - 1] if t else torch.zeros_like(guess[:, 0])
        a = (before @ A.T).detach().requires_grad_(True)
        value = f(a)
        (slope,) = torch.autograd.grad(value.sum(), a)
        s = states[-1] if t else torch.zeros_like(guess[:, 0])
        states.append(value.detach() + slope * (s @ A.T - a.detach()) + x[:, t] @ B.T)
    return torch.stack(states, 1)


def _newton_round_cases():
    import torch

    def randn(*shape, seed, scale=1.0):
        return scale * torch.randn(*shape, dtype=torch.float64,
                                   generator=torch.Generator().manual_seed(seed))

    A, B = randn(4, 4, seed=0), randn(4, 2, seed=1)
    x = randn(2, 6, 2, seed=2)
    return [
        Case((A, B, x, torch.zeros(2, 6, 4, dtype=torch.float64), "tanh"),
             show="tanh, A (4, 4), B (4, 2), x (2, 6, 2), guess 0 (the first round)"),
        Case((A, B, x, randn(2, 6, 4, seed=3), "tanh"),
             show="tanh, A (4, 4), B (4, 2), x (2, 6, 2), a random guess"),
        Case((A, B, x, randn(2, 6, 4, seed=4), "sin"),
             show="sin, A (4, 4), B (4, 2), x (2, 6, 2), a random guess"),
        Case((A, B, x, randn(2, 6, 4, seed=5), "sigmoid"),
             show="sigmoid (rho(0) = 1/2), A (4, 4), B (4, 2), x (2, 6, 2), a random guess"),
        Case((randn(3, 3, seed=6), randn(3, 1, seed=7), randn(1, 1, 1, seed=8),
              randn(1, 1, 3, seed=9), "sigmoid"),
             show="sigmoid, one step: x (1, 1, 1), guess (1, 1, 3)"),
    ]


exercise(
    "ex-ldstack-newton", notebook="lds/02_ldstack", name="newton_round",
    signature="newton_round(A, B, x, guess, rho)",
    reference=_newton_round_reference, cases=_newton_round_cases,
    difficulty=2,
    hint="at step t take a = A g_(t-1) from the guess (0 at t = 1), rho(a) and its slope "
         "rho'(a) by autograd, and run s_t = rho(a) + rho'(a) (A s_(t-1) - a) + B x_t "
         "with the new states s, from s_0 = 0.")


def _quasi_deer_reference(A, B, x, guess):
    import torch

    states, s = [], torch.zeros_like(guess[:, 0])
    for t in range(x.shape[1]):                  # step by step, entry by entry
        before = guess[:, t - 1] if t else torch.zeros_like(guess[:, 0])
        a = before @ A.T
        D = torch.diagonal(A) / torch.cosh(a) ** 2          # tanh'(a) = 1 / cosh(a)^2
        s = torch.tanh(a) + D * (s - before) + x[:, t] @ B.T
        states.append(s)
    return torch.stack(states, 1)


def _quasi_deer_cases():
    import torch

    def randn(*shape, seed, scale=1.0):
        return scale * torch.randn(*shape, dtype=torch.float64,
                                   generator=torch.Generator().manual_seed(seed))

    A, B = randn(4, 4, seed=10), randn(4, 2, seed=11)
    x = randn(2, 6, 2, seed=12)
    diagonal = torch.diag(randn(3, seed=16))
    return [
        Case((A, B, x, torch.zeros(2, 6, 4, dtype=torch.float64)),
             show="A (4, 4), B (4, 2), x (2, 6, 2), guess 0 (the first iteration)"),
        Case((A, B, x, randn(2, 6, 4, seed=13)),
             show="A (4, 4), B (4, 2), x (2, 6, 2), a random guess"),
        Case((randn(3, 3, seed=14, scale=2.0), randn(3, 1, seed=15), randn(1, 7, 1, seed=17),
              randn(1, 7, 3, seed=18, scale=3.0)),
             show="A (3, 3) with large entries, x (1, 7, 1), a large random guess"),
        Case((diagonal, randn(3, 1, seed=19), randn(2, 5, 1, seed=20), randn(2, 5, 3, seed=21)),
             show="a diagonal A (3, 3): quasi-DEER is then Newton"),
        Case((A, B, randn(1, 1, 2, seed=22), randn(1, 1, 4, seed=23)),
             show="one step: x (1, 1, 2), guess (1, 1, 4)"),
    ]


exercise(
    "ex-ldstack-quasi", notebook="lds/02_ldstack", name="quasi_deer_round",
    signature="quasi_deer_round(A, B, x, guess)",
    reference=_quasi_deer_reference, cases=_quasi_deer_cases,
    difficulty=3,
    hint="at step t take a = A g_(t-1) from the guess (0 at t = 1) and the diagonal factor "
         "D = (1 - tanh(a)^2) * diag(A), entry by entry; then run "
         "s_t = tanh(a) + D * (s_(t-1) - g_(t-1)) + B x_t from s_0 = 0, with no matrix in "
         "the recurrence.")


def _sign_xor_reference(n, seed, T=20):
    import torch

    b = torch.randint(0, 2, (n, T, 1), generator=torch.Generator().manual_seed(seed))
    return (2 * b - 1).float(), (b[:, 2:-1, 0] != b[:, :-3, 0]).long()


def _sign_xor_cases():
    return [
        Case((4, 0), show="n = 4, seed = 0 (T = 20)"),
        Case((3, 5, 8), show="n = 3, seed = 5, T = 8"),
        Case((1, 2, 4), show="n = 1, seed = 2, T = 4 (one target per sequence)"),
        Case((2, 7, 30), show="n = 2, seed = 7, T = 30"),
    ]


exercise(
    "ex-ldstack-odd", notebook="lds/03_modal_stack", name="sign_xor_task",
    signature="sign_xor_task(n, seed, T=20)",
    reference=_sign_xor_reference, cases=_sign_xor_cases,
    difficulty=3,
    hint="draw the bits exactly as xor_task does (the same generator and seed), then map "
         "b to 2b - 1; the targets are the XOR of the bits, unchanged.")


# ----------------------------------------------------------------- 04_copy_memory

def _partial_memory_reference(T, known):
    # blanks and the known symbols cost 0; each of the other 10 - known recall steps ln 8
    return (10 - known) * math.log(8) / (T + 20)


def _partial_memory_cases():
    return [Case((100, 0), show="T = 100, no symbol known (the memoryless baseline)"),
            Case((100, 5), show="T = 100, 5 symbols known"),
            Case((2000, 9), show="T = 2000, 9 symbols known"),
            Case((10, 10), show="T = 10, all 10 symbols known"),
            Case((50, 3), show="T = 50, 3 symbols known")]


exercise(
    "ex-copy-partial", notebook="lds/04_copy_memory", name="partial_memory_loss",
    signature="partial_memory_loss(T, known)",
    reference=_partial_memory_reference, cases=_partial_memory_cases,
    difficulty=1,
    hint="a sequence has T + 20 steps; a step predicted with probability 1 costs 0, a "
         "uniform guess among the 8 symbols costs ln 8; average over every step.")


def _causal_conv_reference(u, K):
    # the direct sum y_t = sum_{tau <= t} K_tau u_{t - tau}, in float64
    import torch

    u = torch.as_tensor(u, dtype=torch.float64)
    K = torch.as_tensor(K, dtype=torch.float64)
    L = u.shape[-1]
    y = torch.zeros_like(u)
    for tau in range(L):
        y[..., tau:] += K[tau] * u[..., :L - tau]
    return y


def _causal_conv_cases():
    import torch

    def case(B, L, seed, show):
        g = torch.Generator().manual_seed(seed)
        return Case((torch.randn(B, L, generator=g, dtype=torch.float64),
                     torch.randn(L, generator=g, dtype=torch.float64)), show=show)

    return [
        case(1, 4, 0, "one sequence of 4 steps"),
        case(3, 20, 1, "a batch of 3 sequences of 20 steps"),
        case(2, 1, 2, "sequences of a single step"),
        case(2, 257, 3, "257 steps (an odd length past a power of two)"),
        case(1, 1000, 4, "1000 steps"),
    ]


exercise(
    "ex-copy-fft", notebook="lds/04_copy_memory", name="causal_conv",
    signature="causal_conv(u, K)",
    reference=_causal_conv_reference, cases=_causal_conv_cases, rtol=1e-9, atol=1e-9,
    difficulty=2,
    hint="torch.fft.rfft(u, n=n) pads to n; multiply the two spectra, torch.fft.irfft(..., n=n), "
         "keep the first L steps; with n < 2L - 1 the end of the sequence wraps onto its start.")


def _expected_peak_reference(tau, sigma):
    # E[exp(i tau delta)] for delta ~ N(0, sigma^2): the normal characteristic function
    return math.exp(-(tau * sigma) ** 2 / 2)


def _expected_peak_cases():
    return [Case((110, 1e-3), show="tau = 110, sigma = 1e-3 (T = 100)"),
            Case((110, 1e-2), show="tau = 110, sigma = 1e-2 (T = 100)"),
            Case((2010, 1e-4), show="tau = 2010, sigma = 1e-4 (T = 2000)"),
            Case((2010, 1e-3), show="tau = 2010, sigma = 1e-3 (T = 2000)"),
            Case((0, 0.5), show="tau = 0, sigma = 0.5"),
            Case((7, 0.0), show="tau = 7, sigma = 0")]


exercise(
    "ex-copy-angles", notebook="lds/04_copy_memory", name="expected_peak",
    signature="expected_peak(tau, sigma)",
    reference=_expected_peak_reference, cases=_expected_peak_cases,
    difficulty=2,
    hint="the term c_j λ_j^τ becomes c_j λ_j^τ e^{iτδ_j}: take the expected value of "
         "e^{iτδ} for a normal δ with mean 0 (its characteristic function).")


_PATTERN = (5, 8, 6, 1, 4, 4, 4, 8, 2, 4)     # the page's first sequence of symbols


def _copier_reference(delay):
    # the (delay + 1)-th roots of unity, a delay line exact on lags 0 .. delay (delay >= 9)
    import torch

    n = delay + 1
    lam = torch.polar(torch.ones(n, dtype=torch.float64),
                      2 * math.pi * torch.arange(n, dtype=torch.float64) / n)
    return lam, lam ** (-delay) / n


def _copier_compare(got, expected):
    import torch

    pair = _modes_pair(got)
    if isinstance(pair, str):
        return pair
    lam, C = pair
    delay = expected[0].numel() - 1
    if lam.numel() > 4000:
        return f"{lam.numel()} pairs are far more than a copier needs"
    if not bool(torch.isfinite(lam).all() and torch.isfinite(C).all()):
        return "lam and C must be finite numbers (no NaN or inf)"
    if not bool(((lam.abs() - 1).abs() <= 1e-9).all()):   # written so that NaN fails too
        return "every eigenvalue must have modulus 1, as in the copy model"
    lags = torch.arange(delay - 9, delay + 10, dtype=torch.float64)
    h = (C[:, None] * lam[:, None] ** lags).sum(0).real      # the response on the window
    u = torch.tensor(_PATTERN, dtype=torch.float64)
    y = torch.stack([sum(h[9 + p - q] * u[q] for q in range(10)) for p in range(10)])
    if not bool(((y - u).abs() <= 1e-6).all()):
        shown = " ".join(f"{v:.3g}" for v in y.tolist())
        return (f"the pattern {' '.join(map(str, _PATTERN))} comes out {delay} steps later "
                f"as {shown}")
    want = (lags == delay).double()
    err = (h - want).abs()
    if not bool((err <= 1e-8).all()):
        m = int(err.argmax())
        return (f"the response to one input is {h[m].item():.4g} at lag {int(lags[m])} "
                f"(wanted 1 at lag {delay} and 0 at the other lags from {delay - 9} to "
                f"{delay + 9}): another pattern would come out wrong")
    return None


def _copier_cases():
    return [Case((d,), show=f"delay = {d}") for d in (10, 30, 110, 2010)]


exercise(
    "ex-copy-hand", notebook="lds/04_copy_memory", name="hand_copier",
    fixed=True,
    signature="hand_copier(delay)",
    reference=_copier_reference, cases=_copier_cases, compare=_copier_compare, difficulty=3,
    hint="the output at recall step p is a sum over the 10 inputs of the response at lags "
         "delay + p - q: which lags must the response be 1 and 0 at?",
    hints=("the response must be 1 at lag delay and 0 at the 18 lags around it (delay - 9 "
           "to delay + 9); eigenvalues whose 10th power is the same number make the "
           "powers repeat every 10 or 20 lags.",))


# ----------------------------------------------------------------- 05_speed (the Performance page)
# The counts are those of the page (rnnlab.bench.roofline.step_cost, the package's counting model);
# the roofline's time is max(operations / peak, bytes / bandwidth).

NB4 = "lds/05_speed"
# Two roofs for the cases: the committed measurement the page's figure draws, and round ones.
_BOOK_ROOFS = (39.7e9, 3.96e9)
_ROUND_ROOFS = (100e9, 20e9)


def _exact(got, expected):
    """Within a relative 1e-9 and no absolute slack (the times are microseconds)."""
    return close(got, expected, rtol=1e-9, atol=0.0)


def _roofline_step_time(model, B, H, peak, bandwidth):
    from rnnlab.bench.roofline import roofline_time, step_cost

    flops, bytes_ = step_cost(model, B, H)
    return roofline_time(flops, bytes_, peak, bandwidth)


exercise(
    "ex-speed-batch", notebook=NB4, name="step_time",
    signature="step_time(model, B, H, peak, bandwidth)",
    reference=_roofline_step_time,
    cases=lambda: [Case((model, B, H, *roofs),
                        show=f'model = "{model}", B = {B}, H = {H}, peak = {roofs[0]:.3g}, '
                             f'bandwidth = {roofs[1]:.3g}')
                   for model, B, H, roofs in (("lds", 16, 128, _BOOK_ROOFS),
                                              ("lstm", 16, 128, _BOOK_ROOFS),
                                              ("lds", 64, 128, _BOOK_ROOFS),
                                              ("lstm", 64, 128, _BOOK_ROOFS),
                                              ("lstm", 1, 256, _ROUND_ROOFS),
                                              ("lds", 4, 32, _ROUND_ROOFS))],
    compare=_exact,
    difficulty=1,
    hint="count the operations and the bytes of the step as the page does, then take the larger of "
         "operations / peak and bytes / bandwidth.",
    hints=("the LDS scans H/2 complex channels per row, 8 operations and 16 bytes each, and reads its "
           "H/2 transitions once per step; the LSTM's step is one (B x H) . (H x 4H) product that "
           "reads W_hh and h and writes 4H numbers per row, 4 bytes each.",),
)


def _chunked_depth(n, chunks):
    import numpy as np

    from rnnlab.kernels import scan_algorithms as sa

    return sa.chunked_scan(np.ones(n), np.zeros(n), chunks).depth


exercise(
    "ex-scans-chunks", notebook=NB4, name="chunked_depth",
    signature="chunked_depth(n, chunks)",
    reference=_chunked_depth,
    cases=lambda: [Case((n, p), show=f"n = {n}, chunks = {p}")
                   for n, p in ((4096, 16), (4096, 1), (10, 4), (12, 9), (7, 7), (1, 1))],
    difficulty=2,
    hint="depth counts steps with at least one combine, not combines: go through the three "
         "phases of sa.chunked_scan (reduce, carry scan, rescan) and ask how many steps each "
         "takes for these n and chunks.",
    hints=("count the steps with at least one combine in each phase: the longest chunk "
         "decides the reduce and the rescan, only the chunks that are not empty take "
         "part in the carry scan, and with one chunk there is no carry to apply.",),
    fixed=True,
)


def _matching_depth(B, H, peak, bandwidth):
    from rnnlab.bench.roofline import roofline_time, step_cost

    lstm = roofline_time(*step_cost("lstm", B, H), peak, bandwidth)
    depth = 1
    while roofline_time(*step_cost("ldstack", B, H, depth), peak, bandwidth) < lstm:
        depth += 1
    return depth


exercise(
    "ex-speed-layer", notebook=NB4, name="matching_depth",
    signature="matching_depth(B, H, peak, bandwidth)",
    reference=_matching_depth,
    cases=lambda: [Case((B, H, *roofs),
                        show=f"B = {B}, H = {H}, peak = {roofs[0]:.3g}, bandwidth = {roofs[1]:.3g}")
                   for B, H, roofs in ((16, 128, _BOOK_ROOFS), (64, 128, _BOOK_ROOFS),
                                       (1, 128, _BOOK_ROOFS), (16, 256, _ROUND_ROOFS),
                                       (2, 8, (50e9, 10e9)))],
    difficulty=2,
    hint="write the fused stack's operations and bytes per step as functions of the depth k, "
         "take the roofline's time of each, and increase k until it reaches the LSTM's.",
    hints=("a further layer adds 17 operations and 8 bytes per complex channel and row; the drive "
           "is read once for all layers; the stack reads 12 bytes of transitions per channel and "
           "step (lambda and |lambda|^2), the LDS 8.",),
)


# ----------------------------------------------------------------- hidden cases (python -m rnnlab grade)
# Drawn with the teacher's seeded NumPy generator; the same shapes and ranges as the public cases.

def _seed(rng):
    return int(rng.integers(2 ** 31))


@hidden("ex-lds-bprime-2")
def _two_mode_hidden(rng):
    return [Case((_c128([_polar(*rng.uniform([0.3, -3.0], [1.0, 3.0])) for _ in range(2)]),))
            for _ in range(3)]


@hidden("ex-ldstack-miss")
def _first_miss_hidden(rng):
    import torch

    return [Case((torch.from_numpy(rng.normal(size=(n, n)) * 0.8),
                  torch.from_numpy(rng.normal(size=(n, d))),
                  torch.from_numpy(rng.normal(size=(2, k + 2, d))), k))
            for n, d, k in ((3, 2, 2), (2, 1, 3))]


@hidden("ex-ldstack-odd")
def _sign_xor_hidden(rng):
    return [Case((int(rng.integers(1, 5)), _seed(rng), int(rng.integers(4, 25))))
            for _ in range(2)]


@hidden("ex-ldstack-h0")
def _exact_steps_hidden(rng):
    import torch

    from rnnlab.models import LDStackExact

    cases = []
    for depth, T in ((4, 7), (2, 5)):
        stack = LDStackExact(2, 5, depth=depth, nonlinearity="tanh",
                             generator=torch.Generator().manual_seed(_seed(rng))).double()
        x = torch.from_numpy(rng.normal(size=(2, T, 2)))
        cases.append(Case((stack, x, torch.from_numpy(rng.normal(size=(2, 5))))))
    return cases


@hidden("ex-ldstack-newton")
def _newton_round_hidden(rng):
    import torch

    cases = []
    for n, d, T, rho in ((3, 2, 5, "tanh"), (2, 1, 4, "sigmoid")):
        cases.append(Case((torch.from_numpy(rng.normal(size=(n, n))),
                           torch.from_numpy(rng.normal(size=(n, d))),
                           torch.from_numpy(rng.normal(size=(2, T, d))),
                           torch.from_numpy(rng.normal(size=(2, T, n))), rho)))
    return cases


@hidden("ex-ldstack-quasi")
def _quasi_deer_hidden(rng):
    import torch

    cases = []
    for n, d, T in ((3, 2, 5), (2, 1, 4)):
        cases.append(Case((torch.from_numpy(rng.normal(size=(n, n))),
                           torch.from_numpy(rng.normal(size=(n, d))),
                           torch.from_numpy(rng.normal(size=(2, T, d))),
                           torch.from_numpy(rng.normal(size=(2, T, n))))))
    return cases


@hidden("ex-ldstack-by-hand")
def _second_layer_hidden(rng):
    import torch

    cases = []
    for B, T, C in ((2, 5, 3), (1, 7, 2)):
        lam = torch.polar(torch.from_numpy(rng.uniform(0.5, 1.0, C)), torch.from_numpy(rng.uniform(-3, 3, C)))
        drive = torch.from_numpy(rng.normal(size=(B, T, C)) + 1j * rng.normal(size=(B, T, C)))
        cases.append(Case((lam, drive)))
    return cases


@hidden("ex-copy-fft")
def _causal_conv_hidden(rng):
    import torch

    return [Case((torch.from_numpy(rng.normal(size=(B, L))), torch.from_numpy(rng.normal(size=L))))
            for B, L in ((2, int(rng.integers(2, 50))), (1, int(rng.integers(100, 600))))]


@hidden("ex-copy-angles")
def _expected_peak_hidden(rng):
    return [Case((int(rng.integers(50, 3000)), float(rng.uniform(1e-4, 2e-3)))) for _ in range(2)]


@hidden("ex-copy-partial")
def _partial_memory_hidden(rng):
    return [Case((int(rng.integers(10, 3000)), int(rng.integers(0, 11)))) for _ in range(2)]


@hidden("ex-copy-hand")
def _copier_hidden(rng):
    return [Case((int(d),)) for d in rng.choice(range(10, 3000), size=2, replace=False)]


@hidden("ex-lds-scratch")
def _modal_lds_hidden(rng):
    import torch

    cases = []
    for n, m, B, T in ((6, 2, 2, 30), (10, 3, 1, 300)):
        theta = torch.from_numpy(rng.uniform(-2 * math.pi, 2 * math.pi, n))
        C = torch.from_numpy(rng.normal(size=(n, m)) + 1j * rng.normal(size=(n, m)))
        cases.append(Case((theta, C, torch.from_numpy(rng.normal(size=(B, T, 1))))))
    return cases


@hidden("ex-lds-delay")
def _delay_hidden(rng):
    return [Case((int(k),)) for k in rng.choice(range(3, 60), size=2, replace=False)]


@hidden("ex-speed-batch")
def _step_time_hidden(rng):
    H = 2 * int(rng.integers(8, 200))
    return [Case((model, int(rng.integers(1, 100)), H, float(rng.uniform(10e9, 200e9)),
                  float(rng.uniform(2e9, 50e9)))) for model in ("lds", "lstm")]


@hidden("ex-scans-chunks")
def _chunks_hidden(rng):
    return [Case((int(n), int(p))) for n, p in ((rng.integers(20, 5000), rng.integers(2, 40)),
                                               (rng.integers(12, 30), rng.integers(2, 12)))]


@hidden("ex-speed-layer")
def _matching_depth_hidden(rng):
    return [Case((int(rng.integers(1, 64)), 2 * int(rng.integers(8, 128)), float(rng.uniform(20e9, 100e9)),
                  float(rng.uniform(3e9, 30e9)))) for _ in range(2)]
