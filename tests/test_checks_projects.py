"""The milestone functions of the projects (rnnlab/checks/projects.py).

Each reference is compared with an answer computed independently (NumPy loops, SciPy,
the package's report of a Combo Net), on its public and hidden cases; plausible wrong
answers fail, naming the case and giving a hint. tests/test_exercises.py checks, for
every notebook, that the reference passes, that wrong types fail and that the starter
is "not attempted"."""
import math

import numpy as np
import pytest
import scipy.linalg
import torch

from rnnlab.checks import evaluate, exercises, get

LABELS = ["ex-proj-delayed-sum", "ex-proj-timescales", "ex-proj-duplicate", "ex-proj-by-length",
          "ex-proj-pool-rows", "ex-proj-euler-certificate"]


def test_the_projects_declare_exactly_their_functions():
    assert [ex.label for ex in exercises() if ex.notebook.startswith("projects/")] == LABELS


def _fails(label, candidate, *words):
    result = evaluate(label, candidate)
    assert result.status == "failed", result.message
    assert "hint:" in result.message, result.message
    for word in words:
        assert word in result.message, result.message
    return result


# ------------------------------------------------------------- independent answers

def _delayed_sum(x, delays):
    """A loop over every step and delay, in NumPy."""
    x = np.asarray(x)
    y = np.zeros_like(x)
    for t in range(x.shape[1]):
        for d in delays:
            if t - d >= 0:
                y[:, t] += x[:, t - d]
    return y


def _timescales(lam):
    """From the polar form: |lambda|^t = exp(-t / tau), one turn in 2 pi / |theta| steps."""
    memory, period = [], []
    for z in np.asarray(lam, dtype=complex):
        r, theta = abs(z), abs(np.angle(z))
        memory.append(math.inf if r == 1 else 1.0 / math.log(1.0 / r))  # < 0 when r > 1
        period.append(math.inf if theta == 0 else 2 * math.pi / theta)
    return np.array(memory), np.array(period)


def _duplicate(sources):
    out = []
    for source in sources:
        target = []
        for s in source:
            target += [s, s]
        out.append(target)
    return out


def _by_length(predictions, targets, lengths, end):
    """Strings compared after the first end symbol is cut off."""
    counts = {}
    for p, t, m in zip(predictions, targets, lengths):
        p = list(p)
        if end in p:
            p = p[:p.index(end) + 1]
        ok, n = counts.get(m, (0, 0))
        counts[m] = (ok + (p == list(t) + [end]), n + 1)
    return {m: ok / n for m, (ok, n) in counts.items()}


def _pool_rows(images, size):
    """Block means by explicit loops over the blocks."""
    images = np.asarray(images)
    N, H, W = images.shape
    h, w = H // size, W // size
    out = np.zeros((N, size, size))
    for i in range(size):
        for j in range(size):
            out[:, i, j] = images[:, i * h:(i + 1) * h, j * w:(j + 1) * w].mean(axis=(1, 2))
    return out


def _euler_certificate(net):
    """The same bound from the package's report of the net (rnnlab.theory.combo_net_report),
    and again with SciPy's square root of the metric and 2-norms."""
    from rnnlab.theory import combo_net_report

    report = combo_net_report(net, samples=2)["euler_norm_bound"]
    with torch.no_grad():
        M = np.diag(net.metric_diag().double().numpy())
        W = net.recurrent_weight().double().numpy()
        L = net.feedback(torch.float64).numpy()
    root = scipy.linalg.sqrtm(M).real
    inv = np.linalg.inv(root)
    n = len(M)
    step = np.eye(n) + net.alpha * (-np.eye(n) + root @ L @ inv)
    bound = np.linalg.norm(step, 2) + net.alpha * net.g * np.linalg.norm(root @ W @ inv, 2)
    assert abs(bound - report) < 1e-9 * max(1.0, abs(report))
    return bound


INDEPENDENT = {
    "ex-proj-delayed-sum": _delayed_sum,
    "ex-proj-timescales": _timescales,
    "ex-proj-duplicate": _duplicate,
    "ex-proj-by-length": _by_length,
    "ex-proj-pool-rows": _pool_rows,
    "ex-proj-euler-certificate": _euler_certificate,
}


def _all_cases(ex):
    return list(ex.cases()) + list(ex.hidden(np.random.default_rng(12345)))


@pytest.mark.parametrize("label", LABELS)
def test_the_reference_agrees_with_an_independent_answer(label):
    ex = get(label)
    assert ex.hidden is not None, f"{label} has no hidden cases"
    for i, case in enumerate(_all_cases(ex)):
        got = ex.reference(*case.args, **case.kwargs)
        want = INDEPENDENT[label](*case.args, **case.kwargs)
        assert ex.agree(got, want) is None, f"{label}, case {i + 1} ({case.show}): {ex.agree(got, want)}"


def test_cases_worked_by_hand():
    # x = 1 .. 6 delayed by 2: 0, 0, 1, 2, 3, 4
    assert get("ex-proj-delayed-sum").reference(
        torch.arange(1.0, 7.0).reshape(1, 6, 1), (2,)).flatten().tolist() == [0, 0, 1, 2, 3, 4]
    # lambda = e^-1 i: memory 1 step, a quarter turn a step (period 4)
    memory, period = get("ex-proj-timescales").reference(
        torch.polar(torch.tensor([math.exp(-1)], dtype=torch.float64), torch.tensor([math.pi / 2],
                                                                                    dtype=torch.float64)))
    assert abs(memory.item() - 1) < 1e-12 and abs(period.item() - 4) < 1e-12
    # the 4 x 4 ramp 0 .. 15 pooled to 2 x 2: block means 2.5, 4.5, 10.5, 12.5
    pooled = get("ex-proj-pool-rows").reference(torch.arange(16.0).reshape(1, 4, 4), 2)
    assert pooled.flatten().tolist() == [2.5, 4.5, 10.5, 12.5]
    # two of length 2 (one right), one of length 1 (right)
    assert get("ex-proj-by-length").reference(
        [[1, 2, 9], [1, 3, 9], [4, 9]], [[1, 2], [1, 2], [4]], [2, 2, 1], 9) == {1: 1.0, 2: 0.5}


def test_a_margin_keeps_the_certificate_at_one_minus_the_margin():
    # with euler_margin and a feedback grown past the limit, the bound sits at 1 - margin
    case = get("ex-proj-euler-certificate").cases()[3]
    assert abs(get("ex-proj-euler-certificate").reference(*case.args) - 0.99) < 1e-9


# ------------------------------------------------------------- plausible wrong answers

def test_delayed_sum_that_wraps_around_fails():
    def rolled(x, delays):                  # torch.roll brings the end of the sequence to the front
        return sum(torch.roll(x, int(d), dims=1) for d in delays)
    _fails("ex-proj-delayed-sum", rolled, "case 1 of 5")


def test_delayed_sum_that_ignores_repeated_delays_fails():
    def once(x, delays):
        return _delayed_sum_torch(x, sorted(set(delays)))
    _fails("ex-proj-delayed-sum", once, "case 5 of 5")


def _delayed_sum_torch(x, delays):
    return torch.as_tensor(_delayed_sum(x.numpy(), delays))


def test_delayed_sum_by_loops_passes():
    assert evaluate("ex-proj-delayed-sum", _delayed_sum_torch).status == "passed"


def test_timescales_with_half_lives_fail():
    def half_life(lam):                     # ln 2 / -ln|lambda|: a factor 2, not e
        memory, period = _timescales(lam)
        return memory * math.log(2), period
    _fails("ex-proj-timescales", half_life, "case 1 of 4")


def test_timescales_with_signed_angles_fail():
    def signed(lam):                        # a negative angle gives a negative period
        memory, _ = _timescales(lam)
        theta = np.angle(np.asarray(lam))
        return memory, np.where(theta == 0, math.inf, 2 * math.pi / np.where(theta == 0, 1, theta))
    _fails("ex-proj-timescales", signed, "case 2 of 4")


def test_timescales_with_growing_modes_as_infinite_fail():
    def infinite(lam):                      # |lambda| > 1 reported as a perfect memory
        memory, period = _timescales(lam)
        return np.where(np.abs(np.asarray(lam)) > 1, math.inf, memory), period
    _fails("ex-proj-timescales", infinite, "case 3 of 4")


def test_duplicate_that_repeats_the_whole_source_fails():
    _fails("ex-proj-duplicate", lambda sources: [list(s) + list(s) for s in sources], "case 1 of 4")


def test_by_length_that_keeps_what_follows_the_end_symbol_fails():
    def uncut(predictions, targets, lengths, end):   # symbols after the first end still compared
        counts = {}
        for p, t, m in zip(predictions, targets, lengths):
            counts.setdefault(m, []).append(list(p) == list(t) + [end])
        return {m: float(np.mean(r)) for m, r in counts.items()}
    _fails("ex-proj-by-length", uncut, "case 2 of 4")


def test_by_length_that_ignores_the_end_symbol_fails():
    def prefix(predictions, targets, lengths, end):  # right when the target is a prefix, ended or not
        counts = {}
        for p, t, m in zip(predictions, targets, lengths):
            counts.setdefault(m, []).append(list(p)[:len(t)] == list(t))
        return {m: float(np.mean(r)) for m, r in counts.items()}
    _fails("ex-proj-by-length", prefix, "case 2 of 4")


def test_pool_rows_that_subsamples_fails():
    def subsample(images, size):             # every k-th pixel instead of the block mean
        k = images.shape[1] // size
        return images[:, ::k, ::k]
    _fails("ex-proj-pool-rows", subsample, "case 1 of 5")


def test_euler_certificate_outside_the_metric_fails():
    def plain(net):                          # the norms in the Euclidean metric, not in M
        with torch.no_grad():
            W = net.recurrent_weight().double()
            L = net.feedback(torch.float64)
            eye = torch.eye(len(W), dtype=torch.float64)
            return float(torch.linalg.matrix_norm(eye + net.alpha * (-eye + L), ord=2)
                         + net.alpha * net.g * torch.linalg.matrix_norm(W, ord=2))
    _fails("ex-proj-euler-certificate", plain, "case 1 of 4")
