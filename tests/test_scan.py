"""Tests of ``linear_scan``: the CPU kernel and the torch loop against the
autograd-differentiated reference ``linear_scan_ref``.

The CUDA kernels are tested in ``tests/cudasim`` (numba's simulator, separate
process) and compiled for real GPUs in ``tests/test_ptx.py``.
"""
import importlib
import subprocess
import sys
import textwrap

import pytest
import torch
from hypothesis import given, settings, strategies as st

from kernel_cases import A_FORMS, DTYPES, TOL, backends, check_scan_backend
from kernel_cases import make_a as _make_a, randn as _randn
from rnnlab.kernels import linear_scan, linear_scan_ref
from rnnlab.kernels import scan_cpu, scan_torch


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
# gradcheck: the hand-written backward passes of every backend that runs here.
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("backend", backends())
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
# Property tests: every backend agrees with the reference (and autograd
# through it) on random shapes (T = 1, B = 1, C = 1 included), dtypes, layouts.
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


@pytest.mark.parametrize("backend", backends())
@settings(max_examples=40, deadline=None)
@given(case=cases)
def test_backend_matches_reference(backend, case):
    a, b, h0 = _inputs(case)
    rev = case["reverse"]
    h = linear_scan(a, b, h0, reverse=rev, backend=backend)
    h_ref = linear_scan_ref(a, b, h0, reverse=rev)
    assert h.shape == b.shape and h.dtype == b.dtype
    torch.testing.assert_close(h, h_ref, **TOL[case["dtype"]])


def _grads(fn, case):
    a, b, h0 = _inputs(case, requires_grad=True)
    h = fn(a, b, h0)
    w = _randn(h.shape, h.dtype, torch.Generator().manual_seed(case["seed"] + 1))
    loss = (h * w).real.sum() if h.is_complex() else (h * w).sum()
    loss.backward()
    return [x.grad if x is not None else None for x in (a, b, h0)]


@pytest.mark.parametrize("backend", backends())
@settings(max_examples=30, deadline=None)
@given(case=cases)
def test_backend_gradients_match_autograd_through_reference(backend, case):
    rev = case["reverse"]
    g_cpu = _grads(lambda a, b, h0: linear_scan(a, b, h0, reverse=rev, backend=backend), case)
    g_ref = _grads(lambda a, b, h0: linear_scan_ref(a, b, h0, reverse=rev), case)
    for name, x, y in zip(("a", "b", "h0"), g_cpu, g_ref):
        if y is None:
            assert x is None, name
        else:
            assert x.shape == y.shape, name
            torch.testing.assert_close(x, y, **TOL[case["dtype"]], msg=lambda m: f"grad {name}: {m}")


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("form", A_FORMS)
def test_backend_interface_matches_torch_backend(backend, dtype, form):
    """The backend module's ``forward``/``backward`` against ``scan_torch``'s, on the shapes the
    simulator and GPU tests use (both directions, with and without ``h0``)."""
    module = importlib.import_module(f"rnnlab.kernels.scan_{backend}")
    check_scan_backend(module, form, dtype, [(2, 7, 5), (1, 3, 3), (1, 1, 1)])


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


def test_importing_the_kernels_changes_no_thread_count_and_kernels_keep_torchs():
    """In a fresh process: importing rnnlab's kernels leaves numba's and torch's thread counts alone;
    a thread count set on torch before or after the import survives the first kernel, which
    starts numba's pool (starting it resets OpenMP's count, shared with torch), and the kernel runs
    on at most torch's threads."""
    code = textwrap.dedent("""
        import torch
        torch.set_num_threads(1)
        import numba
        default = numba.config.NUMBA_NUM_THREADS
        from numba.np.ufunc import parallel
        import rnnlab.kernels.scan_cpu
        from rnnlab.kernels import _backend, linear_scan
        assert not parallel._is_initialized, "importing the kernels started numba's pool"
        assert torch.get_num_threads() == 1
        seen = []
        _backend.run_parallel(lambda: seen.append(numba.get_num_threads()), 10**9, 64, 0)
        assert torch.get_num_threads() == 1, torch.get_num_threads()
        assert numba.get_num_threads() == default, (numba.get_num_threads(), default)
        assert seen == [1], seen
        torch.set_num_threads(2)
        a, b = torch.rand(64), torch.randn(2, 600, 64)
        linear_scan(a, b, backend="cpu")
        assert torch.get_num_threads() == 2
        print("ok")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["ok"]


def test_run_parallel_sizes_the_pool_per_call():
    """Small problems run on one thread, large ones on torch's current count (at most the batch);
    numba's thread count is the same afterwards."""
    from rnnlab.kernels import _backend
    import numba

    def threads_seen(work, B):
        seen = []
        _backend.run_parallel(lambda: seen.append(numba.get_num_threads()), work, B, 100)
        return seen[0]

    before, torch_threads = numba.get_num_threads(), torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert threads_seen(10**6, 8) == 1
    finally:
        torch.set_num_threads(torch_threads)
    expected = min(before, torch_threads)
    assert threads_seen(10**6, 8) == expected
    assert threads_seen(10**6, 1) == 1                            # one batch row: one thread
    assert threads_seen(99, 8) == 1                               # below serial_below
    assert numba.get_num_threads() == before


def test_thread_count_restored_and_torch_threads_followed():
    """Small problems run on one thread, large ones on torch's current count;
    numba's thread count is the same afterwards."""
    import numba

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
# Large outputs reuse the memory of freed outputs (scan_cpu.empty), tested
# through what a user sees: exact results, no page faults, views that stay
# valid, no deadlock when outputs die in another thread or in a garbage
# collection.
# ---------------------------------------------------------------------------

def _page_faults():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("form", A_FORMS)
def test_repeated_large_calls_give_the_same_results_and_gradients(dtype, form):
    """Outputs of 1 MiB and more are written into the memory of earlier outputs (holding their
    values): the kernels still write every element; repeated calls agree with the reference."""
    case = dict(B=2, T=64, C=2048, dtype=dtype, form=form, with_h0=True, layout="contiguous", seed=7)
    a, b, h0 = _inputs(case)
    ref = linear_scan(a, b, h0, backend="torch")
    g_ref = _grads(lambda a, b, h0: linear_scan(a, b, h0, backend="torch"), case)
    for _ in range(3):
        torch.testing.assert_close(linear_scan(a, b, h0, backend="cpu"), ref, **TOL[dtype])
        for x, y in zip(_grads(lambda a, b, h0: linear_scan(a, b, h0, backend="cpu"), case), g_ref):
            torch.testing.assert_close(x, y, **TOL[dtype])


def test_a_large_output_takes_the_pages_of_a_freed_one():
    """A 64 MiB output (above glibc's largest mmap threshold, so a fresh one is mapped anew and
    page-faults on each of its 16384 pages when the kernel first writes it) reuses a freed
    output's pages: later calls fault on almost none."""
    a, b = torch.full((4096,), 0.5), torch.ones(4, 1024, 4096)
    faults = []
    for _ in range(4):
        before = _page_faults()
        h = linear_scan(a, b, backend="cpu")
        faults.append(_page_faults() - before)
        del h
    assert min(faults[1:]) < 16384 // 8, faults


def test_a_view_keeps_its_memory_from_being_reused():
    """An output's memory is reused only once every tensor and view using it is gone."""
    a = torch.rand(4, 64, 1024)
    b1, b2 = torch.randn(4, 64, 1024), torch.randn(4, 64, 1024)
    ref1 = linear_scan(a, b1, backend="torch")
    h = linear_scan(a, b1, backend="cpu")
    view = h[1:]
    del h
    h2 = linear_scan(a, b2, backend="cpu")                       # must not write over the view
    torch.testing.assert_close(view, ref1[1:])
    torch.testing.assert_close(h2, linear_scan(a, b2, backend="torch"))
    del view
    h3 = linear_scan(a, b1, backend="cpu")
    torch.testing.assert_close(h3, ref1)
    torch.testing.assert_close(h2, linear_scan(a, b2, backend="torch"))


def test_outputs_freed_in_other_threads_and_in_garbage_collections():
    """Outputs die in other threads and inside garbage collections (which may run in the middle
    of an allocation): no deadlock, every result exact."""
    import gc
    import threading

    a = torch.rand(2, 64, 2048)
    bs = [torch.randn(2, 64, 2048, generator=torch.Generator().manual_seed(k)) for k in range(3)]
    refs = [linear_scan(a, b, backend="torch") for b in bs]
    errors = []

    def work(k):
        try:
            for i in range(6):
                h = linear_scan(a, bs[(k + i) % 3], backend="cpu")
                cycle = [h]
                cycle.append(cycle)                      # freed by a garbage collection, somewhere
                torch.testing.assert_close(h, refs[(k + i) % 3])
                del h, cycle
        except BaseException as exc:                     # noqa: BLE001 (reported below)
            errors.append(exc)

    thresholds = gc.get_threshold()
    gc.set_threshold(1, 1, 1)                            # collections at almost every allocation
    try:
        threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=240)
        assert not any(t.is_alive() for t in threads), "deadlock: a thread did not finish"
    finally:
        gc.set_threshold(*thresholds)
        gc.collect()
    assert not errors, errors[0]


def test_empty_gives_ordinary_tensors_and_empty_cache_gives_memory_back():
    for shape, dtype in (((4, 8, 16), torch.float32), ((64, 64, 64), torch.complex64)):
        x = scan_cpu.empty(shape, dtype)
        assert x.shape == shape and x.dtype == dtype and x.is_contiguous() and x.device.type == "cpu"
        x.fill_(1)
        assert bool((x == 1).all())
        del x
    scan_cpu.empty_cache()
    a, b = torch.rand(2, 64, 2048), torch.randn(2, 64, 2048)
    torch.testing.assert_close(linear_scan(a, b, backend="cpu"), linear_scan(a, b, backend="torch"))


def test_auto_is_cpu_for_cpu_tensors():
    gen = torch.Generator().manual_seed(2)
    a = _make_a("C", 1, 3, 4, torch.float32, gen)
    b = _randn((2, 3, 4), torch.float32, gen)
    torch.testing.assert_close(linear_scan(a, b), linear_scan(a, b, backend="cpu"), rtol=0, atol=0)


@pytest.mark.parametrize("backend", backends())
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
    for backend in backends():
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
