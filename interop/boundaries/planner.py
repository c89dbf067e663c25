"""The boundary planner: how a value a boundary converts reaches the layouts its consumers want.

After folding (``stitching.stitch_passes``) a boundary costs at most one
``ttg.convert_layout`` per layout a consumer wants. For each value with such conversions (in
one block) the planner weighs two ways to move it:

- **convert**: Triton's lowering of each conversion: a register permutation, warp shuffles,
  or a round trip through scratch in as many rounds as Triton's scratch for it takes
  (``movement``, ``scratch``), with a barrier after each store and between rounds;
- **handoff**: the value is stored once into a shared buffer whose swizzle ``swizzle.plan``
  picks for the writer and every reader, one barrier, then each consumer loads its layout.

Costs are shared-memory wavefronts plus instructions per warp: a shuffle counts one, a round
trip its stores and loads as the cheaper of the best swizzle for the pair and the accesses
Triton's own lowering of the conversion issues (``scratch``: its scratch layout vectorizes over
the registers both layouts share, wider than a swizzled layout can, and is picked free of bank
conflicts), a handoff its stores and loads in the best swizzle for the writer and every reader,
a barrier ``BARRIER`` (an assumption, to be calibrated with ``bench/boundaries.py`` on a GPU). A
handoff keeps its whole tile live, so it is only weighed while the tile fits in ``BUDGET`` of
the target's shared memory, and (in ``auto``) never where the handoffs would raise the kernel's
shared memory: then a large tile that Triton converts in rounds through a smaller scratch stays
Triton's. Register permutations cost nothing and are never handed off.

Modes (``setting.BuildSettings.boundaries``): ``auto`` (the cheaper way), ``convert`` and ``shared``
(force one way, to compare).
"""
from __future__ import annotations

from dataclasses import dataclass

from triton.experimental.gluon import language as gl

from . import movement, swizzle
from ..boundary import TAG, element_bits, shape_and_dtype, tile_bytes
from ..ir.canonicalize import canonicalize
from ..ir.copy import copy_module
from ..ir.shared_loads import load_instead
from ..triton.bindings import gluon_ir

BARRIER = 16          # wavefront-equivalents of one CTA-wide barrier
BUDGET = 0.25         # largest share of the target's shared memory one handoff buffer may take
_ELEMENTS = {"i8": gl.int8, "i16": gl.int16, "i32": gl.int32, "i64": gl.int64, "f16": gl.float16,
             "bf16": gl.bfloat16, "f32": gl.float32, "f64": gl.float64, "f8E4M3FN": gl.float8e4nv,
             "f8E5M2": gl.float8e5}
@dataclass(frozen=True)
class Choice:
    """The planner's decision for the boundary conversions of one value."""
    way: str                  # "convert" or "handoff"
    tags: tuple[str, ...]     # the boundaries whose conversions it covers (the first owns a handoff's buffer)
    cost: int                 # modelled cost of the way taken
    other: int                # ... of the other way
    shared_bytes: int         # a handoff's buffer (a conversion's scratch is in its movement)
    layout: str               # a handoff's shared layout, as printed in the IR
    reason: str


@dataclass(frozen=True)
class LiveConversion:
    """A boundary conversion left to Triton after planning."""
    source: str          # printed types
    result: str
    movement: movement.Movement


def plan(module, context, probe, way: str = "auto",
         shared_limit: int | None = None) -> tuple[list[Choice], dict[str, list[LiveConversion]]]:
    """Choose for every value with boundary conversions in ``module`` and rewrite the handed-off
    ones into ``local_alloc`` + ``local_load``s (tagged like the conversions they replace).
    Returns the choices and, per boundary tag, the conversions left (in program order).

    In ``auto``, the plan is decided first without handing anything off (most kernels have no
    handoff to make: that plan is final); one with a handoff is tried on a copy: where its
    handoffs would raise the kernel's shared memory (Triton's allocation of the whole module,
    lifetimes and reuse included) above the plan that converts everything, a tile is handed off
    only if it takes no more shared memory than Triton's conversion of it (which stages a large
    tile in rounds)."""
    compact = False
    if way == "auto":
        decided = _plan(module, context, probe, way, shared_limit, False, hand_off=False)
        if not any(c.way == "handoff" for c in decided[0]):
            return decided   # nothing to hand off: that is the plan, and the module is as it was
        trial = copy_module(module, context)
        _plan(trial, context, probe, way, shared_limit, False)
        compact = probe.kernel_bytes(trial) > probe.kernel_bytes(copy_module(module, context))
    return _plan(module, context, probe, way, shared_limit, compact)


def _plan(module, context, probe, way: str, shared_limit: int | None, compact: bool,
          hand_off: bool = True) -> tuple[list[Choice], dict[str, list[LiveConversion]]]:
    """The plan, made (``hand_off``) or only decided: a handoff chosen is then not written into
    ``module`` (its choice names no buffer)."""
    builder = gluon_ir.GluonOpBuilder(context)
    conversions: list = []

    def visit(op):
        if op.get_name() == "ttg.convert_layout" and op.get_str_attr(TAG):
            conversions.append(op)

    module.walk(visit)
    moves = [movement.of_conversion(builder, op.get_operand(0), op.get_result(0), probe) for op in conversions]
    groups: dict[tuple[int, int], list[int]] = {}
    for i, op in enumerate(conversions):
        groups.setdefault((op.get_operand(0).id(), op.get_block().id()), []).append(i)
    choices, handed = [], set()
    for indices in groups.values():
        movable = [i for i in indices
                   if moves[i].kind in ("shuffles", "shared") or (way == "shared" and moves[i].kind != "none")]
        if movable:
            choices.append(_weigh(builder, [conversions[i] for i in movable], [moves[i] for i in movable], way,
                                  shared_limit, compact, probe, hand_off))
            if choices[-1].way == "handoff":
                handed.update(movable)
    live: dict[str, list[LiveConversion]] = {}
    for i, op in enumerate(conversions):
        if i not in handed:
            live.setdefault(op.get_str_attr(TAG), []).append(
                LiveConversion(str(op.get_operand(0).get_type()), str(op.get_result(0).get_type()), moves[i]))
    if handed and hand_off:
        canonicalize(module, context)   # the replaced conversions are dead
    return choices, live


def _weigh(builder, ops: list, moves: list, way: str, shared_limit: int | None, compact: bool, probe,
           hand_off: bool = True) -> Choice:
    source = ops[0].get_operand(0)
    shape, dtype = shape_and_dtype(str(source.get_type()))
    bits = element_bits(dtype)
    writer = builder.get_gluon_layout_from_tensor(source)
    readers = [builder.get_gluon_layout_from_tensor(op.get_result(0)) for op in ops]
    converting = sum(_conversion_cost(builder, op, writer, reader, move, list(shape), bits, _ELEMENTS.get(dtype), probe)
                     for op, reader, move in zip(ops, readers, moves))
    shared = swizzle.plan(builder, writer, readers, list(shape), bits)
    handing = shared.cost + BARRIER
    tile = tile_bytes(shape, bits)
    fits = dtype in _ELEMENTS and (shared_limit is None or tile <= BUDGET * shared_limit)
    bounded = compact and tile > max(m.shared_bytes for m in moves)   # more than Triton's rounds take
    fits = fits and not bounded
    if way == "auto":
        way = "shared" if fits and handing < converting else "convert"
    tags = tuple(dict.fromkeys(op.get_str_attr(TAG) for op in ops))
    kinds = ", ".join(f"{m.kind}" + (f" in {(m.barriers + 1) // 2} rounds" if m.barriers > 1 else "") for m in moves)
    if way == "convert":
        why = (f"; a handoff would keep the whole {tile} B tile and raise the kernel's shared memory"
               if bounded and handing < converting else "")
        return Choice("convert", tags, converting, handing, 0, "",
                      f"Triton's conversion ({kinds}; modelled cost {converting} against {handing} for a handoff{why})")
    if dtype not in _ELEMENTS:
        raise ValueError(f"boundaries='shared': a {dtype} tensor cannot be handed off in shared memory")
    layout = _hand_off(builder, ops, shared.layout, list(shape), dtype) if hand_off else ""
    s = shared.layout
    swizzle_text = f"vec {s.vec}, perPhase {s.per_phase}, maxPhase {s.max_phase}, order {list(s.order)}"
    return Choice("handoff", tags, handing, converting, tile, layout,
                  f"stored once into a planned swizzle ({swizzle_text}) and loaded by {len(ops)} consumer(s) after "
                  f"one barrier ({shared.write} + {shared.read} wavefronts and {shared.issued} instructions per warp; "
                  f"modelled cost {handing} against {converting} for Triton's conversion: {kinds})")


def _conversion_cost(builder, op, writer, reader, move, shape: list, bits: int, element, probe) -> int:
    """A shuffle counts one; a round trip its barriers and the lower of two estimates from above
    of its stores and loads: the best swizzle for the pair (Triton picks its scratch layout at
    least as well), and the accesses Triton's own lowering of ``op`` issues, each conflict-free
    (its scratch layout is picked to be; on AMD, LLVM may merge neighbouring ones later).
    ``element``: the tile's gluon dtype, None for one no handoff carries (the swizzle alone then)."""
    if move.kind == "shuffles":
        return move.shuffles
    if move.kind != "shared":
        return 0
    pair = swizzle.plan(builder, writer, [reader], shape, bits).cost
    accesses = (probe.conversion_accesses(op.get_operand(0), op.get_result(0), element)
                if probe is not None and element is not None else None)
    if accesses:
        pair = min(pair, swizzle.conflict_free(accesses, probe.options.warp_size))
    return pair + BARRIER * move.barriers


def _hand_off(builder, ops: list, layout, shape: list, dtype: str) -> str:
    """One ``local_alloc`` of the value after the first conversion, each conversion replaced by a
    ``local_load`` in its layout; returns the buffer's printed type."""
    buffer_type = gl.shared_memory_descriptor_type(_ELEMENTS[dtype], shape, layout, shape).to_ir(builder)
    builder.set_insertion_point_after(ops[0])
    buffer = builder.create_local_alloc(buffer_type, ops[0].get_operand(0))
    buffer.set_attr(TAG, builder.get_string_attr(ops[0].get_str_attr(TAG)))
    for k, op in enumerate(ops):
        if k:
            builder.set_insertion_point_after(op)
        load_instead(builder, op, buffer, TAG)
    return str(buffer_type)
