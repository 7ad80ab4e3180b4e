"""The code exercises of the neural-memory chapter (book/memory/), declared for rnnlab.checks.

Each reference computes its answer with the package: the pieces of eq. 1-11
in :mod:`rnnlab.kernels.memory_torch` (pop and read with the stack's
``"top"`` or the queue's ``"front"`` rule), :func:`rnnlab.neural_memory`,
and autograd through the reference for the backward exercises (or, for the
push's reach, through the whole stack). Strengths and
values are given bottom (oldest) first, as the package stores them. Heavy
imports stay inside the functions.
"""
from .core import Case, close, exercise, hidden

NB1 = "memory/01_stack_queue_deque"
NB2 = "memory/02_backward_dynamics"
NB2B = "memory/03_initialisation"


def _t(values):
    import torch

    return torch.tensor(values, dtype=torch.float64)


# ----------------------------------------------------------------- 01: reads and pops

def _read_weights_reference(s, depth):
    """The weights of a read that skips strength ``depth`` from the top and then takes a total of 1:
    row i's share of the window [depth, depth + 1] (eq. 3's weights at depth 0)."""
    import torch

    reach = torch.flip(torch.cumsum(torch.flip(s, [0]), 0), [0])          # A_i + s_i, from the top
    return reach.clamp(depth, depth + 1) - (reach - s).clamp(depth, depth + 1)


def _read_weights_cases():
    return [
        Case((_t([0.3, 0.5, 0.4]), 0.0), show="s = (0.3, 0.5, 0.4), depth 0: eq. 3's read"),
        Case((_t([1.0, 1.0, 1.0]), 1.0), show="s = (1, 1, 1), depth 1: the row under the top"),
        Case((_t([0.3, 0.5, 0.4]), 0.5), show="s = (0.3, 0.5, 0.4), depth 0.5"),
        Case((_t([0.2, 0.1, 0.3]), 0.2), show="s = (0.2, 0.1, 0.3), depth 0.2: less than 1 below it"),
        Case((_t([0.0, 0.7, 0.0, 0.6]), 0.4), show="s = (0, 0.7, 0, 0.6), depth 0.4: empty rows"),
        Case((_t([0.5, 0.5]), 2.0), show="s = (0.5, 0.5), depth 2: deeper than the stack"),
        Case((_t([0.25, 0.25, 0.5, 0.5]), 1.0), show="s = (0.25, 0.25, 0.5, 0.5), depth 1: exactly 1 above row 2"),
    ]


exercise(
    "ex-mem-read-weights", notebook=NB1, name="stack_read_weights", signature="stack_read_weights(s, depth)",
    answers=("rnnlab.kernels.memory_torch:_read_weights",),
    reference=_read_weights_reference, cases=_read_weights_cases, difficulty=2,
    hint="Lay the strengths end to end from the top (the last entry): row i covers [A_i, A_i + s_i], A_i "
         "being the strength above it. Its weight is the length of that stretch inside the window "
         "[depth, depth + 1].")


def _queue_by_hand_reference():
    """The queue's reads (weights on the one-hot values) for d = (0.6, 0.7, 0.4), u = (0, 0.2, 0.9)."""
    import torch

    from rnnlab import neural_memory

    d = torch.tensor([[0.6, 0.7, 0.4]], dtype=torch.float64)
    u = torch.tensor([[0.0, 0.2, 0.9]], dtype=torch.float64)
    r, _ = neural_memory("queue", torch.eye(3, dtype=torch.float64)[None], d, u, backend="torch")
    return r[0]


def _queue_by_hand_compare(got, expected):
    import torch

    try:
        got = torch.as_tensor(got, dtype=torch.float64)
    except (TypeError, ValueError):
        return "expected three lists of three numbers"
    if got.shape != (3, 3):
        return f"expected three reads of three weights each, got shape {tuple(got.shape)}"
    return close(got, expected, rtol=0.0, atol=1e-6) and (
        f"the reads do not match: step by step, {[[round(float(x), 3) for x in row] for row in got]}")


exercise(
    "ex-mem-queue-by-hand", notebook=NB1, name="queue_reads_by_hand", signature="queue_reads_by_hand()",
    answers=("rnnlab.kernels.memory:neural_memory",), fixed=True,
    reference=_queue_by_hand_reference, cases=lambda: [Case((), show="d = (0.6, 0.7, 0.4), u = (0, 0.2, 0.9)")],
    compare=_queue_by_hand_compare, difficulty=1,
    hint="go through the steps in order and write down the strengths after the pop, after the "
         "push, and the weights of the read.",
    hints=("Each step pops from the front (the oldest row) first, then pushes, then reads from the front "
         "a total of at most 1; the read can take no more than the memory holds.",))


def _reversal_reference(n):
    """Push n symbols whole; then read the top without popping, and pop one whole row per step."""
    d = [1.0] * n + [0.0] * n
    u = [0.0] * (n + 1) + [1.0] * (n - 1)
    return d, u


def _reads_of(controls, n):
    import torch

    from rnnlab import neural_memory

    d, u = (torch.as_tensor(x, dtype=torch.float64).reshape(-1) for x in controls)
    v = torch.eye(2 * n, dtype=torch.float64)
    r, _ = neural_memory("stack", v[None], d[None], u[None], backend="torch")
    return r[0, n:]


def _reversal_compare(got, expected):
    import torch

    n = len(expected[0]) // 2
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return "expected a pair (d, u)"
    try:
        lengths = [len(x) for x in got]
    except TypeError:
        return "d and u must be sequences of numbers"
    if lengths != [2 * n, 2 * n]:
        return f"d and u must each have 2n = {2 * n} entries, got {lengths}"
    try:
        reads = _reads_of(got, n)
    except (ValueError, TypeError, RuntimeError) as e:
        return f"the stack refused these controls: {e}"
    want = torch.eye(2 * n, dtype=torch.float64)[:n].flip(0)
    return close(reads, want, rtol=1e-6, atol=1e-6) and (
        "the reads at steps n+1 .. 2n are not the pushed symbols in reverse order: "
        f"their weights on the symbols are {[[round(float(x), 2) for x in row[:n]] for row in reads]}")


def _reversal_cases():
    return [Case((n,), show=f"n = {n}") for n in (1, 2, 3, 5)]


exercise(
    "ex-mem-reversal-controls", notebook=NB1, name="reversal_controls", signature="reversal_controls(n)",
    fixed=True, words=False,
    reference=_reversal_reference, cases=_reversal_cases, compare=_reversal_compare, difficulty=1,
    hint='for n = 1, write down what the memory must hold just before each read of the output.',
    hints=("Every step pops, then pushes, then reads, and a push puts its own value into that step's read. "
         "The first read of the output has to see the last symbol pushed; after that, each step must "
         "remove exactly one row before it reads.",))


def _deque_pops_reference(s, u_top, u_bot):
    """The deque's two pops (eq. 7, then eq. 8 on what the first left), strengths bottom first."""
    import torch

    from rnnlab.kernels import memory_torch

    pop = memory_torch.pop
    top = pop(s[None], torch.tensor([u_top], dtype=s.dtype), "top")
    return pop(top, torch.tensor([u_bot], dtype=s.dtype), "front")[0]


def _deque_pops_cases():
    return [
        Case((_t([0.6, 0.7, 0.5]), 0.1, 0.3), show="s = (0.6, 0.7, 0.5), u_top = 0.1, u_bot = 0.3"),
        Case((_t([0.3, 0.8, 0.5]), 0.9, 0.5), show="u_top = 0.9, u_bot = 0.5: both reach the middle row"),
        Case((_t([0.3, 0.2, 0.1]), 0.5, 0.4), show="u_top + u_bot above the total: everything goes"),
        Case((_t([0.0, 0.4, 0.0, 0.9, 0.2]), 0.25, 0.1), show="empty rows at both ends"),
        Case((_t([0.5]), 0.2, 0.2), show="one row, popped from both ends"),
    ]


exercise(
    "ex-mem-deque-pops", notebook=NB1, name="deque_pops", signature="deque_pops(s, u_top, u_bot)",
    answers=("rnnlab.kernels.memory_torch:_pop",),
    reference=_deque_pops_reference, cases=_deque_pops_cases, difficulty=2,
    hint="Lay the strengths end to end from the bottom, on [0, S] with S their total: the top pop removes "
         "the stretch [S - u_top, S], the bottom pop [0, u_bot]. What is left of row i is the part of its "
         "stretch inside what remains.")


FRACTIONAL_SCHEDULE = ("AABBAA", [0.6, 0.6, 0.6, 0.6, 0.1, 0.5], [0.5, 0.1, 0.1, 0.1, 0.9, 0.35], (2, 4, 6))
"""A schedule of ex-mem-fractional: the values pushed, d, u, and the steps (from 1) that read A, B, A."""


def _fractional_reference():
    values, d, u, steps = FRACTIONAL_SCHEDULE
    return values, list(d), list(u), steps


def _fractional_reads(values, d, u):
    import torch

    from rnnlab import neural_memory

    eye = torch.eye(2, dtype=torch.float64)
    v = torch.stack([eye["AB".index(c)] for c in values])[None]
    r, _ = neural_memory("stack", v, torch.tensor([d], dtype=torch.float64),
                         torch.tensor([u], dtype=torch.float64), backend="torch")
    return r[0]


def _fractional_compare(got, expected):
    if not isinstance(got, (tuple, list)) or len(got) != 4:
        return "expected four things: (values, d, u, steps)"
    values, d, u, steps = got
    if not isinstance(values, str) or not values or set(values) - {"A", "B"}:
        return "values must be a string of the letters A and B, one per step"
    try:
        d, u = [float(x) for x in d], [float(x) for x in u]
        steps = [int(x) for x in steps]
    except (TypeError, ValueError):
        return "d and u must be lists of numbers, steps three step numbers"
    T = len(values)
    if len(d) != T or len(u) != T:
        return f"values, d and u must have one entry per step: lengths {T}, {len(d)}, {len(u)}"
    if not all(0 < x < 1 for x in d + u):
        return "every push and pop strength must lie strictly between 0 and 1"
    if len(steps) != 3 or not 1 <= steps[0] < steps[1] < steps[2] <= T:
        return f"steps must be three increasing step numbers between 1 and {T}"
    reads = _fractional_reads(values, d, u)
    want = {"A": (1.0, 0.0), "B": (0.0, 1.0)}
    for t, name in zip(steps, "ABA"):
        a, b = (float(x) for x in reads[t - 1])
        if abs(a - want[name][0]) > 1e-9 or abs(b - want[name][1]) > 1e-9:
            return f"the read at step {t} is {a:.3f} A + {b:.3f} B, not exactly {name}"
    if T > len(expected[1]):
        return f"these {T} steps work, but fewer steps are enough"
    return None


exercise(
    "ex-mem-fractional", notebook=NB1, name="fractional_schedule", signature="fractional_schedule()",
    fixed=True, reference=_fractional_reference,
    cases=lambda: [Case((), show="your schedule")], compare=_fractional_compare, difficulty=3,
    hint="an exact read needs a total strength of at least 1 of one value on top, with nothing else "
         "above it; count how many steps each of the three exact reads needs after the one before.",
    hints=("Every step pushes something and pops less than 1: after an exact read of A, the A strength "
           "on top is at least 1, so one step cannot clear it.",))


# ----------------------------------------------------------------- 02: the backward dynamics

POP_GRAD_S = (0.2, 0.6, 0.3, 0.4)
"""The old strengths s' (bottom first) of ex-mem-pop-grad."""
POP_GRAD_U = 0.5
"""The pop of ex-mem-pop-grad."""
POP_GRAD_G = (1.0, -2.0, 0.5, 3.0)
"""g = dL/ds after the pop, of ex-mem-pop-grad."""


def _pop_grad_reference():
    """Autograd through the stack's pop (eq. 2): (dL/ds' as a list, dL/du)."""
    import torch

    from rnnlab.kernels import memory_torch

    s_prev = _t(list(POP_GRAD_S)).requires_grad_()
    u = torch.tensor([POP_GRAD_U], dtype=torch.float64, requires_grad=True)
    s = memory_torch.pop(s_prev[None], u, "top")[0]
    grad_s, grad_u = torch.autograd.grad(s, (s_prev, u), _t(list(POP_GRAD_G)))
    return grad_s.tolist(), float(grad_u[0])


def _pop_grad_compare(got, expected):
    import torch

    try:
        grad_s, grad_u = got
        grad_s = torch.as_tensor(grad_s, dtype=torch.float64).reshape(-1)
        grad_u = float(grad_u)
    except (TypeError, ValueError):
        return "expected a pair: a list of four numbers (bottom row first) and a number"
    if grad_s.shape != (4,):
        return f"expected four numbers for dL/ds', one per row, got {grad_s.numel()}"
    bad_s = close(grad_s, _t(expected[0]), rtol=0.0, atol=1e-6)
    if bad_s:
        return f"dL/ds' is not the gradient: you gave {[round(float(x), 3) for x in grad_s]}"
    if abs(grad_u - expected[1]) > 1e-6:
        return f"dL/du is not the gradient: you gave {round(grad_u, 3)}"
    return None


exercise(
    "ex-mem-pop-grad", notebook=NB2, name="pop_gradients_by_hand", signature="pop_gradients_by_hand()",
    fixed=True, reference=_pop_grad_reference,
    cases=lambda: [Case((), show="s' = (0.2, 0.6, 0.3, 0.4), u = 0.5, g = (1, -2, 0.5, 3)")],
    compare=_pop_grad_compare, difficulty=1,
    hint="first find, from the top down, the rows the pop empties and the row where it runs out.",
    hints=("An emptied row passes nothing of its own gradient; the row where the pop runs out passes "
           "its gradient to itself, to every row above it, and, negated, to u.",))


READ_GRAD_S = (0.2, 0.6, 0.3, 0.4)
"""The strengths (bottom first) of ex-mem-read-grad."""
READ_GRAD_GAMMA = (1.0, -2.0, 0.5, 3.0)
"""gamma_i = <dL/dr, V[i]> of ex-mem-read-grad."""


def _read_grad_reference():
    """Autograd through the stack's read weights: L = sum_i gamma_i w_i."""
    import torch

    from rnnlab.kernels import memory_torch

    s = _t(list(READ_GRAD_S)).requires_grad_()
    w = memory_torch.read_weights(s[None], "top")[0]
    (grad,) = torch.autograd.grad((w * _t(list(READ_GRAD_GAMMA))).sum(), s)
    return grad


def _read_grad_compare(got, expected):
    import torch

    try:
        got = torch.as_tensor(got, dtype=torch.float64).reshape(-1)
    except (TypeError, ValueError):
        return "expected four numbers"
    if got.shape != (4,):
        return f"expected four numbers, one per row, got {got.numel()}"
    return close(got, expected, rtol=0.0, atol=1e-6) and (
        f"not the gradient: you gave {[round(float(x), 3) for x in got]} (bottom row first)")


exercise(
    "ex-mem-read-grad", notebook=NB2, name="read_gradients_by_hand", signature="read_gradients_by_hand()",
    fixed=True, reference=_read_grad_reference,
    cases=lambda: [Case((), show="s = (0.2, 0.6, 0.3, 0.4), gamma = (1, -2, 0.5, 3)")],
    compare=_read_grad_compare, difficulty=1,
    hint="first find, from the top down, the rows read whole and the row where the read runs out.",
    hints=("A row read whole passes its own gamma to its strength; the row where the read runs out "
           "passes minus its gamma to every row above it, and nothing to itself.",))


def _queue_pop_grad_reference(s_prev, u, g):
    """Autograd through the queue's pop (eq. 4 without the push)."""
    import torch

    from rnnlab.kernels import memory_torch

    s_prev = s_prev.clone().requires_grad_()
    u_t = torch.tensor([u], dtype=s_prev.dtype, requires_grad=True)
    s = memory_torch.pop(s_prev[None], u_t, "front")[0]
    grad_s, grad_u = torch.autograd.grad(s, (s_prev, u_t), g)
    return grad_s, float(grad_u[0])


def _queue_pop_grad_cases():
    return [
        Case((_t([0.4, 0.5, 0.3]), 0.6, _t([1.0, 2.0, 3.0])), show="s' = (0.4, 0.5, 0.3) front first, u = 0.6"),
        Case((_t([0.4, 0.5, 0.3]), 0.2, _t([1.0, -1.0, 0.5])), show="u = 0.2: only the front row pops"),
        Case((_t([0.2, 0.1, 0.3]), 0.9, _t([1.0, 1.0, 1.0])), show="u = 0.9: everything is popped"),
        Case((_t([0.0, 0.3, 0.8, 0.2]), 0.45, _t([0.5, -2.0, 1.0, 4.0])), show="an empty row in front"),
    ]


exercise(
    "ex-mem-queue-backward", notebook=NB2, name="queue_pop_gradients",
    answers=("rnnlab.kernels.memory_torch:_pop",),
    signature="queue_pop_gradients(s_prev, u, g)",
    reference=_queue_pop_grad_reference, cases=_queue_pop_grad_cases, difficulty=2,
    hint="The queue pops from the front: a row's pop depends on the rows in front of it (below it), so "
         "a partly popped row sends its gradient to those rows, not to the rows behind it.")


def _deque_pop_grad_reference(s_prev, u_top, u_bot, g):
    """Autograd through the deque's two pops (the top pop, then the bottom pop on what it left)."""
    import torch

    from rnnlab.kernels import memory_torch

    s_prev = s_prev.clone().requires_grad_()
    ut = torch.tensor([u_top], dtype=s_prev.dtype, requires_grad=True)
    ub = torch.tensor([u_bot], dtype=s_prev.dtype, requires_grad=True)
    s = memory_torch.pop(memory_torch.pop(s_prev[None], ut, "top"), ub, "front")[0]
    grad_s, grad_ut, grad_ub = torch.autograd.grad(s, (s_prev, ut, ub), g)
    return grad_s, float(grad_ut[0]), float(grad_ub[0])


def _deque_pop_grad_cases():
    return [
        Case((_t([0.4, 0.3, 0.5, 0.2]), 0.5, 0.6, _t([1.0, -2.0, 3.0, 0.5])),
             show="s' = (0.4, 0.3, 0.5, 0.2), u_top = 0.5, u_bot = 0.6: two different rows"),
        Case((_t([0.3, 0.8, 0.5]), 0.9, 0.5, _t([1.0, 2.0, -1.0])),
             show="s' = (0.3, 0.8, 0.5), u_top = 0.9, u_bot = 0.5: both run out in row 2"),
        Case((_t([0.3, 0.2, 0.1]), 0.5, 0.4, _t([1.0, 1.0, 1.0])), show="u_top + u_bot above the total"),
        Case((_t([0.5]), 0.2, 0.2, _t([3.0])), show="one row, popped from both ends"),
        Case((_t([0.6, 0.4, 0.7, 0.3]), 0.2, 0.1, _t([2.0, -1.0, 0.5, 4.0])),
             show="small pops: each runs out in its end row"),
    ]


exercise(
    "ex-mem-deque-backward", notebook=NB2, name="deque_pop_gradients",
    answers=("rnnlab.kernels.memory_torch:_pop",),
    signature="deque_pop_gradients(s_prev, u_top, u_bot, g)",
    reference=_deque_pop_grad_reference, cases=_deque_pop_grad_cases, difficulty=2,
    hint="Go back in the reverse order of the forward: first the bottom pop (a pop from the other end: "
         "its running sum runs down), which gives the gradient between the two pops, then the top pop.")


def _push_reach_reference(d, u, T=None, t0=1):
    """How many later reads depend on a push, measured: autograd through the stack with every
    push d and every pop u, counting the steps t > t0 whose read has a nonzero derivative in d_t0."""
    import math

    import torch

    from rnnlab import neural_memory

    if T is None:                    # long enough to see the last read of a long reach
        T = 24 if u >= d else max(24, t0 + 4 + math.ceil((1 - d) / (d - u)))
    gen = torch.Generator().manual_seed(0)
    v = torch.randn(1, T, 3, generator=gen, dtype=torch.float64)
    uu = torch.full((1, T), float(u), dtype=torch.float64)

    def reads(dd):
        return neural_memory("stack", v, dd, uu, backend="torch")[0][0]

    J = torch.autograd.functional.jacobian(reads, torch.full((1, T), float(d), dtype=torch.float64))
    size = J[:, :, 0, t0].abs().sum(1)                      # |dr_t / dd_t0| for every step t
    return int((size[t0 + 1:] > 1e-12).sum())


def _push_reach_cases():
    return [
        Case((0.5, 0.27), show="d = 0.5, u = 0.27"),
        Case((0.5, 0.62), show="d = 0.5, u = 0.62"),
        Case((0.3, 0.1), show="d = 0.3, u = 0.1"),
        Case((0.6, 0.53), show="d = 0.6, u = 0.53"),  # (1 - d)/(d - u) = 5.7: no tie
        Case((0.9, 0.05), show="d = 0.9, u = 0.05"),
        Case((0.5, 0.5), show="d = u = 0.5"),
        Case((0.5, 0.4925), show="d = 0.5, u = 0.4925"),  # reach 66: count far enough
    ]


def _push_reach_compare(got, expected):
    try:
        ok = int(got) == got
    except (TypeError, ValueError, OverflowError):
        return "expected a whole number of steps"
    if not ok:
        return "expected a whole number of steps"
    return None if int(got) == expected else f"got {int(got)} later steps"


exercise(
    "ex-mem-push-reach", notebook=NB2B, name="push_reach", signature="push_reach(d, u)",
    reference=_push_reach_reference, cases=_push_reach_cases, compare=_push_reach_compare, difficulty=2,
    hint="with constant controls the stack settles after one step: the top row holds d and every row "
         "below it d - u. A push is felt by a later read while its row is read whole.")


def _linked_symbols_reference(d, u, n):
    """Which source symbols of n-symbol reversals are linked: entry [b, i - 1] is True when the read
    of step 2n - i (the one that must return symbol i) depends on the push of step i, by autograd
    through the package's stack with random values (steps counted from 0, the start symbol)."""
    import torch

    from rnnlab import neural_memory

    d = torch.as_tensor(d, dtype=torch.float64).detach().clone().requires_grad_()
    u = torch.as_tensor(u, dtype=torch.float64).detach()
    v = torch.randn(d.shape + (3,), generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    r, _ = neural_memory("stack", v, d, u, backend="torch")
    out = []
    for i in range(1, n + 1):
        (g,) = torch.autograd.grad(r[:, 2 * n - i].sum(), d, retain_graph=True)
        out.append(g[:, i].abs() > 1e-12)
    return torch.stack(out, 1)


def _linked_case(seed, B, n, pop_high=1.0, show=""):
    import torch

    gen = torch.Generator().manual_seed(seed)
    d = 0.1 + 0.9 * torch.rand(B, 2 * n + 2, generator=gen, dtype=torch.float64)
    u = pop_high * torch.rand(B, 2 * n + 2, generator=gen, dtype=torch.float64)
    return Case((d, u, n), show=show or f"random controls, {B} sequences, n = {n} (seed {seed})")


def _linked_symbols_cases():
    import torch

    def constant(d, u, n):
        return Case((torch.full((1, 2 * n + 2), d, dtype=torch.float64),
                     torch.full((1, 2 * n + 2), u, dtype=torch.float64), n),
                    show=f"constant d = {d}, u = {u}, n = {n}")

    return [constant(0.5, 0.27, 4), constant(0.5, 0.62, 3), constant(0.5, 0.38, 3),
            _linked_case(0, 3, 3), _linked_case(1, 2, 5, pop_high=0.5, show="")]


def _linked_symbols_compare(got, expected):
    import numpy as np

    got = np.asarray(got.detach() if hasattr(got, "detach") else got)
    if got.shape != tuple(expected.shape):
        return f"expected shape {tuple(expected.shape)} (sequences, symbols), got {got.shape}"
    if got.dtype != bool:
        return "expected booleans (True where the symbol is linked)"
    wrong = np.argwhere(got != expected.numpy())
    return None if len(wrong) == 0 else f"symbol {wrong[0][1] + 1} of sequence {wrong[0][0]} is wrong"


exercise(
    "ex-mem-linked-symbols", notebook=NB2B, name="linked_symbols", signature="linked_symbols(d, u, n)",
    reference=_linked_symbols_reference, cases=_linked_symbols_cases, compare=_linked_symbols_compare,
    difficulty=3,
    hint="symbol i is pushed at step i (step 0 reads the start symbol) and must come back in the read "
         "of step 2n - i. Drive the stack with d and u and random values; ask autograd whether that "
         "read depends on d at step i.")


def _stack_bptt_reference(v, d, u, g_r):
    """Autograd through the package's stack (one sequence): the gradients of
    L = sum_t <g_r[t], r_t> with respect to the values, the pushes and the pops."""
    import torch

    from rnnlab import neural_memory

    v, d, u = (x.detach().clone().requires_grad_() for x in (v, d, u))
    r, _ = neural_memory("stack", v[None], d[None], u[None], backend="torch")
    g_v, g_d, g_u = torch.autograd.grad(r[0], (v, d, u), g_r)
    return g_v, g_d, g_u


def _bptt_case(seed, T, m, pop_high=1.0, show=""):
    import torch

    gen = torch.Generator().manual_seed(seed)
    v = torch.randn(T, m, generator=gen, dtype=torch.float64)
    d = 0.1 + 0.9 * torch.rand(T, generator=gen, dtype=torch.float64)
    u = pop_high * torch.rand(T, generator=gen, dtype=torch.float64)
    g_r = torch.randn(T, m, generator=gen, dtype=torch.float64)
    return Case((v, d, u, g_r), show=show or f"random, T = {T}, m = {m} (seed {seed})")


def _stack_bptt_cases():
    import torch

    return [
        Case((torch.eye(3, dtype=torch.float64), _t([0.6, 0.5, 0.4]), _t([0.0, 0.2, 0.7]),
              _t([[1.0, 0.3, -0.7], [0.5, -1.0, 0.2], [2.0, 1.0, -0.5]])),
             show="the three steps of the page's figure, one-hot values"),
        Case((_bptt_case(0, 6, 3).args[0], torch.full((6,), 0.5, dtype=torch.float64),
              torch.full((6,), 0.27, dtype=torch.float64), _bptt_case(0, 6, 3).args[3]),
             show="constant controls d = 0.5, u = 0.27 (pop bias -1), T = 6"),
        _bptt_case(0, 6, 3),
        _bptt_case(1, 8, 2, pop_high=0.5, show="random, T = 8, m = 2, pops below 0.5"),
    ]


exercise(
    "ex-mem-stack-bptt", notebook=NB2, name="stack_backward", signature="stack_backward(v, d, u, g_r)",
    answers=("rnnlab.kernels.memory_torch:_pop_backward", "rnnlab.kernels.memory_torch:_read_backward",
             "rnnlab.kernels.memory_torch:neural_memory_backward_ref",
             "rnnlab.kernels.memory_torch:step_backward_ref", "rnnlab.kernels.memory:neural_memory"),
    reference=_stack_bptt_reference, cases=_stack_bptt_cases, difficulty=3, atol=1e-8,
    hint="run the steps forward and keep the strengths before each pop; then go from step T down to 1: "
         "the gradient of the strengths after step t is the read's of step t plus what the pop of "
         "step t + 1 sends back (zero after the last step). Its last entry is dL/dd_t.",
    hints=("the pop of step 1 finds an empty memory: dL/du_1 is 0. A value v_i collects w_t[i] g_r[t] "
           "from every read of step t >= i.",))


# ----------------------------------------------------------------- 03: transduction

NB3 = "memory/04_transduction"


def _pops_reference(m, same_step):
    """The exact stack's pops u_0 .. u_(2m+1) on <s> x_1 .. x_m ||| x_m .. x_1: one whole row at each
    step from the one that reads ||| (or, when the output sees the read of its own step, from the one
    after it), m steps in all; 0 wherever a pop would change nothing."""
    first = m + 2 if same_step else m + 1
    return [1.0 if first <= t < first + m else 0.0 for t in range(2 * m + 2)]


def _pops_compare(got, expected):
    try:
        got = [float(x) for x in got]
    except (TypeError, ValueError):
        return "expected a list of 2m + 2 numbers, one pop per step"
    if len(got) != len(expected):
        return f"expected 2m + 2 = {len(expected)} pops (steps 0 .. 2m + 1), got {len(got)}"
    if all(abs(g - e) <= 1e-9 for g, e in zip(got, expected)):
        return None
    m = (len(expected) - 2) // 2
    other = _pops_reference(m, expected.index(1.0) == m + 1)
    if all(abs(g - o) <= 1e-9 for g, o in zip(got, other)):
        return "these are the pops of the other wiring: which read does the output of the ||| step see?"
    return f"got pops at steps {[t for t, g in enumerate(got) if g]}: pop whole rows, and only where needed"


def _pops_cases():
    return [Case((m, same), show=f"m = {m}, {'the read of its own step' if same else 'the read of the step before'}")
            for m, same in ((3, False), (3, True), (1, False), (1, True), (4, True))]


exercise(
    "ex-mem-pop-steps", notebook=NB3, name="exact_pops", signature="exact_pops(m, same_step)",
    answers=("rnnlab.figures.memory:reversal_controls",),
    reference=_pops_reference, cases=_pops_cases, compare=_pops_compare, difficulty=2,
    hint="Draw the steps as in the timing figure: for each output symbol, which read shows it, and what "
         "must the stack hold after that read's step? A pop of step t changes the read of step t.")


def _lifetime_reference(s):
    """Strength-weighted mean age at pop of one run's strengths s[t, i] (rnnlab.experiments.transduction
    .memory_use, for one sequence)."""
    import torch

    s = torch.as_tensor(s, dtype=torch.float64)
    T = s.shape[0]
    prev = torch.cat([s.new_zeros(1, s.shape[1]), s[:-1]], 0)
    pops = (prev - s).clamp(min=0)
    age = (torch.arange(T)[:, None] - torch.arange(s.shape[1])[None, :]).double()
    popped = float(pops.sum())
    return float((pops * age).sum()) / popped if popped > 1e-12 else float("nan")


def _lifetime_strengths(d, u):
    import torch

    from rnnlab import neural_memory

    d, u = (torch.tensor([x], dtype=torch.float64) for x in (d, u))
    _, s = neural_memory("stack", torch.zeros(1, d.shape[1], 1, dtype=torch.float64), d, u, backend="torch")
    return s[0]


def _lifetime_cases():
    return [
        Case((_lifetime_strengths([1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1]),),
             show="push 3 whole rows, then pop 3: ages 1, 3 and 5"),
        Case((_lifetime_strengths([0.5] * 6, [0.62] * 6),), show="d = 0.5, u = 0.62 at every step"),
        Case((_lifetime_strengths([0.8, 0.5, 0.9], [0.0, 0.1, 0.9]),), show="the worked example"),
        Case((_lifetime_strengths([0.5] * 8, [0.27] * 8),), show="d = 0.5, u = 0.27 at every step"),
    ]


def _lifetime_compare(got, expected):
    try:
        got = float(got)
    except (TypeError, ValueError):
        return "expected a number"
    return None if abs(got - expected) <= 1e-6 * max(1.0, abs(expected)) else (
        f"got {got:.4f}: weigh the age t - i of each popped piece s[t-1, i] - s[t, i] by its size")


exercise(
    "ex-mem-lifetime", notebook=NB3, name="value_lifetime", signature="value_lifetime(s)",
    reference=_lifetime_reference, cases=_lifetime_cases, compare=_lifetime_compare, difficulty=3,
    hint="Step t pops s[t-1, i] - s[t, i] of the value pushed at step i, at age t - i (rows are never "
         "popped at the step that pushes them). Average the ages, weighted by the popped strength.")


# ----------------------------------------------------------------- 05: which memory for which task

NB5 = "memory/05_what_each_memory_can_do"


def _deque_roles_reference(n, role):
    """Push n symbols whole on top; then pop one whole row per step from the top (a stack's order) or
    from the bottom (a queue's); each as a list of 2n [top, bottom] pairs."""
    d = [[1.0, 0.0]] * n + [[0.0, 0.0]] * n
    pop = [1.0, 0.0] if role == "stack" else [0.0, 1.0]
    u = [[0.0, 0.0]] * (n + 1) + [pop] * (n - 1)
    return d, u


def _deque_reads(controls, n):
    """The top and the bottom reads of steps n .. 2n - 1 when step t pushes one-hot t at either end."""
    import torch

    from rnnlab import neural_memory

    d, u = (torch.as_tensor(x, dtype=torch.float64).reshape(2 * n, 2) for x in controls)
    v = torch.eye(2 * n, dtype=torch.float64)[:, None, :].expand(2 * n, 2, 2 * n)
    r, _ = neural_memory("deque", v[None].contiguous(), d[None], u[None], backend="torch")
    return r[0, n:, 0], r[0, n:, 1]


def _deque_roles_compare(got, expected):
    import torch

    n = len(expected[0]) // 2
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return "expected a pair (d, u)"
    try:
        shapes = [tuple(torch.as_tensor(x, dtype=torch.float64).shape) for x in got]
    except (TypeError, ValueError, RuntimeError):
        return "d and u must be lists of [top, bottom] pairs of numbers"
    if shapes != [(2 * n, 2), (2 * n, 2)]:
        return f"d and u must each be 2n = {2 * n} pairs [top, bottom], got shapes {shapes}"
    newest_first = torch.eye(2 * n, dtype=torch.float64)[:n].flip(0)
    stack = any(bool(torch.allclose(r, newest_first, atol=1e-6)) for r in _deque_reads(expected, n))
    want = newest_first if stack else newest_first.flip(0)
    try:
        top, bottom = _deque_reads(got, n)
    except (ValueError, TypeError, RuntimeError) as e:
        return f"the deque refused these controls: {e}"
    if any(bool(torch.allclose(r, want, atol=1e-6)) for r in (top, bottom)):
        return None
    order = "in reverse (newest first)" if stack else "in order (oldest first)"
    return (f"neither the top nor the bottom read of steps n .. 2n - 1 shows the symbols {order}: "
            f"the top read shows {[int(r.argmax()) + 1 if r.sum() > 0.5 else 0 for r in top]}, "
            f"the bottom read {[int(r.argmax()) + 1 if r.sum() > 0.5 else 0 for r in bottom]}")


def _deque_roles_cases():
    return [Case((n, role), show=f"n = {n}, as a {role}") for n in (1, 2, 3, 5) for role in ("stack", "queue")]


exercise(
    "ex-mem-deque-roles", notebook=NB5, name="deque_controls", signature="deque_controls(n, role)",
    reference=_deque_roles_reference, cases=_deque_roles_cases, compare=_deque_roles_compare, difficulty=1,
    hint="Push every source symbol whole at one end. Which end's row holds the newest symbol, and which "
         "the oldest? Pop from the end whose read must show the next symbol due.")


def _strengths_reference(net, m=12, seed=0):
    """The push and pop strengths of a memory network reading one teacher-forced copy pair (seeded)."""
    import torch

    from rnnlab.tasks import joint_sequences, transduction

    seen = {"push": [], "pop": []}
    hooks = [getattr(net, name).register_forward_hook(lambda mod, inp, out, name=name: seen[name].append(out))
             for name in seen]
    sources, targets = transduction("copy", 1, m, m, vocab=net.n_source, seed=seed)
    batch = joint_sequences(sources, targets, n_source=net.n_source, n_target=net.n_target)
    try:
        with torch.no_grad():
            net(batch.inputs)
    finally:
        for hook in hooks:
            hook.remove()
    return [torch.sigmoid(torch.stack(seen[name], 1))[0, :, 0].double().numpy() for name in ("push", "pop")]


def _strengths_compare(got, expected):
    import numpy as np

    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return "expected a pair [push strengths, pop strengths]"
    try:
        got = [np.asarray(x, dtype=float).reshape(-1) for x in got]
    except (TypeError, ValueError, RuntimeError):
        return "the push and pop strengths must be arrays of numbers, one a step"
    for name, g, e in zip(("push", "pop"), got, expected):
        if g.shape != e.shape:
            return f"expected {len(e)} {name} strengths (one a step of the joint sequence), got {len(g)}"
        if not np.allclose(g, e, rtol=1e-5, atol=1e-6):
            return f"the {name} strengths differ: are they the sigmoids of the head's outputs, in step order?"
    return None


def _strengths_cases():
    from rnnlab.experiments.transduction import make_model

    return [Case((make_model(kind, n_source=8, n_target=8, hidden=8, values=4, embedding=4, seed=seed).eval(),
                  m, seed), show=f"an untrained {kind} network (seed {seed}), m = {m}")
            for kind, m, seed in (("queue", 3, 0), ("stack", 5, 1), ("queue", 12, 2))]


exercise(
    "ex-mem-inside-queue", notebook=NB5, name="push_pop_strengths", signature="push_pop_strengths(net, m, seed)",
    reference=_strengths_reference, cases=_strengths_cases, compare=_strengths_compare, difficulty=2,
    hint="Register a forward hook on net.push and on net.pop that stores each output, run the network once "
         "on the joint sequence of one copy pair, and take the sigmoid of the stored outputs.")


# ----------------------------------------------------------------- hidden cases (python -m rnnlab grade)
# Drawn with the teacher's seeded NumPy generator; the same shapes and ranges as the public cases.

def _strengths(rng, n):
    s = rng.uniform(0.0, 1.0, n)
    s[rng.random(n) < 0.2] = 0.0                     # some empty rows
    return _t(s.tolist())


@hidden("ex-mem-read-weights")
def _read_weights_hidden(rng):
    return [Case((_strengths(rng, n), round(float(rng.uniform(0.0, 1.5)), 2))) for n in (3, 5, 6)]


@hidden("ex-mem-reversal-controls")
def _reversal_hidden(rng):
    return [Case((int(n),)) for n in rng.choice([4, 6, 7, 8], size=2, replace=False)]


@hidden("ex-mem-deque-pops")
def _deque_pops_hidden(rng):
    return [Case((_strengths(rng, n), float(rng.uniform(0.0, 1.2)), float(rng.uniform(0.0, 1.2))))
            for n in (3, 5, 6)]


@hidden("ex-mem-push-reach")
def _push_reach_hidden(rng):
    cases = []
    while len(cases) < 3:
        d = round(float(rng.uniform(0.2, 0.9)), 2)
        u = round(float(rng.uniform(0.0, d + 0.1)), 2)
        ratio = (1 - d) / (d - u) if u < d else 0.0
        # away from ties, and a reach no public case has (0, 2, 3, 8), so that hard-coding fails
        if 0 < u and ratio < 15 and abs(ratio - round(ratio)) > 0.05 and int(ratio) not in (0, 2, 3, 8):
            cases.append(Case((d, u)))
    return cases


@hidden("ex-mem-linked-symbols")
def _linked_symbols_hidden(rng):
    return [_linked_case(int(rng.integers(100, 10_000)), B, n) for B, n in ((2, 4), (3, 6))]


@hidden("ex-mem-queue-backward")
def _queue_pop_grad_hidden(rng):
    return [Case((_t(rng.uniform(0.05, 1.0, n).tolist()), float(rng.uniform(0.05, 1.2)),
                  _t(rng.normal(size=n).tolist()))) for n in (3, 5)]


@hidden("ex-mem-stack-bptt")
def _stack_bptt_hidden(rng):
    return [_bptt_case(int(rng.integers(100, 10_000)), T, 3) for T in (5, 7)]


@hidden("ex-mem-lifetime")
def _lifetime_hidden(rng):
    return [Case((_lifetime_strengths(rng.uniform(0.2, 1.0, n).tolist(), rng.uniform(0.0, 1.0, n).tolist()),))
            for n in (5, 7)]


@hidden("ex-mem-pop-steps")
def _pops_hidden(rng):
    return [Case((int(m), bool(same))) for m, same in zip(rng.choice([2, 5, 6], size=2, replace=False),
                                                         rng.permutation([True, False]))]
