"""The kernel suite (``bench/kernels.py``, ``make bench``) in its CPU mode, so that it cannot rot:
every kernel, case, version and target it claims has a row with real static figures."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import kernels as suite
from tests.conftest import has_gpu

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ("sm90a", "gfx942")   # wgmma needs sm90a; one AMD target for the wave64 layouts
#: Tensors crossing each new hybrid kernel's boundaries, and the conversions they cost (0: the
#: Gluon region is written in the layout Triton gives the value, or the cost folds away).
BOUNDARY_CONVERSIONS = {"memcpy": 0, "strided_copy": 0, "layernorm": 0, "matmul": 0, "attention": 0, "matmul_wgmma": 1}


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    out = tmp_path_factory.mktemp("suite") / "kernels.json"
    proc = subprocess.run([sys.executable, "bench/kernels.py", "--targets", ",".join(TARGETS), "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text()), out.with_suffix(".md").read_text(), proc.stdout


def expected_rows() -> set:
    rows = set()
    for example in suite.load(suite.SUITE):
        name = suite._name(example)
        for target in TARGETS:
            if target in getattr(example, "SKIP", {}):
                rows.add((name, "", target, "hybrid"))
                continue
            for case in suite.cases(example):
                rows |= {(name, suite.case_label(case), target, v) for v in ("hybrid", *suite.PURE)
                         if v in suite.variants(example)}
    return rows


def test_a_row_for_every_kernel_case_version_and_target(result):
    data, _, _ = result
    rows = {(r["example"], r["case"], r["target"], r["variant"]) for r in data["static"]}
    assert rows == expected_rows()
    names = {r["example"] for r in data["static"]}
    assert {"memcpy", "strided_copy", "layernorm", "matmul", "matmul_wgmma", "attention"} <= names
    assert len([r for r in data["static"] if r["example"] == "attention" and r["variant"] == "hybrid"]) == 4 * 2


@pytest.mark.skipif(has_gpu(), reason="a GPU is here: the suite times the kernels instead")
def test_cpu_mode_says_so_and_times_nothing(result):
    data, _, stdout = result
    assert "gpu" not in data and data["target"] is None
    assert "static figures only" in stdout
    assert data["environment"]["triton"] and data["environment"]["date"]


def test_static_figures_are_real(result):
    data, _, _ = result
    built = [r for r in data["static"] if "skipped" not in r]
    for r in built:
        assert r["registers"] > 0 and r["binary_bytes"] > 0 and r["conversions"] >= 0, r
        assert r["spills"] == 0, f"{r['example']} {r['case']} {r['variant']} spills on {r['target']}"
    regionless = {(suite._name(m), t) for m in suite.load(suite.SUITE) for t in getattr(m, "REGIONLESS", ())}
    for r in built:
        if r["variant"] == "hybrid" and (r["example"], r["target"]) not in regionless:
            assert r["regions"] and r["boundaries"] >= 1, r


def test_boundary_conversions_as_recorded(result):
    data, _, _ = result
    for r in data["static"]:
        if r["variant"] == "hybrid" and r["example"] in BOUNDARY_CONVERSIONS and "skipped" not in r:
            assert r["boundary_conversions"] == BOUNDARY_CONVERSIONS[r["example"]], r


def test_wgmma_kernel_exists_for_sm90a_alone_and_says_why(result):
    data, _, _ = result
    rows = [r for r in data["static"] if r["example"] == "matmul_wgmma"]
    assert {r["target"] for r in rows if "skipped" not in r} == {"sm90a"}
    assert all("Hopper" in r["skipped"] for r in rows if r["target"] != "sm90a")
    # the Gluon mainloop keeps four stages of 128x64 and 64x256 bf16 tiles in shared memory
    ported = [r for r in rows if r["variant"] in ("hybrid", "gluon") and "skipped" not in r]
    assert len(ported) == 2 and all(r["shared_bytes"] >= 4 * (128 * 64 + 64 * 256) * 2 for r in ported)


def test_markdown_table_has_every_row(result):
    data, md, _ = result
    assert md.count("\n| ") == len(data["static"]) + 1   # header and one line per row
    assert f"Triton {data['environment']['triton']}" in md and "skipped: warpgroup_mma" in md


def test_wgmma_mainloop_is_wgmma_fed_by_cp_async():
    from examples import matmul_wgmma
    fb = matmul_wgmma.build("sm90a")
    assert fb.kernel_entries == 1
    assert "wgmma.mma_async" in fb.assembly and "cp.async" in fb.assembly
    assert [(r.function, r.language) for r in fb.regions] == [
        ("tile_ids", "triton"), ("store_tile_triton", "triton")]


def test_goals_are_judged_against_each_version_and_the_faster_pure_one():
    group = [{"variant": "hybrid", "median_ms": 1.0}, {"variant": "gluon", "median_ms": 0.99},
             {"variant": "triton", "median_ms": 1.5}, {"variant": "torch", "median_ms": 0.95}]
    judged = {r["variant"]: r for r in suite.judge(group, {"torch": 0.9, "triton": 1.0})}
    assert judged["hybrid"]["hybrid_speedup"] == pytest.approx(0.99) and judged["hybrid"]["meets_goal"]
    assert judged["torch"]["hybrid_speedup"] == pytest.approx(0.95) and judged["torch"]["meets_goal"]
    assert judged["triton"]["meets_goal"] and "goal" not in judged["gluon"]
    slow = suite.judge([{"variant": "hybrid", "median_ms": 2.0}, {"variant": "triton", "median_ms": 1.0}], {})
    assert slow[0]["meets_goal"] is False and "MISSED" in suite.gpu_cells({**slow[0], "example": "x", "case": "",
                                                                           "size": [1], "error": 0.0,
                                                                           "correct": True})[-1]
