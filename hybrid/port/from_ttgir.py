"""A port at machine-code parity: the Gluon that Triton's compiler produced for one call site.

A Gluon kernel calling a ``@triton.jit`` function is built with the function's lowering recorded
(``interop.lowering.triton_regions.recording_lowerings``): the region's TritonGPU IR after Triton's own
passes, for that call site's argument types, constexprs, ``num_warps``, ``num_stages`` and the
host's layouts. A Triton kernel calls the function through a Gluon ``probe`` instead, which
makes the call a Gluon region and the function a Triton region inside it, lowered for the
layouts Triton gave the call's operands. ``gluon_emit`` writes that IR back out as a ``@gluon.jit`` function with the
function's own parameters, so swapping it in for the Triton function gives the kernel the same
ops, hence the same machine code. The written file is imported and the kernel built with it
before it is returned, so a port that does not compile is never handed out.
"""
from __future__ import annotations

import contextlib
import linecache
import os
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from triton.runtime import JITFunction

from interop.lowering import caller_loads, gluon_regions, triton_regions
from interop.lowering.triton_regions import RecordedCall
from interop.boundary import MADE_IN_PLACE, TAG
from interop.lowering.lower_triton import REGION_FUNCTION
from interop.triton.frontend import GluonJITFunction

from .compare import as_hybrid, figures, with_region
from .errors import PortError, shown, where
from .gluon_emit import Emitter, Layouts, TensorType, Unsupported
from .inlined import Inlined, read as read_inlined
from .names import jit_function, parameters, returns_value
from .sites import Site, dispatch, dispatcher, literal, specializations, suffixed
from .ttgir_text import parse, uses

#: What every port's file starts with after its docstring (a function's port and a whole kernel's).
PRELUDE = '''from triton.experimental import gluon
from triton.experimental.gluon import language as gl
{imports}
TARGET = "{target}"
NUM_WARPS = gl.constexpr({num_warps})   # the layouts below are for this many warps
'''
HEADER = '''"""Gluon port of {function} for {target} ({num_warps} warps), written by `hybrid port` from the
TritonGPU IR Triton's passes produced for its call in {kernel}: the layouts, loops and memory
staging are Triton's own.
{claim}
Tune from here.{written}"""
''' + PRELUDE


@dataclass(frozen=True)
class TtgirPort:
    """A port's source, checked to build into its kernel, and what it is the port of."""
    name: str
    source: str
    function: str          # module.name of the Triton function ported
    target: str
    #: The parameters the kernel passes as splat constants or index arithmetic made from scalars
    #: (a pointer tile), each with the layout the port computes it in (a Gluon expression): the
    #: kernel with the Triton region made them there at its boundary; Gluon converts as written,
    #: so a caller that makes one in that layout leaves the kernel the region's machine code.
    made_in_place: dict[str, str] = field(default_factory=dict)
    #: What the kernel with the port does differently from the kernel without it, said in the port's
    #: docstring and by ``hybrid port start`` (the kernel's loop pipelined the function's loads).
    caveats: tuple[str, ...] = ()
    #: The kernel's figures with and without the port ("port", "original": instructions, registers,
    #: shared bytes), as the port's docstring gives them.
    machine: dict = field(default_factory=dict)
    #: Where they differ, why, as far as the port knows (the docstring says it too).
    differs: str = ""
    #: Where the kernel calls the function at sites Triton lowers differently: each site, what sets
    #: it apart, and the port written for it (``<name>_<k>``, which ``<name>`` picks there).
    sites: tuple[str, ...] = ()


PROBE = "hybrid_port_probe"


def probe(fn: JITFunction, entry: dict[str, str] | None = None):
    """A ``@gluon.jit`` function with ``fn``'s parameters that only calls ``fn``: swapped into a
    Triton kernel, it is a Gluon region built for the layouts the host gives its operands, and
    ``fn`` inside it a Triton region lowered for exactly those layouts. ``entry``: parameter ->
    a Gluon layout expression it is converted to first, so that ``fn`` is lowered for that one."""
    params = parameters(fn, {p.name for p in fn.params if p.is_constexpr})
    names = ", ".join(p.name for p in fn.params)
    converts = "".join(f"    {name} = gl.convert_layout({name}, {layout})\n" for name, layout in (entry or {}).items())
    call = f"{'return ' if returns_value(fn) else ''}{fn.__name__}({names})"   # a function that returns nothing: a statement
    source = (f"from triton.experimental import gluon\nfrom triton.experimental.gluon import language as gl\n\n\n"
              f"@gluon.jit\ndef {PROBE}({params}):\n{converts}    {call}\n")
    path = Path(f"<{PROBE} of {fn.__name__}>")
    return load_port(source, PROBE, path, {fn.__name__: fn})


@dataclass(frozen=True)
class Capture:
    """A call's recorded lowering, and what the port written from it needs besides."""
    call: RecordedCall
    crossings: Crossings
    caveats: tuple[str, ...]
    original: object   # the kernel as written, built (``hybrid.FusedBinary``): what the port is measured against
    site: tuple[str, int] | None = None   # a Triton kernel's call of the function (file, line), which it inlines
    sites: tuple[Site, ...] = ()          # every call of the function in the kernel, in call order


def capture(kernel, fn: JITFunction, signature: dict, constexprs: dict, target: str, **options) -> Capture:
    """The recorded lowering of each of ``kernel``'s calls of ``fn`` (``Capture.sites``; the
    first's also as ``call``). In a Gluon kernel a call is a Triton region already; in a Triton
    kernel ``fn`` is called through ``probe``, so that it is lowered for the layouts Triton's passes
    give the call's operands in that kernel. A Triton kernel's single specialization is lowered
    again as the kernel without the probe has its tiles (``_as_unported``)."""
    import hybrid
    probed = not isinstance(jit_function(kernel), GluonJITFunction)
    caveats: tuple[str, ...] = ()
    original = kernel
    kernel = with_region(jit_function(kernel), fn, probe(fn)) if probed else as_hybrid(jit_function(kernel))
    try:
        with always_compiling():
            with triton_regions.recording_lowerings() as recorded:
                built = hybrid.compile(kernel, signature, constexprs, target, **options)
            unported = built   # a Gluon kernel with the Triton region is the kernel as written
            if probed:
                unported = hybrid.compile(as_hybrid(jit_function(original)), signature, constexprs, target, **options)
                if len(specializations(_sites(built, recorded, fn, probed))) == 1:   # (read at the first call only)
                    built, recorded, caveats = _as_unported(jit_function(original), unported, kernel, fn, built,
                                                            recorded, signature, constexprs, target, options)
    except Exception as exc:
        raise PortError(f"{fn.__name__} ({where(fn)}) cannot be lowered for its call in {kernel.__name__} on {target}"
                        f"{' (through a Gluon probe region, for a Triton kernel)' if probed else ''}: "
                        f"{_root_cause(exc)}; nothing was written") from exc
    sites = _sites(built, recorded, fn, probed)
    if not sites:
        raise PortError(f"{kernel.__name__} does not call {fn.__name__} when built for {target}: a port from "
                        f"Triton's IR is written for a call that the kernel makes directly")
    site = next(((r.call_site.file, r.call_site.line) for r in built.regions
                 if probed and r.language == "gluon" and r.function == PROBE), None)
    return Capture(sites[0].call, sites[0].crossings, caveats, unported, site, sites)


@contextlib.contextmanager
def always_compiling():
    """Within the block Triton compiles even what it has cached: a cache hit would not run code
    generation, so there would be nothing to record."""
    always = os.environ.get("TRITON_ALWAYS_COMPILE")
    os.environ["TRITON_ALWAYS_COMPILE"] = "1"
    try:
        yield
    finally:
        if always is None:
            os.environ.pop("TRITON_ALWAYS_COMPILE")
        else:
            os.environ["TRITON_ALWAYS_COMPILE"] = always


def _sites(built, recorded: list, fn: JITFunction, probed: bool) -> tuple[Site, ...]:
    """Each call of ``fn`` in the ``built`` kernel, in call order: where the kernel makes it (a
    Triton kernel's probe region; a Gluon kernel's Triton region), its recorded lowering, and how
    the kernel moved its inputs there."""
    calls = [call for call in recorded if call.fn is fn or getattr(call.fn, "fn", None) is fn.fn]
    regions = [r for r in built.regions if r.language == "triton" and r.function == fn.__name__]
    callers = [r for r in built.regions if r.language == "gluon" and r.function == PROBE] if probed else regions
    if len(regions) != len(calls) or len(callers) != len(calls):   # calls and regions are made in the same order
        regions, callers = [None] * len(calls), [None] * len(calls)
    return tuple(Site(f"{shown(caller.call_site.file)}:{caller.call_site.line}" if caller else f"call {k + 1}", call,
                      Crossings(shared_handoffs(built.asm["ttgir"], region.index if region else None),
                                made_in_place(built.boundaries, region.index if region else None)),
                      (caller.call_site.file, caller.call_site.line) if caller and probed else None)
                 for k, (call, region, caller) in enumerate(zip(calls, regions, callers)))


def _as_unported(original, original_built, kernel, fn, built, recorded: list, signature: dict, constexprs: dict,
                 target: str, options: dict) -> tuple:
    """The probe ``kernel`` built again, its region taking and loading each tile in the layout the
    ``original`` kernel (built: ``original_built``) has it in (``_read_unported``), with that
    build's recording; the first build and its recording where nothing differs, or where this
    fails (the first port is right, only slower). And the port's caveats: what the original does
    that no port of ``fn`` can."""
    import hybrid
    try:
        unported = _read_unported(original, original_built, built)
    except Exception:   # noqa: BLE001 - an optimization of a port that is already right
        return built, recorded, ()
    caveats = (f"{original.__name__} software-pipelines the loop around this call (Triton issues the function's "
               f"loads for a later iteration ahead of it), and a Gluon call is opaque to that pipeliner: the "
               f"kernel issues the port's loads of its parameters itself, before the call, where they are "
               f"pipelined again (hybrid.caller_load), but any other load of the port runs when the call runs; "
               f"to keep its pipelining, move that loop into a @triton.jit function of its own and port that "
               f"function", ) if unported.pipelined else ()
    if not unported.results and not unported.inputs:
        return built, recorded, caveats
    try:
        if unported.inputs:   # the probe converts them first: its Triton region is lowered for those layouts
            kernel = with_region(original, fn, probe(fn, unported.inputs))
        with gluon_regions.returning(PROBE, unported.results), triton_regions.recording_lowerings() as again:
            return hybrid.compile(kernel, signature, constexprs, target, **options), again, caveats
    except Exception:   # noqa: BLE001 - as above
        return built, recorded, caveats


@dataclass(frozen=True)
class Unported:
    """What the Triton kernel without the port does at the call that the probe's build does not."""
    results: dict     # result index -> (layout, shape, dtype) the kernel has that tile in
    inputs: dict      # parameter -> a Gluon layout expression: the layout the kernel makes that tile in
    pipelined: bool   # the kernel's own loop around the call pipelines the function's memory reads


def _read_unported(kernel, unported, built) -> Unported:
    """The Triton ``kernel`` without the port (built: ``unported``), read at the call the probe
    in ``built`` replaced: the layouts it has the probe's tiles in where they differ from those in
    ``built``, and whether its own loop pipelines the function's reads (``_READS`` a loop of it
    carries). Triton coalesces a function's load for the function alone, where the
    kernel that inlines it coalesces it with the kernel's other memory ops (upstream layer norm's
    row, eight halves a thread there, one alone); and a host passes a pointer tile to a Gluon call
    in a layout of its own, where the kernel that inlines the function makes it in the layout the
    function's loads take (upstream matmul's K loop as a helper, its pointers carried through the
    loop). The function's ops in the kernel are those whose location resolves to the call's line;
    its result, the ones of them a later op uses; an argument, a value made before that they use;
    each matched by its tile's shape and element type, in one blocked layout."""
    site = next((r.call_site for r in built.regions if r.language == "gluon" and r.function == PROBE), None)
    crossing = [b for b in built.boundaries if site and b.function == PROBE and b.direction in ("in", "out")]
    if not crossing:
        return Unported({}, {}, False)
    module = parse(unported.asm["ttgir"], kernel.__name__)
    mine: dict[str, tuple[str, str]] = {}     # a value the call's ops make -> (its op's types, its layout alias)
    theirs: dict[str, tuple[str, str]] = {}   # a value made before, outside them -> the same
    used: set[str] = set()                    # values ops outside the call's use
    taken: set[str] = set()                   # values the call's ops use
    read: set[str] = set()                    # what the call's memory reads give (a tile, a copy's token)
    addressed: list[str] = []                 # the types of the call's memory reads (their pointer tiles')
    carried: set[str] = set()                 # values the kernel's own loops carry (their inits and yields)

    def visit(block, loop: bool = False) -> None:
        for op in block.ops:
            where = module.locations.get(op.loc)
            at_call = where is not None and (where.file, where.line) == (site.file, site.line)
            if at_call and op.name in _READS:
                read.update(op.results)
                addressed.append(op.types)
            elif not at_call and (op.name == "scf.for" or op.name == "scf.yield" and loop):
                carried.update(op.operands)
            layouts = re.findall(r"tensor<[^,>]+, (#\w+)[>,]", op.types)   # an alias: #blocked1, #mma
            if layouts:
                (mine if at_call else theirs).update((result, (op.types, layouts[-1] if at_call else layouts[0]))
                                                     for result in op.results)
            (taken if at_call else used).update(op.operands)
            for region in op.regions:
                visit(region, op.name == "scf.for")

    visit(module.body)

    def one_blocked(found: set, boundary) -> str | None:
        # (a region reloads a tile, and the probe converts one, in a blocked layout only)
        layout = found.pop() if len(found) == 1 else None
        return layout if layout and layout.startswith("#ttg.blocked<") and layout != boundary.from_layout else None

    def layout_of(boundary, values: dict, wanted: set) -> str | None:
        tile = rf"tensor<{'x'.join(map(str, boundary.shape))}x{re.escape(boundary.dtype)}(?!\w)"
        return one_blocked({module.aliases.get(alias, alias) for value, (types, alias) in values.items()
                            if value in wanted and re.search(tile, types)}, boundary)

    def read_through(boundary) -> str | None:
        """The layout of the call's reads of a pointer tile of ``boundary``'s shape, where
        ``boundary`` is that tile or a mask of its shape: a pipelined read's (the port's caller
        load is then issued in it, as the kernel issued it)."""
        if boundary.dtype != "i1" and not boundary.dtype.startswith("!tt.ptr<"):
            return None
        element = re.escape(boundary.dtype) if boundary.dtype != "i1" else r"!tt\.ptr<\w+>"
        tile = rf"tensor<{'x'.join(map(str, boundary.shape))}x{element}, (#\w+)>"
        return one_blocked({module.aliases.get(m.group(1), m.group(1)) for types in addressed
                            if (m := re.search(tile, types))}, boundary)

    results, inputs = {}, {}
    pipelined = bool(read & carried)
    for b in crossing:
        if b.direction == "out" and (layout := layout_of(b, mine, used)):
            results[b.index] = (layout, b.shape, b.dtype)
        elif b.direction == "in" and (layout := layout_of(b, theirs, taken - set(mine))
                                      or pipelined and read_through(b)):
            layouts = Layouts({})
            inputs[b.value] = layouts.expression(layouts.name(layout, list(b.shape)))
    return Unported(results, inputs, pipelined)


#: Ops that read global memory (a load, AMD's buffer load, an async copy and its commit's token):
#: one of the call's that a loop of the kernel's own carries is pipelined by that loop.
_READS = ("tt.load", "amdg.buffer_load", "ttg.async_copy_global_to_local", "ttg.async_commit_group",
          "amdg.buffer_load_to_local", "ttng.async_tma_copy_global_to_local")


@dataclass(frozen=True)
class Crossings:
    """How the kernel the port is written for moved the region's inputs across its boundary,
    by input leaf index: what the port does the same way, or tells its caller."""
    handoffs: dict[int, str]     # handed over through shared memory, in that shared layout (the planner's choice)
    made: frozenset[int]         # constants and index arithmetic the kernel made in the layout the region wanted


def made_in_place(boundaries, region: int | None) -> frozenset[int]:
    """The input leaves of ``region`` that the built kernel made in the layout the region wanted
    (splat constants, index arithmetic from scalars), so that they cost no conversion there."""
    return frozenset(b.index for b in boundaries
                     if b.region == region and b.direction == "in" and b.reason in MADE_IN_PLACE)


def _converted_to(module, argument: str) -> str | None:
    """The one layout every use of ``argument`` in the region converts it to, if that is all the
    region does with it (then the port converts it once, from whatever layout it arrives in)."""
    found = {TensorType.parse(op.types.split("->")[-1]).layout if op.name == "ttg.convert_layout" else None
             for op, _ in uses(module.body, argument)}
    return found.pop() if len(found) == 1 and None not in found else None


def shared_handoffs(ttgir: str, region: int | None) -> dict[int, str]:
    """Per input leaf of ``region``, the shared layout (an attribute's full text) of the handoff
    the boundary planner chose for it in the built kernel, where it chose one over a conversion."""
    if region is None:
        return {}
    aliases = dict(re.findall(r"^(#\w+) = (#ttg\.[^\n]*)$", ttgir, flags=re.M))
    found = re.finditer(rf'ttg\.local_alloc %\S+ {{{TAG} = "{region}:in:(\d+)"}} : \([^)]*\) -> '
                        rf'!ttg\.memdesc<[\dx]+x\w+, (#[\w.]+(?:<[^>]*>)?)', ttgir)
    return {int(m.group(1)): aliases.get(m.group(2), m.group(2)) for m in found}


@dataclass(frozen=True)
class Written:
    """One port function as ``written_function`` writes it, before the module around it."""
    function: str                # its source, ``@gluon.jit`` and all
    helpers: list[str]           # the functions it calls (combine functions, while conditions)
    imports: set[str]
    constants: dict[str, str]    # the parameters made in place (``TtgirPort.made_in_place``)


def emit(fn: JITFunction, call: RecordedCall, target: str, port_name: str, kernel_name: str, num_warps: int,
         written_by: str = "", crossings: Crossings | None = None, inlined: Inlined | None = None,
         caller_loads: bool = False) -> tuple[str, dict[str, str]]:
    """The port's module (``written_function``, and the header) and its constants."""
    written = written_function(fn, call, target, port_name, kernel_name, crossings, inlined, caller_loads)
    return module_source(fn, target, num_warps, kernel_name, written_by, written.imports,
                         [*written.helpers, written.function]), written.constants


def module_source(fn: JITFunction, target: str, num_warps: int, kernel_name: str, written_by: str, imports: set[str],
                  parts: list[str], sites: str = "") -> str:
    """The port's module: its header (``sites``: a paragraph on its several ports), then ``parts``."""
    header = HEADER.rstrip("\n").format(
        function=f"{fn.fn.__module__}.{fn.__name__}", target=target, num_warps=num_warps, kernel=kernel_name,
        claim=CLAIM, written=sites + CAVEATS + (f"\n\nWritten by: {written_by}" if written_by else ""),
        imports="\n".join(sorted(imports)))
    return "\n\n\n".join(part for part in [header, *parts] if part) + "\n"


def written_function(fn: JITFunction, call: RecordedCall, target: str, port_name: str, kernel_name: str,
                     crossings: Crossings | None = None, inlined: Inlined | None = None,
                     caller_loads: bool = False) -> Written:
    """The port: ``fn``'s parameters, the lowered region's ops, its results returned;
    and, per parameter the kernel passes as a splat constant, the layout the port computes it in
    (a Gluon expression: made there by the caller, it costs no conversion).
    ``crossings``: how the kernel moved each input across the boundary; an input handed over
    through shared memory is handed over the same way in the port. A parameter the call passed a
    constant for was folded into the IR: the port takes it as a constexpr and asserts the value.
    ``inlined``: write the ops as the Triton kernel that inlines ``fn`` has them instead, each
    parameter converted on entry to every layout the kernel takes it in. ``caller_loads``: write
    the function's first loads as ``hybrid.caller_load`` (the kernel's loop pipelined them). The
    header keeps two placeholders, ``CLAIM`` and ``CAVEATS``, for what the build shows."""
    lowered, leaf_names = call.lowered, call.leaf_names
    module = parse(call.text, REGION_FUNCTION)
    if any(re.match(r"\w+\[", n) for n in leaf_names):   # a tuple's element (a descriptor's shape[i] is fine)
        raise PortError(f"{fn.__name__} ({where(fn)}) takes a tuple: a port from Triton's IR takes tensors, "
                        f"scalars and constexprs")
    scalars = [n for n, t in zip(leaf_names, lowered.leaf_is_tensor) if not t]
    tensors = [n for n, t in zip(leaf_names, lowered.leaf_is_tensor) if t]
    params = {ssa: name for (ssa, _), name in zip(module.args, scalars + tensors)}
    if inlined is None:
        emitter, constants = _region_entry(module, params, lowered, crossings or Crossings({}, frozenset()), kernel_name)
    else:
        emitter, constants = _inlined_entry(inlined, params), {}
    emitter.caller_loads = caller_loads
    try:
        emitter.block(emitter.module.body, 1)
    except Unsupported as exc:
        at = f"{shown(exc.where.file)}:{exc.where.line}" if exc.where else where(fn)
        raise PortError(f"{fn.__name__} cannot be written as Gluon for {target}: {exc.op.name} at {at}: {exc.why}. "
                        f"Nothing was written; port this function by hand or with the translator "
                        f"(hybrid port start)") from exc
    results = [emitter.outputs[j] for j in sorted(emitter.outputs)] if inlined is None else \
        [emitter.value(value) for value in inlined.results]
    layouts = [f"    {definition}" for definition in emitter.layouts.defs]   # named once, at the top
    body = _used(layouts + emitter.entry + emitter.lines + ([f"    return {', '.join(results)}"] if results else []))
    constexprs = {p.name for p in fn.params if p.is_constexpr} | set(call.specialized)
    signature = parameters(fn, constexprs)
    body = [f"    gl.static_assert({name} == {value!r}, \"{port_name} was written for {name} == {value!r}, the "
            f"constant {kernel_name} passes: port the function again for another value\")"
            for name, value in call.specialized.items()] + \
        [f"    gl.static_assert({name} == {value!r}, \"{port_name} was written for {name} == {value!r}, as "
         f"{kernel_name} calls it: port the function again for another value\")"   # its ops hold it, folded
         for name, value in call.constexprs.items() if literal(value)] + body
    return Written(f"@gluon.jit\ndef {port_name}({signature}):\n" + "\n".join(body or ["    pass"]), emitter.helpers,
                   emitter.imports | emitter.layouts.imports, constants)


def _region_entry(module, params: dict[str, str], lowered, crossings: Crossings, kernel_name: str) \
        -> tuple[Emitter, dict[str, str]]:
    """An emitter for the region Triton lowered on its own, each tensor parameter converted on
    entry to the layout the region takes it in; and the parameters made in place (see ``emit``)."""
    emitter = Emitter(module, params)
    types = dict(module.args)
    tensor_ssa = [ssa for ssa, ty in module.args if ty.startswith("tensor<")]
    leaf_of = dict(zip(tensor_ssa, (k for k, is_tensor in enumerate(lowered.leaf_is_tensor) if is_tensor)))
    emitter.handoffs = {ssa: crossings.handoffs[k] for ssa, k in leaf_of.items() if k in crossings.handoffs}
    constants = {}
    for ssa in tensor_ssa:
        ty, name = TensorType.parse(types[ssa]), params[ssa]
        # an input the kernel made in place at the boundary (the caller is told to make it in the layout
        # the region converts it to) is converted once, straight there; any other keeps the region's ops
        # where the region had them (the same machine code)
        wanted = _converted_to(module, ssa) if leaf_of[ssa] in crossings.made and ssa not in emitter.handoffs else None
        layout = emitter.layouts.name(wanted or ty.layout, ty.shape)
        if wanted:   # the region only converts it: the port converts it once, straight to that layout
            emitter.converted_on_entry[ssa] = wanted
            constants[name] = emitter.layouts.expression(layout)
            emitter.imports.add("import hybrid")
            emitter.entry += [f"    # {name}: {kernel_name} passes a constant or index arithmetic, made in {layout} at "
                              "the Triton region's", "    # boundary; hybrid.convert_in makes it there too (a plain "
                              "conversion for any other value)"]
            emitter.entry.append(f"    {name} = hybrid.convert_in({name}, {layout})")
        else:
            emitter.entry.append(f"    {name} = gl.convert_layout({name}, {layout})")   # a no-op for the layout it arrives in
    return emitter, constants


def _inlined_entry(inlined: Inlined, params: dict[str, str]) -> Emitter:
    """An emitter for the kernel's copy of the call's ops, each kernel value they take bound to its
    parameter: a scalar as it is, a tile converted to the layout the kernel has it in (a parameter
    the kernel has in two layouts, once to each)."""
    emitter = Emitter(inlined.module, {})
    emitter.reserve(params.values())
    emitter.buffered = inlined.buffered
    emitter.entered = set(inlined.arguments)
    types = dict(inlined.module.args)
    for value, argument in inlined.arguments.items():
        name = params[argument]
        if not types[value].startswith("tensor<"):
            emitter.values[value] = name
            continue
        ty = TensorType.parse(types[value])
        layout = emitter.layouts.name(ty.layout, ty.shape)
        converted = f"gl.convert_layout({name}, {layout})"
        if value in inlined.remade:   # made from scalars: the caller's arithmetic is made again in that layout
            emitter.imports.add("import hybrid")
            converted = f"hybrid.convert_in({name}, {layout})"
        if list(inlined.arguments.values()).count(argument) == 1:
            emitter.values[value] = name
            emitter.entry.append(f"    {name} = {converted}")
        else:
            emitter.entry.append(f"    {emitter.bind(value, name=name)} = {converted}")
    return emitter


def _used(body: list[str]) -> list[str]:
    """``body`` without the constant tiles nothing uses (a caller load's ``other`` is a scalar)."""
    made = {m.group(1): k for k, line in enumerate(body) if (m := re.match(r"\s+(\w+) = gl\.full\(", line))}
    text = "\n".join(line.split("  # ")[0] for line in body if not line.lstrip().startswith("#"))   # code only
    unused = {k for name, k in made.items() if len(re.findall(rf"\b{name}\b", text)) == 1}
    return [line for k, line in enumerate(body) if k not in unused]


def load_port(source: str, name: str, path: Path, scope: dict | None = None):
    """Import the port's source as a module (its functions find their source through linecache)."""
    filename = str(path.resolve()) if path.suffix == ".py" else str(path)
    namespace = {"__name__": path.stem, "__file__": filename, **(scope or {})}
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]


def port(kernel, fn: JITFunction, signature: dict, constexprs: dict, target: str, *, name: str | None = None,
         path: Path | None = None, written_by: str = "", **options) -> TtgirPort:
    """Port ``fn`` as ``kernel`` (a ``@hybrid.jit`` Gluon kernel) calls it, built for ``target``
    with ``signature``, ``constexprs`` and backend ``options``; the port is built into the kernel
    once before it is returned (a failure is a ``PortError``)."""
    name = name or f"{fn.__name__}_gluon_{target}"
    path = path or Path(f"{name}.py")
    captured = capture(kernel, fn, signature, constexprs, target, **options)
    original = figures(captured.original)
    groups = specializations(captured.sites)

    def written(inlined: Inlined | None = None) -> tuple[str, dict, dict, bool]:
        """The source, its constants, the kernel's figures with it, and whether every load it
        writes is a caller load the kernel issued before the call (``caller_loads``)."""
        source, constants = emit(fn, captured.call, target, name, kernel.__name__, options.get("num_warps", 4),
                                 written_by, captured.crossings, inlined, caller_loads=bool(captured.caveats))
        swapped = _swapped(kernel, fn, source, name, path, signature, constexprs, target, options)
        written_loads = len(_LOADS_WRITTEN.findall(source))
        callers = source.count("hybrid.caller_load(")
        return source, constants, figures(swapped), 0 < callers == written_loads <= caller_loads.hoisted(
            swapped.boundaries)

    sites: tuple[str, ...] = ()
    try:
        if len(groups) > 1:
            source, constants, machine, sites = _per_specialization(kernel, fn, groups, target, name, path, written_by,
                                                                    signature, constexprs, options)
            hoisted = True   # (no caller loads: the caveat is for a single specialization's pipelined loop)
        else:
            source, constants, machine, hoisted = written()
    except PortError:
        raise
    except Exception as exc:
        raise PortError(f"the port of {fn.__name__} ({where(fn)}) written from Triton's IR for {target} does not "
                        f"build ({_root_cause(exc)}); nothing "
                        f"was written. This is a bug of `hybrid port`, please report it with the function") from exc
    differs = ""
    if any(_excess(machine, original)) and captured.site is not None and len(groups) == 1:
        # the function lowered alone laid its ops out for itself: write them as the kernel has them
        try:
            inlined = read_inlined(captured.original.asm["ttgir"], jit_function(kernel).__name__,
                                   captured.call.text, captured.site)
            again = written(inlined)
        except Exception:   # noqa: BLE001 - NotInlined, or a port that does not build: the first is right, only slower
            again = None
        if again is not None and _excess(again[2], original) < _excess(machine, original):
            (source, constants, machine, hoisted), differs = again, inlined.differs
    elif any(_excess(machine, original)) and len(groups) > 1:
        # each specialization's port written from the kernel's own copy at its first site, where it reads
        copies = [_inlined_at(captured.original, kernel, group[0]) for group in groups]
        if any(copies):
            try:
                again = _per_specialization(kernel, fn, groups, target, name, path, written_by, signature, constexprs,
                                            options, copies)
            except Exception:   # noqa: BLE001 - as above
                again = None
            if again is not None and _excess(again[2], original) < _excess(machine, original):
                source, constants, machine, sites = again
                differs = "; ".join(dict.fromkeys(copy.differs for copy in copies if copy and copy.differs))
    # the kernel's loop pipelines the loads the port's caller issues again; any other it cannot
    caveats = () if hoisted else captured.caveats
    differs = differs if machine != original and not caveats else ""   # (a caveat says it already)
    machine = {"original": original, "port": machine}
    source = source.replace(CLAIM, textwrap.fill(measured(machine, target, kernel.__name__, caveats, differs), 100))
    source = source.replace(CAVEATS, "".join(f"\n\nCaveat: {caveat}." for caveat in caveats))
    return TtgirPort(name, source, f"{fn.fn.__module__}.{fn.__name__}", target, constants, caveats, machine, differs,
                     sites)


def _inlined_at(original, kernel, site: Site) -> Inlined | None:
    """The Triton kernel's own copy of the call at ``site`` (built: ``original``), where it reads
    as one function (``inlined.read``); else None: the port of that site's region stays."""
    if site.at is None:
        return None
    try:
        return read_inlined(original.asm["ttgir"], jit_function(kernel).__name__, site.call.text, site.at)
    except Exception:   # noqa: BLE001 - NotInlined: the region Triton lowered alone is the port there
        return None


def _per_specialization(kernel, fn: JITFunction, groups: list, target: str, name: str, path: Path, written_by: str,
                        signature: dict, constexprs: dict, options: dict,
                        copies: list[Inlined | None] | None = None) -> tuple[str, dict, dict, tuple[str, ...]]:
    """The port of a function ``kernel`` calls at sites Triton lowers differently (``groups``, see
    ``sites``): one port per specialization, ``<name>_<k>``, and ``<name>``, which picks each
    site's; its source, the parameters every port makes in place, the kernel's figures with it,
    and each site with the port it takes. ``copies``: per specialization, the kernel's own copy of
    the call to write its port from (``inlined``), or None for the region Triton lowered alone."""
    specs, imports = dispatch(fn, groups)
    parts, made = [], []
    for k, spec in enumerate(specs):
        written = written_function(fn, spec.call, target, f"{name}_{k}", kernel.__name__, spec.sites[0].crossings,
                                   copies[k] if copies else None)
        helpers, function = suffixed(written.helpers, written.function, f"_{k}")
        parts += [*helpers, function]
        imports |= written.imports
        made.append(written.constants)
    constant = set.intersection(*(set(s.call.specialized) for s in specs))   # (at every site: a constexpr)
    parts.append(dispatcher(fn, name, specs, constant | {p.name for p in fn.params if p.is_constexpr}))
    sites = tuple(f"{site.described()}: {name}_{k}" for k, spec in enumerate(specs) for site in spec.sites)
    said = "\n\n" + textwrap.fill(
        f"{kernel.__name__} calls {fn.__name__} at {len(sites)} sites that Triton lowers in {len(specs)} ways, so each "
        f"way has a port of its own, and {name}, which the kernel calls at every site, picks each site's at compile "
        f"time:", 100) + "".join(f"\n- {site}" for site in sites)
    source = module_source(fn, target, options.get("num_warps", 4), kernel.__name__, written_by, imports, parts, said)
    swapped = _swapped(kernel, fn, source, name, path, signature, constexprs, target, options)
    in_place = {p: layout for p, layout in made[0].items() if all(m.get(p) == layout for m in made)}
    return source, in_place, figures(swapped), sites


def _swapped(kernel, fn: JITFunction, source: str, name: str, path: Path, signature: dict, constexprs: dict,
             target: str, options: dict):
    """``kernel`` built with the port written as ``source`` in place of ``fn``."""
    import hybrid
    candidate = load_port(source, name, path)
    return hybrid.compile(with_region(jit_function(kernel), fn, candidate), signature, constexprs, target, **options)


def _excess(figures: dict, original: dict) -> tuple:
    """How far the kernel with a port is above the kernel without it: shared memory, then
    instructions, then registers (below is no worse: a port may build to less)."""
    return tuple(max(figures[key] - original[key], 0) for key in ("shared_bytes", "instructions", "registers"))


#: A load written in a port: Gluon's, hybrid's caller load, an AMD buffer load (Gluon's or hybrid's).
_LOADS_WRITTEN = re.compile(r"\b(?:gl\.load|hybrid\.caller_load|buffer_load)\(")
#: Where the header says what the kernel with the port builds to, once it is built.
CLAIM = "<the kernel with the port, measured>"
#: Where the header says what the kernel with the port does differently, once it is built.
CAVEATS = "<what the kernel with the port does differently>"


def measured(machine: dict, target: str, kernel: str, caveats: tuple, differs: str = "") -> str:
    """What ``kernel`` with the port built to against without it (``TtgirPort.machine``), one
    sentence for the port's docstring and ``hybrid port start``: shown, not claimed."""
    port, original = machine["port"], machine["original"]
    said = (f"{port['instructions']} instructions, {port['registers']} registers and {port['shared_bytes']} B of "
            f"shared memory on {target}")
    if port == original and not caveats:
        return f"{kernel} with this port swapped in builds to {said}, as without it."
    return (f"{kernel} with this port swapped in builds to {said}, against {original['instructions']}, "
            f"{original['registers']} and {original['shared_bytes']} B without it"
            f"{' (the caveat below)' if caveats else f': {differs}' if differs else ''}.")


def _root_cause(exc: BaseException) -> str:
    """The innermost exception of a chain, as one line."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    lines = [line for line in str(exc).strip().splitlines() if not line.strip().startswith("hint:")]
    return f"{type(exc).__name__}: {lines[-1] if lines else ''}"   # the reason, not a RegionError's hint
