"""Compile time of each example's hybrid kernel against the same kernel in pure Triton.

    python bench/compile_time.py [--repeats N] [--targets sm90a,gfx942] [--json PATH]

Every compile is cold (TRITON_ALWAYS_COMPILE=1). Prints a table and writes JSON.
Goal: hybrid at most 1.5x the pure-Triton compile time (median over repeats).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ["TRITON_ALWAYS_COMPILE"] = "1"
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from bench.output import write_json  # noqa: E402
from examples.run import example_modules  # noqa: E402
from hybrid.targets import TARGETS  # noqa: E402

GOAL = 1.5


def median_seconds(build, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        build()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--json", default="bench/compile_time.json")
    args = parser.parse_args(argv)
    rows = []
    for example in example_modules():
        for target in args.targets.split(","):
            example.build(target), example.build_triton(target)   # warm imports and lazy initialization
            hybrid_s = median_seconds(lambda: example.build(target), args.repeats)
            triton_s = median_seconds(lambda: example.build_triton(target), args.repeats)
            rows.append({"example": example.__name__.split(".")[-1], "target": target, "hybrid_s": hybrid_s,
                         "triton_s": triton_s, "ratio": hybrid_s / triton_s, "goal": GOAL,
                         "meets_goal": hybrid_s / triton_s <= GOAL, "repeats": args.repeats})
    table = Table(title=f"compile time, median of {args.repeats} cold compiles (goal: ratio <= {GOAL})")
    for column in ("example", "target", "hybrid s", "pure Triton s", "ratio"):
        table.add_column(column)
    for r in rows:
        table.add_row(r["example"], r["target"], f"{r['hybrid_s']:.3f}", f"{r['triton_s']:.3f}",
                      f"[{'green' if r['meets_goal'] else 'red'}]{r['ratio']:.2f}[/]")
    Console(width=120).print(table)
    write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
