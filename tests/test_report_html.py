"""``hybrid report --html``: the source coloured by region with instructions per line, each
boundary's layouts drawn, the all-Triton version beside; rendered in headless Chromium and looked at."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
from html import escape
from pathlib import Path

import numpy as np
import pytest

import hybrid
from examples import layernorm, mma_handoff, softmax
from hybrid import report_html
from hybrid.attribution import code_by_line
from hybrid.report import short_layout
from interop.boundaries.layout_views import NotDistributed, placement
from tests.png import read_png

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
#: the source listing's backgrounds: a Triton region's lines, a Gluon region's, the host's, the
#: all-Triton version's (report_html's CSS)
TRITON_LINE, GLUON_LINE, HOST_LINE, BASELINE_LINE = (0xcf, 0xe0, 0xf7), (0xf9, 0xdc, 0xc4), (0xec, 0xec, 0xec), \
    (0xd5, 0xef, 0xe2)


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


def _chromium(*args: str) -> subprocess.CompletedProcess:
    """Headless Chromium with a throw-away profile, nothing fetched."""
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                               "--disable-background-networking", "--no-first-run", "--disable-component-update",
                               "--disable-sync", f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, timeout=120, check=True)


def _screenshot(path: Path, shot: Path, height: int = 2000) -> np.ndarray:
    _chromium(f"--window-size=1200,{height}", f"--screenshot={shot}", path.as_uri())
    return read_png(shot)


needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install "
                                                             "chromium; make test installs it where apt-get is "
                                                             "available)")


def test_a_shared_memory_handoff_is_drawn_on_its_register_side():
    """A handoff's shared-memory layout is held by no thread: said, not drawn (it raised before)."""
    rep = mma_handoff.build("sm90a").report()
    boundaries = [b for row in rep["rows"] for b in row.get("boundaries", [])]
    handoffs = [b for b in boundaries if b.get("handoff") == "shared"]
    assert handoffs
    with pytest.raises(NotDistributed, match="shared-memory layout"):
        placement(handoffs[0]["to_layout"], tuple(handoffs[0]["shape"]), handoffs[0]["dtype"], 4, 32)
    html = report_html.page([rep])
    assert html.count("not drawn: a shared-memory layout") == len(handoffs)
    assert html.count('<svg class="grid"') == 2 * len(boundaries) - len(handoffs)
    assert '<details class="free">' not in html   # each moves bytes or converts


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """Softmax (a Triton region in a Gluon kernel, with its all-Triton version beside) and layer
    norm (a Gluon region in a Triton kernel), on sm90a, with what each line compiled to."""
    built = [softmax.build("sm90a"), layernorm.build("sm90a")]
    base = hybrid.compile(softmax.softmax_triton, softmax.SIGNATURE, {"BM": softmax.BM, "BN": softmax.BN},
                          target="sm90a", num_warps=softmax.NUM_WARPS)
    pure = base.report()
    reports = [fb.report() for fb in built]
    reports[0]["baseline"] = {"kernel": "softmax_triton", "totals": pure["totals"], "lines": pure["lines"]}
    path = tmp_path_factory.mktemp("html") / "report.html"
    path.write_text(report_html.page(reports, code=[code_by_line(fb) for fb in built],
                                     baseline_code=[code_by_line(base), {}]))
    return reports, path


def _line(name: str, text: str) -> int:
    """The number of the line of ``examples/<name>`` that holds ``text``."""
    source = (ROOT / "examples" / name).read_text().splitlines()
    return next(i for i, line in enumerate(source, 1) if text in line)


def test_the_page_shows_source_boundaries_and_baseline(page):
    reports, path = page
    html = path.read_text()
    assert not re.search(r"https?:|<script|<link|<img|src=|url\(|@import", html, re.I)   # nothing to fetch
    stats = _line("softmax.py", "x = tl.where(cols")
    counts = {line["where"]: line["instructions"] for line in reports[0]["lines"]}
    row = re.search(rf'<tr class="line-triton[^"]*"[^>]*><td class="n"><a href="#k0-line-\d+">{stats}</a></td>'
                    rf'<td class="count">(\d*)</td>', html)
    assert row and row.group(1) == str(counts[f"{ROOT / 'examples' / 'softmax.py'}:{stats}"] or "")
    assert 'class="line-gluon' in html and 'class="line-host' in html
    boundaries = [b for rep in reports for row in rep["rows"] for b in row.get("boundaries", [])]
    assert html.count('<svg class="grid"') == sum(1 + (b["from_layout"] != b["to_layout"]) for b in boundaries) > 0
    assert "beside the all-Triton version" in html and "softmax_triton (all Triton)" in html


def test_free_boundaries_are_one_line_each_kernel_and_costly_ones_stay_open(page):
    reports, _ = page
    rep = reports[1]
    free = [b for row in rep["rows"] for b in row.get("boundaries", [])]
    assert free and all(b["conversions"] == 0 and not b.get("shared_bytes") for b in free)
    costly = {**free[0], "conversions": 1, "movement": "shuffles", "shuffles": 2, "reason": "converted"}
    html = report_html._boundaries({**rep, "rows": [{"boundaries": [costly, *free]}]})
    folded = re.search(r'<details class="free"><summary>(.*?)</summary>(.*)</details>', html, re.S)
    assert folded and folded.group(1).startswith(f"{len(free)} free boundaries (no conversion, no bytes moved)")
    assert folded.group(2).count('<div class="boundary') == len(free)
    assert html.count('<div class="boundary') == len(free) + 1 and "1 conversion(s) moving data via shuffles" in \
        html[:html.index("<details")]


def test_layouts_are_explained_where_they_appear(page):
    reports, path = page
    html = path.read_text()
    assert "blocked[sizePerThread|threadsPerWarp|warpsPerCTA|order]" in html
    layouts = {b[side] for rep in reports for row in rep["rows"] for b in row.get("boundaries", [])
               for side in ("from_layout", "to_layout")}
    for layout in layouts:   # the short form, its full text on hover, and its parameters by name
        label = f'<abbr title="{escape(layout)}">{escape(short_layout(layout))}</abbr>'
        assert label in html
        assert "sizePerThread [" in html[html.index(label):html.index(label) + 400]
    size = re.search(r"\.grid text \{ font: (\d+)px", html)
    assert size and int(size.group(1)) >= 11 and report_html.CELL >= 2 * int(size.group(1))   # two digits fit


def test_each_source_line_links_to_its_ttgir_and_machine_code(page):
    reports, path = page
    html = path.read_text()
    where = f"{ROOT / 'examples' / 'softmax.py'}:{_line('softmax.py', 'x = gl.load(x_ptr')}"
    built = code_by_line(softmax.build("sm90a"))[where]
    anchor = re.search(rf'<a href="#(k0-line-\d+)">{where.rsplit(":", 1)[1]}</a>', html).group(1)
    entry = html[html.index(f'<div id="{anchor}">'):]
    entry = entry[:entry.index("</div>")]
    count = next(line["instructions"] for line in reports[0]["lines"] if line["where"] == where)
    assert len(built.machine) == count > 0 and f"{count} SASS instructions" in entry
    assert escape("\n".join(built.machine)) in entry and escape(built.ttgir[0]) in entry
    assert any("tt.load" in op for op in built.ttgir)


def test_the_baseline_source_is_listed_beside(page):
    _, path = page
    html = path.read_text()
    assert '<caption>softmax_triton (all Triton): softmax.py</caption>' in html
    store = _line("softmax.py", "tl.store(y_ptr + offsets, tl.exp(")
    row = re.search(rf'<tr class="line-baseline"[^>]*><td class="n"><a href="#(k0-base-line-\d+)">{store}</a></td>'
                    rf'<td class="count">(\d+)</td>', html)
    assert row, "the all-Triton store line, linked to its entry"
    entry = html[html.index(f'<div id="{row.group(1)}">'):]
    assert f"sm90a: {row.group(2)} SASS instructions" in entry[:entry.index("</div>")]
    assert "What each line of softmax_triton (all Triton) compiled to" in html


def test_the_region_picker_names_every_region(page):
    reports, path = page
    html = path.read_text()
    for k, rep in enumerate(reports):
        for row in (r for r in rep["rows"] if "language" in r):
            slug = row["bucket"].split()[0]
            assert f'id="k{k}-pick-{slug}">{row["bucket"]} ({row["language"]})</label>' in html
            assert f"#k{k}:has(#k{k}-pick-{slug}:checked) .own:not(.own-{slug})" in html
        assert f'id="k{k}-pick-all" checked>all</label>' in html


@needs_chromium
def test_the_page_renders_in_headless_chromium(page, tmp_path):
    _, path = page
    image = _screenshot(path, tmp_path / "report.png")
    assert image.shape[:2] == (2000, 1200)
    pixels = image.reshape(-1, 3)
    assert (pixels != 255).any(axis=1).mean() > 0.05   # not a blank page
    for colour in (TRITON_LINE, GLUON_LINE, BASELINE_LINE):   # whole source lines in each colour, not the legend
        assert (pixels == colour).all(axis=1).sum() > 5000, colour


@needs_chromium
def test_a_line_link_opens_its_entry(page):
    """Following a line number's link (a fragment) opens its entry and the block around it."""
    _, path = page
    dom = _chromium("--dump-dom", path.as_uri() + "#k0-line-3").stdout
    opened = re.findall(r'<details class="drill own[^"]*" open=""><summary>.*?</summary><div id="([^"]+)">', dom,
                        re.S)
    assert opened == ["k0-line-3"]
    assert dom.count(' open=""') == 2   # the entry and the drill-down block, nothing else


@needs_chromium
def test_picking_a_region_dims_the_others(page, tmp_path):
    _, path = page
    html = path.read_text()
    picked = tmp_path / "picked.html"
    picked.write_text(html.replace('id="k0-pick-all" checked>', 'id="k0-pick-all">')
                      .replace('id="k0-pick-r0">', 'id="k0-pick-r0" checked>'))
    before = _screenshot(path, tmp_path / "all.png").reshape(-1, 3)
    after = _screenshot(picked, tmp_path / "picked.png").reshape(-1, 3)

    def count(pixels, colour):
        return (pixels == colour).all(axis=1).sum()
    assert count(after, TRITON_LINE) == count(before, TRITON_LINE) > 5000   # r0's lines stay
    assert count(after, HOST_LINE) < 0.7 * count(before, HOST_LINE)        # softmax's host lines dim (not layernorm's)


@pytest.mark.slow
def test_cli_baseline(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "hybrid.cli", "report", "examples/softmax.py:softmax_kernel",
                           "--target", "gfx942", "--baseline", "softmax_triton", "--html", str(tmp_path / "r.html")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert re.search(r"softmax_triton \(all Triton\) on gfx942: \d+ instructions, \d+ registers", proc.stdout)
    html = (tmp_path / "r.html").read_text()
    assert "softmax_triton (all Triton): softmax.py" in html and "AMDGCN instructions</h4>" in html
    assert 'href="#k0-base-line-0"' in html and "What each line of softmax_triton (all Triton) compiled to" in html
