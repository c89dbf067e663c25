"""The last step of a port: a whole ``@triton.jit`` kernel written as a ``@gluon.jit`` kernel.

The kernel is built for the target as its launch specializes it, and its own TritonGPU IR after
Triton's passes (``make_ttgir``: the layouts, the pipelined loops, the memory staging Triton
chose) is written back out op by op with ``gluon_emit``'s rules, the kernel's parameters as its
parameters. Built as Gluon, that source gives back the very ops it was read from, so the Gluon
kernel has the Triton kernel's machine code; it is built before it is handed out and its figures
are said beside the original's. The Triton functions the kernel calls are inlined in that IR, so
they become Gluon with it; the ``@gluon.jit`` functions it calls (ports written before, swapped
in) stay calls: the IR is read as the kernel is stitched, each Gluon call still a call
(``assemble.recording_spliced``), and the kernel so written is kept where it builds within the
parity goal, else the one with their code inline.
"""
from __future__ import annotations

import ast
import inspect
import re
import textwrap
from dataclasses import dataclass, field, replace
from pathlib import Path

from triton.runtime import JITFunction

from interop.lowering.assemble import recording_spliced
from interop.triton.frontend import GluonJITFunction

from .compare import as_hybrid, figures
from .errors import PortError, shown, where
from .from_ttgir import PRELUDE, _excess, _root_cause, _used, always_compiling, load_port
from .gluon_emit import Emitter, Unsupported
from .launch import Given, build_for
from .names import jit_function, qualified, resolve, source_tree
from .render import Context, compare_test_source
from .ttgir_text import Block, Op, parse

HEADER = '''"""{intro}
{claim}
{baked}
Tune from here.{written}"""
''' + PRELUDE


@dataclass(frozen=True)
class KernelPort:
    """A whole kernel's Gluon port, built before it is returned, and what it was written for."""
    name: str
    source: str
    kernel: str                       # module.name of the Triton kernel ported
    target: str
    #: The values Triton's IR has folded in (the kernel's constexprs, and any argument the build
    #: specialized as a constant): the port takes each as a ``gl.constexpr`` and is right for
    #: these values only (a number is asserted with ``gl.static_assert``).
    baked: dict = field(default_factory=dict)
    #: The kernel's figures with and without the port ("port", "original": instructions,
    #: registers, shared bytes), as its docstring gives them.
    machine: dict = field(default_factory=dict)
    num_warps: int = 4
    calls: tuple[str, ...] = ()   # the @gluon.jit functions the port calls (the kernel's, kept as calls)
    inlined: str = ""             # why the kernel's Gluon calls are written inline instead, where they are
    built_as: str = ""     # the build it was written for (``launch.Build.said``)


def write_kernel_port(ctx: Context, given: Given) -> KernelPort:
    """``hybrid port start`` on a kernel (called by no other function of its module): the port of the
    whole kernel, for its build as ``given`` or as its module's ``run()`` launches it, written with
    its compare test (the Triton kernel and the port on the same inputs)."""
    try:
        build = build_for(ctx.module, ctx.kernel, ctx.target, given, ctx.variant, ctx.num_warps)
    except PortError:
        raise
    except Exception as exc:   # the module's problem()/run() on this machine
        raise PortError(f"{ctx.kernel.fn.__name__} could not be built from {ctx.module.__name__}.problem() here "
                        f"({type(exc).__name__}: {exc}); pass its arguments with --signature and --constexpr") from exc
    ported = port_kernel(ctx.kernel, build.signature, build.constexprs, ctx.target, name=ctx.port_path.stem,
                         path=ctx.port_path, written_by=ctx.command, **build.options)
    ctx = replace(ctx, num_warps=build.options["num_warps"])   # the build's, which the port's layouts are for
    ctx.port_path.parent.mkdir(parents=True, exist_ok=True)
    ctx.port_path.write_text(ported.source)
    ctx.test_path.write_text(compare_test_source(ported.name, ctx))
    return replace(ported, built_as=build.said(ctx.target))


def port_kernel(kernel, signature: dict, constexprs: dict, target: str, *, name: str | None = None,
                path: Path | None = None, written_by: str = "", **options) -> KernelPort:
    """``kernel`` (a ``@triton.jit`` kernel) as a ``@gluon.jit`` kernel for ``target``, written from
    its IR built with ``signature``, ``constexprs`` and backend ``options`` (``num_warps``, ...).
    Raises ``PortError`` (nothing written) where an op has no Gluon writer or the port does not build."""
    import hybrid
    fn = jit_function(kernel)
    name = name or f"{fn.__name__}_gluon_{target}"
    path = path or Path(f"{name}.py")
    num_warps = options.get("num_warps", 4)
    try:
        with always_compiling(), recording_spliced() as spliced:
            original = hybrid.compile(as_hybrid(fn), signature, constexprs, target, **options)
    except Exception as exc:
        raise PortError(f"{fn.__name__} ({where(fn)}) does not build for {target} with these arguments: "
                        f"{_root_cause(exc)}; nothing was written") from exc
    before = figures(original)

    def built(text: str, calls: dict | None = None) -> tuple[str, dict, dict]:
        source, baked = _written(fn, text, target, name, num_warps, written_by, signature, constexprs, calls)
        port = hybrid.compile(as_hybrid(load_port(source, name, path)), signature, constexprs, target, **options)
        return source, baked, figures(port)

    inlined = ""
    try:
        if spliced:   # the kernel calls @gluon.jit functions: written as calls where that keeps the parity goal
            try:
                source, baked, after = built(spliced[-1], _gluon_calls(fn, original.regions))
                if not _within_goal(after, before):
                    inlined = (f"with its Gluon calls kept it builds to {after['instructions']} instructions and "
                               f"{after['shared_bytes']} B of shared memory, beyond the parity goal")
            except Exception as exc:   # noqa: BLE001 - the kernel with the calls inline still serves
                inlined = f"its Gluon calls cannot be kept as calls ({exc})"
        if inlined or not spliced:
            source, baked, after = built(original.asm["ttgir"])
    except PortError:
        raise
    except Exception as exc:
        raise PortError(f"the port of the kernel {fn.__name__} ({where(fn)}) written from Triton's IR for {target} "
                        f"does not build ({_root_cause(exc)}); nothing was written. This is a bug of `hybrid port`, "
                        f"please report it with the kernel") from exc
    machine = {"original": before, "port": after}
    calls = tuple(sorted({r.function for r in original.regions if r.language == "gluon"})) if not inlined else ()
    claim = said(machine, target, fn.__name__) + (f" Its Gluon calls are written inline: {inlined}." if inlined else
                                                  f" It calls {', '.join(calls)} as {fn.__name__} does." if calls else "")
    source = source.replace(CLAIM, textwrap.fill(claim, 100))
    return KernelPort(name, source, qualified(fn), target, baked, machine, num_warps, calls, inlined)


def _within_goal(port: dict, original: dict) -> bool:
    """The project's parity goal: at most 1.02x the instructions, no more shared memory."""
    return port["instructions"] <= 1.02 * original["instructions"] and port["shared_bytes"] <= original["shared_bytes"]


#: Where the header says what the port builds to, once it is built.
CLAIM = "<the port, measured>"


def said(machine: dict, target: str, kernel: str) -> str:
    """The port's figures against the kernel's, one sentence: shown, not claimed."""
    port, original = machine["port"], machine["original"]
    figures_of = (f"{port['instructions']} instructions, {port['registers']} registers and {port['shared_bytes']} B "
                  f"of shared memory on {target}")
    if port == original:
        return f"The port builds to {figures_of}, as {kernel} does."
    return (f"The port builds to {figures_of}, against {original['instructions']}, {original['registers']} and "
            f"{original['shared_bytes']} B for {kernel}{' (more shared memory)' if _excess(port, original)[0] else ''}.")


class _Calling(Emitter):
    """An emitter that writes each spliced Gluon region's call (``tt.call @<region symbol>``) as a
    call of its ``@gluon.jit`` function: ``calls`` maps the symbol to a function of the operands'
    expressions giving the call's text, and to the import it needs."""

    def __init__(self, module, params: dict[str, str], calls: dict):
        super().__init__(module, params)
        self.calls = calls

    def block(self, block: Block, indent: int) -> None:
        run: list[Op] = []
        for op in [*block.ops, None]:
            symbol = _callee(op)
            if op is not None and symbol not in self.calls:
                run.append(op)
                continue
            if run:
                super().block(Block(block.args, run), indent)
                run = []
            if op is not None:
                self._source_comment(op, indent)
                text, imported, names = self.calls[symbol]
                self.imports.add(imported)
                call = text([self.value(v) for v in op.operands])
                if op.results:
                    names = names if len(names) == len(op.results) else [None] * len(op.results)
                    results = ", ".join(self.bind(r, name=n) for r, n in zip(op.results, names))
                    self.lines.append("    " * indent + f"{results} = {call}")
                else:
                    self.lines.append("    " * indent + call)


def _callee(op: Op | None) -> str | None:
    found = re.match(r"@([\w.$]+)\(", op.rest) if op is not None and op.name == "tt.call" else None
    return found.group(1) if found else None


def _gluon_calls(fn: JITFunction, regions) -> dict:
    """Per Gluon region of the built ``fn`` (its symbol): how the port calls its ``@gluon.jit``
    function, the region's runtime operands in order and each constexpr argument as the kernel's
    source writes it (a literal, or constexpr parameters of the kernel, which the port has too);
    the import it needs; and the names the kernel's source gives its results."""
    tree, first = source_tree(fn), inspect.getsourcelines(fn.fn)[1]
    constexprs = {p.name for p in fn.params if p.is_constexpr}
    calls = {}
    for region in (r for r in regions if r.language == "gluon"):
        found = [(node, target) for node in ast.walk(tree) if isinstance(node, ast.Call)
                 and node.lineno + first - 1 == region.call_site.line
                 and isinstance(target := resolve(node.func, fn.fn.__globals__), GluonJITFunction)
                 and target.__name__ == region.function]
        if len(found) != 1 or found[0][0].keywords and any(k.arg is None for k in found[0][0].keywords):
            raise PortError(f"the call of {region.function} at {shown(region.call_site.file)}:{region.call_site.line} "
                            f"is not one plain call in {fn.__name__}'s source")
        node, target = found[0]
        assigned = next((a.targets[0] for a in ast.walk(tree) if isinstance(a, ast.Assign) and a.value is node), None)
        names = [n.id for n in getattr(assigned, "elts", [assigned]) if isinstance(n, ast.Name)]
        bound = {p.name: a for p, a in zip(target.params, node.args)} | {k.arg: k.value for k in node.keywords}
        written = {}
        for p in target.params:
            if p.is_constexpr and p.name in bound:
                used = {n.id for n in ast.walk(bound[p.name]) if isinstance(n, ast.Name)}
                if not used <= constexprs:
                    raise PortError(f"{region.function}'s constexpr {p.name} is given as {ast.unparse(bound[p.name])}, "
                                    f"not from {fn.__name__}'s constexprs")
                written[p.name] = ast.unparse(bound[p.name])
        runtime = [p.name for p in target.params if not p.is_constexpr]

        def text(operands: list[str], target=target, written=written, runtime=runtime) -> str:
            if len(operands) != len(runtime):
                raise PortError(f"{target.__name__} takes {len(runtime)} runtime arguments; its region {len(operands)}")
            given = dict(zip(runtime, operands)) | written
            return f"{target.__name__}({', '.join(given[p.name] for p in target.params if p.name in given)})"

        calls[region.symbol] = (text, f"from {target.fn.__module__} import {target.__name__}  # a Gluon function "
                                      f"{fn.__name__} calls", names)
    return calls


def _written(fn: JITFunction, ttgir: str, target: str, name: str, num_warps: int, written_by: str,
             signature: dict, constexprs: dict, calls: dict | None = None) -> tuple[str, dict]:
    """The port's source (its header's claim left to fill in) and the values it was written for;
    ``calls``: the Gluon regions written as calls (``_gluon_calls``)."""
    module = parse(ttgir, fn.__name__)
    runtime = [p.name for p in fn.params if p.name in signature and p.name not in constexprs]
    if len(runtime) != len(module.args):
        raise PortError(f"{fn.__name__} ({where(fn)}): its IR on {target} takes {len(module.args)} arguments where "
                        f"the build was given {len(runtime)} ({', '.join(runtime)}); this is a bug of `hybrid port`, "
                        f"please report it with the kernel")
    emitter = _Calling(module, {ssa: param for (ssa, _), param in zip(module.args, runtime)}, calls or {})
    try:
        emitter.block(module.body, 1)
    except Unsupported as exc:
        at = f"{shown(exc.where.file)}:{exc.where.line}" if exc.where else where(fn)
        raise PortError(f"the kernel {fn.__name__} cannot be written as Gluon for {target}: {exc.op.name} at {at}: "
                        f"{exc.why}. Nothing was written; port the functions around it one at a time "
                        f"(hybrid port start MODULE:FUNCTION) and keep that one Triton") from exc
    while emitter.lines and emitter.lines[-1].lstrip().startswith("#"):   # the def line, which tt.return has
        emitter.lines.pop()
    baked = {p.name: constexprs[p.name] for p in fn.params if p.name in constexprs}
    asserts = [f"    gl.static_assert({key} == {value!r}, \"{name} was written for {key} == {value!r}: port "
               f"{fn.__name__} again for another value\")"
               for key, value in baked.items() if isinstance(value, (bool, int, float)) and value is not None]
    layouts = [f"    {definition}" for definition in emitter.layouts.defs]
    body = asserts + _used(layouts + emitter.entry + emitter.lines)
    params = ", ".join(f"{p.name}: gl.constexpr" if p.name in baked else p.name for p in fn.params)
    values = ", ".join(f"{k}={v!r}" for k, v in baked.items())
    intro = (f"Gluon port of the whole kernel {qualified(fn)} for {target} ({num_warps} warps), written by "
             f"`hybrid port` from the TritonGPU IR Triton's passes produced for it (its layouts, loops and memory "
             f"staging are Triton's own). Launch it as {fn.__name__} is launched: the same arguments, grid and "
             f"num_warps.")
    header = HEADER.rstrip("\n").format(
        intro=textwrap.fill(intro, 100), target=target, num_warps=num_warps, claim=CLAIM,
        baked=textwrap.fill(f"Written for {values}: Triton folded these into its IR, so they are constexpr "
                            f"parameters here, each number asserted.", 100) if baked else "",
        written=f"\n\nWritten by: {written_by}" if written_by else "",
        imports="\n".join(sorted(emitter.imports | emitter.layouts.imports)))
    parts = [header, *emitter.helpers, f"@gluon.jit\ndef {name}({params}):\n" + "\n".join(body or ["    pass"])]
    return "\n\n\n".join(part for part in parts if part) + "\n", baked
