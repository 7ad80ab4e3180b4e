"""Parallel prefix scans of a linear recurrence, written to be read and counted.

The recurrence ``h_t = a_t h_{t-1} + b_t`` applies one affine map per step,
``f_t(h) = a_t h + b_t``. Running step ``s`` and then step ``t`` is again an
affine map, ``f_t(f_s(h)) = (a_s a_t) h + (a_t b_s + b_t)``, so the pairs
``(a, b)`` compose with the operator::

    (a1, b1) ∘ (a2, b2) = (a1 a2, a2 b1 + b2)          "first (a1, b1), then (a2, b2)"

which is associative, with identity ``(1, 0)``. The inclusive prefixes
``(A_t, B_t) = x_1 ∘ x_2 ∘ ... ∘ x_t`` give every state at once:
``h_t = A_t h_0 + B_t``. Any scan algorithm for an associative operator
therefore computes the recurrence.

This module holds readable NumPy versions of the classic scan algorithms,
instrumented to count

- **work**: the number of applications of ``∘`` (:func:`combine`);
- **depth**: the number of parallel steps, where one step applies ``∘`` to
  any number of independent pairs at the same time.

Each algorithm is a sequence of such steps; a step writes all its results
at once (NumPy reads every operand before it writes), exactly as a parallel
machine would. These are teaching references: the fast kernels are in
:mod:`rnnlab.kernels.scan_cpu` and :mod:`rnnlab.kernels.scan_cuda`, and the
oracle for all of them is :func:`rnnlab.kernels.scan_torch.linear_scan_ref`.

Arrays are time first: ``a`` and ``b`` have shape ``(n,)`` or ``(n, ...)``
(extra dimensions are independent channels, combined elementwise).
"""
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "IDENTITY", "combine", "Step", "ScanResult", "sequential_scan", "hillis_steele_scan",
    "blelloch_scan", "chunked_scan", "ALGORITHMS", "scan", "recurrence_states",
]

IDENTITY = (1, 0)
"""The identity of :func:`combine`: the affine map ``h -> 1 h + 0``."""


def combine(first, second):
    """The scan operator: ``(a1, b1) ∘ (a2, b2) = (a1 a2, a2 b1 + b2)``.

    ``first`` is applied first (it is earlier in time). Works on numbers and,
    elementwise, on arrays of pairs.
    """
    a1, b1 = first
    a2, b2 = second
    return a1 * a2, a2 * b1 + b2


@dataclass
class Step:
    """One parallel step of a scan, as recorded when ``record=True``.

    ``combines`` lists ``(first, second, dest)``: slot ``dest`` receives
    ``x[first] ∘ x[second]``; ``copies`` lists ``(src, dest)``: slot ``dest``
    receives ``x[src]`` unchanged. All reads happen before all writes.
    ``segments[i]`` is the range ``(lo, hi)`` of inputs that slot ``i`` holds
    the composition of after the step (``None`` for the identity). The first
    recorded step, ``"inputs"``, is the state before any work.
    """
    phase: str
    combines: list
    copies: list
    segments: list

    @property
    def work(self):
        return len(self.combines)


@dataclass
class ScanResult:
    """The inclusive scan ``(A_t, B_t) = x_1 ∘ ... ∘ x_t`` and its cost.

    ``b`` is the state ``h_t`` of the recurrence started from ``h_0 = 0``;
    :func:`recurrence_states` adds a nonzero ``h_0``.
    """
    a: np.ndarray
    b: np.ndarray
    work: int
    depth: int
    steps: list = field(default_factory=list)


def _join(first, second):
    """The inputs covered by ``x[first] ∘ x[second]``; checks they are adjacent and in order."""
    if first is None:
        return second
    if second is None:
        return first
    if first[1] + 1 != second[0]:
        raise AssertionError(f"combined non-adjacent segments {first} and {second}: time order broken")
    return (first[0], second[1])


class _Machine:
    """Slots holding pairs, updated one parallel step at a time, with counters."""

    def __init__(self, a, b, record):
        a = np.asarray(a)
        b = np.asarray(b)
        if a.shape != b.shape or a.ndim == 0:
            raise ValueError(f"a and b must have the same shape (n, ...), got {a.shape} and {b.shape}")
        dtype = np.result_type(a, b)
        self.a = a.astype(dtype, copy=True)
        self.b = b.astype(dtype, copy=True)
        self.work = 0
        self.depth = 0
        self.record = record
        self.steps = []
        self.segments = None
        if record:
            self.start([(i, i) for i in range(len(a))])

    def start(self, segments):
        """Record the inputs as step 0 (``segments``: what each slot holds at first)."""
        self.segments = list(segments)
        self.steps = [Step("inputs", [], [], list(segments))]

    def step(self, phase, combines=(), copies=()):
        """Apply one parallel step: every combine and copy reads, then all write."""
        combines = list(combines)
        copies = list(copies)
        if combines:
            first, second, dest = (np.array(c) for c in zip(*combines))
            ca, cb = combine((self.a[first], self.b[first]), (self.a[second], self.b[second]))
        if copies:
            src, cdest = (np.array(c) for c in zip(*copies))
            pa, pb = self.a[src], self.b[src]
        if combines:
            self.a[dest], self.b[dest] = ca, cb
        if copies:
            self.a[cdest], self.b[cdest] = pa, pb
        self.work += len(combines)
        self.depth += 1 if combines else 0
        if self.record:
            old = list(self.segments)
            for f, s, d in combines:
                self.segments[d] = _join(old[f], old[s])
            for s, d in copies:
                self.segments[d] = old[s]
            self.steps.append(Step(phase, combines, copies, list(self.segments)))

    def set_identity(self, phase, slots):
        """Write the identity ``(1, 0)`` into ``slots`` (no work, no depth)."""
        slots = list(slots)
        self.a[slots] = IDENTITY[0]
        self.b[slots] = IDENTITY[1]
        if self.record:
            for i in slots:
                self.segments[i] = None
            self.steps.append(Step(phase, [], [], list(self.segments)))

    def result(self, n=None):
        n = len(self.a) if n is None else n
        return ScanResult(self.a[:n], self.b[:n], self.work, self.depth, self.steps)


def sequential_scan(a, b, *, record=False):
    """The loop over time: ``x_t <- x_{t-1} ∘ x_t`` for t = 1 .. n-1.

    Work ``n - 1``, depth ``n - 1``: each step needs the one before.
    """
    m = _Machine(a, b, record)
    for t in range(1, len(m.a)):
        m.step("sequential", [(t - 1, t, t)])
    return m.result()


def hillis_steele_scan(a, b, *, record=False):
    """Hillis and Steele (1986): at step ``d`` every slot ``i >= 2^d`` does
    ``x_i <- x_{i - 2^d} ∘ x_i``.

    After step ``d`` slot ``i`` holds the composition of the last ``2^(d+1)``
    inputs up to ``i``. Depth ``ceil(log2 n)``; work ``sum_d (n - 2^d)``,
    which is ``n log2 n - n + 1`` for ``n`` a power of two: more than the
    sequential loop's ``n - 1``.
    """
    m = _Machine(a, b, record)
    n = len(m.a)
    offset = 1
    while offset < n:
        m.step(f"offset {offset}", [(i - offset, i, i) for i in range(offset, n)])
        offset *= 2
    return m.result()


def blelloch_scan(a, b, *, record=False):
    """Blelloch (1990): a work-efficient scan in two sweeps over a balanced tree.

    *Up-sweep* (a reduction): at level ``d`` (stride ``s = 2^(d+1)``) slot
    ``k + s - 1`` receives ``x[k + s/2 - 1] ∘ x[k + s - 1]``; the last slot
    ends up holding the total. *Down-sweep*: the last slot is set to the
    identity, then at each level, from the root down, every right child
    receives ``x[right] ∘ x[left]`` (the prefix before the parent, then the
    left subtree) and the left child receives the parent's prefix ``x[right]``.
    This leaves the *exclusive* scan in the slots; shifting it by one slot and
    appending the saved total gives the inclusive scan, without more work.

    For ``n`` a power of two: work ``2(n - 1)``, depth ``2 log2 n``. Other
    ``n`` are padded with identities up to the next power of two, and the
    counts are those of the padded tree.
    """
    a = np.asarray(a)
    b = np.asarray(b)
    n = len(a)
    size = 1 << max(n - 1, 0).bit_length()
    if size != n:
        pad = [(0, size - n)] + [(0, 0)] * (a.ndim - 1)
        a = np.pad(a, pad, constant_values=IDENTITY[0])
        b = np.pad(b, pad, constant_values=IDENTITY[1])
    m = _Machine(a, b, record)
    if record:  # padding slots hold the identity from the start
        m.start([(i, i) if i < n else None for i in range(size)])
    stride = 2
    while stride <= size:  # up-sweep
        m.step(f"up-sweep, stride {stride}",
               [(k + stride // 2 - 1, k + stride - 1, k + stride - 1) for k in range(0, size, stride)])
        stride *= 2
    total = (m.a[-1].copy(), m.b[-1].copy())
    m.set_identity("clear the root", [size - 1])
    stride = size
    while stride >= 2:  # down-sweep
        pairs = [(k + stride // 2 - 1, k + stride - 1) for k in range(0, size, stride)]
        m.step(f"down-sweep, stride {stride}",
               combines=[(right, left, right) for left, right in pairs],
               copies=[(right, left) for left, right in pairs])
        stride //= 2
    # exclusive -> inclusive: slot i takes slot i+1's exclusive prefix; the last takes the total
    m.step("shift to inclusive", copies=[(i + 1, i) for i in range(size - 1)])
    m.a[-1], m.b[-1] = total
    if record:
        m.segments[-1] = (0, n - 1)
        m.steps[-1].segments = list(m.segments)
    return m.result(n)


def chunked_scan(a, b, chunks, *, carry="hillis_steele", record=False):
    """The three-phase scan of the chunked CUDA kernel: reduce, carry scan, rescan.

    The ``n`` inputs are cut into ``chunks`` contiguous chunks of length
    ``L = ceil(n / chunks)``; one worker owns each chunk.

    1. *reduce*: every worker composes its chunk into one pair (``L - 1``
       steps, all chunks at once);
    2. *carry scan*: an inclusive scan over the ``chunks`` totals, shifted by
       one chunk, gives each chunk the composition of everything before it
       (``carry="hillis_steele"``, as the CUDA kernel does in shared memory:
       ``ceil(log2 chunks)`` steps; ``carry="sequential"``: ``chunks - 1``);
    3. *rescan*: every worker runs the sequential loop over its chunk again,
       starting from its carry, and writes the prefixes (``L`` steps).

    With the sequential carry scan: work ``2(n - 1)``, depth
    ``2L + chunks - 2``; with Hillis–Steele the depth is ``2L + ceil(log2
    chunks) - 1`` for slightly more work. With few workers
    (``chunks`` much smaller than ``n``) this is the work-efficient way to
    scan. The recorded steps use ``chunks`` extra slots after the ``n`` inputs
    for the chunk totals and carries.
    """
    a = np.asarray(a)
    b = np.asarray(b)
    n = len(a)
    if not 1 <= chunks <= n:
        raise ValueError(f"chunks must be in 1..n={n}, got {chunks}")
    if carry not in ("sequential", "hillis_steele"):
        raise ValueError(f"carry must be 'sequential' or 'hillis_steele', got {carry!r}")
    length = -(-n // chunks)
    chunks = -(-n // length)  # drop chunks that would be empty
    starts = [c * length for c in range(chunks)]
    stops = [min(s + length, n) for s in starts]
    extra = [(np.ones_like(a[:1]), np.zeros_like(b[:1]))] * chunks
    m = _Machine(np.concatenate([a] + [e[0] for e in extra]), np.concatenate([b] + [e[1] for e in extra]), record)
    tot = [n + c for c in range(chunks)]  # slot of chunk c's running total, later its carry
    if record:
        m.start([(i, i) for i in range(n)] + [None] * chunks)
    # 1. reduce: total_c = x[start] ∘ x[start + 1] ∘ ... ∘ x[stop - 1]
    m.step("reduce: load", copies=[(starts[c], tot[c]) for c in range(chunks)])
    for j in range(1, length):
        m.step(f"reduce, element {j + 1}",  # elements of a chunk counted from 1
               [(tot[c], starts[c] + j, tot[c]) for c in range(chunks) if starts[c] + j < stops[c]])
    # 2. exclusive scan of the totals: carry_c = total_0 ∘ ... ∘ total_{c-1}
    if carry == "sequential":
        for c in range(1, chunks):
            m.step("carry scan", [(tot[c - 1], tot[c], tot[c])])
    else:
        offset = 1
        while offset < chunks:
            m.step(f"carry scan, offset {offset}", [(tot[c - offset], tot[c], tot[c]) for c in range(offset, chunks)])
            offset *= 2
    m.step("carry: shift", copies=[(tot[c - 1], tot[c]) for c in range(1, chunks)])
    m.set_identity("carry: first chunk", [tot[0]])
    # 3. rescan: x[start] <- carry_c ∘ x[start], then the loop over the chunk
    m.step("rescan, element 1", [(tot[c], starts[c], starts[c]) for c in range(1, chunks)])
    for j in range(1, length):
        m.step(f"rescan, element {j + 1}",
               [(starts[c] + j - 1, starts[c] + j, starts[c] + j) for c in range(chunks) if starts[c] + j < stops[c]])
    return m.result(n)


ALGORITHMS = {
    "sequential": sequential_scan,
    "hillis_steele": hillis_steele_scan,
    "blelloch": blelloch_scan,
}
"""The scans by name (the chunked scan needs a chunk count: :func:`chunked_scan`)."""


def scan(a, b, algorithm="blelloch", *, record=False):
    """Run the scan ``algorithm`` (a key of :data:`ALGORITHMS`) on the pairs ``(a, b)``."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {sorted(ALGORITHMS)}, got {algorithm!r}")
    return ALGORITHMS[algorithm](a, b, record=record)


def recurrence_states(result, h0=0):
    """The states ``h_t = A_t h_0 + B_t`` of the recurrence, from a :class:`ScanResult`."""
    return result.a * h0 + result.b
