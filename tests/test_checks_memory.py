"""The code exercises of the neural-memory chapter (rnnlab/checks/memory.py): plausible wrong
answers fail, naming the failing case and giving a hint (tests/test_exercises.py checks, for every
chapter, that the reference passes and the starter is "not attempted")."""
import torch

from rnnlab.checks import evaluate, exercises

LABELS = ["ex-mem-read-weights", "ex-mem-queue-by-hand", "ex-mem-reversal-controls",
          "ex-mem-pop-grad", "ex-mem-queue-backward", "ex-mem-fine-accuracy", "ex-mem-lifetime"]


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


def test_read_weights_as_an_overlap_pass():
    def overlap(s):                          # the exercise's form: min(1, A + s) - min(1, A)
        reach = torch.flip(torch.cumsum(torch.flip(s, [0]), 0), [0])
        return reach.clamp(max=1) - (reach - s).clamp(max=1)
    assert evaluate("ex-mem-read-weights", overlap).status == "passed"


def test_read_weights_overlap_from_the_bottom_fail():
    def from_bottom(s):                      # the stretches laid out from the bottom: the queue's read
        reach = torch.cumsum(s, 0)
        return reach.clamp(max=1) - (reach - s).clamp(max=1)
    _fails("ex-mem-read-weights", from_bottom, "case 1 of 6")


def test_reversal_pushing_during_the_output_fails():
    def pushes(n):                           # a push puts the output step's own value into its read
        return [1.0] * 2 * n, [0.0] * (n + 1) + [1.0] * (n - 1)
    _fails("ex-mem-reversal-controls", pushes, "reverse order")


def test_queue_by_hand_read_as_a_stack_fails():
    def as_stack():                          # step 2 read from the top: 0.5 of v2, 0.4 of v1
        return [[0.6, 0.0, 0.0], [0.3, 0.7, 0.0], [0.0, 0.0, 0.4]]
    _fails("ex-mem-queue-by-hand", as_stack, "do not match")


def test_queue_by_hand_with_a_full_last_read_fails():
    def full(): return [[0.6, 0.0, 0.0], [0.4, 0.6, 0.0], [0.0, 0.6, 0.4]]
    _fails("ex-mem-queue-by-hand", full, "case 1 of 1")


def test_queue_by_hand_wrong_shape_fails():
    _fails("ex-mem-queue-by-hand", lambda: [0.6, 0.6, 0.6], "shape")


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


def test_queue_pop_gradients_with_the_stack_direction_fail():
    def stack_direction(s_prev, u, g):       # the stack's backward given for the queue
        ahead = torch.cumsum(s_prev, 0) - s_prev
        x = u - ahead
        y = s_prev - torch.clamp(x, min=0)
        gy = torch.where(y > 0, g, torch.zeros_like(g))
        c = torch.where(x > 0, gy, torch.zeros_like(g))
        return gy + (torch.cumsum(c, 0) - c), float(-c.sum())
    _fails("ex-mem-queue-backward", stack_direction, "case 1 of 4")


def test_queue_pop_gradients_right_answer_passes():
    def right(s_prev, u, g):
        ahead = torch.cumsum(s_prev, 0) - s_prev
        x = u - ahead
        y = s_prev - torch.clamp(x, min=0)
        gy = torch.where(y > 0, g, torch.zeros_like(g))
        c = torch.where(x > 0, gy, torch.zeros_like(g))
        return gy + _above(c), float(-c.sum())
    assert evaluate("ex-mem-queue-backward", right).status == "passed"


def test_lifetime_unweighted_fails():
    def unweighted(s):                       # the mean age of every pop, whatever its size
        prev = torch.cat([torch.zeros(1, s.shape[1], dtype=s.dtype), s[:-1]], 0)
        pops = (prev - s).clamp(min=0)
        t, i = torch.nonzero(pops > 0, as_tuple=True)
        return float((t - i).double().mean())
    _fails("ex-mem-lifetime", unweighted, "weigh")


def test_lifetime_counting_pushes_fails():
    def signed(s):                           # pushes counted as negative pops
        prev = torch.cat([torch.zeros(1, s.shape[1], dtype=s.dtype), s[:-1]], 0)
        age = (torch.arange(s.shape[0])[:, None] - torch.arange(s.shape[1])[None, :]).double()
        return float(((prev - s) * age).sum() / (prev - s).abs().sum())
    _fails("ex-mem-lifetime", signed, "case 1 of 4")
