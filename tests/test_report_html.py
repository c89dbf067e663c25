"""``hybrid report --html``: the source coloured by region with instructions per line, each
boundary's layouts drawn, the all-Triton version beside; rendered in headless Chromium and looked at."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

import hybrid
from examples import layernorm, softmax
from hybrid import report_html
from interop.boundaries.layout_views import placement
from tests.png import read_png

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
#: the source listing's backgrounds: a Triton region's lines, a Gluon region's (report_html's CSS)
TRITON_LINE, GLUON_LINE = (0xcf, 0xe0, 0xf7), (0xf9, 0xdc, 0xc4)


def test_layout_placement_is_tritons():
    """A blocked layout's element -> (warp, lane) map, and its slice (held by several threads)."""
    blocked = "#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>"
    where = placement(blocked, (16, 32), "f32", 4, 32)
    rows, cols = np.meshgrid(np.arange(16), np.arange(32), indexing="ij")
    assert (where.warp == rows // 4).all() and (where.lane == (rows % 4) * 8 + cols // 4).all()
    assert (where.register == cols % 4).all() and where.copies == 1
    sliced = placement(f"#ttg.slice<{{dim = 1, parent = {blocked}}}>", (16,), "f32", 4, 32)
    assert sliced.copies == 8 and (sliced.warp == np.arange(16) // 4).all()
    with pytest.raises(ValueError, match="cannot parse"):
        placement("#ttg.blocked<{nonsense}>", (16,), "f32", 4, 32)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """Softmax (a Triton region in a Gluon kernel, with its all-Triton version beside) and layer
    norm (a Gluon region in a Triton kernel), on sm90a."""
    mixed = softmax.build("sm90a").report()
    pure = hybrid.compile(softmax.softmax_triton, softmax.SIGNATURE, {"BM": softmax.BM, "BN": softmax.BN},
                          target="sm90a", num_warps=softmax.NUM_WARPS)
    mixed["baseline"] = {"kernel": "softmax_triton", "totals": pure.report()["totals"]}
    reports = [mixed, layernorm.build("sm90a").report()]
    path = tmp_path_factory.mktemp("html") / "report.html"
    path.write_text(report_html.page(reports))
    return reports, path


def test_the_page_shows_source_boundaries_and_baseline(page):
    reports, path = page
    html = path.read_text()
    assert not re.search(r"https?:|<script|<link|<img|src=|url\(|@import", html, re.I)   # nothing to fetch
    source = (ROOT / "examples" / "softmax.py").read_text().splitlines()
    stats = next(i for i, line in enumerate(source, 1) if "x = tl.where(cols" in line)
    counts = {line["where"]: line["instructions"] for line in reports[0]["lines"]}
    row = re.search(rf'<tr class="line-triton"[^>]*><td class="n">{stats}</td><td class="count">(\d*)</td>', html)
    assert row and row.group(1) == str(counts[f"{ROOT / 'examples' / 'softmax.py'}:{stats}"] or "")
    assert 'class="line-gluon"' in html and 'class="line-host"' in html
    boundaries = sum(len(row.get("boundaries", [])) for rep in reports for row in rep["rows"])
    assert html.count('<svg class="grid"') == 2 * boundaries > 0
    assert "beside the all-Triton version" in html and "softmax_triton (all Triton)" in html


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install chromium; "
                                             "make test installs it where apt-get is available)")
def test_the_page_renders_in_headless_chromium(page, tmp_path):
    _, path = page
    shot = tmp_path / "report.png"
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                        "--no-first-run", "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}",
                        "--window-size=1200,2000", f"--screenshot={shot}", path.as_uri()],
                       capture_output=True, timeout=120, check=True)
    image = read_png(shot)
    assert image.shape[:2] == (2000, 1200)
    pixels = image.reshape(-1, 3)
    assert (pixels != 255).any(axis=1).mean() > 0.05   # not a blank page
    for colour in (TRITON_LINE, GLUON_LINE):   # whole source lines in each region's colour, not just the legend
        assert (pixels == colour).all(axis=1).sum() > 5000, colour
    assert len(np.unique(pixels[::5], axis=0)) > 100   # the layout grids' warp hues and lane shades


def test_cli_baseline(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "hybrid.cli", "report", "examples/softmax.py:softmax_kernel",
                           "--target", "gfx942", "--baseline", "softmax_triton", "--html", str(tmp_path / "r.html")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert re.search(r"softmax_triton \(all Triton\) on gfx942: \d+ instructions, \d+ registers", proc.stdout)
    assert "softmax_triton (all Triton)" in (tmp_path / "r.html").read_text()
