"""Widgets of the neural-memory chapter: the package's numbers, the appendix-B picture, static figures, live controls."""
import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from rnnlab.widgets import memory as mw  # noqa: E402


def test_push_three_pop_three_is_a_classical_stack_and_queue():
    d, u = mw.program_controls("stack", "push 3, pop 3")
    r, s = mw.run_program("stack", d, u)
    # reads A, B, C, then B, A after popping C and B, then nothing
    assert [int(np.argmax(x)) if x.sum() > 0.5 else None for x in r] == [0, 1, 2, 1, 0, None]
    np.testing.assert_allclose(s[2, :3], 1) and np.testing.assert_allclose(s[5], 0)
    r, s = mw.run_program("queue", *mw.program_controls("queue", "push 3, pop 3"))
    # the queue reads its front: A while it is there, then B, then C
    assert [int(np.argmax(x)) if x.sum() > 0.5 else None for x in r] == [0, 0, 0, 1, 2, None]


def test_deque_program_drives_the_top_like_a_stack():
    r_stack, _ = mw.run_program("stack", *mw.program_controls("stack", "fractions"))
    r_deque, s = mw.run_program("deque", *mw.program_controls("deque", "fractions"))
    np.testing.assert_allclose(r_deque[:, 0], r_stack, atol=1e-12)
    assert s.shape == (6, 12) and np.all(s[:, :6] == 0)          # nothing pushed at the bottom


def test_memory_figure_and_errors():
    fig = mw.static_figure()
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    assert len(mw.memory_figure("deque", "fractions", 3).axes) == 3
    with pytest.raises(ValueError, match="kind"):
        mw.program_controls("heap", "fractions")
    with pytest.raises(ValueError, match="program"):
        mw.program_controls("stack", "nothing")
    with pytest.raises(ValueError, match="step"):
        mw.memory_figure("stack", "fractions", 7)


def test_appendix_b_pop_bias_zero_cuts_push_gradients_to_one_step():
    """u >= d = 0.5: each value is popped the step after its push, so a push decision reaches only
    the read of its own step; with b_u = -1 (the paper's initialisation) it reaches later reads."""
    for b_u in (0.0, 0.5):                                      # u = d (a tie) and u > d
        J, s = mw.push_jacobian(b_u, 0.0, "stack", 8)
        np.testing.assert_allclose(J, np.diag(np.diag(J)), atol=1e-12)
    assert np.all(np.diag(J) > 0.5)
    J, _ = mw.push_jacobian(-1.0, 0.0, "stack", 8)
    assert np.all(np.triu(J, 1) == 0)                           # no read depends on a later push
    assert J[5, 3] > 0.5 and J[5, 4] > 0.5                       # reads reach two pushes back
    with pytest.raises(ValueError, match="T"):
        mw.push_jacobian(0.0, 0.0, "stack", 1)


def test_backward_figure():
    fig = mw.static_backward_figure()
    assert isinstance(fig, Figure) and len(fig.axes) == 3
    assert "u ≥ d" in fig._suptitle.get_text()
    assert "u ≥ d" not in mw.backward_figure(-1.0)._suptitle.get_text()
    assert len(mw.backward_figure(-1.0, 0.0, "queue", 6).axes) == 3


def test_memory_widget_reacts_to_its_controls():
    box = mw.memory_widget()
    sliders = list(box.sliders.values())
    assert [s.disabled for s in sliders] == [False, False, True, True]
    assert "step 6" in box.figure._suptitle.get_text()
    box.step.value = 2
    assert sliders[0].value == 1.0 and sliders[1].value == 0.0
    sliders[1].value = 0.5                                   # pop half at step 2
    assert "pop u = 0.50" in box.figure._suptitle.get_text()
    box.kind.value = "deque"                                 # a new kind reloads the program
    assert [s.disabled for s in sliders] == [False, False, False, False]
    assert sliders[1].value == 0.0
    box.program.value = "fractions"
    assert sliders[0].value == pytest.approx(0.6)
    sliders[3].value = 0.25                                  # pop the bottom at step 2
    assert "bottom d = 0.00, u = 0.25" in box.figure._suptitle.get_text()


def test_backward_widget_reacts_to_its_controls():
    box = mw.backward_widget()
    assert "u ≥ d" in box.figure._suptitle.get_text()
    box.b_u.value = -1.0
    assert "u ≥ d" not in box.figure._suptitle.get_text()
    box.kind.value = "deque"
    assert box.figure._suptitle.get_text().startswith("deque")
