"""Build planning and parallel builds: every target, isolated failures, deterministic output."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import hybrid
from interop.targets import TARGETS
from scheduler import Cache, InlineExecutor, Job, build, plan
from scheduler.builds import compile_job
from scheduler.planning import resolve

ROOT = Path(__file__).resolve().parents[1]
EDITABLE = ROOT / "tests" / "editable_kernels.py"


def test_plan_expands_targets_and_names_jobs_deterministically():
    jobs = plan(["examples.softmax:softmax_kernel", "tests/editable_kernels.py:k_scale"], "all",
                constexprs={"BM": 16}, options={"num_warps": 8})
    assert [(j.kernel, j.target) for j in jobs] == [
        (k, t) for k in ("examples.softmax:softmax_kernel", f"{EDITABLE}:k_scale") for t in TARGETS]
    assert all(j.options == {"num_warps": 8} for j in jobs)   # what was asked; defaults apply at resolve
    again = plan(["examples.softmax:softmax_kernel"], "sm80,gfx942", constexprs={"BM": 16}, options={"num_warps": 8})
    assert [j.id for j in again] == [jobs[0].id, jobs[3].id]
    assert Job("examples.softmax:softmax_kernel", "sm80", constexprs={"BM": 32}).id != jobs[0].id
    json.dumps([j.to_json() for j in jobs])   # plain data for any executor
    with pytest.raises(ValueError, match="sm75.*expected 'all' or some of sm80"):
        plan(["examples.softmax:softmax_kernel"], ["sm75"])
    with pytest.raises(ValueError, match="expected 'path/to/module.py:kernel'"):
        plan(["examples.softmax"], "all")


def test_module_options_and_divisible_arguments_apply_under_the_job():
    """``examples.matmul`` asks for 8 warps (and 2 stages on AMD) and 16-divisible sizes; a job's
    own options still win."""
    from examples import matmul
    spec = resolve(plan(["examples.matmul:matmul_kernel"], ["gfx942"])[0])
    assert spec.options == {**matmul.options("gfx942"), "divisible": list(matmul.DIVISIBLE)}
    assert resolve(plan(["examples.matmul:matmul_kernel"], ["sm90a"], options={"num_warps": 4})[0]).options[
        "num_warps"] == 4
    assert resolve(plan(["examples.softmax:softmax_kernel"], ["sm80"])[0]).options == {}   # the backend's defaults


def test_parallel_build_of_every_target_with_failures_isolated(tmp_path):
    good = plan(["examples.softmax:softmax_kernel"], "all")
    bad = plan([f"{EDITABLE}:k_bad", "examples.no_such_module:kernel", f"{EDITABLE}:no_such_kernel"], ["sm90a"])
    results = build(good + bad, hybrid.compile, cache=Cache(tmp_path), max_workers=2)
    assert [r.job for r in results] == good + bad
    for r in results[:len(good)]:
        assert r.ok and r.status == "built", r.error
        assert r.summary["target"] == r.job.target and r.summary["kernel_entries"] == 1
        launch = r.entry.record["launch"]
        assert launch["entry_params"] == len(r.entry.record["params"]) + launch["hidden_params"]
        assert launch["warp_size"] == TARGETS[r.job.target].warp_size and launch["num_warps"] == 4
    region_bug, no_module, no_kernel = results[len(good):]
    assert all(r.status == "failed" and r.entry is None and "[sm90a]" in r.error for r in results[len(good):])
    assert region_bug.region.startswith("h_bad at ") and "editable_kernels.py:" in region_bug.region
    assert "k_bad" in region_bug.error and "no_such_module" in no_module.error and "no_such_kernel" in no_kernel.error
    assert len(list((tmp_path / "jobs").rglob("*.json"))) == len(good)   # failures leave no entry


def test_same_job_builds_byte_identical_binaries(monkeypatch):
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")   # past Triton's own cache: two real compiles
    job = plan(["examples.tile_matmul:matmul_kernel"], ["gfx950"])[0]
    first, second = compile_job(job, hybrid.compile), compile_job(job, hybrid.compile)
    assert first["binary"] == second["binary"] and first["record"]["sha256"] == second["record"]["sha256"]


def test_identical_jobs_build_once_and_inline_executor_builds_in_process():
    calls = []
    job = plan(["examples.softmax:softmax_kernel"], ["sm80"])[0]
    results = build([job, job], hybrid.compile, executor=InlineExecutor(), on_result=calls.append)
    assert [r.status for r in results] == ["built", "built"] and results[0].entry is results[1].entry
    assert len(calls) == 2


def test_dask_executor(tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        results = build(plan(["examples.softmax:softmax_kernel"], ["gfx942"]), hybrid.compile, cache=Cache(tmp_path),
                        executor=client.get_executor())
    assert results[0].ok and results[0].status == "built", results[0].error
    assert Cache(tmp_path).get(results[0].key).binary == results[0].entry.binary


def test_cli_builds_on_a_dask_cluster(tmp_path, capsys):
    """``hybrid build --dask ADDRESS``: the jobs run as the cluster's tasks, the bundles are written here."""
    distributed = pytest.importorskip("distributed")
    from hybrid import cli
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        assert cli.main(["build", "examples.softmax:softmax_kernel", "--target", "MI300X", "--dask",
                         cluster.scheduler_address, "-o", str(tmp_path / "dist"), "--cache-dir", str(tmp_path)]) == 0
        assert "compile_job" in cluster.scheduler.task_prefixes
    assert f"building 1 job on 1 Dask worker at {cluster.scheduler_address}" in capsys.readouterr().err
    assert (tmp_path / "dist" / "softmax_kernel" / "softmax_kernel.gfx942.hsaco").is_file()


def test_cli_dask_errors_are_one_line(capsys, monkeypatch):
    from hybrid import cli
    for argv, says in ((["--dask", "tcp://127.0.0.1:8786", "-j", "2"], "with --dask the cluster's workers build"),
                       (["--dask", "tcp://127.0.0.1:8786"], "pip install 'triton-hybrid[cluster]'")):
        monkeypatch.setitem(sys.modules, "distributed", None)   # as where the [cluster] extra is not installed
        with pytest.raises(SystemExit) as info:
            cli.main(["build", "examples.softmax:softmax_kernel", "--target", "sm80", *argv])
        assert info.value.code == 2 and says in capsys.readouterr().err


@pytest.mark.slow
def test_demo_builds_every_example_for_every_target(tmp_path):
    out = tmp_path / "demo.json"
    proc = subprocess.run([sys.executable, "-m", "examples.run"], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "HYBRID_DEMO_JSON": str(out)}, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    summaries = json.loads(out.read_text())
    from examples.run import EXAMPLES
    assert {(s["kernel"], s["target"]) for s in summaries} == {
        (k, t) for k in set(EXAMPLES.values()) for t in ("sm80", "sm90a", "sm100a", "gfx942", "gfx950")}
    assert {"copy_kernel", "transpose_copy_kernel", "layernorm_kernel"} <= {s["kernel"] for s in summaries}
    from examples.mma_handoff import REGIONLESS  # Triton's own dot where there is no wgmma/tcgen05
    assert all(s["kernel_entries"] == 1 for s in summaries)
    assert all(s["regions"] for s in summaries if not (s["kernel"] == "mma_kernel" and s["target"] in REGIONLESS))
    assert "triton-hybrid: fused kernels" in proc.stdout
    # into a pipe: one line per kernel and target, no name split; progress on stderr; a summary last
    rows = [line.split()[:2] for line in proc.stdout.splitlines()]
    assert all(rows.count([f"{s['module']}:{s['kernel']}", s["target"]]) == 1 for s in summaries)
    assert proc.stderr.count(f"/{len(summaries)}] ") == len(summaries)
    assert re.fullmatch(rf"demo: {len(EXAMPLES)} kernels x 5 targets: {len(summaries)} of {len(summaries)} built "
                        rf"\(\d+ from the cache\), (\d+) of \1 checks passed (in the interpreter|on \w+), \d+ s",
                        proc.stdout.splitlines()[-1]), proc.stdout[-500:]
