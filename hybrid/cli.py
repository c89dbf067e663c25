"""hybrid build: mixed kernels -> one fused binary per target -> bundles, in parallel, cached.

    hybrid build examples/softmax.py:softmax_kernel --target sm90a --target gfx942 -o dist/
    hybrid build mykern.py:k --signature x_ptr=*fp32,n=i32 --constexpr 'L=gl.BlockedLayout([1],[32],[4],[0])'

Without --target/--targets every target is built; a target is named as above or by its GPU (H100,
MI300X). Types and values not given come from the module: SIGNATURE (a dict), constexprs(target)
or constexprs(target, kernel), options(target). --dask tcp://host:8786 builds on a Dask cluster.
'hybrid report' prints per-region figures; 'hybrid profile' times each region on a GPU;
'hybrid port start' begins porting one function; 'hybrid keygen KEY' makes a key pair for
'hybrid build --sign KEY'.

A mistake in the command or its inputs is one line, 'hybrid: error: ...', exit status 2, and
is found before any build starts; --debug shows the traceback instead.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

# Only the standard library above: ``--help``, ``--version``, an argument error and ``profile``
# without a GPU answer before Triton, torch, rich or the user's module is imported (each command
# imports what it needs; tests/test_cli_startup.py checks it).


def assignments(items: list[str], parse_value) -> dict:
    """``["a=1,b=2", "c=3"]`` -> ``{"a": parse_value("1"), ...}`` (commas inside brackets do not split)."""
    from interop.entry import constexpr_text
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
USER_ERRORS = (UserError, argparse.ArgumentTypeError, ValueError, LookupError, ImportError, SyntaxError, OSError)
#: More of them, in modules imported only by the commands that raise them: (module, class).
LOADED_USER_ERRORS = (("interop.triton.frontend", "CompilationError"), ("scheduler.bundle", "BundleError"))


def user_error(exc: BaseException) -> bool:
    return isinstance(exc, USER_ERRORS) or any(
        isinstance(exc, getattr(sys.modules.get(module), name, ())) for module, name in LOADED_USER_ERRORS)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        raise UserError(f"{message} (see `{self.prog} --help`)")


class _Version(argparse.Action):
    """``hybrid --version``: the project's version and the installed Triton's, read from their
    distributions' metadata (Triton is not imported)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from importlib import metadata

        import hybrid
        try:
            triton = f"Triton {metadata.version('triton')}"
        except metadata.PackageNotFoundError:
            triton = "Triton not installed"
        print(f"triton-hybrid {hybrid.__version__} ({triton})")
        parser.exit()


#: what --target takes (an unknown name is answered with every target and GPU name known)
TARGET_HELP = "a target (sm80, sm90a, ..., gfx950) or the GPU's name (H100, MI300X, ...)"


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
    top.add_argument("--version", action=_Version, help="print the versions of triton-hybrid and Triton, then exit")
    commands = top.add_subparsers(dest="command", required=True)
    b = commands.add_parser("build", help="build kernels for GPU targets into bundles",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _job_arguments(b)
    b.add_argument("-o", "--out", default="dist", help="bundle folder (default: dist/)")
    b.add_argument("--archive", action="store_true", help="one zip archive per kernel instead of a folder")
    b.add_argument("-j", "--jobs", type=positive_int, help="worker processes (default: one per core)")
    b.add_argument("--dask", metavar="ADDRESS", help="build on a Dask cluster: its scheduler's address, e.g. "
                                                     "tcp://host:8786 (needs triton-hybrid[cluster]; workers need "
                                                     "this project and the kernel modules)")
    b.add_argument("--cache-dir", help="the build and region caches (default: $HYBRID_CACHE_DIR or "
                                       "~/.cache/triton-hybrid)")
    b.add_argument("--sign", metavar="KEY", help="sign each bundle with this ed25519 private key (hybrid keygen); "
                                                 "builds from source, reading no cache")
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
    pr.add_argument("--sample", action="store_true",
                    help="analyze the synthetic sample trace that ships with triton-hybrid (examples/matmul_wgmma.py "
                         "on sm90a: its real region scopes, made-up cycles), to see the per-region view without a GPU")
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
    s.add_argument("--target", required=True, help=f"the GPU the port's layouts are for: {TARGET_HELP}")
    s.add_argument("--kernel", help="the kernel that calls it, which the test runs (default: the module's only one)")
    s.add_argument("--num-warps", type=int, help="warps the port's layouts are for (default: the kernel's launch's, "
                                                   "else 4)")
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
    st.add_argument("--target", required=True, help=TARGET_HELP)
    _kernel_arguments(st)
    k = commands.add_parser("keygen", help="make an ed25519 key pair for signing bundles",
                            description="Writes KEY (the private key, PEM, readable by you only) and KEY.pub (the "
                                        "public key to list in load_bundle(..., trusted_keys=[...])). Example: "
                                        "hybrid keygen ~/.config/triton-hybrid/team.key")
    k.add_argument("key", metavar="KEY", help="where to write the private key (the public one goes to KEY.pub)")
    k.add_argument("--force", action="store_true", help="replace KEY and KEY.pub if they exist")
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
    from interop.entry import constexpr_text
    return Given(assignments(args.signature, str), assignments(args.constexpr, constexpr_text.job_value),
                 {} if args.num_stages is None else {"num_stages": args.num_stages})


def _job_arguments(p: argparse.ArgumentParser) -> None:
    """What names a job: kernels, targets, signature, constexprs, options."""
    p.add_argument("kernels", nargs="+", metavar="MODULE:KERNEL",
                   help="path/to/module.py:kernel or package.module:kernel")
    p.add_argument("--target", action="append", default=[],
                   help=f"{TARGET_HELP} (repeatable; default: every target)")
    p.add_argument("--targets", help="'all' (the default) or a comma-separated list of targets or GPU names")
    p.add_argument("--signature", action="append", default=[], metavar="NAME=TYPE",
                   help="argument types, e.g. x_ptr=*fp32,n=i32 (over the module's SIGNATURE)")
    p.add_argument("--constexpr", action="append", default=[], metavar="NAME=VALUE",
                   help="compile-time values over the module's constexprs(target): numbers, text, lists, "
                        "Gluon dtypes and layouts as in a kernel, e.g. 'L=gl.BlockedLayout([1],[32],[4],[0])'")
    p.add_argument("--num-warps", type=int)
    p.add_argument("--num-stages", type=int)


def results_table(results: list) -> Table:
    from . import report
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


def _targets(args):
    """``--targets`` as given (an empty list is refused, not read as all), else the ``--target``s,
    else all."""
    return args.targets if args.targets is not None else args.target or "all"


def check_jobs(jobs) -> None:
    """What the command line gave, checked as ``hybrid.compile`` checks it (``interop.entry.request``)
    before anything builds: targets, options, constexpr values (a usage error, not a failed build)."""
    from interop.entry import request
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
            raise SystemExit(2 if user_error(exc) else 1) from None
        print(f"hybrid: error: {_one_line(exc)}", file=sys.stderr)
        raise SystemExit(2 if user_error(exc) else 1) from None


def _one_line(exc: BaseException) -> str:
    text = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip()) or type(exc).__name__
    if user_error(exc):
        return text
    return f"{type(exc).__name__}: {text} (a bug in triton-hybrid: run again with --debug for the traceback)"


def _run(args) -> int:
    # Kernel modules resolve from the working directory, as under ``python -m``: a console script's
    # sys.path starts at its own folder, so ``examples/softmax.py`` could not import ``examples.*``.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    check_arguments(args)
    from rich.console import Console
    if args.command == "keygen":
        return _keygen(args, Console(width=140))
    if args.command == "port":
        step = _port_start if args.step == "start" else _port_status
        return step(args, Console(width=140))
    if args.command == "profile":
        return _profile(args, Console(width=140))
    from interop.entry import constexpr_text
    from scheduler import plan
    try:
        jobs = plan(args.kernels, _targets(args), assignments(args.signature, str),
                    assignments(args.constexpr, constexpr_text.job_value),
                    {k: v for k, v in (("num_warps", args.num_warps), ("num_stages", args.num_stages)) if v is not None})
        check_jobs(jobs)
    except (ValueError, argparse.ArgumentTypeError) as exc:
        raise UserError(str(exc)) from None
    from . import report
    if args.command == "report":
        return _report(jobs, args, report.console(args.wide))
    return _build(jobs, args, report.console())


def _build(jobs: list, args, out: Console) -> int:
    """Build ``jobs`` here (worker processes) or on a Dask cluster, showing each result as it
    arrives; print the table and write the bundles."""
    from rich.markup import escape

    import hybrid
    from scheduler import Cache
    from scheduler.bundle import write_bundles
    key = None
    if args.sign:
        from scheduler.signing import private_key
        key = private_key(args.sign)
    caches = _cold_caches() if key else contextlib.nullcontext(None if args.no_cache else Cache(args.cache_dir))
    with caches as cache, dask_executor(args.dask) as (executor, where):
        results = build_with_progress(jobs, hybrid.compile, cache=cache, executor=executor, max_workers=args.jobs,
                                      where=where)
    out.print(results_table(results))
    for r in results:
        if not r.ok:
            out.print(f"[red]FAILED[/red] {escape(r.error)}", highlight=False, soft_wrap=True)
        elif r.note:
            out.print(escape(f"{r.job.label}: {r.note}"), soft_wrap=True)
    for kernel, path in write_bundles(results, args.out, args.archive, key).items():
        out.print(f"bundle {kernel}: {escape(str(path))}" + (" (signed)" if key else ""), soft_wrap=True)
    return 1 if any(not r.ok for r in results) else 0


@contextlib.contextmanager
def _cold_caches():
    """The caches of a signed build: empty ones in a new private folder, removed after, with
    Triton's own cache there too (set before the build's workers start). ``--sign`` signs only
    what this run built from source: a cache entry's checksum is a plain sha256 that anyone who
    can write the cache recomputes, so a binary planted there would be signed and then verify.
    (A MAC over entries, keyed per cache, would let hits be trusted, but then a second secret
    guards every signature; a release build pays its compile time once and trusts nothing on
    disk.)"""
    from scheduler import Cache
    saved = os.environ.get("TRITON_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="hybrid-sign-") as root:
        os.environ["TRITON_CACHE_DIR"] = os.path.join(root, "triton")
        try:
            yield Cache(root)
        finally:
            if saved is None:
                os.environ.pop("TRITON_CACHE_DIR", None)
            else:
                os.environ["TRITON_CACHE_DIR"] = saved


def build_with_progress(jobs: list, compile_kernel, *, where: str = "", **options) -> list:
    """``scheduler.build(jobs, compile_kernel, **options)`` showing on stderr each result as it
    arrives: a bar on a terminal; in a log (a file or pipe, where a bar shows only at the end) a
    line per result."""
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from scheduler import build
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    if where:
        err.print(f"building {len(jobs)} job{'s' if len(jobs) != 1 else ''}{where}", markup=False)
    if not err.is_terminal:
        done = iter(range(1, len(jobs) + 1))
        return build(jobs, compile_kernel, **options, on_result=lambda r: err.print(
            f"[{next(done)}/{len(jobs)}] {r.job.label}: {r.status} ({r.seconds:.1f} s)", markup=False))
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err) as progress:
        task = progress.add_task("building", total=len(jobs))
        return build(jobs, compile_kernel, **options,
                     on_result=lambda r: progress.update(task, advance=1, description=escape(r.job.label)))


@contextlib.contextmanager
def dask_executor(address: str | None):
    """``(executor, where)``: none (this machine's worker processes), or with ``--dask ADDRESS`` a
    client of that Dask scheduler and its workers' count, closed after the build."""
    if address is None:
        yield None, ""
        return
    try:
        from distributed import Client
    except ImportError:
        raise UserError("--dask needs Dask's distributed package: pip install 'triton-hybrid[cluster]'") from None
    try:
        client = Client(address, timeout="10s")
    except (OSError, TimeoutError) as exc:
        raise UserError(f"--dask {address}: no Dask scheduler answers there ({exc})") from None
    with client:
        workers = len(client.scheduler_info()["workers"])
        yield client.get_executor(), f" on {workers} Dask worker{'s' if workers != 1 else ''} at {address}"


# -- arguments, checked before any work starts ------------------------------------------------------
def check_arguments(args) -> None:
    """Raise ``UserError`` for the first argument that cannot work: output paths under a file or
    naming a folder, kernel modules that do not load, kernels that are not there or share a
    name (bundles are named by kernel), a signing key that does not load, a trace or script that
    is not there."""
    if args.command == "build":
        _folder_path("-o/--out", args.out)
        if args.dask and args.jobs:
            raise UserError("-j/--jobs sets this machine's worker processes; with --dask the cluster's workers build")
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
        if args.sample and (args.trace or args.script):
            raise UserError("--sample reads the sample trace that ships with triton-hybrid: give no script or --trace")
        if args.sample:
            from .profile_sample import PATH
            args.trace = str(PATH)
        if args.trace and not Path(args.trace).is_file():
            raise UserError(f"--trace {args.trace}: no such file")
        if not args.trace and not args.script:
            raise UserError("profile needs a script to run, or --trace FILE (or --sample: a sample trace, no GPU)")
        if not args.trace and not Path(args.script).is_file():
            raise UserError(f"no script at {args.script}")
    elif args.command == "keygen":
        for path in (args.key, f"{args.key}.pub"):
            _file_path("KEY", path)
            if os.path.lexists(path) and not args.force:
                raise UserError(f"{path} exists; a key is never overwritten (choose another name, or pass --force "
                                "to replace it)")
    elif args.command == "port":
        from interop.targets import canonical, unknown
        if canonical(args.target) is None:
            raise UserError(f"--target: {unknown(args.target)}")
        args.target = canonical(args.target)
    if args.command in ("build", "report"):
        _check_kernels(args.kernels)


def _check_kernels(refs: list[str]) -> None:
    """Every kernel loads and is a JIT kernel, and no two share a name."""
    from scheduler.planning import load_module
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
    private, public = generate(args.key, force=args.force)
    out.print(f"wrote {private} (private: keep it secret) and {public} (public key "
              f"{fingerprint(public_key(public))[:16]}...: list it in load_bundle(..., trusted_keys=[...]))",
              highlight=False, soft_wrap=True)
    return 0


def _report(jobs: list, args, out: Console) -> int:
    from rich.markup import escape

    import hybrid
    from scheduler.planning import resolve

    from . import report, report_html
    from .attribution import code_by_line
    from .port.launch import Build
    reports, code, baseline_code = [], [], []
    for job in jobs:
        spec = resolve(job)
        fb = hybrid.compile(spec.fn, spec.signature, spec.constexprs, target=job.target, **spec.options)
        rep = fb.report()
        built = Build(spec.signature, spec.constexprs, {"num_warps": fb.metadata.get("num_warps"), **spec.options},
                      "module defaults and command line")
        out.print(f"built as: {escape(built.said(job.target))}", highlight=False, soft_wrap=True)
        if args.baseline:
            base = _baseline(spec, args.baseline, job.target)
            base_rep = base.report()
            rep["baseline"] = {"kernel": args.baseline, "totals": base_rep["totals"], "lines": base_rep["lines"]}
            if args.html:
                baseline_code.append(code_by_line(base))
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
        if args.html:
            code.append(code_by_line(fb))
    outputs = {args.json: json.dumps(reports, indent=1)} if args.json else {}
    if args.html:
        outputs[args.html] = report_html.page(reports, code=code, baseline_code=baseline_code or None)
    for path, text in outputs.items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
        out.print(f"wrote {escape(path)}", highlight=False, soft_wrap=True)
    return 0


def _baseline(spec, name: str, target: str):
    """``name`` (a kernel in the module of ``spec``'s kernel) built with the same arguments it has
    and the same options."""
    import hybrid
    kernel = spec.fn.fn.__globals__.get(name)
    if not hasattr(kernel, "arg_names"):
        raise ValueError(f"--baseline {name}: no JIT kernel of that name beside {spec.fn.__name__}")
    return hybrid.compile(kernel, {k: v for k, v in spec.signature.items() if k in kernel.arg_names},
                          {k: v for k, v in spec.constexprs.items() if k in kernel.arg_names}, target=target,
                          **spec.options)


def _profile(args, out: Console) -> int:
    from rich.markup import escape
    if not args.trace and not gpu_here():
        out.print(f"hybrid profile: no GPU here, so {escape(args.script)} cannot run. The static per-region "
                  "report needs none: hybrid report MODULE:KERNEL --target ...; a trace taken on a GPU can be "
                  "read here: hybrid profile --trace FILE.chrome_trace (a sample: hybrid profile --sample)",
                  highlight=False, soft_wrap=True)
        return 2
    from . import profile
    from .report import profile_table
    path = Path(args.out).with_suffix(".json")
    path.parent.mkdir(parents=True, exist_ok=True)
    if args.trace:
        from .profile_sample import note
        trace, kernels = args.trace, profile.analyze(profile.read_trace(args.trace))
        if (synthetic := note(args.trace)) is not None:
            out.print(synthetic, highlight=False, soft_wrap=True)
    else:
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


def gpu_here() -> bool:
    """Whether torch sees a GPU. On Linux, with no GPU driver's device node (``/dev/nvidia0``,
    AMD's ``/dev/kfd``, WSL's ``/dev/dxg``) it cannot, which is known without importing torch."""
    if sys.platform.startswith("linux") and not any(
            next(Path("/dev").glob(pattern), None) for pattern in ("nvidia[0-9]*", "kfd", "dxg")):
        return False
    import torch
    return torch.cuda.is_available()


def _port_start(args, out: Console) -> int:
    from hybrid.port import start
    files = start(args.function, args.target, args.kernel, Path(args.out), args.num_warps, args.translator,
                  _given(args))
    how = ("from the IR Triton's passes produced for it" if files.whole_kernel else
           "from the IR Triton's passes produced for its call"
           if files.method == "ir" else f"translated by upstream's translator (layouts to tune by hand), since "
                                        f"{files.translated_because}")
    out.print(f"wrote {files.port}: {files.function} as a @gluon.jit {'kernel' if files.whole_kernel else 'function'} "
              f"for {files.target} (num_warps={files.num_warps}), {how}", highlight=False, soft_wrap=True)
    if files.built_as:
        out.print(f"built as: {files.built_as}", highlight=False, soft_wrap=True)
    for site in files.sites:   # a port per specialization, each site's picked where the kernel calls it
        out.print(f"call site {site}", highlight=False, soft_wrap=True)
    if files.machine:
        from hybrid.port.from_ttgir import measured
        from hybrid.port.whole_kernel import said
        out.print(said(files.machine, files.target, files.kernel) if files.whole_kernel else
                  measured(files.machine, files.target, files.kernel, files.caveats, files.differs), highlight=False,
                  soft_wrap=True)
    inputs = ("inputs from the module's problem() and run()" if files.inputs == "problem"
              else "fill in its inputs() first")
    out.print(f"wrote {files.test}: compares {files.kernel} {'and its port' if files.whole_kernel else 'with and without it'} "
              f"({inputs})",
              highlight=False, soft_wrap=True)
    if files.still_triton:
        out.print(f"still Triton inside the port: {', '.join(files.still_triton)}", highlight=False, soft_wrap=True)
    if files.calls:
        out.print(f"calls, as the kernel does: {', '.join(files.calls)}", highlight=False, soft_wrap=True)
    for caveat in files.caveats:
        out.print(f"caveat: {caveat}", highlight=False, soft_wrap=True)
    out.print(f"run: {files.command}", highlight=False, soft_wrap=True)
    return 0


def _port_status(args, out: Console) -> int:
    from hybrid.port import PortError
    from hybrid.port.scaffold import load
    from hybrid.port.status import status
    from rich.table import Table
    module_ref, _, name = args.kernel.rpartition(":")
    if not module_ref or not name:
        raise PortError(f"{args.kernel!r}: expected path/to/module.py:kernel or package.module:kernel")
    found = status(load(module_ref), name, args.target, _given(args))
    table = Table(title=f"{found.kernel} on {found.target}: {found.instructions} instructions")
    for column in ("function", "language", "lines", "instructions", "share"):
        table.add_column(column, justify="right" if column in ("instructions", "share") else "left")
    for k, f in enumerate(found.functions):
        language = f.language if f.language == "gluon" else "triton (kernel body)" if k == 0 else "triton (to port)"
        table.add_row(f.function, language, f.where, str(f.instructions), f"{f.instructions / max(found.instructions, 1):.0%}")
    table.add_row("other (library code, constants, conversions)", "", "", str(found.unattributed),
                  f"{found.unattributed / max(found.instructions, 1):.0%}")
    out.print(table)
    out.print(f"built as: {found.built_as}", highlight=False, soft_wrap=True)
    whole = f"hybrid port start {module_ref}:{name} --target {found.target}"
    if found.done:
        out.print("all Gluon: the kernel builds as a plain @gluon.jit kernel", highlight=False, soft_wrap=True)
    elif found.body_left:
        out.print(f"only the kernel's own body is Triton; the last step ports it whole: {whole}", highlight=False,
                  soft_wrap=True)
    else:
        left = found.to_port
        at_once = f" (or the whole kernel at once: {whole})" if found.functions[0].language == "triton" else ""
        out.print(f"still Triton: {', '.join(left)}; next: hybrid port start {module_ref}:{left[0].rpartition('.')[2]} "
                  f"--target {found.target} --kernel {name}{at_once}", highlight=False, soft_wrap=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
