"""The notebook editions as a student sees them: opened in a real JupyterLab 4, in headless Chromium.

JupyterLab (the ``test`` extra installs it; Notebook 7 renders notebooks with the same code) serves a
temporary copy of a few edition notebooks, with its settings, workspaces and runtime files in
temporary folders of their own and every cell attached to the page (``windowingMode: none``, so that
all images load). The browser is offline: the editions' absolute image URLs (the repository's raw
files, :func:`rnnlab.book.myst.raw_url`) are answered from this checkout; any other request beyond
127.0.0.1 is aborted and fails the test, as does any image that does not load, raw MyST in the
rendered text, or a MathJax error. Colab's limits are checked on the same notebooks: no cell
attachment (googlecolab/colabtools#3836) and no SVG data URI (#2092).

``RNNLAB_EDITION_PAGES=all`` opens one full and one student notebook per chapter instead of the
few below; ``RNNLAB_SCREENSHOTS=DIR`` saves a screenshot of each notebook's first figure there.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from pagecheck import free_port, serve_files, wait_until, watch
from rnnlab.book import myst

ROOT = Path(__file__).resolve().parents[2]

# A few notebooks: schematics, stored figures with captions, widget notes, folded cells, exercises.
PAGES = ["full/memory/02_backward_dynamics.ipynb", "student/scans/00_dynamical_systems.ipynb",
         "student/contraction/01_contraction_in_one_page.ipynb"]
MYST = ("```{", "{prf:", "{cite}`", "{eq}`", "{ref}`", "{term}`", "{doc}`", ":label:", "{exercise}",
        "{solution", "{figure}")


def _pages():
    if os.environ.get("RNNLAB_EDITION_PAGES") != "all":
        return PAGES
    out = []
    for chapter in sorted(p.name for p in (ROOT / "full").iterdir() if p.is_dir()):
        notebooks = sorted((ROOT / "full" / chapter).glob("*.ipynb"))
        # The notebook with the most pictures, in both editions.
        best = max(notebooks, key=lambda p: p.read_text(encoding="utf8").count("raw.githubusercontent")
                   + p.read_text(encoding="utf8").count('"image/png"'))
        out += [f"full/{chapter}/{best.name}", f"student/{chapter}/{best.name}"]
    return out


@pytest.fixture(scope="module")
def jupyterlab(tmp_path_factory):
    """A JupyterLab server on 127.0.0.1 serving a copy of the notebooks; its base URL."""
    tmp = tmp_path_factory.mktemp("jupyterlab")
    notebooks = tmp / "notebooks"
    for page in _pages():
        (notebooks / page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / page, notebooks / page)
    settings = tmp / "settings" / "@jupyterlab"
    (settings / "notebook-extension").mkdir(parents=True)
    (settings / "notebook-extension" / "tracker.jupyterlab-settings").write_text(
        json.dumps({"windowingMode": "none"}))
    (settings / "apputils-extension").mkdir(parents=True)
    (settings / "apputils-extension" / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"), JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
               JUPYTER_CONFIG_DIR=str(tmp / "config"), JUPYTER_DATA_DIR=str(tmp / "data"))
    port = free_port()
    lab = Path(sys.executable).with_name("jupyter-lab")
    command = [str(lab) if lab.exists() else "jupyter-lab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
               "--IdentityProvider.token=", "--ServerApp.password=", "--allow-root", "--ServerApp.disable_check_xsrf=True",
               f"--ServerApp.root_dir={notebooks}", "--LabApp.news_url=None",
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--LabApp.extension_manager=readonly"]
    log = open(tmp / "jupyterlab.log", "w")
    proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"

    def up():
        if proc.poll() is not None:
            pytest.fail(f"JupyterLab exited ({proc.returncode}); see {tmp / 'jupyterlab.log'}", pytrace=False)
        try:
            return urllib.request.urlopen(url + "api/status", timeout=2).status == 200
        except OSError:
            return False

    try:
        wait_until(up, timeout=90, message="JupyterLab to start")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture
def lab_page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    try:
        watched = watch(context)
        served = serve_files(watched.page, myst.raw_url(ROOT, ""), ROOT)
        yield watched, served
    finally:
        context.close()


def _open(lab_page, jupyterlab, page):
    watched, served = lab_page
    p = watched.page
    p.goto(f"{jupyterlab}lab/tree/{page}?reset", wait_until="domcontentloaded", timeout=120_000)
    p.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", timeout=120_000)
    nb = json.loads((ROOT / page).read_text(encoding="utf8"))
    cells = len(nb["cells"])
    wait_until(lambda: p.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").count() >= cells, timeout=60,
               message=f"{page}: all {cells} cells attached")
    # Every markdown cell rendered, MathJax done, every image settled (loaded or failed).
    wait_until(lambda: p.evaluate("""() => {
        const nb = document.querySelector('.jp-NotebookPanel .jp-Notebook');
        const md = nb.querySelectorAll('.jp-MarkdownCell');
        const rendered = nb.querySelectorAll('.jp-MarkdownCell .jp-RenderedMarkdown');
        const imgs = [...nb.querySelectorAll('img')];
        return md.length === rendered.length && imgs.every(i => i.complete);
    }"""), timeout=90, message=f"{page}: markdown rendered and images settled")
    time.sleep(1.0)   # MathJax typesets after rendering
    wait_until(lambda: p.evaluate("() => !document.querySelector('.jp-Notebook mjx-container:not([jax])')"),
               timeout=30, message="MathJax")
    return p, nb, served


def _images(p):
    return p.evaluate("""() => [...document.querySelectorAll('.jp-NotebookPanel .jp-Notebook img')].map(i => ({
        src: i.getAttribute('src') || '', alt: i.getAttribute('alt') || '', ok: i.complete && i.naturalWidth > 0,
        output: !!i.closest('.jp-OutputArea')}))""")


def _screenshots(p, page, out):
    """The window with the notebook's first figure in view, and every figure of the notebook as
    JupyterLab shows it, one contact sheet (``<page>-figures.png``)."""
    from PIL import Image

    out.mkdir(parents=True, exist_ok=True)
    stem = page.replace("/", "-").removesuffix(".ipynb")
    images = p.locator(".jp-NotebookPanel .jp-Notebook img")
    images.first.scroll_into_view_if_needed()
    time.sleep(0.3)
    p.screenshot(path=str(out / f"{stem}.png"))
    shots = []
    for k in range(images.count()):
        path = out / f".{stem}-{k}.png"
        images.nth(k).scroll_into_view_if_needed()
        images.nth(k).screenshot(path=str(path))
        shots.append(Image.open(path).convert("RGB"))
        path.unlink()
    width = max(i.width for i in shots)
    sheet = Image.new("RGB", (width, sum(i.height + 12 for i in shots)), "#888888")
    y = 0
    for shot in shots:
        sheet.paste(shot, (0, y))
        y += shot.height + 12
    sheet.save(out / f"{stem}-figures.png", optimize=True)


@pytest.mark.parametrize("page", _pages())
def test_a_student_sees_every_figure_text_and_formula(lab_page, jupyterlab, page):
    p, nb, served = _open(lab_page, jupyterlab, page)
    watched, _ = lab_page
    where = page
    images = _images(p)
    linked = sum(len(re.findall(r"!\[[^\]]*\]\(", "".join(c["source"])))
                 for c in nb["cells"] if c["cell_type"] == "markdown")
    stored = sum(1 for c in nb["cells"] for o in c.get("outputs", []) if "image/png" in o.get("data", {}))
    markdown_images = [i for i in images if not i["output"]]
    output_images = [i for i in images if i["output"]]
    assert len(markdown_images) == linked and len(output_images) == stored, (where, images)
    broken = [i["src"][:90] for i in images if not i["ok"]]
    assert not broken, f"{where}: images that did not load: {broken}"
    assert all(i["alt"].strip() for i in markdown_images), f"{where}: an image without alt text"
    assert len(served) >= len(set(i["src"] for i in markdown_images))
    if os.environ.get("RNNLAB_SCREENSHOTS") and images:
        _screenshots(p, page, Path(os.environ["RNNLAB_SCREENSHOTS"]))
    text = p.locator(".jp-NotebookPanel .jp-Notebook").inner_text()
    rendered_md = "\n".join(p.locator(".jp-MarkdownCell .jp-RenderedMarkdown").all_inner_texts())
    for raw in MYST:
        assert raw not in rendered_md, f"{where}: raw MyST {raw!r} in a rendered markdown cell"
    assert not re.search(r"^\([\w-]+\)=$", rendered_md, re.M), f"{where}: a (label)= line"
    errors = p.locator(".jp-Notebook mjx-merror, .jp-Notebook .MathJax_Error").count()
    assert errors == 0, f"{where}: {errors} MathJax errors"
    assert p.locator(".jp-Notebook mjx-container").count() > 10, f"{where}: too little math typeset"
    assert "$$" not in rendered_md, f"{where}: display math left as text"
    assert "Cannot render" not in text
    # Folded cells: their source is hidden (JupyterLab shows a placeholder).
    folded = sum(1 for c in nb["cells"] if c.get("metadata", {}).get("jupyter", {}).get("source_hidden"))
    assert p.locator(".jp-Cell .jp-InputPlaceholder").count() >= folded, f"{where}: folded cells shown"
    # Colab's limits, on the file itself.
    raw_nb = (ROOT / page).read_text(encoding="utf8")
    assert '"attachments"' not in raw_nb and "data:image/svg" not in raw_nb
    if page.startswith("student/"):
        assert "Solution to Exercise" not in text
    problems = [m for m in watched.problems() if "favicon" not in m]
    assert problems == [], f"{where}: {problems}"
