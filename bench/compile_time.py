"""Compile time of each example's hybrid kernel against the same kernel in pure Triton, cold and warm.

    python bench/compile_time.py [--repeats N] [--targets sm90a,gfx942] [--examples softmax,...]
                                 [--profile] [--no-warm] [--json PATH]

Cold: nothing cached (Triton's cache bypassed with TRITON_ALWAYS_COMPILE=1, the project's
in-process caches cleared and its on-disk cache folder emptied before every compile); the median
over ``--repeats`` of each, hybrid and pure Triton interleaved in one process so that both see
the same machine load. Warm: the second compile of the same kernel in a new process (a first
process builds everything into fresh cache folders, a second one times the builds again).
``--profile`` prints each row's per-stage breakdown (``interop.instrumentation.timing``; the median cold
compile's). Goals: median ratio <= 1.25, every row <= 1.5, warm <= 1/20 of cold.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402

from bench.output import table, write_json  # noqa: E402
from examples.run import EXAMPLES  # noqa: E402
from interop.targets import TARGETS  # noqa: E402

GOAL_MEDIAN, GOAL_ROW, GOAL_WARM = 1.25, 1.5, 1 / 20


def cases(examples: list[str], targets: list[str]) -> list[tuple]:
    """(module, target) of every example built for the target (a module's ``SKIP`` names those it is not)."""
    import importlib
    modules = [importlib.import_module(f"examples.{name}") for name in examples]
    return [(m, t) for m in modules for t in targets if t not in getattr(m, "SKIP", {})]


def cold(examples: list[str], targets: list[str], repeats: int, scratch: Path) -> list[dict]:
    os.environ["TRITON_ALWAYS_COMPILE"] = "1"
    os.environ["HYBRID_CACHE_DIR"] = str(scratch)
    from interop import caches
    rows = []
    for example, target in cases(examples, targets):
        example.build(target), example.build_triton(target)   # imports and lazy initialization
        hybrid, pure = [], []
        for _ in range(repeats):
            caches.clear()
            shutil.rmtree(scratch, ignore_errors=True)
            start = time.perf_counter()
            fb = example.build(target)
            hybrid.append((time.perf_counter() - start, fb.timing))
            start = time.perf_counter()
            example.build_triton(target)
            pure.append(time.perf_counter() - start)
        hybrid.sort(key=lambda run: run[0])
        hybrid_s, timing = hybrid[len(hybrid) // 2]
        triton_s = statistics.median(pure)
        rows.append({"example": example.__name__.split(".")[-1], "target": target, "hybrid_s": hybrid_s,
                     "triton_s": triton_s, "ratio": hybrid_s / triton_s, "repeats": repeats,
                     "stages": timing.to_json()["stages"]})
    return rows


def warm(examples: list[str], targets: list[str]) -> dict[tuple, float]:
    """Per (example, target): the compile time in a second process, after a first one built it."""
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "TRITON_CACHE_DIR": f"{folder}/triton", "HYBRID_CACHE_DIR": f"{folder}/hybrid",
               "PYTHONPATH": str(ROOT)}
        env.pop("TRITON_ALWAYS_COMPILE", None)
        command = [sys.executable, __file__, "--warm-run", "--examples", ",".join(examples),
                   "--targets", ",".join(targets)]
        for _ in range(2):
            proc = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    times = json.loads(proc.stdout.strip().splitlines()[-1])
    return {(e, t): s for e, t, s in times}


def warm_run(examples: list[str], targets: list[str]) -> None:
    """One process's compiles of every case, timed. One pure-Triton build per target comes first:
    Triton's backend pays a one-time cost per process and target (NVIDIA's probes ``ptxas
    --version``, about 10 ms) that any compile would pay, hybrid or not."""
    found = cases(examples, targets)
    for target in dict.fromkeys(target for _, target in found):
        next(example for example, t in found if t == target).build_triton(target)
    times = []
    for example, target in found:
        start = time.perf_counter()
        example.build(target)
        times.append((example.__name__.split(".")[-1], target, time.perf_counter() - start))
    print(json.dumps(times))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--examples", default=",".join(name.split(".")[-1] for name in EXAMPLES))
    parser.add_argument("--profile", action="store_true", help="print each row's per-stage breakdown")
    parser.add_argument("--no-warm", action="store_true", help="skip the warm (second process) compiles")
    parser.add_argument("--json", default="bench/compile_time.json")
    parser.add_argument("--warm-run", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    examples, targets = args.examples.split(","), args.targets.split(",")
    if args.warm_run:
        warm_run(examples, targets)
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        rows = cold(examples, targets, args.repeats, Path(scratch) / "hybrid")
    warm_s = {} if args.no_warm else warm(examples, targets)
    for r in rows:
        r["meets_goal"] = r["ratio"] <= GOAL_ROW
        if warm_s:
            r["warm_s"] = warm_s[(r["example"], r["target"])]
            r["warm_meets_goal"] = r["warm_s"] <= GOAL_WARM * r["hybrid_s"]
    console = Console(width=160)
    console.print(table(f"compile time, median of {args.repeats} cold compiles; warm: second compile in a new "
                        f"process (goals: ratio <= {GOAL_ROW} per row, median <= {GOAL_MEDIAN}, warm <= cold/20)",
                        ("example", "target", "hybrid s", "pure Triton s", "ratio", "warm s", "top stages"),
                        ([r["example"], r["target"], f"{r['hybrid_s']:.3f}", f"{r['triton_s']:.3f}",
                          f"[{'green' if r['meets_goal'] else 'red'}]{r['ratio']:.2f}[/]",
                          f"{r['warm_s']:.3f}" if "warm_s" in r else "-", _top(r["stages"], 3)] for r in rows)))
    if args.profile:
        for r in rows:
            console.print(f"{r['example']} {r['target']}: " + _top(r["stages"], len(r["stages"])))
    summary = goals(rows)
    for line in summary["lines"]:
        console.print(line)
    write_json(args.json, {"rows": rows, "goals": summary})
    return 0


def _top(stages: list[dict], n: int) -> str:
    return ", ".join(f"{s['stage']} {1000 * s['seconds']:.0f}ms" for s in stages[:n])


def goals(rows: list[dict]) -> dict:
    ratios = [r["ratio"] for r in rows]
    median = statistics.median(ratios)
    within = sum(r["meets_goal"] for r in rows)
    warm_rows = [r for r in rows if "warm_s" in r]
    warm_ok = sum(r["warm_meets_goal"] for r in warm_rows)
    lines = [f"median ratio {median:.2f} (goal <= {GOAL_MEDIAN}): {'met' if median <= GOAL_MEDIAN else 'MISSED'}",
             f"{within} of {len(rows)} rows within {GOAL_ROW}x" + ("" if within == len(rows) else " (MISSED)")]
    if warm_rows:
        worst = max(r["warm_s"] / r["hybrid_s"] for r in warm_rows)
        lines.append(f"warm <= cold/20 in {warm_ok} of {len(warm_rows)} rows (worst warm/cold {worst:.3f})")
    return {"median_ratio": median, "rows_within": within, "rows": len(rows), "warm_within": warm_ok,
            "lines": lines}


if __name__ == "__main__":
    raise SystemExit(main())
