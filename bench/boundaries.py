"""Boundary planning: the planner's choice against forced alternatives, per boundary shape and layout pair.

    python bench/boundaries.py [--targets all] [--cases NAME;NAME] [--tiles N] [--json PATH]

For every case of ``bench/boundary_cases.py`` and every target the kernel is built three ways:
``auto`` (the planner: the cheaper modelled way that adds no shared memory), ``convert`` (every
boundary conversion left to Triton: registers,
shuffles or a round trip through scratch) and ``shared`` (every one handed off through a planned
shared buffer). Static figures come from the binaries: shared memory, barriers, shared-memory
stores and loads, shuffles, and the planner's modelled cost. On a GPU each is also checked
against torch and timed (``do_bench`` median over ``--tiles`` tiles, one CTA each).
Goal (GPU): the planner's choice is never slower than the best forced alternative by more than 2%.
"""
from __future__ import annotations

import argparse
import gc
import os
import re
import sys
from pathlib import Path

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console  # noqa: E402
from rich.markup import escape  # noqa: E402

import hybrid  # noqa: E402
from bench import boundary_cases  # noqa: E402
from bench.kernels import environment  # noqa: E402
from bench.output import attempt, table, write_json  # noqa: E402
from examples.run import current_gpu_target  # noqa: E402
from interop.targets import TARGETS  # noqa: E402

MODES = ("auto", "convert", "shared")
GOAL = 1.02   # auto / best forced alternative, at most
_PATTERNS = {   # per assembly kind: barriers, shared stores, shared loads, shuffles
    "ptx": (r"\bbar\.sync|\bbarrier\.sync", r"\bst\.shared|\bstmatrix", r"\bld\.shared|\bldmatrix", r"\bshfl\.sync"),
    "amdgcn": (r"\bs_barrier\b", r"\bds_write", r"\bds_read", r"\bds_bpermute|\bds_swizzle|\bv_permlane|_dpp\b"),
}


def static_row(case: dict, target: str, mode: str) -> dict:
    fb = boundary_cases.build(case, target, mode)
    kind = "ptx" if "ptx" in fb.asm else "amdgcn"
    counts = [len(re.findall(p, fb.assembly)) for p in _PATTERNS[kind]]
    return {"case": case["name"], "target": target, "mode": mode, "shared_bytes": fb.metadata["shared"],
            "barriers": counts[0], "shared_stores": counts[1], "shared_loads": counts[2], "shuffles": counts[3],
            "model_cost": sum(b.cost for b in fb.boundaries),
            "handoffs": sum(b.handoff == "shared" for b in fb.boundaries),
            "choice": "; ".join(f"{b.direction}{b.index}: {b.reason}" for b in fb.boundaries if b.cost)}


def _measure(case: dict, mode: str, x, tiles: int) -> float | None:
    """The median time of ``case`` built in ``mode``, or None where its output is wrong."""
    import torch
    from triton.testing import do_bench
    m, n = case["shape"]
    y, z = torch.empty_like(x), torch.empty(tiles, n, m, device="cuda", dtype=x.dtype)
    with hybrid.boundary_mode(mode):
        boundary_cases.launch(case, x, y, z, tiles)
        correct = torch.equal(y, x * 2) and (case["readers"] == 1 or torch.equal(z, (x * 2).transpose(1, 2)))
        return do_bench(lambda: boundary_cases.launch(case, x, y, z, tiles), return_mode="median") if correct else None


def gpu_rows(cases: list[dict], tiles: int) -> list[dict]:
    import torch
    rows = []
    for case in cases:
        m, n = case["shape"]
        dtype = {"fp32": torch.float32, "fp16": torch.float16}[case["dtype"]]
        x = torch.randn(tiles, m, n, device="cuda", dtype=dtype)
        times = {}
        for mode in MODES:
            times[mode], failed = attempt(_measure, case, mode, x, tiles)
            rows.append({"case": case["name"], "mode": mode, "correct": times[mode] is not None,
                         "median_ms": times[mode], **({"failed": failed} if failed else {})})
        forced = [times[m] for m in ("convert", "shared") if times[m] is not None]
        ratio = times["auto"] / min(forced) if times["auto"] and forced else None
        for row in rows[-len(MODES):]:
            row.update(auto_vs_best_forced=ratio, meets_goal=ratio is not None and ratio <= GOAL)
        torch.cuda.empty_cache()
    return rows


def print_tables(result: dict, console: Console) -> None:
    console.print(table("Boundary planning: static figures per mode (auto = the planner's choice)",
                        ("case", "target", "mode", "smem B", "barriers", "st.shared", "ld.shared", "shuffles",
                         "model cost", "handoffs"),
                        ([r["case"], r["target"], r["mode"], *(str(r[k]) for k in (
                            "shared_bytes", "barriers", "shared_stores", "shared_loads", "shuffles", "model_cost",
                            "handoffs"))] for r in result["static"])))
    if "gpu" in result:
        console.print(table(f"GPU time, do_bench median ({result['environment'].get('gpu')}), goal auto <= "
                            f"{GOAL:.2f}x the best forced alternative",
                            ("case", "mode", "correct", "median ms", "auto / best forced", "goal"),
                            ([r["case"], r["mode"],
                              escape(f"FAILED: {r['failed']}") if "failed" in r else str(r["correct"]),
                              f"{r['median_ms']:.4f}" if r["median_ms"] else "-",
                              f"{r['auto_vs_best_forced']:.3f}" if r["auto_vs_best_forced"] else "-",
                              "met" if r["meets_goal"] else "MISSED"] for r in result["gpu"])))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--cases", default=None, help="case names separated by ';' (default: all)")
    parser.add_argument("--tiles", type=int, default=4096, help="tiles (CTAs) per timed launch on a GPU")
    parser.add_argument("--json", default="bench/boundaries.json")
    args = parser.parse_args(argv)
    targets = list(TARGETS) if args.targets == "all" else args.targets.split(",")
    names = args.cases.split(";") if args.cases else None
    result = {"environment": environment(), "static": [static_row(case, target, mode) for target in targets
                                                       for case in boundary_cases.cases(target, names)
                                                       for mode in MODES]}
    gpu = current_gpu_target()
    if gpu is not None:
        result["target"] = gpu
        result["gpu"] = gpu_rows(boundary_cases.cases(gpu, names), args.tiles)
    console = Console(width=180)
    print_tables(result, console)
    if gpu is None:
        console.print("no supported GPU here: static figures only")
    write_json(args.json, result)
    gc.collect()   # IR objects in reference cycles must go before the interpreter tears nanobind down
    return 1 if gpu is not None and not all(r["correct"] for r in result["gpu"]) else 0


if __name__ == "__main__":
    raise SystemExit(main())
