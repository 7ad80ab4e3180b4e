"""The roofline of a CPU, and the bytes and operations of one recurrent step: ``python -m rnnlab.bench roofline``.

A step that does ``flops`` floating-point operations and moves ``bytes`` to
and from memory takes at least ``max(flops / peak, bytes / bandwidth)``
seconds on a processor with arithmetic ``peak`` (flop/s) and memory
``bandwidth`` (byte/s): the *roofline* model (Williams, Waterman and
Patterson, 2009). Its *arithmetic intensity* ``flops / bytes`` decides which
term wins: below the *ridge point* ``peak / bandwidth`` the step is memory
bound, above it compute bound.

:func:`measure` measures the two roofs of this CPU with the thread count
torch uses: the bandwidth from the memory floor of the scan benchmark
(``torch.addcmul(b, a, b, out=h)`` on float32 arrays far larger than the
caches: three arrays of ``N`` numbers moved), the peak from a float32 matrix
product of two ``1024 x 1024`` matrices (``2 * 1024**3`` operations). Each is
the fastest of a few calls: a practical peak and bandwidth, not the data
sheet's.

:func:`step_cost` is the book's counting model of one forward time step of
the whole batch (``book/lds/05_speed.ipynb``), float32 numbers (4 bytes) and
complex64 ones (8 bytes), a multiply-add counted as 2 operations:

``lds``    the scan ``s_t = λ s_{t-1} + u_t`` on the H/2 complex channels
           (one mode of each conjugate pair) of each row: 8 operations per
           channel (a complex product and a complex sum); each row reads its
           drive ``u_t`` and writes its state ``s_t`` (16 bytes per channel;
           ``s_{t-1}`` was written by the step before and is still in the
           cache), and the step reads ``λ`` once (8 bytes per channel):
           ``4 B H`` operations, ``8 B H + 4 H`` bytes.
``lstm``   the recurrent product ``h_{t-1} W_hh^T`` of all four gates, a
           ``(B x H) . (H x 4H)`` product: ``8 B H^2`` operations; it reads
           ``W_hh`` (``16 H^2`` bytes) and ``h_{t-1}`` (``4 B H``) and writes
           the ``4 H`` pre-activations of each row (``16 B H``):
           ``16 H^2 + 20 B H`` bytes. The input part ``x_t W_ih^T`` does not
           wait for the previous step and is left out, like the LDS's input
           and read-out products; so is the gates' elementwise work.
``ldstack`` (``depth = k``) the fused pass of :mod:`rnnlab.kernels.stack_scan_cpu`:
           the first layer as ``lds``; each further layer 17 operations per
           channel (``|x|^2``: 3; ``α = 1/sqrt(1 + |λ|^2 |x|^2)``: 4 counting
           the square root and the division as one each; ``α λ``: 2; the
           complex product and sum: 8) and one more state written (8 bytes);
           the drive is read once for all layers, and ``λ`` and ``|λ|^2``
           once per step (12 bytes per channel).

``python -m rnnlab.bench roofline`` prints the measured roofs and writes them
as JSON (``book/lds/data/roofline-cpu.json`` is such a run, the one the
book's roofline schematic draws).
"""
import math

import torch

from . import Column, render_table
from .timing import match_thread_pools, time_calls

__all__ = ["measure", "step_cost", "roofline_time", "intensity", "ridge_point", "MODELS",
           "DESCRIPTION", "add_arguments", "from_args", "format_table"]

DESCRIPTION = ("the roofline of this CPU (memory bandwidth from one elementwise pass, arithmetic peak "
               "from a float32 matrix product) and the intensity of an LDS and an LSTM step")

MODELS = ("lds", "lstm", "ldstack")

STACK_LAYER_FLOPS = 17
"""Operations per complex channel of each further LDStack layer (see the module docstring)."""


def _check_size(name, value, minimum=1):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"roofline: {name} must be an integer >= {minimum}, got {value!r}")


def step_cost(model, B, H, depth=1):
    """``(flops, bytes)`` of one forward time step of ``model`` for a batch of ``B`` rows.

    ``model`` is ``"lds"`` (``H`` complex modes, ``H/2`` scanned channels),
    ``"lstm"`` (``H`` cells, the recurrent product only) or ``"ldstack"``
    (``depth`` layers in one fused pass; ``depth=1`` is the LDS). The counting
    model is in the module docstring. ``H`` must be even for the LDS and the stack.
    """
    if model not in MODELS:
        raise ValueError(f"roofline.step_cost: model must be one of {MODELS}, got {model!r}")
    _check_size("B", B)
    _check_size("H", H)
    _check_size("depth", depth)
    if model == "lstm":
        return 8 * B * H * H, 16 * H * H + 20 * B * H
    if H % 2:
        raise ValueError(f"roofline.step_cost: H must be even for {model!r} (modes in conjugate pairs), got {H}")
    if model == "lds" and depth != 1:
        raise ValueError("roofline.step_cost: the LDS has depth 1; use model='ldstack' for a stack")
    channels = H // 2
    more = depth - 1
    flops = 8 * B * channels + STACK_LAYER_FLOPS * more * B * channels
    bytes_ = 8 * B * channels * (1 + depth) + (12 if more else 8) * channels
    return flops, bytes_


def intensity(model, B, H, depth=1):
    """The arithmetic intensity, operations per byte, of :func:`step_cost`."""
    flops, bytes_ = step_cost(model, B, H, depth)
    return flops / bytes_


def ridge_point(peak, bandwidth):
    """The intensity ``peak / bandwidth`` (flop/byte) where the two roofs meet."""
    return peak / bandwidth


def roofline_time(flops, bytes_, peak, bandwidth):
    """The roofline's lower bound on the time: ``max(flops / peak, bytes / bandwidth)`` seconds."""
    if peak <= 0 or bandwidth <= 0:
        raise ValueError(f"roofline_time: peak and bandwidth must be positive, got {peak}, {bandwidth}")
    return max(flops / peak, bytes_ / bandwidth)


def measure(threads=None, *, n=1 << 23, matrix=1024, min_time=0.3):
    """The two roofs of this CPU: ``{"bandwidth", "peak", "ridge", "threads", ...}``.

    ``bandwidth`` (byte/s): ``12 n`` bytes over the fastest call of
    ``torch.addcmul(b, a, b, out=h)`` on float32 arrays of ``n`` numbers
    (default 32 MiB each, larger than the caches). ``peak`` (flop/s):
    ``2 matrix**3`` over the fastest float32 product of two square matrices.
    ``threads``: torch's threads for the measurement (numba's pool matched;
    both restored afterwards); None keeps torch's current setting.
    """
    _check_size("n", n)
    _check_size("matrix", matrix)
    before = torch.get_num_threads()
    used = match_thread_pools(threads)
    try:
        gen = torch.Generator().manual_seed(0)
        a, b = torch.rand(n, generator=gen), torch.rand(n, generator=gen)
        h = torch.empty(n)
        x = torch.rand(matrix, matrix, generator=gen)
        y = torch.rand(matrix, matrix, generator=gen)
        z = torch.empty(matrix, matrix)
        t = time_calls({"pass": lambda: torch.addcmul(b, a, b, out=h),
                        "product": lambda: torch.mm(x, y, out=z)},
                       warmup=1, min_repeats=3, min_time=min_time)
    finally:
        match_thread_pools(before)
    bandwidth = 12 * n / t["pass"].min
    peak = 2 * matrix ** 3 / t["product"].min
    return {"threads": used, "n": n, "matrix": matrix,
            "pass_s": t["pass"].min, "product_s": t["product"].min,
            "bandwidth": bandwidth, "peak": peak, "ridge": peak / bandwidth}


# ---------------------------------------------------------------- command line

def add_arguments(parser):
    parser.add_argument("--n", type=int, default=1 << 23,
                        help="numbers per array of the elementwise pass (default 2**23: 32 MiB each)")
    parser.add_argument("--matrix", type=int, default=1024,
                        help="side of the square matrices of the product (default 1024)")
    parser.add_argument("--min-time", type=float, default=1.0,
                        help="seconds of timed calls at least (default 1)")


def from_args(args, parser=None):
    row = measure(args.threads, n=args.n, matrix=args.matrix, min_time=args.min_time)
    for model, B, H in (("lds", 16, 128), ("lstm", 1, 128), ("lstm", 16, 128), ("lstm", 64, 128)):
        row[f"intensity_{model}_B{B}_H{H}"] = intensity(model, B, H)
    return [row], {"n": args.n, "matrix": args.matrix, "min_time": args.min_time,
                   "threads": args.threads}


def format_table(rows, *, title=None):
    columns = [
        Column("threads", lambda r: str(r["threads"])),
        Column("bandwidth", lambda r: f"{r['bandwidth'] / 1e9:.1f} GB/s"),
        Column("peak", lambda r: f"{r['peak'] / 1e9:.1f} GFLOP/s"),
        Column("ridge point", lambda r: f"{r['ridge']:.1f} flop/byte"),
    ]
    text = render_table(rows, columns, title=title)
    note = ("bandwidth: one float32 addcmul pass (3 arrays) at its fastest; peak: a float32 "
            "matrix product at its fastest. Intensities (flop/byte) of one forward step, "
            "rnnlab.bench.roofline.step_cost: " + ", ".join(
                f"{k[len('intensity_'):]} {v:.2f}" for k, v in rows[0].items() if k.startswith("intensity_")))
    return text + "\n" + note


if __name__ == "__main__":  # pragma: no cover
    import sys

    from .__main__ import main

    sys.exit(main(["roofline", *sys.argv[1:]]))
