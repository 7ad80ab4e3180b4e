"""The auto-checks of the scans chapter's code exercises (rnnlab/checks/scans.py).

For every exercise: the package's reference passes its own cases, the
notebook's starter (and any function raising NotImplementedError) is "not
attempted", and a plausible wrong answer fails, naming the case that failed.
"""

import numpy as np
import pytest
import torch

from rnnlab import linear_scan
from rnnlab.checks import evaluate, exercises, get
from rnnlab.kernels import scan_algorithms as sa

LABELS = ["ex-scans-counts", "ex-scans-segmented", "ex-scans-backward", "ex-scans-flip",
          "ex-scans-shared", "ex-scans-matrix-backward",
          "ex-scans-chunked-torch", "ex-scans-layer", "ex-scans-swap"]
# ex-scans-chunks moved with the CUDA kernels to book/lds/05_speed (rnnlab/checks/lds.py); its wrong
# answers are still tested below.


def test_the_chapter_declares_exactly_its_exercises():
    # scans/00_dynamical_systems declares its own (rnnlab/checks/foundations.py)
    declared = [ex.label for ex in exercises()
                if ex.notebook in ("scans/01_associative_scan", "scans/02_gradients_and_kernels")]
    assert sorted(declared) == sorted(LABELS)


def _fails_at(label, candidate, case, total, *words):
    result = evaluate(label, candidate)
    assert result.status == "failed", result.message
    assert f"case {case} of {total} failed: for " in result.message, result.message
    for word in words:
        assert word in result.message, result.message
    assert "hint:" in result.message
    return result


# ------------------------------------------------------------ plausible wrong answers

def _ceil_log2(n):
    return (n - 1).bit_length()


def _hillis_steele(n):
    k = _ceil_log2(n)
    return n * k - 2**k + 1, k


def _blelloch(n):
    k = _ceil_log2(n)
    return 2 * (2**k - 1), 2 * k


def test_counts_from_the_formulas_pass():
    def right(algorithm, n):
        return (_hillis_steele if algorithm == "hillis_steele" else _blelloch)(n)

    assert evaluate("ex-scans-counts", right).status == "passed"


def test_hillis_steele_power_of_two_formula_fails_for_other_lengths():
    def power_of_two_formula(algorithm, n):
        if algorithm == "blelloch":
            return _blelloch(n)
        k = _ceil_log2(n)
        return n * k - n + 1, k

    _fails_at("ex-scans-counts", power_of_two_formula, 2, 8,
              'algorithm = "hillis_steele", n = 3', "your value is wrong: item 0: values differ (too large)")


def test_blelloch_without_padding_fails_at_a_length_that_is_not_a_power_of_two():
    def no_padding(algorithm, n):
        if algorithm == "hillis_steele":
            return _hillis_steele(n)
        return 2 * (n - 1), 2 * _ceil_log2(n)

    _fails_at("ex-scans-counts", no_padding, 7, 8, 'algorithm = "blelloch", n = 5',
              "your value is wrong: item 0: values differ (too small)")


def test_blelloch_depth_off_by_one_fails_at_its_first_case():
    def off_by_one(algorithm, n):
        if algorithm == "hillis_steele":
            return _hillis_steele(n)
        work, depth = _blelloch(n)
        return work, depth + 1

    _fails_at("ex-scans-counts", off_by_one, 5, 8, 'algorithm = "blelloch", n = 1')


def test_work_alone_for_hillis_steele_fails_on_the_type_of_the_answer():
    def work_only(algorithm, n):
        return _hillis_steele(n)[0] if algorithm == "hillis_steele" else _blelloch(n)

    _fails_at("ex-scans-counts", work_only, 1, 8, 'algorithm = "hillis_steele", n = 1')


def test_segmented_sums_with_swapped_gates_fail():
    def swapped(x, starts):
        gates = np.zeros_like(x)
        gates[starts] = 1
        return sa.blelloch_scan(gates, x).b

    _fails_at("ex-scans-segmented", swapped, 1, 6, "starts = [0, 4, 5, 9]")


def test_segmented_sums_reset_one_step_late_fail():
    def late(x, starts):
        gates = np.ones_like(x)
        gates[[s + 1 for s in starts if s + 1 < len(x)]] = 0
        return sa.blelloch_scan(gates, x).b

    _fails_at("ex-scans-segmented", late, 1, 6, "x = np.arange(1, 13)")


def _scan_backward(a, h, h0, g, conj=True, shift=True):
    h_prev = torch.cat([h0[:, None], h[:, :-1]], dim=1)
    G, carry = torch.empty_like(g), torch.zeros_like(g[:, 0])
    for t in reversed(range(a.shape[1])):
        G[:, t] = g[:, t] + carry
        step = t if shift else min(t + 1, a.shape[1] - 1)
        carry = (a[:, step].conj() if conj else a[:, step]) * G[:, t]
    return G * (h_prev.conj() if conj else h_prev), G, carry


def test_scan_backward_passes():
    assert evaluate("ex-scans-backward", _scan_backward).status == "passed"


def test_scan_backward_without_the_conjugates_fails_on_complex_numbers():
    result = _fails_at("ex-scans-backward", lambda *args: _scan_backward(*args, conj=False),
                       2, 5, "complex128")
    assert 1 <= result.passed < result.total


def test_scan_backward_with_a_t_in_place_of_a_t_plus_1_fails():
    _fails_at("ex-scans-backward", lambda *args: _scan_backward(*args, shift=False), 1, 5,
              "float64")


def test_reverse_by_flipping_without_flipping_back_fails():
    def not_flipped_back(a, b, h0=None):
        return linear_scan(a.flip(1), b.flip(1), h0)

    _fails_at("ex-scans-flip", not_flipped_back, 1, 5, "float64, B, T, C = 2, 5, 3")


def test_reverse_by_flipping_the_channels_fails():
    def wrong_dimension(a, b, h0=None):
        return linear_scan(a.flip(2), b.flip(2), h0).flip(2)

    _fails_at("ex-scans-flip", wrong_dimension, 1, 5)


def _shared_grad(a, b, h0, g, conj=True, shift=True):
    h = linear_scan(a, b, h0)
    G = linear_scan(a.conj(), g, reverse=True)
    h_prev = torch.cat([h0[:, None], h[:, :-1]], dim=1) if shift else h
    return (G * (h_prev.conj() if conj else h_prev)).sum(dim=(0, 1))


def test_shared_transition_grad_without_the_conjugate_fails_on_complex_numbers():
    result = _fails_at("ex-scans-shared", lambda *args: _shared_grad(*args, conj=False),
                       2, 5, "complex128")
    assert 1 <= result.passed < result.total   # the real cases pass: only the conjugate is missing


def test_shared_transition_grad_with_the_current_state_fails():
    _fails_at("ex-scans-shared", lambda *args: _shared_grad(*args, shift=False), 1, 5, "float64")


def test_shared_transition_grad_summed_over_time_only_fails_on_shape():
    def per_sequence(a, b, h0, g):
        h = linear_scan(a, b, h0)
        G = linear_scan(a.conj(), g, reverse=True)
        h_prev = torch.cat([h0[:, None], h[:, :-1]], dim=1)
        return (G * h_prev.conj()).sum(dim=1)

    _fails_at("ex-scans-shared", per_sequence, 1, 5, "expected shape (3,), got shape (2, 3)")


def test_chunked_depth_of_the_text_formula_fails_for_one_chunk():
    def text_formula(n, chunks):
        return 2 * -(-n // chunks) + _ceil_log2(chunks) - 1

    _fails_at("ex-scans-chunks", text_formula, 2, 6, "n = 4096, chunks = 1",
              "your value is wrong: values differ (too large)")


def test_chunked_depth_ignoring_empty_chunks_fails():
    def all_chunks(n, chunks):
        length = -(-n // chunks)
        return 2 * (length - 1) + _ceil_log2(chunks) + (1 if chunks > 1 else 0)

    _fails_at("ex-scans-chunks", all_chunks, 4, 6, "n = 12, chunks = 9")


def _matrix_grads(A, b, h0, g, conj=True):
    h = [h0]
    for t in range(A.shape[1]):
        h.append((A[:, t] @ h[-1][..., None])[..., 0] + b[:, t])
    h_prev = torch.stack(h[:-1], dim=1)
    G, carry = torch.empty_like(g), torch.zeros_like(h0)
    for t in reversed(range(A.shape[1])):
        G[:, t] = g[:, t] + carry
        At = A[:, t].mH if conj else A[:, t].mT
        carry = (At @ G[:, t, :, None])[..., 0]
    return G[..., :, None] * h_prev.conj()[..., None, :], G, carry


def test_matrix_grads_pass():
    assert evaluate("ex-scans-matrix-backward", _matrix_grads).status == "passed"


def test_matrix_grads_with_the_plain_transpose_fail_on_complex_numbers():
    _fails_at("ex-scans-matrix-backward", lambda *args: _matrix_grads(*args, conj=False), 2, 5,
              "complex128")


def test_matrix_grads_with_the_outer_product_reversed_fail():
    def reversed_outer(A, b, h0, g):
        grad_A, G, grad_h0 = _matrix_grads(A, b, h0, g)
        return grad_A.mT, G, grad_h0

    _fails_at("ex-scans-matrix-backward", reversed_outer, 1, 5, "float64")


# ------------------------------------------------------------ ex-scans-chunked-torch

def _chunked_torch(a, b, p, shift=True):
    B, T, C = a.shape
    a, b = a.reshape(B, p, T // p, C), b.reshape(B, p, T // p, C)
    tot_a, tot_b = a[:, :, 0], b[:, :, 0]
    for j in range(1, T // p):
        tot_a, tot_b = tot_a * a[:, :, j], a[:, :, j] * tot_b + b[:, :, j]
    inc_a, inc_b = torch.cumprod(tot_a, dim=1), linear_scan(tot_a, tot_b)
    if shift:
        car_a = torch.cat([torch.ones_like(inc_a[:, :1]), inc_a[:, :-1]], dim=1)
        car_b = torch.cat([torch.zeros_like(inc_b[:, :1]), inc_b[:, :-1]], dim=1)
    else:                                  # wrong: the inclusive scan as the carry
        car_a, car_b = inc_a, inc_b
    out_a, out_b = torch.empty_like(a), torch.empty_like(b)
    for j in range(T // p):
        car_a, car_b = car_a * a[:, :, j], a[:, :, j] * car_b + b[:, :, j]
        out_a[:, :, j], out_b[:, :, j] = car_a, car_b
    return out_a.reshape(B, T, C), out_b.reshape(B, T, C)


def test_chunked_scan_torch_passes():
    assert evaluate("ex-scans-chunked-torch", _chunked_torch).status == "passed"


def test_chunked_scan_torch_with_the_inclusive_carry_fails():
    _fails_at("ex-scans-chunked-torch", lambda a, b, p: _chunked_torch(a, b, p, shift=False),
              1, 5, "p = 4")
