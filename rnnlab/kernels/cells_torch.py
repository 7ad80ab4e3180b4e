"""Readable PyTorch reference for ``recurrent_cell``: the four cells' time loops, and their backward.

The cells of Tumma et al. (2024), "Leveraging Low-Rank and Sparse Recurrent
Connectivity for Robust Closed-Loop Control" (appendix A.4), written so that
every recurrent matrix is a plain ``(H, H)`` matrix: the models build it as
``W_rec(r, s) = (W1 W2) ⊙ M`` and hand it here, so one op serves every rank and
sparsity (autograd takes the gradient from ``W`` back to ``W1``, ``W2``).

Interface (shared by every backend)
-----------------------------------
- ``xp`` ``(B, T, G, H)``: the input drive of every gate at every step,
  ``W_i x_t + b`` (one matrix product for all steps, done by the model);
- ``W`` ``(G, H, H)``: the gates' recurrent matrices, ``W[g] @ h`` being gate
  ``g``'s recurrent drive (torch's ``weight_hh`` convention: rows are outputs);
- ``h0`` ``(B, H)`` and, for the LSTM, ``c0`` ``(B, H)``: the initial state.

Gates, in torch's order where torch has the cell (``pre_g = xp[:, t, g] + W[g] h``):

=======  ==  =========================================================================
kind     G   step
=======  ==  =========================================================================
rnn      1   h' = tanh(pre)
lstm     4   i, f, o = σ(pre_i), σ(pre_f), σ(pre_o); g = tanh(pre_g) (order i, f, g, o)
             c' = f ⊙ c + i ⊙ g;  h' = o ⊙ tanh(c')
gru      3   r, z = σ(pre_r), σ(pre_z) (order r, z, n)
             n = tanh(xp_n + W_n (r ⊙ h));  h' = (1 − z) ⊙ n + z ⊙ h
cfc      3   f = σ(pre_f); g = tanh(pre_g); k = tanh(pre_h) (order f, g, h)
             h' = f ⊙ g + (1 − f) ⊙ k
=======  ==  =========================================================================

One bias per gate (inside ``xp``). The GRU applies its reset gate *before*
the recurrent matrix (Cho et al. 2014; Keras ``reset_after=False``): with one
bias per gate that is the GRU whose parameter count Table 10 gives (61632 at
input 256, hidden 64); ``torch.nn.GRU`` resets after the matrix and carries a
second bias. The CfC is the seed's (A.4.3): three heads F, G, H, no backbone,
no time input.

Every backend returns ``hs`` ``(B, T, H)`` (the hidden state after every step),
``cs`` ``(B, T, H)`` for the LSTM (``None`` otherwise) and ``acts``
``(B, T, G, H)``: each gate's activation (σ or tanh of its pre-activation),
which is all the backward needs besides the states.

Backward (derivation)
---------------------
Steps run backwards; ``δh`` is ∂L/∂h_t with every later step's contribution
already in it, ``δc`` the same for the LSTM's cell. For each cell, the
pre-activation gradients ``δpre`` ``(G, H)`` of the step follow from the chain
rule through one step, with σ' = σ(1 − σ), tanh' = 1 − tanh²:

- RNN: ``δpre = δh ⊙ (1 − h'²)``.
- LSTM: ``τ = tanh(c')``; ``δo = δh ⊙ τ``; ``δc ← δc + δh ⊙ o ⊙ (1 − τ²)``;
  ``δi = δc ⊙ g``, ``δg = δc ⊙ i``, ``δf = δc ⊙ c``; then each through its
  activation; the carried ``δc ← δc ⊙ f``.
- GRU: ``δn = δh ⊙ (1 − z)``, ``δz = δh ⊙ (h − n)``; ``δpre_n = δn ⊙ (1 − n²)``;
  ``δ(r⊙h) = W_nᵀ δpre_n``; ``δr = δ(r⊙h) ⊙ h``; then σ' for ``r`` and ``z``.
- CfC: ``δf = δh ⊙ (g − k)``, ``δg = δh ⊙ f``, ``δk = δh ⊙ (1 − f)``; each
  through its activation.

The carried hidden gradient is ``δh_{t−1} = Σ_g W[g]ᵀ δpre_g`` plus the direct
paths: the GRU adds ``δh ⊙ z + δ(r⊙h) ⊙ r`` (and its ``W_n`` term enters
through ``δ(r⊙h)``, not ``δpre_n``). The input drive's gradient is
``∂L/∂xp[:, t] = δpre`` and the matrices' is a sum of outer products,
``∂L/∂W[g] = Σ_{b,t} δpre_g ⊗ u_g`` with ``u_g = h_{t−1}`` (``r ⊙ h_{t−1}`` for
the GRU's ``n``): one matrix product over all steps, done outside the time loop.

:func:`recurrent_cell_backward_ref` is that derivation as a loop; the kernels
implement it and the tests hold both to autograd of :func:`recurrent_cell_ref`.
"""
import torch

KINDS = ("rnn", "lstm", "gru", "cfc")
GATES = {"rnn": 1, "lstm": 4, "gru": 3, "cfc": 3}
GATE_NAMES = {"rnn": ("h",), "lstm": ("i", "f", "g", "o"), "gru": ("r", "z", "n"), "cfc": ("f", "g", "h")}


def cell_step_ref(kind, xp_t, W, h, c=None):
    """One step of a cell: ``(h', c')`` from the drive ``xp_t`` ``(B, G, H)`` and the state.

    ``c`` and ``c'`` are the LSTM's cell state (``None`` for the other cells).
    Plain torch ops, differentiable by autograd (the models' ``step``).
    """
    if kind == "rnn":
        return torch.tanh(xp_t[:, 0] + h @ W[0].T), None
    if kind == "lstm":
        pre = xp_t + torch.einsum("bk,gjk->bgj", h, W)
        i, f, o = torch.sigmoid(pre[:, 0]), torch.sigmoid(pre[:, 1]), torch.sigmoid(pre[:, 3])
        g = torch.tanh(pre[:, 2])
        c_new = f * c + i * g
        return o * torch.tanh(c_new), c_new
    if kind == "gru":
        r = torch.sigmoid(xp_t[:, 0] + h @ W[0].T)
        z = torch.sigmoid(xp_t[:, 1] + h @ W[1].T)
        n = torch.tanh(xp_t[:, 2] + (r * h) @ W[2].T)
        return (1 - z) * n + z * h, None
    if kind == "cfc":
        pre = xp_t + torch.einsum("bk,gjk->bgj", h, W)
        f, g, k = torch.sigmoid(pre[:, 0]), torch.tanh(pre[:, 1]), torch.tanh(pre[:, 2])
        return f * g + (1 - f) * k, None
    raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")


def recurrent_cell_ref(kind, xp, W, h0, c0=None):
    """The readable loop: ``(hs, cs)`` over a whole sequence, differentiable by autograd.

    ``hs`` ``(B, T, H)`` are the hidden states after every step; ``cs`` the
    LSTM's cell states (``None`` for the other cells).
    """
    h, c = h0, c0
    hs, cs = [], []
    for t in range(xp.shape[1]):
        h, c = cell_step_ref(kind, xp[:, t], W, h, c)
        hs.append(h)
        cs.append(c)
    return torch.stack(hs, 1), (torch.stack(cs, 1) if kind == "lstm" else None)


# ---------------------------------------------------------------------------
# The interface every backend implements: forward saves activations, backward
# returns the pre-activation gradients; the op turns those into dW and dxp.
# ---------------------------------------------------------------------------

def _activations(kind, pre):
    """σ or tanh of each gate's pre-activation, ``(B, G, H)``."""
    if kind == "rnn":
        return torch.tanh(pre)
    act = torch.sigmoid(pre)
    tanh_gate = {"lstm": (2,), "gru": (2,), "cfc": (1, 2)}[kind]
    for g in tanh_gate:
        act[:, g] = torch.tanh(pre[:, g])
    return act


def forward(kind, xp, W, h0, c0):
    """Reference forward of the interface: ``(hs, cs, acts)`` (see the module docstring)."""
    B, T, G, H = xp.shape
    hs = xp.new_empty(B, T, H)
    cs = xp.new_empty(B, T, H) if kind == "lstm" else None
    acts = xp.new_empty(B, T, G, H)
    h, c = h0, c0
    for t in range(T):
        if kind == "gru":
            r = torch.sigmoid(xp[:, t, 0] + h @ W[0].T)
            z = torch.sigmoid(xp[:, t, 1] + h @ W[1].T)
            n = torch.tanh(xp[:, t, 2] + (r * h) @ W[2].T)
            a = torch.stack([r, z, n], 1)
            h = (1 - z) * n + z * h
        else:
            a = _activations(kind, xp[:, t] + torch.einsum("bk,gjk->bgj", h, W))
            if kind == "rnn":
                h = a[:, 0]
            elif kind == "lstm":
                c = a[:, 1] * c + a[:, 0] * a[:, 2]
                h = a[:, 3] * torch.tanh(c)
                cs[:, t] = c
            else:
                h = a[:, 0] * a[:, 1] + (1 - a[:, 0]) * a[:, 2]
        hs[:, t] = h
        acts[:, t] = a
    return hs, cs, acts


def backward(kind, W, h0, c0, hs, cs, acts, g_hs, g_cs):
    """Reference backward of the interface, the derivation above as a loop.

    ``g_hs`` ``(B, T, H)``: ∂L/∂h_t from outside; ``g_cs`` ``(B, T, H)`` or
    None: ∂L/∂c_t from outside (LSTM; None means zero).
    Returns ``(g_pre, g_h0, g_c0)``: ``g_pre`` ``(B, T, G, H)`` the
    pre-activation gradients (equal to ∂L/∂xp), ``g_c0`` None but for the LSTM.
    """
    B, T, G, H = acts.shape
    g_pre = torch.empty_like(acts)
    dh = torch.zeros_like(h0)
    dc = torch.zeros_like(h0) if kind == "lstm" else None
    for t in range(T - 1, -1, -1):
        dh = dh + g_hs[:, t]
        if g_cs is not None:
            dc = dc + g_cs[:, t]
        h_prev = h0 if t == 0 else hs[:, t - 1]
        a = acts[:, t]
        if kind == "rnn":
            gp = (dh * (1 - a[:, 0] ** 2)).unsqueeze(1)
            dh = gp[:, 0] @ W[0]
        elif kind == "lstm":
            i, f, g, o = a[:, 0], a[:, 1], a[:, 2], a[:, 3]
            c_prev = c0 if t == 0 else cs[:, t - 1]
            tc = torch.tanh(cs[:, t])
            dc = dc + dh * o * (1 - tc ** 2)
            gp = torch.stack([dc * g * i * (1 - i), dc * c_prev * f * (1 - f),
                              dc * i * (1 - g ** 2), dh * tc * o * (1 - o)], 1)
            dc = dc * f
            dh = torch.einsum("bgj,gjk->bk", gp, W)
        elif kind == "gru":
            r, z, n = a[:, 0], a[:, 1], a[:, 2]
            gn = dh * (1 - z) * (1 - n ** 2)
            d_rh = gn @ W[2]
            gp = torch.stack([d_rh * h_prev * r * (1 - r), dh * (h_prev - n) * z * (1 - z), gn], 1)
            dh = dh * z + d_rh * r + gp[:, 0] @ W[0] + gp[:, 1] @ W[1]
        else:
            f, g, k = a[:, 0], a[:, 1], a[:, 2]
            gp = torch.stack([dh * (g - k) * f * (1 - f), dh * f * (1 - g ** 2), dh * (1 - f) * (1 - k ** 2)], 1)
            dh = torch.einsum("bgj,gjk->bk", gp, W)
        g_pre[:, t] = gp
    return g_pre, dh, dc


def recurrent_inputs(kind, h0, hs, acts):
    """``u`` ``(B, T, G, H)``: what each gate's matrix multiplies at each step (``h_{t−1}``, or
    ``r ⊙ h_{t−1}`` for the GRU's ``n``), so that ``∂L/∂W[g] = Σ_{b,t} δpre_g ⊗ u_g``."""
    h_prev = torch.cat([h0.unsqueeze(1), hs[:, :-1]], 1)
    G = acts.shape[2]
    u = h_prev.unsqueeze(2).expand(-1, -1, G, -1)
    if kind == "gru":
        u = u.clone()
        u[:, :, 2] = acts[:, :, 0] * h_prev
    return u


def weight_grad(kind, h0, hs, acts, g_pre):
    """``∂L/∂W`` ``(G, H, H)`` from the pre-activation gradients: one product over all steps."""
    u = recurrent_inputs(kind, h0, hs, acts)
    return torch.einsum("btgj,btgk->gjk", g_pre, u)


def recurrent_cell_backward_ref(kind, xp, W, h0, c0, g_hs, g_cs=None):
    """The hand-written backward as a readable function: ``(∂L/∂xp, ∂L/∂W, ∂L/∂h0, ∂L/∂c0)``.

    For a loss with ``∂L/∂hs = g_hs`` and, for the LSTM, ``∂L/∂cs = g_cs``
    (None: zero). The tests hold it to autograd of :func:`recurrent_cell_ref`.
    """
    with torch.no_grad():
        hs, cs, acts = forward(kind, xp, W, h0, c0)
        g_pre, g_h0, g_c0 = backward(kind, W, h0, c0, hs, cs, acts, g_hs, g_cs)
        return g_pre, weight_grad(kind, h0, hs, acts, g_pre), g_h0, g_c0
