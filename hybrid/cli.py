"""``hybrid build``: mixed kernels -> one fused binary per target -> bundles, in parallel, cached.

    hybrid build examples/softmax.py:softmax_kernel --target sm90a --target gfx942 -o dist/
    hybrid build pkg.kernels:my_kernel --targets all --signature x_ptr=*fp32,n=i32 --constexpr BLOCK=256

Values the command line cannot spell (layouts) come from the module's ``constexprs(target)``.
``hybrid report`` prints per-region figures; ``hybrid profile`` times each region on a GPU
(``hybrid.profile``); ``hybrid port start`` begins porting one function (``hybrid.port``).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

import hybrid
from interop.targets import TARGETS
from scheduler import Cache, build, plan
from scheduler.bundle import write_bundles
from scheduler.planning import resolve

from . import report, report_html


def assignments(items: list[str], parse_value) -> dict:
    """``["a=1,b=2", "c=3"]`` -> ``{"a": parse_value("1"), ...}``."""
    out = {}
    for item in (part for arg in items for part in arg.split(",") if part):
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {item!r}")
        out[name.strip()] = parse_value(value.strip())
    return out


def json_or_text(value: str):
    """``64`` -> 64, ``true`` -> True, ``0.5`` -> 0.5; anything else stays a string."""
    try:
        return json.loads(value)
    except ValueError:
        return value


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="hybrid", description="triton-hybrid: mixed Triton/Gluon kernels")
    commands = top.add_subparsers(dest="command", required=True)
    b = commands.add_parser("build", help="build kernels for GPU targets into bundles",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _job_arguments(b)
    b.add_argument("-o", "--out", default="dist", help="bundle folder (default: dist/)")
    b.add_argument("--archive", action="store_true", help="one zip archive per kernel instead of a folder")
    b.add_argument("-j", "--jobs", type=int, help="worker processes (default: one per core)")
    b.add_argument("--cache-dir", help="build cache (default: $HYBRID_CACHE_DIR or ~/.cache/triton-hybrid)")
    b.add_argument("--no-cache", action="store_true", help="build everything, read and write no cache")
    r = commands.add_parser("report", help="per-region static report of mixed kernels (table + JSON)",
                            description="Per region: ttgir ops and machine instructions (attributed by source "
                                        "line), shared memory, boundaries; per kernel: registers, spills, shared "
                                        "memory. Example: hybrid report examples/softmax.py:softmax_kernel --target sm90a")
    _job_arguments(r)
    r.add_argument("--json", default="build/report.json", help="where to write the data (default: build/report.json)")
    r.add_argument("--timing", action="store_true", help="also print where each compile's time went, per stage")
    r.add_argument("--wide", action="store_true", help="every boundary on its own line (wider than 100 columns)")
    r.add_argument("--html", metavar="FILE", help="also write a self-contained HTML page with bar charts: each "
                                                  "region's share of instructions and shared memory, per target")
    pr = commands.add_parser("profile", help="per-region cycles of the mixed kernels a script launches (GPU)",
                             description="Runs a script under Proton's intra-kernel instrumentation with a scope per "
                                         "region, then prints each region's cycles per warp (median, p90), calls and "
                                         "share of kernel time, and writes JSON and Proton's Chrome trace (Perfetto). "
                                         "With --trace, reads a trace taken before (no GPU needed). Example: hybrid "
                                         "profile examples/softmax.py -- --rows 4096")
    pr.add_argument("script", nargs="?", help="a Python script that launches hybrid kernels")
    pr.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments for the script (after --)")
    pr.add_argument("--loops", choices=["total", "iteration"], default="total",
                    help="a region in a pipelined loop: time the loop whole (total, default) or every iteration")
    pr.add_argument("-o", "--out", default="build/profile",
                    help="output name: <out>.chrome_trace and <out>.json (default: build/profile)")
    pr.add_argument("--trace", help="analyze this Proton Chrome trace instead of running a script")
    port = commands.add_parser("port", help="port a Triton kernel to Gluon one function at a time")
    steps = port.add_subparsers(dest="step", required=True)
    s = steps.add_parser("start", help="write a first Gluon version of one @triton.jit function and its compare test",
                         description="Translates one @triton.jit function that a kernel calls into a @gluon.jit "
                                     "function (upstream's translator, layouts valid for the target) and writes a "
                                     "pytest file comparing the kernel with and without it. Example: hybrid port start "
                                     "examples/softmax.py:row_stats --target sm90a --kernel softmax_triton")
    s.add_argument("function", metavar="MODULE:FUNCTION", help="path/to/module.py:fn or package.module:fn")
    s.add_argument("--target", required=True, choices=list(TARGETS), help="the GPU the port's layouts are for")
    s.add_argument("--kernel", help="the kernel that calls it, which the test runs (default: the module's only one)")
    s.add_argument("--num-warps", type=int, default=4, help="warps the port's layouts are for (default: 4)")
    s.add_argument("--translator", action="store_true",
                   help="write upstream's translation (one layout per rank) even where the port from Triton's IR serves")
    s.add_argument("-o", "--out", default="ports", help="folder for the port and its test (default: ports/)")
    st = steps.add_parser("status", help="which of a kernel's functions are still Triton, each one's instructions",
                          description="Builds the kernel as its module's run() launches it on problem(*CHECK_SIZE) "
                                      "and lists every JIT function it reaches, Triton or Gluon, with the machine "
                                      "instructions its source lines account for. Example: hybrid port status "
                                      "examples/softmax.py:softmax_triton --target sm90a")
    st.add_argument("kernel", metavar="MODULE:KERNEL", help="path/to/module.py:kernel or package.module:kernel")
    st.add_argument("--target", required=True, choices=list(TARGETS))
    return top


def _job_arguments(p: argparse.ArgumentParser) -> None:
    """What names a job: kernels, targets, signature, constexprs, options."""
    p.add_argument("kernels", nargs="+", metavar="MODULE:KERNEL",
                   help="path/to/module.py:kernel or package.module:kernel")
    p.add_argument("--target", action="append", default=[], help=f"one of {', '.join(TARGETS)} (repeatable)")
    p.add_argument("--targets", help="'all' or a comma-separated list")
    p.add_argument("--signature", action="append", default=[], metavar="NAME=TYPE",
                   help="argument types, e.g. x_ptr=*fp32,n=i32 (over the module's SIGNATURE)")
    p.add_argument("--constexpr", action="append", default=[], metavar="NAME=VALUE",
                   help="compile-time values, JSON or text (over the module's constexprs(target))")
    p.add_argument("--num-warps", type=int)
    p.add_argument("--num-stages", type=int)


def report_table(rep: dict, wide: bool = False) -> Table:
    """One row per region and bucket; a region's boundaries summed up (count, conversions, bytes
    through shared memory), or with ``wide`` one line each."""
    totals = rep["totals"]
    config = f" ({rep['config']})" if "config" in rep else ""
    table = report.narrow_table(f"{rep['kernel']} on {rep['target']}{config}: {totals['instructions']} instructions, "
                                f"{totals['registers']} registers, {totals['spills']} spilled, "
                                f"{totals['shared_bytes']} B shared", None if wide else report.COLUMNS)
    for column in ("region", "language", "ttgir ops", "instructions", "share", "own shared B"):
        table.add_column(column, overflow="fold", justify="left" if column in ("region", "language") else "right")
    for column in ("boundaries",) if wide else ("bnd", "cvt", "bnd B"):
        table.add_column(column, overflow="fold", justify="left" if wide else "right")
    for row in rep["rows"]:
        share = f"{100 * row['instructions'] / totals['instructions']:.0f}%" if totals["instructions"] else "-"
        boundaries = row.get("boundaries", [])
        if wide:
            crossing = ["\n".join(report.boundary_line(b) for b in boundaries)]
        else:
            crossing = [str(v) for v in report.boundary_totals(boundaries).values()] if "language" in row else []
        table.add_row(row["bucket"], row.get("language", ""), str(row["ttgir_ops"]), str(row["instructions"]), share,
                      str(row.get("shared_bytes", "")), *crossing)
    return table


def results_table(results: list) -> Table:
    configured = any(r.job.config is not None for r in results)
    table = report.narrow_table("hybrid build", "#i: the kernel's autotune config i (its key and values: the "
                                                "bundle's manifest)" if configured else None)
    for column in ("kernel", "target", "status", "s", "binary B", "shared B", "regs", "spills", "sha256"):
        table.add_column(column, overflow="fold")
    for r in results:
        name = r.job.kernel.rpartition(":")[2] + ("" if r.job.config is None else f" #{r.job.config}")
        if not r.ok:
            table.add_row(name, r.job.target, "[red]failed[/red]", f"{r.seconds:.2f}", *[""] * 5)
            continue
        launch = r.entry.record["launch"]
        status = {"cached": "[green]cached[/green]", "rebuilt": "[yellow]rebuilt[/yellow]"}.get(r.status, r.status)
        table.add_row(name, r.job.target, status, f"{r.seconds:.2f}", str(len(r.entry.binary)), str(launch["shared"]),
                      str(launch["registers"] if launch["registers"] is not None else "?"),
                      str(launch["spills"] if launch["spills"] is not None else "?"), r.entry.sha256[:12])
    return table


def main(argv: list[str] | None = None) -> int:
    cli = parser()
    args = cli.parse_args(argv)
    # Kernel modules resolve from the working directory, as under ``python -m``: a console script's
    # sys.path starts at its own folder, so ``examples/softmax.py`` could not import ``examples.*``.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    if args.command == "port":
        step = _port_start if args.step == "start" else _port_status
        return step(args, Console(width=140))
    if args.command == "profile":
        return _profile(args, cli, Console(width=140))
    try:
        jobs = plan(args.kernels, args.targets or args.target, assignments(args.signature, str),
                    assignments(args.constexpr, json_or_text),
                    {k: v for k, v in (("num_warps", args.num_warps), ("num_stages", args.num_stages)) if v is not None})
    except (ValueError, argparse.ArgumentTypeError) as exc:
        cli.error(str(exc))
    if args.command == "report":
        return _report(jobs, args, report.console(args.wide))
    out = Console(width=report.WIDTH)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True)) as progress:
        task = progress.add_task("building", total=len(jobs))
        results = build(jobs, hybrid.compile, cache=None if args.no_cache else Cache(args.cache_dir),
                        max_workers=args.jobs,
                        on_result=lambda r: progress.update(task, advance=1, description=escape(r.job.label)))
    out.print(results_table(results))
    for r in results:
        if not r.ok:
            out.print(f"[red]FAILED[/red] {escape(r.error)}", highlight=False, soft_wrap=True)
        elif r.note:
            out.print(escape(f"{r.job.label}: {r.note}"), soft_wrap=True)
    for kernel, path in write_bundles(results, args.out, args.archive).items():
        out.print(f"bundle {kernel}: {escape(str(path))}", soft_wrap=True)
    return 1 if any(not r.ok for r in results) else 0


def _report(jobs: list, args, out: Console) -> int:
    reports = []
    for job in jobs:
        spec = resolve(job)
        fb = hybrid.compile(spec.fn, spec.signature, spec.constexprs, target=job.target, **spec.options)
        rep = fb.report()
        if spec.config is not None:
            rep["config"] = spec.config_json["key"]
        out.print(report_table(rep, args.wide))
        if args.timing:
            out.print(report.timing_table(fb.timing, f"{fb.name} on {fb.target}: compile time per stage"))
            rep["timing"] = fb.timing.to_json()
        reports.append(rep)
    outputs = {args.json: json.dumps(reports, indent=1)}
    if args.html:
        outputs[args.html] = report_html.page(reports)
    for path, text in outputs.items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
        out.print(f"wrote {escape(path)}", highlight=False, soft_wrap=True)
    return 0


def _profile(args, cli: argparse.ArgumentParser, out: Console) -> int:
    from . import profile
    from .report import profile_table
    path = Path(args.out).with_suffix(".json")
    path.parent.mkdir(parents=True, exist_ok=True)
    if args.trace:
        trace, kernels = args.trace, profile.analyze(profile.read_trace(args.trace))
    else:
        if not args.script:
            cli.error("profile needs a script to run, or --trace FILE")
        import torch
        if not torch.cuda.is_available():
            out.print(f"hybrid profile: no GPU here, so {escape(args.script)} cannot run. The static per-region "
                      "report needs none: hybrid report MODULE:KERNEL --target ...; a trace taken on a GPU can be "
                      "read here: hybrid profile --trace FILE.chrome_trace", highlight=False)
            return 2
        import runpy
        argv, sys.argv = sys.argv, [args.script] + [a for a in args.script_args if a != "--"]
        try:
            with profile.profiling(args.out, loops=args.loops) as measured:
                runpy.run_path(args.script, run_name="__main__")
        finally:
            sys.argv = argv
        trace, kernels = str(measured.trace), measured.kernels
    for kernel in kernels:
        out.print(profile_table(kernel))
    if not kernels:
        out.print("no hybrid kernel with region scopes ran (was it launched through @hybrid.jit?)")
    path.write_text(json.dumps(profile.to_json(kernels, trace, None if args.trace else args.loops), indent=1))
    out.print(f"wrote {path}; trace (Perfetto, chrome://tracing): {trace}", soft_wrap=True)
    return 0 if kernels else 1


def _port_start(args, out: Console) -> int:
    from hybrid.port import PortError, start
    try:
        files = start(args.function, args.target, args.kernel, Path(args.out), args.num_warps, args.translator)
    except PortError as exc:
        out.print(f"[red]hybrid port start:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        return 1
    how = ("from the IR Triton's passes produced for its call (same machine code once swapped in)"
           if files.method == "ir" else f"translated by upstream's translator (layouts to tune by hand), since "
                                        f"{files.translated_because}")
    out.print(f"wrote {files.port}: {files.function} as a @gluon.jit function for {files.target} "
              f"(num_warps={files.num_warps}), {how}", highlight=False, soft_wrap=True)
    inputs = ("inputs from the module's problem() and run()" if files.inputs == "problem"
              else "fill in its inputs() first")
    out.print(f"wrote {files.test}: compares {files.kernel} with and without it ({inputs})",
              highlight=False, soft_wrap=True)
    if files.still_triton:
        out.print(f"still Triton inside the port: {', '.join(files.still_triton)}", highlight=False, soft_wrap=True)
    out.print(f"run: {files.command}", highlight=False, soft_wrap=True)
    return 0


def _port_status(args, out: Console) -> int:
    from hybrid.port import PortError
    from hybrid.port.scaffold import load
    from hybrid.port.status import status
    module_ref, _, name = args.kernel.rpartition(":")
    try:
        if not module_ref or not name:
            raise PortError(f"{args.kernel!r}: expected path/to/module.py:kernel or package.module:kernel")
        found = status(load(module_ref), name, args.target)
    except PortError as exc:
        out.print(f"[red]hybrid port status:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        return 1
    table = Table(title=f"{found.kernel} on {found.target}: {found.instructions} instructions")
    for column in ("function", "language", "lines", "instructions", "share"):
        table.add_column(column, justify="right" if column in ("instructions", "share") else "left")
    for f in found.functions:
        table.add_row(f.function, f.language if f.language == "gluon" else "triton (to port)", f.where,
                      str(f.instructions), f"{f.instructions / max(found.instructions, 1):.0%}")
    table.add_row("other (library code, constants, conversions)", "", "", str(found.unattributed),
                  f"{found.unattributed / max(found.instructions, 1):.0%}")
    out.print(table)
    left = [f.function for f in found.functions if f.language == "triton"]
    out.print("all Gluon: the kernel builds as a plain @gluon.jit kernel" if not left else
              f"still Triton: {', '.join(left)} (hybrid port start MODULE:FUNCTION --target {found.target})",
              highlight=False, soft_wrap=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
