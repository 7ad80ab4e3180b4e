"""Shared by the GPU tests: tolerances and a comparison scaled to the reference's size."""
import torch

SINGLE = (torch.float32, torch.complex64)
DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128]
# Small shapes, elementwise (the simulator tests' tolerances).
TOL = {
    torch.float32: dict(rtol=1e-4, atol=1e-5),
    torch.complex64: dict(rtol=1e-4, atol=1e-5),
    torch.float64: dict(rtol=1e-10, atol=1e-12),
    torch.complex128: dict(rtol=1e-10, atol=1e-12),
}
WIDE = {torch.float32: torch.float64, torch.float64: torch.float64,
        torch.complex64: torch.complex128, torch.complex128: torch.complex128}


def assert_close_scaled(got, ref, dtype, what):
    """Big shapes: ``max |got - ref| <= tol * max(1, max |ref|)``, ``ref`` in double
    precision on the CPU; tol 2e-4 for float32/complex64 (the kernels reassociate
    and fuse multiply-adds), 1e-9 for double precision."""
    got = got.detach().to("cpu", WIDE[dtype])
    ref = ref.detach().to("cpu", WIDE[dtype])
    assert got.shape == ref.shape, f"{what}: shape {tuple(got.shape)} != {tuple(ref.shape)}"
    assert torch.isfinite(torch.view_as_real(got) if got.is_complex() else got).all(), f"{what}: not finite"
    scale = max(1.0, ref.abs().max().item())
    err = (got - ref).abs().max().item()
    tol = (2e-4 if dtype in SINGLE else 1e-9) * scale
    assert err <= tol, f"{what}: max |error| {err:.3g} > {tol:.3g} (max |ref| {scale:.3g})"
