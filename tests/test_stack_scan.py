"""Tests of ``modal_stack_scan``: the reference loop against the composition
of linear scans the book explains first, the CPU kernel and the torch
backend against autograd through the reference loop, gradcheck, errors.

The CUDA kernels are tested in ``tests/cudasim`` (numba's simulator,
separate process) and compiled for real GPUs in ``tests/test_ptx.py``.
"""
import importlib

import pytest
import torch
from hypothesis import given, settings, strategies as st

from kernel_cases import DTYPES, SINGLE, TOL, WIDE, backends, check_stack_scan_backend, randn, stack_case
from rnnlab.kernels import linear_scan, linear_scan_ref, modal_stack_scan, modal_stack_scan_ref
from rnnlab.kernels import stack_scan_cpu, stack_scan_torch
from rnnlab.models.ldstack import modal_transitions, squash_factor


def _make(B, T, C, dtype, gen, with_h0=True, max_mag=0.98):
    """λ with |λ| < max_mag, a drive large enough that α is far from 1, h0 (or None)."""
    return stack_case(B, T, C, 1, dtype, gen, with_h0, max_mag)[:3]


def _composition(lam, b, depth, h0=None):
    """Every layer as one linear scan whose coefficients a_t = α_t λ come from
    the layer below (how rnnlab.models.LDStack computed the stack before)."""
    layers, a = [], lam
    for i in range(depth):
        s = linear_scan_ref(a, b, h0)
        layers.append(s)
        if b.is_complex():
            a = modal_transitions(s, lam, h0)
        else:
            prev = torch.cat([(torch.zeros_like(b[:, 0]) if h0 is None else h0).unsqueeze(1), s[:, :-1]], 1)
            a = squash_factor(lam * prev) * lam
    return layers


# ---------------------------------------------------------------------------
# The reference loop is the stack of the book.
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("depth", [1, 2, 3, 5])
@pytest.mark.parametrize("with_h0", [False, True])
def test_reference_matches_composition_of_linear_scans(dtype, depth, with_h0):
    gen = torch.Generator().manual_seed(depth)
    lam, b, h0 = _make(3, 11, 6, dtype, gen, with_h0)
    got = modal_stack_scan_ref(lam, b, depth, h0, return_layers=True)
    expected = _composition(lam, b, depth, h0)
    assert len(got) == depth
    for s, e in zip(got, expected):
        torch.testing.assert_close(s, e, **TOL[dtype])
    torch.testing.assert_close(modal_stack_scan_ref(lam, b, depth, h0), expected[-1], **TOL[dtype])


def test_reference_corrections_bite():
    """With a drive of order 1 the layers differ (α is far from 1)."""
    lam, b, _ = _make(2, 8, 5, torch.complex128, torch.Generator().manual_seed(0), max_mag=1.0)
    layers = modal_stack_scan_ref(lam, b, 3, return_layers=True)
    assert (layers[0] - layers[1]).abs().max() > 0.1
    assert (layers[1] - layers[2]).abs().max() > 1e-3


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("with_h0", [False, True])
def test_depth_one_is_linear_scan(backend, dtype, with_h0):
    lam, b, h0 = _make(2, 9, 19, dtype, torch.Generator().manual_seed(1), with_h0)
    torch.testing.assert_close(modal_stack_scan(lam, b, 1, h0, backend=backend),
                               linear_scan(lam, b, h0, backend=backend), **TOL[dtype])


# ---------------------------------------------------------------------------
# gradcheck: the hand-written backward passes of every backend that runs here.
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize("with_h0", [False, True])
@pytest.mark.parametrize("return_layers", [False, True])
def test_gradcheck(backend, dtype, depth, with_h0, return_layers):
    gen = torch.Generator().manual_seed(depth)
    lam, b, h0 = _make(2, 4, 3, dtype, gen, with_h0, max_mag=1.2)
    inputs = [x.requires_grad_() if x is not None else None for x in (lam, b, h0)]

    def f(lam, b, h0):
        out = modal_stack_scan(lam, b, depth, h0, backend=backend, return_layers=return_layers)
        return tuple(out) if return_layers else out

    assert torch.autograd.gradcheck(f, inputs)


# ---------------------------------------------------------------------------
# Property tests: every backend that runs here agrees with the reference
# loop and autograd through it on random shapes.
# ---------------------------------------------------------------------------

cases = st.fixed_dictionaries(dict(
    B=st.integers(1, 4),
    T=st.integers(1, 40),       # > FLUSH_STEPS: the CPU kernel's partial sums are flushed
    C=st.integers(1, 40),       # not multiples of 16 included
    depth=st.integers(1, 5),
    dtype=st.sampled_from(DTYPES),
    with_h0=st.booleans(),
    return_layers=st.booleans(),
    transposed=st.booleans(),   # b given as a non-contiguous view
    seed=st.integers(0, 2**31 - 1),
))


def _inputs(case):
    lam, b, h0 = _make(case["B"], case["T"], case["C"], case["dtype"],
                       torch.Generator().manual_seed(case["seed"]), case["with_h0"])
    if case["transposed"]:
        b = b.transpose(1, 2).contiguous().transpose(1, 2)
    return [x.detach().requires_grad_() if x is not None else None for x in (lam, b, h0)]


def _run(fn, case, upcast=False):
    """Outputs and the gradients of a random linear function of them; ``upcast``: the same
    single-precision inputs and weights, computed in double precision (the truth they are judged by)."""
    lam, b, h0 = _inputs(case)
    if upcast:
        lam, b, h0 = (None if x is None else x.detach().to(WIDE[x.dtype]).requires_grad_() for x in (lam, b, h0))
    out = fn(lam, b, h0)
    outs = out if isinstance(out, list) else [out]
    gen = torch.Generator().manual_seed(case["seed"] + 1)
    loss = 0
    for s in outs:
        w = torch.randn(s.shape, dtype=case["dtype"], generator=gen).to(s.dtype)
        loss = loss + ((s * w).real.sum() if s.is_complex() else (s * w).sum())
    loss.backward()
    return [s.detach() for s in outs], [x.grad if x is not None else None for x in (lam, b, h0)]


def _assert_as_accurate(x, ref, truth, tol, what):
    """x agrees with the reference ``ref`` within ``tol``; in single precision, where two
    different orders of rounding may disagree by more than that on sums that cancel, x may
    instead be about as close to the double-precision ``truth`` as the reference is (within 2x plus
    1e-6 of the largest value: a few float32 roundings)."""
    try:
        torch.testing.assert_close(x, ref, **tol)
        return
    except AssertionError:
        if truth is None:
            raise
    err_x = (x.to(truth.dtype) - truth).abs().max().item()
    err_ref = (ref.to(truth.dtype) - truth).abs().max().item()
    scale = truth.abs().max().item()
    assert err_x <= 2 * err_ref + 1e-6 * scale, (f"{what}: differs from the single-precision reference beyond {tol} and is less "
                                  f"accurate: max error against double precision {err_x:.3g} vs the reference's "
                                  f"{err_ref:.3g}")


# Single-precision gradients of the shared lambda are sums over B*T terms that can cancel:
# the kernel and the reference round in different orders and may differ by more than
# rtol 1e-4 (a random float32 case: 2.2e-4). Such a case passes when the kernel is at
# least as close to the double-precision truth as the reference is (_assert_as_accurate).
@pytest.mark.parametrize("backend", backends())
@settings(max_examples=60, deadline=None, derandomize=True)
@given(case=cases)
def test_backends_match_autograd_through_reference(backend, case):
    depth, rl, tol = case["depth"], case["return_layers"], TOL[case["dtype"]]

    def reference(lam, b, h0):
        return modal_stack_scan_ref(lam, b, depth, h0, return_layers=rl)

    ref_out, ref_grads = _run(reference, case)
    truth_grads = _run(reference, case, upcast=True)[1] if case["dtype"] in SINGLE else [None] * 3
    out, grads = _run(lambda lam, b, h0: modal_stack_scan(lam, b, depth, h0, backend=backend,
                                                          return_layers=rl), case)
    assert len(out) == len(ref_out)
    for x, y in zip(out, ref_out):
        assert x.shape == y.shape and x.dtype == y.dtype
        torch.testing.assert_close(x, y, **tol)
    for name, x, y, t in zip(("lam", "b", "h0"), grads, ref_grads, truth_grads):
        if y is None:
            assert x is None, name
        else:
            assert x.shape == y.shape and x.dtype == y.dtype, name
            _assert_as_accurate(x, y, t, tol, f"{backend} grad {name}")


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("depth", [1, 3])
def test_backend_interface_matches_torch_backend(backend, dtype, depth):
    """The backend module's ``forward``/``backward`` against ``stack_scan_torch``'s, on the shapes
    the simulator and GPU tests use (with and without ``h0`` and the inner layers' gradients)."""
    module = importlib.import_module(f"rnnlab.kernels.stack_scan_{backend}")
    check_stack_scan_backend(module, dtype, depth, [(2, 5, 5), (1, 1, 1)])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("block", [16, 32])
def test_cpu_kernel_channel_blocks_match_torch_backend(dtype, block):
    """Every way of splitting the channels into jobs gives the torch backend's results,
    with and without gradients of the inner layers; T = 40 > FLUSH_STEPS."""
    gen = torch.Generator().manual_seed(3)
    B, T, C, depth = 2, 40, 37, 3
    lam, b, h0 = _make(B, T, C, dtype, gen)
    last, inner = stack_scan_torch.forward(lam, b, depth, h0)
    got_last, got_inner = torch.empty_like(last), torch.empty_like(inner)
    lam2 = stack_scan_torch.abs2(lam)
    stack_scan_cpu.forward_kernel(lam.numpy(), lam2.numpy(), b.numpy(), h0.numpy(), depth, block,
                                  got_last.numpy(), got_inner.numpy())
    torch.testing.assert_close(got_last, last, **TOL[dtype])
    torch.testing.assert_close(got_inner, inner, **TOL[dtype])
    g_last, g_inner = randn(last.shape, dtype, gen), randn(inner.shape, dtype, gen)
    for gi in (None, g_inner):
        ref = stack_scan_torch.backward(lam, last, inner, h0, g_last, gi)
        got = stack_scan_cpu.backward(lam, last, inner, h0, g_last, gi)
        for name, x, y in zip(("grad_lam", "grad_b", "grad_h0"), got, ref):
            torch.testing.assert_close(x, y, **TOL[dtype], msg=lambda m: f"{name}: {m}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex64, torch.complex128])
@pytest.mark.parametrize("B, T, C", [(1, 60, 333), (5, 40, 128)])
def test_parallel_path(dtype, B, T, C):
    """Problems whose k layers hold more than SERIAL_BELOW elements run on
    every thread (B = 1: split channels)."""
    assert stack_scan_cpu._work(B, T, C, 4) == (B, 4 * T, C)
    assert B * 4 * T * C >= stack_scan_cpu.SERIAL_BELOW
    case = dict(B=B, T=T, C=C, depth=4, dtype=dtype, with_h0=True, return_layers=False, transposed=False, seed=5)
    out, grads = _run(lambda lam, b, h0: modal_stack_scan(lam, b, 4, h0, backend="cpu"), case)
    ref_out, ref_grads = _run(lambda lam, b, h0: modal_stack_scan(lam, b, 4, h0, backend="torch"), case)
    torch.testing.assert_close(out[0], ref_out[0], **TOL[dtype])
    for x, y in zip(grads, ref_grads):
        torch.testing.assert_close(x, y, **TOL[dtype])


# ---------------------------------------------------------------------------
# Details of the autograd Function.
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("backend", backends())
def test_gradient_of_an_inner_layer_only(backend):
    """A loss on layer 1 only: layer k receives no gradient (None inside autograd)."""
    lam, b, h0 = _make(2, 6, 5, torch.complex128, torch.Generator().manual_seed(6))
    lam.requires_grad_()
    b.requires_grad_()
    layers = modal_stack_scan(lam, b, 3, h0, backend=backend, return_layers=True)
    gl, gb = torch.autograd.grad(layers[1].abs().sum(), (lam, b))
    lam_r, b_r = lam.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    ref = modal_stack_scan_ref(lam_r, b_r, 3, h0, return_layers=True)
    gl_r, gb_r = torch.autograd.grad(ref[1].abs().sum(), (lam_r, b_r))
    torch.testing.assert_close(gl, gl_r)
    torch.testing.assert_close(gb, gb_r)


def test_grad_only_for_inputs_that_require_it():
    lam, b, h0 = _make(2, 5, 3, torch.float64, torch.Generator().manual_seed(4))
    b.requires_grad_()
    modal_stack_scan(lam, b, 2, h0, backend="cpu").sum().backward()
    assert b.grad is not None and lam.grad is None and h0.grad is None


def test_return_layers_shapes_and_auto_backend():
    lam, b, h0 = _make(3, 7, 5, torch.complex64, torch.Generator().manual_seed(7))
    layers = modal_stack_scan(lam, b, 4, h0, return_layers=True)
    assert isinstance(layers, list) and len(layers) == 4
    assert all(s.shape == (3, 7, 5) and s.dtype == torch.complex64 for s in layers)
    assert layers[-1].is_contiguous()
    torch.testing.assert_close(layers[-1], modal_stack_scan(lam, b, 4, h0, backend="cpu"), rtol=0, atol=0)
    torch.testing.assert_close(modal_stack_scan(lam, b, 4, h0), layers[-1], rtol=0, atol=0)


@pytest.mark.parametrize("backend", backends())
def test_lazy_conj_views(backend):
    lam, b, h0 = _make(2, 6, 3, torch.complex64, torch.Generator().manual_seed(8))
    got = modal_stack_scan(lam.conj(), b.conj(), 3, h0.conj(), backend=backend)
    ref = modal_stack_scan_ref(lam.conj().resolve_conj(), b.conj().resolve_conj(), 3, h0.conj().resolve_conj())
    torch.testing.assert_close(got, ref, **TOL[torch.complex64])


# ---------------------------------------------------------------------------
# Bad arguments: errors that name the argument.
# ---------------------------------------------------------------------------

def test_errors_name_the_argument():
    lam = torch.rand(4)
    b = torch.randn(2, 3, 4)
    with pytest.raises(TypeError, match="b must be a torch.Tensor"):
        modal_stack_scan(lam, b.numpy(), 2)
    with pytest.raises(TypeError, match="lam must be a torch.Tensor"):
        modal_stack_scan([0.5] * 4, b, 2)
    with pytest.raises(ValueError, match=r"b must have shape \(B, T, C\)"):
        modal_stack_scan(lam, b[0], 2)
    with pytest.raises(ValueError, match="B, T, C >= 1"):
        modal_stack_scan(lam, b[:, :0], 2)
    with pytest.raises(TypeError, match="b has dtype torch.int64"):
        modal_stack_scan(lam.long(), b.long(), 2)
    with pytest.raises(ValueError, match=r"lam must have shape \(C,\)=\(4,\)"):
        modal_stack_scan(torch.rand(5), b, 2)
    with pytest.raises(ValueError, match=r"lam must have shape \(C,\)"):
        modal_stack_scan(torch.rand(2, 4), b, 2)
    with pytest.raises(TypeError, match="lam has dtype torch.float64"):
        modal_stack_scan(lam.double(), b, 2)
    with pytest.raises(TypeError, match="depth must be an int"):
        modal_stack_scan(lam, b, 2.0)
    with pytest.raises(TypeError, match="depth must be an int"):
        modal_stack_scan(lam, b, True)
    with pytest.raises(ValueError, match="depth must be >= 1"):
        modal_stack_scan(lam, b, 0)
    with pytest.raises(ValueError, match=r"h0 must have shape \(B, C\)=\(2, 4\)"):
        modal_stack_scan(lam, b, 2, torch.randn(4))
    with pytest.raises(TypeError, match="h0 has dtype"):
        modal_stack_scan(lam, b, 2, torch.randn(2, 4, dtype=torch.float64))
    with pytest.raises(TypeError, match="h0 must be a torch.Tensor or None"):
        modal_stack_scan(lam, b, 2, 0.0)
    with pytest.raises(ValueError, match="backend must be one of"):
        modal_stack_scan(lam, b, 2, backend="numba")


def test_cuda_backend_without_gpu_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    with pytest.raises(ValueError, match="backend='cuda' needs CUDA tensors"):
        modal_stack_scan(torch.rand(4), torch.randn(2, 3, 4), 2, backend="cuda")
