"""Reading a Proton trace: ``hybrid.profile`` on synthetic traces of growing size, up to ~100 MB.

    python bench/trace_analysis.py [--mb 1,3,10,30,100] [--shapes proton,overlapping] [--json PATH]

Each trace is written in Proton's instrumentation format as ``hybrid.profile.read_trace`` reads
it (a ``<kernel> Core<sm> CTA<cta>`` process per CTA, a ``warp <w> (line <l>)`` lane per warp,
complete events in microseconds at 1 GHz, flow markers and Proton's call-path lane besides).
Every warp of every CTA of every launch runs a region once per loop iteration, then a region
holding a nested one. Two shapes: ``proton``, launches 10M cycles apart as Proton writes them,
and ``overlapping``, every launch from cycle 0 on the same lanes (one kernel span over another:
the case that made the analysis quadratic). Per trace, in a fresh process each:
``read_trace`` and ``analyze`` timed with their peak RSS, and the CLI's path (``python -m
hybrid.cli profile --trace``, start-up and table included) timed with its peak RSS. Wall
seconds with CPU seconds beside them (on a shared machine the CPU time is the steadier figure).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402

from bench.kernels import environment  # noqa: E402
from bench.output import table, write_json  # noqa: E402

KERNEL = "bench_kernel"
CTAS, WARPS, ITERATIONS = 8, 4, 8
LAUNCH_GAP = 10_000_000   # cycles between launches in Proton's trace writer
BYTES_PER_LAUNCH = 70_000   # about: CTAS x WARPS lanes of ITERATIONS + 3 scope events and a flow marker


def write_trace(path: Path, launches: int, shape: str, seed: int = 0) -> int:
    """A trace of ``launches`` launches; the number of scope events it holds."""
    rng = random.Random(seed)
    count = 0
    with path.open("w") as out:
        out.write('{"displayTimeUnit": "ns", "traceEvents": [{"name": "call path", "cat": "call_path", "ph": "X", '
                  '"pid": "Kernel Call Path", "tid": "path 0", "ts": 0, "dur": 5}')
        for launch in range(launches):
            base = launch * LAUNCH_GAP if shape == "proton" else 0
            for cta in range(CTAS):
                pid = f"{KERNEL} Core{cta % 4} CTA{cta}"
                for warp in range(WARPS):
                    scopes, t = [], base + rng.randrange(0, 500)
                    start = t
                    t += rng.randrange(50, 300)
                    for _ in range(ITERATIONS):
                        cycles = rng.randrange(100, 900)
                        scopes.append(("r0:row_stats", 1, t, cycles))
                        t += cycles + rng.randrange(10, 60)
                    outer = rng.randrange(2000, 4000)
                    scopes += [("r1:epilogue", 2, t, outer), ("r2:helper", 3, t + 50, rng.randrange(100, outer - 100))]
                    t += outer + rng.randrange(20, 200)
                    scopes.append(("kernel", 0, start, t - start))
                    for name, line, begin, cycles in scopes:
                        out.write(f', {{"name": "{name}", "cat": "{KERNEL}", "ph": "X", "pid": "{pid}", '
                                  f'"tid": "warp {warp} (line {line})", "ts": {begin / 1000}, "dur": {cycles / 1000}, '
                                  '"args": {"Frequency (MHz)": 1000.0}}')
                    out.write(f', {{"name": "r0:row_stats", "cat": "flow", "ph": "X", "pid": "{pid}", '
                              f'"tid": "warp {warp} (line 0)", "ts": {start / 1000}, "dur": 0, "bind_id": 1}}')
                    count += len(scopes)
        out.write("]}\n")
    return count


def measure_in_process(path: str) -> dict:
    """Run in a fresh process: ``read_trace`` and ``analyze`` timed (wall and CPU seconds: on a
    shared machine the CPU time is the steadier figure), and the process's peak RSS above what
    it held after its imports."""
    from hybrid import profile
    before = _peak_mb(resource.RUSAGE_SELF)
    clocks = [(time.perf_counter(), time.process_time())]
    events = profile.read_trace(path)
    clocks.append((time.perf_counter(), time.process_time()))
    kernels = profile.analyze(events)
    clocks.append((time.perf_counter(), time.process_time()))
    assert kernels and kernels[0].warps == len([e for e in events if e.scope == "kernel"])
    (wall0, cpu0), (wall1, cpu1), (wall2, cpu2) = clocks
    return {"read_s": wall1 - wall0, "read_cpu_s": cpu1 - cpu0, "analyze_s": wall2 - wall1,
            "analyze_cpu_s": cpu2 - cpu1, "peak_mb": _peak_mb(resource.RUSAGE_SELF) - before}


def _peak_mb(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1024   # KiB on Linux


def _child(argv: list[str]) -> tuple[float, float, float, str]:
    """Wall seconds, CPU seconds, peak RSS (MB) and stdout of ``python argv`` in the project."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *argv], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    stdout = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {stdout[-2000:]}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, stdout


def row(mb: float, shape: str, folder: Path) -> dict:
    path = folder / f"{shape}-{mb}.chrome_trace"
    events = write_trace(path, max(1, round(mb * 1e6 / BYTES_PER_LAUNCH)), shape)
    size = path.stat().st_size / 1e6
    *_, stdout = _child([__file__, "--measure", str(path)])
    measured = json.loads(stdout.strip().splitlines()[-1])
    cli_s, cli_cpu_s, cli_mb, _ = _child(["-m", "hybrid.cli", "profile", "--trace", str(path), "-o",
                                          str(folder / "out")])
    path.unlink()
    result = {"shape": shape, "events": events, "mb": round(size, 1), **measured, "cli_s": cli_s,
              "cli_cpu_s": cli_cpu_s, "cli_peak_mb": cli_mb,
              "analyze_cpu_us_per_event": measured["analyze_cpu_s"] / events * 1e6}
    print(json.dumps(result), flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", default="1,3,10,30,100", help="trace sizes to generate, MB")
    parser.add_argument("--shapes", default="proton,overlapping")
    parser.add_argument("--json", default="bench/trace_analysis.json")
    parser.add_argument("--measure", help=argparse.SUPPRESS)   # the child's side of a row
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure_in_process(args.measure)))
        return
    with tempfile.TemporaryDirectory(prefix="hybrid-trace-bench-") as folder:
        rows = [row(float(mb), shape, Path(folder)) for shape in args.shapes.split(",") for mb in args.mb.split(",")]
    Console(width=160).print(table(
        "Reading a Proton trace: hybrid.profile.read_trace + analyze, and hybrid profile --trace",
        ("shape", "scope events", "MB", "read s (CPU)", "analyze s (CPU)", "analyze µs/event (CPU)", "peak MB",
         "CLI s (CPU)", "CLI peak MB"),
        ([r["shape"], str(r["events"]), f"{r['mb']:.1f}", f"{r['read_s']:.2f} ({r['read_cpu_s']:.2f})",
          f"{r['analyze_s']:.2f} ({r['analyze_cpu_s']:.2f})", f"{r['analyze_cpu_us_per_event']:.2f}",
          f"{r['peak_mb']:.0f}", f"{r['cli_s']:.2f} ({r['cli_cpu_s']:.2f})", f"{r['cli_peak_mb']:.0f}"]
         for r in rows)))
    write_json(args.json, {"environment": environment(), "rows": rows})


if __name__ == "__main__":
    main()
