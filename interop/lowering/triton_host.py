"""Gluon regions inside a Triton host: an opaque boundary through tt, the Gluon body after ttg.

During the host's code generation each Gluon call becomes::

    %r... = scf.if %enable -> (result types) {      # %enable: opaque.GLUON_ENABLE
        sink(arg_0) ... sink(arg_n)                  # side-effecting: nothing moves, folds or drops
        %p... = producer_0 ... producer_m            # side-effecting too, so they stay after the sinks
        scf.yield %p...
    } else { scf.yield poison... }

A tensor descriptor's sink is a call of an empty function kept from inlining (an inline asm cannot
take a descriptor); the function is let go once the Gluon call replaces it (``release_descriptor_sinks``).
On a target without TMA Triton's ``make_ttir`` lowers the descriptor, and so the sink's operand, to
its base pointer, shape, strides and padding option: the Gluon function takes the pointer and the
padding option (``pointer_descriptors.PointerDescriptor``; its shape and strides are leaves already).

Triton's own ``make_ttir``/``make_ttgir`` then lower the host with the call kept opaque and give
its operands and results layouts (they may also copy, reorder or fill the boundary; see
``Ports``). ``splice`` calls the Gluon function, built for the operands' final layouts, in each
copy's ``then`` block and converts its results (tagged as boundary conversions) to the layouts
the host chose; then the markers are deleted and ``%enable`` becomes ``true``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..instrumentation import instrument, timing
from ..ir import uses
from ..stitching import opaque
from ..boundary import TAG, BoundaryTag, is_shared, layout_of, shape_and_dtype
from ..region import Region
from ..triton import compat
from ..triton.bindings import gluon_ir, ir

SINK = "hybrid.gluon.in."
PRODUCER = "hybrid.gluon.out."
_INLINE_ASM = "tt.elementwise_inline_asm"
DESCRIPTOR = "!tt.tensordesc"
_DESCRIPTOR_SINK = SINK.replace(".", "_")


@dataclass
class GluonCall:
    """One Gluon call in a Triton host, between code generation and the splice."""
    region: Region
    fn: object
    args: list              # normalized call arguments (tl values and constexprs)
    leaf_types: list        # Triton types of the runtime leaves, in flattening order, then of the hoisted loads
    wants: list             # per leaf, its ``handoff.Want`` (declared layout or shared memory) or None
    reads_async_proxy: bool  # the function feeds shared memory to wgmma/tcgen05/TMA: a handoff needs a fence
    readers: dict           # leaf index -> layouts the function loads that shared leaf in (for planning)
    entry_wants: list       # per leaf, the layout the function converts it to first (``handoff.entry_layouts``) or None
    hoists: list            # the function's loads the host issues (``caller_loads``): operands after the leaves


def emit_boundary(builder, module, context, call_index: int, leaf_handles: list, result_ir_types: list,
                  enable) -> list:
    """The opaque ``scf.if`` above, at ``builder``'s insertion point; returns its results.

    (An ``scf.if`` without results is created with its ``scf.yield`` ops already in place.)
    """
    if_op = builder.create_if_op(result_ir_types, enable, True)
    after = builder.get_insertion_point()   # not the block's end: a loop's body may hold its yield already
    builder.set_insertion_point_to_start(if_op.get_then_block())
    for k, handle in enumerate(leaf_handles):
        if str(handle.get_type()).startswith(DESCRIPTOR):
            builder.call(_descriptor_sink(module, context, f"{SINK}{call_index}.{k}", handle.get_type()), [handle])
        else:
            builder.create_inline_asm(f"{SINK}{call_index}.{k}", "=r,r", [handle], [handle.get_type()], False, 1)
    if result_ir_types:
        produced = [_produce(builder, ty, f"{PRODUCER}{call_index}.{j}") for j, ty in enumerate(result_ir_types)]
        builder.create_yield_op(produced)
        builder.set_insertion_point_to_start(if_op.get_else_block())
        builder.create_yield_op([builder.create_poison(ty) for ty in result_ir_types])
    builder.restore_insertion_point(after)
    return [if_op.get_result(j) for j in range(len(result_ir_types))]


def _descriptor_sink(module, context, marker: str, ty):
    """A tensor descriptor's sink: a call of an empty function that is not inlined, as an inline asm
    cannot take a descriptor. Triton's passes give the descriptor its shared layout through it."""
    name = marker.replace(".", "_")   # (``_descriptor_marker`` reads it back)
    if module.has_function(name):   # (a call visited twice: a loop body's dry visit)
        return module.get_function(name)
    detached = ir.builder(context)   # a fresh builder creates the function detached
    sink = detached.get_or_insert_function(module, name, detached.get_function_ty([ty], []), "private", True)
    module.push_back(sink)
    detached.set_insertion_point_to_start(sink.add_entry_block())
    detached.ret([])
    return sink


def descriptor_layout(ir_type: str) -> tuple[list[int], str, str | None]:
    """A tensor descriptor's IR type (``!tt.tensordesc<64x64xf16, #enc>``, on 3.6 with the block as
    ``tensor<...>``) read as (block shape, element type, shared layout text or None)."""
    inner = ir_type.removeprefix(DESCRIPTOR + "<")[:-1]
    if inner.startswith("tensor<"):
        inner = inner[len("tensor<"):-1]
    block, _, layout = inner.partition(", ")
    *shape, dtype = block.split("x")
    return [int(n) for n in shape], dtype, layout or None


def mismatched_tma_copy(module) -> tuple[str, str] | None:
    """(descriptor layout, buffer layout) of the first TMA copy in ``module`` between a descriptor
    and a shared buffer of another layout, or None. Triton 3.8 on refuses such a copy as it verifies
    (``TMA descriptor layout must match shared layout``); 3.6 builds it, the bytes swizzled wrong."""
    found = []

    def visit(op):
        if found or not op.get_name().startswith("ttng.async_tma_copy"):
            return
        types = [str(op.get_operand(i).get_type()) for i in range(op.get_num_operands())]
        descriptor = next((t for t in types if t.startswith(DESCRIPTOR)), None)
        if descriptor is None:
            return
        shape, dtype, layout = descriptor_layout(descriptor)
        for ty in types:
            if ty.startswith("!ttg.memdesc") and shape_and_dtype(ty) == (tuple(shape), dtype) \
                    and layout is not None and layout_of(ty) != layout:
                found.append((layout, layout_of(ty)))

    module.walk(visit)
    return found[0] if found else None


def _descriptor_marker(call) -> str:
    """The sink marker a call of a descriptor's sink function stands for, or ""."""
    callee = call.get_flat_symbol_ref_attr("callee")
    return callee.replace("_", ".") if callee.startswith(_DESCRIPTOR_SINK) else ""


def release_descriptor_sinks(module, ports: "Ports", context) -> None:
    """The descriptor sinks of ``ports`` made inlinable: their empty bodies go with the regions' inlining."""
    builder = ir.builder(context)
    for marker in ports.markers:
        if marker.get_name() == "tt.call":
            sink = module.get_function(marker.get_flat_symbol_ref_attr("callee"))
            sink.set_attr("noinline", builder.get_bool_attr(False))


def _produce(builder, ty, marker: str):
    """An opaque value of ``ty``. A scalar one reads an ``i32`` too: Triton 3.6's layout passes
    assume an inline asm without operands yields a tensor (and abort on a scalar)."""
    is_tensor = str(ty).startswith("tensor<")
    operand = opaque.seed(builder, list(shape_and_dtype(str(ty))[0])) if is_tensor else builder.get_int32(0)
    return builder.create_inline_asm(marker, "=r,r", [operand], [ty], False, 1).get_result(0)


@dataclass
class Ports:
    """One copy of a Gluon call's boundary after the host's ttgir.

    Triton's passes may duplicate the boundary (a pipeliner peels a loop body), move operand
    computations into its ``then`` block (``tmem_load`` next to its only user) and give one Gluon
    result several producers (one per layout its users want), so a port is described by its
    marker ops, not by the ``scf.if``'s result list.
    """
    operands: list              # sink operands: the values the Gluon function receives
    last_sink: object           # the call goes right after it, where every operand is defined (the
                                # first producer for a call without runtime arguments)
    outputs: list[tuple[int, object]]   # (Gluon result index, a producer's value) per layout the host wants
    markers: list               # the sink and producer ops, deleted once the call replaces them
    lowered: dict[int, object] = field(default_factory=dict)   # operand index -> its descriptor's sink,
                                # where Triton lowered the descriptor to a pointer, shape and strides
    paddings: dict[int, object] = field(default_factory=dict)  # operand index -> that descriptor's padding
                                # option: True/False where a constant, else its value (``read_paddings``)

    @property
    def operand_types(self) -> tuple[str, ...]:
        return tuple(str(v.get_type()) for v in self.operands)


def find_ports(module, call_index: int) -> list[Ports]:
    """Every copy of call ``call_index``'s boundary, grouped by the block holding its sinks; none
    where the call was in IR that code generation discarded (a loop body's dry visit on 3.6)."""
    copies: dict[int, Ports] = {}
    sinks: dict[int, dict[int, object]] = {}

    def port(op) -> Ports:
        return copies.setdefault(op.get_block().id(), Ports([], None, [], []))

    def visit(op):
        marker = (op.get_str_attr("asm_string") or "") if op.get_name() == _INLINE_ASM else \
            _descriptor_marker(op) if op.get_name() == "tt.call" else ""
        if marker.startswith(f"{SINK}{call_index}."):
            port(op).markers.append(op)
            port(op).last_sink = op
            sinks.setdefault(op.get_block().id(), {})[int(marker.rsplit(".", 1)[1])] = op
        elif marker.startswith(f"{PRODUCER}{call_index}."):
            port(op).markers.append(op)
            port(op).outputs.append((int(marker.rsplit(".", 1)[1]), op.get_result(0)))
            if port(op).last_sink is None:   # a call without runtime arguments goes after its first producer
                port(op).last_sink = op

    module.walk(visit)
    for block_id, found in copies.items():
        found.operands = [sinks[block_id][k].get_operand(0) for k in sorted(sinks.get(block_id, {}))]
        found.lowered = {k: sink for k, sink in sinks.get(block_id, {}).items()
                         if sink.get_name() == "tt.call" and sink.get_num_operands() > 1}
    return list(copies.values())


@timing.timed("stitching")
def splice(call: GluonCall, function, wants: list, ports: Ports, context, profiled: bool) -> list[str]:
    """Call ``function(operands)`` after the sinks, hand each producer's uses the result converted
    to the producer's layout (tagged as a boundary conversion), and make the markers pure: unused,
    the canonicalizer deletes them. ``wants`` are the call's, with planned shared layouts chosen;
    ``profiled``: bracket the call with its Proton scope. Returns the types the Gluon function
    produced its results in."""
    builder = gluon_ir.GluonOpBuilder(context)
    builder.set_insertion_point_after(ports.last_sink)
    operands = with_paddings(ports, _hand_over(builder, call, wants, ports.operands))
    with instrument.around(builder, call.region, profiled):
        result = builder.call(function, operands)
    for j, producer in ports.outputs:
        value = result.get_result(j)
        if is_shared(str(value.get_type())):   # a returned buffer: load it as the host wants
            value = builder.create_local_load(producer.get_type(), value)
            value.set_attr(TAG, builder.get_string_attr(BoundaryTag(call.region.index, "out", j).text))
        elif str(value.get_type()) != str(producer.get_type()):
            value = builder.create_convert_layout(producer.get_type(), value)
            value.set_attr(TAG, builder.get_string_attr(BoundaryTag(call.region.index, "out", j).text))
        producer.replace_all_uses_with(value)
    for marker in ports.markers:
        if marker.get_name() == _INLINE_ASM:   # (a descriptor's sink: ``release_descriptor_sinks``)
            marker.get_result(0).set_attr("pure", builder.get_bool_attr(True))
    return [str(result.get_result(j).get_type()) for j in range(result.get_num_results())]


def read_paddings(module, builder, call: GluonCall, copies: list["Ports"]) -> None:
    """Each lowered descriptor's padding option in ``copies`` (``Ports.paddings``): True or False
    where the host's is a constant (a descriptor made on the device), its value otherwise."""
    if not any(ports.lowered for ports in copies):
        return
    made, integers = uses.producers(module), compat.Integers(module, builder)
    for ports in copies:
        for k, sink in ports.lowered.items():
            padding = sink.get_operand(1 + 2 * len(call.leaf_types[k].block_type.shape))
            constant = integers.bool_constant(made[padding.id()]) if padding.id() in made else None
            ports.paddings[k] = padding if constant is None else constant


def with_paddings(ports: "Ports", operands: list) -> list:
    """``operands`` with each lowered descriptor's padding option after its base pointer, as its
    ``PointerDescriptor`` takes it (``read_paddings``), where it is not a constant (the
    ``PointerDescriptor`` holds that one as a constexpr)."""
    out = []
    for k, value in enumerate(operands):
        out.append(value)
        if not isinstance(ports.paddings.get(k, True), bool):
            out.append(ports.paddings[k])
    return out


def _hand_over(builder, call: GluonCall, wants: list, operands: list) -> list:
    """The operands as the Gluon function declared them (``handoff``): converted to a declared
    layout, or stored once into a shared buffer of the declared shared layout, followed by one
    async-proxy fence where the function reads shared memory through that proxy. Every op made
    here is tagged as the boundary's, for the records."""
    handed, stored = [], False
    for k, (value, want, ty) in enumerate(zip(operands, wants, call.leaf_types)):
        if want is not None:
            wanted = want.gluon_type(ty).to_ir(builder)
            if want.in_shared:
                value, stored = builder.create_local_alloc(wanted, value), True
            elif str(wanted) != str(value.get_type()):
                value = builder.create_convert_layout(wanted, value)
            if want.in_shared or str(wanted) != str(operands[k].get_type()):
                value.set_attr(TAG, builder.get_string_attr(BoundaryTag(call.region.index, "in", k).text))
        handed.append(value)
    if stored and call.reads_async_proxy:
        builder.create_fence_async_shared(False)
    return handed
