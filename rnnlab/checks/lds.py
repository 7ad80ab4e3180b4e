"""The code exercises of the lds chapter (book/lds/), declared for rnnlab.checks.

Each reference computes its answer with the package (``modal_input_weights``,
``LDStackExact`` and ``rnn_reference``, ``modal_stack_scan_ref``, the ``LDS``
model's own ``input_weights``/``output_weights``); the two speed exercises
are pure computations on timings, checked against NumPy and the formula of
the chapter. Heavy imports stay inside the functions.
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
    signature="two_mode_input_weights(lam)",
    reference=_two_mode_reference, cases=_two_mode_cases,
    hint="V has the rows (1, 1) and (1/lam_1, 1/lam_2): V B' = e_1 is two linear "
         "equations in B'_1 and B'_2.")


# ----------------------------------------------------------------- 02_ldstack

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
    "ex-ldstack-by-hand", notebook="lds/02_ldstack", name="second_layer",
    signature="second_layer(lam, drive)",
    reference=_second_layer_reference, cases=_second_layer_cases,
    hint="layer 1 is linear_scan(lam, drive); layer 2 scans the transitions "
         "modal_transitions(layer1, lam) over the same drive.")


# ----------------------------------------------------------------- 03_copy_memory

def _folded_readout_reference(model):
    import torch

    with torch.no_grad():
        return model.output_weights() * model.input_weights()[:, None]


def _folded_readout_cases():
    import torch

    from rnnlab.experiments.copy_memory import paper_lds
    from rnnlab.models import LDS

    def gen(seed):
        return torch.Generator().manual_seed(seed)

    return [
        Case((paper_lds(input_weights="companion", generator=gen(0)).double(),),
             show="paper_lds(input_weights='companion') (160 modes, 10 outputs), seed 0"),
        Case((paper_lds(input_weights="companion", generator=gen(1)).double(),),
             show="paper_lds(input_weights='companion'), seed 1"),
        Case((LDS(2, 8, 3, eigenvalues="free", generator=gen(2)).double(),),
             show="LDS(2, 8, 3) (free eigenvalues, complex read-out, companion B')"),
        Case((LDS(1, 4, 1, eigenvalues="free", conjugate_pairs=False, generator=gen(3)).double(),),
             show="LDS(1, 4, 1, conjugate_pairs=False)"),
        Case((paper_lds(hidden_size=20, generator=gen(4)).double(),),
             show="paper_lds(hidden_size=20) with B' = 1 already"),
    ]


exercise(
    "ex-copy-bprime", notebook="lds/03_copy_memory", name="folded_readout",
    signature="folded_readout(model)",
    reference=_folded_readout_reference, cases=_folded_readout_cases,
    hint="mode i contributes C'_i B'_i λ_i^(t-τ) u_τ: scale row i of model.output_weights() "
         "by entry i of model.input_weights().")


# ----------------------------------------------------------------- 04_speed

def _cost_per_step_reference(T, seconds):
    import numpy as np

    return float(np.polyfit(np.asarray(T, dtype=float), np.asarray(seconds, dtype=float), 1)[0])


def _cost_per_step_cases():
    return [
        Case(([128, 256, 512, 1024], [0.001 + 2e-4 * t for t in (128, 256, 512, 1024)]),
             show="T = [128, 256, 512, 1024], times exactly 1 ms + 0.2 ms per step"),
        Case(([128, 256, 512, 1024, 2048], [0.0244, 0.0455, 0.104, 0.197, 0.417]),
             show="T = [128, ..., 2048], measured times of a Python-loop RNN"),
        Case(([100, 300], [0.5, 0.9]), show="two lengths: T = [100, 300], times [0.5, 0.9] s"),
        Case(([64, 128, 256], [0.01, 0.01, 0.01]), show="equal times at every length"),
        Case(([256, 128, 1024, 512], [0.0141, 0.00584, 0.0447, 0.0269]),
             show="lengths not in order: T = [256, 128, 1024, 512]"),
    ]


exercise(
    "ex-speed-per-step", notebook="lds/04_speed", name="cost_per_step",
    signature="cost_per_step(T, seconds)",
    reference=_cost_per_step_reference, cases=_cost_per_step_cases, rtol=1e-6, atol=1e-15,
    hint="the slope b of the least-squares line seconds ≈ a + b T (np.polyfit(T, seconds, 1)).")


def _break_even_reference(t1, tk, k, t_lstm):
    if t_lstm <= t1:
        return 1.0
    c = (tk - t1) / (k - 1)                  # the cost of one further layer
    if c <= 0:
        return math.inf
    return 1 + (t_lstm - t1) / c


def _break_even_cases():
    return [
        Case((0.0232, 0.0322, 4, 0.1801), show="t1 = 23.2 ms, t4 = 32.2 ms, LSTM 180.1 ms"),
        Case((0.0232, 0.0239, 2, 0.1801), show="t1 = 23.2 ms, t2 = 23.9 ms, LSTM 180.1 ms"),
        Case((0.010, 0.040, 4, 0.030), show="t1 = 10 ms, t4 = 40 ms, LSTM 30 ms"),
        Case((0.020, 0.020, 4, 0.100),
             show="t1 = t4 = 20 ms (further layers free), LSTM 100 ms"),
        Case((0.050, 0.080, 4, 0.040),
             show="t1 = 50 ms, t4 = 80 ms, LSTM 40 ms (faster than the LDS)"),
    ]


exercise(
    "ex-speed-depth", notebook="lds/04_speed", name="break_even_depth",
    signature="break_even_depth(t1, tk, k, t_lstm)",
    reference=_break_even_reference, cases=_break_even_cases,
    hint="each further layer costs c = (tk - t1) / (k - 1); solve t1 + (depth - 1) c = t_lstm, "
         "and mind the two special cases of the docstring.")


# ----------------------------------------------------------------- hidden cases (python -m rnnlab grade)
# Drawn with the teacher's seeded NumPy generator; the same shapes and ranges as the public cases.

def _seed(rng):
    return int(rng.integers(2 ** 31))


@hidden("ex-lds-bprime-2")
def _two_mode_hidden(rng):
    return [Case((_c128([_polar(*rng.uniform([0.3, -3.0], [1.0, 3.0])) for _ in range(2)]),))
            for _ in range(3)]


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


@hidden("ex-ldstack-by-hand")
def _second_layer_hidden(rng):
    import torch

    cases = []
    for B, T, C in ((2, 5, 3), (1, 7, 2)):
        lam = torch.polar(torch.from_numpy(rng.uniform(0.5, 1.0, C)), torch.from_numpy(rng.uniform(-3, 3, C)))
        drive = torch.from_numpy(rng.normal(size=(B, T, C)) + 1j * rng.normal(size=(B, T, C)))
        cases.append(Case((lam, drive)))
    return cases


@hidden("ex-copy-bprime")
def _folded_readout_hidden(rng):
    import torch

    from rnnlab.models import LDS

    return [Case((LDS(2, 8, 3, eigenvalues="free", generator=torch.Generator().manual_seed(_seed(rng))).double(),)),
            Case((LDS(1, 5, 2, eigenvalues="free", conjugate_pairs=False,
                      generator=torch.Generator().manual_seed(_seed(rng))).double(),))]


@hidden("ex-speed-per-step")
def _cost_per_step_hidden(rng):
    cases = []
    for n in (4, 6):
        T = sorted(int(t) for t in rng.choice(range(64, 4097, 64), size=n, replace=False))
        a, b = rng.uniform(1e-4, 1e-2), rng.uniform(1e-5, 1e-3)
        cases.append(Case((T, [float(a + b * t) * rng.uniform(0.95, 1.05) for t in T])))
    return cases


@hidden("ex-speed-depth")
def _break_even_hidden(rng):
    t1 = rng.uniform(0.01, 0.05)
    k = int(rng.integers(2, 9))
    tk = t1 + rng.uniform(0.001, 0.02) * (k - 1)
    return [Case((float(t1), float(tk), k, float(t1 * rng.uniform(2, 8)))),
            Case((float(t1), float(tk), k, float(t1 * rng.uniform(0.3, 0.9))))]
