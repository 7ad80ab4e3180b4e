"""The code exercises of the low-rank chapter (rnnlab/checks/lowrank.py): plausible wrong answers fail,
naming the failing case and giving a hint (tests/test_exercises.py checks, for every chapter, that the
reference passes and the starter is "not attempted")."""
import torch

from rnnlab.checks import evaluate, exercises

LABELS = ["ex-lr-equal-cost", "ex-lr-lstm-step", "ex-lr-cfc-step", "ex-lr-mask-reach", "ex-lr-knob-sweep",
          "ex-lr-gru-weight-grad", "ex-lr-mask-energy", "ex-lr-trace-size", "ex-lr-decode-noise", "ex-lr-mask-rank",
          "ex-lr-init-budget", "ex-lr-lowrank-radius", "ex-lr-radius-range", "ex-lr-rescaled-rnn",
          "ex-lr-gru-jacobian", "ex-lr-cfc-jacobian", "ex-lr-linear-horizon", "ex-lr-loops", "ex-lr-mixing", "ex-lr-loop-sign", "ex-lr-velocity", "ex-lr-lqr", "ex-lr-effective-dim",
          "ex-lr-second-round", "ex-lr-gru-torch-count", "ex-lr-orthonormal-product", "ex-lr-paired-se"]


def test_the_chapter_declares_exactly_its_exercises():
    assert [ex.label for ex in exercises() if ex.notebook.startswith("lowrank/")] == LABELS


def _fails(label, candidate, *words):
    result = evaluate(label, candidate)
    assert result.status == "failed", result.message
    assert "failed: for " in result.message and "hint:" in result.message, result.message
    for word in words:
        assert word in result.message, result.message
    return result


def test_a_gru_weight_grad_that_gives_the_candidate_h_prev_fails():
    def h_everywhere(g_pre, r, h_prev):
        return torch.einsum("btgi,btj->gij", g_pre, h_prev)
    _fails("ex-lr-gru-weight-grad", h_everywhere, "case 1 of 4", "q_t * h_{t-1}")


def test_an_equal_cost_sparsity_that_counts_one_factor_fails():
    _fails("ex-lr-equal-cost", lambda n, r: 1 - r / n, "case 1 of 5", "2nr")


def test_a_rank_bound_that_counts_rows_instead_of_the_mask_rank_fails():
    def by_rows(M, r):  # r times the number of nonempty rows: not the rank of M
        import numpy as np
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import maximum_bipartite_matching

        matching = int((maximum_bipartite_matching(csr_matrix(np.asarray(M))) >= 0).sum())
        return r * int((M.sum(1) > 0).sum()), matching
    _fails("ex-lr-mask-rank", by_rows, "case 1 of 5", "rank of M")


def test_a_rank_bound_that_ignores_empty_rows_fails():
    _fails("ex-lr-mask-rank",
           lambda M, r: (r * int(torch.linalg.matrix_rank(M)), min(M.shape)), "case 3 of 5")


def test_a_gru_weight_grad_with_the_outer_product_transposed_fails():
    def transposed(g_pre, r, h_prev):
        u = torch.stack([h_prev, h_prev, r * h_prev], 2)
        return torch.einsum("btgi,btgj->gji", g_pre, u)
    _fails("ex-lr-gru-weight-grad", transposed, "case 1 of 4")


def test_radius_from_singular_values_fails():
    _fails("ex-lr-lowrank-radius", lambda W1, W2: torch.linalg.svdvals(W2 @ W1).max(), "case 1 of 5")


def _gru_parts(W, d, h):
    r = torch.sigmoid(d[0] + W[0] @ h)
    z = torch.sigmoid(d[1] + W[1] @ h)
    n = torch.tanh(d[2] + W[2] @ (r * h))
    return r, z, n


def test_a_gru_jacobian_without_the_copy_path_fails():
    def no_copy(W, d, h):
        r, z, n = _gru_parts(W, d, h)
        dr = torch.diag(r) + (h * r * (1 - r))[:, None] * W[0]
        return ((h - n) * z * (1 - z))[:, None] * W[1] + ((1 - z) * (1 - n ** 2))[:, None] * (W[2] @ dr)
    _fails("ex-lr-gru-jacobian", no_copy, "case 1 of 4", "hint:")


def test_a_gru_jacobian_that_holds_the_reset_gate_fixed_fails():
    def reset_fixed(W, d, h):
        r, z, n = _gru_parts(W, d, h)
        return (torch.diag(z) + ((h - n) * z * (1 - z))[:, None] * W[1]
                + ((1 - z) * (1 - n ** 2))[:, None] * (W[2] @ torch.diag(r)))
    _fails("ex-lr-gru-jacobian", reset_fixed, "case 1 of 4")


def test_the_hand_derived_gru_jacobian_passes():
    def by_hand(W, d, h):
        r, z, n = _gru_parts(W, d, h)
        dr = torch.diag(r) + (h * r * (1 - r))[:, None] * W[0]
        return (torch.diag(z) + ((h - n) * z * (1 - z))[:, None] * W[1]
                + ((1 - z) * (1 - n ** 2))[:, None] * (W[2] @ dr))
    assert evaluate("ex-lr-gru-jacobian", by_hand).status == "passed"


def _cfc_parts(W, d, h):
    gate = torch.sigmoid(d[0] + W[0] @ h)
    return gate, torch.tanh(d[1] + W[1] @ h), torch.tanh(d[2] + W[2] @ h)


def test_a_cfc_jacobian_without_the_gates_derivative_fails():
    def no_gate_term(W, d, h):
        f, g, k = _cfc_parts(W, d, h)
        return (f * (1 - g ** 2))[:, None] * W[1] + ((1 - f) * (1 - k ** 2))[:, None] * W[2]
    _fails("ex-lr-cfc-jacobian", no_gate_term, "case 1 of 4", "hint:")


def test_a_cfc_jacobian_with_the_gate_term_of_the_wrong_sign_fails():
    def wrong_sign(W, d, h):
        f, g, k = _cfc_parts(W, d, h)
        return ((f * (1 - g ** 2))[:, None] * W[1] + ((1 - f) * (1 - k ** 2))[:, None] * W[2]
                + ((k - g) * f * (1 - f))[:, None] * W[0])
    _fails("ex-lr-cfc-jacobian", wrong_sign, "case 1 of 4")


def test_the_hand_derived_cfc_jacobian_passes():
    def by_hand(W, d, h):
        f, g, k = _cfc_parts(W, d, h)
        return ((f * (1 - g ** 2))[:, None] * W[1] + ((1 - f) * (1 - k ** 2))[:, None] * W[2]
                + ((g - k) * f * (1 - f))[:, None] * W[0])
    assert evaluate("ex-lr-cfc-jacobian", by_hand).status == "passed"


def test_a_highway_horizon_that_keeps_the_loops_fails():
    from rnnlab.theory.horizon import cumulative_log_norms, horizon_slope

    def uncut(Js):                              # the whole (h, c) product: the loops stay in
        return -1 / float(horizon_slope(cumulative_log_norms(Js)))
    _fails("ex-lr-loops", uncut, "case 1 of 3")


def test_a_growth_rate_without_renormalising_fails():
    def naive(Js):
        P = torch.eye(Js[0].shape[0], dtype=torch.float64)
        for J in Js:
            P = J @ P                           # 0.5^3000 underflows to 0: log 0 = -inf
        return float(torch.log(torch.linalg.matrix_norm(P))) / len(Js)
    _fails("ex-lr-mixing", naive, "case 1 of 5", "underflow")


def test_a_growth_rate_from_one_step_norms_fails():
    def per_step(Js):                           # the mean of log||J_t||: ignores how the steps combine
        return float(sum(torch.log(torch.linalg.matrix_norm(J)) for J in Js)) / len(Js)
    _fails("ex-lr-mixing", per_step, "case 1 of 5")


def test_velocity_without_wrapping_fails():
    import numpy as np

    def unwrapped(a, b, dt):
        return (np.arctan2(b[..., 1], b[..., 0]) - np.arctan2(a[..., 1], a[..., 0])) / dt
    _fails("ex-lr-velocity", unwrapped, "case 2 of 3", "wrap")


def test_lqr_with_one_riccati_step_fails():
    import numpy as np

    def one_step(A, B, Q, R):
        return np.linalg.solve(R + B.T @ Q @ B, B.T @ Q @ A)   # S = Q: the one-step-horizon gain
    _fails("ex-lr-lqr", one_step, "case 1 of 3")


def test_effective_dim_without_centring_fails():
    import numpy as np

    def uncentred(X, k):
        s = np.linalg.svd(X, compute_uv=False)
        return float((s[:k] ** 2).sum() / (s ** 2).sum())
    _fails("ex-lr-effective-dim", uncentred, "case 2 of 3", "Centre")


def test_an_lstm_step_with_the_output_gate_before_the_tanh_fails():
    def gate_first(pre, W, h, c):
        a = pre + torch.einsum("gij,bj->bgi", W, h)
        i, f, o = torch.sigmoid(a[:, 0]), torch.sigmoid(a[:, 1]), torch.sigmoid(a[:, 3])
        c = f * c + i * torch.tanh(a[:, 2])
        return torch.tanh(o * c), c
    _fails("ex-lr-lstm-step", gate_first, "case 1 of 4", "hint:")


def test_an_lstm_step_with_the_gates_in_torch_gru_order_fails():
    def swapped(pre, W, h, c):                 # f and i exchanged
        a = pre + torch.einsum("gij,bj->bgi", W, h)
        f, i, o = torch.sigmoid(a[:, 0]), torch.sigmoid(a[:, 1]), torch.sigmoid(a[:, 3])
        c = f * c + i * torch.tanh(a[:, 2])
        return o * torch.tanh(c), c
    _fails("ex-lr-lstm-step", swapped, "case 1 of 4")


def test_the_hand_written_lstm_step_passes():
    def by_hand(pre, W, h, c):
        a = pre + torch.einsum("gij,bj->bgi", W, h)
        i, f, o = torch.sigmoid(a[:, 0]), torch.sigmoid(a[:, 1]), torch.sigmoid(a[:, 3])
        c = f * c + i * torch.tanh(a[:, 2])
        return o * torch.tanh(c), c
    assert evaluate("ex-lr-lstm-step", by_hand).status == "passed"


def test_a_cfc_step_with_the_candidates_swapped_fails():
    def swapped(u, W, h):                      # sigma(F) on tanh(H) instead of tanh(G)
        a = u + torch.einsum("gij,bj->bgi", W, h)
        f = torch.sigmoid(a[:, 0])
        return f * torch.tanh(a[:, 2]) + (1 - f) * torch.tanh(a[:, 1])
    _fails("ex-lr-cfc-step", swapped, "case 1 of 4")


def test_the_hand_written_cfc_step_passes():
    def by_hand(u, W, h):
        a = u + torch.einsum("gij,bj->bgi", W, h)
        f = torch.sigmoid(a[:, 0])
        return f * torch.tanh(a[:, 1]) + (1 - f) * torch.tanh(a[:, 2])
    assert evaluate("ex-lr-cfc-step", by_hand).status == "passed"


def test_a_constant_horizon_fitted_over_every_step_fails():
    import torch

    from rnnlab.theory.horizon import cumulative_log_norms, horizon_slope

    def every_step(A, T):                       # the fit over k = 1 ... T, not the second half
        curve = cumulative_log_norms(torch.stack([torch.as_tensor(A, dtype=torch.float64)] * T))
        return -1 / float(horizon_slope(curve, window=(1, T)))
    _fails("ex-lr-linear-horizon", every_step, "case 2 of 4")


def test_a_mask_energy_that_squares_the_mean_mask_fails():
    def mean_mask(W, s):  # the noise's energy taken as the copy's: (1 - s)^2 for both
        w2 = float((W**2).sum())
        return (1 - s) ** 2 * w2, (1 - s) ** 2 * w2, (1 - s) ** 2 * w2
    _fails("ex-lr-mask-energy", mean_mask, "case 1 of 4", "variance")


def test_a_shortening_interval_from_the_real_case_alone_fails():
    def real_only(a, f):  # stops where the eigenvalues turn complex
        return (-((f - a) ** 2) / 4, 0.0)
    _fails("ex-lr-loop-sign", real_only, "case 1 of 4")
