"""Opaque boundary values: how a region's tensors cross Triton's tt -> ttg passes untouched.

Triton 3.6's tt -> ttg conversion cannot type tensors on function signatures, and a tensor
argument Triton could see through would be folded by SCCP or canonicalization. So a lowered
region's signature carries no tensors at all:

- each tensor input comes from a **producer**, a pure ``tt.elementwise_inline_asm`` marked
  ``hybrid.in.<k>`` over a full-rank ``make_range`` (``seed``: a splat or broadcast operand would
  let ``triton-reorder-broadcast`` hoist it and make the input look uniform). It only lives
  through the tt pipeline: right after the tt -> ttg conversion the region function takes each
  input as an argument in the host's own layout (``lower_triton.take_host_layouts``), so
  Triton's layout passes anchor on it as on any function argument, and the producer dies.
- each result (tensor or scalar) goes to a **sink**, a side-effecting inline asm marked
  ``hybrid.out.<j>`` inside ``scf.if %enable``, ``%enable`` being one more opaque producer
  (``hybrid.enable``). The sink keeps the value alive and leaves its layout alone (elementwise
  ops follow their operand). Once the region is inlined and its results are connected,
  ``%enable`` becomes ``false`` and the canonicalizer deletes the sinks.

None of these ops reach LLVM: ``stitch.check_no_markers`` verifies that after stitching.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

IN = "hybrid.in."
OUT = "hybrid.out."
RESULT = "hybrid.result."             # a region result in the host until the region is inlined
ENABLE = "hybrid.enable"              # guards a Triton region's sinks: becomes false
GLUON_ENABLE = "hybrid.gluon.enable"  # guards a Gluon call in a Triton host: becomes true
_ASM = "asm_string"
_INLINE_ASM = "tt.elementwise_inline_asm"


def seed(builder, shape: list[int]):
    """A full-rank i32 tensor no pass can fold, hoist or see as uniform: an inline asm's operand."""
    numel = math.prod(shape)
    value = builder.create_make_range(builder.get_block_ty(builder.get_int32_ty(), [numel]), 0, numel)
    return builder.create_reshape(value, shape, False) if len(shape) > 1 else value


def produce(builder, ir_type, shape: list[int], index: int):
    """An opaque tensor of ``ir_type`` standing for input ``index`` through the tt pipeline."""
    return builder.create_inline_asm(f"{IN}{index}", "=r,r", [seed(builder, shape)], [ir_type], True, 1).get_result(0)


def host_value(builder, ir_type, marker: str):
    """An opaque value of the ttg type ``ir_type`` (a host's layout included) no pass can fold."""
    poison = builder.create_poison(ir_type)
    return builder.create_inline_asm(marker, "=r,r", [poison], [ir_type], True, 1).get_result(0)


def enable_flag(builder, marker: str):
    """An opaque ``i1`` the splice later replaces with a constant."""
    return builder.create_inline_asm(marker, "=r", [], [builder.get_int1_ty()], True, 1).get_result(0)


def result_placeholder(builder, ir_type, key: str, attr: str):
    """A host value standing for a region result until the region is inlined.

    Opaque on purpose: a bare ``ub.poison`` would let the inliner's canonicalization fold the
    host's use of it (``truncf(poison)`` is ``poison``), and the region's result would be lost.
    """
    value = host_value(builder, ir_type, f"{RESULT}{key}")
    value.set_attr(attr, builder.get_string_attr(key))
    return value


def sink_all(builder, values: list) -> None:
    """Consume ``values`` (results ``0..n-1``) under ``scf.if %enable`` so no pass drops them."""
    enable = enable_flag(builder, ENABLE)
    if_op = builder.create_if_op([], enable, False)
    builder.set_insertion_point_to_start(if_op.get_then_block())
    for index, value in enumerate(values):
        builder.create_inline_asm(f"{OUT}{index}", "=r,r", [value], [value.get_type()], False, 1)


@dataclass
class Ports:
    """Where a lowered region's boundary values are, found by walking its module."""
    producers: dict[int, list]   # input index -> producer ops (a pass may have duplicated one per layout)
    sinks: dict[int, object]     # result index -> sink op
    sink_conversions: dict[int, object]  # result index -> the ttg.convert_layout feeding its sink, if any


def find(module) -> Ports:
    """The markers in a lowered region's module (only its region function has any)."""
    ports = Ports({}, {}, {})
    conversions: dict[int, object] = {}

    def visit(op):
        if op.get_name() == "ttg.convert_layout":
            conversions[op.get_result(0).id()] = op
        if op.get_name() != _INLINE_ASM:
            return
        marker = op.get_str_attr(_ASM) or ""
        if marker.startswith(IN):
            ports.producers.setdefault(int(marker[len(IN):]), []).append(op)
        elif marker.startswith(OUT):
            index = int(marker[len(OUT):])
            ports.sinks[index] = op
            if op.get_operand(0).id() in conversions:
                ports.sink_conversions[index] = conversions[op.get_operand(0).id()]

    module.walk(visit)
    return ports


def markers(module, prefixes: tuple[str, ...] = ("hybrid.", )) -> list:
    """The marker ops in ``module`` whose marker starts with one of ``prefixes``."""
    found: list = []

    def visit(op):
        if op.get_name() == _INLINE_ASM and (op.get_str_attr(_ASM) or "").startswith(prefixes):
            found.append(op)

    module.walk(visit)
    return found


def marker_of(op) -> str:
    return op.get_str_attr(_ASM)
