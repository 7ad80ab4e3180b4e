"""Readable PyTorch reference for the linear scan: the test oracle.

The recurrence, along dim 1 of ``(B, T, C)`` tensors::

    forward  (reverse=False):  h_t = a_t * h_{t-1} + b_t,   t = 1 .. T,    h_0     = h0
    backward (reverse=True):   h_t = a_t * h_{t+1} + b_t,   t = T .. 1,    h_{T+1} = h0

Every backend implements the same two functions with the same arguments:

``forward(a, b, h0, reverse) -> h``
    ``a`` is contiguous with shape ``(Ba, Ta, C)``, ``Ba`` in ``{1, B}`` and
    ``Ta`` in ``{1, T}`` (a size-1 dimension is broadcast, never copied);
    ``b`` is contiguous ``(B, T, C)``; ``h0`` is contiguous ``(B, C)`` or None.

``backward(a, h, g, h0, reverse) -> (G, grad_a, grad_h0)``
    ``h`` is the forward output and ``g = dL/dh`` (both ``(B, T, C)``).
    ``G_t`` is the total gradient reaching ``h_t`` (through every later state),
    which is also ``dL/db_t``::

        G_t = g_t + conj(a_{t+1}) * G_{t+1}        (reverse=False: a reverse scan)
        G_t = g_t + conj(a_{t-1}) * G_{t-1}        (reverse=True: a forward scan)

    and ``grad_a_t = G_t * conj(h_prev_t)`` with ``h_prev_t`` the state that
    ``a_t`` multiplies (``h_{t-1}``, or ``h0``/0 at the boundary), returned
    full ``(B, T, C)`` or already summed over time when ``a`` is shared over
    time (``(B, 1, C)`` or ``(1, 1, C)``: the CPU kernel sums inside the
    kernel); the caller sums what is left down to the shape of ``a``. Conjugates
    follow PyTorch's convention for complex gradients (they vanish for real
    dtypes). ``grad_h0 = conj(a_first) * G_first`` (``(B, C)``, with ``first``
    the first step of the recurrence: t = 1, or t = T when reversed) is the
    carry left over once the backward scan has passed every step.
"""
import torch


def _a_at(a, t):
    """a_t as a (Ba, C) slice, whatever the broadcast form of ``a``."""
    return a[:, t if a.shape[1] > 1 else 0]


def forward(a, b, h0, reverse):
    B, T, C = b.shape
    h = torch.empty_like(b)
    state = torch.zeros(B, C, dtype=b.dtype, device=b.device) if h0 is None else h0
    steps = range(T - 1, -1, -1) if reverse else range(T)
    for t in steps:
        state = _a_at(a, t) * state + b[:, t]
        h[:, t] = state
    return h


def backward(a, h, g, h0, reverse):
    B, T, C = g.shape
    G = torch.empty_like(g)
    grad_a = torch.empty_like(g)
    carry = torch.zeros(B, C, dtype=g.dtype, device=g.device)
    zeros = torch.zeros(B, C, dtype=g.dtype, device=g.device) if h0 is None else h0
    # The gradient flows against the direction of the recurrence. a_t
    # multiplies the previous state h_prev_t, so G_t reaches it as conj(a_t) G_t.
    steps = range(T) if reverse else range(T - 1, -1, -1)
    prev = 1 if reverse else -1  # offset of h_prev_t from t
    for t in steps:
        carry = g[:, t] + carry
        G[:, t] = carry
        tp = t + prev
        h_prev = h[:, tp] if 0 <= tp < T else zeros
        grad_a[:, t] = carry * h_prev.conj()
        carry = _a_at(a, t).conj() * carry
    return G, grad_a, carry


def linear_scan_ref(a, b, h0=None, reverse=False):
    """The linear recurrence as a plain loop over time, differentiable by autograd.

    Accepts the same broadcast forms of ``a`` as :func:`rnnlab.linear_scan`
    (``(B, T, C)``, ``(T, C)`` or ``(C,)``). This is the version the book
    explains first and the oracle every kernel is tested against; autograd
    differentiates it directly, so it also checks the hand-written backward.
    """
    B, T, C = b.shape
    a3 = a.reshape((1,) * (3 - a.dim()) + tuple(a.shape))
    state = torch.zeros(B, C, dtype=b.dtype, device=b.device) if h0 is None else h0
    out = [None] * T
    steps = range(T - 1, -1, -1) if reverse else range(T)
    for t in steps:
        state = _a_at(a3, t) * state + b[:, t]
        out[t] = state
    return torch.stack(out, dim=1)
