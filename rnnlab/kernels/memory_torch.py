"""Readable PyTorch reference for ``neural_memory``: the test oracle, and the hand-written backward.

The continuous stack, queue and deque of Grefenstette et al. (2015), "Learning
to Transduce with Unbounded Memory", eq. 1-11; 0-based step ``t`` below.

Layout (shared by every backend)
--------------------------------
Values are written once and never move; only strengths change.

- Stack and queue: row ``i`` holds ``v_i`` (the value pushed at step ``i``);
  the strengths after step ``t`` are a row ``s_t`` of width ``W = T``, live in
  columns ``0 .. t`` (zero beyond). The stack's top is the highest live
  column; the queue's front is column 0.
- Deque: ``W = 2T`` fixed columns. The value pushed on top at step ``t`` sits
  in column ``T + t``, the one pushed at the bottom in column ``T - 1 - t``
  (1-based step ``t'``: columns ``T + t' - 1`` and ``T - t'``). After step
  ``t`` the live columns are ``T - 1 - t .. T + t``, bottom to top; the old
  rows at step ``t`` are columns ``T - t .. T + t - 1`` (all ``2t`` of them).

One step (eq. 1-11): **pop, then push, then read**.

Both pops and both reads follow one of two *rules*, which differ only in
which end they work from. For a rule, row ``j`` is *ahead of* row ``i`` when
it is nearer that end: ``"top"`` (the stack rule; ahead = higher column) and
``"front"`` (the queue rule; ahead = lower column). With
``ahead(x)_i = Σ_{j ahead of i} x_j``::

    pop:   x_i = u − ahead(s')_i,   y_i = s'_i − max(0, x_i),   s_i = max(0, y_i)       (eq. 2, 4, 7, 8)
    read:  A_i = ahead(s)_i,  w_i = min(s_i, max(0, 1 − A_i)),  r = Σ_i w_i V[i]          (eq. 3, 5, 10, 11)

where ``s'`` are the strengths before the pop. The stack pops and reads with
``"top"``, the queue with ``"front"``. The deque pops the ``2t`` old rows
first with ``u_top`` (rule ``"top"``), then the result with ``u_bot`` (rule
``"front"``), pushes ``d_bot`` and ``d_top`` at its two ends, then reads
``r_top`` (``"top"``) and ``r_bot`` (``"front"``) over all ``2t + 2`` live rows.
The printed index ranges of eq. 7-8 must (and here do) cover all ``2t`` old
rows (1-based: ``i = 1 .. 2(t'−1)``), as the stack's ``i < t`` covers all its
old rows.

Ties: at ``max(a, b)`` and ``min(a, b)`` with ``a == b`` the derivative is that
of the *left* argument (the paper's footnote): ``max(0, x)`` has derivative 0
at ``x = 0``, ``min(s, c)`` derivative 1 in ``s`` at ``s = c``. :func:`_relu`
and :func:`_min` implement exactly this under autograd.

Backward dynamics (derivation)
------------------------------
Let ``ḡ_r = ∂L/∂r`` and ``ḡ_s = ∂L/∂s`` at step ``t``, where ``ḡ_s`` already
holds every later step's contribution (steps run backwards, ``T-1 .. 0``).

*Read.* ``r = Σ_i w_i V[i]`` gives ``∂L/∂V[i] += w_i ḡ_r`` (eq. 15) and, with
``γ_i = <ḡ_r, V[i]>``, the derivative of ``w_i = min(s_i, max(0, 1 − A_i))``:

- if ``s_i <= max(0, 1 − A_i)`` (the row is read whole): ``∂w_i/∂s_i = 1``,
  so ``ḡ_s[i] += γ_i``;
- else if ``1 − A_i > 0`` (the read runs out in row ``i``): ``w_i = 1 − A_i``,
  ``∂w_i/∂s_j = −1`` for every row ``j`` ahead of ``i``, so
  ``ḡ_s[j] −= γ_i`` — a running sum ``behind(·)`` over the rows ``i`` behind
  ``j``. Only one row can be in this case: there ``A_i + s_i > 1``, so every
  row behind it has ``1 − A <= 0``;
- else 0.

This is eq. 18 for the stack, with one difference at a tie: eq. 18 takes the
second case when ``Σ s_j <= 1``; with the left-argument rule ``max(0, 1 − A)``
has derivative 0 at ``A = 1``, so we require ``1 − A > 0``.

*Push.* ``s[new] = d``: ``∂L/∂d = ḡ_s[new]`` (eq. 14).

*Pop.* ``s_i = max(0, s'_i − max(0, u − ahead(s')_i))``. With
``γ^y_i = ḡ_s[i] [y_i > 0]`` and ``c_i = γ^y_i [x_i > 0]``::

    ∂L/∂s'_j = γ^y_j + Σ_{i: j ahead of i} c_i = γ^y_j + behind(c)_j          (eq. 16)
    ∂L/∂u    = −Σ_i c_i                                                     (eq. 17)

The first term is the row's own strength (derivative 1 whenever ``s_i > 0``);
the second comes from ``ahead(s')_i``, which sums the rows ahead of ``i``.
(Eq. 16 as printed gives ``∂s_t[i]/∂s_{t−1}[i] = 0`` when the row is popped in
part, ``x_i > 0``; the derivative there is 1, as gradcheck confirms.)

*Stack*: ahead = above, behind = below: the formulas are eq. 16-18. *Queue*:
the same with ahead = below and behind = above, i.e. every running sum runs
the other way. *Deque*: the step is a composition, so its backward runs the
pieces in reverse: both reads add into ``ḡ_s``; the two pushed rows give
``∂L/∂d_top`` and ``∂L/∂d_bot``; then the bottom pop's backward (rule
``"front"``, applied to the strengths after the top pop, recomputed from
``s'`` and ``u_top``), then the top pop's (rule ``"top"``) give ``∂L/∂s'``,
``∂L/∂u_bot`` and ``∂L/∂u_top``. Values never move, so ``∂L/∂v`` of a row
collects ``w ḡ_r`` from every read of that row and is complete once the
backward pass has reached the step that pushed it.

All work is O(W) per step for the strengths (running sums, never O(W²)),
plus O(rows read × m) for the reads.

What the kernels skip: the ``ḡ_s[i]`` of an *old* row of strength ``s_i = 0``
is never used: ``s_i = 0`` means ``y_i <= 0`` in the pop that made it, and the
pop's backward multiplies ``ḡ_s[i]`` by ``[y_i > 0] = 0``. Such a row also has
``w_i = 0``. So the kernels compute ``γ_i`` only for rows of positive strength
and for the rows pushed at this step (at the ends of the order); and they stop
a read at the first row with ``1 − A <= 0`` (weight 0 from there on, the only
derivative left being the tie ``s_i = 0 = max(0, 1 − A_i)``, ``∂w/∂s_i = 1``),
then check the row pushed at the far end of the read (the queue's new row,
the deque's opposite new row), whose ``ḡ_s`` is ``∂L/∂d``.
:func:`neural_memory_backward_ref` computes every row (the derivation as
written); the gradients of ``v``, ``d`` and ``u`` are the same.

Backend interface (every backend module implements these four)
--------------------------------------------------------------
``H`` heads (1; 2 for the deque: index 0 = top, 1 = bottom), ``R = W`` rows of
values. ``kind`` is ``"stack"``, ``"queue"`` or ``"deque"``.

``forward(kind, V, d, u) -> (r, S)``
    ``V (B, R, m)`` values in the layout above, ``d, u (B, T, H)``;
    ``r (B, T, H, m)``, ``S (B, T, W)``.
``backward(kind, V, d, u, S, g_r, g_S) -> (g_V, g_d, g_u)``
    ``g_r (B, T, H, m)``, ``g_S (B, T, W)`` or None.
``step_forward(kind, t, s_prev, V, d_t, u_t) -> (s_t, r_t)``
    One step for the step API: ``s_prev, s_t (B, W)``, ``V (B, R, m)`` with
    the rows of step ``t`` already written, ``d_t, u_t (B, H)``, ``r_t (B, H, m)``.
``step_backward(kind, t, s_prev, s_t, V, d_t, u_t, g_r, g_s, g_V) -> (g_s_prev, g_d, g_u)``
    Adds step ``t``'s reads into ``g_V (B, R, m)`` in place.
"""
import torch

HEADS = {"stack": 1, "queue": 1, "deque": 2}


# ---------------------------------------------------------------------------
# The pieces of eq. 1-11, with the left-argument rule at ties.
# ---------------------------------------------------------------------------

def _relu(x):
    """max(0, x); at x = 0 the derivative is that of the left argument 0."""
    return torch.where(x > 0, x, torch.zeros_like(x))


def _min(a, b):
    """min(a, b); at a = b the derivative is that of the left argument a."""
    return torch.where(a <= b, a, b)


def _sum_below(x):
    """Σ_{j < i} x_j along the last dimension (exclusive running sum)."""
    c = x.cumsum(-1)
    return torch.cat([torch.zeros_like(x[..., :1]), c[..., :-1]], -1)


def _sum_above(x):
    """Σ_{j > i} x_j along the last dimension, accumulated from the top down."""
    return _sum_below(x.flip(-1)).flip(-1)


def _ahead(x, rule):
    """Σ of x over the rows ahead of each row: above it for ``"top"``, below it for ``"front"``."""
    return _sum_above(x) if rule == "top" else _sum_below(x)


def _behind(x, rule):
    """Σ of x over the rows behind each row (the rows that have it ahead of them)."""
    return _sum_below(x) if rule == "top" else _sum_above(x)


def _pop(s, u, rule):
    """Pop strength ``u`` (B,) from the end of ``rule``: eq. 2 (top), 4 (front), 7, 8."""
    return _relu(s - _relu(u[:, None] - _ahead(s, rule)))


def _read_weights(s, rule):
    """Read weights: a total strength of 1 from the end of ``rule`` (eq. 3, 5, 10, 11)."""
    return _min(s, _relu(1 - _ahead(s, rule)))


def _read(s, rows, rule):
    """``Σ_i w_i V[i]`` over the live rows ``rows (B, n, m)``: (B, m)."""
    return torch.bmm(_read_weights(s, rule).unsqueeze(1), rows).squeeze(1)


def _live(kind, t, T):
    """``(first, last, old_first, old_last)``: the live and the old columns of step ``t`` (half-open)."""
    if kind == "deque":
        return T - 1 - t, T + t + 1, T - t, T + t
    return 0, t + 1, 0, t


def _capacity(kind, W):
    return W // HEADS[kind]


# ---------------------------------------------------------------------------
# One step, differentiable by autograd, and its hand-written backward.
# ---------------------------------------------------------------------------

def step_ref(kind, t, s_prev, V, d_t, u_t):
    """Step ``t``: ``(s_t, r_t)`` from ``s_prev (B, W)``, values ``V (B, R, m)`` and
    controls ``d_t, u_t (B, H)``; ``r_t (B, H, m)``. Pop, then push, then read."""
    W = s_prev.shape[1]
    first, last, lo, hi = _live(kind, t, _capacity(kind, W))
    old = s_prev[:, lo:hi]
    rows = V[:, first:last]
    if kind == "deque":
        popped = _pop(_pop(old, u_t[:, 0], "top"), u_t[:, 1], "front")          # eq. 7, then eq. 8
        s = torch.cat([d_t[:, 1:2], popped, d_t[:, 0:1]], 1)                    # eq. 9: bottom, old, top
        r = torch.stack([_read(s, rows, "top"), _read(s, rows, "front")], 1)    # eq. 10, 11
    else:
        rule = "top" if kind == "stack" else "front"
        s = torch.cat([_pop(old, u_t[:, 0], rule), d_t], 1)                     # eq. 2 / 4
        r = _read(s, rows, rule).unsqueeze(1)                                   # eq. 3 / 5
    s_full = torch.nn.functional.pad(s, (first, W - last))
    return s_full, r


def _read_backward(s, rows, rule, g_r, g_rows):
    """Backward of ``_read``: adds ``w ⊗ g_r`` into ``g_rows`` (in place); returns ``∂L/∂s`` (B, n)."""
    room = 1 - _ahead(s, rule)
    cap = _relu(room)
    w = _min(s, cap)
    g_rows += w.unsqueeze(2) * g_r.unsqueeze(1)
    gw = torch.bmm(rows, g_r.unsqueeze(2)).squeeze(2)              # γ_i = <g_r, V[i]>
    whole = s <= cap                                               # w_i = s_i
    cut = ~whole & (room > 0)                                      # w_i = 1 - A_i
    zero = torch.zeros_like(gw)
    return torch.where(whole, gw, zero) - _behind(torch.where(cut, gw, zero), rule)


def _pop_backward(s, u, rule, g):
    """Backward of ``_pop(s, u, rule)`` given ``g = ∂L/∂(result)``: ``(∂L/∂s, ∂L/∂u)``."""
    x = u[:, None] - _ahead(s, rule)
    y = s - _relu(x)
    zero = torch.zeros_like(g)
    gy = torch.where(y > 0, g, zero)
    c = torch.where(x > 0, gy, zero)
    return gy + _behind(c, rule), -c.sum(1)


def step_backward_ref(kind, t, s_prev, s_t, V, d_t, u_t, g_r, g_s, g_V):
    """Hand-written backward of :func:`step_ref` (the derivation in the module
    docstring): ``(∂L/∂s_prev, ∂L/∂d_t, ∂L/∂u_t)``; adds ``∂L/∂V`` of the
    reads into ``g_V`` in place. ``g_r (B, H, m)``, ``g_s (B, W)``."""
    B, W = s_prev.shape
    first, last, lo, hi = _live(kind, t, _capacity(kind, W))
    s = s_t[:, first:last]
    rows = V[:, first:last]
    g_rows = g_V[:, first:last]
    g = g_s[:, first:last].clone()
    g_u = torch.zeros_like(u_t)
    if kind == "deque":
        g += _read_backward(s, rows, "top", g_r[:, 0], g_rows)
        g += _read_backward(s, rows, "front", g_r[:, 1], g_rows)
        g_d = torch.stack([g[:, -1], g[:, 0]], 1)                   # the pushes: top, bottom
        old = s_prev[:, lo:hi]
        after_top = _pop(old, u_t[:, 0], "top")                     # recomputed
        g_top, g_u[:, 1] = _pop_backward(after_top, u_t[:, 1], "front", g[:, 1:-1])
        g_old, g_u[:, 0] = _pop_backward(old, u_t[:, 0], "top", g_top)
    else:
        rule = "top" if kind == "stack" else "front"
        g += _read_backward(s, rows, rule, g_r[:, 0], g_rows)
        g_d = g[:, -1:]
        g_old, g_u[:, 0] = _pop_backward(s_prev[:, lo:hi], u_t[:, 0], rule, g[:, :-1])
    g_prev = torch.zeros_like(g_s)
    g_prev[:, lo:hi] = g_old
    return g_prev, g_d, g_u


# ---------------------------------------------------------------------------
# Whole sequences.
# ---------------------------------------------------------------------------

def values_buffer(kind, v):
    """The values ``V (B, R, m)`` in the fixed layout: ``v`` itself for the stack and
    queue; for the deque (``v (B, T, 2, m)``) bottoms in reverse, then tops. Differentiable."""
    if kind == "deque":
        return torch.cat([v[:, :, 1].flip(1), v[:, :, 0]], 1)
    return v


def values_grad(kind, g_V):
    """The inverse map of :func:`values_buffer`: ``∂L/∂v`` from ``∂L/∂V``."""
    if kind == "deque":
        T = g_V.shape[1] // 2
        return torch.stack([g_V[:, T:], g_V[:, :T].flip(1)], 2)
    return g_V


def neural_memory_ref(kind, v, d, u):
    """The memory as a plain loop over time, differentiable by autograd.

    Same arguments and results as :func:`rnnlab.neural_memory` (public shapes).
    This is the version the book explains first and the oracle every kernel
    and the hand-written backward are tested against.
    """
    H = HEADS[kind]
    B, T = d.shape[:2]
    V = values_buffer(kind, v)
    d3, u3 = d.reshape(B, T, H), u.reshape(B, T, H)
    s = torch.zeros(B, H * T, dtype=v.dtype, device=v.device)
    reads, strengths = [], []
    for t in range(T):
        s, r = step_ref(kind, t, s, V, d3[:, t], u3[:, t])
        reads.append(r)
        strengths.append(s)
    r = torch.stack(reads, 1)
    return (r if H == 2 else r.squeeze(2)), torch.stack(strengths, 1)


def neural_memory_backward_ref(kind, v, d, u, s, g_r, g_s=None):
    """Hand-written backward of :func:`neural_memory_ref`: ``(∂L/∂v, ∂L/∂d, ∂L/∂u)``
    from the forward's strengths ``s`` and the gradients ``g_r`` of the reads and
    ``g_s`` of the strengths (None: zero). Public shapes; a loop over time, backwards."""
    H = HEADS[kind]
    B, T = d.shape[:2]
    V = values_buffer(kind, v)
    g_V, g_d, g_u = backward(kind, V, d.reshape(B, T, H), u.reshape(B, T, H), s,
                             g_r.reshape(B, T, H, -1), g_s)
    return values_grad(kind, g_V), g_d.reshape(d.shape), g_u.reshape(u.shape)


# ---------------------------------------------------------------------------
# The backend interface (see the module docstring), used by backend="torch".
# ---------------------------------------------------------------------------

def forward(kind, V, d, u):
    B, T, H = d.shape
    W = H * T
    r = torch.empty(B, T, H, V.shape[2], dtype=V.dtype, device=V.device)
    S = torch.empty(B, T, W, dtype=V.dtype, device=V.device)
    s = torch.zeros(B, W, dtype=V.dtype, device=V.device)
    for t in range(T):
        s, r[:, t] = step_ref(kind, t, s, V, d[:, t], u[:, t])
        S[:, t] = s
    return r, S


def backward(kind, V, d, u, S, g_r, g_S):
    B, T, H = d.shape
    g_V = torch.zeros_like(V)
    g_d = torch.empty_like(d)
    g_u = torch.empty_like(u)
    g = torch.zeros_like(S[:, 0])
    zeros = torch.zeros_like(S[:, 0])
    for t in range(T - 1, -1, -1):
        if g_S is not None:
            g = g + g_S[:, t]
        s_prev = S[:, t - 1] if t > 0 else zeros
        g, g_d[:, t], g_u[:, t] = step_backward_ref(kind, t, s_prev, S[:, t], V, d[:, t], u[:, t], g_r[:, t], g,
                                                    g_V)
    return g_V, g_d, g_u


def step_forward(kind, t, s_prev, V, d_t, u_t):
    return step_ref(kind, t, s_prev, V, d_t, u_t)


def step_backward(kind, t, s_prev, s_t, V, d_t, u_t, g_r, g_s, g_V):
    return step_backward_ref(kind, t, s_prev, s_t, V, d_t, u_t, g_r, g_s, g_V)


# ---------------------------------------------------------------------------
# The equations element by element: the slowest, most literal version.
# ---------------------------------------------------------------------------

def _pop_rows(strengths, u, rule):
    """Eq. 2 / 4 / 7 / 8 row by row: ``strengths`` a list (bottom to top) of ``(B,)`` tensors."""
    order = range(len(strengths) - 1, -1, -1) if rule == "top" else range(len(strengths))
    popped = [None] * len(strengths)
    ahead = torch.zeros_like(u)                     # Σ of the old strengths of the rows ahead of row i
    for i in order:
        popped[i] = _relu(strengths[i] - _relu(u - ahead))
        ahead = ahead + strengths[i]
    return popped


def _read_rows(strengths, values, rule):
    """Eq. 3 / 5 / 10 / 11 row by row: ``Σ_i min(s_i, max(0, 1 − Σ_{j ahead of i} s_j)) v_i``."""
    order = range(len(strengths) - 1, -1, -1) if rule == "top" else range(len(strengths))
    read = torch.zeros_like(values[0])
    ahead = torch.zeros_like(strengths[0])
    for i in order:
        weight = _min(strengths[i], _relu(1 - ahead))
        read = read + weight[:, None] * values[i]
        ahead = ahead + strengths[i]
    return read


def neural_memory_loop(kind, v, d, u):
    """The memory written as the equations read: a loop over time and, inside it, loops over the rows.

    Same arguments and results as :func:`rnnlab.neural_memory` (public shapes). The memory is a Python
    list of rows, bottom to top: a value ``(B, m)`` and a strength ``(B,)`` each; a push appends a row (the
    deque's bottom push inserts one at the front), a pop and a read walk the rows from their end keeping
    the running sum of the strengths ahead. Every operation is on one row's ``(B,)`` or ``(B, m)`` tensors, so
    a sequence of length ``T`` costs O(T²) small torch operations (the deque twice as many rows); autograd
    differentiates it. The ties follow the left-argument rule of :func:`_relu` and :func:`_min`, so its
    values and gradients equal :func:`neural_memory_ref`'s. It exists to be read, and as the slow baseline
    of ``python -m rnnlab.bench memory``; many ports of the paper compute the memory this way.
    """
    B, T = d.shape[:2]
    values, strengths, reads, out_strengths = [], [], [], []
    for t in range(T):
        if kind == "deque":
            strengths = _pop_rows(_pop_rows(strengths, u[:, t, 0], "top"), u[:, t, 1], "front")   # eq. 7, 8
            strengths = [d[:, t, 1]] + strengths + [d[:, t, 0]]                                   # eq. 9
            values = [v[:, t, 1]] + values + [v[:, t, 0]]
            reads.append(torch.stack([_read_rows(strengths, values, "top"),                       # eq. 10
                                      _read_rows(strengths, values, "front")], 1))                # eq. 11
            zeros = [torch.zeros_like(d[:, t, 0])] * (T - 1 - t)
            out_strengths.append(torch.stack(zeros + strengths + zeros, 1))   # columns T-1-t .. T+t live
        else:
            rule = "top" if kind == "stack" else "front"
            strengths = _pop_rows(strengths, u[:, t], rule) + [d[:, t]]        # eq. 2 / 4, then eq. 1 / 6
            values = values + [v[:, t]]
            reads.append(_read_rows(strengths, values, rule))                 # eq. 3 / 5
            zeros = [torch.zeros_like(d[:, t])] * (T - 1 - t)
            out_strengths.append(torch.stack(strengths + zeros, 1))
    return torch.stack(reads, 1), torch.stack(out_strengths, 1)


# The rules under public names, for the chapter's checks and the memory benchmark.
pop, read, read_weights = _pop, _read, _read_weights
