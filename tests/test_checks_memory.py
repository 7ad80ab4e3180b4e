"""The code exercises of the neural-memory chapter (rnnlab/checks/memory.py): plausible wrong
answers fail, naming the failing case and giving a hint (tests/test_exercises.py checks, for every
chapter, that the reference passes and the starter is "not attempted")."""
import torch

from rnnlab.checks import evaluate, exercises

LABELS = ["ex-mem-read-weights", "ex-mem-pop", "ex-mem-queue-read", "ex-mem-reversal-controls",
          "ex-mem-pop-grad", "ex-mem-fine-accuracy"]


def test_the_chapter_declares_exactly_its_exercises():
    assert [ex.label for ex in exercises() if ex.notebook.startswith("memory/")] == LABELS


def _fails(label, candidate, *words):
    result = evaluate(label, candidate)
    assert result.status == "failed", result.message
    assert "failed: for " in result.message and "hint:" in result.message, result.message
    for word in words:
        assert word in result.message, result.message
    return result


def _above(s):
    return torch.flip(torch.cumsum(torch.flip(s, [0]), 0), [0]) - s


def test_read_weights_from_the_bottom_fail():
    def from_bottom(s):                      # the queue's rule given for the stack
        before = torch.cumsum(s, 0) - s
        return torch.minimum(s, torch.clamp(1 - before, min=0))
    _fails("ex-mem-read-weights", from_bottom, "case 1 of 6")


def test_read_weights_counting_the_row_itself_fail():
    def inclusive(s):                        # sum over j >= i instead of j > i
        return torch.minimum(s, torch.clamp(1 - _above(s) - s, min=0))
    _fails("ex-mem-read-weights", inclusive, "case 1 of 6")


def test_pop_without_the_outer_max_fails():
    def negative(s, u):                      # strengths may go below 0
        return s - torch.clamp(u - _above(s), min=0)
    _fails("ex-mem-pop", negative, "case 2 of 5")


def test_queue_read_from_the_back_fails():
    def from_back(s, V):
        return torch.minimum(s, torch.clamp(1 - _above(s), min=0)) @ V
    _fails("ex-mem-queue-read", from_back, "case 1 of 4")


def test_reversal_popping_at_the_first_output_step_fails():
    def early(n):                            # pops the last symbol before reading it
        return [1.0] * n + [0.0] * n, [0.0] * n + [1.0] * n
    _fails("ex-mem-reversal-controls", early, "n = 1", "reverse order")


def test_reversal_with_wrong_lengths_fails():
    _fails("ex-mem-reversal-controls", lambda n: ([1.0] * n, [0.0] * n), "2n")


def test_pop_gradients_forgetting_the_rows_above_fail():
    def own_only(s_prev, u, g):              # eq. 16 as printed: no gradient through the partly popped row's sum
        x = u - _above(s_prev)
        y = s_prev - torch.clamp(x, min=0)
        gy = torch.where(y > 0, g, torch.zeros_like(g))
        c = torch.where(x > 0, gy, torch.zeros_like(g))
        return gy, float(-c.sum())
    _fails("ex-mem-pop-grad", own_only, "case 1 of 4")


def test_fine_accuracy_without_the_end_symbol_fails():
    def no_end(prediction, target, end):     # divides by len(target), ignores </s>
        k = 0
        while k < min(len(prediction), len(target)) and prediction[k] == target[k]:
            k += 1
        return k / len(target)
    _fails("ex-mem-fine-accuracy", no_end, "case 2 of 6")
