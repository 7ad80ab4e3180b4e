"""CPU backend for ``neural_memory``: numba kernels, parallel over the batch.

The maths, the layout and the backward dynamics are those of
:mod:`.memory_torch`; this module computes them one batch element at a time
with scalar running sums instead of cumulative-sum tensors.

Structure: small ``@njit`` functions for the pieces of one step (a pop, a
read, their backward passes), then one function for a whole step forward
(:func:`one_step_forward`) and one for its backward (:func:`one_step_backward`).
Four parallel kernels call them, ``prange`` over the batch:

- :func:`forward_kernel` and :func:`backward_kernel` loop over the steps of
  a whole sequence (``neural_memory``);
- :func:`step_forward_kernel` and :func:`step_backward_kernel` run one step
  (``NeuralMemory.step`` and its backward); ``step_*_serial`` are the same on
  the calling thread, for the usual small step.

So the whole-sequence op and the step API share every line of the maths.

A pop or a read walks the live rows in the order of its rule (from the top
for ``"top"``, from the front for ``"front"``) as ``first, first + step, ...``
with ``step = -1`` or ``+1``, carrying the running sum of the strengths
ahead. A read stops at the first row where the strength left to read,
``1 - A``, is ``<= 0`` (its weight and every later one is 0), so a step
costs O(W) scalar work for the strengths plus O(rows read × m) for the
values. What the backward may skip there is argued in :mod:`.memory_torch`:
only the row pushed at the far end of the read is checked for the tie
``s = 0``.

Constants are typed like the arrays (``dtype.type(0)``), so float32 kernels
compute in float32; ``fastmath`` stays off.
"""
import numpy as np
import torch
from numba import njit, prange

from ._backend import as_numpy, run_parallel

KIND_CODES = {"stack": 0, "queue": 1, "deque": 2}
STACK, QUEUE, DEQUE = 0, 1, 2

# Problems with fewer elements than this (B x T x (W + m) for a sequence)
# run on one thread: waking the pool costs more.
SERIAL_BELOW = 1 << 15
# A step of NeuralMemory runs on the thread pool only from this much work
# (B x (W + rows x m)); below it, on the calling thread (step_*_serial).
STEP_PARALLEL_MIN = 1 << 21


# ---------------------------------------------------------------------------
# The pieces of one step, for one batch element. Rows are visited in the
# order of the rule: c = first + k * step, k = 0 .. n - 1.
# ---------------------------------------------------------------------------

@njit(cache=True)
def pop(src, dst, first, n, step, u):
    """``dst[c] = max(0, src[c] - max(0, u - Σ_{rows ahead} src))`` over the n rows."""
    zero = src.dtype.type(0)
    ahead = zero
    for k in range(n):
        c = first + k * step
        x = u - ahead
        y = src[c] - (x if x > zero else zero)
        dst[c] = y if y > zero else zero
        ahead += src[c]


@njit(cache=True)
def pop_backward(src, first, n, step, u, g, scratch):
    """Backward of :func:`pop`: turns ``g`` (∂L/∂dst over the n rows, in place)
    into ∂L/∂src; returns ∂L/∂u. ``scratch`` holds the c_i of the derivation."""
    zero = src.dtype.type(0)
    ahead = zero
    gu = zero
    for k in range(n):
        c = first + k * step
        x = u - ahead
        y = src[c] - (x if x > zero else zero)
        gy = g[c] if y > zero else zero
        ci = gy if x > zero else zero
        g[c] = gy
        scratch[c] = ci
        gu -= ci
        ahead += src[c]
    behind = zero                       # Σ of c over the rows behind (later in the order)
    for k in range(n - 1, -1, -1):
        c = first + k * step
        g[c] += behind
        behind += scratch[c]
    return gu


@njit(cache=True)
def read(s, V, first, n, step, r):
    """``r = Σ w_c V[c]`` with ``w_c = min(s[c], max(0, 1 - Σ_{rows ahead} s))``."""
    zero = s.dtype.type(0)
    one = s.dtype.type(1)
    m = r.shape[0]
    for j in range(m):
        r[j] = zero
    ahead = zero
    for k in range(n):
        c = first + k * step
        room = one - ahead
        if room <= zero:                # every later weight is 0
            break
        w = s[c] if s[c] <= room else room
        if w != zero:
            for j in range(m):
                r[j] += w * V[c, j]
        ahead += s[c]


@njit(cache=True)
def _dot(a, V, c):
    acc = a.dtype.type(0)
    for j in range(a.shape[0]):
        acc += a[j] * V[c, j]
    return acc


@njit(cache=True)
def read_backward(s, V, first, n, step, gr, gs, gV, far_is_new):
    """Backward of :func:`read`: adds ``w_c gr`` into ``gV[c]`` and ∂L/∂s into ``gs``.

    Rows of strength 0 inside the read get no ``<gr, V[c]>`` (weight 0, and the
    pop's backward zeroes their ∂L/∂s), except the two ends of the order, where
    this step's pushes sit. ``far_is_new``: the last row of the order was pushed
    at this step; when the read does not reach it and its strength is 0 (the
    tie ``min(0, 0)``), it gets the derivative of the left argument (∂L/∂d)."""
    zero = s.dtype.type(0)
    one = s.dtype.type(1)
    m = gr.shape[0]
    ahead = zero
    k = 0
    while k < n:
        c = first + k * step
        room = one - ahead
        if room <= zero:
            break
        if s[c] > zero or k == 0 or k == n - 1:
            gw = _dot(gr, V, c)
        else:                           # an old row of strength 0: its ∂L/∂s is never used
            gw = zero
        if s[c] <= room:                # read whole: ∂w/∂s[c] = 1
            w = s[c]
            gs[c] += gw
        else:                           # the read runs out here: w = 1 - Σ ahead
            w = room
            for k2 in range(k):
                gs[first + k2 * step] -= gw
        if w != zero:
            for j in range(m):
                gV[c, j] += w * gr[j]
        ahead += s[c]
        k += 1
    if far_is_new and k < n:
        c = first + (n - 1) * step
        if s[c] <= zero:
            gs[c] += _dot(gr, V, c)


# ---------------------------------------------------------------------------
# One whole step, for one batch element. s_prev, s, gs, tmp, tmp2: (W,);
# V, gV: (R, m); d, u, gd, gu: (H,); r, gr: (H, m). T is the capacity
# (W = T, or 2T for the deque).
# ---------------------------------------------------------------------------

@njit(cache=True)
def one_step_forward(kind, t, T, s_prev, s, V, d, u, r, tmp):
    """Step t: pop, push, read. Writes every column of ``s`` (zero outside the live rows)."""
    zero = s.dtype.type(0)
    for c in range(s.shape[0]):
        s[c] = zero
    if kind == DEQUE:
        lo = T - t                      # old rows: lo .. lo + 2t - 1
        n = 2 * t
        pop(s_prev, tmp, lo + n - 1, n, -1, u[0])       # eq. 7: the top pop
        pop(tmp, s, lo, n, 1, u[1])                     # eq. 8: the bottom pop
        s[lo - 1] = d[1]                                # eq. 9: push at both ends
        s[lo + n] = d[0]
        read(s, V, lo + n, n + 2, -1, r[0])             # eq. 10: from the top
        read(s, V, lo - 1, n + 2, 1, r[1])              # eq. 11: from the bottom
    elif kind == STACK:
        pop(s_prev, s, t - 1, t, -1, u[0])              # eq. 2
        s[t] = d[0]
        read(s, V, t, t + 1, -1, r[0])                  # eq. 3
    else:
        pop(s_prev, s, 0, t, 1, u[0])                   # eq. 4
        s[t] = d[0]
        read(s, V, 0, t + 1, 1, r[0])                   # eq. 5


@njit(cache=True)
def one_step_backward(kind, t, T, s_prev, s, V, d, u, gr, gs, gV, gd, gu, tmp, tmp2):
    """Backward of step t: ``gs`` holds ∂L/∂s_t on entry and ∂L/∂s_{t-1} on exit
    (zero outside the old rows); writes ``gd``, ``gu``; adds the reads into ``gV``."""
    zero = s.dtype.type(0)
    if kind == DEQUE:
        lo = T - t
        n = 2 * t
        read_backward(s, V, lo + n, n + 2, -1, gr[0], gs, gV, True)
        read_backward(s, V, lo - 1, n + 2, 1, gr[1], gs, gV, True)
        gd[0] = gs[lo + n]
        gd[1] = gs[lo - 1]
        pop(s_prev, tmp, lo + n - 1, n, -1, u[0])       # the strengths between the pops, again
        gu[1] = pop_backward(tmp, lo, n, 1, u[1], gs, tmp2)
        gu[0] = pop_backward(s_prev, lo + n - 1, n, -1, u[0], gs, tmp2)
    else:
        lo = 0
        n = t
        if kind == STACK:
            read_backward(s, V, t, t + 1, -1, gr[0], gs, gV, False)
        else:
            read_backward(s, V, 0, t + 1, 1, gr[0], gs, gV, True)
        gd[0] = gs[t]
        if kind == STACK:
            gu[0] = pop_backward(s_prev, t - 1, t, -1, u[0], gs, tmp2)
        else:
            gu[0] = pop_backward(s_prev, 0, t, 1, u[0], gs, tmp2)
    for c in range(gs.shape[0]):
        if c < lo or c >= lo + n:
            gs[c] = zero


# ---------------------------------------------------------------------------
# Parallel kernels: prange over the batch.
# ---------------------------------------------------------------------------

@njit(parallel=True, cache=True)
def forward_kernel(kind, V, d, u, S, r):
    """Whole sequences: ``S (B, T, W)`` and ``r (B, T, H, m)`` from ``V (B, R, m)``, ``d, u (B, T, H)``."""
    B, T, W = S.shape
    for b in prange(B):
        zeros = np.zeros(W, dtype=S.dtype)
        tmp = np.empty(W, dtype=S.dtype)
        for t in range(T):
            s_prev = S[b, t - 1] if t > 0 else zeros
            one_step_forward(kind, t, T, s_prev, S[b, t], V[b], d[b, t], u[b, t], r[b, t], tmp)


@njit(parallel=True, cache=True)
def backward_kernel(kind, V, d, u, S, gr, gS, has_gS, gV, gd, gu):
    """Whole sequences, backwards in time; ``gV`` must be zero on entry."""
    B, T, W = S.shape
    for b in prange(B):
        zeros = np.zeros(W, dtype=S.dtype)
        gs = np.zeros(W, dtype=S.dtype)
        tmp = np.empty(W, dtype=S.dtype)
        tmp2 = np.empty(W, dtype=S.dtype)
        for t in range(T - 1, -1, -1):
            if has_gS:
                for c in range(W):
                    gs[c] += gS[b, t, c]
            s_prev = S[b, t - 1] if t > 0 else zeros
            one_step_backward(kind, t, T, s_prev, S[b, t], V[b], d[b, t], u[b, t], gr[b, t], gs, gV[b],
                              gd[b, t], gu[b, t], tmp, tmp2)


@njit(parallel=True, cache=True)
def step_forward_kernel(kind, t, T, s_prev, V, d, u, s, r):
    """One step for the batch: ``s (B, W)``, ``r (B, H, m)``."""
    B, W = s.shape
    for b in prange(B):
        tmp = np.empty(W, dtype=s.dtype)
        one_step_forward(kind, t, T, s_prev[b], s[b], V[b], d[b], u[b], r[b], tmp)


@njit(parallel=True, cache=True)
def step_backward_kernel(kind, t, T, s_prev, s, V, d, u, gr, gs, gV, gd, gu):
    """Backward of one step for the batch; ``gs`` in place (∂L/∂s_t in, ∂L/∂s_{t-1} out)."""
    B, W = s.shape
    for b in prange(B):
        tmp = np.empty(W, dtype=s.dtype)
        tmp2 = np.empty(W, dtype=s.dtype)
        one_step_backward(kind, t, T, s_prev[b], s[b], V[b], d[b], u[b], gr[b], gs[b], gV[b], gd[b], gu[b],
                          tmp, tmp2)


# The same two on one thread, compiled without the parallel runtime: a step is
# small, and a parallel call waits until every thread of the pool gets a core
# (on a busy 2-core machine, milliseconds per call: many times the step).

@njit(cache=True)
def step_forward_serial(kind, t, T, s_prev, V, d, u, s, r):
    B, W = s.shape
    tmp = np.empty(W, dtype=s.dtype)
    for b in range(B):
        one_step_forward(kind, t, T, s_prev[b], s[b], V[b], d[b], u[b], r[b], tmp)


@njit(cache=True)
def step_backward_serial(kind, t, T, s_prev, s, V, d, u, gr, gs, gV, gd, gu):
    B, W = s.shape
    tmp = np.empty(W, dtype=s.dtype)
    tmp2 = np.empty(W, dtype=s.dtype)
    for b in range(B):
        one_step_backward(kind, t, T, s_prev[b], s[b], V[b], d[b], u[b], gr[b], gs[b], gV[b], gd[b], gu[b],
                          tmp, tmp2)


# ---------------------------------------------------------------------------
# Torch wrappers (the backend interface of :mod:`.memory_torch`).
# ---------------------------------------------------------------------------

_np = as_numpy


def _run(kernel, work, B, *args):
    run_parallel(kernel, work, B, SERIAL_BELOW, *args)


def forward(kind, V, d, u):
    B, T, H = d.shape
    m = V.shape[2]
    S = torch.empty(B, T, H * T, dtype=V.dtype)
    r = torch.empty(B, T, H, m, dtype=V.dtype)
    _run(forward_kernel, B * T * (H * T + m), B, KIND_CODES[kind], _np(V), _np(d), _np(u), _np(S), _np(r))
    return r, S


def backward(kind, V, d, u, S, g_r, g_S):
    B, T, H = d.shape
    g_V = torch.zeros_like(V)
    g_d = torch.empty_like(d)
    g_u = torch.empty_like(u)
    has_gS = g_S is not None
    gS = _np(g_S) if has_gS else np.zeros((0, 0, 0), dtype=_np(S).dtype)
    _run(backward_kernel, B * T * (S.shape[2] + V.shape[2]), B, KIND_CODES[kind], _np(V), _np(d), _np(u), _np(S),
         _np(g_r), gS, has_gS, _np(g_V), _np(g_d), _np(g_u))
    return g_V, g_d, g_u


def _step_call(parallel, serial, work, B, *args):
    if work < STEP_PARALLEL_MIN or B == 1 or torch.get_num_threads() == 1:
        serial(*args)
    else:
        _run(parallel, work, B, *args)


def step_forward(kind, t, s_prev, V, d_t, u_t):
    B, W = s_prev.shape
    H = d_t.shape[1]
    s = torch.empty(B, W, dtype=V.dtype)
    r = torch.empty(B, H, V.shape[2], dtype=V.dtype)
    _step_call(step_forward_kernel, step_forward_serial, B * (W + H * (t + 1) * V.shape[2]), B,
               KIND_CODES[kind], int(t), W // H, _np(s_prev), _np(V), _np(d_t), _np(u_t), _np(s), _np(r))
    return s, r


def step_backward(kind, t, s_prev, s_t, V, d_t, u_t, g_r, g_s, g_V):
    B, W = s_prev.shape
    H = d_t.shape[1]
    gs = g_s.detach().clone(memory_format=torch.contiguous_format)
    g_d = torch.empty_like(d_t)
    g_u = torch.empty_like(u_t)
    _step_call(step_backward_kernel, step_backward_serial, B * (W + H * (t + 1) * V.shape[2]), B,
               KIND_CODES[kind], int(t), W // H, _np(s_prev), _np(s_t), _np(V), _np(d_t), _np(u_t), _np(g_r),
               _np(gs), _np(g_V), _np(g_d), _np(g_u))
    return gs, g_d, g_u
