"""The primer's widget (rnnlab.widgets.dynamics): its numbers, its static figure, its controls, its schematics."""
import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from rnnlab.widgets import dynamics as dw  # noqa: E402

BISTABLE = np.array(dw.PRESETS[dw.DEFAULT]["W"])


def test_run_is_the_recurrence_and_the_model_agrees():
    W, U = BISTABLE, np.array(dw.U_DEFAULT)
    x = np.array([0.3, -1.0, 0.5])
    hs = dw.run(W, [0.2, -0.1], x)
    h = np.array([0.2, -0.1])
    for t, x_t in enumerate(x, 1):
        h = np.tanh(W @ h + U * x_t)
        np.testing.assert_allclose(hs[t], h, atol=1e-15)
    model = dw.two_unit_rnn(W)
    with torch.no_grad():
        out, _ = model(torch.tensor(x)[None, :, None],
                       torch.tensor([[0.2, -0.1]], dtype=torch.float64))
    np.testing.assert_allclose(out[0].numpy(), hs[1:], atol=1e-12)
    lin = dw.run(W, [0.2, -0.1], x, nonlinearity="linear")
    np.testing.assert_allclose(lin[1], W @ [0.2, -0.1] + U * 0.3, atol=1e-15)
    assert dw.run(W, np.zeros((4, 3, 2)), x).shape == (4, 4, 3, 2)


def test_jacobians_agree_with_autograd():
    W = np.array([[0.7, -1.2], [0.4, 0.9]])
    h = np.array([[0.3, -0.5], [0.0, 0.0], [-0.9, 0.8]])
    x = np.array([0.5, 0.0, -1.0])
    J = dw.jacobians(W, h, x)
    for k in range(3):
        def f(v, k=k):
            return torch.tanh(torch.tensor(W) @ v + torch.tensor(dw.U_DEFAULT) * x[k])
        auto = torch.autograd.functional.jacobian(f, torch.tensor(h[k]))
        np.testing.assert_allclose(J[k], auto.numpy(), atol=1e-12)
    np.testing.assert_allclose(dw.jacobians(W, h, x, nonlinearity="linear"), np.broadcast_to(W, (3, 2, 2)))


def test_bistable_default_has_a_saddle_between_two_attractors():
    fps = dw.fixed_points(BISTABLE)
    assert [fp["kind"] for fp in fps] == ["stable", "saddle", "stable"]
    np.testing.assert_allclose(fps[1]["h"], 0.0, atol=1e-12)
    np.testing.assert_allclose(fps[0]["h"], -fps[2]["h"], atol=1e-10)     # odd symmetry of tanh
    for fp in fps:
        h = fp["h"]
        np.testing.assert_allclose(np.tanh(BISTABLE @ h), h, atol=1e-10)
    # at the origin tanh' = 1: the Jacobian is W, and its spectral radius is ρ(W)
    assert fps[1]["rho"] == pytest.approx(np.abs(np.linalg.eigvals(BISTABLE)).max())
    assert fps[0]["rho"] < 1


def test_linear_cousin_fixed_point_and_its_kinds():
    W = np.array([[0.5, -0.6], [0.3, 0.4]])
    (fp,) = dw.fixed_points(W, x=0.5, nonlinearity="linear")
    np.testing.assert_allclose(fp["h"], W @ fp["h"] + 0.5 * np.array(dw.U_DEFAULT), atol=1e-12)
    assert fp["kind"] == "stable"
    assert dw.fixed_points(np.eye(2), nonlinearity="linear") == []       # I - W singular: no isolated point
    rotation = np.array(dw.PRESETS["rotation, linear (|λ| = 1: memory)"]["W"])
    assert [fp["kind"] for fp in dw.fixed_points(rotation, nonlinearity="linear")] == ["neutral"]
    assert [fp["kind"] for fp in dw.fixed_points(2 * np.eye(2), nonlinearity="linear")] == ["unstable"]


def test_gradient_norms_are_products_of_jacobians():
    g_lin = dw.gradient_norms(BISTABLE, nonlinearity="linear")
    np.testing.assert_allclose(g_lin, [np.linalg.norm(np.linalg.matrix_power(BISTABLE, t), 2)
                                       for t in range(dw.T_GRADIENT + 1)], rtol=1e-10)
    g = dw.gradient_norms(BISTABLE)
    assert g[0] == 1.0
    assert g.max() > 1.5 and g[-1] < 1e-9          # grows near the saddle, then vanishes at an attractor


def test_static_figure_is_the_default_state():
    fig = dw.static_figure()
    assert isinstance(fig, Figure) and len(fig.axes) == 3
    default = dw.phase_figure(preset=dw.DEFAULT)
    assert [a.get_title() for a in fig.axes] == [a.get_title() for a in default.axes]
    assert fig.rho == pytest.approx(np.abs(np.linalg.eigvals(BISTABLE)).max())
    assert [fp["kind"] for fp in fig.fixed_points] == ["stable", "saddle", "stable"]
    assert set(fig.gradients) == {"tanh", "linear"}


@pytest.mark.parametrize("name", sorted(dw.PRESETS))
def test_every_preset_draws(name):
    fig = dw.phase_figure(preset=name)
    assert len(fig.fixed_points) >= 1
    p = dw.PRESETS[name]
    assert p["nonlinearity"] in fig.axes[0].get_title()


def test_bad_arguments():
    with pytest.raises(ValueError, match="2x2"):
        dw.phase_figure(np.eye(3))
    with pytest.raises(ValueError, match="preset must be one of"):
        dw.phase_figure(preset="nope")
    with pytest.raises(ValueError, match="nonlinearity must be one of"):
        dw.run(BISTABLE, [0, 0], [0.0], nonlinearity="relu")
    with pytest.raises(ValueError, match="h0 must have shape"):
        dw.run(BISTABLE, [0, 0, 0], [0.0])
    with pytest.raises(ValueError, match="T must lie in \\[1, 8\\]"):
        dw.unrolled_diagram(0)


def test_schematics_draw():
    assert isinstance(dw.network_diagram(), Figure)
    texts = [t.get_text() for t in dw.network_diagram(BISTABLE).axes[0].texts]
    assert any("= 1.6" in t for t in texts) and any("= 0.5" in t for t in texts)
    assert isinstance(dw.unrolled_diagram(3), Figure)


def test_widget_controls_redraw_and_presets_load():
    ipywidgets = pytest.importorskip("ipywidgets")
    from ipywidgets.embed import embed_data

    box = dw.phase_widget()
    assert isinstance(box, ipywidgets.VBox) and isinstance(box.output, ipywidgets.Output)
    first = box.figure
    assert [s.value for s in box.weights] == pytest.approx(BISTABLE.ravel())
    box.weights[1].value = -0.5
    assert box.figure is not first
    box.nonlinearity.value = "linear"
    assert box.figure.axes[0].get_title().startswith("linear")
    box.preset.value = "contracting (‖W‖ < 1)"
    assert box.input.value == pytest.approx(0.5) and box.nonlinearity.value == "tanh"
    assert [fp["kind"] for fp in box.figure.fixed_points] == ["stable"]
    data = embed_data(views=[box])
    assert box.model_id in data["manager_state"]["state"]
