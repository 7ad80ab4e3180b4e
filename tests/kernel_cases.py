"""What the kernels' tests share: dtypes, tolerances, the backends that run here, and input builders.

Used by the CPU tests (``tests/test_scan.py``, ``test_stack_scan.py``, ``test_cells_kernels.py``,
``test_memory.py``), the simulator tests (``tests/cudasim``) and the GPU tests (``tests/gpu``), so
a case means the same inputs everywhere. Imported as a top-level module: pytest puts ``tests/`` on
``sys.path`` (``tests/conftest.py``'s folder). Needs only torch (the GPU machines' packages).

Builders take a ``torch.Generator`` (or a seed) and draw in double precision before casting, so
a float32 case holds the float64 case's values rounded once.
"""
import math
import os

import torch

F64 = torch.float64
REAL_DTYPES = [torch.float32, torch.float64]
DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128]
SINGLE = (torch.float32, torch.complex64)
WIDE = {torch.float32: torch.float64, torch.float64: torch.float64,
        torch.complex64: torch.complex128, torch.complex128: torch.complex128}
# Elementwise tolerances for small shapes: |a| < 1 and short sequences keep round-off at a few ulps per step.
TOL = {
    torch.float32: dict(rtol=1e-4, atol=1e-5),
    torch.complex64: dict(rtol=1e-4, atol=1e-5),
    torch.float64: dict(rtol=1e-10, atol=1e-12),
    torch.complex128: dict(rtol=1e-10, atol=1e-12),
}
# Tolerances relative to the reference's largest value (assert_close_scaled), for big shapes.
SCALED_TOL = {"single": 2e-4, "double": 1e-9}
A_FORMS = ["BTC", "TC", "C"]   # a of linear_scan: (B, T, C), shared over the batch, time-invariant


def simulator():
    """True in a process started with ``NUMBA_ENABLE_CUDASIM=1`` (``tests/cudasim``)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def backends():
    """The backends that run on CPU tensors in this process: the torch reference loop and the
    CPU kernels, plus the CUDA kernels under numba's simulator."""
    return ["torch", "cpu"] + (["cuda"] if simulator() else [])


def generator(seed):
    return torch.Generator().manual_seed(seed)


def randn(shape, dtype, gen):
    """Standard normal values of ``dtype`` (drawn in its double-precision kind, then cast)."""
    return torch.randn(shape, dtype=WIDE[dtype], generator=gen).to(dtype)


def assert_close_scaled(got, ref, dtype, what, tol=None):
    """``max |got - ref| <= tol * max(1, max |ref|)``, compared in double precision on the CPU;
    ``tol`` defaults to :data:`SCALED_TOL` (2e-4 single precision: kernels reassociate sums and fuse
    multiply-adds; 1e-9 double)."""
    got = got.detach().to("cpu", WIDE[dtype])
    ref = ref.detach().to("cpu", WIDE[dtype])
    assert got.shape == ref.shape, f"{what}: shape {tuple(got.shape)} != {tuple(ref.shape)}"
    assert torch.isfinite(torch.view_as_real(got) if got.is_complex() else got).all(), f"{what}: not finite"
    if tol is None:
        tol = SCALED_TOL["single" if dtype in SINGLE else "double"]
    scale = max(1.0, ref.abs().max().item())
    err = (got - ref).abs().max().item()
    assert err <= tol * scale, f"{what}: max |error| {err:.3g} > {tol * scale:.3g} (max |ref| {scale:.3g})"


# ---------------------------------------------------------------------------
# linear_scan and modal_stack_scan.
# ---------------------------------------------------------------------------

def stable_coefficients(shape, dtype, gen, max_mag=0.95):
    """Coefficients with ``|a| < max_mag`` (a stable recurrence): random phases for complex
    dtypes, random signs for real ones."""
    mag = max_mag * torch.rand(shape, dtype=torch.float64, generator=gen)
    if dtype.is_complex:
        return torch.polar(mag, 2 * torch.pi * torch.rand(shape, dtype=torch.float64, generator=gen)).to(dtype)
    sign = torch.where(torch.rand(shape, generator=gen, dtype=torch.float64) < 0.5, -1.0, 1.0)
    return (mag * sign).to(dtype)


def make_a(form, B, T, C, dtype, gen):
    """``a`` of ``linear_scan`` in the broadcast form ``form`` (:data:`A_FORMS`), ``|a| < 0.95``."""
    return stable_coefficients({"BTC": (B, T, C), "TC": (T, C), "C": (C,)}[form], dtype, gen)


def as_3d(a):
    """``a`` as the ``(Ba, Ta, C)`` array the backends take (size-1 dims broadcast)."""
    return a.reshape((1,) * (3 - a.dim()) + tuple(a.shape))


def scan_case(form, B, T, C, dtype, gen):
    """``(a, b, h0, g)`` for ``linear_scan``: ``g`` is a gradient of the states."""
    a = make_a(form, B, T, C, dtype, gen)
    b, h0, g = (randn(shape, dtype, gen) for shape in ((B, T, C), (B, C), (B, T, C)))
    return a, b, h0, g


def stack_case(B, T, C, depth, dtype, gen, with_h0=True, max_mag=0.98):
    """``(lam, b, h0, g_last, g_inner)`` for ``modal_stack_scan``: ``|λ| < max_mag``, a drive large
    enough that α is far from 1, ``h0`` (None unless ``with_h0``), gradients of the last layer
    ``(B, T, C)`` and of the inner layers ``(B, T, depth - 1, C)``."""
    lam = stable_coefficients((C,), dtype, gen, max_mag)
    b = 2 * randn((B, T, C), dtype, gen)
    h0 = 2 * randn((B, C), dtype, gen) if with_h0 else None
    g_last = randn((B, T, C), dtype, gen)
    g_inner = randn((B, T, depth - 1, C), dtype, gen)
    return lam, b, h0, g_last, g_inner


# ---------------------------------------------------------------------------
# recurrent_cell.
# ---------------------------------------------------------------------------

def cell_case(kind, B, T, H, seed, dtype=F64):
    """``(xp, W, h0, c0, w_h, w_c)`` for ``recurrent_cell(kind, ...)``: drives, recurrent matrices of
    gain 1.5, states (``c0`` None unless LSTM) and weights of a loss on ``hs`` and ``cs``."""
    from rnnlab.kernels.cells_torch import GATES

    gen = generator(seed)
    G = GATES[kind]
    xp = torch.randn(B, T, G, H, generator=gen, dtype=F64)
    W = torch.randn(G, H, H, generator=gen, dtype=F64) * (1.5 / math.sqrt(H))
    h0 = 0.5 * torch.randn(B, H, generator=gen, dtype=F64)
    c0 = torch.randn(B, H, generator=gen, dtype=F64) if kind == "lstm" else None
    w_h = torch.randn(B, T, H, generator=gen, dtype=F64)
    w_c = torch.randn(B, T, H, generator=gen, dtype=F64)
    return [None if x is None else x.to(dtype) for x in (xp, W, h0, c0, w_h, w_c)]


# ---------------------------------------------------------------------------
# neural_memory.
# ---------------------------------------------------------------------------

def memory_shapes(kind, B, T, m):
    """The shapes of ``v`` and of ``d``/``u`` for ``kind``."""
    if kind == "deque":
        return (B, T, 2, m), (B, T, 2)
    return (B, T, m), (B, T)


def memory_case(kind, B, T, m, dtype, seed, controls="uniform"):
    """Values ``v`` and controls ``d``, ``u``. ``controls``: ``uniform`` in [0, 1]; ``interior`` in
    [0.05, 0.95]; ``grid`` on {0, 1/4, .., 1} (exact sums: ties at every max and min); ``ends``:
    push 1 at the first step, then 0 and no pops (every later push is the tie
    min(0, max(0, 1 - 1)) at the far end of a read)."""
    gen = generator(seed)
    vs, ds = memory_shapes(kind, B, T, m)
    v = torch.randn(vs, generator=gen, dtype=F64)
    d, u = torch.rand(ds, generator=gen, dtype=F64), torch.rand(ds, generator=gen, dtype=F64)
    if controls == "interior":
        d, u = 0.05 + 0.9 * d, 0.05 + 0.9 * u
    elif controls == "grid":
        d, u = (4 * d).round() / 4, (4 * u).round() / 4
    elif controls == "ends":
        d, u = torch.zeros_like(d), torch.zeros_like(u)
        d[:, 0] = 1
    elif controls != "uniform":
        raise ValueError(controls)
    return [x.to(dtype) for x in (v, d, u)]


# ---------------------------------------------------------------------------
# A backend module against the torch backend, through the backend interface
# (``forward``/``backward`` of ``rnnlab.kernels.<op>_<backend>``): shared by the
# CPU, simulator and GPU tests; inputs are moved to ``device``, results compared
# on the CPU with the elementwise tolerances of small shapes.
# ---------------------------------------------------------------------------

def _to(x, device):
    return None if x is None else x.to(device)


def _assert_all_close(names, got, ref, dtype, where):
    for name, x, y in zip(names, got, ref):
        if y is None:
            assert x is None, f"{name} {where}: expected None"
            continue
        if x.shape != y.shape:
            # A backend may return a gradient already summed over broadcast (size-1) dimensions
            # (the CPU scan's grad_a of an ``a`` shared over time): sum the reference alike.
            dims = tuple(d for d in range(y.dim()) if x.shape[d] == 1 and y.shape[d] != 1)
            assert dims and x.dim() == y.dim(), f"{name} {where}: shape {tuple(x.shape)} != {tuple(y.shape)}"
            y = y.to(WIDE[dtype]).sum(dims, keepdim=True).to(dtype)
        torch.testing.assert_close(x.cpu(), y, **TOL[dtype], msg=lambda m: f"{name} {where}: {m}")


def check_scan_backend(module, form, dtype, shapes, device="cpu", seed=0, label=""):
    """``linear_scan``'s backend ``module`` on every shape, both directions, with and without ``h0``."""
    from rnnlab.kernels import scan_torch

    gen = generator(seed)
    for B, T, C in shapes:
        a, b, h0_, g = scan_case(form, B, T, C, dtype, gen)
        a3 = as_3d(a)
        for reverse in (False, True):
            for h0 in (None, h0_):
                where = f"{label}{(B, T, C)} reverse={reverse} h0={h0 is not None}"
                h_ref = scan_torch.forward(a3, b, h0, reverse)
                h = module.forward(_to(a3, device), _to(b, device), _to(h0, device), reverse)
                assert h.device.type == torch.device(device).type, where
                _assert_all_close(("h",), (h,), (h_ref,), dtype, where)
                got = module.backward(*(_to(x, device) for x in (a3, h_ref, g, h0)), reverse)
                ref = scan_torch.backward(a3, h_ref, g, h0, reverse)
                _assert_all_close(("G", "grad_a", "grad_h0"), got, ref, dtype, where)


def check_stack_scan_backend(module, dtype, depth, shapes, device="cpu"):
    """``modal_stack_scan``'s backend ``module`` on every shape, with and without ``h0`` and the
    inner layers' gradients."""
    from rnnlab.kernels import stack_scan_torch

    gen = generator(depth)
    for B, T, C in shapes:
        lam, b, h0_, g_last, g_inner_ = stack_case(B, T, C, depth, dtype, gen)
        for h0 in (None, h0_):
            for g_inner in (None, g_inner_):
                where = f"{(B, T, C)} depth={depth} h0={h0 is not None} g_inner={g_inner is not None}"
                ref_last, ref_inner = stack_scan_torch.forward(lam, b, depth, h0)
                last, inner = module.forward(_to(lam, device), _to(b, device), depth, _to(h0, device))
                assert last.device.type == torch.device(device).type, where
                _assert_all_close(("last", "inner"), (last, inner), (ref_last, ref_inner), dtype, where)
                got = module.backward(*(_to(x, device) for x in (lam, ref_last, ref_inner, h0, g_last, g_inner)))
                ref = stack_scan_torch.backward(lam, ref_last, ref_inner, h0, g_last, g_inner)
                _assert_all_close(("grad_lam", "grad_b", "grad_h0"), got, ref, dtype, where)


def check_cells_backend(module, kind, dtype, shapes, device="cpu", tol=None):
    """``recurrent_cell``'s backend ``module`` on every shape (seeded by it), with and without the
    LSTM's ``∂L/∂cs``; ``tol`` defaults to :data:`TOL`."""
    from rnnlab.kernels import cells_torch

    tol = TOL[dtype] if tol is None else tol
    for B, T, H in shapes:
        xp, W, h0, c0, g_hs, g_cs = cell_case(kind, B, T, H, B + T + H, dtype)
        where = f"{kind} {(B, T, H)}"
        got = module.forward(kind, *(_to(x, device) for x in (xp, W, h0, c0)))
        ref = cells_torch.forward(kind, xp, W, h0, c0)
        for name, x, y in zip(("hs", "cs", "acts"), got, ref):
            if y is None:
                assert x is None, f"{name} {where}: expected None"
            else:
                assert x.shape == y.shape and x.is_contiguous(), f"{name} {where}"
                torch.testing.assert_close(x.cpu(), y, **tol, msg=lambda m: f"{name} {where}: {m}")
        for gcs in ((g_cs, None) if kind == "lstm" else (None,)):
            got = module.backward(kind, *(_to(x, device) for x in (W, h0, c0, *ref, g_hs, gcs)))
            want = cells_torch.backward(kind, W, h0, c0, *ref, g_hs, gcs)
            for name, x, y in zip(("g_pre", "g_h0", "g_c0"), got, want):
                if y is None:
                    assert x is None, f"{name} {where}: expected None"
                else:
                    torch.testing.assert_close(x.cpu(), y, **tol, msg=lambda m: f"{name} {where}: {m}")
