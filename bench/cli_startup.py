"""How long the ``hybrid`` command takes to answer what needs no compiler: each command run as a
new process (``python -m hybrid.cli``), the median wall time of ``--repeats`` runs.

    python bench/cli_startup.py [--repeats N] [--root CHECKOUT] [--json PATH]

``--root`` times another checkout's command (e.g. an older commit, for a before/after table).
``python -c pass`` is the floor every row pays: starting the interpreter.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402

from bench.output import table, write_json  # noqa: E402

#: name -> arguments of ``python``; ``profile`` answers "no GPU here" on a machine without one
COMMANDS = {
    "python -c pass": ["-c", "pass"],
    "hybrid --help": ["-m", "hybrid.cli", "--help"],
    "hybrid --version": ["-m", "hybrid.cli", "--version"],
    "hybrid build (argument error)": ["-m", "hybrid.cli", "build"],
    "hybrid profile (no GPU)": ["-m", "hybrid.cli", "profile", "examples/softmax.py"],
}


def seconds(argv: list[str], root: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, *argv], cwd=root, capture_output=True, timeout=300,
                   env={**os.environ, "PYTHONPATH": str(root)})
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose command is timed")
    parser.add_argument("--json", default="bench/cli_startup.json")
    args = parser.parse_args()
    rows = []
    for name, argv in COMMANDS.items():
        seconds(argv, args.root)   # the files into the page cache, as any second run finds them
        runs = [seconds(argv, args.root) for _ in range(args.repeats)]
        rows.append({"command": name, "median_s": statistics.median(runs), "min_s": min(runs), "max_s": max(runs)})
    Console(width=120).print(table(f"hybrid command start-up ({args.root}), median of {args.repeats} runs",
                                   ("command", "median s", "min s", "max s"),
                                   [(r["command"], *(f"{r[k]:.2f}" for k in ("median_s", "min_s", "max_s")))
                                    for r in rows]))
    write_json(args.json, {"root": str(args.root), "repeats": args.repeats, "cpus": os.cpu_count(), "rows": rows})


if __name__ == "__main__":
    main()
