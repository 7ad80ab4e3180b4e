"""The auto-checks of the primer's code exercises (rnnlab/checks/foundations.py).

For every exercise: the package's reference passes its own cases, the
notebook's starter (any function raising NotImplementedError) is "not
attempted", a correct answer written another way passes, and a plausible wrong
answer fails, naming the case that failed.
"""
import numpy as np
import torch

from rnnlab.checks import evaluate, exercises, get

LABELS = ["ex-found-fixed-point", "ex-found-jacobian", "ex-found-explode"]


def test_the_notebook_declares_exactly_its_exercises():
    declared = [ex.label for ex in exercises(notebook="scans/00_dynamical_systems")]
    assert declared == LABELS


def _fails_at(label, candidate, case, total, *words):
    result = evaluate(label, candidate)
    assert result.status == "failed", result.message
    assert f"case {case} of {total} failed: for " in result.message, result.message
    for word in words:
        assert word in result.message, result.message
    assert "hint:" in result.message
    return result


def _passes(label, candidate):
    result = evaluate(label, candidate)
    assert result.ok, result.message
    return result


def test_references_pass_and_starters_are_not_attempted():
    def starter(*args):
        raise NotImplementedError

    for label in LABELS:
        assert evaluate(label, get(label).reference).ok
        assert evaluate(label, starter).status == "not attempted"


def test_difficulties_match_the_titles_and_hidden_cases_pass_the_reference():
    assert [get(label).difficulty for label in LABELS] == [1, 2, 3]
    for label in ("ex-found-fixed-point", "ex-found-jacobian"):
        ex = get(label)
        hidden = ex.hidden(np.random.default_rng(0))
        assert len(hidden) == 4
        assert ex.hidden(np.random.default_rng(0))[0].args[0].shape == hidden[0].args[0].shape
        for case in hidden:
            expected = ex.reference(*case.args)
            assert ex.agree(ex.reference(*case.args), expected) is None
    right = {"ex-found-fixed-point": lambda W, U, x: np.linalg.inv(np.eye(len(W)) - W) @ U @ x,
             "ex-found-jacobian": lambda W, U, h, x: torch.autograd.functional.jacobian(
                 lambda v: torch.tanh(W @ v + U @ x), h)}
    for label, candidate in right.items():
        ex = get(label)
        for case in ex.hidden(np.random.default_rng(1)):
            assert ex.agree(candidate(*case.args), ex.reference(*case.args)) is None, label
    # ex-found-explode: hidden networks settle at a fixed point, where the eigenvalue rule holds.
    def predicted(W, h0, nonlinearity):
        if nonlinearity == "linear":
            return float(np.log(np.abs(np.linalg.eigvals(W)).max()))
        h = np.asarray(h0, float)
        for _ in range(3000):
            h = np.tanh(W @ h)
        J = np.diag(1 - np.tanh(W @ h) ** 2) @ W
        return float(np.log(np.abs(np.linalg.eigvals(J)).max()))

    ex = get("ex-found-explode")
    hidden = ex.hidden(np.random.default_rng(3))
    assert [case.args[2] for case in hidden] == ["linear", "tanh"]
    for case in hidden:
        assert ex.agree(predicted(*case.args), ex.reference(*case.args)) is None
        assert ex.agree(0.0, ex.reference(*case.args)) is not None or abs(ex.reference(*case.args)) < 0.01


# ------------------------------------------------------------ ★ fixed point

def test_fixed_point_by_the_inverse_passes():
    _passes("ex-found-fixed-point", lambda W, U, x: np.linalg.inv(np.eye(len(W)) - W) @ U @ x)


def test_fixed_point_by_iterating_fails_where_the_network_is_unstable():
    def iterate(W, U, x):
        h = np.zeros(len(W))
        for _ in range(500):
            h = W @ h + U @ x
        return h

    result = _fails_at("ex-found-fixed-point", iterate, 2, 5, "spectral radius 1.74")
    assert result.passed >= 1                 # the stable first case is right


def test_fixed_point_with_the_wrong_sign_fails():
    _fails_at("ex-found-fixed-point", lambda W, U, x: np.linalg.solve(np.eye(len(W)) + W, U @ x), 1, 5)


# ------------------------------------------------------------ ★★ Jacobian

def test_jacobian_by_autograd_and_by_hand_pass():
    def by_autograd(W, U, h, x):
        return torch.autograd.functional.jacobian(lambda v: torch.tanh(W @ v + U @ x), h)

    def by_hand(W, U, h, x):
        a = W @ h + U @ x
        return np.diag(1 - np.tanh(a.numpy()) ** 2) @ W.numpy()     # a NumPy answer is fine

    _passes("ex-found-jacobian", by_autograd)
    _passes("ex-found-jacobian", by_hand)


def test_jacobian_with_the_derivative_at_the_old_state_fails():
    """The error of the low-rank paper's appendix A.4.1: tanh' taken at h_{t-1}, not at the pre-activation."""
    def at_old_state(W, U, h, x):
        return torch.diag(1 - torch.tanh(h) ** 2) @ W

    result = _fails_at("ex-found-jacobian", at_old_state, 1, 5, "h = [0.3, -0.5]")
    assert result.passed == 1                 # only at the origin, where both slopes are 1


def test_jacobian_with_the_factors_swapped_fails():
    def swapped(W, U, h, x):
        return W @ torch.diag(1 - torch.tanh(W @ h + U @ x) ** 2)

    _fails_at("ex-found-jacobian", swapped, 1, 5)


# ------------------------------------------------------------ ★★★ growth rate

def _predicted(W, h0, nonlinearity):
    """The prediction from eigenvalues: settle on the attractor, log of the Jacobian's spectral radius there."""
    W = np.asarray(W, dtype=float)
    if nonlinearity == "linear":
        return float(np.log(np.abs(np.linalg.eigvals(W)).max()))
    h = np.asarray(h0, dtype=float)
    for _ in range(2000):
        h = np.tanh(W @ h)
    J = np.diag(1 - np.tanh(W @ h) ** 2) @ W
    return float(np.log(np.abs(np.linalg.eigvals(J)).max()))


def test_the_prediction_from_eigenvalues_matches_the_measured_rates():
    _passes("ex-found-explode", _predicted)


def test_the_spectral_radius_of_W_alone_fails_for_the_saturated_tanh_network():
    def radius_of_W(W, h0, nonlinearity):
        return float(np.log(np.abs(np.linalg.eigvals(np.asarray(W))).max()))

    # the expected rate of table row (a) is an answer the exercise asks for: never shown (issue 38)
    result = _fails_at("ex-found-explode", radius_of_W, 1, 6, "tanh", "too large")
    assert "-0.9" not in result.message
    assert result.passed == 4                 # right for the linear cousins and the contracting network


def test_the_spectral_norm_instead_of_the_radius_fails_for_a_non_normal_matrix():
    def norm_not_radius(W, h0, nonlinearity):
        W = np.asarray(W, dtype=float)
        if nonlinearity == "linear":
            return float(np.log(np.linalg.norm(W, 2)))
        return _predicted(W, h0, nonlinearity)

    _fails_at("ex-found-explode", norm_not_radius, 6, 6, "W = [[0.5, 4], [0, 0.5]]")
