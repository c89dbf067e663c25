"""Interpreter time of each example: a mixed kernel checked on the CPU, per target.

    python bench/interpreter.py [--targets sm90a,gfx942] [--examples softmax,...] [--json PATH]

Each kernel of the suite runs once per case in the interpreter at its ``CHECK_SIZE`` (the size
the CI checks) on fresh random inputs; its largest error against the reference is reported
with the time.
"""
from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from bench.kernels import SUITE  # noqa: E402
from bench.output import write_json  # noqa: E402
from examples.run import check  # noqa: E402
from interop.targets import TARGETS  # noqa: E402


def rows(targets: list[str], examples: Sequence[str] = SUITE) -> list[dict]:
    out = []
    for name in examples:
        example = importlib.import_module(f"examples.{name}")
        for target in targets:
            if target in getattr(example, "SKIP", {}):
                continue
            start = time.perf_counter()
            error = check(example, target, interpreted=True)
            out.append({"example": name, "target": target, "size": list(example.CHECK_SIZE),
                        "cases": len(getattr(example, "CASES", [{}])), "seconds": time.perf_counter() - start,
                        "error": error, "correct": error <= example.TOLERANCE})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--examples", default=",".join(SUITE), help="examples of the suite, separated by ','")
    parser.add_argument("--json", default="build/bench-interpreter.json")
    args = parser.parse_args()
    examples = args.examples.split(",")
    unknown = sorted(set(examples) - set(SUITE))
    if unknown:
        parser.error(f"--examples: {', '.join(unknown)} not in the suite (one of: {', '.join(SUITE)})")
    result = rows(args.targets.split(","), examples)
    table = Table(title="interpreter: each kernel at its check size")
    for column in ("example", "target", "size", "cases", "seconds", "max error", "correct"):
        table.add_column(column)
    for r in result:
        table.add_row(r["example"], r["target"], "x".join(map(str, r["size"])), str(r["cases"]), f"{r['seconds']:.2f}",
                      f"{r['error']:.1e}", "yes" if r["correct"] else "NO")
    Console().print(table)
    write_json(args.json, result)
    gc.collect()
    return 0 if all(r["correct"] for r in result) else 1


if __name__ == "__main__":
    sys.exit(main())
