"""Build scaling: the examples for every target, serial vs parallel and cold vs warm cache; on a
GPU also the launch overhead of a bundled kernel against the same kernel through ``kernel[grid]``.

    python bench/build_scaling.py [--repeats N] [--targets all] [--workers N] [--json PATH]

Cold builds use an empty build cache and TRITON_ALWAYS_COMPILE=1 (Triton's cache bypassed).
Serial builds run in this process after a warm-up compile; parallel builds start a fresh forked
pool each time (its start-up counted). Warm builds find every job in the cache.
Goals: warm >= 50x faster than the faster cold build; parallel >= 1.7x faster than serial (2 cores);
bundled launch overhead no worse than Triton's launcher.
"""
from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ["TRITON_ALWAYS_COMPILE"] = "1"
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

import hybrid  # noqa: E402
from bench.output import write_json  # noqa: E402
from examples.run import EXAMPLES, current_gpu_target  # noqa: E402
from scheduler import Cache, InlineExecutor, build, plan  # noqa: E402

GOALS = {"warm_speedup": 50.0, "parallel_speedup": 1.7, "launch_ratio": 1.0}


def timed_build(jobs, cache: Cache, **kwargs) -> float:
    start = time.perf_counter()
    results = build(jobs, hybrid.compile, cache=cache, **kwargs)
    seconds = time.perf_counter() - start
    failed = [r.error for r in results if not r.ok]
    if failed:
        raise SystemExit(f"build failed: {failed}")
    return seconds


def median_seconds(run, repeats: int) -> float:
    return statistics.median(run() for _ in range(repeats))


def build_times(jobs, repeats: int, workers: int) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="build-scaling-"))
    fresh = itertools.count()
    timed_build(jobs[:1], Cache(tmp / "warmup"), executor=InlineExecutor())   # imports, backends, lazy init
    serial = median_seconds(lambda: timed_build(jobs, Cache(tmp / f"c{next(fresh)}"), executor=InlineExecutor()), repeats)
    parallel = median_seconds(lambda: timed_build(jobs, Cache(tmp / f"c{next(fresh)}"), max_workers=workers), repeats)
    warm_cache = Cache(tmp / "warm")
    timed_build(jobs, warm_cache, executor=InlineExecutor())
    warm = median_seconds(lambda: timed_build(jobs, warm_cache), repeats)
    return {"serial_cold_s": serial, "parallel_cold_s": parallel, "warm_s": warm, "workers": workers,
            "parallel_speedup": serial / parallel, "warm_speedup": min(serial, parallel) / warm}


def launch_overhead(repeats: int, launches: int = 2000) -> dict | None:
    """Microseconds per launch of a tiny softmax, bundled vs ``kernel[grid]`` (None without a GPU)."""
    target = current_gpu_target()   # None without torch or a GPU
    if target is None:
        return None
    import torch

    from examples import softmax
    from scheduler.bundle import write_bundles

    results = build(plan(["examples.softmax:softmax_kernel"], [target]), hybrid.compile, executor=InlineExecutor())
    bundled = hybrid.load_bundle(write_bundles(results, tempfile.mkdtemp())["softmax_kernel"])
    x = torch.randn(16, 97, device="cuda")
    y = torch.empty_like(x)
    consts = softmax.constexprs(target)
    launchers = {
        "bundled": lambda: bundled[(1, )](x, y, 16, 97, x.stride(0)),
        "triton": lambda: softmax.softmax_kernel[(1, )](x, y, 16, 97, x.stride(0), num_warps=softmax.NUM_WARPS, **consts),
    }

    def per_launch(launch) -> float:
        launch()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(launches):
            launch()
        torch.cuda.synchronize()
        return (time.perf_counter() - start) / launches * 1e6

    us = {name: median_seconds(lambda: per_launch(launch), repeats) for name, launch in launchers.items()}
    return {"bundled_us": us["bundled"], "triton_us": us["triton"], "launch_ratio": us["bundled"] / us["triton"],
            "device": torch.cuda.get_device_name()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--targets", default="all")
    parser.add_argument("--examples", default=",".join(EXAMPLES), help="example modules")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--json", default="bench/build_scaling.json")
    args = parser.parse_args(argv)
    jobs = plan([f"{m}:{EXAMPLES[m]}" for m in args.examples.split(",")], args.targets)
    result = {"jobs": len(jobs), "repeats": args.repeats, "cpus": os.cpu_count(), "goals": GOALS,
              **build_times(jobs, args.repeats, args.workers), "launch": launch_overhead(args.repeats)}

    def verdict(name: str, value: float, better_low: bool = False) -> str:
        ok = value <= GOALS[name] if better_low else value >= GOALS[name]
        return f"[{'green' if ok else 'red'}]{value:.2f}x[/] (goal {'<=' if better_low else '>='} {GOALS[name]}x)"

    table = Table(title=f"build scaling: {len(jobs)} jobs, median of {args.repeats}, {result['workers']} workers")
    table.add_column("measure")
    table.add_column("value")
    table.add_row("serial cold build (in-process)", f"{result['serial_cold_s']:.2f} s")
    table.add_row(f"parallel cold build ({result['workers']} forked workers)", f"{result['parallel_cold_s']:.2f} s")
    table.add_row("warm build (all cache hits)", f"{result['warm_s'] * 1000:.1f} ms")
    table.add_row("parallel speedup", verdict("parallel_speedup", result["parallel_speedup"]))
    table.add_row("warm speedup (vs faster cold)", verdict("warm_speedup", result["warm_speedup"]))
    launch = result["launch"]
    if launch is None:
        table.add_row("launch overhead", "no GPU here: not measured")
    else:
        table.add_row(f"launch: bundled / kernel[grid] on {launch['device']}",
                      f"{launch['bundled_us']:.1f} / {launch['triton_us']:.1f} us: "
                      + verdict("launch_ratio", launch["launch_ratio"], better_low=True))
    Console(width=120).print(table)
    write_json(args.json, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
