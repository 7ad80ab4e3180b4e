"""Widgets of the contraction chapter: they build, react to their controls, and have a static figure."""
import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from rnnlab.widgets import contraction as cw  # noqa: E402

SMALL_GRID = None


def _grid():
    global SMALL_GRID
    if SMALL_GRID is None:
        SMALL_GRID = cw.theorem7_default_grid(cs=[1.0, 3.0], epss=[0.0, 0.5])
    return SMALL_GRID


def test_static_trajectory_figure_is_the_default_state():
    fig = cw.static_figure("trajectories")
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    default = cw.trajectory_figure(preset=cw.DEFAULT_PRESET)
    assert fig.axes[0].get_title() == default.axes[0].get_title()
    assert fig.axes[1].get_title() == default.axes[1].get_title()
    assert fig.axes[1].get_title().startswith("diagonal metric")
    assert fig.cert.holds


@pytest.mark.parametrize("name", sorted(cw.PRESETS))
def test_every_preset_draws_and_its_verdict_is_right(name):
    fig = cw.trajectory_figure(preset=name)
    title = fig.axes[1].get_title()
    if "no constant metric" in name or "bistable" in name:
        assert not fig.cert.holds and title.startswith("no constant metric")
    else:
        assert fig.cert.holds and "rate" in title


def test_the_certified_bound_holds_along_the_drawn_trajectories():
    W = np.array(cw.PRESETS[cw.DEFAULT_PRESET]["W"])
    cert = cw.metric_for(W, "relu")
    times, X = cw.two_trajectories(W, "relu", 1.0, 1.0)
    s = np.sqrt(np.diag(cert.metric))
    d = np.linalg.norm((X[:, 0] - X[:, 1]) * s, axis=1)
    # Euler with dt = 0.01 contracts at least at the certified rate, up to O(dt)
    assert np.all(d <= d[0] * np.exp(-cert.rate * times * 0.95) * (1 + 1e-9))
    # the Euclidean distance of the default state grows at first: the metric matters
    e = np.linalg.norm(X[:, 0] - X[:, 1], axis=1)
    assert e.max() > 1.1 * e[0]


def test_trajectory_bad_arguments():
    with pytest.raises(ValueError, match="2x2"):
        cw.trajectory_figure(np.eye(3))
    with pytest.raises(ValueError, match="preset must be one of"):
        cw.trajectory_figure(preset="nope")
    with pytest.raises(ValueError, match="activation"):
        cw.trajectory_figure(np.eye(2), "swish")
    with pytest.raises(ValueError, match="preset must be one of"):
        cw.trajectory_widget("nope")


def test_trajectory_widget_controls():
    w = cw.trajectory_widget()
    W0 = np.array(cw.PRESETS[cw.DEFAULT_PRESET]["W"]).ravel()
    assert [s.value for s in w.weights] == pytest.approx(W0)
    w.preset.value = "bistable (tanh, W = 2 I)"
    assert w.activation.value == "tanh"
    assert [s.value for s in w.weights] == pytest.approx([2, 0, 0, 2])
    assert w.offset.value == 0.0 and w.amplitude.value == pytest.approx(0.3)
    w.weights[1].value = -1.0
    w.amplitude.value = 0.5
    assert "W = [[2, -1], [0, 2]], tanh, u = 0 + 0.5" in w.figure.axes[0].get_title()


def test_static_theorem7_figure_is_the_default_state():
    fig = cw.static_figure("theorem7", grid=_grid())
    assert len([ax for ax in fig.axes if ax.get_label() != "<colorbar>"]) == 3
    assert "c = 2, eps = 0" in fig.axes[1].get_title()
    assert "no common metric" in fig.axes[1].get_title()
    assert not fig.search.holds
    assert fig.conditions["all necessary"] == 0 and fig.conditions["all exact"] == 0


def test_theorem7_figure_below_and_at_the_threshold():
    below = cw.theorem7_figure(1.9, 0.0, _grid())
    assert below.search.holds and below.conditions["all exact"] > 0
    assert below.conditions["all necessary"] >= below.conditions["all exact"]
    at = cw.theorem7_figure(4.0, 0.5, _grid())
    assert not at.search.holds and at.conditions["all necessary"] == 0
    with pytest.raises(ValueError, match="eps"):
        cw.theorem7_figure(2.0, 1.0, _grid())
    with pytest.raises(ValueError, match="widget must be"):
        cw.static_figure("nope")


def test_theorem7_widget_controls():
    w = cw.theorem7_widget(grid=_grid())
    assert (w.c.value, w.eps.value) == (2.0, 0.0)
    assert "c = 2, eps = 0" in w.figure.axes[1].get_title()
    w.c.value = 1.5
    w.eps.value = 0.3
    assert "c = 1.5, eps = 0.3" in w.figure.axes[1].get_title() and w.figure.search.holds


def test_default_grid_is_cached_and_shaped():
    cs, epss, margins = _grid()
    assert margins.shape == (len(epss), len(cs))
    assert cw.theorem7_default_grid(cs=[1.0, 3.0], epss=[0.0, 0.5])[2] is margins
    assert np.allclose(margins, 1 - cs[None, :] * (1 - epss[:, None]) / 2, atol=1e-4)
