"""A Gluon call's results held as layout anchors while Triton's passes lay its Triton host out.

Triton's ``RemoveLayoutConversions`` starts its layouts from anchors: loads and stores of more
elements than the kernel has threads, dots, atomics and function arguments. A ``tt.call``'s
result is none of these, so the host's code after a Gluon call is laid out from its other
anchors (its stores, a row of weights it loads) and takes the call's tile through a conversion:
a ported ``load_rows`` that returns the tile in the layout the kernel's reduction wants leaves
the host's ``normalize`` code in the store's layout, converting the tile through shared memory,
where the all-Triton kernel's tile load was an anchor its code followed.

While the passes run, each such result is held by a stand-in the passes treat as the anchor the
all-Triton kernel had: a plain ``tt.load`` of its type (through a null pointer it never reads:
it is replaced by the result before anything runs, and the canonicalizer deletes it unused).
``host_relayout`` holds them only where the host laid out so moves fewer bytes between threads.
"""
from __future__ import annotations

import math

from triton.experimental.gluon import language as gl

from . import opaque
from ..triton import compat
from .remat import tensor_type
from ..ir.uses import owners, uses

#: The attribute of a call result's stand-in load: the index of the result in ``hold``'s list.
HOLDS = "hybrid.holds"
#: The marker of a buffer load's stand-in's placeholder and mask (dead once the stand-ins are released).
STAND_IN = "hybrid.stand_in"

Held = list[object]   # the call results held, each stand-in marked with its index (``HOLDS``)


def holdable(module, callees: set[str]) -> list[tuple]:
    """The tensor results of the ``tt.call`` ops of ``callees`` (in loops too: a ported function's
    result that the kernel's loop accumulates), with at least as many elements as the kernel has
    threads (fewer is no anchor for Triton either): ``(call, result, shape, element)`` each,
    ``module`` unchanged."""
    cta = threads(module)
    calls = []

    def visit(op):
        if op.get_name() == "tt.call" and op.get_flat_symbol_ref_attr("callee") in callees:
            calls.append(op)

    module.walk(visit)
    found = []
    for call in calls:
        for j in range(call.get_num_results()):
            result = call.get_result(j)
            try:
                shape, element = tensor_type(str(result.get_type()))
            except (KeyError, ValueError):   # not a tensor, or of an element the stand-in cannot load
                continue
            if not isinstance(element, gl.pointer_type) and math.prod(shape) >= cta:
                found.append((call, result, shape, element))
    return found


def hold(module, builder, callees: set[str]) -> Held:
    """Each result ``holdable`` names is used through a stand-in load made right after its call.
    Returns the results held, for ``release``."""
    held: Held = []
    for call, result, shape, element in holdable(module, callees):
        builder.set_insertion_point_after(call)
        stand_in = _stand_in(builder, shape, element, builder.get_gluon_layout_from_tensor(result))
        result.replace_all_uses_with(stand_in)
        stand_in.set_attr(HOLDS, builder.get_string_attr(str(len(held))))
        held.append(result)
    return held


def buffer_loads(module) -> list:
    """The AMD buffer loads of ``module`` that something uses, outside any loop, with at least as
    many elements as the kernel has threads: the loads ``make_ttgir`` laid out as anchors while
    they were plain loads (it makes them buffer loads only after its layout passes), and that are
    no anchor now."""
    cta = threads(module)
    owner = owners(module)
    users, loads = uses(module, lambda op: op.get_name() == "amdg.buffer_load")
    return [op for op in loads if users.get(op.get_result(0).id()) and not _in_loop(op, owner)
            and math.prod(tensor_type(str(op.get_result(0).get_type()))[0]) >= cta]


def hold_buffer_loads(module, builder) -> int:
    """Each of ``buffer_loads`` used through a stand-in load made right after it, so that the
    passes, run again, keep the tile loaded once in the layout Triton chose rather than load it
    again in each layout its uses take. The stand-in takes the buffer load as its ``other``
    (masked off by an opaque mask, ``STAND_IN``, so no pass folds it), which keeps the load alive
    while its uses are the stand-in's; ``release_buffer_loads`` finds the stand-ins left by that
    mask (a pass may have deleted one whose uses died). Returns how many are held."""
    held = buffer_loads(module)
    for load in held:
        result = load.get_result(0)
        shape, element = tensor_type(str(result.get_type()))
        builder.set_insertion_point_after(load)
        placeholder = opaque.host_value(builder, result.get_type(), STAND_IN)
        result.replace_all_uses_with(placeholder)
        layout = builder.get_gluon_layout_from_tensor(result)
        mask = opaque.host_value(builder, gl.distributed_type(gl.int1, shape, layout).to_ir(builder), STAND_IN)
        placeholder.replace_all_uses_with(_stand_in(builder, shape, element, layout, mask, result))
    return len(held)


def release_buffer_loads(module) -> None:
    """Every buffer load's stand-in left in ``module`` has its uses take the buffer load again
    (its ``other``); the stand-ins and their masks are left unused, for the canonicalizer."""
    masks = {op.get_result(0).id() for op in opaque.markers(module, (STAND_IN, ))}
    _, stand_ins = uses(module, lambda op: op.get_name() == "tt.load" and op.get_num_operands() == 3
                        and op.get_operand(1).id() in masks)
    for stand_in in stand_ins:
        stand_in.get_result(0).replace_all_uses_with(stand_in.get_operand(2))


def release(module, builder, held: Held) -> bool:
    """Every stand-in's uses take the call result it held again (the stand-ins are left unused,
    for the canonicalizer). A stand-in is found by its ``HOLDS`` mark, not by a handle:
    a pass may have remade it (AMD's in-thread transpose remakes the loads it lays out again).
    One a pass gave another layout takes the result converted to it; returns whether none did."""
    kept = True
    _, stand_ins = uses(module, lambda op: op.get_name() == "tt.load" and op.get_str_attr(HOLDS) is not None)
    for op in stand_ins:
        stand_in, result = op.get_result(0), held[int(op.get_str_attr(HOLDS))]
        if str(stand_in.get_type()) != str(result.get_type()):
            builder.set_insertion_point_after(op)
            result, kept = builder.create_convert_layout(stand_in.get_type(), result), False
        stand_in.replace_all_uses_with(result)
    return kept


def threads(module) -> int:
    """The threads of the kernel's CTA: a tile of fewer elements is no anchor for Triton either."""
    return (module.get_int_attr("ttg.num-warps") or 4) * (module.get_int_attr("ttg.threads-per-warp") or 32)


def _in_loop(op, owner: dict) -> bool:
    """Whether ``op`` is inside a loop (one Triton's pipeliner has already laid out: a buffer load
    there is a prefetch, carried to the next iteration)."""
    block = op.get_block()
    while block is not None and block.get_parent().id() in owner:
        parent = owner[block.get_parent().id()]
        if parent.get_name() in ("scf.for", "scf.while"):
            return True
        block = parent.get_block()
    return False


def _stand_in(builder, shape: list[int], element, layout, mask=None, other=None):
    pointer = gl.pointer_type(element)
    null = builder.create_int_to_ptr(builder.get_int64(0), pointer.to_ir(builder))
    pointers = builder.create_splat(gl.distributed_type(pointer, shape, layout).to_ir(builder), null)
    return compat.create_plain_load(builder, pointers, mask, other)
