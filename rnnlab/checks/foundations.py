"""The code exercises of the primer (book/scans/00_dynamical_systems), declared for rnnlab.checks.

The network is ``h_t = φ(W h_{t−1} + U x_t)``, with φ = tanh (the RNN) or the
identity (its linear cousin). The references come from the package where it
has the answer (the Jacobian of :class:`rnnlab.models.RNN` by
:func:`rnnlab.theory.recurrent_jacobian`; the growth of a product of
Jacobians by :func:`rnnlab.theory.cumulative_log_norms`, i.e. backpropagation
through time actually run), and otherwise from the plain NumPy definition (a
fixed point solves a linear system). Heavy imports stay inside the functions.
"""
from .core import Case, exercise, hidden

NB = "scans/00_dynamical_systems"


def _np(rows):
    import numpy as np

    return np.array(rows, dtype=float)


def _t(rows):
    import torch

    return torch.tensor(rows, dtype=torch.float64)


def _rnn(W, U):
    """An :class:`rnnlab.models.RNN` in float64 holding ``W`` ``(n, n)`` and ``U`` ``(n, m)``, no bias."""
    import torch

    from rnnlab.models import RNN

    W = torch.as_tensor(W, dtype=torch.float64)
    U = torch.as_tensor(U, dtype=torch.float64)
    model = RNN(U.shape[1], W.shape[0], dtype=torch.float64)
    with torch.no_grad():
        model.weight_hh.copy_(W[None])
        model.mask_hh.fill_(1.0)
        model.weight_ih.copy_(U)
        model.bias.zero_()
    return model


# ------------------------------------------------------------ ★ the fixed point of a linear RNN

def _linear_fixed_point(W, U, x):
    import numpy as np

    W, U, x = (np.asarray(a, dtype=float) for a in (W, U, x))
    return np.linalg.solve(np.eye(W.shape[0]) - W, U @ x)


def _fixed_point_cases():
    import numpy as np

    rng = np.random.default_rng(3)
    return [
        Case((_np([[0.5, -0.6], [0.3, 0.4]]), _np([[1.0], [0.5]]), _np([0.5])),
             show="W = [[0.5, -0.6], [0.3, 0.4]], U = [[1], [0.5]], x = [0.5]"),
        Case((_np([[1.6, 0.4], [0.4, 0.6]]), _np([[1.0], [0.5]]), _np([1.0])),
             show="W = [[1.6, 0.4], [0.4, 0.6]] (spectral radius 1.74), U = [[1], [0.5]], x = [1]"),
        Case((_np([[0.8, -0.6], [0.6, 0.8]]), _np([[1.0], [0.0]]), _np([2.0])),
             show="W = [[0.8, -0.6], [0.6, 0.8]] (a rotation), U = [[1], [0]], x = [2]"),
        Case((np.round(rng.normal(0, 0.4, (3, 3)), 2), np.round(rng.normal(0, 1, (3, 2)), 2), _np([1.0, -0.5])),
             show="three units, two inputs (seeded random W, U), x = [1, -0.5]"),
        Case((np.zeros((2, 2)), _np([[2.0], [-1.0]]), _np([0.25])),
             show="W = 0, U = [[2], [-1]], x = [0.25]"),
    ]


def _fixed_point_hidden(rng):
    """Random networks of 2 to 5 units and 1 to 3 inputs, stable or not; I - W well conditioned."""
    cases = []
    while len(cases) < 4:
        n, m = int(rng.integers(2, 6)), int(rng.integers(1, 4))
        W = rng.normal(0.0, 0.8, (n, n))
        if abs(_smallest_gap(W)) < 0.2:
            continue
        cases.append(Case((W, rng.normal(0.0, 1.0, (n, m)), rng.normal(0.0, 1.0, m))))
    return cases


def _smallest_gap(W):
    """The smallest singular value of I - W (how far 1 is from being an eigenvalue)."""
    import numpy as np

    return np.linalg.svd(np.eye(len(W)) - W, compute_uv=False)[-1]


exercise(
    "ex-found-fixed-point", notebook=NB, name="linear_fixed_point",
    signature="linear_fixed_point(W, U, x)",
    reference=_linear_fixed_point,
    cases=_fixed_point_cases, difficulty=1, hidden=_fixed_point_hidden,
    hint="a fixed point satisfies h* = W h* + U x: gather the terms in h* on one side and solve "
         "the linear system; running the network until it settles only works when it is stable.",
)


# ------------------------------------------------------------ ★★ the Jacobian of the tanh RNN

def _tanh_rnn_jacobian(W, U, h, x):
    import torch

    from rnnlab.theory import recurrent_jacobian

    model = _rnn(W, U)
    with torch.no_grad():
        J = recurrent_jacobian(model, torch.as_tensor(x, dtype=torch.float64)[None],
                               torch.as_tensor(h, dtype=torch.float64)[None])
    return J[0]


def _jacobian_cases():
    import torch

    gen = torch.Generator().manual_seed(7)
    W3 = torch.randn(3, 3, generator=gen, dtype=torch.float64)
    U3 = torch.randn(3, 2, generator=gen, dtype=torch.float64)
    h3 = torch.tanh(torch.randn(3, generator=gen, dtype=torch.float64))
    return [
        Case((_t([[1.6, 0.4], [0.4, 0.6]]), _t([[1.0], [0.5]]), _t([0.3, -0.5]), _t([0.8])),
             show="W = [[1.6, 0.4], [0.4, 0.6]], U = [[1], [0.5]], h = [0.3, -0.5], x = [0.8]"),
        Case((_t([[0.7, -1.2], [0.4, 0.9]]), _t([[1.0], [0.5]]), _t([-0.9, 0.8]), _t([-1.0])),
             show="W = [[0.7, -1.2], [0.4, 0.9]], U = [[1], [0.5]], h = [-0.9, 0.8], x = [-1]"),
        Case((_t([[0.5, 2.0], [-3.0, 0.1]]), _t([[4.0], [0.0]]), _t([0.2, 0.1]), _t([1.0])),
             show="W = [[0.5, 2], [-3, 0.1]], U = [[4], [0]], h = [0.2, 0.1], x = [1] (unit 1 saturates)"),
        Case((W3, U3, h3, _t([0.5, -1.5])),
             show="three units, two inputs (seeded random W, U, h), x = [0.5, -1.5]"),
        Case((_t([[1.6, 0.4], [0.4, 0.6]]), _t([[1.0], [0.5]]), _t([0.0, 0.0]), _t([0.0])),
             show="W = [[1.6, 0.4], [0.4, 0.6]], h = [0, 0], x = [0] (the origin)"),
    ]


def _jacobian_hidden(rng):
    """Random networks of 1 to 5 units and 1 to 3 inputs at random states and inputs."""
    import torch

    cases = []
    for _ in range(4):
        n, m = int(rng.integers(1, 6)), int(rng.integers(1, 4))
        W, U = rng.normal(0.0, 1.2, (n, n)), rng.normal(0.0, 1.0, (n, m))
        h, x = rng.uniform(-0.99, 0.99, n), rng.normal(0.0, 1.5, m)
        cases.append(Case(tuple(torch.from_numpy(a) for a in (W, U, h, x))))
    return cases


exercise(
    "ex-found-jacobian", notebook=NB, name="tanh_rnn_jacobian",
    answers=("rnnlab.theory.jacobians:recurrent_jacobian",),
    signature="tanh_rnn_jacobian(W, U, h, x)",
    reference=_tanh_rnn_jacobian,
    cases=_jacobian_cases, difficulty=2, hidden=_jacobian_hidden,
    hint="differentiate unit i, tanh(a_i) with a_i = sum_j W_ij h_j + (U x)_i, with respect to h_j; "
         "the derivative of tanh is taken at the pre-activation a_i, not at the old state h_i.",
)


# ------------------------------------------------------------ ★★★ predict, then run: do gradients explode?

GROWTH_STEPS = 800
"""How many steps of backpropagation through time the check runs to measure a growth rate."""


def _measured_growth_rate(W, h0, nonlinearity="tanh"):
    """The rate g of ``‖∂h_T/∂h_0‖ ≈ e^{g T}`` with zero input, *measured*: Jacobians along the trajectory from
    ``h0`` (the package's, for tanh; ``W`` for the linear cousin), multiplied by
    :func:`rnnlab.theory.cumulative_log_norms`, slope over the products of the last
    ``GROWTH_STEPS / 4`` to ``GROWTH_STEPS / 2`` Jacobians (the trajectory has settled by then)."""
    import torch

    from rnnlab.theory import cumulative_log_norms, recurrent_jacobian

    if nonlinearity not in ("tanh", "linear"):
        raise ValueError(f"nonlinearity must be 'tanh' or 'linear', got {nonlinearity!r}")
    W = torch.as_tensor(W, dtype=torch.float64)
    n, T = W.shape[0], GROWTH_STEPS
    if nonlinearity == "linear":
        J = W.expand(T, n, n)
    else:
        h = torch.as_tensor(h0, dtype=torch.float64)
        states = []
        for _ in range(T):
            states.append(h)
            h = torch.tanh(W @ h)
        model = _rnn(W, torch.zeros(n, 1, dtype=torch.float64))
        with torch.no_grad():
            J = recurrent_jacobian(model, torch.zeros(T, 1, dtype=torch.float64), torch.stack(states))
    L = cumulative_log_norms(J, norm="spectral")          # L[k - 1] = log ||J_T ... J_{T-k+1}||
    a, b = T // 4, T // 2
    return float((L[b - 1] - L[a - 1]) / (b - a))


def _growth_cases():
    return [
        Case((_np([[1.6, 0.4], [0.4, 0.6]]), _np([0.05, -0.02]), "tanh"),
             show="W = [[1.6, 0.4], [0.4, 0.6]], h0 = [0.05, -0.02], tanh"),
        Case((_np([[1.6, 0.4], [0.4, 0.6]]), _np([0.05, -0.02]), "linear"),
             show="W = [[1.6, 0.4], [0.4, 0.6]], h0 = [0.05, -0.02], linear"),
        Case((_np([[0.5, -0.6], [0.3, 0.4]]), _np([0.9, -0.9]), "tanh"),
             show="W = [[0.5, -0.6], [0.3, 0.4]], h0 = [0.9, -0.9], tanh"),
        Case((_np([[1.3, 0.5], [0.0, 0.7]]), _np([0.3, 0.4]), "tanh"),
             show="W = [[1.3, 0.5], [0, 0.7]], h0 = [0.3, 0.4], tanh"),
        Case((_np([[0.8, -0.6], [0.6, 0.8]]), _np([1.0, 0.0]), "linear"),
             show="W = [[0.8, -0.6], [0.6, 0.8]], h0 = [1, 0], linear"),
        Case((_np([[0.5, 4.0], [0.0, 0.5]]), _np([1.0, 1.0]), "linear"),
             show="W = [[0.5, 4], [0, 0.5]], h0 = [1, 1], linear"),
    ]


exercise(
    "ex-found-explode", notebook=NB, name="gradient_growth_rate",
    signature="gradient_growth_rate(W, h0, nonlinearity)",
    reference=_measured_growth_rate,
    cases=_growth_cases,
    rtol=0.0, atol=0.01, difficulty=3, fixed=True,
    answers=("rnnlab.theory.horizon:cumulative_log_norms", "rnnlab.widgets.dynamics:gradient_norms"),
    hint="the rate is the slope of log ||dh_T/dh_0|| once the trajectory has settled: where does the "
         "state go from h0?",
    hints=("once the state has settled at a fixed point, every step multiplies the gradient by the "
           "same Jacobian: which fixed point does the trajectory from h0 reach?",
           "the rate is the log of the largest eigenvalue modulus of the Jacobian at that fixed point "
           "(for the linear cousin, of W itself)."),
)


@hidden("ex-found-explode")
def _growth_hidden(rng):
    """Symmetric positive definite W (eigenvalues in (0.3, 1.6)): zero-input trajectories settle at a
    fixed point (no cycles), so the eigenvalue rule holds; one linear and one tanh case."""
    import numpy as np

    def spd():
        q, _ = np.linalg.qr(rng.normal(size=(2, 2)))
        return q @ np.diag(rng.uniform(0.3, 1.6, size=2)) @ q.T

    h0 = rng.uniform(-0.5, 0.5, size=2)
    return [Case((spd(), h0, "linear")), Case((spd(), h0, "tanh"))]
