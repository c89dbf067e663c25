"""One call on a GPU machine: the GPU tests, then the benchmarks (kernels, ports, profiling), then one results table.

    python3 bench/gpu_check.py [--out build/gpu-check] [--steps tests,kernels,ports,boundaries,profiling]
                               [--budget-s 1800]      (or: make gpu-check)

Runs with whatever Python, torch and Triton (3.6 to 3.9) the machine has and installs nothing:
GPU machines may have no package registry. What is missing is named and its step skipped.
Writes ``<out>.md`` (the table for ``bench/RESULTS.md``) and ``<out>.json``.
"""
from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NEEDED = ("triton", "torch", "pytest", "rich")


#: Each step's share of ``--budget-s`` (among the ``--steps`` run); what a step leaves unused goes to the next.
SHARES = {"tests": 0.3, "kernels": 0.25, "ports": 0.15, "boundaries": 0.1, "profiling": 0.2}
#: The script ``bench/<name>.py`` of each step but the tests.
SCRIPTS = {"kernels": "kernels", "ports": "port_gpu", "boundaries": "boundaries", "profiling": "profiling"}
NOT_RUN = "not run"


def run_gpu_tests(out: Path, timeout: float) -> dict:
    junit = out.with_suffix(".junit.xml")
    parallel = ["-n", "4"] if importlib.util.find_spec("xdist") else []
    started = time.perf_counter()
    code = _run([sys.executable, "-m", "pytest", "-q", "-m", "gpu", *parallel, "tests", f"--junitxml={junit}"],
                timeout)
    counts = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    if junit.exists():
        suite = ElementTree.parse(junit).getroot()
        suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
        counts = {key: int(suite.get(key, 0)) for key in counts}
    return {**counts, "passed": counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"],
            "exit_code": code, "seconds": round(time.perf_counter() - started, 1)}


def run_benchmark(out: Path, name: str, target: str, timeout: float) -> dict:
    """``bench/<name>.py`` for ``target``; its JSON, with its exit code."""
    path = out.with_name(f"{out.name}-{name}.json")
    code = _run([sys.executable, f"bench/{name}.py", "--targets", target, "--json", str(path)], timeout)
    return {"exit_code": code, **(json.loads(path.read_text()) if path.exists() else {})}


def _run(command: list[str], timeout: float) -> int | str:
    """The command's exit code, or "timed out" after ``timeout`` seconds (its output so far is printed)."""
    try:
        return subprocess.run(command, cwd=ROOT, env=_env(), timeout=max(timeout, 1)).returncode
    except subprocess.TimeoutExpired:
        print(f"gpu-check: {' '.join(command[1:4])} ran past {timeout:.0f} s and was stopped")
        return "timed out"


def markdown(result: dict) -> str:
    from bench.kernels import markdown as kernel_tables
    from bench import profiling
    from bench.port_gpu import markdown as port_table
    env, tests = result["environment"], result["tests"]
    lines = [f"### GPU check, {result['date']}: {env.get('gpu', 'no GPU')} ({result['target']}), "
             f"Triton {env.get('triton')}, torch {env.get('torch')}, CUDA/HIP {env.get('cuda')}, "
             f"driver {env.get('driver')}", "",
             f"GPU tests: {tests['passed']} passed, {tests['failures'] + tests['errors']} failed, "
             f"{tests['skipped']} skipped ({tests['seconds']} s)" if tests["exit_code"] != NOT_RUN
             else "GPU tests: not run", ""]
    if "static" in result["benchmark"]:
        lines.append(kernel_tables(result["benchmark"]))
    if result["ports"].get("gpu"):
        lines += ["", port_table(result["ports"]["gpu"])]
    timed = [r for r in result["boundaries"].get("gpu", []) if r["mode"] == "auto"]
    if timed:
        lines += ["", "Boundary planner (`bench/boundaries.py`, auto / best forced alternative, goal <= 1.02):", "",
                  "| case | auto ms | ratio | goal |", "| --- | --- | --- | --- |"]
        lines += [f"| {r['case']} | {r['median_ms'] or '-'} | {r['auto_vs_best_forced'] or '-'} | "
                  f"{'met' if r['meets_goal'] else 'MISSED'} |" for r in timed]
    profiled = result["profiling"].get("gpu", [])
    if profiled:
        lines += ["", "Per-region profiling overhead (`bench/profiling.py`, the kernel's profiled / plain device "
                  f"time, goal <= {profiling.GOAL}):", "", "| " + " | ".join(profiling.GPU_COLUMNS) + " |",
                  "|" + "---|" * len(profiling.GPU_COLUMNS)]
        lines += ["| " + " | ".join(profiling.gpu_cells(r)) + " |" for r in profiled]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="build/gpu-check")
    parser.add_argument("--steps", default=",".join(SHARES), help=f"which of {','.join(SHARES)} to run")
    parser.add_argument("--budget-s", type=float, default=1800,
                        help="seconds for the whole check, shared among its steps (a lent GPU's lease is short)")
    args = parser.parse_args(argv)
    missing = [name for name in NEEDED if importlib.util.find_spec(name) is None]
    if importlib.util.find_spec("cffi") is None:
        print("gpu-check: cffi is missing: the bundle-loader GPU test is skipped (carry its wheel to run it)")
    if missing:
        print(f"gpu-check: missing Python packages {missing} for {sys.executable}; install them "
              f"(or run with PYTHON=<an interpreter that has them>)")
        return 2
    sys.path.insert(0, str(ROOT))
    from examples.run import current_gpu_target
    target = current_gpu_target()
    if target is None:
        print("gpu-check: no supported GPU visible to torch here (sm80, sm90a, sm100a, gfx942, gfx950); "
              "`make test` covers everything a CPU can check")
        return 2
    out = ROOT / args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    chosen = args.steps.split(",")
    shares = {step: share / sum(SHARES[c] for c in chosen) for step, share in SHARES.items() if step in chosen}
    started, spent, done = time.perf_counter(), 0.0, 0.0
    steps = {step: {"exit_code": NOT_RUN} for step in SHARES}
    for step, share in shares.items():
        allowed = (done + share) * args.budget_s - spent   # its share, and what earlier steps left
        steps[step] = (run_gpu_tests(out, allowed) if step == "tests"
                       else run_benchmark(out, SCRIPTS[step], target, allowed))
        spent, done = time.perf_counter() - started, done + share
    tests, benchmark, ports, boundaries, profiling = steps.values()
    tests = {**dict.fromkeys(("tests", "passed", "failures", "errors", "skipped", "seconds"), 0), **tests}
    result = {"date": datetime.date.today().isoformat(), "target": target,
              "environment": benchmark.get("environment", {}), "tests": tests, "benchmark": benchmark,
              "ports": ports, "boundaries": boundaries, "profiling": profiling}
    out.with_suffix(".json").write_text(json.dumps(result, indent=1))
    text = markdown(result)
    out.with_suffix(".md").write_text(text)
    print(text)
    print(f"wrote {out.with_suffix('.md')} and {out.with_suffix('.json')}")
    ok = (tests["failures"] + tests["errors"] == 0
          and all(step["exit_code"] in (0, NOT_RUN) for step in (tests, benchmark, ports, boundaries, profiling)))
    return 0 if ok else 1


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
            "TRITON_DEFAULT_FP_FUSION": os.environ.get("TRITON_DEFAULT_FP_FUSION", "1"), "PYTHONUNBUFFERED": "1"}


if __name__ == "__main__":
    raise SystemExit(main())
