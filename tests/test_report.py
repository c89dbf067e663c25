"""The static per-region report: attribution by source line, totals, JSON, CLI."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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
    assert set(rep) == {"schema", "kernel", "target", "rows", "totals"} and rep["schema"] == 1
    assert all(REGION_KEYS <= set(r) for r in rows if r["bucket"].startswith("r"))
    assert all(ROW_KEYS <= set(r) for r in rows) and set(totals) == TOTAL_KEYS


def test_a_bigger_region_gets_the_bigger_share():
    """The matmul K loop (Triton region) outweighs the softmax row statistics (Triton region)."""
    mm = tile_matmul.build("sm80").report()
    sm = softmax.build("sm80").report()
    share = {name: next(r for r in rep["rows"] if r["bucket"].startswith("r0 "))["ttgir_ops"] / rep["totals"]["ttgir_ops"]
             for name, rep in (("matmul", mm), ("softmax", sm))}
    assert share["matmul"] > share["softmax"]


def test_cli_report_writes_json(tmp_path):
    out = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "hybrid.cli", "report", "examples/softmax.py:softmax_kernel",
                           "--target", "sm80", "--target", "gfx942", "--json", str(out), "--timing"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "160",
                               "TRITON_CACHE_DIR": str(tmp_path / "cache")})   # cold: Triton's stages run
    assert proc.returncode == 0, proc.stderr[-2000:]
    reports = json.loads(out.read_text())
    assert [r["target"] for r in reports] == ["sm80", "gfx942"]
    assert "row_stats" in proc.stdout and "instructions" in proc.stdout
    assert proc.stdout.count("compile time per stage") == 2 and "Triton region lowering" in proc.stdout
    assert all({s["stage"] for s in r["timing"]["stages"]} >= {"Triton region lowering", "triton llir"}
               for r in reports)
