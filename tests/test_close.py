"""``rnnlab.checks.close``, the default comparison of every exercise check, on its own.

Each rule of its docstring, one test or more: lengths of tuples and lists, the keys
of dicts, bools (never numbers), NaN and infinities, a 0-d expected value against a
size-1 answer, and values just inside and just outside the tolerances. The last test
goes over every registered exercise whose reference returns a tuple or a list: its
answer cut short (or one item longer, or an inner list cut short) must fail the check.
"""
import math

import numpy as np
import pytest
import torch

from rnnlab import checks
from rnnlab.checks.core import close

RTOL, ATOL = 1e-6, 1e-9          # close()'s defaults


# ----------------------------------------------------------------- tuples, lists, dicts

@pytest.mark.parametrize("got", [(3,), (3, 2, 1), (), [3], (3, 2, 2)])
def test_a_tuple_of_another_length_or_value_fails(got):
    assert close(got, (3, 2)) is not None


def test_lengths_are_named():
    assert close((3,), (3, 2)) == "expected 2 items, got 1"
    assert close([1, 2, 3], [1, 2]) == "expected 2 items, got 3"


def test_tuples_and_lists_match_elementwise_and_nested():
    assert close((3, 2), (3, 2)) is None
    assert close([3, 2], (3, 2)) is None                    # a list for a tuple is the same answer
    assert close(([1.0, 2.0], 3), ([1.0, 2.0], 3)) is None
    assert close(([1.0], 3), ([1.0, 2.0], 3)) == "item 0: expected 2 items, got 1"
    assert close(([1.0, 2.5], 3), ([1.0, 2.0], 3)).startswith("item 0: item 1: values differ")


def test_an_array_is_not_a_tuple_of_items():
    assert close(np.array([3, 2]), (3, 2)) is not None
    assert close(torch.tensor([3, 2]), [3, 2]) is not None
    assert close(5, (5,)) is not None and close("ab", ("a", "b")) is not None


def test_dicts_need_the_same_keys_and_close_values():
    assert close({"a": 1.0, "b": 2}, {"b": 2, "a": 1.0}) is None
    assert close({"a": 1.0}, {"a": 1.0, "b": 2}) is not None          # a key missing
    assert close({"a": 1.0, "b": 2, "c": 3}, {"a": 1.0, "b": 2}) is not None   # a key too many
    assert close({"a": 1.0, "c": 2}, {"a": 1.0, "b": 2}) is not None  # another key
    assert close({"a": 1.5, "b": 2}, {"a": 1.0, "b": 2}).startswith("['a']: values differ")
    assert close([("a", 1.0)], {"a": 1.0}) is not None


# ----------------------------------------------------------------- bools

@pytest.mark.parametrize("got", [True, np.True_, np.array(True), torch.tensor(True), [True]])
def test_a_true_bool_in_any_form_matches_true(got):
    assert close(got, True) is None
    assert close(got, np.True_) is None


@pytest.mark.parametrize("got", [False, np.False_, 1, 1.0, np.float64(1.0), "True", None])
def test_only_a_true_bool_matches_true(got):
    assert close(got, True) is not None
    assert close(got, np.True_) is not None


def test_a_bool_is_not_a_number():
    for got in (True, np.True_, torch.tensor(True)):
        assert close(got, 1) is not None and close(got, 1.0) is not None
    assert close(np.array([True, False]), np.array([1, 0])) is not None
    assert close(np.array([1, 0]), np.array([True, False])) is not None
    assert close(np.array([True, False]), np.array([True, False])) is None
    assert close(np.array([True, True]), np.array([True, False])) == "values differ"
    assert close([True, False], np.array([True, False])) is None


# ----------------------------------------------------------------- NaN, infinities, shapes

def test_nan_matches_only_nan():
    nan = float("nan")
    assert close(nan, nan) is None and close(np.float32("nan"), nan) is None
    assert close(np.array([nan, 1.0]), np.array([nan, 1.0])) is None
    assert close(1.0, nan) is not None and close(nan, 1.0) == "values differ (not a number)"
    assert close(np.array([nan, 1.0]), np.array([0.0, 1.0])) is not None
    assert close(complex(nan, 0), 1.0) is not None


def test_infinities_match_only_the_same_infinity():
    inf = math.inf
    assert close(inf, inf) is None and close(-inf, -inf) is None
    assert close(np.array([inf, 1.0]), np.array([inf, 1.0])) is None
    assert close(-inf, inf) is not None and close(inf, -inf) is not None
    assert close(1e308, inf) is not None and close(inf, 1e308) == "values differ (too large)"
    assert close(np.finfo(np.float64).max, inf) is not None


def test_a_number_takes_a_size_one_answer_but_not_the_reverse():
    for got in (2.0, [2.0], np.array([2.0]), np.array([[2.0]]), torch.tensor([2.0]), np.float32(2.0)):
        assert close(got, 2.0) is None, got
        assert close(got, np.array(2.0)) is None, got
    assert close([2.0, 2.0], 2.0) == "expected shape (), got shape (2,)"
    assert close([], 2.0) is not None
    assert close(2.0, np.array([2.0])) == "expected shape (1,), got shape ()"
    assert close(np.zeros((2, 3)), np.zeros((3, 2))) is not None
    assert close(np.zeros(6), np.zeros((2, 3))) is not None


def test_tensors_arrays_and_lists_of_numbers_are_the_same_answer():
    e = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64)
    for got in (e.numpy().copy(), [[1.0, 2.0], [3.0, 4.0]], e.float(), e.clone().requires_grad_()):
        assert close(got, e) is None
    assert close(torch.tensor([1 + 1j]), np.array([1 + 1j])) is None
    assert close(torch.tensor([1 + 1j]).conj(), np.array([1 - 1j])) is None
    assert close(np.array([1 + 1j]), np.array([1 - 1j])) is not None
    assert close(["1.0", "2.0"], np.array([1.0, 2.0])) is not None
    assert close([object()], np.array([1.0])) is not None
    assert close("1.0", 1.0) is not None and close(None, 1.0) is not None


def test_the_first_difference_is_named():
    assert close(np.array([1.0, 2.0, 5.0, 9.0]), np.array([1.0, 2.0, 3.0, 4.0])) == (
        "2 of 4 entries differ, first at index (2,) (too large)")
    assert close(0.5, 1.0) == "values differ (too small)"


# ----------------------------------------------------------------- tolerances

@pytest.mark.parametrize("scale", [1.0, 1e6, -3.0, 1e-3])
def test_values_just_inside_the_tolerance_pass_and_just_outside_fail(scale):
    allowed = ATOL + RTOL * abs(scale)             # |got - expected| <= atol + rtol |expected|
    assert close(scale + 0.9 * allowed, scale) is None
    assert close(scale - 0.9 * allowed, scale) is None
    assert close(scale + 1.1 * allowed, scale) is not None
    assert close(scale - 1.1 * allowed, scale) is not None
    assert close(np.array([scale, scale + 1.1 * allowed]), np.array([scale, scale])) is not None


def test_at_zero_only_the_absolute_tolerance_counts():
    assert close(0.9 * ATOL, 0.0) is None and close(-0.9 * ATOL, 0.0) is None
    assert close(1.1 * ATOL, 0.0) is not None and close(-1.1 * ATOL, 0.0) is not None


def test_the_relative_tolerance_is_of_the_expected_value():
    # |1.5 - 1| = 0.5 is within 0.4 * 1.5 but not within 0.4 * 1
    assert close(1.5, 1.0, rtol=0.4, atol=0) is not None
    assert close(1.0, 1.5, rtol=0.4, atol=0) is None


def test_given_tolerances_are_used_and_pass_down():
    assert close(1.01, 1.0, rtol=0.02) is None and close(1.03, 1.0, rtol=0.02) is not None
    assert close(0.5, 0.0, atol=1.0) is None and close(1.5, 0.0, atol=1.0) is not None
    assert close((1.01, {"k": [1.01]}), (1.0, {"k": [1.0]}), rtol=0.02) is None
    assert close((1.01, {"k": [1.03]}), (1.0, {"k": [1.0]}), rtol=0.02) is not None


def test_anything_else_by_equality():
    assert close("abc", "abc") is None and close("abd", "abc") == "values differ"
    assert close(None, None) is None and close(0, None) is not None

    class Bad:
        def __eq__(self, other):
            raise RuntimeError("no")

    assert close(Bad(), "x") == "values differ"


# ----------------------------------------------------------------- every exercise with a tuple or a list

def _cut(value):
    """Wrong answers made from a right tuple or list: one item short, one item too many,
    and each inner tuple or list one item short."""
    yield "one item short", value[:-1]
    yield "one item too many", [*value, value[-1]] if isinstance(value, list) else (*value, value[-1])
    for i, item in enumerate(value):
        if isinstance(item, (tuple, list)) and item:
            inner = list(value)
            inner[i] = item[:-1]
            yield f"item {i} one short", type(value)(inner)


def _with_sequences():
    labels = []
    for ex in checks.exercises():
        case = ex.cases()[0]
        if isinstance(ex.reference(*case.args, **case.kwargs), (tuple, list)):
            labels.append(ex.label)
    return labels


SEQUENCES = _with_sequences()


def test_some_exercises_answer_with_a_tuple_or_a_list():
    assert "ex-scans-counts" in SEQUENCES and len(SEQUENCES) >= 5, SEQUENCES


@pytest.mark.parametrize("label", SEQUENCES)
def test_a_cut_or_padded_answer_fails(label):
    ex = checks.get(label)
    cases = ex.cases()
    first = ex.reference(*cases[0].args, **cases[0].kwargs)
    assert isinstance(first, (tuple, list)) and len(first), label
    for what in [w for w, _ in _cut(first)]:
        def wrong(*args, **kwargs):     # the right answer where it is no tuple or list (a None case)
            right = ex.reference(*args, **kwargs)
            return dict(_cut(right))[what] if isinstance(right, (tuple, list)) and right else right
        result = checks.evaluate(label, wrong)
        assert result.status == "failed" and "case 1 of" in result.message, (what, result.message)
        assert ex.agree(dict(_cut(first))[what], first) is not None, what
