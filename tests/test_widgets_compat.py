"""The widgets under both ipywidgets majors the package supports: 8 (``make
test-unit``) and 7.7 (``make test-widgets-ipywidgets7``; Colab preinstalls
7.7.1). Each run asserts which major it imported, so a run meant for one
version cannot silently test the other.
"""
import os
import pathlib
import re

import matplotlib

matplotlib.use("Agg")

import ipywidgets  # noqa: E402
import pytest  # noqa: E402
from packaging.requirements import Requirement  # noqa: E402

from rnnlab.widgets import contraction, lds, scan  # noqa: E402

MAJOR = int(ipywidgets.__version__.split(".")[0])
PYPROJECT = pathlib.Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_the_ipywidgets_version_asked_for_is_the_one_imported():
    wanted = os.environ.get("RNNLAB_IPYWIDGETS_MAJOR")
    where = pathlib.Path(ipywidgets.__file__).parent
    if wanted:
        assert MAJOR == int(wanted), (f"RNNLAB_IPYWIDGETS_MAJOR={wanted} but ipywidgets "
                                      f"{ipywidgets.__version__} was imported from {where}")
    assert MAJOR in (7, 8), f"ipywidgets {ipywidgets.__version__} (from {where})"


def test_the_imported_version_is_in_the_declared_range():
    """pyproject.toml's range admits the version under test (and Colab's 7.7.1)."""
    text = PYPROJECT.read_text()
    line, = re.findall(r'"(ipywidgets[^"]*)"', text)
    req = Requirement(line)
    assert req.specifier.contains(ipywidgets.__version__)
    assert req.specifier.contains("7.7.1") and req.specifier.contains("8.1.5")
    assert not req.specifier.contains("7.6.5") and not req.specifier.contains("9.0.0")


def _builders():
    grid = contraction.theorem7_default_grid(cs=[1.0, 3.0], epss=[0.0, 0.5])
    return {
        "scan": scan.scan_widget,
        "eigenvalues": lds.eigenvalue_widget,
        "ldstack": lds.ldstack_widget,
        "trajectories": contraction.trajectory_widget,
        "theorem7": lambda: contraction.theorem7_widget(grid=grid),
    }


def _tree(widget):
    """Every widget in a box, depth first."""
    out = [widget]
    for child in getattr(widget, "children", ()):
        out.extend(_tree(child))
    return out


@pytest.mark.parametrize("name", ["scan", "eigenvalues", "ldstack", "trajectories", "theorem7"])
def test_every_widget_builds_and_serialises(name):
    """Each widget is a VBox of standard controls and one Output, and its state
    serialises (what a notebook saves and the online book embeds)."""
    from ipywidgets.embed import embed_data

    box = _builders()[name]()
    assert isinstance(box, ipywidgets.VBox)
    assert isinstance(box.output, ipywidgets.Output)
    widgets = _tree(box)
    assert box.output in widgets
    for w in widgets:
        state = w.get_state()
        assert state["_model_name"].endswith("Model")
        if hasattr(w, "description") and w.description:
            assert isinstance(w.description, str)
    data = embed_data(views=[box])
    models = data["manager_state"]["state"]
    assert box.model_id in models and len(models) >= len(widgets)
    assert data["view_specs"][0]["model_id"] == box.model_id


def test_option_pairs_and_observers_behave_alike():
    """(label, value) options, value traits and observe(names="value") as the builders use them."""
    seen = []
    toggle = ipywidgets.ToggleButtons(options=[("first", "a"), ("second", "b")], value="b")
    assert toggle.value == "b" and toggle.label == "second"
    toggle.observe(lambda change: seen.append((change["old"], change["new"])), names="value")
    toggle.value = "a"
    assert seen == [("b", "a")] and toggle.label == "first"
    slider = ipywidgets.FloatSlider(min=0.5, max=1.02, step=0.001, value=0.98, readout_format=".3f",
                                    continuous_update=False, layout=ipywidgets.Layout(width="420px"))
    assert slider.readout and slider.layout.width == "420px"
    slider.value = 2.0
    assert slider.value == 1.02                                   # clipped to max in both majors
    with pytest.raises(Exception):
        toggle.value = "nope"
