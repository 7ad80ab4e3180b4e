"""Tests of ``linear_scan``: the CPU kernel and the torch loop against the
autograd-differentiated reference ``linear_scan_ref``.

The CUDA kernels are tested in ``tests/cudasim`` (numba's simulator, separate
process) and compiled for real GPUs in ``tests/test_ptx.py``.
"""
import numba
import pytest
import torch
from hypothesis import given, settings, strategies as st

from rnnlab.kernels import linear_scan, linear_scan_ref
from rnnlab.kernels import scan_cpu, scan_torch

DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128]
# Tolerances per dtype: |a| < 1 and T <= 24 keep round-off at a few ulps per step.
TOL = {
    torch.float32: dict(rtol=1e-4, atol=1e-5),
    torch.complex64: dict(rtol=1e-4, atol=1e-5),
    torch.float64: dict(rtol=1e-10, atol=1e-12),
    torch.complex128: dict(rtol=1e-10, atol=1e-12),
}
A_FORMS = ["BTC", "TC", "C"]   # a: (B, T, C), shared over the batch, time-invariant


def _randn(shape, dtype, gen):
    return torch.randn(shape, dtype=dtype, generator=gen)


def _make_a(form, B, T, C, dtype, gen):
    """Coefficients with |a| < 1 (a stable recurrence) in the requested broadcast form."""
    shape = {"BTC": (B, T, C), "TC": (T, C), "C": (C,)}[form]
    mag = 0.95 * torch.rand(shape, dtype=torch.float64, generator=gen)
    if dtype.is_complex:
        phase = 2 * torch.pi * torch.rand(shape, dtype=torch.float64, generator=gen)
        return torch.polar(mag, phase).to(dtype)
    sign = torch.where(torch.rand(shape, generator=gen, dtype=torch.float64) < 0.5, -1.0, 1.0)
    return (mag * sign).to(dtype)


def _noncontiguous(x, how):
    """The same values as ``x`` in a non-contiguous layout (``how`` picks which)."""
    if how == "contiguous" or x.dim() == 0:
        return x
    if how == "transposed":                      # stored with the last two dims swapped
        if x.dim() == 1:
            return torch.stack([x, x], 1)[:, 0]  # stride 2
        return x.transpose(-1, -2).contiguous().transpose(-1, -2)
    if how == "sliced":                          # every other element of a bigger tensor
        big = torch.zeros(*x.shape[:-1], 2 * x.shape[-1], dtype=x.dtype)
        big[..., ::2] = x
        return big[..., ::2]
    raise ValueError(how)


# ---------------------------------------------------------------------------
# gradcheck: the hand-written backward passes of backends "torch" and "cpu".
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["torch", "cpu"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
@pytest.mark.parametrize("form", A_FORMS)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("with_h0", [False, True])
def test_gradcheck(backend, dtype, form, reverse, with_h0):
    gen = torch.Generator().manual_seed(0)
    B, T, C = 2, 4, 3
    a = _make_a(form, B, T, C, dtype, gen).requires_grad_()
    b = _randn((B, T, C), dtype, gen).requires_grad_()
    h0 = _randn((B, C), dtype, gen).requires_grad_() if with_h0 else None
    inputs = (a, b, h0)

    def f(a, b, h0):
        return linear_scan(a, b, h0, reverse=reverse, backend=backend)

    assert torch.autograd.gradcheck(f, inputs)


# ---------------------------------------------------------------------------
# Property tests: the CPU kernel agrees with the reference and the torch loop
# on random shapes (T = 1, B = 1, C = 1 included), dtypes, layouts.
# ---------------------------------------------------------------------------

cases = st.fixed_dictionaries(dict(
    B=st.integers(1, 4),
    T=st.integers(1, 24),
    C=st.integers(1, 40),
    dtype=st.sampled_from(DTYPES),
    form=st.sampled_from(A_FORMS),
    reverse=st.booleans(),
    with_h0=st.booleans(),
    layout=st.sampled_from(["contiguous", "transposed", "sliced"]),
    seed=st.integers(0, 2**31 - 1),
))


def _inputs(case, requires_grad=False):
    gen = torch.Generator().manual_seed(case["seed"])
    B, T, C, dtype = case["B"], case["T"], case["C"], case["dtype"]
    a = _make_a(case["form"], B, T, C, dtype, gen)
    b = _randn((B, T, C), dtype, gen)
    h0 = _randn((B, C), dtype, gen) if case["with_h0"] else None
    how = case["layout"]
    tensors = [_noncontiguous(x, how) if x is not None else None for x in (a, b, h0)]
    if requires_grad:
        tensors = [x.detach().requires_grad_() if x is not None else None for x in tensors]
    return tensors


@settings(max_examples=40, deadline=None)
@given(case=cases)
def test_cpu_matches_reference_and_torch(case):
    a, b, h0 = _inputs(case)
    rev = case["reverse"]
    h_cpu = linear_scan(a, b, h0, reverse=rev, backend="cpu")
    h_ref = linear_scan_ref(a, b, h0, reverse=rev)
    h_torch = linear_scan(a, b, h0, reverse=rev, backend="torch")
    assert h_cpu.shape == b.shape and h_cpu.dtype == b.dtype
    torch.testing.assert_close(h_cpu, h_ref, **TOL[case["dtype"]])
    torch.testing.assert_close(h_cpu, h_torch, **TOL[case["dtype"]])


def _grads(fn, case):
    a, b, h0 = _inputs(case, requires_grad=True)
    h = fn(a, b, h0)
    w = _randn(h.shape, h.dtype, torch.Generator().manual_seed(case["seed"] + 1))
    loss = (h * w).real.sum() if h.is_complex() else (h * w).sum()
    loss.backward()
    return [x.grad if x is not None else None for x in (a, b, h0)]


@settings(max_examples=30, deadline=None)
@given(case=cases)
def test_cpu_gradients_match_autograd_through_reference(case):
    rev = case["reverse"]
    g_cpu = _grads(lambda a, b, h0: linear_scan(a, b, h0, reverse=rev, backend="cpu"), case)
    g_ref = _grads(lambda a, b, h0: linear_scan_ref(a, b, h0, reverse=rev), case)
    for name, x, y in zip(("a", "b", "h0"), g_cpu, g_ref):
        if y is None:
            assert x is None, name
        else:
            assert x.shape == y.shape, name
            torch.testing.assert_close(x, y, **TOL[case["dtype"]], msg=lambda m: f"grad {name}: {m}")


# ---------------------------------------------------------------------------
# Edge cases and details of the CPU backend.
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("block", [16, 32, 64])
def test_cpu_channel_blocks(dtype, block):
    """Every way of splitting the channels into jobs gives the same results."""
    gen = torch.Generator().manual_seed(1)
    B, T, C = 2, 5, 37                             # 37: the last block is partial
    a = _make_a("BTC", B, T, C, dtype, gen)
    b = _randn((B, T, C), dtype, gen)
    g = _randn((B, T, C), dtype, gen)
    h0 = _randn((B, C), dtype, gen)
    for reverse in (False, True):
        h = torch.empty_like(b)
        scan_cpu.forward_kernel(reverse)(a.numpy(), b.numpy(), h0.numpy(), block, h.numpy())
        torch.testing.assert_close(h, scan_torch.forward(a, b, h0, reverse), **TOL[dtype])
        got = [torch.empty_like(b), torch.empty_like(b), torch.empty_like(h0)]
        scan_cpu.backward_kernel(reverse)(a.numpy(), h.numpy(), g.numpy(), h0.numpy(), block,
                                          *(x.numpy() for x in got))
        for x, y in zip(got, scan_torch.backward(a, h, g, h0, reverse)):
            torch.testing.assert_close(x, y, **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("with_h0", [False, True])
def test_cpu_sums_grad_a_over_time_in_the_kernel(dtype, with_h0):
    """For an ``a`` shared over time the kernel adds grad_a_t into one (B, 1, C) row
    (in double precision) instead of writing (B, T, C): the sum of the full gradient."""
    gen = torch.Generator().manual_seed(2)
    B, T, C = 3, 40, 37
    a = _make_a("C", B, T, C, dtype, gen).view(1, 1, C)
    b = _randn((B, T, C), dtype, gen)
    g = _randn((B, T, C), dtype, gen)
    h0 = _randn((B, C), dtype, gen) if with_h0 else None
    for reverse in (False, True):
        h = scan_torch.forward(a, b, h0, reverse)
        G, grad_a, grad_h0 = scan_cpu.backward(a, h, g, h0, reverse)
        G_ref, grad_a_full, grad_h0_ref = scan_torch.backward(a, h, g, h0, reverse)
        assert grad_a.shape == (1, 1, C) and grad_a.dtype == dtype
        torch.testing.assert_close(G, G_ref, **TOL[dtype])
        wide = grad_a_full.to(torch.complex128 if dtype.is_complex else torch.float64)
        torch.testing.assert_close(grad_a, wide.sum((0, 1), keepdim=True).to(dtype), **TOL[dtype])
        if with_h0:
            torch.testing.assert_close(grad_h0, grad_h0_ref, **TOL[dtype])


def test_channel_block():
    assert scan_cpu.channel_block(4, 300, threads=2) == 300     # enough rows: whole rows
    assert scan_cpu.channel_block(1, 300, threads=1) == 300     # one thread: whole rows
    block = scan_cpu.channel_block(1, 300, threads=2)           # one row, two threads: split
    assert block % scan_cpu.MIN_BLOCK == 0 and -(-300 // block) >= 4
    assert scan_cpu.channel_block(1, 5, threads=2) == 5         # never below one block


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex128])
@pytest.mark.parametrize("B, T, C", [(1, 200, 333), (5, 130, 128)])
def test_parallel_path(dtype, B, T, C):
    """Problems above SERIAL_BELOW run on every thread (B = 1: split channels)."""
    assert B * T * C >= scan_cpu.SERIAL_BELOW
    case = dict(B=B, T=T, C=C, dtype=dtype, form="TC", with_h0=True, layout="contiguous", seed=5)
    for reverse in (False, True):
        g_cpu = _grads(lambda a, b, h0: linear_scan(a, b, h0, reverse=reverse, backend="cpu"), case)
        g_ref = _grads(lambda a, b, h0: linear_scan(a, b, h0, reverse=reverse, backend="torch"), case)
        for x, y in zip(g_cpu, g_ref):
            torch.testing.assert_close(x, y, **TOL[dtype])
        a, b, h0 = _inputs(case)
        torch.testing.assert_close(linear_scan(a, b, h0, reverse=reverse, backend="cpu"),
                                   linear_scan_ref(a, b, h0, reverse=reverse), **TOL[dtype])


def test_numba_threads_do_not_exceed_torch():
    assert numba.get_num_threads() <= torch.get_num_threads()


def test_thread_count_restored_and_torch_threads_followed():
    """Small problems run on one thread, large ones on torch's current count;
    numba's thread count is the same afterwards."""
    before, torch_threads = numba.get_num_threads(), torch.get_num_threads()
    a, b = torch.rand(64), torch.randn(2, 600, 64)                # above SERIAL_BELOW
    ref = linear_scan_ref(a, b)
    try:
        torch.set_num_threads(1)
        torch.testing.assert_close(linear_scan(a, b, backend="cpu"), ref, **TOL[torch.float32])
    finally:
        torch.set_num_threads(torch_threads)
    torch.testing.assert_close(linear_scan(a, b, backend="cpu"), ref, **TOL[torch.float32])
    linear_scan(a, b[:, :3], backend="cpu")                       # below SERIAL_BELOW
    assert numba.get_num_threads() == before


# ---------------------------------------------------------------------------
# Large outputs reuse the memory of freed outputs (scan_cpu.empty).
# ---------------------------------------------------------------------------

@pytest.fixture
def reuse_small_outputs(monkeypatch):
    """Every output goes through the pool of freed blocks, however small; the pool starts empty."""
    monkeypatch.setattr(scan_cpu, "REUSE_MIN_BYTES", 1)
    scan_cpu.empty_cache()
    yield
    scan_cpu.empty_cache()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("form", A_FORMS)
def test_reused_memory_gives_the_same_results_and_gradients(reuse_small_outputs, dtype, form):
    """Outputs written into recycled blocks (holding the previous call's values) are
    still exact: the kernels write every element; repeated calls agree with the reference."""
    case = dict(B=3, T=17, C=37, dtype=dtype, form=form, with_h0=True, layout="contiguous", seed=7)
    a, b, h0 = _inputs(case)
    ref = linear_scan_ref(a, b, h0)
    g_ref = _grads(lambda a, b, h0: linear_scan(a, b, h0, backend="torch"), case)
    for _ in range(3):
        torch.testing.assert_close(linear_scan(a, b, h0, backend="cpu"), ref, **TOL[dtype])
        for x, y in zip(_grads(lambda a, b, h0: linear_scan(a, b, h0, backend="cpu"), case), g_ref):
            torch.testing.assert_close(x, y, **TOL[dtype])
    assert scan_cpu._free_blocks                                  # the calls did recycle memory


def test_a_block_is_reused_only_once_every_view_is_gone(reuse_small_outputs):
    a, b = torch.rand(4, 8, 16), torch.randn(4, 8, 16)
    ref = linear_scan_ref(a, b)
    h = linear_scan(a, b, backend="cpu")
    ptr, view = h.data_ptr(), h[1:]
    del h
    h2 = linear_scan(a, b, backend="cpu")                         # the first block is still in use
    assert h2.data_ptr() != ptr
    torch.testing.assert_close(view, ref[1:])
    del view
    h3 = linear_scan(a, b, backend="cpu")                         # now it is free again
    assert h3.data_ptr() == ptr
    torch.testing.assert_close(h3, ref)
    torch.testing.assert_close(h2, ref)


def test_a_block_freed_while_the_pool_is_busy_waits_and_is_reused(reuse_small_outputs):
    """An output freed while the pool's lock is held (another thread, or a garbage
    collection inside the pool's own code) never waits for the lock: its block is
    parked and joins the pool at the next allocation."""
    x = scan_cpu.empty((4, 8, 16), torch.float32)
    ptr = x.data_ptr()
    with scan_cpu._free_lock:
        del x
        assert len(scan_cpu._pending) == 1 and not scan_cpu._free_blocks
    y = scan_cpu.empty((4, 8, 16), torch.float32)
    assert y.data_ptr() == ptr and not scan_cpu._pending


def test_reuse_is_bounded_and_can_be_turned_off(reuse_small_outputs, monkeypatch):
    x = scan_cpu.empty((4, 8, 16), torch.complex64)
    assert x.shape == (4, 8, 16) and x.dtype == torch.complex64 and x.is_contiguous()
    del x
    assert sum(blk.numel() for blk in scan_cpu._free_blocks) == 4 * 8 * 16 * 8
    monkeypatch.setattr(scan_cpu, "REUSE_MAX_BYTES", 3000)        # room for one (16, 16) float64 block
    kept = [scan_cpu.empty((16, 16), torch.float64) for _ in range(3)]
    del kept
    assert sum(blk.numel() for blk in scan_cpu._free_blocks) <= 3000
    scan_cpu.empty_cache()
    assert not scan_cpu._free_blocks
    monkeypatch.setattr(scan_cpu, "REUSE_MAX_BYTES", 0)           # off: plain torch.empty
    y = scan_cpu.empty((4, 8, 16), torch.float32)
    assert y.untyped_storage().resizable()
    del y
    assert not scan_cpu._free_blocks


def test_auto_is_cpu_for_cpu_tensors():
    gen = torch.Generator().manual_seed(2)
    a = _make_a("C", 1, 3, 4, torch.float32, gen)
    b = _randn((2, 3, 4), torch.float32, gen)
    torch.testing.assert_close(linear_scan(a, b), linear_scan(a, b, backend="cpu"), rtol=0, atol=0)


@pytest.mark.parametrize("backend", ["torch", "cpu"])
def test_lazy_conj_and_neg_views(backend):
    """torch's lazy conj()/neg() views are read correctly (NumPy cannot hold them)."""
    gen = torch.Generator().manual_seed(3)
    a = _make_a("TC", 2, 6, 3, torch.complex64, gen)
    b = _randn((2, 6, 3), torch.complex64, gen)
    h = linear_scan(a.conj(), b.conj(), -b[:, 0].conj(), backend=backend)
    ref = linear_scan_ref(a.conj().resolve_conj(), b.conj().resolve_conj(),
                          (-b[:, 0].conj()).resolve_conj().resolve_neg())
    torch.testing.assert_close(h, ref, **TOL[torch.complex64])


def test_known_values():
    """h_t = a h_{t-1} + b_t with a = 1/2, b = 1, h0 = 0: h_t = 2 - 2^(1-t)."""
    a = torch.full((1,), 0.5, dtype=torch.float64)
    b = torch.ones(1, 6, 1, dtype=torch.float64)
    t = torch.arange(1, 7, dtype=torch.float64)
    expected = (2 - 2.0 ** (1 - t)).view(1, 6, 1)
    for backend in ("torch", "cpu"):
        torch.testing.assert_close(linear_scan(a, b, backend=backend), expected)
        torch.testing.assert_close(linear_scan(a, b, reverse=True, backend=backend), expected.flip(1))


def test_grad_only_for_inputs_that_require_it():
    gen = torch.Generator().manual_seed(4)
    a = _make_a("BTC", 2, 5, 3, torch.float64, gen)
    b = _randn((2, 5, 3), torch.float64, gen).requires_grad_()
    h0 = _randn((2, 3), torch.float64, gen)
    linear_scan(a, b, h0, backend="cpu").sum().backward()
    assert a.grad is None and h0.grad is None and b.grad is not None


# ---------------------------------------------------------------------------
# Bad input: clear errors naming the argument.
# ---------------------------------------------------------------------------

def _ok(dtype=torch.float32):
    return torch.rand(2, 3, 4, dtype=dtype), torch.randn(2, 3, 4, dtype=dtype)


def test_error_b_ndim():
    a, b = _ok()
    with pytest.raises(ValueError, match=r"b must have shape \(B, T, C\)"):
        linear_scan(a[0], b[0])


def test_error_empty():
    with pytest.raises(ValueError, match=r"b must have B, T, C >= 1"):
        linear_scan(torch.rand(4), torch.randn(2, 0, 4))


@pytest.mark.parametrize("reverse", ["yes", 1, None, 0.0])
def test_error_reverse_not_bool(reverse):
    a, b = _ok()
    with pytest.raises(TypeError, match="reverse must be True or False"):
        linear_scan(a, b, reverse=reverse)


def test_error_a_shape():
    a, b = _ok()
    with pytest.raises(ValueError, match=r"a must have shape \(B, T, C\)=\(2, 3, 4\)"):
        linear_scan(a[:, :2], b)
    with pytest.raises(ValueError, match=r"a must have shape"):
        linear_scan(torch.rand(5), b)
    with pytest.raises(ValueError, match=r"a must have shape"):
        linear_scan(a.unsqueeze(0), b)


def test_error_h0_shape():
    a, b = _ok()
    with pytest.raises(ValueError, match=r"h0 must have shape \(B, C\)=\(2, 4\)"):
        linear_scan(a, b, torch.zeros(4))


def test_error_dtypes():
    a, b = _ok()
    with pytest.raises(TypeError, match=r"b has dtype torch.int64"):
        linear_scan(a.long(), b.long())
    with pytest.raises(TypeError, match=r"a has dtype torch.float64 but b has torch.float32"):
        linear_scan(a.double(), b)
    with pytest.raises(TypeError, match=r"h0 has dtype"):
        linear_scan(a, b, torch.zeros(2, 4, dtype=torch.float64))
    with pytest.raises(TypeError, match=r"b must be a torch.Tensor"):
        linear_scan(a, b.numpy())


def test_error_unknown_backend():
    a, b = _ok()
    with pytest.raises(ValueError, match=r"backend must be one of"):
        linear_scan(a, b, backend="numba")


def test_error_cuda_backend_without_gpu(monkeypatch):
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    a, b = _ok()
    with pytest.raises(ValueError, match=r"backend='cuda' needs CUDA tensors"):
        linear_scan(a, b, backend="cuda")
