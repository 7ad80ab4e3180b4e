"""The book's widgets: each builds, reacts to its controls, and has a static figure."""
import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from rnnlab.widgets import scan  # noqa: E402


def test_static_figure_is_the_default_state():
    fig = scan.static_figure()
    assert isinstance(fig, Figure)
    assert len(fig.axes) == 2
    default = scan.scan_figure(**scan.DEFAULT)
    assert fig.axes[0].get_title() == default.axes[0].get_title()
    steps = scan.scan_steps(scan.DEFAULT["algorithm"], scan.DEFAULT["n"])
    assert f"step {len(steps) - 1} of {len(steps) - 1}" in fig.axes[0].get_title()


@pytest.mark.parametrize("algorithm", sorted(scan.ALGORITHM_LABELS))
@pytest.mark.parametrize("n", scan.SIZES)
def test_every_state_draws(algorithm, n):
    last = len(scan.scan_steps(algorithm, n)) - 1
    for step in sorted({0, 1, last // 2, last}):
        fig = scan.scan_figure(algorithm, n, step)
        assert f"step {step} of {last}" in fig.axes[0].get_title()


def test_the_title_counts_work_and_depth():
    # Hillis-Steele on 8 inputs: 7 + 6 + 4 = 17 combines in 3 steps.
    assert "work so far 17 of 17 combines, depth so far 3 of 3" in scan.scan_figure("hillis_steele", 8).axes[0].get_title()
    assert "work so far 0 of 14 combines, depth so far 0 of 6" in scan.scan_figure("blelloch", 8, 0).axes[0].get_title()


def test_bad_arguments():
    with pytest.raises(ValueError, match="algorithm must be one of"):
        scan.scan_figure("kogge_stone", 8)
    with pytest.raises(ValueError, match="step must be in 0..3"):
        scan.scan_figure("hillis_steele", 8, 4)
    with pytest.raises(ValueError, match="n must be >= 1"):
        scan.scan_steps("blelloch", 0)
    with pytest.raises(ValueError, match="n must be one of"):
        scan.scan_widget(n=12)


def test_widget_controls():
    w = scan.scan_widget()
    assert w.algorithm.value == scan.DEFAULT["algorithm"]
    assert w.size.value == scan.DEFAULT["n"]
    assert w.step.value == w.step.max == len(scan.scan_steps("hillis_steele", 8)) - 1
    w.algorithm.value = "blelloch"
    assert w.step.max == w.step.value == len(scan.scan_steps("blelloch", 8)) - 1
    w.size.value = 16
    assert w.step.max == len(scan.scan_steps("blelloch", 16)) - 1
    w.step.value = 2
    assert w.step.value == 2
    w.algorithm.value = "sequential"
    assert w.step.max == 15
    w.algorithm.value = "chunked"
    assert w.step.max == len(scan.scan_steps("chunked", 16)) - 1
