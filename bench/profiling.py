"""What per-region profiling costs: instrumented builds against plain ones, per example.

    python bench/profiling.py [--targets all] [--json PATH]

Each example's hybrid kernel is built plain and as a Proton-instrumented launch builds it (a
scope per region instance and one around the kernel, ``interop.instrumentation.instrument``). Static figures
from the binaries, for every target: machine instructions, registers, shared memory (Proton's
per-warp record buffer), binary size. On a GPU each example also runs profiled (checked against
its reference, per-region shares from the trace) and is timed plain and profiled (the median
of ``LAUNCHES`` / ``PROFILED_LAUNCHES`` launches), two ways: the kernel's own time on the device
(CUPTI's records, read through ``torch.profiler``), and the launch's between CUDA events, which
holds Proton's per-launch host work (its records' copy to the host and their parsing: 30 ms to
1.4 s a launch on an H100 with Triton 3.6, by grid size) and so says what a profiled launch costs
its caller, nothing about the kernel. Goal (GPU): the kernel's profiled / plain device time at
most 1.05.
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console  # noqa: E402

from bench.kernels import environment  # noqa: E402
from bench.output import attempt, flagged, table, write_json  # noqa: E402
from examples.run import current_gpu_target, example_modules  # noqa: E402
from hybrid import profile  # noqa: E402
from hybrid.attribution import kernel_instructions  # noqa: E402
from interop.instrumentation.resources import resources  # noqa: E402
from interop.targets import TARGETS  # noqa: E402
from interop.instrumentation import instrument
from interop.errors import SharedMemoryError  # noqa: E402

GOAL = 1.05   # profiled / plain time, at most
LAUNCHES = 50   # timed plain launches per example
#: Timed profiled launches per example: each adds its records to Proton's trace, and on an H200
#: (Triton 3.6) 51 launches of a 4096-CTA grid took about a minute to finalize and read.
PROFILED_LAUNCHES = 5
STATIC = ("instructions", "registers", "shared_bytes", "binary_bytes")


def _figures(fb) -> dict:
    used = resources(fb.asm, fb.metadata)
    return {"instructions": kernel_instructions(fb.assembly, fb.name), **{k: used[k] for k in STATIC[1:]}}


def static_row(example, target: str) -> dict:
    name = example.__name__.rpartition(".")[2]
    reason = getattr(example, "SKIP", {}).get(target)
    if reason:
        return {"example": name, "target": target, "skipped": reason}
    plain = example.build(target)
    try:
        with instrument.forced():
            profiled = example.build(target)
    except SharedMemoryError as exc:   # Proton's record buffer is in shared memory too
        return {"example": name, "target": target, "skipped": f"profiled build: {str(exc).splitlines()[0]}"}
    return {"example": name, "target": target, "scopes": profiled.scopes,
            "plain": _figures(plain), "profiled": _figures(profiled)}


def median_ms(launch, launches: int = LAUNCHES) -> float:
    """The median of ``launches`` launches, each timed with device events, after one warm-up.
    A fixed count: every profiled launch adds to Proton's trace, and ``do_bench`` repeats a short
    kernel thousands of times (seen on an H200: over 300 s of trace handling for the suite)."""
    import torch
    launch()
    torch.cuda.synchronize()
    times = []
    for _ in range(launches):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        launch()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def timed(launch, launches: int, kernel: str) -> tuple[float, float | None]:
    """``median_ms`` of the launches, and the median of ``kernel``'s own device time in them
    (CUPTI's kernel records through ``torch.profiler``; None where it recorded none of them)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile as torch_profile
    with torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as recorded:
        launch_ms = median_ms(launch, launches)
    kernel_us = [e.time_range.elapsed_us() for e in recorded.events()
                 if e.device_type == DeviceType.CUDA and e.name == kernel]
    return launch_ms, statistics.median(kernel_us) / 1e3 if kernel_us else None


def gpu_row(example, target: str, folder: Path) -> dict:
    import torch
    name = example.__name__.rpartition(".")[2]
    case = getattr(example, "CASES", [{}])[0]
    p = example.problem(*example.BENCH_SIZE, **case)
    kernel = example.build(target).name
    plain_ms, plain_device_ms = timed(lambda: example.run("hybrid", p, target), LAUNCHES, kernel)
    with profile.profiling(folder / name) as measured:
        error = example.error(example.run("hybrid", p, target), p)
        profiled_ms, profiled_device_ms = timed(lambda: example.run("hybrid", p, target), PROFILED_LAUNCHES, kernel)
    shares = {s.scope: s.share for k in measured.kernels for s in k.scopes if s.kind != "kernel"}
    p = None   # free the inputs before the next example
    torch.cuda.empty_cache()
    ratio = profiled_device_ms / plain_device_ms if plain_device_ms and profiled_device_ms else None
    print(f"{name}: kernel {plain_device_ms} -> {profiled_device_ms} ms on the device, launch {plain_ms:.4f} -> "
          f"{profiled_ms:.4f} ms", flush=True)
    return {"example": name, "correct": error <= example.TOLERANCE, "plain_ms": plain_ms, "profiled_ms": profiled_ms,
            "plain_device_ms": plain_device_ms, "profiled_device_ms": profiled_device_ms, "ratio": ratio,
            "launch_ratio": profiled_ms / plain_ms, "meets_goal": ratio is not None and ratio <= GOAL,
            "shares": shares}


def print_tables(result: dict, console: Console) -> None:
    console.print(table("Per-region instrumentation, static cost (plain -> profiled)", ("example", "target", "scopes",
                                                                                         *STATIC),
                        ([r["example"], r["target"], f"skipped: {r['skipped']}", *[""] * len(STATIC)] if "skipped" in r
                         else [r["example"], r["target"], str(len(r["scopes"])),
                               *(f"{r['plain'][k]} -> {r['profiled'][k]}" for k in STATIC)]
                         for r in result["static"])))
    if "gpu" in result:
        console.print(table(f"GPU time, median of {LAUNCHES} plain / {PROFILED_LAUNCHES} profiled launches "
                            f"({result['environment'].get('gpu')}), goal: kernel profiled/plain <= {GOAL}",
                            GPU_COLUMNS, ([flagged(c) for c in gpu_cells(r)] for r in result["gpu"])))


GPU_COLUMNS = ("example", "kernel ms plain", "kernel ms profiled", "ratio", "goal", "launch ms plain -> profiled",
               "region shares")


def gpu_cells(r: dict) -> list[str]:
    """A GPU row's cells: the kernel's device times and their ratio (the goal's), then the launch's."""
    if "failed" in r:
        return [r["example"], f"FAILED: {r['failed']}", "", "", "", "", ""]
    ms = lambda value: "-" if value is None else f"{value:.4f}"   # noqa: E731
    return [r["example"], ms(r["plain_device_ms"]), ms(r["profiled_device_ms"]),
            "-" if r["ratio"] is None else f"{r['ratio']:.3f}",
            ("met" if r["meets_goal"] else "MISSED" if r["ratio"] else "no device time")
            + ("" if r["correct"] else " WRONG"),
            f"{r['plain_ms']:.4f} -> {r['profiled_ms']:.4f}",
            ", ".join(f"{k} {100 * v:.0f}%" for k, v in r["shares"].items())]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--examples", default=None, help="example names separated by ',' (default: all)")
    parser.add_argument("--json", default="bench/profiling.json")
    args = parser.parse_args(argv)
    targets = list(TARGETS) if args.targets == "all" else args.targets.split(",")
    examples = [e for e in example_modules()
                if args.examples is None or e.__name__.rpartition(".")[2] in args.examples.split(",")]
    result = {"environment": environment(), "static": [static_row(e, t) for t in targets for e in examples]}
    gpu = current_gpu_target()
    if gpu is not None:
        result["target"] = gpu
        with tempfile.TemporaryDirectory() as folder:
            result["gpu"] = [row or {"example": e.__name__.rpartition(".")[2], "correct": False, "failed": failed}
                             for e in examples if gpu not in getattr(e, "SKIP", {})
                             for row, failed in [attempt(gpu_row, e, gpu, Path(folder))]]
    console = Console(width=180)
    print_tables(result, console)
    if gpu is None:
        console.print("no supported GPU here: static figures only")
    write_json(args.json, result)
    gc.collect()
    return 1 if gpu is not None and not all(r["correct"] for r in result["gpu"]) else 0


if __name__ == "__main__":
    raise SystemExit(main())
