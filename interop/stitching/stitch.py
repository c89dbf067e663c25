"""Stitch lowered regions into a host module at the ttg level, inline them, fold boundaries.

All of it is structural MLIR through Triton's bindings: a region's body block is moved into
the host's placeholder function (same signature, same MLIR context), Gluon's inliner inlines
it, and boundary conversion chains are rewritten op by op. The passes that use these
(``stitch_passes``) are verified by the runner after each, so a malformed module raises
there, naming the pass, instead of aborting later in C++.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from . import opaque
from ..boundary import TAG, BoundaryTag, Folding, Moved, shape_and_dtype
from ..ir import diagnostics
from ..ir.shared_loads import load_instead
from ..ir.uses import owners, uses
from ..ir.walk import function_blocks
from ..triton import compat
from ..triton.bindings import gluon_ir, ir, passes

#: Discardable attributes that pair a region's sinks with the host's result placeholders.
SINK = "hybrid.sink"
RESULT = "hybrid.result"


class StitchError(RuntimeError):
    """A lowered region does not fit its placeholder, or stitching left a marker; the compile turns
    this into a RegionError."""


def splice(host_module, placeholder, region_module, region_function) -> None:
    """Move ``region_function``'s body into the body-less ``placeholder`` of the same type.

    ``region_function`` is left without a body; it must not be used afterwards.
    """
    blocks = function_blocks(region_module, region_function)
    if not blocks:
        raise StitchError("the lowered region function has no body")
    anchor = placeholder.add_entry_block()
    for block in blocks:
        block.move_before(anchor)
    anchor.erase()


def bind_ports(lowered, host_tensor_types: list, region_index: int, context) -> None:
    """Check a lowered region's interface against the placeholder's and tag its boundary ops.

    The region function takes its scalars, then its tensors in the host's types
    (``lower_triton.take_host_layouts``), as the placeholder does. A conversion the region's
    passes kept on a tensor input (an anchor inside the region wanted another layout) is tagged
    as that input's boundary; each sink is tagged with ``result_key`` so ``connect_results``
    finds it after inlining.
    """
    blocks = function_blocks(lowered.module, lowered.function)
    if len(blocks) != 1:
        raise StitchError(f"the lowered region has {len(blocks)} top-level blocks; expected one")
    block, ports = blocks[0], opaque.find(lowered.module)
    builder = gluon_ir.GluonOpBuilder(context)
    positions = [k for k, is_tensor in enumerate(lowered.leaf_is_tensor) if is_tensor]
    first = block.get_num_arguments() - len(host_tensor_types)
    inputs: dict[int, int] = {}   # block argument id -> leaf position
    for i, (position, host_type) in enumerate(zip(positions, host_tensor_types)):
        argument = block.arg(first + i)
        if str(argument.get_type()) != str(host_type):
            raise StitchError(f"tensor input {position} of the lowered region is {argument.get_type()}; "
                              f"the host passes {host_type}")
        inputs[argument.id()] = position

    def visit(op):
        if op.get_name() == "ttg.convert_layout" and op.get_operand(0).id() in inputs:
            boundary = BoundaryTag(region_index, "in", inputs[op.get_operand(0).id()])
            op.get_result(0).set_attr(TAG, builder.get_string_attr(boundary.text))

    lowered.module.walk(visit)
    for j, sink in ports.sinks.items():
        sink.get_result(0).set_attr(SINK, builder.get_string_attr(result_key(region_index, j)))
    for j, conversion in ports.sink_conversions.items():
        conversion.get_result(0).set_attr(TAG, builder.get_string_attr(BoundaryTag(region_index, "out", j).text))


def connect_results(module, context) -> None:
    """Replace each region result placeholder (``opaque.result_placeholder``) with the inlined value
    its sink consumes, then delete the sinks.

    The sinks' block (the body of ``scf.if %enable``) is swapped for an empty one: Triton 3.6's
    Gluon canonicalizer does not fold ``scf.if false``, so the sinks cannot be left to it.
    ``%enable`` becomes ``false`` so that the emptied ``scf.if`` folds away where it can.
    """
    sink_blocks: dict[int, object] = {}
    found: list[tuple[bool, str, object]] = []   # (a sink?, key, op), in program order

    def visit(op):   # post-order: a copy's sink (in its scf.if) comes before its placeholder
        if op.get_name() != "tt.elementwise_inline_asm":
            return
        if op.get_str_attr(SINK):
            found.append((True, op.get_str_attr(SINK), op))
            sink_blocks[op.get_block().id()] = op.get_block()
        elif op.get_str_attr(RESULT):
            found.append((False, op.get_str_attr(RESULT), op))

    module.walk(visit)
    owner = owners(module)
    # A region is inlined once per copy of its caller (a loop body and the epilogue Triton's
    # pipeliner peeled from it): each placeholder takes the value of the copy just before it in
    # its own block, never another copy's.
    sunk: dict[tuple[int, str], object] = {}   # (block holding the sinks' scf.if, key) -> latest value
    for is_sink, key, op in found:
        if is_sink:
            sunk[owner[op.get_block().get_parent().id()].get_block().id(), key] = op.get_operand(0)
        elif (op.get_block().id(), key) in sunk:
            op.get_result(0).replace_all_uses_with(sunk[op.get_block().id(), key])
        else:
            raise StitchError(f"no region value for result {key} after inlining")
    builder = gluon_ir.GluonOpBuilder(context)
    for block in sink_blocks.values():
        empty = builder.create_block_with_parent(block.get_parent(), [])
        builder.set_insertion_point_to_start(empty)
        builder.create_yield_op([])
        block.erase()
    set_flags(module, opaque.ENABLE, False, context)


def set_flags(module, marker: str, value: bool, context) -> None:
    """Replace every opaque flag ``marker`` (``opaque.enable_flag``) with the constant ``value``."""
    builder = gluon_ir.GluonOpBuilder(context)
    for flag in opaque.markers(module, (marker, )):
        builder.set_insertion_point_after(flag)
        flag.get_result(0).replace_all_uses_with(builder.get_int1(value))


def result_key(region_index: int, result_index: int) -> str:
    return f"{region_index}:{result_index}"


def check_no_markers(module) -> None:
    left = sorted({opaque.marker_of(op) for op in opaque.markers(module)})
    if left:
        raise StitchError(f"boundary marker ops survived stitching: {left}")


def inline(module, context) -> None:
    pm = ir.pass_manager(context)
    passes.gluon.add_inliner(pm)
    diagnostics.run(pm, module, "hybrid_inline")


@dataclass(frozen=True)
class Folded:
    """The boundaries whose conversion the stitch's folds (``stitch_passes``) replaced, by tag."""
    loaded: frozenset[str]      # by a shared-memory load in the wanted layout
    stored: frozenset[str]      # its value stored into shared memory as it came (the host's ``local_alloc``)
    constants: frozenset[str]   # by the splat constant made in the wanted layout
    recomputed: frozenset[str]  # by the index arithmetic made again in the wanted layout (``remat``)
    moved: dict[str, Moved]     # moved away from the boundary (``Moved`` says how and by whom)

    @staticmethod
    def nothing() -> "Folded":
        return Folded(frozenset(), frozenset(), frozenset(), frozenset(), {})

    def combined(self, later: "Folded") -> "Folded":
        """What this folding and a ``later`` one of the same module did (the later says last)."""
        return Folded(self.loaded | later.loaded, self.stored | later.stored, self.constants | later.constants,
                      self.recomputed | later.recomputed, {**self.moved, **later.moved})

    def facts(self, boundary_tag: str) -> list[Folding | Moved]:
        """What folding did to the boundary ``boundary_tag``, in the order its reason is asked."""
        replaced = ((Folding.LOADED, self.loaded), (Folding.STORED, self.stored),
                    (Folding.CONSTANT, self.constants), (Folding.RECOMPUTED, self.recomputed))
        return [fact for fact, tags in replaced if boundary_tag in tags] + \
            ([self.moved[boundary_tag]] if boundary_tag in self.moved else [])


def fold_chains(module, builder) -> bool:
    """Rewrite ``convert(convert(x))`` to ``convert(x)`` (or ``x``) where either is a boundary's.

    Only chains that touch a tagged boundary conversion are rewritten: conversions the Gluon
    author wrote between their own values stay as written. The folded conversion keeps the
    outer one's result type (the layout the consumer asked for) and its tag. The conversions
    left dead are the canonicalizer's to remove. Whether a chain was rewritten.
    """
    source_of: dict[int, object] = {}   # result id of a conversion -> its (already folded) source value
    tag_of: dict[int, str] = {}
    rewrites: list[tuple[object, str]] = []

    def visit(op):
        if op.get_name() != "ttg.convert_layout":
            return
        result = op.get_result(0)
        source = op.get_operand(0)
        own_tag = op.get_str_attr(TAG)
        inner_tag = tag_of.get(source.id())
        root = source_of.get(source.id()) if (own_tag or inner_tag) else None
        source_of[result.id()] = root if root is not None else source
        if own_tag:
            tag_of[result.id()] = own_tag
        if root is not None:
            rewrites.append((op, own_tag or inner_tag))

    module.walk(visit)
    for op, boundary_tag in rewrites:
        result = op.get_result(0)
        root = source_of[result.id()]
        if str(root.get_type()) == str(result.get_type()):
            result.replace_all_uses_with(root)
            continue
        builder.set_insertion_point_after(op)
        folded = builder.create_convert_layout(result.get_type(), root)
        folded.set_loc(result.get_loc())
        folded.set_attr(TAG, builder.get_string_attr(boundary_tag))
        result.replace_all_uses_with(folded)
    return bool(rewrites)


#: The builder's scalar constant of each element type a splat constant can have.
_SCALARS = {"f32": "get_fp32", "f16": "get_fp16", "bf16": "get_bf16", "f64": "get_fp64", "i1": "get_int1",
            "i8": "get_int8", "i16": "get_int16", "i32": "get_int32", "i64": "get_int64"}


def fold_constant_conversions(module, builder) -> set[str]:
    """A boundary's conversion of a splat constant (``gl.zeros``, ``gl.full`` on one side, a
    loop's initial value on the other) becomes the same splat made in the layout converted to: a
    constant costs nothing in any layout, while a conversion goes through shared memory (Gluon's
    canonicalizer keeps conversions as written). Only a boundary all of whose conversions convert
    one splat value is folded. Returns the tags of the boundaries folded so."""
    constants: dict[int, object] = {}   # result id -> its arith.constant
    conversions: list = []

    def visit(op):
        if op.get_name() == "arith.constant":
            constants[op.get_result(0).id()] = op
        elif op.get_name() == "ttg.convert_layout" and op.get_str_attr(TAG):
            conversions.append(op)

    module.walk(visit)
    if not any(op.get_operand(0).id() in constants for op in conversions):
        return set()
    reader = compat.Integers(module, builder)
    splats: dict[str, set] = {}   # tag -> the splats its conversions convert (None: not a splat constant)
    for op in conversions:
        constant = constants.get(op.get_operand(0).id())
        splats.setdefault(op.get_str_attr(TAG), set()).add(_splat(reader, constant) if constant else None)
    folded = set()
    for op in conversions:
        boundary_tag = op.get_str_attr(TAG)
        if len(splats[boundary_tag]) != 1 or None in splats[boundary_tag]:
            continue
        (element, _, value), = splats[boundary_tag]
        builder.set_insertion_point_after(op)
        result = op.get_result(0)
        splat = builder.create_splat(result.get_type(), getattr(builder, _SCALARS[element])(value))
        splat.set_loc(result.get_loc())
        result.replace_all_uses_with(splat)
        folded.add(boundary_tag)
    return folded


def _splat(reader, constant) -> tuple[str, object, object] | None:
    """(element type, its bits, value) of a splat ``constant`` the builder can make; None for
    another. Floats compare by bits, so that ``-0.0`` and ``0.0`` stay apart and a NaN matches itself."""
    element = shape_and_dtype(str(constant.get_result(0).get_type()))[1]
    value = reader.splat_constant(constant, element) if element in _SCALARS else None
    if value is None:
        return None
    return element, struct.pack("<d", value) if isinstance(value, float) else value, value


def fold_into_shared_loads(module, builder) -> set[str]:
    """A boundary conversion of a value just loaded from shared memory becomes a load in the
    layout the conversion produces, right beside the original load (same data): a shared-memory
    read instead of a round trip through scratch. The original load stays for other users and
    is dead otherwise. Returns the tags of the boundaries folded so."""
    loads: dict[int, object] = {}   # result id -> its ttg.local_load
    conversions: list = []

    def visit(op):
        if op.get_name() == "ttg.local_load":
            loads[op.get_result(0).id()] = op
        elif op.get_name() == "ttg.convert_layout" and op.get_str_attr(TAG):
            conversions.append(op)

    module.walk(visit)
    folded = set()
    for op in conversions:
        load = loads.get(op.get_operand(0).id())
        if load is None:
            continue
        builder.set_insertion_point_after(load)
        load_instead(builder, op, load.get_operand(0), TAG)
        folded.add(op.get_str_attr(TAG))
    return folded


def fold_into_shared_stores(module, builder) -> set[str]:
    """A boundary conversion whose only users store it into shared memory (``local_alloc``, as a
    Triton host stages a ``tl.dot`` operand) is dropped: the allocs store the unconverted value,
    since what a buffer holds does not depend on the registers it came from (Triton's own
    ``alloc(convert(x)) -> alloc(x)``, which Gluon's canonicalizer leaves out). Not from a dot
    operand layout, which ``local_alloc`` cannot store (Triton's exception too).

    Such a buffer is immutable, and the host's loads of it in the same block are moved to right
    after the store: Triton placed them at their use (the ``tl.dot``), because in its own kernel
    the math between load and use had pulled them up to the store; without that math the buffer
    would stay allocated across the other operand's staging (more shared memory than all-Triton).
    Returns the tags."""
    users, conversions = uses(module, lambda op: op.get_name() == "ttg.convert_layout" and bool(op.get_str_attr(TAG)))
    folded = set()
    for op in conversions:
        source, result = op.get_operand(0), op.get_result(0)
        allocs = users.get(result.id(), [])
        if not allocs or "#ttg.dot_op" in str(source.get_type()) \
                or any(u.get_name() != "ttg.local_alloc" or u.get_num_operands() != 1 for u in allocs):
            continue
        result.replace_all_uses_with(source)
        folded.add(op.get_str_attr(TAG))
        for alloc in allocs:
            _load_right_after(alloc, users, builder)
    return folded


def load_stored_values_early(module, builder, values: dict[int, str]) -> set[str]:
    """The host's loads of each buffer that stores one of ``values`` (value id -> its boundary's
    tag) as it came, moved to right after the store, for the reason ``fold_into_shared_stores``
    gives (there Triton's canonicalizer had dropped the conversion itself). Returns the tags."""
    users, allocs = uses(module, lambda op: op.get_name() == "ttg.local_alloc" and op.get_num_operands() == 1
                         and op.get_operand(0).id() in values)
    for alloc in allocs:
        _load_right_after(alloc, users, builder)
    return {values[alloc.get_operand(0).id()] for alloc in allocs}


def _load_right_after(alloc, users: dict, builder) -> None:
    """Each ``local_load`` of ``alloc``'s (immutable) buffer in its block, made right after it."""
    buffer = alloc.get_result(0)
    for load in users.get(buffer.id(), []):
        if load.get_name() == "ttg.local_load" and load.get_block().id() == alloc.get_block().id():
            builder.set_insertion_point_after(alloc)
            early = builder.create_local_load(load.get_result(0).get_type(), buffer)
            early.set_loc(load.get_result(0).get_loc())
            load.get_result(0).replace_all_uses_with(early)
