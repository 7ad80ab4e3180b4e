"""The book's schematics (rnnlab.figures): every registered figure has its
committed SVG, the SVG is what the code draws today, and a page includes it."""
import pathlib
import re

import matplotlib
import pytest

from rnnlab.figures import FIGURES, render, write
from rnnlab.figures.__main__ import main

ROOT = pathlib.Path(__file__).resolve().parents[1]
CREATOR = re.compile(r"Matplotlib v([^,<]+)")
TEXT = re.compile(r"<text\b[^>]*>(.*?)</text>", re.S)


def _texts(svg):
    return [t.strip() for t in TEXT.findall(svg)]


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_every_registered_figure_has_its_committed_svg_beside_its_chapter(name):
    _, rel = FIGURES[name]
    assert re.fullmatch(r"book/[\w-]+/figures/[\w-]+\.svg", rel), rel
    assert (ROOT / rel).is_file(), f"{rel} is missing: run python -m rnnlab.figures {name}"


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_the_committed_svg_is_current(name, tmp_path):
    """Byte for byte under the matplotlib version that wrote the committed file;
    under another version (its layout may differ by rounding), the same text:
    every number and label of the picture."""
    write(tmp_path, [name])
    fresh = (tmp_path / FIGURES[name][1]).read_text()
    committed = (ROOT / FIGURES[name][1]).read_text()
    stale = f"{FIGURES[name][1]} is stale: run python -m rnnlab.figures {name}"
    version = CREATOR.search(committed)
    if version and version.group(1) == matplotlib.__version__:
        assert fresh == committed, stale
    else:
        assert _texts(fresh) == _texts(committed), stale


def test_rendering_is_deterministic():
    name = sorted(FIGURES)[0]
    first, second = render(name), render(name)
    assert first == second
    assert "<dc:date>" not in first


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_every_figure_is_included_by_a_page_of_its_chapter(name):
    rel = pathlib.PurePosixPath(FIGURES[name][1])
    chapter = ROOT / rel.parents[1]
    needle = f"figures/{rel.name}"
    pages = [p for p in chapter.glob("*.ipynb") if needle in p.read_text()]
    assert pages, f"no notebook of {chapter.relative_to(ROOT)} includes {needle}"


def test_the_kernel_figure_uses_the_gpu_launch_constants():
    from rnnlab.figures import scans
    from rnnlab.kernels import scan_cuda, scan_cpu  # noqa: F401  (the figure reads channel_block)

    if scan_cuda.CHUNKS != scans.GPU_CHUNKS:   # the CUDA simulator's tiny blocks
        pytest.skip("scan_cuda runs under the CUDA simulator here")
    assert (scan_cuda.CHUNKS, scan_cuda.CHUNK_CHANNELS) == (scans.GPU_CHUNKS, scans.GPU_CHUNK_CHANNELS)


def test_the_command_line_check_reports_a_missing_figure(tmp_path, capsys):
    assert main(["--check", "--root", str(tmp_path)]) == 1
    assert f"{len(FIGURES)} figures, {len(FIGURES)} stale" in capsys.readouterr().out
