"""The code exercises of the neural-memory chapter (rnnlab/checks/memory.py): plausible wrong
answers fail, naming the failing case and giving a hint (tests/test_exercises.py checks, for every
chapter, that the reference passes and the starter is "not attempted")."""
import torch

from rnnlab.checks import evaluate, exercises

LABELS = ["ex-mem-read-weights", "ex-mem-queue-by-hand", "ex-mem-reversal-controls", "ex-mem-deque-pops",
          "ex-mem-fractional", "ex-mem-pop-grad", "ex-mem-read-grad", "ex-mem-queue-backward", "ex-mem-deque-backward",
          "ex-mem-push-reach", "ex-mem-linked-symbols",
          "ex-mem-stack-bptt", "ex-mem-pop-steps", "ex-mem-lifetime",
          "ex-mem-deque-roles", "ex-mem-inside-queue"]


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


def _window(reach, s, depth):
    return reach.clamp(depth, depth + 1) - (reach - s).clamp(depth, depth + 1)


def test_read_weights_from_the_bottom_fail():
    def from_bottom(s, depth):               # the stretches laid out from the bottom: the queue's read
        return _window(torch.cumsum(s, 0), s, depth)
    _fails("ex-mem-read-weights", from_bottom, "case 1 of 7")


def test_read_weights_ignoring_the_depth_fail():
    def eq3(s, depth):                       # the page's read, whatever the depth
        return torch.minimum(s, torch.clamp(1 - _above(s), min=0))
    _fails("ex-mem-read-weights", eq3, "case 2 of 7")


def test_read_weights_skipping_whole_rows_fail():
    def skip_rows(s, depth):                 # depth counted in rows, not in strength
        k = int(depth)
        w = torch.zeros_like(s)
        n = len(s) - k
        if n > 0:
            w[:n] = torch.minimum(s[:n], torch.clamp(1 - _above(s[:n]), min=0))
        return w
    _fails("ex-mem-read-weights", skip_rows, "case 3 of 7")


def test_read_weights_as_a_window_pass():
    def window(s, depth):                    # the exercise's form, from the top
        return _window(torch.flip(torch.cumsum(torch.flip(s, [0]), 0), [0]), s, depth)
    assert evaluate("ex-mem-read-weights", window).status == "passed"


def test_deque_pops_in_the_other_order_pass():
    def bottom_first(s, u_top, u_bot):       # the two pops commute: bottom first gives the same
        below = torch.cumsum(s, 0) - s
        s = torch.relu(s - torch.relu(u_bot - below))
        return torch.relu(s - torch.relu(u_top - _above(s)))
    assert evaluate("ex-mem-deque-pops", bottom_first).status == "passed"


def test_deque_pops_as_one_overlap_pass():
    def overlap(s, u_top, u_bot):            # row i keeps its stretch minus what each end removes
        below = torch.cumsum(s, 0) - s
        return torch.relu(s - torch.relu(u_top - _above(s)) - torch.relu(u_bot - below))
    assert evaluate("ex-mem-deque-pops", overlap).status == "passed"


def test_deque_pops_both_from_the_top_fail():
    def both_top(s, u_top, u_bot):           # the bottom pop given the stack's rule
        return torch.relu(s - torch.relu(u_top + u_bot - _above(s)))
    _fails("ex-mem-deque-pops", both_top, "case 1 of 5")


def test_deque_pops_top_only_fail():
    def top_only(s, u_top, u_bot):
        return torch.relu(s - torch.relu(u_top - _above(s)))
    _fails("ex-mem-deque-pops", top_only, "case 1 of 5")


def test_fractional_in_three_steps_fails():
    _fails("ex-mem-fractional", lambda: ("ABA", [0.9, 0.9, 0.1], [0.1, 0.5, 0.9], (1, 2, 3)), "step 1")


def test_fractional_with_a_whole_push_fails():
    _fails("ex-mem-fractional", lambda: ("ABA", [1.0, 1.0, 0.5], [0.0, 0.0, 1.0], (1, 2, 3)),
           "strictly between 0 and 1")


def test_fractional_longer_than_needed_fails():
    def seven():                              # the six-step schedule with a harmless first step
        return ("BAABBAA", [0.5, 0.6, 0.6, 0.6, 0.6, 0.1, 0.5],
                [0.5, 0.9, 0.1, 0.1, 0.1, 0.9, 0.35], (3, 5, 7))
    _fails("ex-mem-fractional", seven, "fewer steps")


def test_fractional_another_six_step_schedule_passes():
    def other():                             # B's 0.85 cleared by pops of 0.9 and 0.5, A pushed at 0.2 between
        return ("AABBAA", [0.5, 0.6, 0.6, 0.6, 0.2, 0.6], [0.3, 0.05, 0.05, 0.05, 0.9, 0.5], (2, 4, 6))
    assert evaluate("ex-mem-fractional", other).status == "passed", evaluate("ex-mem-fractional", other).message


def test_pop_grad_without_the_running_sum_fails():
    _fails("ex-mem-pop-grad", lambda: ([1.0, -2.0, 0.5, 0.0], -0.5), "not the gradient")


def test_pop_grad_with_the_wrong_sign_on_u_fails():
    _fails("ex-mem-pop-grad", lambda: ([1.0, -2.0, 0.5, 0.5], 0.5), "dL/du")


def test_read_grad_without_the_cut_row_fails():
    _fails("ex-mem-read-grad", lambda: [0.0, -2.0, 0.5, 3.0], "not the gradient")


def test_read_grad_with_the_weights_fails():
    _fails("ex-mem-read-grad", lambda: [0.0, 0.3, 0.3, 0.4], "not the gradient")


def test_push_reach_counting_the_own_step_fails():
    def plus_one(d, u):                      # counts the read of the push's own step too
        return (int((1 - d) / (d - u)) if u < d else 0) + 1
    _fails("ex-mem-push-reach", plus_one, "case 1 of 7")


def test_push_reach_rounding_fails():
    def rounded(d, u):                       # rounds (1 - d) / (d - u) instead of its floor
        return round((1 - d) / (d - u)) if u < d else 0
    _fails("ex-mem-push-reach", rounded, "case 3 of 7")


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


def test_pops_of_the_other_wiring_fail_and_say_so():
    def other(m, same_step):                 # the answer of the other wiring
        first = m + 1 if same_step else m + 2
        return [1.0 if first <= t < first + m else 0.0 for t in range(2 * m + 2)]
    _fails("ex-mem-pop-steps", other, "other wiring")


def test_pops_one_step_short_fail():
    def short(m, same_step):                 # leaves x_1 on the stack: the </s> step sees it
        first = m + 2 if same_step else m + 1
        return [1.0 if first <= t < first + m - 1 else 0.0 for t in range(2 * m + 2)]
    _fails("ex-mem-pop-steps", short, "case 1 of 5")


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


def _deque_pop_grads(s_prev, u_top, u_bot, g, bottom_flipped=True):
    def back(s, u, g):                       # a pop from the top, backwards (stages B-D)
        x = u - _above(s)
        y = s - torch.clamp(x, min=0)
        gy = torch.where(y > 0, g, torch.zeros_like(g))
        c = torch.where(x > 0, gy, torch.zeros_like(g))
        return gy + (torch.cumsum(c, 0) - c), float(-c.sum())
    s_mid = torch.relu(s_prev - torch.relu(u_top - _above(s_prev)))
    if bottom_flipped:
        g_mid, g_ub = back(s_mid.flip(0), u_bot, g.flip(0))
        g_mid = g_mid.flip(0)
    else:                                    # the bottom pop run backwards as if from the top
        g_mid, g_ub = back(s_mid, u_bot, g)
    g_old, g_ut = back(s_prev, u_top, g_mid)
    return g_old, g_ut, g_ub


def test_deque_pop_gradients_without_flipping_the_bottom_pop_fail():
    _fails("ex-mem-deque-backward", lambda *a: _deque_pop_grads(*a, bottom_flipped=False), "case 1 of 5")


def test_deque_pop_gradients_right_answer_passes():
    assert evaluate("ex-mem-deque-backward", _deque_pop_grads).status == "passed"


def _bptt(v, d, u, g_r, *, through_time=True, pops=True):
    """The stack's backward through T steps (ex-mem-stack-bptt); the flags make it wrong."""
    T = len(d)
    kept, s = [], v.new_zeros(0)
    for t in range(T):
        kept.append(s)
        s = torch.cat([torch.relu(s - torch.relu(u[t] - _above(s))), d[t:t + 1]])
    g_v, g_d, g_u = torch.zeros_like(v), torch.zeros_like(d), torch.zeros_like(u)
    back = v.new_zeros(T)
    for t in range(T - 1, -1, -1):
        x = u[t] - _above(kept[t])
        y = kept[t] - torch.relu(x)
        s = torch.cat([torch.relu(y), d[t:t + 1]])
        room = 1 - _above(s)
        g_v[:t + 1] += torch.minimum(s, torch.relu(room))[:, None] * g_r[t]
        gamma = v[:t + 1] @ g_r[t]
        whole = s <= torch.relu(room)
        cut = torch.where(~whole & (room > 0), gamma, 0.0)
        g_s = torch.where(whole, gamma, 0.0) - (torch.cumsum(cut, 0) - cut) + back
        g_d[t] = g_s[t]
        gy = torch.where(y > 0, g_s[:t], 0.0)
        c = torch.where(x > 0, gy, 0.0)
        g_u[t] = -c.sum() if pops else 0.0
        back = gy + (torch.cumsum(c, 0) - c) if through_time else v.new_zeros(t)
    return g_v, g_d, g_u


def test_stack_bptt_right_answer_passes():
    assert evaluate("ex-mem-stack-bptt", _bptt).status == "passed"


def test_stack_bptt_without_the_time_recursion_fails():
    def one_step(v, d, u, g_r):              # each step's own read only: no gradient through later pops
        return _bptt(v, d, u, g_r, through_time=False)
    _fails("ex-mem-stack-bptt", one_step, "case 1 of 4")


def test_stack_bptt_without_the_pops_gradient_fails():
    def no_pops(v, d, u, g_r):
        return _bptt(v, d, u, g_r, pops=False)
    _fails("ex-mem-stack-bptt", no_pops, "case 1 of 4")


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
