"""Gluon regions inside a Triton host: an opaque boundary through tt, the Gluon body after ttg.

During the host's code generation each Gluon call becomes::

    %r... = scf.if %enable -> (result types) {      # %enable: opaque.GLUON_ENABLE
        sink(arg_0) ... sink(arg_n)                  # side-effecting: nothing moves, folds or drops
        %p... = producer_0 ... producer_m            # side-effecting too, so they stay after the sinks
        scf.yield %p...
    } else { scf.yield poison... }

Triton's own ``make_ttir``/``make_ttgir`` then lower the host with the call kept opaque and give
its operands and results layouts. ``splice`` replaces the ``then`` block by a call of the Gluon
function, built for the operands' final layouts, whose results are converted (tagged as
boundary conversions) to the layouts the host chose; ``%enable`` becomes ``true``.
"""
from __future__ import annotations

from dataclasses import dataclass

from triton._C.libtriton import gluon_ir

from . import instrument, opaque
from .boundary import TAG, shape_and_dtype, tag
from .region import Region

SINK = "hybrid.gluon.in."
PRODUCER = "hybrid.gluon.out."
_INLINE_ASM = "tt.elementwise_inline_asm"


@dataclass
class GluonCall:
    """One Gluon call in a Triton host, between code generation and the splice."""
    region: Region
    fn: object
    args: list              # normalized call arguments (tl values and constexprs)
    leaf_types: list        # Triton types of the runtime leaves, in flattening order


def emit_boundary(builder, call_index: int, leaf_handles: list, result_ir_types: list, enable) -> list:
    """The opaque ``scf.if`` above, at ``builder``'s insertion point; returns its results.

    (An ``scf.if`` without results is created with its ``scf.yield`` ops already in place.)
    """
    if_op = builder.create_if_op(result_ir_types, enable, True)
    after = builder.get_insertion_block()
    builder.set_insertion_point_to_start(if_op.get_then_block())
    for k, handle in enumerate(leaf_handles):
        builder.create_inline_asm(f"{SINK}{call_index}.{k}", "=r,r", [handle], [handle.get_type()], False, 1)
    if result_ir_types:
        produced = [_produce(builder, ty, f"{PRODUCER}{call_index}.{j}") for j, ty in enumerate(result_ir_types)]
        builder.create_yield_op(produced)
        builder.set_insertion_point_to_start(if_op.get_else_block())
        builder.create_yield_op([builder.create_poison(ty) for ty in result_ir_types])
    builder.set_insertion_point_to_end(after)
    return [if_op.get_result(j) for j in range(len(result_ir_types))]


def _produce(builder, ty, marker: str):
    operands = [opaque.seed(builder, list(shape_and_dtype(str(ty))[0]))] if str(ty).startswith("tensor<") else []
    return builder.create_inline_asm(marker, "=r" + ",r" * len(operands), operands, [ty], False, 1).get_result(0)


@dataclass
class Ports:
    """Where one Gluon call's boundary ended up after the host's ttgir."""
    operands: list          # sink operands: the values the Gluon function receives
    result_types: list      # ttg types the host chose for the call's results (the scf.if's)
    then_block: object


def find_ports(module, call_index: int) -> Ports | None:
    """The boundary of call ``call_index``, or None where it was in IR that code generation
    discarded (a loop body's dry visit on Triton 3.6)."""
    sinks: dict[int, object] = {}
    yields: dict[int, object] = {}   # block id -> its scf.yield (the then block's has the if's result types)

    def visit(op):
        if op.get_name() == "scf.yield":
            yields[op.get_block().id()] = op
        elif op.get_name() == _INLINE_ASM and (op.get_str_attr("asm_string") or "").startswith(f"{SINK}{call_index}."):
            sinks[int(op.get_str_attr("asm_string").rsplit(".", 1)[1])] = op

    module.walk(visit)
    if not sinks:
        return None
    then_block = next(iter(sinks.values())).get_block()
    terminator = yields[then_block.id()]
    return Ports([sinks[k].get_operand(0) for k in sorted(sinks)],
                 [terminator.get_operand(j).get_type() for j in range(terminator.get_num_operands())], then_block)


def splice(call: GluonCall, function, ports: Ports, context) -> list[str]:
    """Replace the boundary's ``then`` block by ``function(operands)`` converted to the host's
    types; returns the types the Gluon function produced its results in."""
    builder = gluon_ir.GluonOpBuilder(context)
    block = builder.create_block_with_parent(ports.then_block.get_parent(), [])
    builder.set_insertion_point_to_start(block)
    profiled = instrument.enabled()
    if profiled:
        instrument.record(builder, call.region, start=True)
    result = builder.call(function, ports.operands)
    if profiled:
        instrument.record(builder, call.region, start=False)
    values, produced = [], []
    for j, wanted in enumerate(ports.result_types):
        value = result.get_result(j)
        produced.append(str(value.get_type()))
        if str(value.get_type()) != str(wanted):
            value = builder.create_convert_layout(wanted, value)
            value.set_attr(TAG, builder.get_string_attr(tag(call.region.index, "out", j)))
        values.append(value)
    builder.create_yield_op(values)
    ports.then_block.erase()
    return produced
