"""CPU backend for ``recurrent_cell``: numba kernels, parallel over the batch.

The equations, gate orders and the backward are those of :mod:`.cells_torch`;
this module runs them for blocks of four batch elements at a time (``prange``
over the blocks), every step as a few contiguous loops over the hidden units.

The two products of a step, for the four elements of a block at once:

- forward, the recurrent drive ``pre = xp_t + W h``: ``W`` is first copied to
  ``WT`` ``(H_in, G*H)`` (``WT[k, g*H + j] = W[g, j, k]``, once per call), and
  ``pre`` accumulates ``h[k] * WT[k, :]`` over ``k``: axpy's along one row of
  all G gates' outputs (:func:`axpys4`: four rows of ``WT`` per pass, each
  loaded once for the four elements, each output loaded and stored once per
  four rows). ``pre`` is the step's slice of ``acts`` itself: the activations
  overwrite it in place. (The GRU's ``n`` gate multiplies ``r ⊙ h``: its
  columns of ``WT`` are a separate matrix, applied after r.)
- backward, the carried gradient ``δh_{t-1}[k] = Σ_r WT[k, r] δpre[r]`` (that
  is ``Σ_g W[g]ᵀ δpre_g``): dot products over the G*H pre-activations
  (:func:`dots4`: four k and four elements at a time, sixteen running sums
  that stay in registers). A dot product vectorises only if its sum may be
  reassociated: these two functions are compiled with
  ``fastmath={"reassoc", "contract"}`` (see below). The axpy form, over the
  rows of ``W`` seen as ``(G*H, H_in)``, has inner loops only H long and
  measured 1.9x slower at hidden 64.

Blocks of four made the products 1.5x faster than one element at a time.

What makes the loops vectorise (checked in the LLVM IR, and measured):

- no inner loop but the backward's dot products is a reduction, so none
  other needs reassociation;
- every vectorised loop indexes from 0 (a gate's part of a row is taken as a
  view, ``a[H:2 * H]``): numba turns a signed index that may be negative into
  ``i + n``, and LLVM cannot vectorise ``a[j0 + j]`` with ``j0`` unknown;
- few arrays are written per loop (the LSTM's backward is seven small loops,
  not one), so LLVM's run-time overlap checks stay within its limits;
- ``error_model="numpy"``: numba's default Python error model tests every
  division for zero (to raise ``ZeroDivisionError``), which stops the
  vectoriser; with NumPy's model a division by zero gives inf/nan.

Activations. numba has no vector ``tanh`` or ``exp`` here (no SVML), and one
``libm`` call per gate and unit costs more than the matrix products at hidden
64 (about 16 ns per ``tanhf``). In float32 :func:`tanh` is therefore a rational
function (the minimax approximation Eigen uses for ``float``, |error| < 4e-7,
exactly ±1 beyond |x| = 7.905), which vectorises, and
``σ(x) = (1 + tanh(x/2)) / 2`` (absolute error below 3e-7; values below ~1e-7
lose their relative precision). In float64 both are ``math.tanh`` and
``1 / (1 + exp(-x))``, as exact as the torch reference. The backward uses only
the saved activations (``σ' = σ(1 - σ)``, ``tanh' = 1 - tanh²``), like the
reference, so it is the exact derivative of what the forward computed up to
the approximation of ``tanh'`` (the float32 tests bound the difference).

``fastmath``: off, but for the backward's dot products. Measured at the
benchmark's sizes (hidden 64, batch 32, float32): for the forward's axpy's
and the elementwise loops, ``fastmath={"contract"}`` (fused multiply-adds) and
full ``fastmath=True`` changed the time by less than the run-to-run noise
(within 5%): with no reductions there is nothing for reassociation to unlock,
and the loops are bound by loads and stores rather than arithmetic. Without
it they round every operation as written, the same on every machine, and a
NaN or inf propagates as IEEE says (``fastmath=True`` lets LLVM assume there
are none, so it is never used). The dot products take ``reassoc`` (the
vectoriser sums in several partial sums, in an order fixed at compile time:
deterministic run to run, possibly different across CPUs) and ``contract``:
both only change rounding, at the level of a different summation order
(the float64 tests hold them to 1e-10 of the reference), and neither touches
NaN or inf.

Threads: ``prange`` over the blocks, on torch's number of threads (numba's
pool is capped to it), or on one thread for small problems (:func:`_run`).
"""
import math

import numpy as np
import torch
from numba import njit, prange, types
from numba.extending import overload

from ._backend import as_numpy, run_parallel

KIND_CODES = {"rnn": 0, "lstm": 1, "gru": 2, "cfc": 3}
RNN, LSTM, GRU, CFC = 0, 1, 2, 3

# Problems with fewer multiply-adds than this (B x T x G x H x H) run on one
# thread: waking the pool costs more.
SERIAL_BELOW = 1 << 18

_JIT = dict(cache=True, error_model="numpy")
# The backward's dot products (dots4, dots1) only: sums may be reassociated (vectorised) and
# multiply-adds fused; no assumption about NaN or inf (see the module docstring).
_DOT_MATH = {"reassoc", "contract"}


# ---------------------------------------------------------------------------
# Activations: chosen by dtype at compile time (see the module docstring).
# ---------------------------------------------------------------------------

def tanh(x):
    """``tanh`` for the kernels: a rational approximation in float32, ``math.tanh`` in float64."""
    return math.tanh(x)


def sigmoid(x):
    """``σ(x) = 1 / (1 + e^{-x})`` for the kernels (float32: ``(1 + tanh(x/2)) / 2``)."""
    return 1.0 / (1.0 + math.exp(-x))


# Eigen's float tanh (generic_fast_tanh_float): x P(x²) / Q(x²) on |x| <= 7.905...
_A = (-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11, 5.12229709037114e-08,
      1.48572235717979e-05, 6.37261928875436e-04, 4.89352455891786e-03)
_B = (1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03, 4.89352518554385e-03)
_F32 = np.float32
A13, A11, A9, A7, A5, A3, A1 = (_F32(a) for a in _A)
B6, B4, B2, B0 = (_F32(b) for b in _B)
CLAMP = _F32(7.90531110763549805)      # x P(x²) / Q(x²) rounds to exactly ±1 there


@njit(**_JIT)
def tanh_f32(x):
    """float32 tanh: Eigen's rational minimax approximation on [-7.905, 7.905], exactly ±1 outside
    (a NaN stays NaN)."""
    v = CLAMP if x > CLAMP else x
    v = -CLAMP if v < -CLAMP else v
    v2 = v * v
    p = A13
    p = p * v2 + A11
    p = p * v2 + A9
    p = p * v2 + A7
    p = p * v2 + A5
    p = p * v2 + A3
    p = p * v2 + A1
    q = B6
    q = q * v2 + B4
    q = q * v2 + B2
    q = q * v2 + B0
    return (p * v) / q


@overload(tanh, jit_options=dict(error_model="numpy"))
def _tanh_impl(x):
    if x == types.float32:
        return lambda x: tanh_f32(x)
    return lambda x: math.tanh(x)


@overload(sigmoid, jit_options=dict(error_model="numpy"))
def _sigmoid_impl(x):
    if x == types.float32:
        half = _F32(0.5)
        return lambda x: half + half * tanh_f32(half * x)
    return lambda x: 1.0 / (1.0 + math.exp(-x))


# ---------------------------------------------------------------------------
# The products of a step: p_e += Σ_{r0 <= r < r1} v_e[r] M[r, :] for the
# batch elements e of a block. Forward: M = WT (H_in, G*H), v = h_{t-1} (or the
# GRU's r ⊙ h); backward: M = W as (G*H, H_in), v = δpre, p = δh_{t-1}.
# ---------------------------------------------------------------------------

@njit(**_JIT)
def axpys1(M, r0, r1, v, p):
    """One batch element: four rows of ``M`` per pass over ``p``."""
    n = M.shape[1]
    r = r0
    while r + 4 <= r1:
        v0, v1, v2, v3 = v[r], v[r + 1], v[r + 2], v[r + 3]
        m0, m1, m2, m3 = M[r], M[r + 1], M[r + 2], M[r + 3]
        for j in range(n):
            p[j] += v0 * m0[j] + v1 * m1[j] + v2 * m2[j] + v3 * m3[j]
        r += 4
    while r < r1:
        v0 = v[r]
        m0 = M[r]
        for j in range(n):
            p[j] += v0 * m0[j]
        r += 1


@njit(**_JIT)
def axpys4(M, r0, r1, va, vb, vc, vd, pa, pb, pc, pd):
    """Four batch elements at once: each row of ``M`` is loaded once for the four (four rows per pass)."""
    n = M.shape[1]
    r = r0
    while r + 4 <= r1:
        m0, m1, m2, m3 = M[r], M[r + 1], M[r + 2], M[r + 3]
        a0, a1, a2, a3 = va[r], va[r + 1], va[r + 2], va[r + 3]
        b0, b1, b2, b3 = vb[r], vb[r + 1], vb[r + 2], vb[r + 3]
        c0, c1, c2, c3 = vc[r], vc[r + 1], vc[r + 2], vc[r + 3]
        d0, d1, d2, d3 = vd[r], vd[r + 1], vd[r + 2], vd[r + 3]
        for j in range(n):
            x0, x1, x2, x3 = m0[j], m1[j], m2[j], m3[j]
            pa[j] += a0 * x0 + a1 * x1 + a2 * x2 + a3 * x3
            pb[j] += b0 * x0 + b1 * x1 + b2 * x2 + b3 * x3
            pc[j] += c0 * x0 + c1 * x1 + c2 * x2 + c3 * x3
            pd[j] += d0 * x0 + d1 * x1 + d2 * x2 + d3 * x3
        r += 4
    while r < r1:
        m0 = M[r]
        a0, b0, c0, d0 = va[r], vb[r], vc[r], vd[r]
        for j in range(n):
            x0 = m0[j]
            pa[j] += a0 * x0
            pb[j] += b0 * x0
            pc[j] += c0 * x0
            pd[j] += d0 * x0
        r += 1


@njit(**_JIT)
def axpys(M, r0, r1, va, vb, vc, vd, pa, pb, pc, pd, nb):
    """``p_e[:n] += Σ_{r0 <= r < r1} v_e[r] M[r]`` for the first ``nb`` of the four elements e = a, b, c, d
    (n: M's columns; the rows past nb are ignored)."""
    if nb == 4:
        axpys4(M, r0, r1, va, vb, vc, vd, pa, pb, pc, pd)
        return
    axpys1(M, r0, r1, va, pa)
    if nb > 1:
        axpys1(M, r0, r1, vb, pb)
    if nb > 2:
        axpys1(M, r0, r1, vc, pc)


@njit(error_model="numpy", cache=True, fastmath=_DOT_MATH)
def dots4(MT, r0, r1, ga, gb, gc, gd, pa, pb, pc, pd):
    """``p_e[k] += Σ_{r0 <= r < r1} MT[k, r] g_e[r]`` for four elements: four rows k at a time, sixteen
    dot products whose running sums stay in registers (vectorised over r: needs reassociation)."""
    K = MT.shape[0]
    n = r1 - r0
    ga, gb, gc, gd = ga[r0:r1], gb[r0:r1], gc[r0:r1], gd[r0:r1]
    z = ga.dtype.type(0)
    k = 0
    while k + 4 <= K:
        m0, m1, m2, m3 = MT[k, r0:r1], MT[k + 1, r0:r1], MT[k + 2, r0:r1], MT[k + 3, r0:r1]
        a0 = a1 = a2 = a3 = b0 = b1 = b2 = b3 = z
        c0 = c1 = c2 = c3 = d0 = d1 = d2 = d3 = z
        for r in range(n):
            x0, x1, x2, x3 = m0[r], m1[r], m2[r], m3[r]
            ya, yb, yc, yd = ga[r], gb[r], gc[r], gd[r]
            a0 += x0 * ya
            a1 += x1 * ya
            a2 += x2 * ya
            a3 += x3 * ya
            b0 += x0 * yb
            b1 += x1 * yb
            b2 += x2 * yb
            b3 += x3 * yb
            c0 += x0 * yc
            c1 += x1 * yc
            c2 += x2 * yc
            c3 += x3 * yc
            d0 += x0 * yd
            d1 += x1 * yd
            d2 += x2 * yd
            d3 += x3 * yd
        pa[k] += a0
        pa[k + 1] += a1
        pa[k + 2] += a2
        pa[k + 3] += a3
        pb[k] += b0
        pb[k + 1] += b1
        pb[k + 2] += b2
        pb[k + 3] += b3
        pc[k] += c0
        pc[k + 1] += c1
        pc[k + 2] += c2
        pc[k + 3] += c3
        pd[k] += d0
        pd[k + 1] += d1
        pd[k + 2] += d2
        pd[k + 3] += d3
        k += 4
    while k < K:
        m0 = MT[k, r0:r1]
        a0 = b0 = c0 = d0 = z
        for r in range(n):
            x0 = m0[r]
            a0 += x0 * ga[r]
            b0 += x0 * gb[r]
            c0 += x0 * gc[r]
            d0 += x0 * gd[r]
        pa[k] += a0
        pb[k] += b0
        pc[k] += c0
        pd[k] += d0
        k += 1


@njit(error_model="numpy", cache=True, fastmath=_DOT_MATH)
def dots1(MT, r0, r1, g, p):
    """:func:`dots4` for one element."""
    K = MT.shape[0]
    n = r1 - r0
    g = g[r0:r1]
    z = g.dtype.type(0)
    k = 0
    while k + 4 <= K:
        m0, m1, m2, m3 = MT[k, r0:r1], MT[k + 1, r0:r1], MT[k + 2, r0:r1], MT[k + 3, r0:r1]
        a0 = a1 = a2 = a3 = z
        for r in range(n):
            y = g[r]
            a0 += m0[r] * y
            a1 += m1[r] * y
            a2 += m2[r] * y
            a3 += m3[r] * y
        p[k] += a0
        p[k + 1] += a1
        p[k + 2] += a2
        p[k + 3] += a3
        k += 4
    while k < K:
        m0 = MT[k, r0:r1]
        a0 = z
        for r in range(n):
            a0 += m0[r] * g[r]
        p[k] += a0
        k += 1


@njit(**_JIT)
def dots(MT, r0, r1, ga, gb, gc, gd, pa, pb, pc, pd, nb):
    """``p_e[k] += Σ_{r0 <= r < r1} MT[k, r] g_e[r]`` for the first ``nb`` of the four elements."""
    if nb == 4:
        dots4(MT, r0, r1, ga, gb, gc, gd, pa, pb, pc, pd)
        return
    dots1(MT, r0, r1, ga, pa)
    if nb > 1:
        dots1(MT, r0, r1, gb, pb)
    if nb > 2:
        dots1(MT, r0, r1, gc, pc)


# ---------------------------------------------------------------------------
# Whole sequences for a block of nb <= 4 batch elements b0 .. b0 + nb - 1.
# xp, acts, g_pre: (B, T, G*H); hs, cs, g_hs, g_cs: (B, T, H); h0, c0: (B, H).
# Arrays a kind does not use (cs, c0, g_cs, g_c0 but for the LSTM) are stand-ins
# of the right type, never read or written. A gate's slice of a step's row is
# taken as a view (a[H:2 * H]) and indexed from 0.
# ---------------------------------------------------------------------------

@njit(**_JIT)
def forward_block(kind, xp, WT, WTn, h0, c0, hs, cs, acts, u, b0, nb):
    """Forward through all steps; ``u`` ``(4, H)``: scratch (the GRU's ``r ⊙ h``).

    Each step's pre-activations are built in ``acts[b, t]`` (the drive ``xp``, then
    ``+= W h``) and replaced there by the activations. For the GRU, ``WT`` holds
    the r and z columns and ``WTn`` the n columns."""
    T = xp.shape[1]
    H = h0.shape[1]
    GH = xp.shape[2]
    one = xp.dtype.type(1)
    last = nb - 1
    b1, b2, b3 = b0 + min(1, last), b0 + min(2, last), b0 + min(3, last)   # (repeats past nb: unused)
    for t in range(T):
        for e in range(nb):
            a = acts[b0 + e, t]
            x = xp[b0 + e, t]
            for j in range(GH):
                a[j] = x[j]
        if t == 0:
            ha, hb, hc, hd = h0[b0], h0[b1], h0[b2], h0[b3]
        else:
            ha, hb, hc, hd = hs[b0, t - 1], hs[b1, t - 1], hs[b2, t - 1], hs[b3, t - 1]
        pa, pb, pc, pd = acts[b0, t], acts[b1, t], acts[b2, t], acts[b3, t]
        axpys(WT, 0, H, ha, hb, hc, hd, pa, pb, pc, pd, nb)         # + W h (GRU: r and z only)
        if kind == GRU:
            for e in range(nb):
                a, h, ue = acts[b0 + e, t], hs[b0 + e, t - 1] if t > 0 else h0[b0 + e], u[e]
                for j in range(2 * H):
                    a[j] = sigmoid(a[j])
                for k in range(H):
                    ue[k] = a[k] * h[k]
            n2 = 2 * H
            axpys(WTn, 0, H, u[0], u[1], u[2], u[3], pa[n2:], pb[n2:], pc[n2:], pd[n2:], nb)   # n: + W_n (r ⊙ h)
            for e in range(nb):
                a, hn = acts[b0 + e, t], hs[b0 + e, t]
                h = hs[b0 + e, t - 1] if t > 0 else h0[b0 + e]
                az, an = a[H:2 * H], a[2 * H:]
                for j in range(H):
                    an[j] = tanh(an[j])
                for j in range(H):
                    z = az[j]
                    hn[j] = (one - z) * an[j] + z * h[j]
            continue
        for e in range(nb):
            a, hn = acts[b0 + e, t], hs[b0 + e, t]
            if kind == RNN:
                for j in range(H):
                    y = tanh(a[j])
                    a[j] = y
                    hn[j] = y
            elif kind == LSTM:
                c = c0[b0 + e] if t == 0 else cs[b0 + e, t - 1]
                cn = cs[b0 + e, t]
                ai, af, ag, ao = a[:H], a[H:2 * H], a[2 * H:3 * H], a[3 * H:]
                for j in range(2 * H):
                    a[j] = sigmoid(a[j])
                for j in range(H):
                    ag[j] = tanh(ag[j])
                for j in range(H):
                    ao[j] = sigmoid(ao[j])
                for j in range(H):
                    cn[j] = af[j] * c[j] + ai[j] * ag[j]
                for j in range(H):
                    hn[j] = ao[j] * tanh(cn[j])
            else:
                af, ag, ak = a[:H], a[H:2 * H], a[2 * H:]
                for j in range(H):
                    af[j] = sigmoid(af[j])
                for j in range(2 * H):
                    ag[j] = tanh(ag[j])                             # g and h (contiguous)
                for j in range(H):
                    f = af[j]
                    hn[j] = f * ag[j] + (one - f) * ak[j]


@njit(**_JIT)
def backward_block(kind, WT, h0, c0, hs, cs, acts, g_hs, g_cs, has_gcs, g_pre, g_h0, g_c0, S, b0, nb):
    """Backward through all steps; writes ``g_pre``, ``g_h0`` and (LSTM) ``g_c0`` of the block.

    ``S`` ``(4, 4, H)``: scratch, per element ∂L/∂h_t, the next one (∂L/∂h_{t-1}),
    ∂L/∂c_t and the GRU's ∂L/∂(r ⊙ h)."""
    T = acts.shape[1]
    H = h0.shape[1]
    GH = acts.shape[2]
    zero = acts.dtype.type(0)
    one = acts.dtype.type(1)
    last = nb - 1
    b1, b2, b3 = b0 + min(1, last), b0 + min(2, last), b0 + min(3, last)   # (repeats past nb: unused)
    for e in range(4):
        for j in range(H):
            S[e, 0, j] = zero
            S[e, 2, j] = zero
    cur = 0                             # S[e, cur]: ∂L/∂h_t; S[e, 1 - cur]: ∂L/∂h_{t-1}, accumulated
    for t in range(T - 1, -1, -1):
        nxt = 1 - cur
        for e in range(nb):
            b = b0 + e
            dh, dn, dc, drh, gp = S[e, cur], S[e, nxt], S[e, 2], S[e, 3], g_pre[b, t]
            g = g_hs[b, t]
            for j in range(H):
                dh[j] += g[j]
            for j in range(H):
                dn[j] = zero
            if has_gcs:
                g = g_cs[b, t]
                for j in range(H):
                    dc[j] += g[j]
            a = acts[b, t]
            if kind == RNN:
                for j in range(H):
                    y = a[j]
                    gp[j] = dh[j] * (one - y * y)
            elif kind == LSTM:
                c = c0[b] if t == 0 else cs[b, t - 1]
                cn = cs[b, t]
                ai, af, ag, ao = a[:H], a[H:2 * H], a[2 * H:3 * H], a[3 * H:]
                gi, gf, gg, go = gp[:H], gp[H:2 * H], gp[2 * H:3 * H], gp[3 * H:]
                for j in range(H):
                    go[j] = tanh(cn[j])                             # τ = tanh(c_t), for now
                for j in range(H):
                    tc = go[j]
                    dc[j] += dh[j] * ao[j] * (one - tc * tc)
                for j in range(H):
                    o = ao[j]
                    go[j] = dh[j] * go[j] * o * (one - o)
                for j in range(H):
                    i = ai[j]
                    gi[j] = dc[j] * ag[j] * i * (one - i)
                for j in range(H):
                    g_ = ag[j]
                    gg[j] = dc[j] * ai[j] * (one - g_ * g_)
                for j in range(H):
                    f = af[j]
                    gf[j] = dc[j] * c[j] * f * (one - f)
                for j in range(H):
                    dc[j] *= af[j]
            elif kind == GRU:
                az, an, gn = a[H:2 * H], a[2 * H:], gp[2 * H:]
                for j in range(H):
                    n = an[j]
                    gn[j] = dh[j] * (one - az[j]) * (one - n * n)
                for j in range(H):
                    drh[j] = zero
            else:
                af, ag, ak = a[:H], a[H:2 * H], a[2 * H:]
                gf, gg, gk = gp[:H], gp[H:2 * H], gp[2 * H:]
                for j in range(H):
                    f = af[j]
                    gf[j] = dh[j] * (ag[j] - ak[j]) * f * (one - f)
                for j in range(H):
                    g_ = ag[j]
                    gg[j] = dh[j] * af[j] * (one - g_ * g_)
                for j in range(H):
                    k = ak[j]
                    gk[j] = dh[j] * (one - af[j]) * (one - k * k)
        ga, gb, gc, gd = g_pre[b0, t], g_pre[b1, t], g_pre[b2, t], g_pre[b3, t]
        if kind == GRU:
            dots(WT, 2 * H, 3 * H, ga, gb, gc, gd, S[0, 3], S[1, 3], S[2, 3], S[3, 3], nb)   # W_nᵀ δpre_n
            for e in range(nb):
                b = b0 + e
                dh, dn, drh, gp, a = S[e, cur], S[e, nxt], S[e, 3], g_pre[b, t], acts[b, t]
                h = h0[b] if t == 0 else hs[b, t - 1]
                ar, az, an = a[:H], a[H:2 * H], a[2 * H:]
                gr, gz = gp[:H], gp[H:2 * H]
                for j in range(H):
                    r = ar[j]
                    gr[j] = drh[j] * h[j] * r * (one - r)
                for j in range(H):
                    z = az[j]
                    gz[j] = dh[j] * (h[j] - an[j]) * z * (one - z)
                for j in range(H):
                    dn[j] = dh[j] * az[j] + drh[j] * ar[j]
        r1 = 2 * H if kind == GRU else GH                           # δh_{t-1} += Σ_g W[g]ᵀ δpre_g
        dots(WT, 0, r1, ga, gb, gc, gd, S[0, nxt], S[1, nxt], S[2, nxt], S[3, nxt], nb)
        cur = nxt
    for e in range(nb):
        b = b0 + e
        dh, dc = S[e, cur], S[e, 2]
        for j in range(H):
            g_h0[b, j] = dh[j]
        if kind == LSTM:
            for j in range(H):
                g_c0[b, j] = dc[j]


# ---------------------------------------------------------------------------
# Parallel kernels: prange over blocks of four batch elements.
# ---------------------------------------------------------------------------

@njit(parallel=True, **_JIT)
def forward_kernel(kind, xp, WT, WTn, h0, c0, hs, cs, acts):
    """``xp``, ``acts`` ``(B, T, G*H)``; ``WT`` ``(H, G*H)`` (GRU: ``(H, 2H)`` and ``WTn`` ``(H, H)``);
    ``hs``, ``cs`` ``(B, T, H)``."""
    B = xp.shape[0]
    H = h0.shape[1]
    for blk in prange((B + 3) // 4):
        b0 = 4 * blk
        u = np.empty((4, H), dtype=xp.dtype)
        forward_block(kind, xp, WT, WTn, h0, c0, hs, cs, acts, u, b0, min(4, B - b0))


@njit(parallel=True, **_JIT)
def backward_kernel(kind, WT, h0, c0, hs, cs, acts, g_hs, g_cs, has_gcs, g_pre, g_h0, g_c0):
    """``WT`` ``(H, G*H)`` as in :func:`forward_kernel`; ``g_pre`` ``(B, T, G*H)``."""
    B = acts.shape[0]
    H = h0.shape[1]
    for blk in prange((B + 3) // 4):
        b0 = 4 * blk
        S = np.empty((4, 4, H), dtype=acts.dtype)
        backward_block(kind, WT, h0, c0, hs, cs, acts, g_hs, g_cs, has_gcs, g_pre, g_h0, g_c0, S, b0,
                       min(4, B - b0))


# ---------------------------------------------------------------------------
# Torch wrappers (the backend interface of :mod:`.cells_torch`).
# ---------------------------------------------------------------------------

_np = as_numpy


def _run(kernel, work, B, *args):
    run_parallel(kernel, work, B, SERIAL_BELOW, *args)


def forward(kind, xp, W, h0, c0):
    B, T, G, H = xp.shape
    WT = W.detach().permute(2, 0, 1).reshape(H, G * H)
    if kind == "gru":
        WT, WTn = WT[:, :2 * H].contiguous(), WT[:, 2 * H:].contiguous()
    else:
        WT = WTn = WT.contiguous()
    hs = torch.empty(B, T, H, dtype=xp.dtype)
    cs = torch.empty(B, T, H, dtype=xp.dtype) if kind == "lstm" else None
    acts = torch.empty(B, T, G, H, dtype=xp.dtype)
    lstm = kind == "lstm"
    _run(forward_kernel, B * T * G * H * H, B, KIND_CODES[kind], _np(xp).reshape(B, T, G * H), _np(WT), _np(WTn),
         _np(h0), _np(c0 if lstm else h0), _np(hs), _np(cs if lstm else hs), _np(acts).reshape(B, T, G * H))
    return hs, cs, acts


def backward(kind, W, h0, c0, hs, cs, acts, g_hs, g_cs):
    B, T, G, H = acts.shape
    lstm = kind == "lstm"
    g_pre = torch.empty(B, T, G, H, dtype=acts.dtype)
    g_h0 = torch.empty(B, H, dtype=acts.dtype)
    g_c0 = torch.empty(B, H, dtype=acts.dtype) if lstm else None
    has_gcs = lstm and g_cs is not None
    WT = W.detach().permute(2, 0, 1).reshape(H, G * H).contiguous()
    _run(backward_kernel, 2 * B * T * G * H * H, B, KIND_CODES[kind], _np(WT), _np(h0),
         _np(c0 if lstm else h0), _np(hs), _np(cs if lstm else hs), _np(acts).reshape(B, T, G * H), _np(g_hs),
         _np(g_cs if has_gcs else g_hs), has_gcs, _np(g_pre).reshape(B, T, G * H), _np(g_h0),
         _np(g_c0 if lstm else g_h0))
    return g_pre, g_h0, g_c0
