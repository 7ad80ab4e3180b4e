"""Readable PyTorch reference for the modal LDStack scan: the test oracle.

The stack of depth k shares the eigenvalues λ ``(C,)``, the drive b
``(B, T, C)`` and the initial state h0 ``(B, C)`` (zeros if None)::

    s^(1)_t = λ ⊙ s^(1)_{t-1} + b_t
    s^(i)_t = α(λ ⊙ s^(i-1)_{t-1}) ⊙ λ ⊙ s^(i)_{t-1} + b_t        i = 2 .. k
    α(z)    = 1 / sqrt(1 + |z|²)            (real; |z|² = z² for real dtypes)
    s^(i)_0 = h0                             for every layer

Layer i at step t needs only layers i and i-1 at step t-1, so all layers
advance together, one step at a time: :func:`modal_stack_scan_ref` is that
loop, the version the book explains and the oracle of every kernel.

Every backend implements the same two functions:

``forward(lam, b, depth, h0) -> (last, inner)``
    ``lam`` contiguous ``(C,)``, ``b`` contiguous ``(B, T, C)``, ``h0``
    contiguous ``(B, C)`` or None. ``last`` ``(B, T, C)`` holds the states of
    layer k, ``inner`` ``(B, T, k-1, C)`` those of layers 1 .. k-1 (layer i at
    ``inner[:, :, i-1]``; empty for k = 1). Both are kept for the backward
    pass: the states cannot be recomputed stably by running the recurrence
    backwards (|λ| ≤ 1 makes the inverse recurrence blow up).

``backward(lam, last, inner, h0, g_last, g_inner) -> (grad_lam, grad_b, grad_h0)``
    ``g_last = dL/d last`` ``(B, T, C)``, ``g_inner = dL/d inner`` or None
    (layers 1 .. k-1 not used). ``grad_lam`` ``(C,)``, ``grad_b`` ``(B, T, C)``,
    ``grad_h0`` ``(B, C)`` (None when ``h0`` is None).

The backward pass (PyTorch's convention for complex gradients: the gradient
of a real loss L with respect to z = x + iy is ``dL/dx + i dL/dy``; the
conjugates vanish for real dtypes). Write ``a^(i)_t = α^(i)_t λ`` with
``α^(1) = 1`` and ``α^(i)_t = (1 + c p^(i-1)_{t-1})^(-1/2)``, ``c = |λ|²``,
``p^(i)_t = |s^(i)_t|²``. Let ``z^(i)_t`` be the total gradient reaching
``s^(i)_t``. It gets three contributions: the loss itself (``g``), the next
step of its own layer, and — through α — the next step of the layer above::

    q^(i)_t   = conj(s^(i)_{t-1}) z^(i)_t                 dL/da^(i)_t
    u^(i)_t   = Re(conj(λ) q^(i)_t)                       dL/dα^(i)_t      (i >= 2)
    w^(i)_t   = -α^(i)_t³ u^(i)_t / 2                     dL/d(c p)        (i >= 2)

    z^(i)_t   = g^(i)_t + conj(a^(i)_{t+1}) z^(i)_{t+1} + 2 c w^(i+1)_{t+1} s^(i)_t

(the last term only for i < k and t < T), and then::

    dL/db_t   = Σ_i z^(i)_t
    dL/dλ     = Σ_{b,t,i} α^(i)_t q^(i)_t  +  2 λ Σ_{b,t,i>=2} p^(i-1)_{t-1} w^(i)_t
    dL/dh0    = Σ_i [ conj(a^(i)_1) z^(i)_1 + 2 c w^(i+1)_1 h0 ]

(the first sum of dL/dλ is the direct one, λ in a = αλ; the second goes
through c = |λ|² inside α, with dc/dλ giving ``2 λ`` in this convention).
Like the forward pass, this is one pass over time — backwards — for all
layers together, carrying for each layer the gradient that flows to step t-1.
"""
import torch


def abs2(z):
    """|z|², real: ``re² + im²`` for complex tensors, ``z²`` for real ones."""
    return z.real * z.real + z.imag * z.imag if z.is_complex() else z * z


def modal_stack_scan_ref(lam, b, depth, h0=None, return_layers=False):
    """The modal LDStack as a plain loop over time, all layers stepped together.

    Same arguments and results as :func:`rnnlab.kernels.modal_stack_scan`:
    the states of the last layer ``(B, T, C)``, or with ``return_layers`` a
    list of the states of layers 1 .. depth. Differentiable by autograd,
    which makes it the oracle of the hand-written backward passes.
    """
    B, T, C = b.shape
    start = torch.zeros(B, C, dtype=b.dtype, device=b.device) if h0 is None else h0
    c = abs2(lam)                            # |λ|²: |λ s|² = c |s|²
    s = [start] * depth                       # s^(1)_{t-1} .. s^(k)_{t-1}
    out = []
    for t in range(T):
        new = [lam * s[0] + b[:, t]]          # layer 1: the LDS
        for i in range(1, depth):             # layer i+1, corrected by layer i at t-1
            alpha = torch.rsqrt(1 + c * abs2(s[i - 1]))
            new.append((alpha * lam) * s[i] + b[:, t])
        s = new
        out.append(torch.stack(s))            # (k, B, C)
    layers = torch.stack(out, 2)              # (k, B, T, C)
    return list(layers.unbind(0)) if return_layers else layers[-1]


# ---------------------------------------------------------------------------
# The backend functions (see the module docstring).
# ---------------------------------------------------------------------------

def forward(lam, b, depth, h0):
    with torch.no_grad():
        layers = modal_stack_scan_ref(lam, b, depth, h0, return_layers=True)
    inner = torch.stack(layers[:-1], 2) if depth > 1 else b.new_empty(b.shape[0], b.shape[1], 0, b.shape[2])
    return layers[-1].contiguous(), inner


def backward(lam, last, inner, h0, g_last, g_inner):
    B, T, C = last.shape
    k = inner.shape[2] + 1
    zeros = torch.zeros(B, C, dtype=last.dtype, device=last.device)
    start = zeros if h0 is None else h0
    c = abs2(lam)
    lam_conj = lam.conj()

    def state(i, t):                          # s^(i+1)_{t+1} (0-based layer i and time t; t = -1: h0)
        if t < 0:
            return start
        return last[:, t] if i == k - 1 else inner[:, t, i]

    def grad(i, t):                           # dL/ds^(i+1)_{t+1} from the loss itself
        if i == k - 1:
            return g_last[:, t]
        return zeros if g_inner is None else g_inner[:, t, i]

    grad_b = torch.empty_like(g_last)
    direct = torch.zeros(C, dtype=last.dtype, device=last.device)    # Σ α q
    through_c = torch.zeros(C, dtype=c.dtype, device=last.device)    # Σ p w
    carry = [zeros] * k                       # gradient reaching s^(i)_t from step t+1
    for t in range(T - 1, -1, -1):
        ext = zeros                           # 2 c w s_{t-1}: from layer i+1 down to layer i
        total = zeros
        for i in range(k - 1, -1, -1):
            z = grad(i, t) + carry[i]         # z^(i)_t
            total = total + z
            q = state(i, t - 1).conj() * z    # dL/da^(i)_t
            if i == 0:
                direct = direct + q.sum(0)
                carry[i] = lam_conj * z + ext
            else:
                below = state(i - 1, t - 1)
                p = abs2(below)
                alpha = torch.rsqrt(1 + c * p)
                direct = direct + (alpha * q).sum(0)
                u = (lam_conj * q).real                   # dL/dα
                w = -0.5 * alpha * alpha * alpha * u      # dL/d(c p)
                through_c = through_c + (p * w).sum(0)
                carry[i] = (alpha * lam).conj() * z + ext
                ext = 2 * c * w * below                   # reaches s^(i-1)_{t-1} through p
        grad_b[:, t] = total
    grad_lam = direct + 2 * lam * through_c
    grad_h0 = None if h0 is None else sum(carry[1:], carry[0])
    return grad_lam, grad_b, grad_h0
