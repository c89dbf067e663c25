"""The kernel suite: each example kernel in its versions (hybrid, pure Gluon where written, pure
Triton, torch).

    python bench/kernels.py [--targets sm90a,gfx942] [--kernels memcpy,attention] [--json PATH] [--markdown PATH]

Everywhere: static figures of every build for every target where the kernel exists (registers,
spills, shared memory, layout conversions in all and at the boundaries, binary size); a kernel
that does not exist for a target (``SKIP`` in its module) gets a row saying why. On a GPU also,
per kernel and case: a correctness check of every version on fresh random inputs, then
``triton.testing.do_bench`` medians (``ROUNDS`` of them per version, round-robin: their mean is the
time, their spread the noise), throughput, and the goals: each module's ``GOALS`` (speed of the
hybrid kernel relative to a version, e.g. 0.9 of torch's device-to-device copy) and, for every
hybrid kernel, at least 0.98x the faster of its pure versions; a goal is met within the noise.
Writes JSON and a Markdown table.
"""
from __future__ import annotations

import argparse
import datetime
import gc
import importlib
import os
import statistics
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from bench.output import attempt, flagged, write_json  # noqa: E402
from examples.run import current_gpu_target  # noqa: E402
from interop.instrumentation.resources import resources  # noqa: E402
from interop.targets import TARGETS  # noqa: E402

#: The suite, by kernel family: copies, row reductions, matmuls (and a shared-memory handoff), attention.
SUITE = ("memcpy", "strided_copy", "softmax", "softmax_gluon_stats", "layernorm", "tma_stage", "tile_matmul",
         "matmul_gluon_epilogue", "mma_handoff", "matmul", "matmul_wgmma", "attention")
PURE = ("gluon", "triton")
#: Every hybrid kernel: at least this fraction of the speed of the faster of its pure versions.
PURE_GOAL = 0.98
#: Timings of each version per case (``do_bench`` medians, round-robin); their spread is the noise.
ROUNDS = 2
STATIC_COLUMNS = ("example", "case", "target", "variant", "registers", "spills", "shared B", "convert_layout",
                  "boundary cvt", "boundary smem B", "binary B")
GPU_COLUMNS = ("example", "case", "size", "variant", "max error", "median ms", "throughput", "speedup of hybrid",
               "goal")


def load(names) -> list:
    return [importlib.import_module(f"examples.{name}") for name in names]


def variants(example) -> tuple:
    return getattr(example, "VARIANTS", ("hybrid", "triton", "torch"))


def cases(example) -> list[dict]:
    """Each case is its own specialization (keyword arguments of ``build``/``problem``)."""
    return getattr(example, "CASES", [{}])


def case_label(case: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in case.items())


def static_rows(examples, targets: list[str]) -> list[dict]:
    rows = []
    for example in examples:
        for target in targets:
            reason = getattr(example, "SKIP", {}).get(target)
            if reason:
                rows.append({"example": _name(example), "case": "", "target": target, "variant": "hybrid",
                             "skipped": reason})
                continue
            for case in cases(example):
                key = {"example": _name(example), "case": case_label(case), "target": target}
                fb = example.build(target, **case)
                rows.append({**key, "variant": "hybrid", **resources(fb.asm, fb.metadata),
                             "boundary_conversions": sum(b.conversions for b in fb.boundaries),
                             "boundary_shared_bytes": sum(b.shared_bytes for b in fb.boundaries),
                             "boundaries": len(fb.boundaries), "regions": [r.function for r in fb.regions]})
                for variant in PURE:
                    if variant in variants(example):
                        plain = getattr(example, f"build_{variant}")(target, **case)
                        rows.append({**key, "variant": variant, **resources(plain.asm, plain.metadata)})
    return rows


def gpu_rows(examples, target: str) -> list[dict]:
    import torch
    rows = []
    for example in examples:
        reason = getattr(example, "SKIP", {}).get(target)
        if reason:
            rows.append({"example": _name(example), "case": "", "size": [], "variant": "hybrid", "skipped": reason})
            continue
        for case in cases(example):
            p = example.problem(*example.BENCH_SIZE, **case)
            group = []
            for variant in variants(example):
                measured, failed = attempt(_measure, example, variant, p, target)
                error, ms = measured or (float("nan"), None)
                group.append({"example": _name(example), "case": case_label(case), "size": list(example.BENCH_SIZE),
                              "variant": variant, "error": error, "correct": ms is not None,
                              "times_ms": [] if ms is None else [ms], **({"failed": failed} if failed else {})})
            for _ in range(ROUNDS - 1):   # round-robin, so that drift reaches every version alike
                for r in group:
                    if r["times_ms"]:
                        r["times_ms"].append(_time(example, r["variant"], p, target))
            for r in group:
                r["median_ms"] = statistics.mean(r["times_ms"]) if r["times_ms"] else None
                r.update(_throughput(example, case, r["median_ms"]))
            rows += judge(group, getattr(example, "GOALS", {}))
            del p
            torch.cuda.empty_cache()
    return rows


def _measure(example, variant: str, p, target: str) -> tuple[float, float | None]:
    """The version's largest error on ``p``, and its median time where that error is within tolerance."""
    error = example.error(example.run(variant, p, target), p)
    return error, _time(example, variant, p, target) if error <= example.TOLERANCE else None


def _time(example, variant: str, p, target: str) -> float:
    from triton.testing import do_bench
    return do_bench(lambda: example.run(variant, p, target), return_mode="median")


def judge(group: list[dict], goals: dict) -> list[dict]:
    """Speedup of the hybrid kernel over each version (that version's time / hybrid time) and the
    goals: ``goals[variant]`` for that version, ``PURE_GOAL`` against the faster pure version.
    A goal is met within the group's noise: the largest spread between the rounds of one
    version's timings (``ROUNDS``), as two timings of one binary differ by that much."""
    times = {r["variant"]: r["median_ms"] for r in group}
    noise = max((max(r["times_ms"]) / min(r["times_ms"]) - 1 for r in group if r.get("times_ms")), default=0.0)
    hybrid_ms = times.get("hybrid")
    for r in group:
        r["hybrid_speedup"] = r["median_ms"] / hybrid_ms if r["median_ms"] and hybrid_ms else None
        if r["variant"] in goals:
            r["goal"] = goals[r["variant"]]
    pure = [times[v] for v in PURE if times.get(v)]
    for r in group:
        if r["variant"] == "hybrid" and pure:   # vs the faster pure version; a failed hybrid kernel misses it
            r["goal"], r["hybrid_speedup"] = PURE_GOAL, min(pure) / hybrid_ms if hybrid_ms else None
        if "goal" in r:
            r["noise"] = noise
            r["meets_goal"] = r["hybrid_speedup"] is not None and r["hybrid_speedup"] >= r["goal"] - noise
    return group


def _throughput(example, case: dict, ms: float | None) -> dict:
    if not ms or not hasattr(example, "work"):
        return {}
    amount, unit = example.work(*example.BENCH_SIZE, **case)
    scale, name = (1e9, "GB/s") if unit == "B" else (1e12, "TFLOP/s")
    return {"throughput": amount / (ms * 1e-3) / scale, "throughput_unit": name}


def environment() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    from interop.triton import compat
    env = {"date": datetime.date.today().isoformat(), "triton": compat.TRITON_VERSION}
    try:
        env["torch"] = version("torch")
        import torch
        if torch.cuda.is_available():
            env["gpu"] = torch.cuda.get_device_name(0)
            env["cuda"] = torch.version.cuda or torch.version.hip
            env["driver"] = _driver_version()
    except (PackageNotFoundError, ImportError):
        env["torch"] = None
    return env


def _driver_version() -> str | None:
    for command in (["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                    ["rocm-smi", "--showdriverversion", "--csv"]):
        try:
            out = subprocess.run(command, capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            continue
        if out:
            return out.splitlines()[-1].split(",")[-1].strip()
    return None


def static_cells(r: dict) -> list[str]:
    if "skipped" in r:
        return [r["example"], r["case"], r["target"], "-", f"skipped: {r['skipped']}", "", "", "", "", "", ""]
    return [r["example"], r["case"], r["target"], r["variant"], str(r["registers"]), str(r["spills"]),
            str(r["shared_bytes"]), str(r["conversions"]), str(r.get("boundary_conversions", "")),
            str(r.get("boundary_shared_bytes", "")), str(r["binary_bytes"])]


def gpu_cells(r: dict) -> list[str]:
    if "skipped" in r:
        return [r["example"], r["case"], "", "-", f"skipped: {r['skipped']}", "", "", "", ""]
    speed, goal = r.get("hybrid_speedup"), r.get("goal")
    verdict = "" if goal is None else (f">= {goal} " + ("ok" if r.get("meets_goal") else "MISSED")
                                       + f" (noise {100 * r.get('noise', 0):.1f}%)")
    return [r["example"], r["case"], "x".join(map(str, r["size"])), r["variant"],
            f"FAILED: {r['failed']}" if "failed" in r else f"{r['error']:.1e}" + ("" if r["correct"] else " WRONG"),
            f"{r['median_ms']:.4f}" if r["median_ms"] else "-",
            f"{r['throughput']:.1f} {r['throughput_unit']}" if "throughput" in r else "",
            f"{speed:.3f}" if speed else "-", verdict]


def markdown(result: dict) -> str:
    """The tables for ``bench/RESULTS.md``, headed by where and with what they were measured."""
    env = result["environment"]
    lines = [f"{env['date']}, {env.get('gpu', 'no GPU')}" + (f" (driver {env['driver']}, CUDA/HIP {env['cuda']})"
                                                             if env.get("gpu") else "")
             + f", Triton {env['triton']}, torch {env.get('torch')}.", ""]

    def table(columns, cell_rows):
        out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        return out + ["| " + " | ".join(cells) + " |" for cells in cell_rows] + [""]

    if "gpu" in result:
        lines += table(GPU_COLUMNS, [gpu_cells(r) for r in result["gpu"]])
        lines += ["Speedup of hybrid: that version's time / the hybrid kernel's time; on the hybrid row, the faster "
                  f"pure version's (goal >= {PURE_GOAL}).", ""]
    lines += table(STATIC_COLUMNS, [static_cells(r) for r in result["static"]])
    return "\n".join(lines)


def print_tables(result: dict, console: Console) -> None:
    def rich_table(title, columns, cell_rows):
        out = Table(title=title)
        for column in columns:
            out.add_column(column)
        for cells in cell_rows:
            out.add_row(*map(flagged, cells))
        console.print(out)

    rich_table("static figures per target and version", STATIC_COLUMNS, [static_cells(r) for r in result["static"]])
    if "gpu" in result:
        env = result["environment"]
        rich_table(f"GPU time on {env.get('gpu')} ({result['target']}), mean of {ROUNDS} do_bench medians", GPU_COLUMNS,
                   [gpu_cells(r) for r in result["gpu"]])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--kernels", default=",".join(SUITE), help="example modules (names under examples/)")
    parser.add_argument("--json", default="bench/kernels.json")
    parser.add_argument("--markdown", default=None, help="default: the JSON path with .md")
    args = parser.parse_args(argv)
    examples = load(args.kernels.split(","))
    console = Console(width=160)
    gpu = current_gpu_target()
    result = {"environment": environment(), "target": gpu,
              "static": static_rows(examples, args.targets.split(","))}
    failed = False
    if gpu is not None:
        result["gpu"] = gpu_rows(examples, gpu)
        failed = not all(r["correct"] for r in result["gpu"] if "skipped" not in r)
    print_tables(result, console)
    if gpu is None:
        console.print("no supported GPU here: static figures only")
    write_json(args.json, result)
    md = Path(args.markdown or Path(args.json).with_suffix(".md"))
    md.write_text(markdown(result))
    print(f"wrote {md}")
    gc.collect()   # IR objects in reference cycles must go before the interpreter tears nanobind down
    return 1 if failed else 0


def _name(example) -> str:
    return example.__name__.split(".")[-1]


if __name__ == "__main__":
    raise SystemExit(main())
