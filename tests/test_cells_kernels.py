"""The CPU kernels of ``recurrent_cell`` (``backend="cpu"``) against autograd through the readable
reference ``recurrent_cell_ref``, gradcheck of the op, the float32 activations, and the op's input checks.

The CUDA kernels are tested in ``tests/cudasim`` (numba's simulator, separate process), compiled for
real GPUs in ``tests/test_ptx.py`` and run on a GPU by ``tests/gpu/test_cells_gpu.py``.

Tolerances: float64 kernels round differently from the reference only in the order of their sums
(1e-10, scaled by the reference's largest value). float32 kernels use a rational tanh (|error| < 4e-7)
and σ(x) = (1 + tanh(x/2)) / 2 (see :mod:`rnnlab.kernels.cells_cpu`); they are compared with the
float64 reference on the same inputs, at 1e-4 of the reference's scale: states are bounded by 1
and errors of a few float32 ulps per step stay far below that over these lengths.
"""
import importlib

import numpy as np
import pytest
import torch

from kernel_cases import F64, assert_close_scaled, backends, cell_case, check_cells_backend
from rnnlab.kernels import cells_cpu, recurrent_cell, recurrent_cell_ref
from rnnlab.kernels.cells_torch import GATES, KINDS

# Relative to the reference's largest value (see the module docstring).
TOL = {torch.float32: 1e-4, torch.float64: 1e-10}
# (B, T, H): single steps, batches and units; B = 5 and 9 give a block of four plus a remainder;
# H = 13 and 37 are multiples of nothing the vectoriser uses.
SHAPES = [(1, 1, 1), (2, 1, 5), (1, 7, 3), (5, 6, 13), (9, 5, 37)]


def _inputs(kind, B, T, H, seed, dtype=F64):
    xp, W, h0, c0, w_h, w_c = cell_case(kind, B, T, H, seed, dtype)
    return [xp, W, h0, c0], (w_h, w_c)


def _values_and_grads(fn, kind, args, weights, use_cs=True):
    """``(hs, cs, ∂L/∂xp, ∂L/∂W, ∂L/∂h0, ∂L/∂c0)`` for L = Σ w_h ⊙ hs (+ Σ w_c ⊙ cs, LSTM)."""
    req = [None if x is None else x.detach().clone().requires_grad_() for x in args]
    hs, cs = fn(kind, *req)
    loss = (hs * weights[0]).sum()
    if kind == "lstm" and use_cs:
        loss = loss + (cs * weights[1]).sum()
    inputs = [x for x in req if x is not None]
    grads = list(torch.autograd.grad(loss, inputs))
    if kind != "lstm":
        grads.append(None)
    return [hs.detach(), None if cs is None else cs.detach()] + grads


NAMES = ("hs", "cs", "grad xp", "grad W", "grad h0", "grad c0")


def _compare(kind, B, T, H, dtype, seed, use_cs=True, backend="cpu"):
    args, weights = _inputs(kind, B, T, H, seed, dtype)

    def op(kind, xp, W, h0, c0):
        return recurrent_cell(kind, xp, W, h0, c0, backend=backend)

    got = _values_and_grads(op, kind, args, weights, use_cs)
    ref_args = [None if x is None else x.to(F64) for x in args]
    ref = _values_and_grads(recurrent_cell_ref, kind, ref_args, [w.to(F64) for w in weights], use_cs)
    for name, x, y in zip(NAMES, got, ref):
        if y is None:
            assert x is None, f"{name}: expected None for kind={kind!r}"
            continue
        assert x.dtype == dtype, f"{name}: dtype {x.dtype}"
        assert_close_scaled(x, y, dtype, f"{backend} {kind} {dtype} (B, T, H)={(B, T, H)} {name}", TOL[dtype])


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("kind", KINDS)
def test_backend_matches_autograd_through_reference(kind, dtype, backend):
    for i, (B, T, H) in enumerate(SHAPES):
        _compare(kind, B, T, H, dtype, seed=100 * i + len(kind), backend=backend)


def test_lstm_loss_on_hs_only():
    """The op's backward gets no ∂L/∂cs (None) when the loss does not use the cell states."""
    for dtype in (F64, torch.float32):
        _compare("lstm", 5, 4, 6, dtype, seed=7, use_cs=False)


@pytest.mark.parametrize("kind", KINDS)
def test_parallel_path(kind):
    """Big enough for the thread pool (``SERIAL_BELOW``), with several blocks of four and a remainder."""
    B, T, H = 10, 12, 48
    assert B * T * GATES[kind] * H * H >= cells_cpu.SERIAL_BELOW
    _compare(kind, B, T, H, F64, seed=3)


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("kind", KINDS)
def test_kernel_interface_matches_torch_backend(kind, backend):
    """The backend module's ``forward/backward`` against ``cells_torch.forward/backward`` (the backend
    interface), in float64 to 1e-12, on the simulator tests' shapes and one with a block of four."""
    module = importlib.import_module(f"rnnlab.kernels.cells_{backend}")
    check_cells_backend(module, kind, F64, [(6, 5, 7), (2, 3, 5), (1, 2, 4), (1, 1, 1)],
                        tol=dict(rtol=1e-12, atol=1e-12))


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("kind", KINDS)
def test_gradcheck(kind, backend):
    (xp, W, h0, c0), _ = _inputs(kind, 2, 3, 3, seed=5)
    args = [x.requires_grad_() for x in (xp, W, h0, c0) if x is not None]

    def fn(*a):
        hs, cs = recurrent_cell(kind, *a, backend=backend)
        return (hs, cs) if kind == "lstm" else hs

    assert torch.autograd.gradcheck(fn, args, eps=1e-6, atol=1e-8, rtol=1e-6)


def test_noncontiguous_inputs():
    (xp, W, h0, c0), _ = _inputs("lstm", 3, 4, 5, seed=9)
    xp_t = xp.transpose(0, 1).contiguous().transpose(0, 1)             # a strided view, same values
    W_t = W.transpose(1, 2).contiguous().transpose(1, 2)
    assert not xp_t.is_contiguous() and not W_t.is_contiguous()
    got = recurrent_cell("lstm", xp_t, W_t, h0, c0, backend="cpu")
    ref = recurrent_cell("lstm", xp, W, h0, c0, backend="cpu")
    for x, y in zip(got, ref):
        torch.testing.assert_close(x, y, rtol=0, atol=0)


def _jit_map(fn, x):
    return np.array([fn(np.float32(v)) for v in x], dtype=np.float64)


def test_float32_activations():
    """The float32 tanh and σ of the kernels, on a fine grid and far out, against double precision."""
    x = np.concatenate([np.linspace(-12, 12, 4001), [-1e30, -100.0, -9.0, -7.9, 0.0, 1e-8, 7.9, 9.0, 100.0, 1e30]])
    x = x.astype(np.float32)
    exact = np.tanh(x.astype(np.float64))
    tanh = _jit_map(cells_cpu.tanh_f32, x)
    assert np.abs(tanh - exact).max() < 4e-7
    assert tanh[x >= 7.95].min() == 1.0 and tanh[x <= -7.95].max() == -1.0
    assert np.isnan(cells_cpu.tanh_f32(np.float32("nan")))
    import numba

    @numba.njit
    def sig(v):
        return cells_cpu.sigmoid(v)

    sigma = _jit_map(sig, x)
    exact_sigma = 0.5 * (1.0 + np.tanh(0.5 * x.astype(np.float64)))                  # (no overflow)
    assert np.abs(sigma - exact_sigma).max() < 3e-7
    assert sigma.min() >= 0.0 and sigma.max() <= 1.0
    assert np.isnan(sig(np.float32("nan"))) and np.isnan(sig(np.float64("nan")))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
def test_nan_propagates(dtype):
    for kind in KINDS:
        xp, W, h0, c0 = _good(kind, dtype=dtype)
        xp[0, 1, 0, 2] = float("nan")
        hs, _ = recurrent_cell(kind, xp, W, h0, c0, backend="cpu")
        assert torch.isnan(hs[0, 1, 2]) and torch.isnan(hs[0, 2:]).all() and torch.isfinite(hs[1]).all()


# ---------------------------------------------------------------- input checks

def _good(kind="lstm", B=2, T=3, H=4, dtype=F64):
    (xp, W, h0, c0), _ = _inputs(kind, B, T, H, seed=1, dtype=dtype)
    return xp, W, h0, c0


@pytest.mark.parametrize("bad, error, match", [
    (dict(kind="transformer"), ValueError, "kind must be one of"),
    (dict(kind=None), ValueError, "kind must be one of"),
    (dict(xp=torch.zeros(2, 3, 4 * 4)), ValueError, "xp must have shape"),
    (dict(xp=torch.zeros(2, 3, 3, 4, dtype=F64)), ValueError, "xp must have shape"),
    (dict(xp=torch.zeros(2, 0, 4, 4, dtype=F64)), ValueError, "xp must have B, T, H >= 1"),
    (dict(W=torch.zeros(4, 4, 5, dtype=F64)), ValueError, "W must have shape"),
    (dict(W=torch.zeros(3, 4, 4, dtype=F64)), ValueError, "W must have shape"),
    (dict(h0=torch.zeros(3, 4, dtype=F64)), ValueError, "h0 must have shape"),
    (dict(c0=torch.zeros(2, 5, dtype=F64)), ValueError, "c0 must have shape"),
    (dict(c0=None), ValueError, "needs the initial cell state c0"),
    (dict(W=torch.zeros(4, 4, 4, dtype=torch.float32)), TypeError, "W has dtype"),
    (dict(h0=torch.zeros(2, 4, dtype=torch.float32)), TypeError, "h0 has dtype"),
    (dict(c0=torch.zeros(2, 4, dtype=torch.float32)), TypeError, "c0 has dtype"),
    (dict(xp=torch.zeros(2, 3, 4, 4, dtype=torch.float16)), TypeError, "float32 or float64"),
    (dict(W=[[0.0]]), TypeError, "W must be a torch.Tensor"),
    (dict(backend="gpu"), ValueError, "backend must be one of"),
], ids=lambda v: str(v)[:40] if isinstance(v, dict) else None)
def test_input_errors(bad, error, match):
    xp, W, h0, c0 = _good()
    args = dict(kind="lstm", xp=xp, W=W, h0=h0, c0=c0, backend="cpu")
    args.update(bad)
    with pytest.raises(error, match=match):
        recurrent_cell(args["kind"], args["xp"], args["W"], args["h0"], args["c0"], backend=args["backend"])


def test_c0_given_for_a_cell_without_one():
    xp, W, h0, _ = _good("gru")
    with pytest.raises(ValueError, match="c0 is the LSTM's cell state; kind='gru' has none"):
        recurrent_cell("gru", xp, W, h0, torch.zeros_like(h0), backend="cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present: backend='cuda' can run")
def test_cuda_backend_without_cuda(monkeypatch):
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    xp, W, h0, c0 = _good()
    with pytest.raises(ValueError, match="backend='cuda' needs CUDA tensors"):
        recurrent_cell("lstm", xp, W, h0, c0, backend="cuda")


def test_auto_backend_is_the_cpu_kernel_for_cpu_tensors():
    xp, W, h0, c0 = _good()
    auto = recurrent_cell("lstm", xp, W, h0, c0)
    cpu = recurrent_cell("lstm", xp, W, h0, c0, backend="cpu")
    for x, y in zip(auto, cpu):
        torch.testing.assert_close(x, y, rtol=0, atol=0)
