"""RNN, LSTM, GRU and CfC cells with low-rank and sparse recurrent connectivity.

Tumma, Lechner, Loo, Hasani, Rus (ICLR 2024), "Leveraging Low-Rank and
Sparse Recurrent Connectivity for Robust Closed-Loop Control": every
recurrent matrix of a cell is

    W_rec(r, s) = (W1 W2) ⊙ M,      W1 (n × r), W2 (r × n) trained, M fixed,

with its own factors and its own mask ``M`` of Bernoulli(1 − s) entries,
drawn once. At full rank (``rank=None``) there is no factorisation:
``W_rec = W ⊙ M``. Input weights stay dense and full rank; one bias per gate.

The cells' equations and gate orders are in :mod:`rnnlab.kernels.cells_torch`;
the time loop is the op :func:`rnnlab.kernels.recurrent_cell` (numba kernels
with a hand-written backward). ``step`` runs one time step in plain torch ops,
which autograd differentiates (the Jacobians of :mod:`rnnlab.theory`).
"""
import math

import torch
from torch import nn

from .._validate import check_choice, check_fraction, check_int, check_optional_int
from ..kernels import cell_step_ref, recurrent_cell
from ..kernels.cells_torch import GATE_NAMES, GATES
from .common import resolve_dtype, resolve_generator

INITS = ("orthogonal", "glorot", "concatenated")


# ---------------------------------------------------------------------------
# Initialisation (appendix A.10).
# ---------------------------------------------------------------------------

def _check_rank_sparsity(n, rank, sparsity, name, n_name="n (the hidden size)"):
    check_int(n_name, n, minimum=1, fn=name)
    if check_optional_int("rank", rank, fn=name, none_means="full rank") is not None and not 1 <= rank <= n:
        raise ValueError(f"{name}: rank must lie in [1, n] = [1, {n}] (None for full rank), got {rank}")
    check_fraction("sparsity", sparsity, fn=name)


def haar_orthogonal(n, m=None, *, generator=None, dtype=torch.float64):
    """A Haar-distributed ``n × m`` matrix with orthonormal columns (``m <= n``) or rows (``m > n``).

    QR of a Gaussian matrix with the signs of R's diagonal folded into Q, which
    makes the distribution exactly uniform (Mezzadri 2007), as
    ``torch.nn.init.orthogonal_`` and Keras's ``Orthogonal`` do.
    """
    m = n if m is None else m
    tall = n >= m
    a = torch.randn(max(n, m), min(n, m), generator=generator, dtype=torch.float64)
    q, r = torch.linalg.qr(a)
    q = q * torch.sign(torch.diagonal(r)).where(torch.diagonal(r) != 0, torch.ones(()))
    return (q if tall else q.T).to(dtype)


def glorot_uniform(n_out, n_in, *, generator=None, dtype=torch.float64):
    """Glorot (Xavier) uniform entries: U(−a, a) with a = √(6 / (n_in + n_out)); variance 1/n when square."""
    a = math.sqrt(6.0 / (n_in + n_out))
    return ((torch.rand(n_out, n_in, generator=generator, dtype=torch.float64) * 2 - 1) * a).to(dtype)


def _split_rank(W0, rank, init, generator):
    """The rank-r factors ``(W1, W2)`` of ``W0``: its rank-r truncated SVD, split evenly.

    ``W0 = U S Vᵀ``; ``W1 = U_r S_r^½``, ``W2 = S_r^½ V_rᵀ`` (Eckart–Young: the
    best rank-r approximation in the spectral and Frobenius norms).

    An orthogonal ``W0`` has all singular values 1: every r-dimensional
    subspace is an equally good truncation, and LAPACK's choice among them
    is arbitrary. We keep a *uniformly random* one: with ``V`` Haar,
    ``W1 = W0 V_r`` (orthonormal columns), ``W2 = V_rᵀ`` (orthonormal rows),
    so ``W1 W2 = W0 V_r V_rᵀ``. Its nonzero eigenvalues are those of the r × r
    compression ``V_rᵀ W0 V_r``, distributed as a principal r × r submatrix of
    a Haar orthogonal matrix: the case A.6.3 analyses (ρ ≈ √(r/n)). Taking the
    first r coordinates instead (``V = I``, A.6.3's "one valid SVD") has the
    same distribution, but ties the kept subspace to the neuron numbering,
    which a mask then cuts unevenly.
    """
    if init == "orthogonal":
        V = haar_orthogonal(W0.shape[1], rank, generator=generator, dtype=W0.dtype)
        return W0 @ V, V.T.contiguous()
    # Glorot, or a block of a concatenated orthogonal draw (not orthogonal itself): the top-r SVD.
    U, S, Vh = torch.linalg.svd(W0)
    root = S[:rank].sqrt()
    return U[:, :rank] * root, root[:, None] * Vh[:rank]


def init_recurrent(n, rank=None, sparsity=0.0, init="orthogonal", generator=None, *, gates=None,
                   dtype=torch.float32):
    """Initial factors and mask of ``W_rec(r, s) = (W1 @ W2) ⊙ M`` (appendix A.10).

    Parameters
    ----------
    n : int
        Hidden size; every matrix is ``n × n``.
    rank : int in [1, n] or None
        None: full rank, no factorisation (``W2`` is None, ``W1`` is the matrix).
    sparsity : float in [0, 1)
        Each entry of ``M`` is 1 with probability ``1 − sparsity``, drawn once.
    init : ``"orthogonal"``, ``"glorot"`` or ``"concatenated"``
        ``"orthogonal"`` (the paper's *orthogonal spectral initialisation*):
        each matrix its own Haar orthogonal draw ``W0``, then the rank-r split
        (:func:`_split_rank` says which subspace is kept). ``"glorot"``: the
        same with Glorot-uniform ``W0`` (entries of variance 1/n), split by its
        top-r SVD. ``"concatenated"`` (TensorFlow's default that Lemma 1 is
        about): one orthogonal draw of the ``n × G n`` matrix of all the gates
        side by side (Keras's ``recurrent_kernel``, inputs × outputs), each
        gate's matrix one ``n × n`` block of it, transposed to torch's
        outputs × inputs; needs ``gates``.
    generator : torch.Generator or None
        Source of every random draw (``W0``, the kept subspace, ``M``).
    gates : int or None
        None: one matrix, ``W1 (n, r)``, ``W2 (r, n)``, ``M (n, n)``. An int G:
        G independent matrices stacked first, ``(G, n, r)``, ``(G, r, n)``,
        ``(G, n, n)`` (one draw per gate; one joint draw for "concatenated").

    Returns
    -------
    (W1, W2, M)
        ``W = (W1 @ W2) * M``; at full rank ``W2`` is None and ``W1`` already
        holds ``W0 ⊙ M`` (masked entries exactly zero).
    """
    name = "init_recurrent"
    _check_rank_sparsity(n, rank, sparsity, name)
    check_choice("init", init, INITS, fn=name)
    check_optional_int("gates", gates, minimum=1, fn=name, none_means="one matrix")
    if init == "concatenated" and gates is None:
        raise ValueError(f"{name}: init='concatenated' draws the gates' matrices jointly: pass gates (e.g. 4 "
                         "for an LSTM)")
    G = 1 if gates is None else gates
    if init == "concatenated":
        K = haar_orthogonal(n, G * n, generator=generator)          # (n, G n): orthonormal rows
        W0s = [K[:, g * n:(g + 1) * n].T for g in range(G)]
    elif init == "orthogonal":
        W0s = [haar_orthogonal(n, generator=generator) for _ in range(G)]
    else:
        W0s = [glorot_uniform(n, n, generator=generator) for _ in range(G)]
    W1s, W2s, Ms = [], [], []
    for W0 in W0s:
        M = (torch.rand(n, n, generator=generator, dtype=torch.float64) >= sparsity).to(torch.float64)
        if rank is None:
            W1s.append(W0 * M)
        else:
            W1, W2 = _split_rank(W0, rank, init, generator)
            W1s.append(W1)
            W2s.append(W2)
        Ms.append(M)
    if gates is None:
        W1, W2, M = W1s[0], (W2s[0] if W2s else None), Ms[0]
    else:
        W1, W2, M = torch.stack(W1s), (torch.stack(W2s) if W2s else None), torch.stack(Ms)
    return W1.to(dtype), (None if W2 is None else W2.to(dtype)), M.to(dtype)


def recurrent_matrix(W1, W2, M):
    """``W_rec(r, s) = (W1 @ W2) ⊙ M`` (``W1 ⊙ M`` at full rank, ``W2`` None); stacked gates broadcast."""
    return (W1 if W2 is None else W1 @ W2) * M


# ---------------------------------------------------------------------------
# The cells.
# ---------------------------------------------------------------------------

class LowRankSparseCell(nn.Module):
    """Common body of :class:`RNN`, :class:`LSTM`, :class:`GRU` and :class:`CfC`.

    Parameters (torch's names where torch has them):

    - ``weight_ih`` ``(G·H, input_size)``: the gates' input weights, dense,
      Glorot uniform (Keras's default kernel initialiser);
    - ``bias`` ``(G·H,)``: one bias per gate, zero (the LSTM's forget gate 1,
      Keras's ``unit_forget_bias``);
    - full rank: ``weight_hh`` ``(G, H, H)``; rank r: ``weight_hh_1`` ``(G, H, r)``
      and ``weight_hh_2`` ``(G, r, H)``; buffer ``mask_hh`` ``(G, H, H)``.

    ``recurrent_weights()`` returns the gates' ``W_rec(r, s)``, ``(G, H, H)``.

    Every random draw takes ``generator`` (a :class:`torch.Generator`; ``seed=s`` is
    short for ``generator=torch.Generator().manual_seed(s)``; neither: torch's global
    RNG); ``device`` and ``dtype`` place the parameters (:mod:`rnnlab.models.common`).
    """

    kind = None

    def __init__(self, input_size, hidden_size, rank=None, sparsity=0.0, init="orthogonal", batch_first=True,
                 *, generator=None, seed=None, backend="auto", device=None, dtype=None):
        super().__init__()
        name = type(self).__name__
        check_int("input_size", input_size, minimum=1, fn=name)
        _check_rank_sparsity(hidden_size, rank, sparsity, name, n_name="hidden_size")
        check_choice("init", init, INITS, fn=name)
        if not isinstance(batch_first, bool):
            raise TypeError(f"{name}: batch_first must be a bool, got {type(batch_first).__name__}")
        gen = resolve_generator(generator, seed, fn=name)
        dtype = resolve_dtype(dtype, fn=name)
        G = GATES[self.kind]
        self.input_size, self.hidden_size, self.gates = input_size, hidden_size, G
        self.rank, self.sparsity, self.init, self.batch_first = rank, float(sparsity), init, batch_first
        self.backend = backend
        W1, W2, M = init_recurrent(hidden_size, rank, sparsity, init, gen, gates=G, dtype=dtype)
        if rank is None:
            self.weight_hh = nn.Parameter(W1)
            self.weight_hh_1 = self.weight_hh_2 = None
        else:
            self.weight_hh = None
            self.weight_hh_1, self.weight_hh_2 = nn.Parameter(W1), nn.Parameter(W2)
        self.register_buffer("mask_hh", M)
        self.weight_ih = nn.Parameter(glorot_uniform(G * hidden_size, input_size, generator=gen, dtype=dtype))
        bias = torch.zeros(G, hidden_size, dtype=dtype)
        if self.kind == "lstm":
            bias[1] = 1.0
        self.bias = nn.Parameter(bias.reshape(-1))
        if device is not None:
            self.to(device)  # drawn on the CPU (a generator gives the same numbers everywhere), then moved

    def extra_repr(self):
        r = "full" if self.rank is None else self.rank
        return (f"{self.input_size}, {self.hidden_size}, rank={r}, sparsity={self.sparsity}, init={self.init!r}, "
                f"batch_first={self.batch_first}")

    @property
    def gate_names(self):
        return GATE_NAMES[self.kind]

    def recurrent_weights(self):
        """The gates' recurrent matrices ``W_rec(r, s) = (W1 W2) ⊙ M``, ``(G, H, H)``."""
        if self.rank is None:
            return self.weight_hh * self.mask_hh
        return (self.weight_hh_1 @ self.weight_hh_2) * self.mask_hh

    def input_drive(self, x):
        """``W_i x + b`` for every gate: ``(..., G, H)`` from ``x`` ``(..., input_size)``."""
        return (x @ self.weight_ih.T + self.bias).unflatten(-1, (self.gates, self.hidden_size))

    # -- state handling ---------------------------------------------------
    def _check_x(self, x, what, dims):
        name = type(self).__name__
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{name}: {what} must be a torch.Tensor, got {type(x).__name__}")
        if x.dim() not in dims or x.shape[-1] != self.input_size:
            seq = "(B, T, input_size)" if self.batch_first else "(T, B, input_size)"
            shapes = f"{seq} or (T, input_size)" if 3 in dims else "(B, input_size)"
            raise ValueError(f"{name}: {what} must have shape {shapes} with input_size={self.input_size}, "
                             f"got {tuple(x.shape)}")
        if x.dtype != self.weight_ih.dtype:
            raise TypeError(f"{name}: {what} has dtype {x.dtype} but the cell's weights are "
                            f"{self.weight_ih.dtype}; convert one of them (e.g. cell.double())")

    def _check_state(self, state, B, x):
        name = type(self).__name__
        H = self.hidden_size
        if state is None:
            h = x.new_zeros(B, H)
            return h, (x.new_zeros(B, H) if self.kind == "lstm" else None)
        if self.kind == "lstm":
            if not (isinstance(state, (tuple, list)) and len(state) == 2):
                raise TypeError(f"{name}: state must be a tuple (h, c) of two (B, H) tensors")
            h, c = state
        else:
            if not isinstance(state, torch.Tensor):
                raise TypeError(f"{name}: state must be a (B, H) tensor h, got {type(state).__name__}")
            h, c = state, None
        for arg, s in (("h", h), ("c", c)):
            if s is None:
                continue
            if not isinstance(s, torch.Tensor) or tuple(s.shape) != (B, H):
                got = tuple(s.shape) if isinstance(s, torch.Tensor) else type(s).__name__
                raise ValueError(f"{name}: state {arg} must have shape (B, H) = {(B, H)}, got {got}")
            if s.dtype != x.dtype:
                raise TypeError(f"{name}: state {arg} has dtype {s.dtype} but the input has {x.dtype}")
        return h, c

    # -- the two ways in --------------------------------------------------
    def forward(self, x, state=None):
        """Run a whole sequence: ``(outputs, state)``.

        ``x`` ``(B, T, input_size)`` (``(T, B, input_size)`` with
        ``batch_first=False``, or unbatched ``(T, input_size)``); ``state`` None
        (zeros), ``h`` ``(B, H)``, or ``(h, c)`` for the LSTM. ``outputs`` are the
        hidden states after every step, laid out like ``x``; ``state`` the last.
        """
        self._check_x(x, "x", (2, 3))
        unbatched = x.dim() == 2
        if unbatched:
            x = x.unsqueeze(0)
        elif not self.batch_first:
            x = x.transpose(0, 1)
        if unbatched and state is not None:
            state = tuple(s.unsqueeze(0) for s in state) if self.kind == "lstm" else state.unsqueeze(0)
        if x.shape[1] == 0:
            raise ValueError(f"{type(self).__name__}: x must have at least one time step, got {tuple(x.shape)}")
        h0, c0 = self._check_state(state, x.shape[0], x)
        hs, cs = recurrent_cell(self.kind, self.input_drive(x), self.recurrent_weights(), h0, c0,
                                backend=self.backend)
        hT = hs[:, -1]
        new_state = (hT, cs[:, -1]) if self.kind == "lstm" else hT
        if unbatched:
            hs = hs[0]
            new_state = (hT[0], cs[0, -1]) if self.kind == "lstm" else hT[0]
        elif not self.batch_first:
            hs = hs.transpose(0, 1)
        return hs, new_state

    def step(self, x_t, state=None):
        """One time step in plain torch ops: ``(h_t, state_t)``, ``x_t`` ``(B, input_size)``.

        ``state_t`` is ``h_t`` (or ``(h_t, c_t)`` for the LSTM). Autograd
        differentiates it, e.g. ``∂h_t/∂h_{t−1}`` in :mod:`rnnlab.theory`.
        """
        self._check_x(x_t, "x_t", (2,))
        h, c = self._check_state(state, x_t.shape[0], x_t)
        h_new, c_new = cell_step_ref(self.kind, self.input_drive(x_t), self.recurrent_weights(), h, c)
        return h_new, ((h_new, c_new) if self.kind == "lstm" else h_new)


class RNN(LowRankSparseCell):
    """Elman RNN with ``W_rec(r, s)``: ``h_t = tanh(W_i x_t + W_rec h_{t−1} + b)`` (A.4.1).

    ``RNN(input_size, hidden_size, rank=None, sparsity=0.0, init="orthogonal",
    batch_first=True, *, generator=None, seed=None, backend="auto", device=None, dtype=None)``; see
    :class:`LowRankSparseCell`.
    """

    kind = "rnn"


class LSTM(LowRankSparseCell):
    """LSTM with four ``W_rec(r, s)`` (gates i, f, g, o; A.4.2); state ``(h, c)``.

    ``c_t = f ⊙ c_{t−1} + i ⊙ g``, ``h_t = o ⊙ tanh(c_t)``. See
    :class:`LowRankSparseCell`.
    """

    kind = "lstm"


class GRU(LowRankSparseCell):
    """GRU with three ``W_rec(r, s)`` (gates r, z, n), the reset gate applied before ``W_n``.

    ``n = tanh(W_in x + W_n (r ⊙ h) + b_n)``, ``h_t = (1 − z) ⊙ n + z ⊙ h_{t−1}``
    (Cho et al. 2014; Keras ``reset_after=False``): the GRU with one bias per
    gate, whose count is Table 10's. See :class:`LowRankSparseCell`.
    """

    kind = "gru"


class CfC(LowRankSparseCell):
    """Closed-form continuous-time cell of the seed (A.4.3): three heads F, G, H, each with ``W_rec(r, s)``.

    ``h_t = σ(F) ⊙ G + (1 − σ(F)) ⊙ H`` with ``F = W_if x + W_hf h + b_f``,
    ``G = tanh(W_ig x + W_hg h + b_g)``, ``H = tanh(W_ih x + W_hh h + b_h)``: no
    backbone, no time input (ncps's ``CfCCell`` with ``backbone_layers=0`` at
    ts = 1). See :class:`LowRankSparseCell`.
    """

    kind = "cfc"


CELLS = {"rnn": RNN, "lstm": LSTM, "gru": GRU, "cfc": CfC}


# ---------------------------------------------------------------------------
# Parameter counts (appendix A.12, Table 10).
# ---------------------------------------------------------------------------

TABLE10 = {"cfc": 61632, "lstm": 81726, "rnn": 20544, "gru": 61632}


def parameter_count(kind, input_size, hidden_size, rank=None):
    """Trainable parameters of a cell, by hand: ``G (I H + H) + G H H`` at full rank, ``G (I H + H) + 2 G H r`` at rank r.

    Each of the G gates has an input matrix ``H × I``, one bias ``H`` and a
    recurrent matrix (``H × H``, or the factors ``H × r`` and ``r × H``).
    Sparsity masks are fixed buffers, not parameters: a masked full-rank
    matrix keeps its ``H × H`` parameter whose masked entries get zero
    gradient (:func:`unmasked_parameter_count` counts the live ones).
    """
    if kind not in GATES:
        raise ValueError(f"kind must be one of {tuple(GATES)}, got {kind!r}")
    G = GATES[kind]
    recurrent = hidden_size * hidden_size if rank is None else 2 * hidden_size * rank
    return G * (input_size * hidden_size + hidden_size + recurrent)


def unmasked_parameter_count(model):
    """Parameters that can change in training: at full rank, the masked entries of ``weight_hh`` never do."""
    n = sum(p.numel() for p in model.parameters() if p.requires_grad)
    if model.rank is None:
        n -= int((model.mask_hh == 0).sum())
    return n


def table10_parameter_counts(input_size=256, hidden_size=64):
    """Rows ``(cell, Table 10, ours (numel of the module), by hand, formula)`` at input 256, hidden 64, full rank.

    Table 10's LSTM, 81726, is not a count of any LSTM of these sizes: four
    gates give ``4 (256·64 + 64 + 64·64) = 82176`` (torch's two biases per
    gate give 82432). 81726 is not even divisible by 4, so no LSTM of four
    equal gates has it; it has the digits of 82176 with three of them
    rotated (2-1-7 → 1-7-2), so we read it as a typo for 82176.
    """
    rows = []
    for kind in ("cfc", "lstm", "rnn", "gru"):
        model = CELLS[kind](input_size, hidden_size, backend="torch")
        G = GATES[kind]
        rows.append({"cell": type(model).__name__, "table10": TABLE10[kind],
                     "ours": sum(p.numel() for p in model.parameters()),
                     "by_hand": parameter_count(kind, input_size, hidden_size),
                     "formula": f"{G}·({input_size}·{hidden_size} + {hidden_size} + {hidden_size}·{hidden_size})"})
    return rows
