"""The code exercises of the low-rank and sparse connectivity chapter (book/lowrank/), for rnnlab.checks.

Each reference computes its answer with the package or with autograd: the GRU's
Jacobian is autograd's of the package's own step (:func:`rnnlab.kernels.cells_torch.cell_step_ref`). Heavy
imports stay inside the functions.
"""
from .core import Case, exercise, hidden

NB1 = "lowrank/01_cells"
NB2 = "lowrank/02_rank_and_mask"
NB3 = "lowrank/03_spectra"
NB4 = "lowrank/04_jacobians_memory"
NB5 = "lowrank/05_rank_and_memory"


def _t(values):
    import torch

    return torch.tensor(values, dtype=torch.float64)


def _randn(*shape, seed):
    import torch

    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


# ----------------------------------------------------------------- 01: cells

def _equal_cost_reference(n, r):
    return 1 - 2 * r / n


exercise(
    "ex-lr-equal-cost", notebook=NB1, name="equal_cost_sparsity", signature="equal_cost_sparsity(n, r)",
    reference=_equal_cost_reference, difficulty=1,
    cases=lambda: [Case((64, 16), show="n = 64, r = 16"), Case((64, 1), show="n = 64, r = 1"),
                   Case((64, 27), show="n = 64, r = 27"), Case((128, 32), show="n = 128, r = 32"),
                   Case((10, 5), show="r = n / 2: the factors cost a dense matrix, s = 0")],
    hint="Rank r stores the two factors, n x r and r x n: 2nr numbers. A mask of sparsity s keeps "
         "(1 - s) n^2 entries on average. Set the two equal and solve for s.")


def _lstm_step_reference(u, W, h, c):
    from rnnlab.kernels import cells_torch

    return cells_torch.cell_step_ref("lstm", u, W, h, c)


def _lstm_step_cases():
    import torch

    big = torch.zeros(1, 4, 2, dtype=torch.float64)
    big[0, 1] = 30.0                        # forget gate open, input gate shut: c carries over
    big[0, 0] = -30.0
    return [
        Case((_randn(2, 4, 3, seed=0), 0.5 * _randn(4, 3, 3, seed=1), _randn(2, 3, seed=2),
              _randn(2, 3, seed=3)), show="B = 2, n = 3, random"),
        Case((_randn(3, 4, 5, seed=4), 0.3 * _randn(4, 5, 5, seed=5), torch.zeros(3, 5, dtype=torch.float64),
              torch.zeros(3, 5, dtype=torch.float64)), show="B = 3, n = 5, zero state"),
        Case((_randn(1, 4, 1, seed=6), _randn(4, 1, 1, seed=7), _randn(1, 1, seed=8), _randn(1, 1, seed=9)),
             show="one unit"),
        Case((big, torch.zeros(4, 2, 2, dtype=torch.float64), _t([[0.3, -0.2]]), _t([[2.0, -1.0]])),
             show="forget gate saturated open, input gate shut: c_t = c_{t-1}"),
    ]


exercise(
    "ex-lr-lstm-step", notebook=NB1, name="lstm_step", signature="lstm_step(u, W, h, c)",
    reference=_lstm_step_reference, cases=_lstm_step_cases, difficulty=1,
    answers=("rnnlab.kernels.cells_torch:cell_step_ref",),
    hint="The gates come in the order i, f, g, o; W[g] multiplies h for every gate; return (h_t, c_t).",
    hints=("c_t = f * c + i * g with g = tanh(...), and h_t = o * tanh(c_t): the output gate acts after the "
           "tanh of the new cell state.",))


def _cfc_step_reference(u, W, h):
    from rnnlab.kernels import cells_torch

    return cells_torch.cell_step_ref("cfc", u, W, h)[0]


def _cfc_step_cases():
    import torch

    shut, open_ = torch.zeros(1, 3, 2, dtype=torch.float64), torch.zeros(1, 3, 2, dtype=torch.float64)
    shut[0, 0], open_[0, 0] = -30.0, 30.0   # the gate sigma(F) near 0, or near 1
    shut[0, 1] = open_[0, 1] = _t([0.5, -1.0])
    shut[0, 2] = open_[0, 2] = _t([-0.3, 2.0])
    zero_W, h = torch.zeros(3, 2, 2, dtype=torch.float64), _t([[0.4, -0.6]])
    return [
        Case((_randn(2, 3, 3, seed=10), 0.5 * _randn(3, 3, 3, seed=11), _randn(2, 3, seed=12)),
             show="B = 2, n = 3, random"),
        Case((_randn(3, 3, 4, seed=13), 0.3 * _randn(3, 4, 4, seed=14), torch.zeros(3, 4, dtype=torch.float64)),
             show="B = 3, n = 4, zero state"),
        Case((open_, zero_W, h), show="gate sigma(F) near 1: h_t = tanh(G)"),
        Case((shut, zero_W, h), show="gate sigma(F) near 0: h_t = tanh(H)"),
    ]


exercise(
    "ex-lr-cfc-step", notebook=NB1, name="cfc_step", signature="cfc_step(u, W, h)",
    reference=_cfc_step_reference, cases=_cfc_step_cases, difficulty=1,
    answers=("rnnlab.kernels.cells_torch:cell_step_ref",),
    hint="The heads come in the order F, G, H; W[k] multiplies h for every head; "
         "h_t = sigma(F) tanh(G) + (1 - sigma(F)) tanh(H).",
    hints=("sigma(F) weighs tanh(G), not tanh(H): with F large, h_t is tanh(G).",))


def _outside_energy_reference(P, r, s):
    import torch

    U = torch.linalg.svd(torch.as_tensor(P, dtype=torch.float64))[0][:, :r]  # P's r output directions
    keep = 1 - U.pow(2).sum(1)                                                # 1 - Pi_ii, row by row
    return float(s * (1 - s) * (keep[:, None] * torch.as_tensor(P, dtype=torch.float64) ** 2).sum())


def _outside_energy_cases():
    import torch

    return [
        Case((_randn(6, 2, seed=30) @ _randn(2, 6, seed=31), 2, 0.5), show="n = 6, rank 2, s = 0.5"),
        Case((_randn(5, 1, seed=32) @ _randn(1, 5, seed=33), 1, 0.2), show="n = 5, rank 1, s = 0.2"),
        Case((_randn(8, 3, seed=34) @ _randn(3, 8, seed=35), 3, 0.0), show="s = 0: no mask, nothing outside"),
        Case((torch.eye(4, dtype=torch.float64), 4, 0.5), show="full rank (the identity): nothing outside"),
    ]


exercise(
    "ex-lr-mask-reach", notebook=NB1, name="outside_energy", signature="outside_energy(P, r, s)",
    reference=_outside_energy_reference, cases=_outside_energy_cases, difficulty=2,
    hint="(I - Pi) P = 0, so (I - Pi)(P * M) = (I - Pi) E with E = P * (M - (1 - s)). Column j of E has "
         "independent entries of mean 0 and variance s (1 - s) P_ij^2; for such a vector e, "
         "E||(I - Pi) e||^2 = sum_i var(e_i) (1 - Pi_ii).",
    hints=("Pi = U U^T with U the first r left singular vectors of P, so Pi_ii is the squared norm of row i "
           "of U; each row i of P is weighted by 1 - Pi_ii, not by 1 - r/n.",))


def _banded_mask_reference(n, width):
    import torch

    i = torch.arange(n)
    return ((i[:, None] - i[None, :]).abs() <= width).double()


exercise(
    "ex-lr-knob-sweep", notebook=NB1, name="banded_mask", signature="banded_mask(n, width)",
    reference=_banded_mask_reference, difficulty=3,
    cases=lambda: [Case((6, 1), show="n = 6, width 1: the diagonal and its two neighbours"),
                   Case((5, 0), show="width 0: the identity"),
                   Case((4, 3), show="width n - 1: every entry kept"),
                   Case((24, 6), show="n = 24, width 6")],
    hint="Entry (i, j) is 1 when |i - j| <= width and 0 otherwise: compare a column of indices with a row "
         "of indices, and return float64 zeros and ones.",
    hints=("i = torch.arange(n); (i[:, None] - i[None, :]).abs() <= width is the band, as booleans.",))


def _gru_weight_grad_reference(g_pre, r, h_prev):
    import torch

    u = torch.stack([h_prev, h_prev, r * h_prev], 2)  # what W_r, W_z, W_n multiply
    return torch.einsum("btgi,btgj->gij", g_pre, u)


def _gru_weight_grad_cases():
    import torch

    ones, zeros = torch.ones(1, 2, 3, dtype=torch.float64), torch.zeros(2, 1, 3, dtype=torch.float64)
    return [
        Case((_randn(2, 3, 3, 4, seed=20), torch.rand(2, 3, 4, generator=torch.Generator().manual_seed(21),
                                                      dtype=torch.float64), _randn(2, 3, 4, seed=22)),
             show="B = 2, T = 3, n = 4, random"),
        Case((_randn(1, 2, 3, 3, seed=23), ones, _randn(1, 2, 3, seed=24)),
             show="reset gate open (q = 1): every gate sees h_{t-1}"),
        Case((_randn(2, 1, 3, 3, seed=25), zeros, _randn(2, 1, 3, seed=26)),
             show="reset gate shut (q = 0): the candidate's matrix gets no gradient"),
        Case((_randn(3, 5, 3, 1, seed=27), torch.rand(3, 5, 1, generator=torch.Generator().manual_seed(28),
                                                      dtype=torch.float64), _randn(3, 5, 1, seed=29)),
             show="one unit, T = 5"),
    ]


exercise(
    "ex-lr-gru-weight-grad", notebook=NB1, name="gru_weight_grad", signature="gru_weight_grad(g_pre, q, h_prev)",
    reference=_gru_weight_grad_reference, cases=_gru_weight_grad_cases, difficulty=2,
    hint="dL/dW_k is the sum over batch and time of the outer product of delta pre_k with the vector W_k "
         "multiplies: h_{t-1} for q and z, but q_t * h_{t-1} for the candidate.",
    hints=("Stack the three vectors v_k (B, T, 3, n) and contract: einsum('btki,btkj->kij', g_pre, v).",))


def _mask_energy_reference(W, s):
    import torch

    w2 = float(torch.as_tensor(W, dtype=torch.float64).pow(2).sum())
    return (1 - s) ** 2 * w2, s * (1 - s) * w2, (1 - s) * w2


def _mask_energy_cases():
    import torch

    return [
        Case((_randn(6, 6, seed=40), 0.5), show="n = 6, s = 0.5"),
        Case((_randn(5, 5, seed=41), 0.2), show="n = 5, s = 0.2"),
        Case((torch.eye(4, dtype=torch.float64), 0.9), show="the identity, n = 4, s = 0.9"),
        Case((_randn(3, 3, seed=42), 0.0), show="s = 0: no mask, no noise"),
    ]


exercise(
    "ex-lr-mask-energy", notebook=NB2, name="mask_energy", signature="mask_energy(W, s)",
    reference=_mask_energy_reference, cases=_mask_energy_cases, difficulty=1,
    hint="Each entry of M is 1 with probability 1 - s. The copy is (1 - s) W; the noise multiplies w_ij by "
         "m_ij - (1 - s), a number of mean 0 and variance s (1 - s).",
    hints=("E[(w m)^2] = w^2 E[m^2] = (1 - s) w^2, since m^2 = m for a 0/1 number; sum over the entries.",))


def _trace_size_reference(W, v, s):
    import torch

    W, v = torch.as_tensor(W, dtype=torch.float64), torch.as_tensor(v, dtype=torch.float64)
    copy = (1 - s) ** 2 * float((W @ v).pow(2).sum())
    return copy + s * (1 - s) * float((v ** 2 * W.pow(2).sum(0)).sum())


def _trace_size_cases():
    import torch

    a, b = _randn(5, 1, seed=44), _randn(1, 5, seed=45)
    null = _randn(5, seed=46)
    null = null - (b[0] @ null) / (b[0] @ b[0]) * b[0]  # W v = 0: only the noise is left
    return [
        Case((_randn(6, 6, seed=43), _randn(6, seed=47), 0.5), show="n = 6, random v, s = 0.5"),
        Case((a @ b, null, 0.3), show="rank 1, v in the null space (W v = 0), s = 0.3"),
        Case((_randn(4, 4, seed=48), _randn(4, seed=49), 0.0), show="s = 0: no mask, ||W v||^2"),
        Case((torch.eye(3, dtype=torch.float64), _t([1.0, -2.0, 0.5]), 0.8),
             show="the identity, n = 3, s = 0.8"),
        Case((_randn(5, 5, seed=50), _randn(5, seed=51), 1.0), show="s = 1: everything deleted"),
    ]


exercise(
    "ex-lr-trace-size", notebook=NB2, name="step_energy", signature="step_energy(W, v, s)",
    reference=_trace_size_reference, cases=_trace_size_cases, difficulty=2,
    hint="Split (W * M) v into the copy (1 - s) W v and the noise N v; the cross term has mean 0, and "
         "entry i of N v is a sum of independent terms w_ij (m_ij - (1 - s)) v_j.",
    hints=("The noise's part is s (1 - s) times the sum over j of v_j^2 times the squared norm of "
           "column j of W; the copy's part is (1 - s)^2 ||W v||^2.",))


def _ls_error_reference(A, Z, sigma):
    import torch

    G = torch.as_tensor(A, dtype=torch.float64) @ torch.as_tensor(Z, dtype=torch.float64)
    return sigma ** 2 * float((1 / torch.linalg.svdvals(G) ** 2).sum())


def _ls_error_cases():
    import torch

    def frame(n, k, seed):  # n x k with orthonormal columns
        return torch.linalg.qr(_randn(n, k, seed=seed))[0]

    eye = torch.eye(5, dtype=torch.float64)
    return [
        Case((_randn(6, 6, seed=60), frame(6, 3, 61), 0.1), show="n = 6, k = 3, sigma = 0.1"),
        Case((eye, eye[:, :2], 0.3), show="A = I, Z two coordinates: 2 sigma^2"),
        Case((torch.diag(_t([1.0, 0.1, 2.0, 1.0])), torch.eye(4, dtype=torch.float64)[:, :2], 1.0),
             show="A = diag(1, 0.1, 2, 1), Z the first two coordinates: 1 + 1 / 0.1^2"),
        Case((_randn(8, 8, seed=62), frame(8, 8, 63), 0.05), show="k = n: Z orthogonal"),
        Case((_randn(5, 5, seed=64), frame(5, 2, 65), 0.0), show="sigma = 0: no noise, no error"),
    ]


exercise(
    "ex-lr-decode-noise", notebook=NB2, name="ls_error", signature="ls_error(A, Z, sigma)",
    reference=_ls_error_reference, cases=_ls_error_cases, difficulty=2,
    hint="With G = A Z of full column rank, G^+ G = I, so the decoder's error is sigma Z G^+ xi; Z keeps "
         "lengths, and E||B xi||^2 = ||B||_F^2 for a standard Gaussian xi.",
    hints=("||G^+||_F^2 is the sum of 1 / sigma_i^2 over the singular values of G = A Z, not of A.",))


def _mask_rank_reference(M, r):
    import numpy as np
    import torch
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_bipartite_matching

    mask = np.asarray(M, dtype=float)
    matching = int((maximum_bipartite_matching(csr_matrix(mask)) >= 0).sum())
    return r * int(torch.linalg.matrix_rank(torch.as_tensor(mask))), matching


def _mask_rank_cases():
    import torch

    def bernoulli(n, s, seed):
        return (torch.rand(n, n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) >= s).double()

    empty = bernoulli(8, 0.5, 3)
    empty[2] = 0  # a row that keeps nothing
    empty[:, 5] = 0  # and a column
    return [
        Case((torch.ones(6, 6, dtype=torch.float64), 2), show="s = 0: the all-ones mask, n = 6, r = 2"),
        Case((torch.eye(7, dtype=torch.float64), 3), show="the identity mask, n = 7, r = 3"),
        Case((empty, 2), show="n = 8, r = 2, one empty row and one empty column"),
        Case((bernoulli(12, 0.85, 5), 4), show="n = 12, r = 4, s = 0.85"),
        Case((torch.kron(torch.eye(3, dtype=torch.float64), torch.ones(2, 4, dtype=torch.float64)), 1),
             show="three 2 x 4 blocks of ones (6 x 12), r = 1"),
    ]


exercise(
    "ex-lr-mask-rank", notebook=NB2, name="rank_bounds", signature="rank_bounds(M, r)",
    reference=_mask_rank_reference, cases=_mask_rank_cases, difficulty=3,
    hint="Two bounds: r times the rank of M (write M as a sum of rank M outer products), and the size "
         "of a maximum matching of the kept entries (no two in one row or one column).",
    hints=("A k x k minor is a sum over permutations: it is zero unless k kept entries sit in distinct "
           "rows and columns.",))


# ----------------------------------------------------------------- 02: spectra

def _budget_reference(n, r, s):
    import math

    import torch

    rho = math.sqrt(r * (1 - s) / n)  # the rule from an orthogonal start: the mass kept is r (1 - s) of n
    return torch.tensor([rho, 1 / rho, 1 / abs(math.log(rho))], dtype=torch.float64)


def _budget_cases():
    return [
        Case((256, 64, 0.5), show="n = 256, r = 64, s = 0.5"),
        Case((256, 64, 0.0), show="rank 64 of 256, no mask"),
        Case((256, 256, 0.75), show="full rank, s = 0.75"),
        Case((512, 512, 0.2), show="full rank, a light mask"),
    ]


exercise(
    "ex-lr-init-budget", notebook=NB3, name="init_budget", signature="init_budget(n, r, s)",
    reference=_budget_reference, cases=_budget_cases, difficulty=1,
    hint="From an orthogonal start the mask and the truncation keep a fraction r(1 - s)/n of the mass "
         "(the squared Frobenius norm): rho is its square root, the gain 1/rho, the horizon 1/|log rho|.")


def _radius_reference(W1, W2):
    import torch

    return torch.linalg.eigvals(W2 @ W1).abs().max()


def _radius_cases():
    import torch

    from rnnlab.models import init_recurrent

    def draw(n, r, seed, init="orthogonal"):
        W1, W2, _ = init_recurrent(n, r, init=init, generator=torch.Generator().manual_seed(seed),
                                   dtype=torch.float64)
        return W1, W2

    return [
        Case(draw(64, 5, 0), show="orthogonal, n = 64, r = 5"),
        Case(draw(64, 16, 1), show="orthogonal, n = 64, r = 16"),
        Case(draw(400, 3, 2, "glorot"), show="Glorot, n = 400, r = 3"),
        Case((_t([[1.0], [0.0]]), _t([[0.0, 1.0]])), show="W = e1 e2^T: nilpotent, ρ = 0"),
        Case((_t([[2.0], [0.0]]), _t([[1.0, 0.0]])), show="W = 2 e1 e1^T: ρ = 2"),
    ]


exercise(
    "ex-lr-lowrank-radius", notebook=NB3, name="lowrank_radius", signature="lowrank_radius(W1, W2)",
    reference=_radius_reference, cases=_radius_cases, difficulty=1,
    hint="W1 W2 (n x n) and W2 W1 (r x r) have the same nonzero eigenvalues: the small one is cheap.")


def _smallest_radius_reference(sigma):
    import torch

    # e_i -> sigma_i e_(i+1), cyclically: W^n = (prod sigma) I, every |lambda| the geometric mean
    return torch.roll(torch.diag(torch.as_tensor(sigma, dtype=torch.float64)), 1, dims=0)


def _smallest_radius_compare(got, expected):
    import torch

    if not (hasattr(got, "shape") and tuple(got.shape) == tuple(expected.shape)):
        return f"expected a square matrix of size {expected.shape[0]} (a tensor or an array)"
    W = torch.as_tensor(got, dtype=torch.float64)
    if not bool(torch.isfinite(W).all()):
        return "the matrix must be finite (no NaN or inf)"
    want = torch.linalg.svdvals(expected)
    err = (torch.linalg.svdvals(W) - want).abs().max().item()
    if err > 1e-8 * want[0].item():
        return f"its singular values differ from sigma by up to {err:.3g}"
    gm = want.log().mean().exp().item()
    rho = torch.linalg.eigvals(W).abs().max().item()
    if abs(rho / gm - 1) > 1e-6:
        return f"its spectral radius is {rho:.6g}, the geometric mean of sigma is {gm:.6g}"
    return None


def _smallest_radius_cases():
    import torch

    torch_gen = torch.Generator().manual_seed(0)
    return [
        Case((_t([2.0, 0.5]),), show="sigma = (2, 0.5): geometric mean 1"),
        Case((_t([3.0, 2.0, 1.0, 0.5]),), show="sigma = (3, 2, 1, 0.5)"),
        Case((_t([1.0] * 6),), show="sigma = 1, six times: an orthogonal matrix"),
        Case((torch.linspace(2.0, 0.5, 40, dtype=torch.float64),), show="40 values from 2 to 0.5"),
        Case((0.5 + 1.5 * torch.rand(25, generator=torch_gen, dtype=torch.float64),),
             show="25 random values in [0.5, 2], unsorted"),
    ]


exercise(
    "ex-lr-radius-range", notebook=NB3, name="smallest_radius", signature="smallest_radius(sigma)",
    reference=_smallest_radius_reference, cases=_smallest_radius_cases,
    compare=_smallest_radius_compare, difficulty=2, fixed=True,
    hint="|det W| is the product of the singular values and of the eigenvalue moduli: make every "
         "eigenvalue modulus equal, with a matrix whose n-th power is a multiple of I.")


def _gradient_sizes_reference(W, xs):
    import torch

    W, xs = torch.as_tensor(W, dtype=torch.float64), torch.as_tensor(xs, dtype=torch.float64)
    h, J, sizes = torch.zeros(W.shape[0], dtype=torch.float64), torch.eye(W.shape[0], dtype=torch.float64), []
    for x in xs:
        h = torch.tanh(W @ h + x)
        J = (1 - h ** 2)[:, None] * (W @ J)  # d h_t / d h_0 = D_t W (d h_(t-1) / d h_0)
        sizes.append(torch.linalg.matrix_norm(J, 2))
    return torch.stack(sizes)


def _gradient_sizes_cases():
    return [
        Case((0.5 * _randn(6, 6, seed=0), _randn(10, 6, seed=1)), show="n = 6, T = 10, random W"),
        Case((_eye(4), 0.1 * _randn(5, 4, seed=2)), show="W = I, small inputs"),
        Case((2.0 * _randn(5, 5, seed=3), 3.0 * _randn(8, 5, seed=4)), show="saturated: large W and inputs"),
        Case((_t([[0.0, 1.0], [0.0, 0.0]]), _t([[0.0, 0.0]] * 3)), show="nilpotent W, zero inputs: 1, 0, 0"),
    ]


def _eye(n):
    import torch

    return torch.eye(n, dtype=torch.float64)


exercise(
    "ex-lr-rescaled-rnn", notebook=NB3, name="gradient_sizes", signature="gradient_sizes(W, xs)",
    reference=_gradient_sizes_reference, cases=_gradient_sizes_cases, difficulty=3,
    hint="Carry J = d h_t / d h_0 along the run: J starts at I, and each step J <- diag(1 - h_t^2) W J, "
         "with h_t the new state; return the spectral norm (ord 2) of each J.")


# ----------------------------------------------------------------- 03: Jacobians and memory

def _gru_jacobian_reference(W, drive, h_prev):
    import torch

    from rnnlab.kernels import cells_torch

    def step(h):
        return cells_torch.cell_step_ref("gru", drive[None], W, h[None])[0][0]

    return torch.autograd.functional.jacobian(step, h_prev)


def _gru_jacobian_cases():
    return [
        Case((_randn(3, 4, 4, seed=0), _randn(3, 4, seed=1), _randn(4, seed=2)), show="n = 4, random"),
        Case((0.3 * _randn(3, 6, 6, seed=3), _randn(3, 6, seed=4), _randn(6, seed=5)), show="n = 6"),
        Case((_randn(3, 3, 3, seed=6), _t([[0.0] * 3, [6.0] * 3, [0.0] * 3]), _randn(3, seed=7)),
             show="update gate saturated near 1: J is close to I"),
        Case((_randn(3, 2, 2, seed=8), _t([[0.0, 0.0], [0.0, 0.0], [1.0, -1.0]]), _t([0.0, 0.0])),
             show="h = 0: the reset gate's own derivative drops out"),
    ]


exercise(
    "ex-lr-gru-jacobian", notebook=NB4, name="gru_jacobian", signature="gru_jacobian(W, drive, h_prev)",
    answers=("rnnlab.kernels.cells_torch:cell_step_ref",),
    reference=_gru_jacobian_reference, cases=_gru_jacobian_cases,
    hint="W is (3, n, n) for the reset gate q, the update gate z and the candidate ĥ, and drive (3, n). "
         "h' = (1 − z) ĥ + z h: differentiate both appearances of h and of z; the candidate ĥ sees h through "
         "W_ĥ (q ⊙ h), whose derivative is D(q) + D(h σ'(q)) W_q.")


def _cfc_jacobian_reference(W, drive, h_prev):
    import torch

    from rnnlab.kernels import cells_torch

    def step(h):
        return cells_torch.cell_step_ref("cfc", drive[None], W, h[None])[0][0]

    return torch.autograd.functional.jacobian(step, h_prev)


def _cfc_jacobian_cases():
    import torch

    low = torch.stack([_randn(5, 1, seed=12 + g) @ _randn(1, 5, seed=15 + g) for g in range(3)])
    return [
        Case((_randn(3, 4, 4, seed=9), _randn(3, 4, seed=10), _randn(4, seed=11)), show="n = 4, random"),
        Case((low, _randn(3, 5, seed=18), _randn(5, seed=19)), show="n = 5, every head of rank 1"),
        Case((_randn(3, 3, 3, seed=20), _t([[8.0] * 3, [0.0] * 3, [0.0] * 3]), _randn(3, seed=21)),
             show="gate saturated near 1: only the head G is left"),
        Case((_randn(3, 2, 2, seed=22), _t([[0.0, 0.0], [1.0, -1.0], [-1.0, 1.0]]), _t([0.0, 0.0])),
             show="h = 0, heads G and H of opposite signs"),
    ]


exercise(
    "ex-lr-cfc-jacobian", notebook=NB4, name="cfc_jacobian", signature="cfc_jacobian(W, drive, h_prev)",
    answers=("rnnlab.kernels.cells_torch:cell_step_ref",),
    reference=_cfc_jacobian_reference, cases=_cfc_jacobian_cases, difficulty=2,
    hint="W is (3, n, n) for the heads F, G, H and drive (3, n). h' = σ(F) G + (1 − σ(F)) H: differentiate "
         "each head through its own W, and do not forget the gate σ(F), whose derivative multiplies G − H.")


def _constant_horizon_reference(A, T):
    import torch

    from rnnlab.theory.horizon import cumulative_log_norms, horizon_slope

    A = torch.as_tensor(A, dtype=torch.float64)
    return -1 / float(horizon_slope(cumulative_log_norms(torch.stack([A] * int(T)))))


def _constant_horizon_cases():
    import math

    import torch

    c, s = math.cos(0.5), math.sin(0.5)
    return [
        Case((_t([[0.6]]), 20), show="one unit, a = 0.6, 20 steps"),
        Case((torch.diag(_t([0.9, 0.5, 0.1])), 60), show="A = D(0.9, 0.5, 0.1), 60 steps"),
        Case((0.8 * _t([[c, -s], [s, c]]), 40), show="0.8 times a rotation by 0.5 rad, 40 steps"),
        Case((0.3 * _randn(4, 4, seed=50), 80), show="a random 4 x 4 matrix, 80 steps"),
    ]


exercise(
    "ex-lr-linear-horizon", notebook=NB4, name="constant_horizon", signature="constant_horizon(A, T)",
    reference=_constant_horizon_reference, cases=_constant_horizon_cases, rtol=1e-6, atol=1e-9, difficulty=1,
    hint="Multiply P = P @ A T times and keep log ||P||_F after each; fit a line (np.polyfit) "
         "through k = ceil(T/2) ... T and return -1 / slope.")


def _highway_horizon_reference(Js):
    import torch

    from rnnlab.theory.horizon import cumulative_log_norms, horizon_slope

    Js = torch.as_tensor(Js, dtype=torch.float64)
    n = Js.shape[-1] // 2
    cut = torch.zeros_like(Js)
    cut[:, n:, n:] = Js[:, n:, n:]                  # keep the (c, c) block D(f) alone
    return -1 / float(horizon_slope(cumulative_log_norms(cut)))


def _highway_horizon_cases():
    import torch

    def lstm_like(T, n, seed, low=0.3):
        g = torch.Generator().manual_seed(seed)
        J = torch.randn(T, 2 * n, 2 * n, generator=g, dtype=torch.float64)  # the loops: must go
        f = low + (0.97 - low) * torch.rand(T, n, generator=g, dtype=torch.float64)
        J[:, n:, n:] = torch.diag_embed(f)
        return J

    steady = torch.zeros(40, 6, 6, dtype=torch.float64)
    steady[:, 3:, 3:] = torch.diag(_t([0.9, 0.5, 0.2]))
    steady[:, :3, :] = 0.7                          # large loops that would slow the decay
    return [
        Case((steady,), show="40 steps, forget gates held at 0.9, 0.5, 0.2, loops of 0.7"),
        Case((lstm_like(60, 4, 40),), show="60 steps, n = 4, gates at random in (0.3, 0.97)"),
        Case((lstm_like(100, 8, 41, low=0.6),), show="100 steps, n = 8, gates at random in (0.6, 0.97)"),
    ]


exercise(
    "ex-lr-loops", notebook=NB5, name="highway_horizon", signature="highway_horizon(Js)",
    reference=_highway_horizon_reference, cases=_highway_horizon_cases, rtol=1e-6, atol=1e-9, difficulty=2,
    hint="Js is (T, 2n, 2n), J_1 first. Zero the three blocks other than the bottom-right (c, c) block, then "
         "take the page's horizon of the products: -1 / horizon_slope(cumulative_log_norms(cut)).")


def _growth_rate_reference(Js):
    import math

    import torch

    Js = list(Js)
    P = torch.eye(Js[0].shape[0], dtype=torch.float64)
    total = 0.0
    for J in Js:                           # P = J_t ... J_1, kept at norm 1
        P = J.to(torch.float64) @ P
        scale = torch.linalg.matrix_norm(P)
        total += math.log(float(scale))
        P = P / scale
    return total / len(Js)


def _growth_rate_cases():
    import torch

    rot = _t([[0.0, -1.0], [1.0, 0.0]])
    mixed = [torch.diag(torch.cat([_t([0.95]), 0.05 + 0.95 * torch.rand(3, generator=g, dtype=torch.float64)]))
             for g in [torch.Generator().manual_seed(30)] for _ in range(4000)]
    return [
        Case(([0.5 * torch.eye(3, dtype=torch.float64)] * 3000,), show="3000 steps of J = I/2"),
        Case(([0.2 * rot] * 1000,), show="1000 steps of a rotation scaled by 0.2"),
        Case((mixed,), show="4000 diagonal steps: one unit at 0.95, three at random in (0.05, 1)"),
        Case(([0.4 * _randn(4, 4, seed=s) for s in range(6)],), show="six random 4 x 4 Jacobians"),
        Case(([_t([[2.0, 0.0], [0.0, 0.1]])],), show="one step"),
    ]


exercise(
    "ex-lr-mixing", notebook=NB5, name="growth_rate", signature="growth_rate(Js)",
    reference=_growth_rate_reference, cases=_growth_rate_cases, rtol=1e-8, atol=1e-10, difficulty=2,
    hint="Js = [J_1, ..., J_T]; return log‖J_T ⋯ J_1‖_F / T. A product of thousands of steps underflows: after "
         "each multiplication divide the running product by its norm and add the log of that norm to a sum.")



def _shortening_interval_reference(a, f):
    # real eigenvalues: lambda < f iff pq < 0; complex: |lambda|^2 = af - pq < f^2 iff pq > -f(f - a)
    return (-float(f) * (float(f) - float(a)), 0.0)


def _shortening_interval_cases():
    return [
        Case((0.3, 0.7310585786300049), show="a = 0.3, f = sigma(1), the page's toy"),
        Case((0.0, 0.5), show="a = 0, f = 0.5"),
        Case((0.5, 0.9), show="a = 0.5, f = 0.9"),
        Case((0.1, 0.95), show="a = 0.1, f = 0.95"),
    ]


exercise(
    "ex-lr-loop-sign", notebook=NB5, name="shortening_interval", signature="shortening_interval(a, f)",
    reference=_shortening_interval_reference, cases=_shortening_interval_cases, rtol=1e-9, atol=1e-12,
    difficulty=3,
    hint="Return (low, high): the loop shortens the horizon for low < pq < high. Two regimes: real eigenvalues, "
         "where the top one is (a + f)/2 + sqrt((f - a)^2/4 + pq), and complex ones, where |lambda|^2 = det J.")



# ----------------------------------------------------------------- 04: closed-loop control

NB6 = "lowrank/06_closed_loop"


def _velocity_reference(obs_prev, obs, dt):
    import numpy as np

    d = np.arctan2(obs[..., 1], obs[..., 0]) - np.arctan2(obs_prev[..., 1], obs_prev[..., 0])
    return ((d + np.pi) % (2 * np.pi) - np.pi) / dt


def _angles(theta):
    import numpy as np

    theta = np.asarray(theta, dtype=np.float64)
    return np.stack([np.cos(theta), np.sin(theta)], axis=-1)


def _velocity_cases():
    import numpy as np

    return [
        Case((_angles(0.1), _angles(0.2), 0.05), show="0.1 rad to 0.2 rad in 0.05 s"),
        Case((_angles([3.1, -3.1]), _angles([-3.1, 3.1]), 0.05), show="across ±π, both ways (a batch of 2)"),
        Case((_angles(np.linspace(-3, 3, 7)), _angles(np.linspace(-3, 3, 7) - 0.3), 0.1),
             show="seven angles, each turning by -0.3 rad"),
    ]


exercise(
    "ex-lr-velocity", notebook=NB6, name="velocity_from_observations",
    signature="velocity_from_observations(obs_prev, obs, dt)",
    reference=_velocity_reference, cases=_velocity_cases,
    hint="θ = atan2(sin θ, cos θ); the angle can jump by 2π between two steps near ±π: wrap the difference "
         "into [−π, π) before dividing by dt.")


def _lqr_reference(A, B, Q, R):
    import numpy as np
    import scipy.linalg

    S = scipy.linalg.solve_discrete_are(A, B, Q, R)
    return np.linalg.solve(R + B.T @ S @ B, B.T @ S @ A)


def _lqr_cases():
    import numpy as np

    from rnnlab.control.experts import PENDULUM

    P = PENDULUM
    a, b, dt = 3 * P["g"] / (2 * P["l"]), 3 / (P["m"] * P["l"] ** 2), P["dt"]
    A = np.array([[1 + a * dt * dt, dt], [a * dt, 1.0]])
    B = np.array([[b * dt * dt], [b * dt]])
    return [
        Case((A, B, np.diag([1.0, 0.1]), np.array([[0.001]])), show="the pendulum, the environment's cost"),
        Case((np.array([[1.0, 0.1], [0.0, 1.0]]), np.array([[0.005], [0.1]]), np.eye(2), np.array([[1.0]])),
             show="a double integrator"),
        Case((np.array([[0.5]]), np.array([[1.0]]), np.array([[1.0]]), np.array([[2.0]])), show="a stable scalar"),
    ]


exercise(
    "ex-lr-lqr", notebook=NB6, name="lqr_gain", signature="lqr_gain(A, B, Q, R)",
    reference=_lqr_reference, cases=_lqr_cases, rtol=1e-5, atol=1e-7,
    hint="Start from S = Q and iterate S ← Q + Aᵀ S A − Aᵀ S B (R + Bᵀ S B)⁻¹ Bᵀ S A until it stops changing "
         "(a few thousand steps at most); then K = (R + Bᵀ S B)⁻¹ Bᵀ S A.")


def _ed_reference(X, k):
    from rnnlab.control.imitation import effective_dimensionality

    return effective_dimensionality(X, k)


def _ed_cases():
    import numpy as np

    rng = np.random.default_rng(0)
    return [
        Case((rng.normal(size=(200, 2)) @ rng.normal(size=(2, 10)), 5), show="200 points in a 2-d plane of 10-d"),
        Case((rng.normal(size=(300, 8)) * np.arange(1, 9), 5), show="8-d, standard deviations 1..8"),
        Case((rng.normal(size=(100, 6)) + 50.0, 2), show="isotropic, far from the origin, k = 2"),
    ]


exercise(
    "ex-lr-effective-dim", notebook=NB6, name="effective_dim", signature="effective_dim(X, k)",
    answers=("rnnlab.control.imitation:effective_dimensionality",),
    reference=_ed_reference, cases=_ed_cases, rtol=1e-6, atol=1e-9,
    hint="Centre the columns of X (PCA does), take the singular values s of the centred matrix; the variance "
         "of component i is s_i²: return the sum of the k largest s² over the sum of all.")


def _aggregate_reference(obs, act, runs):
    import numpy as np

    new_obs = np.stack([np.asarray(states)[:, :2] for states, _, _, _ in runs])
    new_act = np.stack([np.asarray(labels) for _, _, labels, _ in runs])[..., None] / 2.0
    return (np.concatenate([obs, new_obs]).astype(np.float32),
            np.concatenate([act, new_act]).astype(np.float32))


def _aggregate_cases():
    import numpy as np

    rng = np.random.default_rng(5)

    def run(steps, seed):  # a closed_loop result: states, torques, expert labels, return
        g = np.random.default_rng(seed)
        angle = g.uniform(-np.pi, np.pi, steps)
        states = np.stack([np.cos(angle), np.sin(angle), g.normal(size=steps)], axis=1)
        return states, g.uniform(-2, 2, steps), g.uniform(-2, 2, steps), float(g.normal())

    obs = rng.normal(size=(2, 4, 2)).astype(np.float32)
    act = rng.uniform(-1, 1, size=(2, 4, 1)).astype(np.float32)
    full = (np.array([[1.0, 0.0, 0.5], [0.0, 1.0, -3.0], [-1.0, 0.0, 2.0]]), np.zeros(3),
            np.array([2.0, -2.0, 1.0]), -10.0)
    return [
        Case((obs[:1, :3], act[:1, :3], [full]),
             show="one run; labels 2, -2, 1 scale to 1, -1, 0.5"),
        Case((obs, act, [run(4, 1)]), show="two episodes, one run of 4 steps"),
        Case((obs, act, [run(4, 2), run(4, 3), run(4, 4)]), show="three runs added"),
    ]


exercise(
    "ex-lr-second-round", notebook=NB6, name="aggregate", signature="aggregate(obs, act, runs)",
    reference=_aggregate_reference, cases=_aggregate_cases, difficulty=2,
    hint="Each run is (states, torques, labels, return): the policy saw states[:, :2], and the training "
         "target is the expert's label divided by 2 (not the policy's own torque); append the new "
         "episodes after the old ones.",
    hints=("np.stack the runs' observations into (runs, steps, 2) and their labels into (runs, steps, 1), "
           "then np.concatenate with obs and act along the first axis.",))


# ----------------------------------------------------------------- hidden cases (python -m rnnlab grade)
# Drawn with the teacher's seeded NumPy generator; the same shapes and ranges as the public cases.

def _normal(rng, *shape):
    import torch

    return torch.from_numpy(rng.normal(size=shape))


@hidden("ex-lr-equal-cost")
def _equal_cost_hidden(rng):
    return [Case((int(n), int(r))) for n, r in ((96, 7), (256, 40), (30, 15))]


@hidden("ex-lr-lstm-step")
def _lstm_step_hidden(rng):
    return [Case((_normal(rng, B, 4, n), 0.5 * _normal(rng, 4, n, n), _normal(rng, B, n), _normal(rng, B, n)))
            for B, n in ((2, 4), (1, 6))]


@hidden("ex-lr-gru-weight-grad")
def _gru_weight_grad_hidden(rng):
    return [Case((_normal(rng, B, T, 3, n), _uniform(rng, B, T, n), _normal(rng, B, T, n)))
            for B, T, n in ((2, 4, 3), (1, 3, 5))]


@hidden("ex-lr-mask-energy")
def _mask_energy_hidden(rng):
    return [Case((_normal(rng, n, n), s)) for n, s in ((7, 0.3), (10, 0.8))]


@hidden("ex-lr-trace-size")
def _trace_size_hidden(rng):
    return [Case((_normal(rng, n, n), _normal(rng, n), s)) for n, s in ((7, 0.4), (9, 0.9))]


@hidden("ex-lr-mask-rank")
def _mask_rank_hidden(rng):
    import torch

    return [Case((torch.from_numpy((rng.random((n, n)) >= s).astype(float)), r))
            for n, s, r in ((10, 0.8, 3), (9, 0.3, 2), (14, 0.9, 5))]


def _uniform(rng, *shape):
    import torch

    return torch.from_numpy(rng.uniform(size=shape))


@hidden("ex-lr-lowrank-radius")
def _radius_hidden(rng):
    return [Case((_normal(rng, n, r) / n ** 0.5, _normal(rng, r, n) / n ** 0.5)) for n, r in ((30, 3), (50, 7))]


@hidden("ex-lr-radius-range")
def _smallest_radius_hidden(rng):
    import torch

    return [Case((torch.from_numpy(rng.uniform(0.5, 2.0, size=n)),)) for n in (7, 30)]


@hidden("ex-lr-init-budget")
def _budget_hidden(rng):
    return [Case((int(n), int(r), float(s))) for n, r, s in ((300, 30, 0.4), (64, 64, 0.9))]


@hidden("ex-lr-rescaled-rnn")
def _gradient_sizes_hidden(rng):
    return [Case((0.4 * _normal(rng, n, n), _normal(rng, T, n))) for n, T in ((5, 7), (8, 12))]


@hidden("ex-lr-gru-jacobian")
def _gru_jacobian_hidden(rng):
    return [Case((_normal(rng, 3, n, n) * 0.5, _normal(rng, 3, n), _normal(rng, n))) for n in (3, 5)]


@hidden("ex-lr-cfc-jacobian")
def _cfc_jacobian_hidden(rng):
    return [Case((_normal(rng, 3, n, n) * 0.5, _normal(rng, 3, n), _normal(rng, n))) for n in (3, 5)]


@hidden("ex-lr-linear-horizon")
def _constant_horizon_hidden(rng):
    return [Case((0.4 * _normal(rng, n, n), T)) for n, T in ((3, 50), (5, 70))]


@hidden("ex-lr-loops")
def _highway_horizon_hidden(rng):
    import torch

    out = []
    for T, n in ((50, 3), (80, 5)):
        J = _normal(rng, T, 2 * n, 2 * n)
        J[:, n:, n:] = torch.diag_embed(torch.from_numpy(rng.uniform(0.4, 0.95, size=(T, n))))
        out.append(Case((J,)))
    return out


@hidden("ex-lr-mixing")
def _growth_rate_hidden(rng):
    return [Case(([0.5 * _normal(rng, n, n) for _ in range(k)],)) for n, k in ((3, 400), (2, 1500))]


@hidden("ex-lr-velocity")
def _velocity_hidden(rng):
    import numpy as np

    theta = rng.uniform(-np.pi, np.pi, 6)
    step = rng.uniform(-1.0, 1.0, 6)
    return [Case((_angles(theta), _angles(theta + step), float(rng.uniform(0.01, 0.2))))]


@hidden("ex-lr-lqr")
def _lqr_hidden(rng):
    import numpy as np

    A = np.eye(2) + 0.3 * rng.normal(size=(2, 2))
    return [Case((A, rng.normal(size=(2, 1)), np.diag(rng.uniform(0.1, 2.0, 2)), np.array([[rng.uniform(0.01, 2.0)]])))]


@hidden("ex-lr-effective-dim")
def _ed_hidden(rng):
    return [Case((rng.normal(size=(150, 6)) * rng.uniform(0.5, 4.0, 6), int(rng.integers(1, 6)))),
            Case((rng.normal(size=(120, 3)) @ rng.normal(size=(3, 9)), 4))]


# ------------------------------------------------------- 07: reproducing the paper

NB7 = "lowrank/07_reproducing"


def _gru_torch_count_reference(n_in, n_hidden):
    return 3 * (n_in * n_hidden + n_hidden * n_hidden + 2 * n_hidden)


exercise(
    "ex-lr-gru-torch-count", notebook=NB7, name="gru_parameter_count",
    signature="gru_parameter_count(n_in, n_hidden)",
    reference=_gru_torch_count_reference, difficulty=1,
    cases=lambda: [Case((256, 64), show="Table 10's size: input 256, hidden 64"),
                   Case((8, 64), show="input 8, hidden 64"), Case((1, 1), show="one input, one unit"),
                   Case((17, 6), show="input 17, hidden 6")],
    hint="Each of the GRU's three gates has an input matrix (n_hidden x n_in), a recurrent matrix "
         "(n_hidden x n_hidden) and, in PyTorch, two bias vectors of n_hidden each.")


def _top_singular_values_reference(W1, W2):
    import torch

    W1, W2 = torch.as_tensor(W1, dtype=torch.float64), torch.as_tensor(W2, dtype=torch.float64)
    return torch.linalg.svdvals(W1 @ W2)[: W1.shape[1]]


def _orthonormal_columns(n, r, seed):
    import torch

    q, rr = torch.linalg.qr(_randn(n, r, seed=seed))
    return q * torch.sign(torch.diagonal(rr))


def _top_singular_values_cases():
    return [
        Case((_orthonormal_columns(16, 3, 70), _orthonormal_columns(16, 3, 71).T),
             show="orthonormal factors, n = 16, r = 3"),
        Case((_orthonormal_columns(64, 8, 72), _orthonormal_columns(64, 8, 73).T),
             show="orthonormal factors, n = 64, r = 8"),
        Case((_randn(16, 4, seed=74) / 4, _randn(4, 16, seed=75) / 4), show="Gaussian factors, n = 16, r = 4"),
    ]


exercise(
    "ex-lr-orthonormal-product", notebook=NB7, name="top_singular_values",
    signature="top_singular_values(W1, W2)",
    reference=_top_singular_values_reference, cases=_top_singular_values_cases, difficulty=1,
    hint="r is W1.shape[1]; the singular values of W1 @ W2 come largest first from an SVD routine; "
         "keep the first r.")


def _paired_difference_reference(a, b, expert_mean):
    import numpy as np

    d = (np.asarray(a, dtype=float) - np.asarray(b, dtype=float)) / float(expert_mean)
    return np.array([d.mean(), d.std(ddof=1) / np.sqrt(len(d))])


def _paired_difference_cases():
    return [
        Case(([3.0, 1.0], [1.0, 1.0], 2.0), show="two episodes, worked by hand: (0.5, 0.5)"),
        Case(([7600.0, 7500.0, 100.0, 7400.0], [7500.0, -100.0, 7300.0, 7450.0], 5000.0),
             show="four episodes, stalls on different seeds"),
        Case(([1.0, 2.0, 3.0, 4.0, 5.0], [1.0, 2.0, 3.0, 4.0, 5.0], 3.0), show="identical policies: (0, 0)"),
    ]


exercise(
    "ex-lr-paired-se", notebook=NB7, name="paired_difference",
    signature="paired_difference(a, b, expert_mean)",
    reference=_paired_difference_reference, cases=_paired_difference_cases, difficulty=2,
    hint="Divide each episode's difference a_i - b_i by the expert's mean; return the mean of those "
         "differences and their sample standard deviation (ddof=1) over sqrt(m), as a pair.")
