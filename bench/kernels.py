"""Each example kernel in its versions: hybrid (Gluon + Triton regions), pure Triton, torch.

    python bench/kernels.py [--targets sm90a,gfx942] [--json PATH]

Everywhere: static figures of the hybrid and the pure-Triton build for every target
(registers, spills, shared memory, layout conversions, binary size). On a GPU also: a
correctness check of every version on fresh random inputs, then ``triton.testing.do_bench``
medians. Goal on a GPU: the hybrid kernel at least as fast as pure Triton (speedup >= 1.0).
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
from pathlib import Path

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from bench.output import write_json  # noqa: E402
from examples.run import current_gpu_target, example_modules  # noqa: E402
from hybrid.resources import resources  # noqa: E402
from hybrid.targets import TARGETS  # noqa: E402

VARIANTS = ("hybrid", "triton", "torch")
GOAL = 1.0   # pure-Triton time / hybrid time


def static_rows(targets: list[str]) -> list[dict]:
    rows = []
    for example in example_modules():
        for target in targets:
            fb, plain = example.build(target), example.build_triton(target)
            rows.append({"example": _name(example), "target": target, "variant": "hybrid",
                         **resources(fb.asm, fb.metadata),
                         "boundary_conversions": sum(b.conversions for b in fb.boundaries)})
            rows.append({"example": _name(example), "target": target, "variant": "triton",
                         **resources(plain.asm, plain.metadata)})
    return rows


def gpu_rows(target: str) -> list[dict]:
    from triton.testing import do_bench
    rows = []
    for example in example_modules():
        p = example.problem(*example.BENCH_SIZE)
        times = {}
        for variant in VARIANTS:
            error = example.error(example.run(variant, p, target), p)
            ok = error <= example.TOLERANCE
            times[variant] = do_bench(lambda: example.run(variant, p, target), return_mode="median") if ok else None
            rows.append({"example": _name(example), "size": list(example.BENCH_SIZE), "variant": variant,
                         "error": error, "correct": ok, "median_ms": times[variant]})
        hybrid_ms = times["hybrid"]
        for row in rows[-len(VARIANTS):]:
            row["hybrid_speedup"] = row["median_ms"] / hybrid_ms if row["median_ms"] and hybrid_ms else None
    return rows


def environment() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    from interop import compat
    env = {"triton": compat.TRITON_VERSION}
    try:
        env["torch"] = version("torch")
        import torch
        if torch.cuda.is_available():
            env["gpu"] = torch.cuda.get_device_name(0)
            env["cuda"] = torch.version.cuda or torch.version.hip
    except (PackageNotFoundError, ImportError):
        env["torch"] = None
    return env


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--json", default="bench/kernels.json")
    args = parser.parse_args(argv)
    console = Console(width=140)
    result = {"environment": environment(), "static": static_rows(args.targets.split(","))}
    table = Table(title="static figures per target (hybrid vs pure Triton)")
    for column in ("example", "target", "variant", "registers", "spills", "shared B", "convert_layout",
                   "boundary cvt", "binary B"):
        table.add_column(column)
    for r in result["static"]:
        table.add_row(r["example"], r["target"], r["variant"], str(r["registers"]), str(r["spills"]),
                      str(r["shared_bytes"]), str(r["conversions"]), str(r.get("boundary_conversions", "")),
                      str(r["binary_bytes"]))
    console.print(table)
    gpu = current_gpu_target()
    failed = False
    if gpu is not None:
        result["gpu"] = gpu_rows(gpu)
        table = Table(title=f"GPU time on {result['environment'].get('gpu')} ({gpu}), do_bench median "
                            f"(speedup = time / hybrid time; goal: pure Triton >= {GOAL})")
        for column in ("example", "size", "variant", "error", "median ms", "speedup of hybrid"):
            table.add_column(column)
        for r in result["gpu"]:
            speed = r["hybrid_speedup"]
            color = "green" if speed is None or r["variant"] != "triton" or speed >= GOAL else "red"
            table.add_row(r["example"], "x".join(map(str, r["size"])), r["variant"],
                          f"{r['error']:.1e}" + ("" if r["correct"] else " WRONG"),
                          f"{r['median_ms']:.4f}" if r["median_ms"] else "-",
                          f"[{color}]{speed:.3f}[/]" if speed else "-")
        console.print(table)
        failed = not all(r["correct"] for r in result["gpu"])
    else:
        console.print("no supported GPU here: static figures only")
    write_json(args.json, result)
    gc.collect()   # IR objects in reference cycles must go before the interpreter tears nanobind down
    return 1 if failed else 0


def _name(example) -> str:
    return example.__name__.split(".")[-1]


if __name__ == "__main__":
    raise SystemExit(main())
