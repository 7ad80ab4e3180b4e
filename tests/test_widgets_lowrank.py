"""The spectrum widget of the low-rank chapter: the numbers it draws, its static figure, its controls."""
import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from rnnlab.widgets import lowrank as lw  # noqa: E402


def test_dense_orthogonal_sample_has_every_eigenvalue_on_the_unit_circle():
    W = lw.recurrent_sample(64, 0.0)
    np.testing.assert_allclose(np.abs(np.linalg.eigvals(W)), 1.0, atol=1e-10)
    # rank n is the full-rank matrix itself (the split of an orthogonal matrix at rank n)
    np.testing.assert_allclose(lw.recurrent_sample(None, 0.0), W, atol=1e-12)


def test_low_rank_sample_has_rank_r_and_unit_singular_values():
    W = lw.recurrent_sample(5, 0.0)
    sv = np.linalg.svd(W, compute_uv=False)
    np.testing.assert_allclose(sv[:5], 1.0, atol=1e-12)
    assert sv[5] < 1e-12


def test_figure_titles_carry_the_measured_radius_and_norm():
    fig = lw.spectrum_figure(16, 0.5)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    W = lw.recurrent_sample(16, 0.5)
    rho = np.abs(np.linalg.eigvals(W)).max()
    assert f"ρ(W) = {rho:.3f}" in fig.axes[0].get_title()
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert any("r/n" in x for x in labels) and any("1-s" in x for x in labels)
    assert isinstance(lw.static_figure(), Figure)


def test_static_figure_is_the_default_state_with_every_law_drawn():
    fig = lw.static_figure()
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert any("r(1-s)/n" in x for x in labels)
    W = lw.recurrent_sample(lw.DEFAULT["rank"], lw.DEFAULT["sparsity"])
    rho = np.abs(np.linalg.eigvals(W)).max()
    assert f"ρ(W) = {rho:.3f}" in fig.axes[0].get_title()
    assert rho < 1.3 * np.sqrt(8 * 0.5 / 64)      # the cloud fills the smallest circle


def test_rank_out_of_range_is_an_error():
    with pytest.raises(ValueError, match="rank must be an int in \\[1, n\\]"):
        lw.spectrum_figure(65, 0.0)


def test_widget_controls_redraw_and_resize():
    pytest.importorskip("ipywidgets")
    box = lw.spectrum_widget()
    assert (box.rank.value, box.sparsity.value) == (8, 0.5)   # opens on an informative state
    first = box.figure
    box.sparsity.value = 0.2
    assert box.figure is not first
    box.rank.value = 64                       # full rank at n = 64
    box.size.value = 128                      # full rank stays full rank
    assert box.rank.max == 128 and box.rank.value == 128
    box.rank.value = 5
    box.size.value = 64                       # a low rank stays as it is
    assert box.rank.value == 5 and box.rank.max == 64
