"""``neural_memory``: the differentiable stack, queue and deque of Grefenstette et al. (2015).

Two ways in, one set of kernels:

- :func:`neural_memory` runs a whole sequence of controls at once (when they
  do not depend on the reads, e.g. in tests and benchmarks);
- :class:`NeuralMemory` steps one time step at a time, for a controller
  whose controls at step t depend on the read r_{t-1}.

Both dispatch to three interchangeable backends that implement the interface
documented in :mod:`.memory_torch`:

- ``"torch"``: :mod:`rnnlab.kernels.memory_torch`, a readable loop (the oracle);
- ``"cpu"``:   :mod:`rnnlab.kernels.memory_cpu`, numba ``njit(parallel=True)``;
- ``"cuda"``:  :mod:`rnnlab.kernels.memory_cuda`, numba-cuda kernels.

The backward pass is written by hand from the backward dynamics (derivation
in :mod:`.memory_torch`); autograd never differentiates through a kernel.
The whole-sequence op and the step op call the same per-step kernels.
"""
import torch
from torch.autograd.function import once_differentiable

from .._validate import check_int
from ._backend import REAL_DTYPES as DTYPES, backend_module, check_dtype, check_like, check_tensor, resolve_backend
from .memory_torch import HEADS, values_buffer, values_grad

KINDS = ("stack", "queue", "deque")


# ---------------------------------------------------------------------------
# Validation.
# ---------------------------------------------------------------------------

def check_kind(kind, name):
    """Validate ``kind``; return its number of heads (1, or 2 for the deque)."""
    if not isinstance(kind, str) or kind not in KINDS:
        raise ValueError(f"{name}: kind must be one of {KINDS}, got {kind!r}")
    return HEADS[kind]


def check_controls(d, u, names, name):
    """The push and pop strengths ``d``, ``u`` (same shape) must lie in [0, 1]: a
    ValueError naming the argument otherwise (NaN included). One reduction for both."""
    if d.numel() and not bool(((d >= 0) & (d <= 1) & (u >= 0) & (u <= 1)).all()):
        for arg, x in zip(names, (d, u)):
            if not bool(((x >= 0) & (x <= 1)).all()):
                lo, hi = x.detach().min().item(), x.detach().max().item()
                raise ValueError(f"{name}: {arg} must lie in [0, 1] (a strength, e.g. a sigmoid's output); "
                                 f"got values in [{lo:g}, {hi:g}]")


def _shape_text(kind, what):
    deque = kind == "deque"
    return {"v": "(B, T, 2, m)" if deque else "(B, T, m)",
            "d": "(B, T, 2)" if deque else "(B, T)"}[what]


def _check_inputs(kind, v, d, u, backend):
    """Validate the arguments of :func:`neural_memory`; return the backend name to use."""
    name = "neural_memory"
    H = check_kind(kind, name)
    for arg, x in (("v", v), ("d", d), ("u", u)):
        check_tensor(x, arg, name)
    heads = "; index 0 = top, 1 = bottom" if H == 2 else ""
    if v.dim() != 2 + H or (H == 2 and v.shape[2] != 2):
        other = " (that is the shape for kind='deque')" if H == 1 and v.dim() == 4 else ""
        other = " (that is the shape for a stack or queue)" if H == 2 and v.dim() == 3 else other
        raise ValueError(f"{name}: for kind={kind!r} v must have shape {_shape_text(kind, 'v')}{heads}, "
                         f"got {tuple(v.shape)}{other}")
    B, T, m = v.shape[0], v.shape[1], v.shape[-1]
    if B == 0 or T == 0 or m == 0:
        raise ValueError(f"{name}: v must have B, T, m >= 1, got {tuple(v.shape)}")
    want = (B, T) if H == 1 else (B, T, 2)
    for arg, x in (("d", d), ("u", u)):
        if tuple(x.shape) != want:
            raise ValueError(f"{name}: for kind={kind!r} {arg} must have shape {_shape_text(kind, 'd')}={want} "
                             f"to match v {tuple(v.shape)}{heads}, got {tuple(x.shape)}")
    check_dtype(v, "v", name, DTYPES)
    for arg, x in (("d", d), ("u", u)):
        check_like(x, arg, v, "v", name)
    check_controls(d, u, ("d", "u"), name)
    return resolve_backend(v.device, backend, name)


# ---------------------------------------------------------------------------
# The whole-sequence op.
# ---------------------------------------------------------------------------

class NeuralMemoryFunction(torch.autograd.Function):
    """Autograd wrapper: the forward and the hand-written backward of the chosen backend."""

    @staticmethod
    def forward(ctx, v, d, u, kind, backend):
        mod = backend_module("memory", backend)
        H = HEADS[kind]
        B, T = d.shape[:2]
        with torch.no_grad():
            V = values_buffer(kind, v.detach()).contiguous()     # no copy for a contiguous stack/queue
            d3 = d.detach().reshape(B, T, H).contiguous()
            u3 = u.detach().reshape(B, T, H).contiguous()
            r, S = mod.forward(kind, V, d3, u3)
        ctx.save_for_backward(V, d3, u3, S)
        ctx.kind, ctx.backend, ctx.d_shape = kind, backend, tuple(d.shape)
        ctx.set_materialize_grads(False)
        return (r if H == 2 else r.squeeze(2)), S

    @staticmethod
    @once_differentiable
    def backward(ctx, g_r, g_S):
        V, d3, u3, S = ctx.saved_tensors
        B, T, H = d3.shape
        if g_r is None:
            g_r = torch.zeros(B, T, H, V.shape[2], dtype=V.dtype, device=V.device)
        g_r = g_r.reshape(B, T, H, V.shape[2]).contiguous()
        g_S = None if g_S is None else g_S.contiguous()
        g_V, g_d, g_u = backend_module("memory", ctx.backend).backward(ctx.kind, V, d3, u3, S, g_r, g_S)
        gv = values_grad(ctx.kind, g_V) if ctx.needs_input_grad[0] else None
        return (gv, g_d.reshape(ctx.d_shape) if ctx.needs_input_grad[1] else None,
                g_u.reshape(ctx.d_shape) if ctx.needs_input_grad[2] else None, None, None)


def neural_memory(kind, v, d, u, *, backend="auto"):
    """Reads and strengths of a neural stack, queue or deque driven by a whole sequence of controls.

    Each step t = 1 .. T: pop strength ``u_t`` from the memory's end, push
    ``v_t`` with strength ``d_t``, then read a total strength of 1 from the end
    (eq. 1-11 of Grefenstette et al. 2015). Values never move once written;
    only strengths change.

    Parameters
    ----------
    kind : ``"stack"``, ``"queue"`` or ``"deque"``
        Stack: pop and read at the top (the newest rows). Queue: push at the
        back, pop and read at the front (the oldest rows). Deque: each step
        pops the top with ``u_top`` (stack rule, over all 2(t-1) old rows),
        then the bottom with ``u_bot`` (queue rule, on the strengths after the
        top pop), pushes ``v_top`` on top and ``v_bot`` at the bottom, and
        reads ``r_top`` from the top and ``r_bot`` from the bottom.
    v : Tensor
        Values: ``(B, T, m)`` for a stack or queue; ``(B, T, 2, m)`` for the
        deque, ``v[:, t, 0]`` pushed on top and ``v[:, t, 1]`` at the bottom.
        float32 or float64.
    d, u : Tensor
        Push and pop strengths in [0, 1] (checked: a ValueError otherwise):
        ``(B, T)``, or ``(B, T, 2)`` for the deque (index 0 = top, 1 = bottom).
        Same dtype and device as ``v``.
    backend : ``"auto"``, ``"torch"``, ``"cpu"`` or ``"cuda"``
        ``"auto"`` takes the CUDA kernels for CUDA tensors and the CPU kernel
        otherwise; ``"torch"`` is the readable reference loop.

    Returns
    -------
    r : Tensor
        The reads r_1 .. r_T: ``(B, T, m)``; for the deque ``(B, T, 2, m)``
        with ``r[:, t, 0] = r_top`` and ``r[:, t, 1] = r_bot``.
    s : Tensor
        The strengths after every step. Stack and queue: ``(B, T, T)``,
        ``s[b, t, i]`` the strength of the row pushed at step i after step t
        (0-based; zero for i > t). Deque: ``(B, T, 2T)`` in a fixed-position
        layout where rows never move: the row pushed on top at step t (0-based)
        is column ``T + t``, the row pushed at the bottom at step t is column
        ``T - 1 - t`` (1-based step t': columns ``T + t' - 1`` and ``T - t'``).
        After step t the live columns are ``T - 1 - t .. T + t``, bottom to
        top; the others are zero.

    Both are differentiable with respect to ``v``, ``d`` and ``u`` (hand-written
    backward; at ties of max/min the derivative of the left argument). B, T
    and m must be at least 1 (a ValueError otherwise, as for ``linear_scan``).
    """
    name = _check_inputs(kind, v, d, u, backend)
    return NeuralMemoryFunction.apply(v, d, u, kind, name)


# ---------------------------------------------------------------------------
# The step API.
# ---------------------------------------------------------------------------

class _Store:
    """What a step's backward needs besides its saved tensors: the memory's values
    (written once, outside autograd) and the gradient buffer of those values.

    Deliberately holds no strengths (an autograd output): ``ctx.store`` then
    makes no reference cycle through the graph."""

    def __init__(self, kind, module, values):
        self.kind = kind
        self.module = module
        self.values = values
        self.value_grads = None         # allocated by the first step backward of a backward pass
        self.cleanup_queued = False

    def rows(self, t):
        """The rows (columns of the layout) written at step t: ``[top, bottom]`` or ``[t]``."""
        if self.kind == "deque":
            T = self.values.shape[1] // 2
            return [T + t, T - 1 - t]
        return [t]

    def begin_backward(self):
        """The value-gradient buffer for this backward pass (zero at its start)."""
        if self.value_grads is None:
            self.value_grads = torch.zeros_like(self.values)
        if not self.cleanup_queued:
            # Free the buffer when this backward pass ends, so that a second pass
            # (retain_graph=True) starts from zero, whichever steps it reaches.
            self.cleanup_queued = True
            torch.autograd.Variable._execution_engine.queue_callback(self.end_backward)
        return self.value_grads

    def end_backward(self):
        self.value_grads = None
        self.cleanup_queued = False


class _MemoryStep(torch.autograd.Function):
    """One step of a :class:`NeuralMemory`: inputs ``v_t, d_t, u_t, s_prev``, outputs ``r_t, s_t``.

    Autograd runs the backward of step t after that of every later step that
    the loss depends on (step t+1 consumes s_t), so when it runs, the gradient
    buffer holds every later read's contribution to the rows of step t."""

    @staticmethod
    def forward(ctx, v_t, d_t, u_t, s_prev, store, t):
        H = HEADS[store.kind]
        B = d_t.shape[0]
        v3 = v_t.detach().reshape(B, H, -1)
        for h, row in enumerate(store.rows(t)):
            store.values[:, row] = v3[:, h]
        d2 = d_t.detach().reshape(B, H).contiguous()
        u2 = u_t.detach().reshape(B, H).contiguous()
        with torch.no_grad():
            s_t, r_t = store.module.step_forward(store.kind, t, s_prev.detach(), store.values, d2, u2)
        ctx.save_for_backward(s_prev, s_t, d2, u2)
        ctx.store, ctx.t, ctx.v_shape, ctx.d_shape = store, t, tuple(v_t.shape), tuple(d_t.shape)
        ctx.set_materialize_grads(False)
        return r_t.reshape(v_t.shape), s_t

    @staticmethod
    @once_differentiable
    def backward(ctx, g_r, g_s):
        s_prev, s_t, d2, u2 = ctx.saved_tensors
        store, t = ctx.store, ctx.t
        B, H = d2.shape
        m = store.values.shape[2]
        g_V = store.begin_backward()
        g_r = (torch.zeros(B, H, m, dtype=s_t.dtype, device=s_t.device) if g_r is None
               else g_r.reshape(B, H, m).contiguous())
        g_s = torch.zeros_like(s_t) if g_s is None else g_s.contiguous()
        try:
            g_prev, g_d, g_u = store.module.step_backward(store.kind, t, s_prev, s_t, store.values, d2, u2,
                                                          g_r, g_s, g_V)
        except BaseException:
            store.end_backward()
            raise
        gv = torch.stack([g_V[:, row] for row in store.rows(t)], 1).reshape(ctx.v_shape)
        return (gv, g_d.reshape(ctx.d_shape), g_u.reshape(ctx.d_shape),
                g_prev if ctx.needs_input_grad[3] else None, None, None)


def _positive_int(x, arg, name):
    return check_int(arg, x, minimum=1, fn=name)


class NeuralMemory:
    """A neural stack, queue or deque for one batch of sequences, stepped one time step at a time.

    For a controller whose controls at step t depend on the read r_{t-1}::

        mem = NeuralMemory("stack", batch_size=B, max_steps=T, value_size=m)
        r = torch.zeros(B, m)
        for t in range(T):
            v_t, d_t, u_t = controller(x[:, t], r)      # v_t (B, m), d_t, u_t (B,) in [0, 1]
            r = mem.step(v_t, d_t, u_t)                 # (B, m)

    The same maths and kernels as :func:`neural_memory` (step ``t`` of this
    object equals step ``t`` of the whole-sequence op with ``T = max_steps``),
    differentiable by ordinary autograd with respect to every ``v_t``, ``d_t``
    and ``u_t``.

    Memory: the values are stored once, in a buffer ``(B, R, m)`` that this
    object owns outside autograd (``R = max_steps``; ``2 * max_steps`` for the
    deque), and the backward pass accumulates their gradients in one buffer
    of the same size (allocated during a backward pass, freed at its end).
    Autograd saves per step only the strengths (``(B, W)`` twice) and the
    controls: O(B T²) scalars in all, never a copy of the values per step.

    A step's backward needs the value-gradient buffer of its object, so
    ``torch.autograd.grad``/``backward`` may be run more than once
    (``retain_graph=True``); the backward is not differentiable again
    (no ``create_graph``).

    Parameters
    ----------
    kind : ``"stack"``, ``"queue"`` or ``"deque"``
    batch_size, max_steps, value_size : int
        ``B``, the most steps this object can take, and ``m``.
    dtype : torch.float32 or torch.float64
    device : str or torch.device
    backend : ``"auto"``, ``"torch"``, ``"cpu"`` or ``"cuda"``
        As for :func:`neural_memory` (``"auto"``: the CUDA kernels on a CUDA
        device, the CPU kernel otherwise).

    Attributes
    ----------
    t : int
        Steps taken so far.
    strengths : Tensor ``(B, W)``
        The strengths after the last step (zeros before the first), in the
        layout of one step of :func:`neural_memory`'s ``s`` with
        ``T = max_steps``: ``W = max_steps`` for a stack or queue (column i:
        the row pushed at step i), ``W = 2 * max_steps`` for the deque (the
        top row of step t in column ``max_steps + t``, the bottom row in
        column ``max_steps - 1 - t``). Differentiable.
    """

    def __init__(self, kind, batch_size, max_steps, value_size, *, dtype=torch.float32, device="cpu",
                 backend="auto"):
        name = "NeuralMemory"
        H = check_kind(kind, name)
        B = _positive_int(batch_size, "batch_size", name)
        T = _positive_int(max_steps, "max_steps", name)
        m = _positive_int(value_size, "value_size", name)
        if dtype not in DTYPES:
            raise TypeError(f"{name}: dtype must be torch.float32 or torch.float64, got {dtype}")
        device = torch.device(device)
        self.backend = resolve_backend(device, backend, name)
        self.kind, self.heads = kind, H
        self.batch_size, self.max_steps, self.value_size = B, T, m
        self.dtype, self.device = dtype, device
        values = torch.zeros(B, H * T, m, dtype=dtype, device=device)
        self._store = _Store(kind, backend_module("memory", self.backend), values)
        self._strengths = torch.zeros(B, H * T, dtype=dtype, device=device)
        self._t = 0

    @property
    def t(self):
        """Steps taken so far."""
        return self._t

    @property
    def strengths(self):
        """The strengths after the last step, ``(B, W)`` (see the class docstring)."""
        return self._strengths

    def __repr__(self):
        return (f"NeuralMemory({self.kind!r}, batch_size={self.batch_size}, max_steps={self.max_steps}, "
                f"value_size={self.value_size}, dtype={self.dtype}, device={str(self.device)!r}, "
                f"backend={self.backend!r}, t={self._t})")

    def _check_step(self, v_t, d_t, u_t):
        name = "NeuralMemory.step"
        for arg, x in (("v_t", v_t), ("d_t", d_t), ("u_t", u_t)):
            check_tensor(x, arg, name)
        B, m = self.batch_size, self.value_size
        want_v = (B, m) if self.heads == 1 else (B, 2, m)
        want_d = (B,) if self.heads == 1 else (B, 2)
        heads = " (index 0 = top, 1 = bottom)" if self.heads == 2 else ""
        for arg, x, want in (("v_t", v_t, want_v), ("d_t", d_t, want_d), ("u_t", u_t, want_d)):
            if tuple(x.shape) != want:
                raise ValueError(f"{name}: for a {self.kind} of batch_size={B}, value_size={m}, {arg} must have "
                                 f"shape {want}{heads}, got {tuple(x.shape)}")
            if x.dtype != self.dtype:
                raise TypeError(f"{name}: {arg} has dtype {x.dtype} but the memory has {self.dtype}")
            if x.device != self.device:
                raise ValueError(f"{name}: {arg} is on {x.device} but the memory is on {self.device}")
        check_controls(d_t, u_t, ("d_t", "u_t"), name)

    def step(self, v_t, d_t, u_t):
        """Pop ``u_t``, push ``v_t`` with strength ``d_t``, read; return the read ``r_t``.

        Stack/queue: ``v_t (B, m)``, ``d_t, u_t (B,)``, ``r_t (B, m)``. Deque:
        ``v_t (B, 2, m)``, ``d_t, u_t (B, 2)`` and ``r_t (B, 2, m)``, index 0 =
        top, 1 = bottom. Raises RuntimeError after ``max_steps`` steps.
        """
        if self._t >= self.max_steps:
            raise RuntimeError(f"NeuralMemory.step: all max_steps={self.max_steps} steps are taken; "
                               "make a new NeuralMemory (with a larger max_steps) for a longer sequence")
        self._check_step(v_t, d_t, u_t)
        r_t, s_t = _MemoryStep.apply(v_t, d_t, u_t, self._strengths, self._store, self._t)
        self._strengths = s_t
        self._t += 1
        return r_t

    def value_buffer_bytes(self):
        """Bytes held for values: the value buffer, plus the gradient buffer while a backward pass holds one."""
        n = self._store.values.numel()
        if self._store.value_grads is not None:
            n += self._store.value_grads.numel()
        return n * self._store.values.element_size()
