"""Shared entry point of the example scripts and ``make demo``."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import hybrid
from hybrid import report
from hybrid.cli import build_with_progress
from interop.targets import TARGETS, current_gpu_target  # noqa: F401  (re-exported for bench/ and tests/)
from scheduler import Cache, plan

#: Example module -> its mixed kernel (signature and layouts come from the module's defaults):
#: Gluon hosts with Triton regions, then Triton hosts with Gluon regions.
#: (The kernel suite, ``bench/kernels.py``, has more: the bf16 matmuls and attention need their own
#: launch options, which the build planner does not take from a module.)
EXAMPLES = {"examples.softmax": "softmax_kernel", "examples.tile_matmul": "matmul_kernel",
            "examples.softmax_gluon_stats": "softmax_kernel", "examples.matmul_gluon_epilogue": "matmul_kernel",
            "examples.memcpy": "copy_kernel", "examples.strided_copy": "transpose_copy_kernel",
            "examples.layernorm": "layernorm_kernel", "examples.mma_handoff": "mma_kernel",
            "examples.tma_stage": "stage_kernel",
            "examples.matmul": "matmul_kernel", "examples.attention": "attention_kernel"}


def example_modules() -> list:
    import importlib
    return [importlib.import_module(name) for name in EXAMPLES]


def check(example, target: str, interpreted: bool = False) -> float:
    """Run ``example``'s hybrid kernel once per case on fresh random inputs, on the current GPU or
    in the interpreter; returns its largest error against the reference (NaN if an element was
    not written)."""
    import contextlib

    device = "cpu" if interpreted else "cuda"
    errors = []
    for case in getattr(example, "CASES", [{}]):
        p = example.problem(*example.CHECK_SIZE, **case, device=device)
        with hybrid.interpreting(target) if interpreted else contextlib.nullcontext():
            errors.append(example.error(example.run("hybrid", p, target), p))
    return next((e for e in errors if e != e), max(errors))


def _arguments(args: tuple[str, ...]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m examples.run", description=(
        "Build the example mixed kernels for every target, print the per-region report and write "
        "build/demo.json ($HYBRID_DEMO_JSON); then run each on this GPU, or in the interpreter without one."))
    parser.add_argument("modules", nargs="*", metavar="MODULE", help="example modules (default: all): "
                        + ", ".join(EXAMPLES))
    parser.add_argument("--wide", action="store_true", help="every boundary on its own line")
    parsed = parser.parse_args(args)
    parsed.modules = [m if m != "__main__" else _script_module() for m in parsed.modules] or list(EXAMPLES)
    unknown = [m for m in parsed.modules if m not in EXAMPLES]
    if unknown:
        parser.error(f"not an example module: {', '.join(unknown)} (choose from {', '.join(EXAMPLES)})")
    return parsed


def main(*args: str) -> int:
    """Build the examples ``args`` name (all without any) for every target, print the table and
    write the JSON, then check each; the last line sums it up."""
    start = time.perf_counter()
    parsed = _arguments(args)
    wide, modules = parsed.wide, parsed.modules
    results = build_with_progress(plan([f"{m}:{EXAMPLES[m]}" for m in modules], "all"), hybrid.compile, cache=Cache())
    summaries = [{**(r.summary if r.ok else {"kernel": r.job.kernel.rpartition(":")[2], "target": r.job.target, "error": r.error}),
                  "module": module.removeprefix("examples.")}
                 for r in results for module in [r.job.kernel.rpartition(":")[0]]]
    report.print_table(summaries, wide=wide)
    out = Path(os.environ.get("HYBRID_DEMO_JSON", "build/demo.json"))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summaries, indent=1))
    print(f"wrote {out}", flush=True)
    failed = [r for r in results if not r.ok]
    gpu = current_gpu_target()
    if gpu is None:
        print("no supported GPU here: built every target; checking each example in the interpreter instead", flush=True)
    import importlib
    checks = []
    for module in modules:
        example = importlib.import_module(module)
        for target in [gpu] if gpu else list(TARGETS):
            error = check(example, target, interpreted=gpu is None)
            ok = error <= example.TOLERANCE
            where = f"on {gpu}" if gpu else f"in the interpreter for {target}"
            print(f"{module} {where}: max error {error:.2e} ({'ok' if ok else 'FAILED'})", flush=True)
            checks.append(ok)
            failed += [] if ok else [f"{module} ({target})"]
    built = sum(r.ok for r in results)
    print(f"demo: {len(modules)} kernels x {len(TARGETS)} targets: {built} of {len(results)} built "
          f"({sum(r.status == 'cached' for r in results)} from the cache), {sum(checks)} of {len(checks)} checks "
          f"passed {f'on {gpu}' if gpu else 'in the interpreter'}, {time.perf_counter() - start:.0f} s"
          + ("" if not failed else "; FAILED"))
    return 1 if failed else 0


def _script_module() -> str:
    return "examples." + Path(sys.argv[0]).stem


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
