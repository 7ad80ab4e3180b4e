"""The code exercises of the LDS chapter (rnnlab/checks/lds.py): the package's
reference passes its own cases, the notebook's starter is "not attempted", and
a plausible wrong answer fails with a message that names the failing case."""
import json
import math
import pathlib
import re

import pytest
import torch

from rnnlab.checks import evaluate, exercises, get

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = ["lds/01_modal_form", "lds/02_ldstack", "lds/03_modal_stack", "lds/04_copy_memory",
             "lds/05_speed"]
LABELS = ["ex-lds-scratch", "ex-lds-bprime-2", "ex-lds-delay", "ex-ldstack-miss",
          "ex-ldstack-h0", "ex-ldstack-newton", "ex-ldstack-quasi", "ex-ldstack-by-hand", "ex-ldstack-odd", "ex-copy-partial", "ex-copy-fft",
          "ex-copy-angles", "ex-copy-hand",
          "ex-speed-batch", "ex-scans-chunks", "ex-speed-layer"]


def _cells(notebook):
    nb = json.loads((ROOT / "book" / f"{notebook}.ipynb").read_text())
    return nb["cells"]


def _tagged(notebook, tag):
    return ["".join(c["source"]) for c in _cells(notebook)
            if c["cell_type"] == "code" and tag in c.get("metadata", {}).get("tags", [])]


def test_every_lds_exercise_is_declared_for_its_notebook():
    declared = [ex.label for nb in NOTEBOOKS for ex in exercises(nb)]
    assert declared == LABELS
    for nb in NOTEBOOKS:
        checked = [re.search(r'check\("([\w-]+)", (\w+)\)', src).groups()
                   for src in _tagged(nb, "exercise-check")]
        assert checked == [(ex.label, ex.name) for ex in exercises(nb)], nb


@pytest.mark.parametrize("label", LABELS)
def test_reference_passes_its_own_cases(label):
    ex = get(label)
    result = evaluate(label, ex.reference)
    assert result.status == "passed", result.message
    assert 3 <= result.total <= 6


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_notebook_starters_are_not_attempted(notebook):
    starters = _tagged(notebook, "exercise-starter")
    assert len(starters) == len(exercises(notebook))
    for ex, source in zip(exercises(notebook), starters):
        assert source.lstrip().startswith(f"def {ex.signature}:"), source
        namespace = {}
        exec(source, namespace)                      # defining it raises nothing
        result = evaluate(ex.label, namespace[ex.name])
        assert result.status == "not attempted", result.message
        assert "not attempted yet" in result.message


def _two_modes_wrong_sign(lam):
    return lam / (lam[0] - lam[1])                   # B'_2 with the wrong sign


def _miss_without_correction(A, B, x, k):
    from rnnlab.models.ldstack import rnn_reference

    pre = rnn_reference(x, A, B, "tanh")[:, k - 1] @ A.T      # forgets the handed correction
    return (1 - torch.tanh(pre) / pre) * pre


def _h0_forgotten(stack, x, h0):
    from rnnlab.models.ldstack import rnn_reference

    with torch.no_grad():                            # both started from 0, not from h0
        rnn = rnn_reference(x, stack.A, stack.B, stack.nonlinearity)
        layers = stack.layer_states(x)
    return [int(torch.cumprod((s - rnn).abs().amax(dim=(0, 2)) < 1e-12, 0).sum())
            for s in layers]


def _first_layer_only(lam, drive):
    from rnnlab import linear_scan

    return linear_scan(lam, drive)


def _causal_conv_wrapped(u, K):
    L = u.shape[-1]                   # padded to L only: the tail wraps onto the start
    return torch.fft.irfft(torch.fft.rfft(u, n=L) * torch.fft.rfft(K, n=L), n=L)


def _peak_without_expectation(tau, sigma):
    return math.cos(tau * sigma)      # the phase error of one draw of size sigma, not the mean


def _modal_lds_no_real_part(theta, C, x):
    from rnnlab import linear_scan

    lam = torch.polar(torch.ones_like(theta), theta)
    drive = x.to(torch.complex128).expand(-1, -1, theta.numel())
    s = linear_scan(lam, drive)
    return (s @ C).abs()                              # |C's'| instead of Re(C's')


def _delay_by_k_modes(k):
    n = k                                             # k roots of unity: period k, not k + 1
    j = torch.arange(n, dtype=torch.float64)
    lam = torch.polar(torch.ones(n, dtype=torch.float64), 2 * torch.pi * j / n)
    return lam, lam ** (-k) / n


def _partial_loss_over_T(T, known):
    return (10 - known) * math.log(8) / T              # divided by T, not by the T + 20 steps


def _copier_one_late(delay):
    j = torch.arange(5, dtype=torch.float64)
    lam = torch.polar(torch.ones(5, dtype=torch.float64), torch.pi * (2 * j + 1) / 10)
    return lam, lam ** (-(delay + 1)) / 5               # out at delay + 1: one step late


def _step_time_all_modes(model, B, H, peak, bandwidth):
    if model == "lstm":
        flops, bytes_ = 8 * B * H * H, 16 * H * H + 20 * B * H
    else:                                            # all H modes, not one of each conjugate pair
        flops, bytes_ = 8 * B * H, 16 * B * H + 8 * H
    return max(flops / peak, bytes_ / bandwidth)


def _chunked_depth_text_formula(n, chunks):
    return 2 * -(-n // chunks) + (chunks - 1).bit_length() - 1   # 2L + ceil(log2 p) - 1: p > 1 only


def _matching_depth_operations_only(B, H, peak, bandwidth):
    lstm = 8 * B * H * H / peak                      # the LSTM's operations only, not its bytes
    k = 1
    while max((4 * B * H + 17 * (k - 1) * B * H // 2) / peak,
              (4 * B * H * (1 + k) + (6 if k > 1 else 4) * H) / bandwidth) < lstm:
        k += 1
    return k


def _newton_with_the_chord(A, B, x, guess, rho):
    f = getattr(torch, rho)                          # the chord rho(a)/a: LDStack's line, not Newton's
    before = torch.cat([torch.zeros_like(guess[:, :1]), guess[:, :-1]], 1)
    a = before @ A.T
    slope = torch.where(a == 0, torch.ones_like(a), f(a) / torch.where(a == 0, 1.0, a))
    s, out = torch.zeros_like(guess[:, 0]), []
    for t in range(x.shape[1]):
        s = slope[:, t] * (s @ A.T) + x[:, t] @ B.T
        out.append(s)
    return torch.stack(out, 1)


def _quasi_without_the_guess(A, B, x, guess):
    before = torch.cat([torch.zeros_like(guess[:, :1]), guess[:, :-1]], 1)
    a = before @ A.T
    D = (1 - torch.tanh(a) ** 2) * torch.diagonal(A)
    s, out = torch.zeros_like(guess[:, 0]), []
    for t in range(x.shape[1]):                      # D (s - g) written as D s: right from 0 only
        s = torch.tanh(a[:, t]) + D[:, t] * s + x[:, t] @ B.T
        out.append(s)
    return torch.stack(out, 1)


def _sign_xor_bits_not_signs(n, seed, T=20):
    b = torch.randint(0, 2, (n, T, 1), generator=torch.Generator().manual_seed(seed))
    return b.float(), (b[:, 2:-1, 0] != b[:, :-3, 0]).long()     # inputs left in {0, 1}


WRONG = {
    "ex-lds-bprime-2": (_two_modes_wrong_sign, 1, "first at index (1,)"),
    "ex-ldstack-miss": (_miss_without_correction, 1, "entries differ"),
    "ex-ldstack-h0": (_h0_forgotten, 1, "expected [0, 1, 2, 3, 4], got [1, 2, 3, 4, 5]"),
    "ex-ldstack-by-hand": (_first_layer_only, 1, "entries differ"),
    "ex-ldstack-newton": (_newton_with_the_chord, 2, "entries differ"),
    "ex-ldstack-quasi": (_quasi_without_the_guess, 2, "entries differ"),
    "ex-ldstack-odd": (_sign_xor_bits_not_signs, 1, "entries differ"),
    "ex-copy-fft": (_causal_conv_wrapped, 1, "entries differ"),
    "ex-copy-angles": (_peak_without_expectation, 1, "values differ"),
    "ex-copy-partial": (_partial_loss_over_T, 1, "values differ"),
    "ex-copy-hand": (_copier_one_late, 1, "comes out 10 steps later"),
    "ex-lds-scratch": (_modal_lds_no_real_part, 1, "entries differ"),
    "ex-lds-delay": (_delay_by_k_modes, 1, "at lag 0"),
    "ex-speed-batch": (_step_time_all_modes, 1, "values differ"),
    "ex-scans-chunks": (_chunked_depth_text_formula, 2, "values differ"),
    "ex-speed-layer": (_matching_depth_operations_only, 1, "values differ"),
}


@pytest.mark.parametrize("label", LABELS)
def test_wrong_answer_fails_naming_the_case(label):
    wrong, case, why = WRONG[label]
    ex = get(label)
    result = evaluate(label, wrong)
    assert result.status == "failed", result.message
    total = len(ex.cases())
    shown = ex.cases()[case - 1].show
    assert result.message.startswith(f"{label}: case {case} of {total} failed: for {shown},")
    assert why in result.message
    assert case - 1 <= result.passed < total   # every case runs; the first failure is shown
    assert "hint:" in result.message
