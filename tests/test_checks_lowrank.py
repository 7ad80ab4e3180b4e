"""The code exercises of the low-rank chapter (rnnlab/checks/lowrank.py): plausible wrong answers fail,
naming the failing case and giving a hint (tests/test_exercises.py checks, for every chapter, that the
reference passes and the starter is "not attempted")."""
import torch

from rnnlab.checks import evaluate, exercises

LABELS = ["ex-lr-w-rec", "ex-lr-count", "ex-lr-lowrank-radius", "ex-lr-rnn-jacobian", "ex-lr-cfc-jacobian",
          "ex-lr-log-norms", "ex-lr-velocity", "ex-lr-lqr", "ex-lr-effective-dim"]


def test_the_chapter_declares_exactly_its_exercises():
    assert [ex.label for ex in exercises() if ex.notebook.startswith("lowrank/")] == LABELS


def _fails(label, candidate, *words):
    result = evaluate(label, candidate)
    assert result.status == "failed", result.message
    assert "failed: for " in result.message and "hint:" in result.message, result.message
    for word in words:
        assert word in result.message, result.message
    return result


def test_forgetting_the_mask_fails():
    _fails("ex-lr-w-rec", lambda W1, W2, M: W1 if W2 is None else W1 @ W2, "case 2 of 4")


def test_forgetting_the_mask_at_full_rank_fails():
    _fails("ex-lr-w-rec", lambda W1, W2, M: W1 if W2 is None else (W1 @ W2) * M, "case 3 of 4")


def test_counting_torch_two_biases_fails():
    def two_biases(kind, i, n, rank):
        g = {"rnn": 1, "lstm": 4, "gru": 3, "cfc": 3}[kind]
        return g * (i * n + 2 * n + (n * n if rank is None else 2 * n * rank))
    _fails("ex-lr-count", two_biases, "case 1 of 6")


def test_counting_a_low_rank_matrix_as_dense_fails():
    def dense(kind, i, n, rank):
        g = {"rnn": 1, "lstm": 4, "gru": 3, "cfc": 3}[kind]
        return g * (i * n + n + n * n)
    _fails("ex-lr-count", dense, "case 4 of 6")


def test_radius_from_singular_values_fails():
    _fails("ex-lr-lowrank-radius", lambda W1, W2: torch.linalg.svdvals(W2 @ W1).max(), "case 1 of 5")


def test_the_appendix_rnn_jacobian_fails():
    _fails("ex-lr-rnn-jacobian", lambda W, d, h: (1 - torch.tanh(h) ** 2)[:, None] * W, "case 1 of 4")


def test_the_appendix_cfc_jacobian_fails():
    def printed(W, drive, h):
        pre = drive + W @ h
        f, g, k = torch.sigmoid(pre[0]), torch.tanh(pre[1]), torch.tanh(pre[2])
        df = f * (1 - f)
        return ((f * (1 - g ** 2))[:, None] * W[1] + g[:, None] * (df[:, None] * W[0])
                + ((1 - f) * (1 - k ** 2))[:, None] * W[2] + k[:, None] * (1 - df[:, None] * W[0]))
    _fails("ex-lr-cfc-jacobian", printed, "case 1 of 3")


def test_products_in_the_wrong_order_fail():
    def forward_order(Js):
        out, P = [], None
        for J in Js:                            # J_1, J_2 J_1, ...: the past's end, not the present's
            P = J if P is None else J @ P
            out.append(torch.log(torch.linalg.matrix_norm(P)))
        out = torch.stack(out)
        return out - out[0]
    _fails("ex-lr-log-norms", forward_order, "case 2 of 4")


def test_unshifted_curve_fails():
    def unshifted(Js):
        out, P = [], None
        for J in reversed(list(Js)):
            P = J if P is None else P @ J
            out.append(torch.log(torch.linalg.matrix_norm(P)))
        return torch.stack(out)
    _fails("ex-lr-log-norms", unshifted, "case 1 of 4")


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
