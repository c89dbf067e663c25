"""hybrid build: mixed kernels -> one fused binary per target -> bundles, in parallel, cached.

    hybrid build examples/softmax.py:softmax_kernel --target sm90a --target gfx942 -o dist/
    hybrid build mykern.py:k --signature x_ptr=*fp32,n=i32 --constexpr 'L=gl.BlockedLayout([1],[32],[4],[0])'

Without --target/--targets every target is built. Types and values not given come from the
module: SIGNATURE (a dict), constexprs(target) or constexprs(target, kernel), options(target).
'hybrid report' prints per-region figures; 'hybrid profile' times each region on a GPU;
'hybrid port start' begins porting one function; 'hybrid keygen KEY' makes a key pair for
'hybrid build --sign KEY'.

A mistake in the command or its inputs is one line, 'hybrid: error: ...', exit status 2, and
is found before any build starts; --debug shows the traceback instead.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

import hybrid
from interop.entry import constexpr_text, request
from interop.targets import TARGETS
from interop.triton.frontend import CompilationError
from scheduler import Cache, build, plan
from scheduler.bundle import BundleError, write_bundles
from scheduler.planning import load_module, resolve

from . import report, report_html


def assignments(items: list[str], parse_value) -> dict:
    """``["a=1,b=2", "c=3"]`` -> ``{"a": parse_value("1"), ...}`` (commas inside brackets do not split)."""
    out = {}
    for item in (part for arg in items for part in constexpr_text.split_assignments(arg)):
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {item!r}")
        out[name.strip()] = parse_value(value.strip())
    return out


class UserError(Exception):
    """A mistake in the command line or its inputs: one line on stderr, exit status 2."""


#: Exceptions that describe the user's input (a module, a kernel, a path, a value), reported as one
#: line; anything else is a bug in triton-hybrid, reported as one line that asks for ``--debug``.
USER_ERRORS = (UserError, argparse.ArgumentTypeError, ValueError, LookupError, ImportError, SyntaxError, OSError,
               CompilationError, BundleError)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        raise UserError(f"{message} (see `{self.prog} --help`)")


def positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number of worker processes, got {value!r}")
    return number


def parser() -> argparse.ArgumentParser:
    top = _Parser(prog="hybrid", description="triton-hybrid: mixed Triton/Gluon kernels")
    top.add_argument("--debug", action="store_true", help="show the traceback of an error (anywhere on the line)")
    commands = top.add_subparsers(dest="command", required=True)
    b = commands.add_parser("build", help="build kernels for GPU targets into bundles",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _job_arguments(b)
    b.add_argument("-o", "--out", default="dist", help="bundle folder (default: dist/)")
    b.add_argument("--archive", action="store_true", help="one zip archive per kernel instead of a folder")
    b.add_argument("-j", "--jobs", type=positive_int, help="worker processes (default: one per core)")
    b.add_argument("--cache-dir", help="the build and region caches (default: $HYBRID_CACHE_DIR or "
                                       "~/.cache/triton-hybrid)")
    b.add_argument("--sign", metavar="KEY", help="sign each bundle with this ed25519 private key (hybrid keygen)")
    b.add_argument("--no-cache", action="store_true", help="build everything, read and write no cache")
    r = commands.add_parser("report", help="per-region static report of mixed kernels (table; JSON, HTML on request)",
                            description="Per region: ttgir ops and machine instructions (attributed by source "
                                        "line), shared memory, boundaries; per kernel: registers, spills, shared "
                                        "memory. Example: hybrid report examples/softmax.py:softmax_kernel --target sm90a")
    _job_arguments(r)
    r.add_argument("--json", metavar="FILE", help="also write the data as JSON to FILE")
    r.add_argument("--timing", action="store_true", help="also print where each compile's time went, per stage")
    r.add_argument("--wide", action="store_true", help="every boundary on its own line (wider than 100 columns)")
    r.add_argument("--html", metavar="FILE", help="also write a self-contained HTML page: the source coloured by "
                                                  "region with instructions per line, bar charts per target, each "
                                                  "boundary's layouts drawn before and after, and what it costs")
    r.add_argument("--baseline", metavar="KERNEL", help="the all-Triton version of the kernel, in the same module: "
                                                        "built alike and shown beside it (table and HTML)")
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
                         description="Writes one @triton.jit function that a kernel calls as a @gluon.jit function "
                                     "from the TritonGPU IR Triton's passes produced for that call (the kernel built "
                                     "as its module's run() launches it, or with --signature/--constexpr), so that "
                                     "swapped in it gives the same machine code; where that cannot serve, it says why and "
                                     "writes nothing (--translator: upstream's translation instead). Also writes a pytest file comparing the kernel with and "
                                     "without it. Example: hybrid port start examples/softmax.py:row_stats --target "
                                     "sm90a --kernel softmax_triton")
    s.add_argument("function", metavar="MODULE:FUNCTION", help="path/to/module.py:fn or package.module:fn")
    s.add_argument("--target", required=True, choices=list(TARGETS), help="the GPU the port's layouts are for")
    s.add_argument("--kernel", help="the kernel that calls it, which the test runs (default: the module's only one)")
    s.add_argument("--num-warps", type=int, default=4, help="warps the port's layouts are for (default: 4)")
    _kernel_arguments(s)
    s.add_argument("--translator", action="store_true",
                   help="write upstream's translation (one layout per rank: correct, not the kernel's machine code) "
                        "instead of the port from Triton's IR")
    s.add_argument("-o", "--out", default="ports", help="folder for the port and its test (default: ports/)")
    st = steps.add_parser("status", help="which of a kernel's functions are still Triton, each one's instructions",
                          description="Builds the kernel as its module's run() launches it on problem(*CHECK_SIZE) "
                                      "and lists every JIT function it reaches, Triton or Gluon, with the machine "
                                      "instructions its source lines account for. Example: hybrid port status "
                                      "examples/softmax.py:softmax_triton --target sm90a")
    st.add_argument("kernel", metavar="MODULE:KERNEL", help="path/to/module.py:kernel or package.module:kernel")
    st.add_argument("--target", required=True, choices=list(TARGETS))
    _kernel_arguments(st)
    k = commands.add_parser("keygen", help="make an ed25519 key pair for signing bundles",
                            description="Writes KEY (the private key, PEM, readable by you only) and KEY.pub (the "
                                        "public key to list in load_bundle(..., trusted_keys=[...])). Example: "
                                        "hybrid keygen ~/.config/triton-hybrid/team.key")
    k.add_argument("key", metavar="KEY", help="where to write the private key (the public one goes to KEY.pub)")
    return top


def _kernel_arguments(p: argparse.ArgumentParser) -> None:
    """How ``hybrid port`` builds the kernel when its module has no ``problem()``/``run()``."""
    p.add_argument("--signature", action="append", default=[], metavar="NAME=TYPE",
                   help="the kernel's argument types, e.g. x_ptr=*fp32,n=i32 (over the module's SIGNATURE): with "
                        "--constexpr, the kernel is built from these instead of its module's problem()/run()")
    p.add_argument("--constexpr", action="append", default=[], metavar="NAME=VALUE",
                   help="the kernel's compile-time values, as for hybrid build (over the module's constexprs(target))")
    p.add_argument("--num-stages", type=int, help="the kernel's num_stages (default: the module's or Triton's)")


def _given(args):
    from hybrid.port.launch import Given
    return Given(assignments(args.signature, str), assignments(args.constexpr, constexpr_text.job_value),
                 {} if args.num_stages is None else {"num_stages": args.num_stages})


def _job_arguments(p: argparse.ArgumentParser) -> None:
    """What names a job: kernels, targets, signature, constexprs, options."""
    p.add_argument("kernels", nargs="+", metavar="MODULE:KERNEL",
                   help="path/to/module.py:kernel or package.module:kernel")
    p.add_argument("--target", action="append", default=[],
                   help=f"one of {', '.join(TARGETS)} (repeatable; default: all of them)")
    p.add_argument("--targets", help="'all' (the default) or a comma-separated list")
    p.add_argument("--signature", action="append", default=[], metavar="NAME=TYPE",
                   help="argument types, e.g. x_ptr=*fp32,n=i32 (over the module's SIGNATURE)")
    p.add_argument("--constexpr", action="append", default=[], metavar="NAME=VALUE",
                   help="compile-time values over the module's constexprs(target): numbers, text, lists, "
                        "Gluon dtypes and layouts as in a kernel, e.g. 'L=gl.BlockedLayout([1],[32],[4],[0])'")
    p.add_argument("--num-warps", type=int)
    p.add_argument("--num-stages", type=int)


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


def check_jobs(jobs) -> None:
    """What the command line gave, checked as ``hybrid.compile`` checks it (``interop.entry.request``)
    before anything builds: targets, options, constexpr values (a usage error, not a failed build)."""
    for job in jobs:
        target = request.check_target(job.target)
        request.check_options(job.options, target)
        for name, value in job.constexprs.items():
            request.check_constexpr_value(name, value)


def main(argv: list[str] | None = None) -> int:
    """The ``hybrid`` command. A user error is one line on stderr and exit status 2 (``SystemExit``);
    with ``--debug`` (anywhere before a ``--``) its traceback instead."""
    argv = list(sys.argv[1:] if argv is None else argv)
    ours = argv[:argv.index("--")] if "--" in argv else argv
    debug = "--debug" in ours
    if debug:
        argv.remove("--debug")
    try:
        return _run(parser().parse_args(argv))
    except KeyboardInterrupt:
        print("hybrid: interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    except Exception as exc:   # noqa: BLE001 (every error ends here: one line, or the traceback with --debug)
        if debug:
            traceback.print_exc()
            raise SystemExit(2 if isinstance(exc, USER_ERRORS) else 1) from None
        print(f"hybrid: error: {_one_line(exc)}", file=sys.stderr)
        raise SystemExit(2 if isinstance(exc, USER_ERRORS) else 1) from None


def _one_line(exc: BaseException) -> str:
    text = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip()) or type(exc).__name__
    if isinstance(exc, USER_ERRORS):
        return text
    return f"{type(exc).__name__}: {text} (a bug in triton-hybrid: run again with --debug for the traceback)"


def _run(args) -> int:
    # Kernel modules resolve from the working directory, as under ``python -m``: a console script's
    # sys.path starts at its own folder, so ``examples/softmax.py`` could not import ``examples.*``.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    check_arguments(args)
    if args.command == "keygen":
        return _keygen(args, Console(width=140))
    if args.command == "port":
        step = _port_start if args.step == "start" else _port_status
        return step(args, Console(width=140))
    if args.command == "profile":
        return _profile(args, Console(width=140))
    try:
        jobs = plan(args.kernels, args.targets or args.target or "all", assignments(args.signature, str),
                    assignments(args.constexpr, constexpr_text.job_value),
                    {k: v for k, v in (("num_warps", args.num_warps), ("num_stages", args.num_stages)) if v is not None})
        check_jobs(jobs)
    except (ValueError, argparse.ArgumentTypeError) as exc:
        raise UserError(str(exc)) from None
    if args.command == "report":
        return _report(jobs, args, report.console(args.wide))
    key = None
    if args.sign:
        from scheduler.signing import private_key
        key = private_key(args.sign)
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
    for kernel, path in write_bundles(results, args.out, args.archive, key).items():
        out.print(f"bundle {kernel}: {escape(str(path))}" + (" (signed)" if key else ""), soft_wrap=True)
    return 1 if any(not r.ok for r in results) else 0


# -- arguments, checked before any work starts ------------------------------------------------------
def check_arguments(args) -> None:
    """Raise ``UserError`` for the first argument that cannot work: output paths under a file or
    naming a folder, kernel modules that do not load, kernels that are not there or share a
    name (bundles are named by kernel), a signing key that does not load, a trace or script that
    is not there."""
    if args.command == "build":
        _folder_path("-o/--out", args.out)
        if args.cache_dir:
            _folder_path("--cache-dir", args.cache_dir)
        if args.sign:
            from scheduler.signing import private_key
            private_key(args.sign)
    elif args.command == "report":
        for flag, path in (("--json", args.json), ("--html", args.html)):
            if path:
                _file_path(flag, path)
    elif args.command == "profile":
        _file_path("-o/--out", str(Path(args.out).with_suffix(".json")))
        if args.trace and not Path(args.trace).is_file():
            raise UserError(f"--trace {args.trace}: no such file")
        if not args.trace and not args.script:
            raise UserError("profile needs a script to run, or --trace FILE")
        if not args.trace and not Path(args.script).is_file():
            raise UserError(f"no script at {args.script}")
    elif args.command == "keygen":
        _file_path("KEY", args.key)
        if os.path.lexists(args.key):
            raise UserError(f"{args.key} exists; a key is never overwritten (choose another name)")
    if args.command in ("build", "report"):
        _check_kernels(args.kernels)


def _check_kernels(refs: list[str]) -> None:
    """Every kernel loads and is a JIT kernel, and no two share a name."""
    seen: dict[str, str] = {}
    for ref in refs:
        module_ref, _, name = ref.rpartition(":")
        if not module_ref or not name:
            raise UserError(f"kernel reference {ref!r}: expected 'path/to/module.py:kernel' or 'package.module:kernel'")
        if name in seen:
            raise UserError(f"two kernels named '{name}' ({seen[name]} and {ref}): each bundle is named by its "
                            "kernel, so build them separately (-o to different folders)")
        seen[name] = ref
        try:
            module = load_module(ref)
        except SyntaxError as exc:
            raise UserError(f"{ref}: syntax error in {exc.filename}:{exc.lineno}: {exc.msg}") from None
        except ImportError as exc:
            raise UserError(f"{ref}: cannot import {module_ref}: {exc}") from None
        except OSError as exc:
            raise UserError(f"{ref}: {exc}") from None
        except Exception as exc:   # the module's own code failed while it was imported
            raise UserError(f"{ref}: importing {module_ref} raised {type(exc).__name__}: {exc}") from None
        kernel = getattr(module, name, None)
        if not any(hasattr(k, "arg_names") for k in (kernel, getattr(kernel, "fn", None))):   # JIT, or autotuned
            found = sorted(n for n, v in vars(module).items() if hasattr(v, "arg_names") and not n.startswith("_"))
            raise UserError(f"{ref}: no JIT kernel named '{name}' in {module_ref}"
                            + (f" (it has: {', '.join(found)})" if found else ""))


def _folder_path(flag: str, path: str) -> None:
    """A folder to create or reuse: not a file, and not under one."""
    if Path(path).exists() and not Path(path).is_dir():
        raise UserError(f"{flag} {path}: a file is there; expected a folder")
    _no_file_above(flag, Path(path))


def _file_path(flag: str, path: str) -> None:
    """A file to write: not a folder, and not under a file."""
    if Path(path).is_dir():
        raise UserError(f"{flag} {path}: is a folder; expected a file name")
    _no_file_above(flag, Path(path))


def _no_file_above(flag: str, path: Path) -> None:
    for parent in path.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise UserError(f"{flag} {path}: {parent} is a file, so nothing can be written under it")
            return


def _keygen(args, out: Console) -> int:
    from scheduler.signing import fingerprint, generate, public_key
    private, public = generate(args.key)
    out.print(f"wrote {private} (private: keep it secret) and {public} (public key "
              f"{fingerprint(public_key(public))[:16]}...: list it in load_bundle(..., trusted_keys=[...]))",
              highlight=False, soft_wrap=True)
    return 0


def _report(jobs: list, args, out: Console) -> int:
    reports = []
    for job in jobs:
        spec = resolve(job)
        fb = hybrid.compile(spec.fn, spec.signature, spec.constexprs, target=job.target, **spec.options)
        rep = fb.report()
        if args.baseline:
            rep["baseline"] = _baseline(spec, args.baseline, job.target)
            out.print(f"{rep['baseline']['kernel']} (all Triton) on {job.target}: " + ", ".join(
                f"{v} {k.replace('_bytes', ' B')}" for k, v in rep["baseline"]["totals"].items()
                if k in ("instructions", "registers", "spills", "shared_bytes")), highlight=False)
        if spec.config is not None:
            rep["config"] = spec.config_json["key"]
        out.print(report.region_table(rep, args.wide))
        if args.timing:
            out.print(report.timing_table(fb.timing, f"{fb.name} on {fb.target}: compile time per stage"))
            rep["timing"] = fb.timing.to_json()
        reports.append(rep)
    outputs = {args.json: json.dumps(reports, indent=1)} if args.json else {}
    if args.html:
        outputs[args.html] = report_html.page(reports)
    for path, text in outputs.items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
        out.print(f"wrote {escape(path)}", highlight=False, soft_wrap=True)
    return 0


def _baseline(spec, name: str, target: str) -> dict:
    """The report of ``name`` (a kernel in the module of ``spec``'s kernel), built with the same
    arguments it has and the same options."""
    kernel = spec.fn.fn.__globals__.get(name)
    if not hasattr(kernel, "arg_names"):
        raise ValueError(f"--baseline {name}: no JIT kernel of that name beside {spec.fn.__name__}")
    fb = hybrid.compile(kernel, {k: v for k, v in spec.signature.items() if k in kernel.arg_names},
                        {k: v for k, v in spec.constexprs.items() if k in kernel.arg_names}, target=target,
                        **spec.options)
    return {"kernel": name, "totals": fb.report()["totals"]}


def _profile(args, out: Console) -> int:
    from . import profile
    from .report import profile_table
    path = Path(args.out).with_suffix(".json")
    path.parent.mkdir(parents=True, exist_ok=True)
    if args.trace:
        trace, kernels = args.trace, profile.analyze(profile.read_trace(args.trace))
    else:
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
    from hybrid.port import start
    files = start(args.function, args.target, args.kernel, Path(args.out), args.num_warps, args.translator,
                  _given(args))
    how = ("from the IR Triton's passes produced for its call"
           if files.method == "ir" else f"translated by upstream's translator (layouts to tune by hand), since "
                                        f"{files.translated_because}")
    out.print(f"wrote {files.port}: {files.function} as a @gluon.jit function for {files.target} "
              f"(num_warps={files.num_warps}), {how}", highlight=False, soft_wrap=True)
    for site in files.sites:   # a port per specialization, each site's picked where the kernel calls it
        out.print(f"call site {site}", highlight=False, soft_wrap=True)
    if files.machine:
        from hybrid.port.from_ttgir import measured
        out.print(measured(files.machine, files.target, files.kernel, files.caveats, files.differs), highlight=False,
                  soft_wrap=True)
    inputs = ("inputs from the module's problem() and run()" if files.inputs == "problem"
              else "fill in its inputs() first")
    out.print(f"wrote {files.test}: compares {files.kernel} with and without it ({inputs})",
              highlight=False, soft_wrap=True)
    if files.still_triton:
        out.print(f"still Triton inside the port: {', '.join(files.still_triton)}", highlight=False, soft_wrap=True)
    for caveat in files.caveats:
        out.print(f"caveat: {caveat}", highlight=False, soft_wrap=True)
    out.print(f"run: {files.command}", highlight=False, soft_wrap=True)
    return 0


def _port_status(args, out: Console) -> int:
    from hybrid.port import PortError
    from hybrid.port.scaffold import load
    from hybrid.port.status import status
    module_ref, _, name = args.kernel.rpartition(":")
    if not module_ref or not name:
        raise PortError(f"{args.kernel!r}: expected path/to/module.py:kernel or package.module:kernel")
    found = status(load(module_ref), name, args.target, _given(args))
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
