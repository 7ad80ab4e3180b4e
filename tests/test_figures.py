"""The book's schematics (rnnlab.figures): every registered figure has its
committed SVG and PNG, both are what the code draws today, a page includes
it, and no SVG of the book names a font that a browser may lack."""
import pathlib
import re

import matplotlib
import pytest

from rnnlab.figures import FIGURES, png_path, render, render_both, same_png, write
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
def test_the_committed_svg_and_png_are_current(name):
    """Byte for byte under the matplotlib version that wrote the committed file;
    under another version (its layout may differ by rounding), the same text:
    every number and label of the picture. The PNG: byte for byte under the
    matplotlib and Pillow that wrote it, else the same size in pixels."""
    fresh, png = render_both(name)
    committed = (ROOT / FIGURES[name][1]).read_text()
    stale = f"{FIGURES[name][1]} is stale: run python -m rnnlab.figures {name}"
    version = CREATOR.search(committed)
    if version and version.group(1) == matplotlib.__version__:
        assert fresh == committed, stale
    else:
        assert _texts(fresh) == _texts(committed), stale
    png_file = ROOT / png_path(FIGURES[name][1])
    assert png_file.is_file(), f"{png_file.relative_to(ROOT)} is missing: run python -m rnnlab.figures {name}"
    assert same_png(png_file.read_bytes(), png), f"{png_file.relative_to(ROOT)} is stale: run python -m rnnlab.figures {name}"


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_the_png_for_notebooks_is_small_and_opaque(name):
    """The editions show the PNG: under 150 kB (a notebook cell, a phone on Colab), on white
    (a dark JupyterLab theme would otherwise show black text on black)."""
    from PIL import Image

    png_file = ROOT / png_path(FIGURES[name][1])
    assert png_file.stat().st_size < 150_000, f"{png_file.name}: {png_file.stat().st_size} bytes"
    image = Image.open(png_file).convert("RGBA")
    assert image.getpixel((0, 0)) == (255, 255, 255, 255)
    assert 600 <= image.width <= 2000, image.size


# Generic CSS families: a browser always has one. A font list that ends with one renders in any browser.
GENERIC = {"serif", "sans-serif", "monospace", "cursive", "fantasy", "system-ui", "math"}
# TeX fonts in their own encodings (matplotlib's mathtext with svg.fonttype 'none' names them): a
# browser without them shows another character (cmsy10's prime is "0", so s' read s⁰).
TEX_FONT = re.compile(r"^(cm(r|mi|sy|ex|tt|b|ss)\d+|stix\w*|dejavu sans display|dejavu serif display)$", re.I)
FONT_FAMILY = re.compile(r"font-family\s*(?::|=\s*\")\s*([^;}>\"]+)")
FONT_SHORTHAND = re.compile(r"\bfont\s*:\s*([^;}\"]+)")


def _families(value):
    return [f.strip().strip("'\"").strip() for f in value.strip().strip('"').split(",") if f.strip()]


def font_problems(svg):
    """The font lists of an SVG's text that a browser may not render as written."""
    problems = []
    lists = [_families(v) for v in FONT_FAMILY.findall(svg)]
    # The CSS shorthand "font: 8px 'DejaVu Sans'": the families follow the size.
    lists += [_families(re.sub(r"^.*?\d+(\.\d+)?(px|pt|em|%)\s*(/\s*\S+\s*)?", "", v))
              for v in FONT_SHORTHAND.findall(svg)]
    for families in lists:
        if not families:
            continue
        tex = [f for f in families if TEX_FONT.match(f)]
        if tex:
            problems.append(f"TeX font {tex[0]!r} (mathtext kept as text)")
        elif families[-1].lower() not in GENERIC:
            problems.append(f"font list {families!r} ends without a generic family")
    return sorted(set(problems))


SVGS = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "book").rglob("*.svg")
              if "_build" not in p.parts and "vendor" not in p.parts)


@pytest.mark.parametrize("rel", SVGS)
def test_no_svg_of_the_book_names_a_font_a_browser_lacks(rel):
    assert font_problems((ROOT / rel).read_text(encoding="utf8")) == []


def test_the_font_check_catches_mathtext_kept_as_text():
    import io

    from matplotlib.figure import Figure

    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig = Figure()
        fig.text(0.5, 0.5, r"$s'_i$")
        out = io.StringIO()
        fig.savefig(out, format="svg")
    assert any("TeX font" in p or "generic" in p for p in font_problems(out.getvalue()))
    assert font_problems(render("memory_pop_backward")) == []


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
    pages = [p for p in [*chapter.glob("*.ipynb"), *chapter.glob("*.md")] if needle in p.read_text()]
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
