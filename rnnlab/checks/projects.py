"""The milestone functions of the book's projects (book/projects/), declared for rnnlab.checks.

A project is graded mostly by hand (its report and its experiment); the functions
below are the parts a program can grade, each due at a milestone:

- project 1, an LDStack on a new task: the task's targets (``delayed_sum``) and the
  time scales of a spectrum (``mode_timescales``);
- project 2, a neural queue on a new transduction: the new task's targets
  (``duplicate_targets``) and the accuracy per length of the length-generalisation
  plot (``coarse_by_length``);
- project 3, the price of a certificate: digits at another resolution
  (``pool_rows``) and the Euler certificate of a trained Combo Net
  (``euler_certificate``).

Each reference is the package's own computation or a few lines of torch; heavy
imports stay inside the functions, so that ``import rnnlab.checks`` stays cheap.
"""
import math

from .core import Case, exercise, hidden

P1 = "projects/01_ldstack_new_task"
P2 = "projects/02_queue_transduction"
P3 = "projects/03_combo_net_certificate"


def _seed(rng):
    return int(rng.integers(2 ** 31))


# ----------------------------------------------------------------- project 1: delayed sums

def _delayed_sum_reference(x, delays):
    """y_t = sum_k x_(t - d_k), with x_s = 0 before the first step (s < 0)."""
    import torch

    x = torch.as_tensor(x)
    y = torch.zeros_like(x)
    T = x.shape[1]
    for d in delays:
        d = int(d)
        if d < T:
            y[:, d:] += x[:, :T - d]
    return y


def _delayed_sum_cases():
    import torch

    def randn(*shape, seed):
        return torch.randn(*shape, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))

    ramp = torch.arange(1.0, 7.0, dtype=torch.float64).reshape(1, 6, 1)
    return [
        Case((ramp, (2,)), show="x = 1, 2, .., 6 (one sequence), delays = (2,)"),
        Case((ramp, (0, 1)), show="x = 1, 2, .., 6, delays = (0, 1) (a delay of 0 is the input itself)"),
        Case((randn(3, 20, 1, seed=0), (3, 8)), show="a batch of 3 sequences of 20 steps, delays = (3, 8)"),
        Case((randn(2, 5, 1, seed=1), (2, 9)), show="5 steps, delays = (2, 9) (the second reaches past the start)"),
        Case((randn(2, 12, 3, seed=2), (1, 1, 4)),
             show="3 input channels, delays = (1, 1, 4) (a repeated delay counts twice)"),
    ]


exercise(
    "ex-proj-delayed-sum", notebook=P1, name="delayed_sum",
    signature="delayed_sum(x, delays)",
    reference=_delayed_sum_reference, cases=_delayed_sum_cases, rtol=1e-12, atol=1e-12,
    difficulty=1, words=False,
    hint="shift x along time (dimension 1) by each delay, filling the first steps with zeros, "
         "and add the shifted copies.")


@hidden("ex-proj-delayed-sum")
def _delayed_sum_hidden(rng):
    import torch

    cases = []
    for B, T, C in ((2, 15, 1), (1, 7, 2)):
        delays = tuple(int(d) for d in rng.integers(0, T + 2, size=3))
        cases.append(Case((torch.from_numpy(rng.normal(size=(B, T, C))), delays)))
    return cases


def _timescales_reference(lam):
    """(memory, period) per eigenvalue: -1/ln|lambda| steps (inf when |lambda| = 1; negative
    for a growing mode, |lambda| > 1: it grows by e every |memory| steps) and 2 pi/|arg lambda|
    steps (inf when arg lambda = 0)."""
    import torch

    lam = torch.as_tensor(lam).to(torch.complex128)
    r, angle = lam.abs(), lam.angle().abs()
    inf = torch.full_like(r, math.inf)
    log_r = torch.log(r)
    memory = torch.where(log_r != 0, -1.0 / torch.where(log_r != 0, log_r, torch.ones_like(r)), inf)
    period = torch.where(angle > 0, 2 * math.pi / torch.where(angle > 0, angle, torch.ones_like(angle)), inf)
    return memory, period


def _timescales_cases():
    import torch

    def polar(r, a):
        return torch.polar(torch.tensor(r, dtype=torch.float64), torch.tensor(a, dtype=torch.float64))

    e = math.exp(-1)
    return [
        Case((polar([e], [math.pi / 2]),), show="lam = e^-1 * i (memory 1 step, period 4 steps)"),
        Case((polar([0.9, 0.9], [0.5, -0.5]),), show="a conjugate pair 0.9 e^{±0.5i}"),
        Case((polar([1.0, 0.5, 0.99, 1.05], [2 * math.pi / 7, 0.0, math.pi, 0.3]),),
             show="|lambda| = 1 (memory inf), a real 0.5 (period inf), -0.99 (period 2), "
                  "|lambda| = 1.05 (growing: memory -1/ln 1.05 < 0)"),
        Case((polar([0.2, 0.7, 0.95, 0.999], [3.0, -0.1, 1.0, 0.01]),),
             show="four modes from fast to slow"),
    ]


exercise(
    "ex-proj-timescales", notebook=P1, name="mode_timescales",
    signature="mode_timescales(lam)",
    reference=_timescales_reference, cases=_timescales_cases, rtol=1e-9, atol=1e-12,
    difficulty=1, words=False,
    hint="|lambda|^t = exp(-t / tau) gives the memory tau; the angle advances by |arg lambda| a "
         "step, so a full turn takes 2 pi / |arg lambda| steps. Return float('inf') where "
         "a mode neither fades nor grows (|lambda| = 1) or never turns; a growing mode "
         "(|lambda| > 1) keeps the same formula, a negative memory.")


@hidden("ex-proj-timescales")
def _timescales_hidden(rng):
    import torch

    n = 6
    lam = torch.polar(torch.from_numpy(rng.uniform(0.1, 1.2, n)), torch.from_numpy(rng.uniform(-3, 3, n)))
    return [Case((lam,))]


# ----------------------------------------------------------------- project 2: a queue that duplicates

def _duplicate_reference(sources):
    return [[int(s) for s in src for _ in (0, 1)] for src in sources]


def _duplicate_cases():
    return [
        Case(([[0, 1, 2]],), show="sources = [[0, 1, 2]]"),
        Case(([[5], [3, 3]],), show="sources = [[5], [3, 3]]"),
        Case(([[7, 0, 7, 1, 2, 6, 4, 4]],), show="one source of 8 symbols"),
        Case(([[], [2, 1]],), show="an empty source and [2, 1]"),
    ]


exercise(
    "ex-proj-duplicate", notebook=P2, name="duplicate_targets",
    signature="duplicate_targets(sources)",
    reference=_duplicate_reference, cases=_duplicate_cases,
    difficulty=1, words=False,
    hint="the target of a b c is a a b b c c: one list of ints per source.")


@hidden("ex-proj-duplicate")
def _duplicate_hidden(rng):
    return [Case(([[int(v) for v in rng.integers(0, 8, size=int(m))] for m in rng.integers(1, 12, size=4)],))]


def _by_length_reference(predictions, targets, lengths, end):
    from rnnlab.tasks import transduction_accuracy

    groups = {}
    for p, t, m in zip(predictions, targets, lengths):
        groups.setdefault(int(m), ([], []))
        groups[int(m)][0].append(p)
        groups[int(m)][1].append(t)
    return {m: transduction_accuracy(ps, ts, end)[0] for m, (ps, ts) in sorted(groups.items())}


def _by_length_cases():
    end = 9
    return [
        Case(([[1, 2, end], [1, 3, end], [4, end]], [[1, 2], [1, 2], [4]], [2, 2, 1], end),
             show="three sequences: two of length 2 (one right), one of length 1 (right)"),
        Case(([[1, 2], [1, 2, end, 5]], [[1, 2], [1, 2]], [3, 3], end),
             show="one prediction that never ends, one that ends and runs on (only </s> counts)"),
        Case(([[1, 1, end], [2, 2, 3, 3, end], [2, 2, 3, end]], [[1, 1], [2, 2, 3, 3], [2, 2, 3, 3]],
              [1, 2, 2], end),
             show="duplicate targets grouped by source length, one too short"),
        Case(([[end]], [[]], [0], end), show="an empty target predicted right"),
    ]


exercise(
    "ex-proj-by-length", notebook=P2, name="coarse_by_length",
    signature="coarse_by_length(predictions, targets, lengths, end)",
    reference=_by_length_reference, cases=_by_length_cases,
    difficulty=2, words=False,
    hint="group the sequences by their length; in each group, a prediction counts when it "
         "equals target + [end] up to its first end symbol.")


@hidden("ex-proj-by-length")
def _by_length_hidden(rng):
    end = 8
    predictions, targets, lengths = [], [], []
    for _ in range(12):
        m = int(rng.integers(1, 5))
        t = [int(v) for v in rng.integers(0, 8, size=2 * m)]
        p = list(t) + [end]
        if rng.random() < 0.5:
            p[int(rng.integers(0, len(p)))] = int(rng.integers(0, 9))
        predictions.append(p)
        targets.append(t)
        lengths.append(m)
    return [Case((predictions, targets, lengths, end))]


# ----------------------------------------------------------------- project 3: the price of a certificate

def _pool_rows_reference(images, size):
    import torch

    images = torch.as_tensor(images)
    N, H, W = images.shape
    return images.reshape(N, size, H // size, size, W // size).mean(dim=(2, 4))


def _pool_rows_cases():
    import torch

    g = torch.Generator().manual_seed(0)
    ramp = torch.arange(16.0, dtype=torch.float64).reshape(1, 4, 4)
    return [
        Case((ramp, 2), show="one 4 x 4 image 0, 1, .., 15 (row by row), size = 2"),
        Case((ramp, 4), show="the same image, size = 4 (unchanged)"),
        Case((ramp, 1), show="the same image, size = 1 (its mean)"),
        Case((torch.rand(3, 8, 8, dtype=torch.float64, generator=g), 4),
             show="three random 8 x 8 images, size = 4"),
        Case((torch.rand(2, 6, 6, dtype=torch.float64, generator=g), 3), show="two 6 x 6 images, size = 3"),
    ]


exercise(
    "ex-proj-pool-rows", notebook=P3, name="pool_rows",
    signature="pool_rows(images, size)",
    reference=_pool_rows_reference, cases=_pool_rows_cases, rtol=1e-9, atol=1e-12,
    difficulty=1, words=False,
    hint="split each side into `size` blocks of H // size pixels and average every block: "
         "the result is (N, size, size), row r of an image being time step r.")


@hidden("ex-proj-pool-rows")
def _pool_rows_hidden(rng):
    import torch

    return [Case((torch.from_numpy(rng.uniform(size=(2, 12, 12))), int(s))) for s in (2, 6)]


def _euler_certificate_reference(net):
    """||M^1/2 (I + alpha(-I + L)) M^-1/2||_2 + alpha g ||M^1/2 W M^-1/2||_2 of a Combo Net."""
    import torch

    with torch.no_grad():
        s = net.metric_diag().double().sqrt()
        W = net.recurrent_weight().double()
        L = net.feedback(torch.float64)
        n = W.shape[0]
        eye = torch.eye(n, dtype=torch.float64)
        Lm = s[:, None] * L / s[None, :]
        Wm = s[:, None] * W / s[None, :]
        step = eye + net.alpha * (-eye + Lm)
        bound = torch.linalg.matrix_norm(step, ord=2) + net.alpha * net.g * torch.linalg.matrix_norm(Wm, ord=2)
    return float(bound)


def _combo(sizes, seed, scale=None, **kwargs):
    import torch

    from rnnlab.models import SparseComboNet

    net = SparseComboNet(3, list(sizes), 2, seed=seed, dtype=torch.float64, **kwargs)
    if scale is not None:       # a trained feedback: B grown far past its initial size
        with torch.no_grad():
            g = torch.Generator().manual_seed(seed)
            net.b_free.copy_(scale * torch.randn(net.b_free.shape, dtype=torch.float64, generator=g))
    return net


def _euler_certificate_cases():
    return [
        Case((_combo([4, 4], 0),), show="two modules of 4 units, as built (seed 0)"),
        Case((_combo([6, 6, 6], 1, scale=1.0),), show="three modules of 6 units, feedback grown (seed 1)"),
        Case((_combo([5, 3], 2, scale=1.0, alpha=0.05),),
             show="modules of 5 and 3 units, alpha = 0.05, feedback grown (seed 2)"),
        Case((_combo([4, 4, 4], 3, scale=1.0, euler_margin=0.01),),
             show="three modules of 4 units with euler_margin = 0.01, feedback grown (seed 3)"),
    ]


exercise(
    "ex-proj-euler-certificate", notebook=P3, name="euler_certificate",
    signature="euler_certificate(net)",
    answers=("rnnlab.theory:combo_net_report",),
    reference=_euler_certificate_reference, cases=_euler_certificate_cases, rtol=1e-7, atol=1e-10,
    difficulty=2, words=False,
    hint="work in the metric's coordinates: with s = sqrt(M's diagonal), a matrix A becomes "
         "s[:, None] * A / s[None, :]; then bound the linear part and the slopes' part "
         "of one Euler step separately.")


@hidden("ex-proj-euler-certificate")
def _euler_certificate_hidden(rng):
    return [Case((_combo([4, 6], _seed(rng) % 1000, scale=float(rng.uniform(0.2, 2.0))),))]

