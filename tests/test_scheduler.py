"""Parallel per-target builds: a failing job is reported and stops no other."""
import json
import os
import subprocess
import sys
from pathlib import Path

from scheduler import BuildJob, build_all

ROOT = Path(__file__).resolve().parents[1]


def test_failure_is_isolated_and_reported():
    results = build_all([BuildJob("examples.softmax", "sm80"), BuildJob("examples.no_such_kernel", "sm80"),
                         BuildJob("examples.tile_matmul", "gfx942")], max_workers=2)
    ok = {(r.job.module, r.job.target): r for r in results}
    assert ok["examples.softmax", "sm80"].ok and ok["examples.tile_matmul", "gfx942"].ok
    bad = ok["examples.no_such_kernel", "sm80"]
    assert not bad.ok and "no_such_kernel" in bad.error
    summary = ok["examples.tile_matmul", "gfx942"].summary
    assert summary["kernel_entries"] == 1 and summary["target"] == "gfx942" and summary["binary_bytes"] > 0
    json.dumps(summary)   # summaries cross process boundaries as plain data


def test_demo_builds_every_example_for_every_target(tmp_path):
    out = tmp_path / "demo.json"
    proc = subprocess.run([sys.executable, "-m", "examples.run"], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "HYBRID_DEMO_JSON": str(out)}, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    summaries = json.loads(out.read_text())
    assert {(s["kernel"], s["target"]) for s in summaries} == {
        (k, t) for k in ("softmax_kernel", "matmul_kernel") for t in ("sm80", "sm90a", "sm100a", "gfx942", "gfx950")}
    assert all(s["kernel_entries"] == 1 and s["regions"] for s in summaries)
    assert "triton-hybrid: fused kernels" in proc.stdout
