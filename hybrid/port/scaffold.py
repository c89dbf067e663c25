"""``hybrid port start module.py:fn --target T``: a first Gluon version of one ``@triton.jit``
function, swapped into its kernel as a Gluon region by the compare test written next to it.

The port is the Gluon Triton's own passes produced for ``fn`` at its call in the kernel, built
for the kernel's launch on the module's ``problem()`` (``from_ttgir``: built into the kernel, its
figures against the kernel's without it in its docstring); where that cannot serve, a ``PortError``
with its reason, unless upstream's translation of ``fn`` alone (``translate``) is asked for.
The kernel keeps calling the Triton ``fn`` until its author swaps the port in, and the test
checks the two agree on the kernel's real inputs (``hybrid.port.compare``). Everything is
checked before anything is written.
"""
from __future__ import annotations

import importlib
import linecache
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType

from triton.runtime import JITFunction

from interop.targets import TARGETS, canonical, unknown

from .errors import PortError, shown, where
from .from_ttgir import TtgirPort, port
from .launch import Given, build_for
from .names import is_triton, jit_callees, jit_function, qualified, returns_value
from .render import DEFAULT_WARPS, Context, compare_test_source, inputs_variant, port_source
from .translate import translate
from .whole_kernel import write_kernel_port


@dataclass(frozen=True)
class PortFiles:
    """What ``start`` wrote, and for what."""
    port: Path                  # <out_dir>/<fn>_gluon_<target>.py: the @gluon.jit port <fn>_gluon_<target>
    test: Path                  # <out_dir>/test_port_<fn>_<target>.py: its compare test
    function: str               # the Triton function ported (module.name)
    kernel: str                 # the kernel the test runs (module.name)
    target: str
    num_warps: int
    inputs: str                 # "problem": the test takes them from the module's problem()/run(); "stub": to fill in
    still_triton: tuple[str, ...] = ()   # the user's Triton functions the port still calls (regions)
    method: str = "ir"                   # "ir": written from Triton's IR (parity); "translator": upstream's translation
    translated_because: str = ""         # why the IR port could not serve, where the translator wrote it
    caveats: tuple[str, ...] = ()        # what the kernel with the IR port does differently (``TtgirPort``)
    differs: str = ""                    # why its machine code differs, where the port knows (``TtgirPort``)
    machine: dict = field(default_factory=dict)   # the kernel's figures with and without the IR port
    whole_kernel: bool = False           # the kernel itself ported (``whole_kernel``): the last step
    built_as: str = ""                   # the build the figures are of (target, options, constexprs, inputs)
    calls: tuple[str, ...] = ()          # a whole kernel's port: the @gluon.jit functions it calls, as the kernel does
    sites: tuple[str, ...] = ()          # sites Triton lowers differently, each with its port (``TtgirPort.sites``)

    @property
    def files(self) -> list[Path]:
        return [self.port, self.test]

    @property
    def command(self) -> str:
        """How to run the compare test."""
        return f"pytest {self.test}"


def start(spec: str, target: str, kernel: str | None = None, out_dir: Path = Path("ports"),
          num_warps: int | None = None, translator: bool = False, given: Given | None = None) -> PortFiles:
    """Port ``spec`` (``path/to/module.py:fn`` or ``package.module:fn``) for ``target``; write the
    port and its compare test into ``out_dir``. ``kernel`` names the calling kernel the test runs
    (found in the module when there is exactly one). ``translator``: write upstream's translation
    instead of the port from Triton's IR (without it, a function the IR port cannot serve is refused). ``given``: the kernel's build arguments
    (``--signature``, ``--constexpr``, ...), over the module's ``SIGNATURE``/``constexprs(target)``;
    without them the kernel is built as the module's ``run()`` launches it on ``problem()``.
    ``num_warps``: the warps the port is for, over the kernel's own launch (which decides without it;
    4 where nothing does). Raises ``PortError`` before writing anything."""
    given = given or Given()
    if canonical(target) is None:
        raise PortError(unknown(target))
    target = canonical(target)
    if num_warps is not None:
        if num_warps < 1 or num_warps & (num_warps - 1):
            raise PortError(f"--num-warps {num_warps}: expected a power of two (1, 2, 4, 8, ...)")
        given = replace(given, options={**given.options, "num_warps": num_warps})
    module_ref, _, name = spec.rpartition(":")
    if not module_ref or not name:
        raise PortError(f"{spec!r}: expected path/to/module.py:function or package.module:function")
    module = load(module_ref)
    fn = _function(module, name)
    # a kernel (it returns nothing, and no function calls it): ported whole, the last step
    whole = kernel == name or kernel is None and not returns_value(fn) and not _called(module, fn)
    host = fn if whole else _kernel(module, fn, kernel)
    out_dir = Path(out_dir)
    port_name = f"{name}_gluon_{target}"   # per target: ports of one function for two targets live side by side
    ctx = Context(module=module, fn=fn, kernel=host, target=target, warp_size=TARGETS[target].warp_size,
                  num_warps=num_warps or DEFAULT_WARPS, port_path=out_dir / f"{port_name}.py",
                  test_path=out_dir / f"test_port_{name}_{target}.py",
                  command=f"hybrid port start {spec} --target {target} --kernel {host.fn.__name__}{given.flags()}",
                  variant=inputs_variant(module, host.fn.__name__))
    if whole:
        if translator:
            raise PortError(f"--translator: upstream's translator writes one function; the kernel {name} "
                            f"({where(fn)}) is ported whole from Triton's IR (leave --translator out)")
        ported = write_kernel_port(ctx, given)
        return PortFiles(port=ctx.port_path, test=ctx.test_path, function=qualified(fn), kernel=qualified(fn),
                         target=target, num_warps=ported.num_warps, inputs="stub" if ctx.variant is None else "problem",
                         machine=ported.machine, whole_kernel=True, built_as=ported.built_as, calls=ported.calls)
    ported, translated_because, built_as, ctx = (None, "--translator was given", "", ctx) if translator else \
        _from_ir(ctx, port_name, given)
    if ported is None and not translator:   # never a silent fallback: the translator's port is asked for
        said = translated_because.rstrip(". ") + ("" if "nothing was written" in translated_because.lower() else
                                                   ". Nothing was written")
        raise PortError(f"no port of {qualified(fn)} ({where(fn)}) from Triton's IR for {host.fn.__name__} on {target}: "
                        f"{said}. Pass the kernel's arguments (--signature, "
                        f"--constexpr, --num-stages) or give its module problem()/run(); or pass --translator for "
                        f"upstream's translation (correct, not the kernel's machine code)")
    port_text = ported.source if ported else None
    still_triton: tuple[str, ...] = ()
    if port_text is None:   # --translator: upstream's translation, asked for
        port = translate(fn, target, port_name)
        port_text, still_triton = port_source(port, ctx), tuple(port.still_triton)
    test_text = compare_test_source(port_name, ctx)
    _check_imports(port_text, ctx)
    out_dir.mkdir(parents=True, exist_ok=True)
    ctx.port_path.write_text(port_text)
    ctx.test_path.write_text(test_text)
    return PortFiles(port=ctx.port_path, test=ctx.test_path, function=qualified(fn), kernel=qualified(host),
                     target=target, num_warps=ctx.num_warps, inputs="stub" if ctx.variant is None else "problem",
                     still_triton=still_triton, method="translator" if translated_because else "ir",
                     translated_because=translated_because, caveats=ported.caveats if ported else (),
                     differs=ported.differs if ported else "", machine=ported.machine if ported else {},
                     built_as=built_as, sites=ported.sites if ported else ())


def _from_ir(ctx: Context, port_name: str, given: Given) -> tuple[TtgirPort | None, str, str, Context]:
    """The port written from Triton's IR (``from_ttgir``) for the kernel built with ``given``
    arguments (over the module's defaults) or, with none given, for its launch on the module's
    ``problem()``; or None and why not; that build in words (``Build.said``); and ``ctx`` for the
    warps it has (the port's layouts, header and test are for those, and the command says them)."""
    try:
        build = build_for(ctx.module, ctx.kernel, ctx.target, given, ctx.variant, ctx.num_warps)
    except PortError as exc:
        if given:   # arguments the command was given must build: a mistake there is the user's to fix
            raise
        if ctx.variant is None:
            return None, (f"{ctx.module.__name__} has no problem()/run() launching {ctx.kernel.fn.__name__}, and the "
                          f"kernel's arguments are not all known ({exc}); pass them with --signature and --constexpr"), "", ctx
        return None, str(exc), "", ctx
    except Exception as exc:   # the module's problem()/run() on this machine: said, not raised through
        return None, (f"the kernel could not be built from {ctx.module.__name__}.problem() here "
                      f"({type(exc).__name__}: {exc})"), "", ctx
    signature, constexprs, options = build.signature, build.constexprs, build.options
    warps = options["num_warps"]
    ctx = replace(ctx, num_warps=warps, command=ctx.command + ("" if "num_warps" in given.options else
                                                               f" --num-warps {warps}"))
    try:
        ported = port(ctx.kernel, ctx.fn, signature, constexprs, ctx.target, name=port_name, path=ctx.port_path,
                      written_by=ctx.command, **options)
    except PortError as exc:
        return None, str(exc), "", ctx
    except Exception as exc:   # a build of the kernel on this machine: said as the reason
        return None, f"the kernel could not be built here ({type(exc).__name__}: {exc})", "", ctx
    return ported, "", build.said(ctx.target), ctx


def load(module_ref: str) -> ModuleType:
    """The module, imported by its dotted name (a file: from above its top package, so that the
    test and the port import the very same module)."""
    if not module_ref.endswith(".py"):
        try:
            return importlib.import_module(module_ref)
        except ImportError as exc:
            raise PortError(f"cannot import {module_ref}: {exc}") from exc
    path = Path(module_ref).resolve()
    if not path.is_file():
        raise PortError(f"no module at {module_ref}")
    root, parts = path.parent, [path.stem]
    while (root / "__init__.py").is_file():
        root, parts = root.parent, [root.name, *parts]
    dotted = ".".join(parts)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    module = importlib.import_module(dotted)
    if Path(module.__file__).resolve() != path:
        raise PortError(f"{module_ref} is imported as {dotted}, but that name is already taken by {module.__file__}; "
                        f"run from another folder or rename the module")
    return module


def _function(module: ModuleType, name: str) -> JITFunction:
    fn = getattr(module, name, None)
    triton_functions = sorted(n for n, v in vars(module).items() if is_triton(v) and _defined_in(v, module))
    if fn is None:
        raise PortError(f"{module.__name__} ({shown(module.__file__)}) has no function '{name}'; its @triton.jit functions: "
                        f"{', '.join(triton_functions) or 'none'}")
    if not is_triton(fn):
        what = "a @gluon.jit function, already Gluon" if isinstance(fn, JITFunction) else "not a @triton.jit function"
        raise PortError(f"{module.__name__}.{name} ({where(fn)}) is {what}: `hybrid port start` ports a @triton.jit "
                        f"function that a kernel calls; its @triton.jit functions: {', '.join(triton_functions) or 'none'}")
    return fn


def _kernel(module: ModuleType, fn: JITFunction, name: str | None) -> JITFunction:
    """The kernel of ``module`` that calls ``fn`` (directly or through its helpers): ``name``, or the only one
    (the JIT function itself where it is autotuned: the test runs its body with the constexprs it is given)."""
    functions = {n: v for n, v in ((n, jit_function(v)) for n, v in vars(module).items())
                 if isinstance(v, JITFunction) and _defined_in(v, module) and v is not fn}
    callers = {n: v for n, v in functions.items() if _reaches(v, fn, set())}
    if name is not None:
        if name not in functions:
            raise PortError(f"--kernel {name}: {module.__name__} has no JIT kernel named '{name}' "
                            f"(kernels calling {fn.fn.__name__}: {', '.join(callers) or 'none'})")
        if name not in callers:
            raise PortError(f"--kernel {name}: {module.__name__}.{name} ({where(functions[name])}) does not call "
                            f"{fn.fn.__name__}; JIT functions that do: {', '.join(callers) or 'none'}")
        return callers[name]
    called = {id(c) for v in callers.values() for c in jit_callees(v).values()}
    kernels = {n: v for n, v in callers.items() if id(v) not in called}
    if len(kernels) != 1:
        found = "none does" if not kernels else "several do: " + ", ".join(
            f"{n} ({where(v)})" for n, v in kernels.items())
        raise PortError(f"which kernel calls {qualified(fn)}? Of the JIT functions in {shown(module.__file__)}, {found}. "
                        f"{'Pass --kernel NAME' if kernels else 'Port a function that a kernel of its module calls'}.")
    return next(iter(kernels.values()))


def _called(module: ModuleType, fn: JITFunction) -> bool:
    """Whether another JIT function of ``module`` calls ``fn`` (directly or through its helpers)."""
    return any(_reaches(v, fn, set()) for v in (jit_function(v) for v in vars(module).values())
               if isinstance(v, JITFunction) and v is not fn and _defined_in(v, module))


def _reaches(caller: JITFunction, fn: JITFunction, seen: set[int]) -> bool:
    if id(caller) in seen:
        return False
    seen.add(id(caller))
    callees = jit_callees(caller).values()
    return any(c is fn for c in callees) or any(_reaches(c, fn, seen) for c in callees)


def _defined_in(fn, module: ModuleType) -> bool:
    return getattr(getattr(fn, "fn", fn), "__module__", None) == module.__name__


def _check_imports(port_text: str, ctx: Context) -> None:
    """The port must import and define its function: a failure here is a bug of ours, said as such."""
    filename = str(ctx.port_path.resolve())
    namespace = {"__name__": ctx.port_path.stem, "__file__": filename}
    linecache.cache[filename] = (len(port_text), None, port_text.splitlines(True), filename)   # for JITFunction's getsource
    try:
        exec(compile(port_text, filename, "exec"), namespace)
    except Exception as exc:
        raise PortError(f"the port of {qualified(ctx.fn)} ({where(ctx.fn)}) written for {ctx.target} does not import "
                        f"({type(exc).__name__}: {exc}); this is a bug of `hybrid port start`, please report it with "
                        f"the function") from exc
    finally:
        linecache.cache.pop(filename, None)
