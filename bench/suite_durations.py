"""Where the test suite's time goes: one pytest run (its own arguments, after ``--``), each test's
time (setup, call and teardown) summed per file, with the share marked ``slow``, and the
slowest tests ``make test-fast`` still runs: what to mark ``slow`` (or slim) next.

    python bench/suite_durations.py [--top N] [--json PATH] [-- PYTEST_ARGS]
    python bench/suite_durations.py -- -n 2 --dist worksteal -m "not slow and not gpu" tests   # make test-fast's run

On a machine others load, compare shares rather than seconds; the wall time is the run's own.
"""
from __future__ import annotations

import argparse
import collections
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pytest  # noqa: E402
from rich.console import Console  # noqa: E402

from bench.output import table, write_json  # noqa: E402


@dataclass
class Timed:
    nodeid: str
    seconds: float
    slow: bool
    outcome: str


class Recorder:
    """A pytest plugin (in the controller under xdist, whose workers' reports carry their marks)."""

    def __init__(self):
        self.tests: dict[str, Timed] = {}

    def pytest_runtest_logreport(self, report) -> None:
        row = self.tests.setdefault(report.nodeid, Timed(report.nodeid, 0.0, "slow" in report.keywords, "passed"))
        row.seconds += report.duration
        if report.failed:
            row.outcome = "failed"
        elif report.skipped and row.outcome == "passed":
            row.outcome = "skipped"


def per_file(tests: list[Timed]) -> list[tuple[str, float, int, float]]:
    """(file, seconds, tests, seconds in tests marked slow), slowest file first."""
    files: dict = collections.defaultdict(lambda: [0.0, 0, 0.0])
    for t in tests:
        entry = files[t.nodeid.split("::")[0]]
        entry[0] += t.seconds
        entry[1] += 1
        entry[2] += t.seconds if t.slow else 0.0
    return sorted(((name, *entry) for name, entry in files.items()), key=lambda row: -row[1])


def main(argv: list[str]) -> int:
    split = argv.index("--") if "--" in argv else len(argv)
    own, pytest_args = argv[:split], argv[split + 1:]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=15, help="slowest tests not marked slow to list")
    parser.add_argument("--json", help="write every test's time here")
    args = parser.parse_args(own)
    recorder = Recorder()
    start = time.perf_counter()
    code = pytest.main(["-q", "-p", "no:cacheprovider", *(pytest_args or ["tests"])], plugins=[recorder])
    wall = time.perf_counter() - start
    tests = list(recorder.tests.values())
    total = sum(t.seconds for t in tests) or 1.0
    console = Console()
    console.print(table(f"test time per file: {len(tests)} tests, {total:.0f} s of test time, {wall:.0f} s wall",
                        ("file", "s", "share", "tests", "s in slow"),
                        [(name, f"{s:.1f}", f"{100 * s / total:.1f}%", str(n), f"{slow:.1f}")
                         for name, s, n, slow in per_file(tests)]))
    fast = sorted((t for t in tests if not t.slow), key=lambda t: -t.seconds)[:args.top]
    console.print(table("slowest tests not marked slow", ("test", "s", "outcome"),
                        [(t.nodeid, f"{t.seconds:.1f}", t.outcome) for t in fast]))
    if args.json:
        write_json(args.json, {"pytest_args": pytest_args, "wall_s": round(wall, 1), "exit_code": int(code),
                               "tests": [asdict(t) for t in tests]})
    return int(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
