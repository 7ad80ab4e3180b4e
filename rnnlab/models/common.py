"""What every model shares: parameter counting, the constructor convention, the tall matrix product.

The constructor convention of :mod:`rnnlab.models` (torch's factory keywords):

- ``generator``: a :class:`torch.Generator` (CPU) that every random draw of the
  initialisation takes; None draws from torch's global RNG. The models that took
  ``seed=`` before (the cells) keep it as a shorthand for
  ``generator=torch.Generator().manual_seed(seed)``;
- ``device``: where the parameters live (drawn on the CPU, then moved, so that a
  generator gives the same numbers on every device);
- ``dtype``: the real floating dtype of the parameters (None: torch's default
  dtype).

:func:`resolve_generator`, :func:`resolve_dtype` and :func:`seeded_init` implement it.
"""
import contextlib
from collections import OrderedDict

import torch

from .._validate import check_int

__all__ = ["parameter_breakdown", "count_parameters", "tall_matmul", "TallMatmul", "resolve_generator",
           "resolve_dtype", "seeded_init"]


# ---------------------------------------------------------------------------
# Parameter counting
# ---------------------------------------------------------------------------

def parameter_breakdown(module, trainable_only=True):
    """Ordered ``{name: number of real scalars}`` of a module's parameters.

    A complex parameter counts twice (real and imaginary part). Frozen
    parameters and buffers are left out when ``trainable_only``.
    """
    out = OrderedDict()
    for name, p in module.named_parameters():
        if trainable_only and not p.requires_grad:
            continue
        out[name] = p.numel() * (2 if p.is_complex() else 1)
    return out


def count_parameters(module, trainable_only=True):
    """Number of trainable real scalars (complex parameters count twice)."""
    return sum(parameter_breakdown(module, trainable_only).values())


# ---------------------------------------------------------------------------
# The constructor convention
# ---------------------------------------------------------------------------

def resolve_generator(generator=None, seed=None, fn=None):
    """The generator a constructor draws from: ``generator``, a fresh one seeded with ``seed``, or None.

    ``seed`` is the older shorthand (an int >= 0); passing both is a ValueError, a generator that is
    not a :class:`torch.Generator` a TypeError.
    """
    where = f"{fn}: " if fn else ""
    if generator is not None and seed is not None:
        raise ValueError(f"{where}pass generator or seed (its shorthand), not both")
    if seed is not None:
        return torch.Generator().manual_seed(check_int("seed", seed, minimum=0, fn=fn))
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"{where}generator must be a torch.Generator or None, got {type(generator).__name__}")
    return generator


def resolve_dtype(dtype=None, fn=None):
    """``dtype`` (a real floating torch dtype), or torch's default dtype for None."""
    where = f"{fn}: " if fn else ""
    if dtype is None:
        return torch.get_default_dtype()
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"{where}dtype must be a torch.dtype or None, got {type(dtype).__name__}")
    if not dtype.is_floating_point:
        raise ValueError(f"{where}dtype must be a real floating dtype (torch.float32, torch.float64), got {dtype}")
    return dtype


@contextlib.contextmanager
def seeded_init(generator):
    """Run torch's own initialisers (``nn.Linear``, ``nn.LSTM``...) from ``generator`` instead of the global RNG.

    With a generator, one seed is drawn from it and the block runs under a forked global CPU RNG
    seeded with it (the global stream is left as it was); without, the block runs as is.
    """
    if generator is None:
        yield
        return
    seed = int(torch.randint(0, 2**62, (), generator=generator))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


# ---------------------------------------------------------------------------
# The tall matrix product of the read-outs
# ---------------------------------------------------------------------------

class TallMatmul(torch.autograd.Function):
    """``X @ W`` for a tall ``X`` ``(..., K)`` and a thin ``W`` ``(K, M)``, M small.

    Same result and gradients as autograd's matmul; only ``dL/dW`` is computed
    as ``(g^T X)^T`` instead of ``X^T g``. With X of 16,384 × 256 and M = 8,
    MKL takes about 4.5 ms for ``X^T g`` (a transposed tall operand) and
    1.3 ms for ``g^T X`` on the project's 2-core machine: the read-out's
    weight gradient was the largest matrix product of an LDS step.
    """

    @staticmethod
    def forward(ctx, X, W):
        ctx.save_for_backward(X, W)
        return X @ W

    @staticmethod
    def backward(ctx, g):
        X, W = ctx.saved_tensors
        gX = g @ W.t() if ctx.needs_input_grad[0] else None
        gW = None
        if ctx.needs_input_grad[1]:
            K, M = W.shape
            gW = (g.reshape(-1, M).t() @ X.reshape(-1, K)).t()
        return gX, gW


def tall_matmul(X, W):
    """``X @ W`` (X ``(..., K)``, W ``(K, M)``) with a faster weight gradient for tall X: see :class:`TallMatmul`."""
    return TallMatmul.apply(X, W)
