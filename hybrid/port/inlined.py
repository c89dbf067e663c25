"""The ported function's ops as the Triton kernel that inlines it has them.

A function lowered on its own (the probe's region) is laid out for itself. The kernel that
inlines it lays the same ops out together with its own: upstream layer norm backward loads the
partial dW four halves a thread, as its other row loads, and converts only before its one-a-thread
stores, where the function alone loads one a thread and converts the partial sums up front.
Writing the port from the kernel's copy of those ops gives the kernel's layouts op for op.

The kernel's ops of the call are those whose location is a call site at the call's line. Each
value they take from the rest of the kernel is matched to a parameter through the probe's region:
the same op there (its name and source positions) takes that parameter, or a conversion of it.
A value they make that the rest of the kernel uses is matched to a result the same way.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from interop.lowering.lower_triton import REGION_FUNCTION
from interop.stitching import remat

from .errors import shown
from .gluon_emit import TensorType
from .ttgir_text import Block, Module, Op, parse, signature_split, used_from_outside, uses

#: An op the region marks a result with (``hybrid.out.<j>``, in ``tt.elementwise_inline_asm``).
_SINK = "tt.elementwise_inline_asm"


class NotInlined(Exception):
    """The kernel's copy of the call cannot be read as one function (the port falls back to the
    region Triton lowered on its own)."""


@dataclass(frozen=True)
class Inlined:
    """The call's ops as the kernel has them, as a module ``gluon_emit`` can write out."""
    module: Module               # body: the call's ops (and the constants they use); locations as the callee's
    arguments: dict[str, str]    # a kernel value the ops take -> the region argument (parameter leaf) it is
    results: list[str]           # per result of the function, the kernel value the rest of the kernel uses
    #: The values the kernel makes from scalars by index arithmetic (``remat``'s ops): the port takes
    #: them through ``hybrid.convert_in``, which makes them again in the layout wanted, as the kernel does
    remade: frozenset[str] = frozenset()
    #: The pointer tiles the kernel's AMD buffer ops were made from: the port accesses them with
    #: ``hybrid.amd.buffer_load``/``buffer_store``, which the kernel issues as those buffer ops again
    buffered: frozenset[str] = frozenset()
    #: What the port does otherwise than the kernel, said where the kernel with it differs
    differs: str = ""


def read(kernel_text: str, kernel_name: str, region_text: str, site: tuple[str, int]) -> Inlined:
    """The call at ``site`` (file, line) of the kernel printed as ``kernel_text``, matched against
    the function's region lowered on its own (``region_text``). AMD buffer ops are written as the
    kernel has them where the port can make their base and offsets, else as the accesses of the
    pointer tiles they were made from (``_as_pointer_tiles``)."""
    try:
        return _read(kernel_text, kernel_name, region_text, site, as_tiles=False)
    except NotInlined:
        if "amdg.buffer_" not in kernel_text:
            raise
        return _read(kernel_text, kernel_name, region_text, site, as_tiles=True)


def _read(kernel_text: str, kernel_name: str, region_text: str, site: tuple[str, int], as_tiles: bool) -> Inlined:
    kernel = parse(kernel_text, kernel_name, inlined_at=site)
    region = parse(region_text, REGION_FUNCTION)
    block, ops = _call_ops(kernel)
    ops = _without_staging(block, ops)
    tiles = _as_pointer_tiles(kernel, ops) if as_tiles else {}
    producers = _producers(kernel.body)
    order = {id(op): k for k, op in enumerate(_flatten(kernel.body.ops))}
    for tile, making in tiles.items():   # (made where its access is, if the port makes it)
        user = next(op for op in _flatten(ops) if tile in op.operands)
        producers.update((result, op) for op in making for result in op.results)
        order.update((id(op), order[id(user)] - 1 + k / len(making)) for k, op in enumerate(making))
    align = _Alignment(kernel, region, as_tiles)
    align.enter(ops)
    arguments: dict[str, str] = {}
    made: dict[int, Op] = {}   # kernel ops the port makes itself: constants, arithmetic the kernel shares with its caller
    for value in used_from_outside(Block([], ops), set()):
        producer = producers.get(value)
        if producer is not None and producer.name == "arith.constant":
            taken = _as_parameters(value, ops, align, producers)
            arguments.update(taken)
            if any(value in _all_operands(op) for op in ops):
                made[id(producer)] = producer
            continue
        found = align.sources(value, ops)
        parameter = _one_parameter(value, ops, align)
        if parameter and arguments.get(value, parameter) != parameter:   # (bound to another by ``made_alike``)
            arguments.update((_rename(value, parameter, user, k, producers, align), parameter)
                             for user, k in reversed(uses(Block([], ops), value)))
            continue
        if parameter:
            arguments[value] = parameter
            continue
        if sum(source.startswith("arg:") for source in found) > 1:   # the caller passed it for two parameters:
            arguments.update(_as_parameters(value, ops, align, producers))   # each use is the one it is there
            found = align.sources(value, ops)
            if not found:
                continue
        if not align.made_alike(value, ops, producers, arguments, made):
            raise NotInlined(f"the kernel's {value}, which the function's ops take there, is no one parameter of the "
                             f"function lowered alone ({', '.join(found) or 'no op of it matches'})")
    _rebased(arguments, producers, ops, made, align)
    ops = sorted(made.values(), key=lambda op: order.get(id(op), -1)) + ops
    _same_effects(ops, region, align)
    results = _results(block, ops, align)
    body = Block([], ops)
    known = {**dict(kernel.args), **_block_arguments(kernel.body),
             **{tile: making[0].types.split("->")[-1].strip() for tile, making in tiles.items()}}
    known.update((renamed, known[value]) for renamed, value in align.origin.items() if value in known)
    module = Module(kernel.aliases, kernel.locations,
                    [(v, known[v] if v in known else _type_of(v, producers)) for v in arguments], body,
                    kernel.target, kernel.positions)
    remade = frozenset(v for v in arguments if v in producers and producers[v].name in remat.MADE_AGAIN)
    differs = ("the kernel issues the function's loads and stores as AMD buffer ops from the scalar base and offsets "
               "it made each pointer tile from; the port takes the tile and asks for those ops "
               "(hybrid.amd.buffer_load/buffer_store), issued where Triton proves the tile's offsets in range"
               if tiles else "")
    return Inlined(module, arguments, results, remade, frozenset(tiles), differs)


def _one_parameter(value: str, ops: list[Op], align: "_Alignment") -> str | None:
    """The region argument the kernel's ``value`` is at each of its uses, if one is, and one use
    is it alone. A use whose op matches several of the region's (the stages of a pipelined loop's
    prologue, at one source position: the first takes the parameter, the next ones their
    iteration's sum of it) is that argument where one of them takes it."""
    each = [align.use_sources(value, user, k, ops) for user, k in uses(Block([], ops), value)]
    common = set.intersection(*each) if each else set()
    parameters = [source[4:] for source in common if source.startswith("arg:")]
    return parameters[0] if len(parameters) == 1 and any(found == {f"arg:{parameters[0]}"} for found in each) else None


def _as_parameters(value: str, ops: list[Op], align: "_Alignment", producers: dict[str, Op]) -> dict[str, str]:
    """The uses of the kernel's ``value`` where the function takes a parameter, each renamed to a
    value of its own (``_rename``): per such value, the region argument it is. A constant: the
    caller's ``tl.zeros`` accumulator, which the kernel also merged with the function's own zeros
    of a ``tl.dot`` (and attention backward's ``dk`` and ``dv`` zeros, one constant for two
    parameters); any value: one the caller passes for two parameters (attention backward's
    ``start_n`` as ``start_n`` and ``start_m``). The port takes the parameter at each; a use where
    the function's own op takes an expression of them stays (``made_alike``)."""
    taken: dict[str, str] = {}
    constant = value in producers and producers[value].name == "arith.constant"
    for user, k in reversed(uses(Block([], ops), value)):   # (renamed last to first: earlier uses keep their index)
        found = align.use_sources(value, user, k, ops)
        parameters = {source[4:] for source in found if source.startswith("arg:")}
        if not parameters or len(found) != 1 and not constant:   # (an op of a pipelined loop's prologue matches
            continue                                             # each stage's: ``made_alike`` tells them apart)
        if len(found) != 1:
            raise NotInlined(f"the kernel's constant {value} is a parameter of the function and something else in "
                             f"one op ({', '.join(sorted(found))})")
        argument = parameters.pop()
        if constant and user.name == "scf.for" and k in (1, 2):
            where = align.kernel.locations.get(user.loc)
            raise NotInlined(f"the kernel passes the constant {value} for the function's loop bound that the region "
                             f"takes as {argument} (the loop at {shown(where.file) if where else '?'}:"
                             f"{where.line if where else '?'}), and may have pipelined the loop for that trip count: "
                             f"a port taking the parameter would run that schedule for any other")
        taken[_rename(value, argument, user, k, producers, align)] = argument
    return taken


def _rename(value: str, argument: str, user: Op, k: int, producers: dict[str, Op], align: "_Alignment") -> str:
    """``user``'s operand ``k``, ``value``, renamed to the one it is as the region argument
    ``argument``: one kernel value the function takes as two parameters is two values of the
    port, each taken where the function takes its parameter."""
    renamed = f"{value}.{argument[1:]}"
    _replace(user, k, renamed)
    if value in producers:
        producers[renamed] = producers[value]
    align.origin[renamed] = align.origin.get(value, value)
    return renamed


def _replace(user: Op, k: int, value: str) -> None:
    """``user``'s operand ``k`` replaced by ``value``."""
    old = user.operands[k]
    begin, end = [m.span() for m in re.finditer(rf"{re.escape(old)}(?![\w$.\-#])", user.rest)][
        user.operands[:k].count(old)]
    user.rest = user.rest[:begin] + value + user.rest[end:]


def _rebased(arguments: dict[str, str], producers: dict[str, Op], ops: list[Op], made: dict[int, Op],
             align: "_Alignment") -> None:
    """Where the copy takes two of the kernel's scalars as one parameter, the one the caller
    passes and the one it made that from by adding a constant (attention backward's second
    ``_attn_bwd_dkdv`` call takes ``start_m``, ``start_n + 64``, and its pipelined prologue makes
    ``start_m + 32`` as ``start_n + 96``), each ``x + c`` of the other written as the same sum of
    the one passed, ``start_m + 32``: the kernel folded the caller's values into the function's
    ops, and the port takes the parameter. Any other use of it is refused."""
    def constant(value: str) -> int | None:
        op = producers.get(value)
        text = op.rest.split(":")[0].strip() if op is not None and op.name == "arith.constant" else ""
        return int(text) if re.fullmatch(r"-?\d+", text) else None

    everything = _flatten(list(made.values()) + ops)
    for passed, argument in list(arguments.items()):
        op = producers.get(passed)
        if op is None or op.name != "arith.addi" or op.types.strip() != "i32":
            continue
        for original, offset in (op.operands, op.operands[::-1]):
            folded = next((v for v, a in arguments.items() if a == argument and align.origin.get(v, v) == original),
                          None)
            if folded is None or constant(offset) is None:
                continue
            for user, k in uses(Block([], everything), folded):
                other = user.operands[1 - k] if user.name == "arith.addi" and len(user.operands) == 2 else None
                if other is None or constant(other) is None or user.types.strip() != "i32":
                    raise NotInlined(f"the kernel's {passed} and {folded} are both the function's parameter that "
                                     f"the region takes as {argument} there, one the other plus a constant, and "
                                     f"{user.name} takes {folded}: the kernel folded the caller's values into the "
                                     f"function's ops, which a port taking the parameter does not compute")
                sum_ = constant(other) - constant(offset)
                name = f"%c{sum_}_i32.rebased".replace("-", "m")
                if name not in producers:
                    producers[name] = Op("arith.constant", [name], f"{sum_} : i32", producers[other].loc)
                    made[id(producers[name])] = producers[name]
                _replace(user, k, passed)
                _replace(user, 1 - k, name)
            del arguments[folded]
            break
    used = {v for op in _flatten(list(made.values()) + ops) for v in _all_operands(op)}
    for key, op in list(made.items()):
        if op.name == "arith.constant" and not set(op.results) & used:
            del made[key]


def _call_ops(kernel: Module) -> tuple[Block, list[Op]]:
    """The block that holds the call's ops, and those ops in order, with any op of the kernel's
    between them that takes one's value and gives one of them its own (a conversion of the kernel's)."""
    found: list[tuple[Block, Op]] = []

    def visit(block: Block) -> None:
        for op in block.ops:
            if op.loc in kernel.inlined:
                found.append((block, op))
            else:
                for region in op.regions:
                    visit(region)

    visit(kernel.body)
    blocks = {id(block) for block, _ in found}
    if len(blocks) != 1:
        raise NotInlined(f"the kernel placed the function's ops in {len(blocks)} blocks (hoisted or pipelined out "
                         f"of the call)")
    block = found[0][0]
    mine = {id(op) for _, op in found}
    first, last = (next(k for k, op in enumerate(block.ops) if id(op) in mine),
                   max(k for k, op in enumerate(block.ops) if id(op) in mine))
    grown = True
    while grown:
        grown = False
        made = _made([op for op in block.ops if id(op) in mine])
        for k in range(first, last + 1):
            op = block.ops[k]
            if id(op) in mine or not set(op.operands) & made:
                continue
            later = _made([op])
            if any(set(_all_operands(o)) & later for o in block.ops[k + 1:last + 1] if id(o) in mine):
                mine.add(id(op))
                grown = True
    return block, [op for op in block.ops if id(op) in mine]


def _without_staging(block: Block, ops: list[Op]) -> list[Op]:
    """``ops`` less the kernel's staging of a value of theirs for its own use: a ``local_alloc``
    of their value (through an AMD in-thread transpose of it) read only by ``local_load`` ops that
    only the rest of the kernel uses. They carry the call's location because the conversion they
    replaced did, but they are the caller's: with the port in, the caller's passes stage its
    result again (``host_relayout`` transposes it in-thread as ``make_ttgir`` does), so the port
    returns the value as the kernel had it before them."""
    mine = {id(op) for op in ops}
    inside: dict[str, list[Op]] = {}
    outside: set[str] = set()
    for op in block.ops:
        for value in _all_operands(op):
            if id(op) in mine:
                inside.setdefault(value, []).append(op)
            else:
                outside.add(value)
    producers = {result: op for op in ops for result in op.results}
    staged: set[int] = set()
    for alloc in (op for op in ops if op.name == "ttg.local_alloc" and op.operands):
        loads = inside.get(alloc.results[0], [])
        if alloc.results[0] in outside or not loads or any(
                load.name != "ttg.local_load" or load.results[0] in inside or load.results[0] not in outside
                for load in loads):
            continue
        staged |= {id(alloc)} | {id(load) for load in loads}
        source = producers.get(alloc.operands[0])
        if source is not None and source.name == "amdg.in_thread_transpose" \
                and inside.get(source.results[0]) == [alloc] and source.results[0] not in outside:
            staged.add(id(source))
    return [op for op in ops if id(op) not in staged]


#: ``amdg.buffer_load``/``buffer_store``'s operands: ``[value, ]base[offsets][, mask][, other] : [!tt.ptr<T> ->] tile``
#: (Triton 3.6 prints the tile's type alone).
_BUFFER = re.compile(r"(?:(%[\w$.\-#]+), )?(%[\w$.\-#]+)\[(%[\w$.\-#]+)\](?:, (%[\w$.\-#]+))?(?:, (%[\w$.\-#]+))?"
                     r" : (?:!tt\.ptr<[^>]+> -> )?(tensor<.*>)")


def _as_pointer_tiles(kernel: Module, ops: list[Op]) -> dict[str, list[Op]]:
    """Rewrite the call's AMD buffer loads and stores as the ``tt.load``/``tt.store`` of the
    pointer tile they were made from: Triton's ``ConvertToBufferOps`` split that tile into the
    scalar base and offsets the kernel made it from, which a function taking the tile does not have
    (the port writes those accesses with ``hybrid.amd.buffer_load``/``buffer_store``, which the
    stitch issues as the same buffer ops where Triton's pass would). Returns, per tile, the ops that
    make it from the base and offsets (``tt.splat``, ``tt.addptr``): the port takes the tile as a
    parameter where the function does (made again in the access's layout, ``hybrid.convert_in``),
    or makes it so where the function makes it from its parameters."""
    tiles: dict[str, list[Op]] = {}
    for op in _flatten(ops):
        if op.name not in ("amdg.buffer_load", "amdg.buffer_store"):
            if op.name.startswith("amdg.buffer_"):
                where = kernel.locations.get(op.loc)
                raise NotInlined(f"the kernel issues the function's {op.name}"
                                 f"{f' at {shown(where.file)}:{where.line}' if where else ''}, which the port does "
                                 f"not write from a pointer tile")
            continue
        found = _BUFFER.fullmatch(op.rest)
        if found is None:
            raise NotInlined(f"an {op.name} form the port does not read: {op.rest}")
        value, base, offsets, mask, other, data = found.groups()
        ty = TensorType.parse(data)
        shape = "x".join(map(str, ty.shape))
        tile_type = f"tensor<{shape}x!tt.ptr<{ty.element}>, {ty.layout}>"
        tile = "%" + re.sub(r"[^\w$.\-]", "_", f"{base[1:]}.at.{offsets[1:]}.{ty.layout.lstrip('#')}")
        tiles[tile] = [Op("tt.splat", [f"{tile}.base"], f"{base} : !tt.ptr<{ty.element}> -> {tile_type}", op.loc),
                       Op("tt.addptr", [tile], f"{tile}.base, {offsets} : {tile_type}, tensor<{shape}xi32, {ty.layout}>",
                          op.loc)]
        rest = ", ".join(v for v in (tile, value, mask, other) if v)
        op.name, op.rest = ("tt.store" if value else "tt.load"), f"{rest} : {tile_type}"
    return tiles


def _all_operands(op: Op) -> list[str]:
    """The values ``op`` and the ops of its regions take."""
    found = list(op.operands)
    for region in op.regions:
        for inner in region.ops:
            found += _all_operands(inner)
    return found


def _made(ops: list[Op]) -> set[str]:
    """The values ``ops`` and their regions define (results and block arguments)."""
    made: set[str] = set()
    for op in ops:
        made.update(op.results)
        made.update(op.defines)
        for region in op.regions:
            made.update(arg for arg, _ in region.args)
            made |= _made(region.ops)
    return made


def _producers(block: Block) -> dict[str, Op]:
    found: dict[str, Op] = {}
    for op in block.ops:
        found.update((result, op) for result in op.results)
        for region in op.regions:
            found.update(_producers(region))
    return found


def _block_arguments(block: Block) -> dict[str, str]:
    """The types of the block arguments of ``block``'s regions (a loop's induction variable, carried values)."""
    found: dict[str, str] = dict(block.args)
    for op in block.ops:
        found.update(_loop_arguments(op))
        for region in op.regions:
            found.update(_block_arguments(region))
    return found


def _loop_arguments(op: Op) -> dict[str, str]:
    """An ``scf.for``'s induction variable and carried values with their types, which MLIR prints
    in the op's own line (``%iv = %lb to %ub step %s iter_args(%a = %init, ...) -> (types)``)."""
    if op.name != "scf.for":
        return {}
    iv, *carried = op.defines
    types = _top_level(op.rest.split(" -> ", 1)[1].split(" : ")[0].strip("() ")) if carried else []
    return {iv: op.types.strip() or "i32", **dict(zip(carried, types))}


def _type_of(value: str, producers: dict[str, Op]) -> str:
    """The type of ``value`` as far as the port's entry needs it: a tensor type with its shape and
    layout (the last of its producer's types, or its own of a multi-result op's), or a scalar's."""
    op = producers.get(value)
    if op is None:
        raise NotInlined(f"the type of {value} is not read here")
    if op.name == "scf.for" and value in op.results:   # a loop's result: the type of what it carries
        return list(_loop_arguments(op).values())[1 + op.results.index(value)]
    types = _top_level(re.split(r"->| to ", op.types)[-1].strip().strip("()"))
    return types[op.results.index(value)] if value in op.results and len(types) == len(op.results) else types[-1]


def _top_level(text: str) -> list[str]:
    """``text`` split at its commas outside ``<>``."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "<") - (ch == ">")
        if ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    return parts + [text[start:].strip()]


#: A load of the function the kernel shares between two calls (CSE: the same address, nothing
#: stored between): the port of a call that took it from the other issues it again, as the
#: function does.
_LOAD = "tt.load"

#: Ops whose count a port must keep: what they write or order.
_EFFECTS = ("tt.store", "tt.atomic_rmw", "tt.atomic_cas", "amdg.buffer_store", "amdg.buffer_atomic_rmw",
            "amdg.buffer_atomic_cas", "ttg.barrier", "gpu.barrier", "ttg.local_store", "ttng.async_tma_copy_local_to_global")


def _same_effects(ops: list[Op], region: Module, align: "_Alignment") -> None:
    """Refuse a copy whose stores, atomics and barriers are not the function's, each at its source
    position and as many times: one the kernel moved out of the call's ops (or merged) would be
    missing from the port, silently."""
    def counted(found: list[Op], positions: dict) -> dict:
        counts: dict = {}
        for op in found:
            if op.name in _EFFECTS:
                key = (op.name, positions.get(op.loc))
                counts[key] = counts.get(key, 0) + 1
        return counts

    mine, theirs = counted(_flatten(ops), align.kernel.positions), counted(_flatten(region.body.ops), region.positions)
    if mine != theirs:
        differing = sorted({key[0] for key in set(mine) ^ set(theirs)} | {key[0] for key in mine if mine[key] !=
                                                                            theirs.get(key)})
        raise NotInlined(f"the kernel's copy of the call has other {', '.join(differing)} ops than the function")


def _results(block: Block, ops: list[Op], align: "_Alignment") -> list[str]:
    """Per result index of the function, the value of ``ops`` the rest of the kernel uses. A value
    they make by an op without effects (``_pure``) that is no result is the caller's own
    expression, which the kernel merged with the function's (the same ``rn[None, :] < N``, or
    ``x - mean``, in both): the caller makes its own again once the port is in; and so is a load
    (another call's of the function, ``_LOAD``)."""
    mine = {id(op) for op in ops}
    rest = [op for op in block.ops if id(op) not in mine]
    made = {r: op for op in ops for r in op.results}
    used = {v for op in rest for v in _all_operands(op)} & set(made)
    results: dict[int, str] = {}
    for value in sorted(used):
        sinks = align.sinks(value, ops)
        if not sinks and (_pure(made[value]) or made[value].name == _LOAD):   # (the caller's own, or
            continue                                       # the other call's: each issues it again)
        if len(sinks) != 1 or sinks[0] in results:
            raise NotInlined(f"{value}, which the kernel uses after the call, is no one result of the function")
        results[sinks[0]] = value
    for j in set(range(align.region_results)) - set(results):   # a result the kernel leaves unused, as its op made it
        unused = [value for op in ops for value in op.results if value not in used and align.sinks(value, ops) == [j]]
        if unused:
            results[j] = unused[0]
    if sorted(results) != list(range(align.region_results)):
        raise NotInlined("a result of the function is an argument passed through, or made by no op of the kernel's")
    return [results[j] for j in range(align.region_results)]


class _Alignment:
    """Matches the kernel's ops of the call to the region's: the same op name at the same source
    positions (the callee's, its own calls' included)."""

    def __init__(self, kernel: Module, region: Module, as_tiles: bool):
        self.kernel, self.region = kernel, region
        self.by_key: dict[tuple, list[Op]] = {}
        self.producers = _producers(region.body)
        for making in (_as_pointer_tiles(region, region.body.ops) if as_tiles else {}).values():   # (alone too)
            self.producers.update((result, op) for op in making for result in op.results)
        self.arguments = {ssa for ssa, _ in region.args}
        self.sunk: dict[str, int] = {}   # a region value (or one it was converted from) -> the result it is
        self.inits: dict[str, str] = {}  # a value a loop of the region carries -> its initial value
        self.contexts: dict[int, tuple] = {}   # a kernel op of the call -> the op names enclosing it (``enter``)
        self.origin: dict[str, str] = {}     # a kernel value renamed per parameter (``_rename``) -> the value
        self.placed: set[tuple] = set()      # the source positions of the region's ops
        self.scopes: dict[int, tuple] = {}   # a region op -> the blocks around it, innermost first
        self.ops: list[Op] = []              # the kernel's ops of the call (``enter``)
        self.counts: dict[tuple, int] = {}   # how many of the kernel's ops of the call are at each key of ``by_key``
        self.ordinals: dict[int, int] = {}   # a kernel op of the call -> how many at its key come before it
        self._index(region.body)
        self.region_results = len(set(self.sunk.values()))

    def _index(self, block: Block, context: tuple = (), blocks: tuple = ()) -> None:
        blocks = (block, ) + blocks
        for op in block.ops:
            self.scopes[id(op)] = blocks
            self.inits.update(op.carried)
            key = self.region.positions.get(op.loc)
            if key:
                self.placed.add(key)
                self.by_key.setdefault((op.name, key, context), []).append(op)
            if op.name == _SINK and '"hybrid.out.' in op.rest:
                j = int(op.rest.split('"hybrid.out.')[1].split('"')[0])
                for value in self._back(op.operands[0]):
                    self.sunk[value] = j
            for region in op.regions:
                self._index(region, context + (op.name, ), blocks)

    def _producer_for(self, op: Op, value: str) -> Op | None:
        """The region's op that makes ``value`` as ``op`` takes it: MLIR names a nested region's
        values again once the region is closed, so the one of the blocks around ``op``."""
        for block in self.scopes.get(id(op), ()):
            made = next((o for o in block.ops if value in o.results), None)
            if made is not None:
                return made
        return None

    def _back(self, value: str) -> list[str]:
        """``value`` and what it was converted from, back to where it was made (a carried value:
        to its initial value, as a loop of the kernel that takes the initial value is matched)."""
        chain = [value]
        while True:
            op = self.producers.get(chain[-1])
            if op is not None and op.name == "ttg.convert_layout":
                chain.append(op.operands[0])
            elif chain[-1] in self.inits and self.inits[chain[-1]] not in chain:
                chain.append(self.inits[chain[-1]])
            else:
                return chain

    def enter(self, ops: list[Op], context: tuple = ()) -> None:
        """Note the ops of the kernel's call that enclose each of ``ops``: a region op matches one
        inside the same loops and branches (a pipelined loop's prologue load is not its body's)."""
        if not context:
            self.ops = ops
        for op in ops:
            self.contexts[id(op)] = context
            key = (op.name, self.kernel.positions.get(op.loc), context)
            self.ordinals[id(op)] = self.counts.get(key, 0)
            self.counts[key] = self.ordinals[id(op)] + 1
            for region in op.regions:
                self.enter(region.ops, context + (op.name, ))

    def candidates(self, op: Op, depth: int = 0) -> list[Op]:
        """The region's ops that ``op`` of the kernel's call is: those of its name at its source
        position, inside the same ops. One at no position of the function (the kernel stages a
        tile its caller loaded, as ``k`` of attention backward, and reads it where the function
        uses it) is the region's op of its name at no position that the region's twins of its
        users take in its place."""
        key = self.kernel.positions.get(op.loc)
        if key in self.placed:
            twins = self.by_key.get((op.name, key, self.contexts.get(id(op), ())), [])
            if len(twins) > 1 and len(twins) == self.counts.get((op.name, key, self.contexts.get(id(op), ()))):
                return [twins[self.ordinals[id(op)]]]   # (each stage of a pipelined loop's prologue: its own)
            return twins
        found: dict[int, Op] = {}
        for user, k in [use for result in op.results for use in uses(Block([], self.ops), result)] if depth < 4 else ():
            for twin in self.candidates(user, depth + 1):
                made = self._producer_for(twin, twin.operands[k]) if k < len(twin.operands) else None
                if made is not None and made.name == op.name and not self.region.positions.get(made.loc):
                    found[id(made)] = made
        return list(found.values())

    def sources(self, value: str, ops: list[Op], depth: int = 0) -> list[str]:
        """What the region's ops matching ``value``'s users take in its place: ``arg:<region argument>``,
        ``constant`` or ``value``; through the kernel's conversions of it, to their users."""
        found: set[str] = set()
        for user, k in uses(Block([], ops), value):
            found |= self.use_sources(value, user, k, ops, depth)
        return sorted(found)

    def use_sources(self, value: str, user: Op, k: int, ops: list[Op], depth: int = 0) -> set[str]:
        """``sources`` of one use of ``value``: ``user``'s operand ``k``."""
        if user.name == "ttg.convert_layout":
            return set(self.sources(user.results[0], ops, depth + 1)) if depth < 8 else set()
        inits = user.carried   # (a loop's operands end with the initial values of what it carries)
        carried = [inits[k - len(user.operands)][0]] if k >= len(user.operands) - len(inits) else []
        if carried:   # an initial value: as the loop's uses of what it carries
            return {source for arg in carried for source in self.sources(arg, ops, depth + 1)} if depth < 8 else set()
        found: set[str] = set()
        for twin in self.candidates(user):
            if k < len(twin.operands):
                made = self._back(twin.operands[k])[-1]
                producer = self.producers.get(made)
                found.add(f"arg:{made}" if made in self.arguments else
                          "constant" if producer is not None and producer.name == "arith.constant" else "value")
        return found

    def made_alike(self, value: str, ops: list[Op], producers: dict[str, Op], arguments: dict[str, str],
                   made: dict[int, Op]) -> bool:
        """Whether the kernel made ``value`` as the region makes what its ops take in its place, op
        for op from parameters and constants (the function's ``tl.arange`` that the kernel shares
        with its caller's, say): then those kernel ops are added to ``made`` and the parameters they
        take to ``arguments``. All or nothing: every region op matching a use of it (two ops of one
        source line may both match) that takes the same expression of parameters takes the same,
        and one does. A kernel value bound to another parameter already (the caller passed it for
        two) is renamed where the ops taken here take it (``_rename``)."""
        twins = [(twin.operands[k], user, k) for user, k in uses(Block([], ops), value)
                 for twin in self.candidates(user) if k < len(twin.operands)]
        unified = []
        for twin, user, k in twins:
            found, copied, renames = dict(arguments), dict(made), []
            if self._unify(value, twin, producers, found, copied, renames, (user, k)):
                unified.append((found, copied, renames))
        if not unified or any(found != unified[0][0] for found, _, _ in unified):
            return False
        found, copied, renames = unified[0]
        for user, k, mine, argument in sorted({(id(user), k): (user, k, mine, argument)
                                               for user, k, mine, argument in renames}.values(), key=lambda r: -r[1]):
            _rename(mine, argument, user, k, producers, self)
        arguments.update(found)
        made.update(copied)
        return True

    def _unify(self, value: str, twin: str, producers: dict[str, Op], found: dict[str, str],
               copied: dict[int, Op], renames: list, use: tuple[Op, int]) -> bool:
        """Whether ``value``, taken as ``use`` (an op and its operand index), is made as the
        region's ``twin``; ``renames``: the uses of a kernel value bound to one parameter that are
        another (op, index, value, parameter)."""
        twin = self._back(twin)[-1]
        if twin in self.arguments:
            if found.setdefault(value, twin) != twin:
                if found.setdefault(f"{value}.{twin[1:]}", twin) != twin:
                    return False
                renames.append((*use, value, twin))
            return True
        mine, theirs = producers.get(value), self.producers.get(twin)
        if mine is not None and mine.name == "ttg.convert_layout":   # the kernel's layout, made by a conversion
            copied[id(mine)] = mine
            return self._unify(mine.operands[0], twin, producers, found, copied, renames, (mine, 0))
        if mine is None or theirs is None or mine.name != theirs.name or not (_pure(mine) or mine.name == _LOAD) \
                or len(mine.results) != 1 or len(mine.operands) != len(theirs.operands) \
                or _shape_free(mine) != _shape_free(theirs):
            return False
        copied[id(mine)] = mine
        return all(self._unify(v, t, producers, found, copied, renames, (mine, k))
                   for k, (v, t) in enumerate(zip(mine.operands, theirs.operands)))

    def _waited(self, value: str) -> str:
        """The asynchronous dot's result the region's ``value`` waits for, if a wait makes it."""
        op = self.producers.get(value)
        if op is None or op.name != "ttng.warp_group_dot_wait":
            return value
        return op.operands[op.results.index(value)]

    def sinks(self, value: str, ops: list[Op]) -> list[int]:
        """The results of the function the region ops matching ``value``'s producer return it as."""
        return sorted({self.sunk[twin] for twin in self._twins(value, ops) if twin in self.sunk})

    def _twins(self, value: str, ops: list[Op]) -> list[str]:
        """The region values the region ops matching ``value``'s producer make in its place. A
        loop's result by what its body yields there: two lowerings of one loop may carry its
        values in another order. A wait for asynchronous dots that the region has not (the
        kernel's pipeliner waits for the loop's last ``dk``, ``dv`` after it): what it waits for."""
        for op in _flatten(ops):
            if value not in op.results:
                continue
            k = op.results.index(value)
            if op.name == "ttng.warp_group_dot_wait" and not self.candidates(op):
                return self._twins(op.operands[k], ops)
            if op.name == "scf.for" and op.regions and op.regions[0].ops and op.regions[0].ops[-1].name == "scf.yield":
                inner = self._twins(op.regions[0].ops[-1].operands[k], ops)
                return [twin.results[j] for twin in self.candidates(op) if twin.regions and twin.regions[0].ops
                        for j, v in enumerate(twin.regions[0].ops[-1].operands)
                        if {v, self._waited(v)} & set(inner) and j < len(twin.results)]
            return [twin.results[k] for twin in self.candidates(op) if k < len(twin.results)]
        return []


#: Ops without effects or regions besides index arithmetic's (``remat.MADE_AGAIN``), which a port
#: may make again where the kernel shares one with its caller: the caller's ``x - mean`` is the
#: function's, merged by CSE (Gluon's pipeline merges the two again).
_PURE = ("arith.", "math.", "tt.addptr", "tt.fp_to_fp", "tt.bitcast", "tt.precise_", "tt.trans", "tt.reshape",
         "tt.join", "tt.split")


def _pure(op: Op) -> bool:
    return not op.regions and (op.name in remat.MADE_AGAIN or op.name.startswith(_PURE)) or _staged(op)


def _staged(op: Op) -> bool:
    """An immutable shared-memory copy of a value (a ``tl.dot`` operand the function takes), or a
    load of one (AMD loads it in the dot's operand layout): the kernel stages a tile its caller
    passes at two calls once, for both (attention's ``q``); the port stages its parameter again,
    as the function lowered alone does."""
    return op.name in ("ttg.local_alloc", "ttg.local_load") and len(op.operands) == 1 and "mutable" not in op.types


def _shape_free(op: Op) -> str:
    """``op``'s text without its types and operand names: its attributes, predicate, constant."""
    return re.sub(r"%[\w$.\-]+(?:#\d+)?", "%", signature_split(" " + op.rest)[0])


def _flatten(ops: list[Op]) -> list[Op]:
    out = []
    for op in ops:
        out.append(op)
        for region in op.regions:
            out += _flatten(region.ops)
    return out
