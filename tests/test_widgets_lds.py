"""Widgets of the LDS chapter: they build, react to their controls, draw the package's numbers, have a static figure."""
import math

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from rnnlab.widgets import lds as lw  # noqa: E402


# ---------------------------------------------------------------- eigenvalues and memory

def test_static_eigenvalue_figure_is_the_default_state():
    fig = lw.static_figure("eigenvalues")
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    default = lw.eigenvalue_figure(**lw.EIGENVALUE_DEFAULT)
    assert [a.get_title() for a in fig.axes] == [a.get_title() for a in default.axes]
    assert fig.kept == pytest.approx(0.98 ** 200)
    assert "decayed" in fig.axes[1].get_title()


def test_impulse_response_is_the_closed_form_of_a_conjugate_pair():
    # K_t = r^t sin((t+1)θ)/sin θ: the first companion state after a unit impulse
    for r, theta in [(0.9, 0.7), (1.0, 2.5), (1.01, 0.2)]:
        K = lw.pair_impulse_response(r, theta, 60)
        t = np.arange(60)
        np.testing.assert_allclose(K, r ** t * np.sin((t + 1) * theta) / np.sin(theta), rtol=1e-9, atol=1e-9)


def test_unit_modulus_keeps_the_input():
    fig = lw.eigenvalue_figure(1.0, 1.0, 2000)
    assert fig.kept == 1.0 and "kept whole" in fig.axes[1].get_title()
    assert "amplified" in lw.eigenvalue_figure(1.01, 1.0, 100).axes[1].get_title()


def test_bad_eigenvalue_arguments():
    with pytest.raises(ValueError, match="angle"):
        lw.eigenvalue_figure(0.9, 0.0)
    with pytest.raises(ValueError, match="angle"):
        lw.eigenvalue_figure(0.9, math.pi)
    with pytest.raises(ValueError, match="radius"):
        lw.pair_lds(-1.0, 1.0)
    with pytest.raises(ValueError, match="T must be"):
        lw.pair_impulse_response(0.9, 1.0, 0)


def test_eigenvalue_widget_controls():
    w = lw.eigenvalue_widget()
    assert w.radius.value == pytest.approx(lw.EIGENVALUE_DEFAULT["radius"])
    assert w.steps.value == lw.EIGENVALUE_DEFAULT["T"] and not w.unit.value
    w.unit.value = True
    assert w.radius.disabled
    w.angle.value = 1.0
    w.steps.value = 500
    w.unit.value = False
    assert not w.radius.disabled
    w.radius.value = 0.9


# ---------------------------------------------------------------- LDStack

@pytest.mark.parametrize("form", sorted(lw.LDSTACK_FORMS))
def test_depth_k_is_exact_for_k_steps_and_not_more(form):
    run = lw.ldstack_errors(form)
    E = run["errors"]
    T = lw.LDSTACK_STEPS
    assert E.shape == (T, T) and run["layers"].shape == (T, T) and run["reference"].shape == (T,)
    for k in range(1, T + 1):
        assert (E[k - 1, :k] < 1e-12).all(), (form, k)
        if k <= 8:
            assert E[k - 1, k] > 1e-9, (form, k)  # step k+1 is not exact: the claim is sharp
    # the largest error falls with depth (from the plain LDS to the full stack)
    worst = E.max(axis=1)
    assert worst[-1] < 1e-12 < 1e-3 < worst[0]


def test_static_ldstack_figure_is_the_default_state():
    fig = lw.static_figure("ldstack")
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    default = lw.ldstack_figure(**lw.LDSTACK_DEFAULT)
    assert [a.get_title() for a in fig.axes] == [a.get_title() for a in default.axes]
    assert fig.exact_steps == lw.LDSTACK_DEFAULT["depth"]
    assert "first 4 steps" in fig.axes[1].get_title()


@pytest.mark.parametrize("depth", [1, 7, lw.LDSTACK_STEPS])
def test_every_depth_draws(depth):
    for form in lw.LDSTACK_FORMS:
        fig = lw.ldstack_figure(depth, form)
        assert fig.exact_steps == depth


def test_bad_ldstack_arguments():
    with pytest.raises(ValueError, match="form"):
        lw.ldstack_errors("linear")
    with pytest.raises(ValueError, match="depth"):
        lw.ldstack_figure(0)
    with pytest.raises(ValueError, match="depth"):
        lw.ldstack_figure(lw.LDSTACK_STEPS + 1)
    with pytest.raises(ValueError, match="widget"):
        lw.static_figure("scan")
    with pytest.raises(ValueError, match="form"):
        lw.ldstack_widget(form="other")


def test_ldstack_widget_controls():
    w = lw.ldstack_widget()
    assert w.depth.value == lw.LDSTACK_DEFAULT["depth"] and w.form.value == lw.LDSTACK_DEFAULT["form"]
    assert w.depth.max == lw.LDSTACK_STEPS
    w.depth.value = 9
    w.form.value = "modal"
    assert w.depth.value == 9
