"""The teaching scans of rnnlab.kernels.scan_algorithms: results, work and depth.

The book's first chapter states these counts; every formula it prints is
checked here for many sizes.
"""
import math
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from rnnlab import linear_scan_ref
from rnnlab.kernels import scan_algorithms as sa

ALL = sorted(sa.ALGORITHMS)
pairs = st.tuples(st.integers(-50, 50), st.integers(-50, 50))


@given(pairs, pairs, pairs)
def test_combine_is_associative_exactly(x, y, z):
    assert sa.combine(sa.combine(x, y), z) == sa.combine(x, sa.combine(y, z))


@given(pairs)
def test_identity_on_both_sides(x):
    assert sa.combine(sa.IDENTITY, x) == x
    assert sa.combine(x, sa.IDENTITY) == x


def test_combine_is_composition_of_affine_maps():
    x, y = (Fraction(2, 3), Fraction(-1, 5)), (Fraction(7, 2), Fraction(3))
    h = Fraction(5, 7)
    a, b = sa.combine(x, y)
    assert a * h + b == y[0] * (x[0] * h + x[1]) + y[1]


def test_combine_is_not_commutative():
    assert sa.combine((2, 1), (3, 5)) != sa.combine((3, 5), (2, 1))


def _reference(a, b, h0=None):
    ta = torch.as_tensor(a).reshape(1, len(a), -1)
    tb = torch.as_tensor(b).reshape(1, len(b), -1)
    th0 = None if h0 is None else torch.as_tensor(h0).reshape(1, -1)
    return linear_scan_ref(ta, tb, th0)[0].reshape(np.shape(b)).numpy()


def _inputs(n, channels, complex_, seed):
    rng = np.random.default_rng(seed)
    shape = (n,) if channels == 0 else (n, channels)
    a = rng.uniform(-1.2, 1.2, shape)
    b = rng.normal(size=shape)
    if complex_:
        a = a * np.exp(1j * rng.uniform(0, 2 * np.pi, shape))
        b = b + 1j * rng.normal(size=shape)
    return a, b


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 70), channels=st.integers(0, 3), complex_=st.booleans(),
       algorithm=st.sampled_from(ALL), seed=st.integers(0, 2**31))
def test_every_scan_computes_the_recurrence(n, channels, complex_, algorithm, seed):
    a, b = _inputs(n, channels, complex_, seed)
    result = sa.scan(a, b, algorithm)
    np.testing.assert_allclose(result.b, _reference(a, b), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(result.a, np.cumprod(a, axis=0), rtol=1e-10, atol=1e-12)
    assert result.a.shape == a.shape


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 70), chunks=st.integers(1, 70), carry=st.sampled_from(["sequential", "hillis_steele"]),
       seed=st.integers(0, 2**31))
def test_chunked_scan_computes_the_recurrence(n, chunks, carry, seed):
    chunks = min(chunks, n)
    a, b = _inputs(n, 2, True, seed)
    result = sa.chunked_scan(a, b, chunks, carry=carry)
    np.testing.assert_allclose(result.b, _reference(a, b), rtol=1e-10, atol=1e-12)


def test_initial_state_enters_through_the_prefix_products():
    a, b = _inputs(11, 3, False, 1)
    h0 = np.array([0.5, -2.0, 1.5])
    result = sa.blelloch_scan(a, b)
    np.testing.assert_allclose(sa.recurrence_states(result, h0), _reference(a, b, h0), rtol=1e-12)


def test_integer_inputs_are_scanned_exactly():
    a = np.array([2, -1, 3, 1, 0, 2, -2, 1])
    b = np.array([1, 4, -2, 0, 5, 1, 3, -1])
    expected = sa.sequential_scan(a, b)
    for name in ALL:
        result = sa.scan(a, b, name)
        assert result.a.dtype.kind == "i"
        assert np.array_equal(result.b, expected.b) and np.array_equal(result.a, expected.a)


@pytest.mark.parametrize("k", range(0, 11))
def test_work_and_depth_for_powers_of_two(k):
    n = 2 ** k
    a, b = np.ones(n), np.zeros(n)
    seq = sa.sequential_scan(a, b)
    hs = sa.hillis_steele_scan(a, b)
    bl = sa.blelloch_scan(a, b)
    assert (seq.work, seq.depth) == (n - 1, n - 1)
    assert (hs.work, hs.depth) == (n * k - n + 1, k)
    assert (bl.work, bl.depth) == (2 * (n - 1), 2 * k)


@pytest.mark.parametrize("n", [1, 3, 5, 6, 7, 9, 12, 17, 31, 33, 100, 1000])
def test_work_and_depth_for_other_sizes(n):
    a, b = np.ones(n), np.zeros(n)
    depth = math.ceil(math.log2(n)) if n > 1 else 0
    hs = sa.hillis_steele_scan(a, b)
    assert hs.depth == depth
    assert hs.work == sum(n - 2 ** d for d in range(depth))
    padded = 2 ** depth
    bl = sa.blelloch_scan(a, b)
    assert (bl.work, bl.depth) == (2 * (padded - 1), 2 * depth)


@pytest.mark.parametrize("n,chunks", [(16, 4), (64, 8), (1024, 32), (1000, 10), (12, 3)])
def test_chunked_work_and_depth(n, chunks):
    length = n // chunks
    a, b = np.ones(n), np.zeros(n)
    seq = sa.chunked_scan(a, b, chunks, carry="sequential")
    assert seq.work == 2 * (n - 1)
    assert seq.depth == 2 * length + chunks - 2
    hs = sa.chunked_scan(a, b, chunks, carry="hillis_steele")
    logp = math.ceil(math.log2(chunks))
    assert hs.depth == 2 * length + logp - 1
    assert hs.work == 2 * (n - chunks) + chunks - 1 + sum(chunks - 2 ** d for d in range(logp))


@pytest.mark.parametrize("algorithm", ALL)
@pytest.mark.parametrize("n", [1, 2, 8, 11, 16])
def test_recorded_steps_end_in_the_inclusive_prefixes(algorithm, n):
    a, b = _inputs(n, 0, False, 0)
    result = sa.scan(a, b, algorithm, record=True)
    assert result.steps[0].phase == "inputs"
    assert result.steps[-1].segments[:n] == [(0, i) for i in range(n)]
    assert sum(s.work for s in result.steps) == result.work
    assert sum(1 for s in result.steps if s.work) == result.depth
    # no step writes a slot twice: the steps really are parallel
    for s in result.steps:
        dests = [d for _, _, d in s.combines] + [d for _, d in s.copies]
        assert len(dests) == len(set(dests))


def test_chunked_recorded_steps():
    a, b = _inputs(16, 0, False, 0)
    result = sa.chunked_scan(a, b, 4, record=True)
    assert result.steps[-1].segments[:16] == [(0, i) for i in range(16)]
    assert len(result.steps[0].segments) == 16 + 4


def test_non_adjacent_segments_are_caught():
    with pytest.raises(AssertionError, match="non-adjacent"):
        sa._join((0, 1), (3, 4))


def test_bad_arguments():
    with pytest.raises(ValueError, match="same shape"):
        sa.sequential_scan(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="algorithm must be one of"):
        sa.scan(np.ones(3), np.ones(3), "brent_kung")
    with pytest.raises(ValueError, match="chunks must be in 1..n=3"):
        sa.chunked_scan(np.ones(3), np.ones(3), 4)
    with pytest.raises(ValueError, match="carry must be"):
        sa.chunked_scan(np.ones(3), np.ones(3), 2, carry="blelloch")


def test_inputs_are_not_modified():
    a, b = _inputs(8, 0, False, 0)
    a0, b0 = a.copy(), b.copy()
    for name in ALL:
        sa.scan(a, b, name)
    sa.chunked_scan(a, b, 2)
    assert np.array_equal(a, a0) and np.array_equal(b, b0)
