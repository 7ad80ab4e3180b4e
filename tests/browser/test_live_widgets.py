"""The book's widgets, live: a kernel behind them, driven from Chromium.

One generated notebook displays every widget the book uses (table
``LIVE``), each tagged with a CSS class; Voilà serves it on 127.0.0.1 with a
kernel from this environment. For each widget the test moves a control the
way a reader does (arrow keys on a slider, a click on a button or checkbox, a
choice in a dropdown) and checks that the Python callback ran: the picture
that the kernel sends back changes, and so does the control's read-out.
"""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from pagecheck import free_port, wait_until, watch

ROOT = Path(__file__).resolve().parents[2]

# name of the builder -> code that builds it as `w` (displayed with the marker class of `marker(name)`). Every widget
# that the book's notebooks build must be here (test_every_widget_of_the_book_is_tested_live).
LIVE = {
    "scan_widget": "from rnnlab.widgets import scan\nw = scan.scan_widget()",
    "eigenvalue_widget": "from rnnlab.widgets import lds\nw = lds.eigenvalue_widget()",
    "ldstack_widget": "from rnnlab.widgets import lds\nw = lds.ldstack_widget()",
    "trajectory_widget": "from rnnlab.widgets import contraction\nw = contraction.trajectory_widget()",
    # a 3 x 2 feasibility grid instead of the book's 21 x 9: the same widget, a few SDPs instead of ~200
    "theorem7_widget": ("from rnnlab.widgets import contraction\n"
                        "grid = contraction.theorem7_default_grid(cs=[1.0, 2.0, 3.0], epss=[0.0, 0.4])\n"
                        "w = contraction.theorem7_widget(grid=grid)"),
    "memory_widget": "from rnnlab.widgets import memory\nw = memory.memory_widget()",
    "backward_widget": "from rnnlab.widgets import memory\nw = memory.backward_widget()",
    "spectrum_widget": "from rnnlab.widgets import lowrank\nw = lowrank.spectrum_widget()",
    "phase_widget": "from rnnlab.widgets import dynamics\nw = dynamics.phase_widget()",
}

# Voilà's "lab" template links Font Awesome's CSS from a CDN although its own bundle carries the same CSS
# (Font Awesome 5.15.4): those two requests are answered with an empty stylesheet; any other request off
# this machine fails the test.
VOILA_CDN_STUBS = {"https://cdn.jsdelivr.net/npm/@fortawesome/fontawesome-free@": ("text/css", "")}

STARTUP_TIMEOUT = 180  # seconds: Voilà, a kernel, importing torch and numba, drawing nine figures
REDRAW_TIMEOUT = 60


def marker(name: str) -> str:
    return "rnnlab-live-" + name.replace("_", "-")


def book_widget_builders() -> set[str]:
    """Names of the ``*_widget(...)`` builders that the book's notebooks call in code cells."""
    names = set()
    for path in (ROOT / "book").rglob("*.ipynb"):
        if ".ipynb_checkpoints" in path.parts:
            continue
        notebook = json.loads(path.read_text(encoding="utf8"))
        for cell in notebook["cells"]:
            if cell["cell_type"] == "code":
                names.update(re.findall(r"\b(\w+_widget)\(", "".join(cell["source"])))
    return names


def test_every_widget_of_the_book_is_tested_live():
    used = book_widget_builders()
    assert used, "no widget found in the book's notebooks: has the way they are built changed?"
    assert used <= set(LIVE), f"widgets without a live test: {sorted(used - set(LIVE))}; add them to LIVE"


def write_notebook(path: Path) -> Path:
    cells = [nbformat.v4.new_code_cell("%matplotlib inline\nimport matplotlib\nmatplotlib.rcParams['figure.dpi'] = 50")]
    for name, code in LIVE.items():
        cells.append(nbformat.v4.new_code_cell(f"{code}\nw.add_class({marker(name)!r})\nw"))
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, path)
    return path


@pytest.fixture(scope="module")
def voila(tmp_path_factory):
    """Voilà serving the generated notebook on 127.0.0.1; yields its URL."""
    folder = tmp_path_factory.mktemp("voila")
    notebook = write_notebook(folder / "widgets.ipynb")
    port = free_port()
    # Jupyter's user folders in the temporary folder: no user's config, and the kernel is this
    # environment's python3 (a user-level kernelspec of that name would win over it).
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(folder / "config"), JUPYTER_DATA_DIR=str(folder / "data"),
               JUPYTER_RUNTIME_DIR=str(folder / "runtime"), JUPYTER_PLATFORM_DIRS="1",
               PYDEVD_DISABLE_FILE_VALIDATION="1")
    log = open(folder / "voila.log", "w")
    # Voilà executes the notebook with nbclient, which can wait forever after a widget cell
    # (jupyter/nbclient#312; seen here once in a fresh clone): start it with rnnlab's fix applied.
    launch = ("import sys; from rnnlab.book.nbrun import patch_kernel_channels; patch_kernel_channels(); "
              "from voila.app import main; sys.argv[0] = 'voila'; sys.exit(main())")
    process = subprocess.Popen(
        [sys.executable, "-c", launch, str(notebook), "--no-browser", f"--port={port}", "--Voila.ip=127.0.0.1",
         "--show_tracebacks=True", f"--Voila.root_dir={folder}"],
        cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def up():
        if process.poll() is not None:
            pytest.fail(f"voila exited with {process.returncode}:\n{(folder / 'voila.log').read_text()}",
                        pytrace=False)
        try:  # a plain connection: a GET of the notebook would start a kernel
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
            return True
        except OSError:
            return False

    try:
        wait_until(up, timeout=60, interval=0.5, message="voila to listen")
        yield f"http://127.0.0.1:{port}/", folder / "voila.log"
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # voila and the kernel it started (a session of their own)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()


@pytest.fixture(scope="module")
def live(voila, browser):
    """The Voilà page with every widget rendered by its kernel; a :class:`pagecheck.WatchedPage`."""
    url, log = voila
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    watched = watch(context, stubs=VOILA_CDN_STUBS)
    page = watched.page
    page.goto(url, wait_until="load", timeout=STARTUP_TIMEOUT * 1000)
    selectors = [f".{marker(name)} .widget-output img" for name in LIVE]
    try:
        page.wait_for_function("sels => sels.every(s => document.querySelector(s))", arg=selectors,
                               timeout=STARTUP_TIMEOUT * 1000)
    except Exception as error:
        missing = [s for s in selectors if not page.locator(s).count()]
        pytest.fail(f"widgets not rendered by the kernel: {missing} ({error.__class__.__name__});\n"
                    f"page problems: {watched.problems()}\nvoila log:\n{log.read_text()[-4000:]}", pytrace=False)
    yield watched
    context.close()


def picture(page, name):
    return page.locator(f".{marker(name)} .widget-output img").first.get_attribute("src")


def changes(page, name, action, *, readout=None):
    """Do ``action()``; wait until the widget's picture changed (the kernel redrew it); return (before, after).

    ``readout``: a locator whose text must change too (the number the control shows).
    """
    before = picture(page, name)
    shown = readout.inner_text() if readout is not None else None
    action()
    try:
        page.wait_for_function(
            "([sel, old]) => { const img = document.querySelector(sel); return img && img.getAttribute('src') !== old; }",
            arg=[f".{marker(name)} .widget-output img", before], timeout=REDRAW_TIMEOUT * 1000)
    except Exception:
        pytest.fail(f"{name}: the picture did not change within {REDRAW_TIMEOUT} s: the callback did not run",
                    pytrace=False)
    if readout is not None:
        assert readout.inner_text() != shown, f"{name}: the control's read-out did not change"
    return before, picture(page, name)


def press_slider(page, name, index, key, times=1):
    """Focus the ``index``-th slider of a widget and press ``key`` (continuous_update=False: sent on change)."""
    handle = page.locator(f".{marker(name)} .widget-slider").nth(index).locator(".noUi-handle").first
    handle.focus()
    for _ in range(times):
        handle.press(key)


def slider_readout(page, name, index):
    return page.locator(f".{marker(name)} .widget-slider").nth(index).locator(".widget-readout")


def readout_value(readout) -> float:
    """The number a slider's read-out shows (d3-format writes minus as U+2212)."""
    return float(readout.inner_text().strip().replace("\u2212", "-"))


def test_scan_widget_step_slider_and_algorithm_buttons(live):
    page = live.page
    changes(page, "scan_widget", lambda: press_slider(page, "scan_widget", 0, "ArrowLeft"),
            readout=slider_readout(page, "scan_widget", 0))
    changes(page, "scan_widget",
            lambda: page.locator(f".{marker('scan_widget')} .widget-toggle-buttons button",
                                 has_text="Blelloch").click())
    assert not live.problems(), live.problems()


def test_eigenvalue_widget_radius_slider_and_unit_checkbox(live):
    page = live.page
    changes(page, "eigenvalue_widget", lambda: press_slider(page, "eigenvalue_widget", 0, "ArrowLeft", times=5),
            readout=slider_readout(page, "eigenvalue_widget", 0))
    changes(page, "eigenvalue_widget",
            lambda: page.locator(f".{marker('eigenvalue_widget')} .widget-checkbox input").click())
    assert not live.problems(), live.problems()


def test_ldstack_widget_depth_slider_and_form_buttons(live):
    page = live.page
    changes(page, "ldstack_widget", lambda: press_slider(page, "ldstack_widget", 0, "ArrowRight"),
            readout=slider_readout(page, "ldstack_widget", 0))
    changes(page, "ldstack_widget",
            lambda: page.locator(f".{marker('ldstack_widget')} .widget-toggle-buttons button",
                                 has_text="modal form").click())
    assert not live.problems(), live.problems()


def test_trajectory_widget_preset_dropdown_and_weight_slider(live):
    page = live.page
    select = page.locator(f".{marker('trajectory_widget')} .widget-dropdown select")
    changes(page, "trajectory_widget",
            lambda: select.select_option(label="rotation c = 3 (no constant metric)"))
    # the preset's weights reached the sliders: w12 = -3
    assert readout_value(slider_readout(page, "trajectory_widget", 1)) == -3.0
    changes(page, "trajectory_widget", lambda: press_slider(page, "trajectory_widget", 0, "ArrowRight", times=3),
            readout=slider_readout(page, "trajectory_widget", 0))
    assert not live.problems(), live.problems()


def test_theorem7_widget_c_slider(live):
    page = live.page
    changes(page, "theorem7_widget", lambda: press_slider(page, "theorem7_widget", 0, "ArrowRight", times=2),
            readout=slider_readout(page, "theorem7_widget", 0))
    assert not live.problems(), live.problems()


def test_memory_widget_step_slider_and_memory_dropdown(live):
    page = live.page
    # the first slider is the step (the four after it are the controls of that step)
    changes(page, "memory_widget", lambda: press_slider(page, "memory_widget", 0, "ArrowLeft", times=2),
            readout=slider_readout(page, "memory_widget", 0))
    select = page.locator(f".{marker('memory_widget')} .widget-dropdown select").first
    changes(page, "memory_widget", lambda: select.select_option(label="queue"))
    # the pop strength of the current step (step 4 of "push 3, pop 3": u = 1), lowered by hand
    changes(page, "memory_widget", lambda: press_slider(page, "memory_widget", 2, "ArrowLeft", times=4),
            readout=slider_readout(page, "memory_widget", 2))
    assert not live.problems(), live.problems()


def test_backward_widget_pop_bias_slider(live):
    page = live.page
    changes(page, "backward_widget", lambda: press_slider(page, "backward_widget", 0, "ArrowLeft", times=6),
            readout=slider_readout(page, "backward_widget", 0))
    assert readout_value(slider_readout(page, "backward_widget", 0)) == -1.0
    assert not live.problems(), live.problems()


def test_spectrum_widget_rank_and_sparsity_sliders_and_init_dropdown(live):
    page = live.page
    changes(page, "spectrum_widget", lambda: press_slider(page, "spectrum_widget", 0, "ArrowLeft", times=3),
            readout=slider_readout(page, "spectrum_widget", 0))
    changes(page, "spectrum_widget", lambda: press_slider(page, "spectrum_widget", 1, "ArrowRight", times=4),
            readout=slider_readout(page, "spectrum_widget", 1))
    # the sparsity slider opens at 0.5 (steps of 0.05): four steps right
    assert readout_value(slider_readout(page, "spectrum_widget", 1)) == 0.7
    select = page.locator(f".{marker('spectrum_widget')} .widget-dropdown select").first
    changes(page, "spectrum_widget", lambda: select.select_option(label="glorot"))
    assert not live.problems(), live.problems()


def test_phase_widget_weight_slider_preset_dropdown_and_nonlinearity(live):
    page = live.page
    # w11, the first of the four weight sliders: the portrait is redrawn, the read-out moves
    changes(page, "phase_widget", lambda: press_slider(page, "phase_widget", 0, "ArrowLeft", times=4),
            readout=slider_readout(page, "phase_widget", 0))
    select = page.locator(f".{marker('phase_widget')} .widget-dropdown select").first
    labels = select.locator("option").all_inner_texts()
    changes(page, "phase_widget", lambda: select.select_option(label=labels[-1]))
    changes(page, "phase_widget",
            lambda: page.locator(f".{marker('phase_widget')} .widget-toggle-buttons button").last.click())
    assert not live.problems(), live.problems()
