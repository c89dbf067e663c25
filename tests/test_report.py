"""The static per-region report: attribution by source line, totals, JSON, CLI."""
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from examples import matmul_gluon_epilogue, softmax, softmax_gluon_stats, tile_matmul

ROOT = Path(__file__).resolve().parents[1]
ROW_KEYS = {"bucket", "ttgir_ops", "instructions"}
REGION_KEYS = ROW_KEYS | {"function", "language", "call_site", "shared_bytes", "boundaries"}
TOTAL_KEYS = {"ttgir_ops", "instructions", "registers", "spills", "shared_bytes", "num_warps", "binary_bytes"}


@pytest.mark.parametrize("target", ["sm90a", "gfx950"])
@pytest.mark.parametrize("example", [softmax, tile_matmul, softmax_gluon_stats, matmul_gluon_epilogue])
def test_regions_and_host_add_up_to_the_kernel(example, target):
    rep = example.build(target).report()
    rows, totals = rep["rows"], rep["totals"]
    assert sum(r["instructions"] for r in rows) == totals["instructions"] > 0   # counted two ways
    assert sum(r["ttgir_ops"] for r in rows) == totals["ttgir_ops"] > 0
    (region, ) = [r for r in rows if r["bucket"].startswith("r0 ")]
    host = next(r for r in rows if r["bucket"] == "host")
    assert region["instructions"] > 0 and region["ttgir_ops"] > 0      # the region's code is found in the binary
    assert host["instructions"] > 0
    assert set(rep) == {"schema", "kernel", "target", "rows", "totals", "lines"} and rep["schema"] == 1
    for bucket in (region["bucket"], "host"):   # per source line, the same instructions again
        assert sum(line["instructions"] for line in rep["lines"] if line["owner"] == bucket) == \
            next(r for r in rows if r["bucket"] == bucket)["instructions"]
    assert all(REGION_KEYS <= set(r) for r in rows if r["bucket"].startswith("r"))
    assert all(ROW_KEYS <= set(r) for r in rows) and set(totals) == TOTAL_KEYS


def test_a_bigger_region_gets_the_bigger_share():
    """The matmul K loop (Triton region) outweighs the softmax row statistics (Triton region)."""
    mm = tile_matmul.build("sm80").report()
    sm = softmax.build("sm80").report()
    share = {name: next(r for r in rep["rows"] if r["bucket"].startswith("r0 "))["ttgir_ops"] / rep["totals"]["ttgir_ops"]
             for name, rep in (("matmul", mm), ("softmax", sm))}
    assert share["matmul"] > share["softmax"]


@pytest.mark.slow
def test_cli_report_writes_json_and_html(tmp_path):
    out, page = tmp_path / "report.json", tmp_path / "report.html"
    proc = subprocess.run([sys.executable, "-m", "hybrid.cli", "report", "examples/softmax.py:softmax_kernel",
                           "--target", "sm80", "--target", "gfx942", "--json", str(out), "--html", str(page),
                           "--timing"], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "160",   # a wide terminal
                               "TRITON_CACHE_DIR": str(tmp_path / "cache")})   # cold: Triton's stages run
    assert proc.returncode == 0, proc.stderr[-2000:]
    reports = json.loads(out.read_text())
    assert [r["target"] for r in reports] == ["sm80", "gfx942"]
    assert "row_stats" in proc.stdout and "instructions" in proc.stdout
    assert max(len(line) for line in proc.stdout.splitlines() if not line.startswith("wrote ")) <= 100
    html = page.read_text()
    assert html.startswith("<!doctype html>") and "</html>" in html
    assert not re.search(r"https?:|<script|<link|<img|src=|url\(|@import", html, re.I)   # nothing to fetch
    for rep in reports:
        assert f"<h3>{rep['target']}</h3>" in html and f"{rep['totals']['instructions']} instructions" in html
        for row in rep["rows"]:
            if "language" in row:
                assert f"{row['bucket']} ({row['language']})" in html
    assert html.count("share of instructions") == 2 and html.count("shared memory (kernel: ") == 2
    assert html.count('class="bar ') >= 2 * 2   # a region and the host, per target
    assert proc.stdout.count("compile time per stage") == 2 and "Triton region lowering" in proc.stdout
    assert all({s["stage"] for s in r["timing"]["stages"]} >= {"Triton region lowering", "triton llir"}
               for r in reports)


@pytest.fixture(scope="module")
def summaries() -> list[dict]:
    """Builds with every kind of boundary (layouts that agree, conversions removed or through
    shared memory, a shared-memory handoff), and a failed build with a long message."""
    from examples import mma_handoff, tma_stage
    built = [softmax_gluon_stats.build("sm90a"), softmax_gluon_stats.build("gfx942"), mma_handoff.build("sm90a"),
             tma_stage.build("sm90a")]
    failed = {"kernel": "broken_kernel", "target": "sm80", "error": "RegionError: " + "a long message " * 20}
    return [fb.summary() for fb in built] + [failed]


def printed(capsys, summaries: list[dict], wide: bool) -> list[str]:
    from hybrid import report
    report.print_table(summaries, wide=wide)
    return capsys.readouterr().out.splitlines()


def test_demo_table_fits_100_columns_on_a_terminal_and_in_a_log_splits_no_name(capsys, summaries):
    """On a terminal the table fits ``WIDTH``; into a pipe or file (captured here) it is as wide as its
    rows, so that a long ``module:kernel`` stays whole on its row's line."""
    from hybrid.report import WIDTH, table
    summaries = [*summaries, {**summaries[2], "module": "examples_of_matmuls_with_gluon_epilogues"}]
    assert max(len(line) for line in render(table(summaries), WIDTH).splitlines()) <= 100
    lines = printed(capsys, summaries, wide=False)
    assert sum("examples_of_matmuls_with_gluon_epilogues:mma_kernel" in line for line in lines) == 1
    for s in summaries[:-2]:
        bnd = len(s["boundaries"])
        cvt = sum(b["conversions"] for b in s["boundaries"])
        nbytes = sum(b.get("shared_bytes", 0) for b in s["boundaries"])
        row = [line for line in lines if line.split()[:2] == [s["kernel"], s["target"]]]
        assert len(row) == 1, lines
        assert row[0].split()[-5:] == [str(bnd), str(cvt), str(nbytes), str(s["shared_bytes"]),
                                       str(s["binary_bytes"])]
    assert any("FAILED" in line for line in lines) and "=>" not in "\n".join(lines)   # no per-boundary detail


def render(table, width: int) -> str:
    console = Console(width=width, file=io.StringIO(), record=True)
    console.print(table)
    return console.export_text()


def test_demo_table_wide_has_every_boundary(summaries):
    from hybrid.report import boundary_line, table
    text = render(table(summaries, wide=True), 1000)   # unwrapped, to find each line whole
    for s in summaries[:-1]:
        for b in s["boundaries"]:
            assert boundary_line(b) in text
    assert "shared handoff" in text and "layouts agree" in text


def test_report_table_summarizes_boundaries_unless_wide():
    from hybrid import report
    rep = softmax_gluon_stats.build("sm90a").report()
    compact, wide = render(report.region_table(rep), report.WIDTH), render(report.region_table(rep, wide=True), 1000)
    region = next(r for r in rep["rows"] if r["bucket"].startswith("r0 "))
    assert max(len(line) for line in compact.splitlines()) <= 100 and "=>" not in compact
    row = next(line for line in compact.splitlines() if line.strip().startswith(region["bucket"]))
    assert row.split()[-3:] == [str(len(region["boundaries"])), str(sum(b["conversions"] for b in region["boundaries"])),
                                str(sum(b.get("shared_bytes", 0) for b in region["boundaries"]))]
    assert all(report.boundary_line(b) in wide for b in region["boundaries"])
