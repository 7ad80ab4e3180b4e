"""Recurrent Jacobians ∂h_t/∂h_{t−1} of the RNN, LSTM, GRU and CfC cells (Tumma et al. 2024, A.4).

Three versions, so the book can set them side by side:

- :func:`recurrent_jacobian`: the analytic Jacobian, derived below and
  tested against autograd for every cell, rank and sparsity;
- :func:`appendix_jacobian`: the appendix's formulas *as printed* (RNN
  A.4.1, LSTM A.4.2, CfC A.4.3; the appendix gives none for the GRU);
- :func:`autograd_jacobian`: autograd of the model's ``step``.

Notation: ``W_g`` the gates' recurrent matrices ``W_rec(r, s)`` (torch's
outputs × inputs), ``pre_g = W_ig x_t + W_g h_{t−1} + b_g``, ``D(v)`` the
diagonal matrix of ``v``; ``σ' = σ(1 − σ)``, ``tanh' = 1 − tanh²``.

Derivation
----------
- RNN, ``h_t = tanh(pre)``: ``J = D(1 − h_t²) W``. The appendix prints
  ``(1 − tanh²(h_{t−1})) ⊙ W_h``: the derivative of tanh taken at the
  previous *state* instead of at the pre-activation. The two agree only by
  accident (e.g. where ``tanh(h_{t−1}) = ±h_t``).
- LSTM, ``c_t = f ⊙ c_{t−1} + i ⊙ g``, ``h_t = o ⊙ tanh(c_t)``:
  ``∂c_t/∂h_{t−1} = D(c_{t−1} σ'_f) W_f + D(g σ'_i) W_i + D(i tanh'_g) W_g``
  with ``c_{t−1}`` held fixed, and
  ``∂h_t/∂h_{t−1} = D(tanh(c_t) σ'_o) W_o + D(o (1 − tanh²c_t)) ∂c_t/∂h_{t−1}``.
  The appendix's ``∂c_t/∂h_{t−1}`` ends in ``+ f_t``: that is
  ``∂c_t/∂c_{t−1} = D(f_t)``, a different block of the state Jacobian, and
  does not belong in a derivative with respect to ``h_{t−1}`` (we evaluate
  it as printed by adding ``D(f_t)``). The LSTM's state is ``(h, c)``: its
  full Jacobian is the ``2H × 2H`` block matrix
  ``[[∂h_t/∂h_{t−1}, D(o tanh'(c_t) f)], [∂c_t/∂h_{t−1}, D(f)]]``; the ``D(f)``
  block is the cell's memory (with ``f ≈ 1`` it carries ``c`` unchanged), and
  "c held fixed" discards it: products of the ``H × H`` block alone forget
  far faster than the LSTM does.
- GRU (reset before ``W_n``), ``h_t = (1 − z) ⊙ n + z ⊙ h_{t−1}``:
  ``J = D(z) + D((h_{t−1} − n) σ'_z) W_z
  + D((1 − z)(1 − n²)) W_n (D(r) + D(h_{t−1} σ'_r) W_r)``.
- CfC, ``h_t = σ(F) ⊙ G + (1 − σ(F)) ⊙ H``:
  ``J = D(σ_F tanh'_G) W_G + D((1 − σ_F) tanh'_H) W_H + D((G − H) σ'_F) W_F``.
  The appendix prints the last term's H part as
  ``tanh(y_h) ⊙ [1 − σ'_F ⊙ W_F]``, which is ``−D(H σ'_F) W_F`` (right) plus
  ``D(H) 𝟙𝟙ᵀ`` (a matrix of ones from "1 −", wrong); as printed we add it.
"""
import torch

from ..kernels.cells_torch import GATES

KINDS = tuple(GATES)


def _kind(model):
    kind = getattr(model, "kind", None)
    if kind not in KINDS:
        raise TypeError("model must be one of rnnlab.models.RNN, LSTM, GRU, CfC (a cell with .kind in "
                        f"{KINDS}), got {type(model).__name__}")
    return kind


def _parts(model, x_t, state):
    """Everything the formulas need at one step: gates, states, matrices."""
    kind = _kind(model)
    if not isinstance(x_t, torch.Tensor) or x_t.dim() != 2 or x_t.shape[1] != model.input_size:
        got = tuple(x_t.shape) if isinstance(x_t, torch.Tensor) else type(x_t).__name__
        raise ValueError(f"x_t must be a (B, input_size) tensor with input_size={model.input_size}, got {got}")
    h, c = model._check_state(state, x_t.shape[0], x_t)
    W = model.recurrent_weights()
    xp = model.input_drive(x_t)
    p = {"kind": kind, "W": W, "h": h, "c": c}
    if kind == "gru":
        r = torch.sigmoid(xp[:, 0] + h @ W[0].T)
        z = torch.sigmoid(xp[:, 1] + h @ W[1].T)
        n = torch.tanh(xp[:, 2] + (r * h) @ W[2].T)
        p.update(r=r, z=z, n=n)
        return p
    pre = xp + torch.einsum("bk,gjk->bgj", h, W)
    p["pre"] = pre
    return p


def _D(v, M):
    """``D(v) M`` for a batch: rows of ``M`` ``(H, H)`` scaled by ``v`` ``(B, H)``."""
    return v.unsqueeze(-1) * M


def recurrent_jacobian(model, x_t, state=None, *, full_state=False):
    """Analytic ``∂h_t/∂h_{t−1}`` of a cell at input ``x_t`` ``(B, input_size)`` and ``state``: ``(B, H, H)``.

    ``state`` is ``h_{t−1}`` ``(B, H)`` (or ``(h, c)`` for the LSTM; None: zeros).
    For the LSTM, ``full_state=False`` holds ``c_{t−1}`` fixed (the appendix's
    ``J_t``); ``full_state=True`` returns the Jacobian of the whole state
    ``(h_t, c_t)`` with respect to ``(h_{t−1}, c_{t−1})``, ``(B, 2H, 2H)``, which
    is the one whose products measure the LSTM's memory. The derivation is in
    the module docstring; tested against :func:`autograd_jacobian`.
    """
    p = _parts(model, x_t, state)
    kind, W, h = p["kind"], p["W"], p["h"]
    if full_state and kind != "lstm":
        raise ValueError(f"full_state=True is for the LSTM, whose state is (h, c); kind={kind!r} has state h")
    if kind == "rnn":
        h_new = torch.tanh(p["pre"][:, 0])
        return _D(1 - h_new ** 2, W[0])
    if kind == "gru":
        r, z, n = p["r"], p["z"], p["n"]
        inner = torch.diag_embed(r) + _D(h * r * (1 - r), W[0])     # ∂(r ⊙ h)/∂h = D(r) + D(h σ'_r) W_r
        return (torch.diag_embed(z) + _D((h - n) * z * (1 - z), W[1])
                + _D((1 - z) * (1 - n ** 2), W[2]) @ inner)
    pre = p["pre"]
    if kind == "cfc":
        f, g, k = torch.sigmoid(pre[:, 0]), torch.tanh(pre[:, 1]), torch.tanh(pre[:, 2])
        return (_D(f * (1 - g ** 2), W[1]) + _D((1 - f) * (1 - k ** 2), W[2])
                + _D((g - k) * f * (1 - f), W[0]))
    # LSTM
    c = p["c"]
    i, f, o = torch.sigmoid(pre[:, 0]), torch.sigmoid(pre[:, 1]), torch.sigmoid(pre[:, 3])
    g = torch.tanh(pre[:, 2])
    c_new = f * c + i * g
    tc = torch.tanh(c_new)
    dc_dh = _D(c * f * (1 - f), W[1]) + _D(g * i * (1 - i), W[0]) + _D(i * (1 - g ** 2), W[2])
    dh_dh = _D(tc * o * (1 - o), W[3]) + _D(o * (1 - tc ** 2), dc_dh)
    if not full_state:
        return dh_dh
    dh_dc = torch.diag_embed(o * (1 - tc ** 2) * f)
    dc_dc = torch.diag_embed(f)
    return torch.cat([torch.cat([dh_dh, dh_dc], 2), torch.cat([dc_dh, dc_dc], 2)], 1)


def appendix_jacobian(model, x_t, state=None):
    """The appendix's ``J_t`` formulas evaluated as printed (A.4.1-A.4.3): ``(B, H, H)``.

    RNN: ``(1 − tanh²(h_{t−1})) ⊙ W_h`` (row-wise). LSTM: A.4.2 with its final
    ``+ f_t`` read as ``+ D(f_t)``. CfC: A.4.3 with ``1 − X`` for a matrix ``X``
    read as ``𝟙𝟙ᵀ − X``. The appendix has no GRU formula (a ValueError).
    Where these differ from :func:`recurrent_jacobian`, the appendix is wrong;
    the module docstring says where and why.
    """
    p = _parts(model, x_t, state)
    kind, W, h = p["kind"], p["W"], p["h"]
    if kind == "gru":
        raise ValueError("appendix_jacobian: appendix A.4 gives no formula for the GRU (only RNN, LSTM, CfC)")
    pre = p["pre"]
    if kind == "rnn":
        return _D(1 - torch.tanh(h) ** 2, W[0])
    if kind == "cfc":
        sf, yg, yh = torch.sigmoid(pre[:, 0]), torch.tanh(pre[:, 1]), torch.tanh(pre[:, 2])
        dsf = sf * (1 - sf)
        ones = torch.ones_like(W[0])
        return (_D(sf * (1 - yg ** 2), W[1]) + _D(yg, _D(dsf, W[0]))
                + _D((1 - sf) * (1 - yh ** 2), W[2]) + _D(yh, ones - _D(dsf, W[0])))
    c = p["c"]
    i, f, o = torch.sigmoid(pre[:, 0]), torch.sigmoid(pre[:, 1]), torch.sigmoid(pre[:, 3])
    yc = torch.tanh(pre[:, 2])
    c_new = f * c + i * yc
    df, di, do = _D(f * (1 - f), W[1]), _D(i * (1 - i), W[0]), _D(o * (1 - o), W[3])
    dc = _D(c, df) + _D(yc, di) + _D(i * (1 - yc ** 2), W[2]) + torch.diag_embed(f)
    return _D(torch.tanh(c_new), do) + _D(o * (1 - torch.tanh(c_new) ** 2), dc)


def autograd_jacobian(model, x_t, state=None, *, full_state=False):
    """``∂h_t/∂h_{t−1}`` by autograd of ``model.step``: ``(B, H, H)`` (``(B, 2H, 2H)`` with ``full_state``)."""
    kind = _kind(model)
    if full_state and kind != "lstm":
        raise ValueError(f"full_state=True is for the LSTM, whose state is (h, c); kind={kind!r} has state h")
    if not isinstance(x_t, torch.Tensor) or x_t.dim() != 2 or x_t.shape[1] != model.input_size:
        got = tuple(x_t.shape) if isinstance(x_t, torch.Tensor) else type(x_t).__name__
        raise ValueError(f"x_t must be a (B, input_size) tensor with input_size={model.input_size}, got {got}")
    h, c = model._check_state(state, x_t.shape[0], x_t)
    H = model.hidden_size

    def one(x1, s1):
        if kind == "lstm":
            hh, cc = s1[:H], s1[H:]
            h_new, (_, c_new) = model.step(x1[None], (hh[None], cc[None]))
            return torch.cat([h_new[0], c_new[0]]) if full_state else h_new[0]
        h_new, _ = model.step(x1[None], s1[None])
        return h_new[0]

    s = torch.cat([h, c], 1) if kind == "lstm" else h
    J = torch.stack([torch.autograd.functional.jacobian(lambda v: one(x1, v), s1) for x1, s1 in zip(x_t, s)])
    return J if full_state or kind != "lstm" else J[:, :, :H]


model_kind = _kind      # public, for rnnlab.theory.horizon
