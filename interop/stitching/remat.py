"""Index arithmetic built again in another layout instead of converted to it.

A pointer or offset tile (and its bounds mask) is made from scalars by a few cheap ops:
``make_range``, ``splat``, integer constants, ``expand_dims``, ``broadcast``, integer arithmetic
(``addi``, ``subi``, ``muli``, divisions, remainders), ``addptr``, sign extensions, comparisons
and ``andi``/``ori`` of masks. Converting such a tile to another layout moves every element through shared memory
or shuffles; making it again in that layout costs those few ops. Triton's
``RemoveLayoutConversions`` does this inside one kernel (backward rematerialization), but it stops
at a function argument, and a Triton region's tensor inputs are its function's arguments
(``lower_triton``): the all-Triton attention kernel makes its V pointer tile in AMD's load layout
once before the loop, where the region converted the host's tile in every iteration. The two
uses here finish that rematerialization across the boundary:

- ``hoist_argument_conversions``: in a lowered region, a conversion of index arithmetic on a
  tensor argument becomes the arithmetic made again on the argument converted once, at the
  function's entry: a conversion of the argument, which is the boundary's (``stitch.bind_ports``).
- ``recompute_boundary_conversions``: after stitching, a boundary's conversion of a value the
  other side made from scalars by index arithmetic becomes that arithmetic made in the layout
  converted to, as the all-Triton kernel makes it: no conversion is left.

A ``Rematerializer`` given ``Loads`` also makes elementwise float arithmetic again, from tiles
loaded by loads it may issue again (``access_layouts``): a tile a Triton host computes from loaded
values and passes to a Gluon function that converts it first, made in that function's layout as
Triton's own layout propagation makes it in the layout of its use.

Every op made again computes the same values (the ops are pure and their results depend on the
layout only through where each element lives).
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Callable

from triton.experimental.gluon import language as gl

from ..boundary import TAG
from ..triton import compat
from ..ir.uses import producers

#: The ops made again, and how the builder makes each from its operands made again.
_ELEMENTWISE = {"arith.addi": "create_add", "arith.subi": "create_sub", "arith.muli": "create_mul",
                "arith.divsi": "create_sdiv", "arith.remsi": "create_srem", "arith.divui": "create_udiv",
                "arith.remui": "create_urem", "arith.andi": "create_and", "arith.ori": "create_or",
                "tt.addptr": "create_addptr"}
#: The casts made again in another layout, and the builder's method for each (operand, result type).
CASTS = {"arith.truncf": "create_fp_trunc", "arith.extf": "create_fp_ext"}
#: Elementwise float arithmetic made again from loaded values (``Loads``): two operands, and one.
FLOAT_BINARY = {"arith.addf": "create_fadd", "arith.subf": "create_fsub", "arith.mulf": "create_fmul",
                 "arith.divf": "create_fdiv", "arith.maximumf": "create_maximumf", "arith.minimumf": "create_minimumf"}
FLOAT_UNARY = {"math.exp2": "create_exp2", "math.exp": "create_exp", "arith.negf": "create_fneg"}
#: ``arith.cmpi``'s builder per predicate (MLIR's ``arith::CmpIPredicate`` order): bounds masks.
_COMPARISONS = ("create_icmpEQ", "create_icmpNE", "create_icmpSLT", "create_icmpSLE", "create_icmpSGT",
                "create_icmpSGE", "create_icmpULT", "create_icmpULE", "create_icmpUGT", "create_icmpUGE")
#: The ops index arithmetic is made of, which a Rematerializer makes again in another layout.
MADE_AGAIN = {"tt.make_range", "arith.constant", "tt.splat", "tt.expand_dims", "tt.broadcast", "arith.extsi",
              "arith.cmpi", "ttg.convert_layout", *_ELEMENTWISE}
#: The loads a tile is issued again from: Triton's, and the AMD buffer load ``make_ttgir`` made of it.
LOADS = ("tt.load", "amdg.buffer_load")
#: What a ``Rematerializer`` given ``Loads`` makes again besides: float arithmetic, casts and float constants.
_FROM_LOADS = {"arith.constant", *FLOAT_BINARY, *FLOAT_UNARY, *CASTS}
#: Element types by their MLIR names.
_ELEMENTS = {"i1": gl.int1, "i8": gl.int8, "i16": gl.int16, "i32": gl.int32, "i64": gl.int64, "f64": gl.float64,
             "f32": gl.float32, "f16": gl.float16, "bf16": gl.bfloat16, "f8E4M3FN": gl.float8e4nv,
             "f8E5M2": gl.float8e5}
_INTEGER_CONSTANTS = {"i1": "get_int1", "i8": "get_int8", "i16": "get_int16", "i32": "get_int32", "i64": "get_int64"}

Leaf = Callable[[object, object], object]   # (tensor block argument, layout) -> the argument in that layout


@dataclass(frozen=True)
class Loads:
    """The loads a ``Rematerializer`` may issue again, which lets it make float arithmetic again
    too: ``issuable(op)`` says whether it may issue the load ``op`` again in any layout;
    ``issue(op, layout, made)`` issues it (``made(value, layout)``: an operand made again)."""
    issuable: Callable[[object], bool]
    issue: Callable[[object, object, Callable], object]


def in_layout(value, layout, builder):
    """The IR type of ``value`` (a tensor) with ``layout`` (a Gluon layout) in place of its own."""
    shape, element = tensor_type(str(value.get_type()))
    return gl.distributed_type(element, shape, layout).to_ir(builder)


def tensor_type(text: str) -> tuple[list[int], object]:
    match = re.match(r"tensor<((?:\d+x)+)(!tt\.ptr<(\w+)>|\w+)", text)
    if match is None:
        raise ValueError(f"not a ranked tensor type: {text}")
    shape = [int(d) for d in match.group(1).rstrip("x").split("x")]
    element = gl.pointer_type(_ELEMENTS[match.group(3)]) if match.group(3) else _ELEMENTS[match.group(2)]
    return shape, element


class Rematerializer:
    """Makes tensors of index arithmetic again in other layouts, at the builder's insertion point.

    ``leaves`` (value ids) are tensor block arguments the arithmetic may start from; ``leaf``
    gives such an argument in a wanted layout. Every other tensor must be made by ``MADE_AGAIN`` from
    scalars, which are used as they are; or, given ``loads``, by float arithmetic from them and
    from the loads ``loads`` issues again."""

    def __init__(self, module, builder, leaves: frozenset[int] = frozenset(), leaf: Leaf | None = None,
                 loads: Loads | None = None):
        self._builder = builder
        self._loads = loads
        self._leaves, self._leaf = leaves, leaf
        self._module = module
        self._defining = producers(module)
        self._memo: dict[tuple[int, str], object] = {}
        self._checked: dict[int, bool] = {}
        self._reaches: dict[int, bool] = {}

    @functools.cached_property
    def _integers(self) -> compat.Integers:
        """Made at the first read (on Triton 3.6 and 3.7 it prints the module)."""
        return compat.Integers(self._module, self._builder)

    def defining(self, value):
        return self._defining.get(value.id())

    def possible(self, value) -> bool:
        """Whether ``value`` can be made again in any layout (a scalar: used as it is)."""
        if not str(value.get_type()).startswith("tensor<"):
            return True
        if value.id() not in self._checked:
            self._checked[value.id()] = self._possible(value)
        return self._checked[value.id()]

    def _possible(self, value) -> bool:
        op = self._defining.get(value.id())
        if op is None:
            return value.id() in self._leaves
        name = op.get_name()
        if self._loads is not None and name in _FROM_LOADS:
            return all(self.possible(op.get_operand(i)) for i in range(op.get_num_operands()))
        if self._loads is not None and name in LOADS:
            return self._loads.issuable(op)
        if name not in MADE_AGAIN:
            return False
        if name == "arith.constant":
            return self._integers.integer_constant(op) is not None
        return all(self.possible(op.get_operand(i)) for i in range(op.get_num_operands()))

    def reaches_leaf(self, value) -> bool:
        """Whether the arithmetic making ``value`` starts from one of the leaves."""
        if value.id() not in self._reaches:
            op = self._defining.get(value.id())
            self._reaches[value.id()] = value.id() in self._leaves or (
                op is not None and op.get_name() in MADE_AGAIN
                and any(self.reaches_leaf(op.get_operand(i)) for i in range(op.get_num_operands())))
        return self._reaches[value.id()]

    def replace(self, conversion) -> None:
        """``conversion``'s uses take its operand made again, right after it, in the layout it
        converts to (``possible`` must hold for the operand)."""
        result = conversion.get_result(0)
        self._builder.set_insertion_point_after(conversion)
        result.replace_all_uses_with(self.make(conversion.get_operand(0),
                                               self._builder.get_gluon_layout_from_tensor(result)))

    def make(self, value, layout):
        """``value`` made again in ``layout`` (``possible(value)`` must hold). Each call makes its
        own ops (shared within the call only): ops made for one use need not dominate another."""
        self._memo = {}
        return self._made(value, layout)

    def _made(self, value, layout):
        if not str(value.get_type()).startswith("tensor<"):
            return value
        key = (value.id(), str(layout))
        if key not in self._memo:
            self._memo[key] = self._make(value, layout)
        return self._memo[key]

    def _make(self, value, layout):
        builder = self._builder
        op = self._defining.get(value.id())
        if op is None:
            return self._leaf(value, layout)
        name = op.get_name()
        if name == "ttg.convert_layout":
            return self._made(op.get_operand(0), layout)
        if name in LOADS:   # issued where it was: what it uses is made there for it alone
            outer, self._memo = self._memo, {}
            try:
                return self._loads.issue(op, layout, self._made)
            finally:
                self._memo = outer
        result_type = in_layout(value, layout, builder)
        if name == "arith.constant" and self._integers.integer_constant(op) is None:
            made = builder.create_convert_layout(result_type, value)   # a float constant: the canonicalizer folds it
        elif name in FLOAT_BINARY:
            made = getattr(builder, FLOAT_BINARY[name])(self._made(op.get_operand(0), layout),
                                                         self._made(op.get_operand(1), layout))
        elif name in FLOAT_UNARY:
            made = getattr(builder, FLOAT_UNARY[name])(self._made(op.get_operand(0), layout))
        elif name in CASTS:
            made = getattr(builder, CASTS[name])(self._made(op.get_operand(0), layout), result_type)
        elif name == "tt.make_range":
            start = self._integers.int_attr(op, "start")
            made = builder.create_make_range(result_type, start, start + tensor_type(str(value.get_type()))[0][0])
        elif name == "arith.constant":
            element = re.match(r"tensor<(?:\d+x)+(\w+)", str(value.get_type())).group(1)
            scalar = getattr(builder, _INTEGER_CONSTANTS[element])(self._integers.integer_constant(op))
            made = builder.create_splat(result_type, scalar)
        elif name == "tt.splat":
            made = builder.create_splat(result_type, op.get_operand(0))
        elif name == "tt.expand_dims":
            axis = self._integers.int_attr(op, "axis")
            made = builder.create_expand_dims(self._made(op.get_operand(0), gl.SliceLayout(axis, layout)), axis)
        elif name == "tt.broadcast":
            made = builder.create_broadcast(self._made(op.get_operand(0), layout), result_type)
        elif name == "arith.extsi":
            made = builder.create_int_cast(self._made(op.get_operand(0), layout), result_type, True)
        elif name == "arith.cmpi":
            made = getattr(builder, _COMPARISONS[self._integers.int_attr(op, "predicate")])(
                self._made(op.get_operand(0), layout), self._made(op.get_operand(1), layout))
        else:
            made = getattr(builder, _ELEMENTWISE[name])(self._made(op.get_operand(0), layout),
                                                        self._made(op.get_operand(1), layout))
        made.set_loc(value.get_loc())
        return made


def hoist_argument_conversions(module, entry, arguments: list, builder) -> int:
    """In the function of entry block ``entry``, each conversion of index arithmetic that starts
    from one of the tensor ``arguments`` becomes that arithmetic made again on the arguments
    converted once at the entry (one conversion per argument and layout). Returns how many
    conversions were replaced; the old arithmetic is left dead for the canonicalizer."""
    leaves = frozenset(a.id() for a in arguments)
    converted: dict[tuple[int, str], object] = {}

    def leaf(argument, layout):
        key = (argument.id(), str(layout))
        if key not in converted:
            here = builder.get_insertion_point()
            builder.set_insertion_point_to_start(entry)
            converted[key] = builder.create_convert_layout(in_layout(argument, layout, builder), argument)
            builder.restore_insertion_point(here)
        return converted[key]

    remat = Rematerializer(module, builder, leaves, leaf)
    conversions: list = []

    def visit(op):
        if op.get_name() == "ttg.convert_layout" and op.get_operand(0).id() not in leaves:
            conversions.append(op)

    module.walk(visit)
    replaced = 0
    for op in conversions:
        source = op.get_operand(0)
        if not (remat.reaches_leaf(source) and remat.possible(source)):
            continue
        remat.replace(op)
        replaced += 1
    return replaced


def recompute_boundary_conversions(module, builder) -> tuple[set[str], bool]:
    """Each boundary's conversion (tagged) of a tensor made from scalars by index arithmetic
    becomes the arithmetic made in the layout converted to. Returns the tags of the boundaries
    whose every conversion was replaced so, and whether any conversion was (the module changed)."""
    remat = Rematerializer(module, builder)
    conversions: list = []

    def visit(op):
        if op.get_name() == "ttg.convert_layout" and op.get_str_attr(TAG):
            conversions.append(op)

    module.walk(visit)
    recomputed: set[str] = set()
    kept: set[str] = set()
    for op in conversions:
        boundary_tag = op.get_str_attr(TAG)
        source = op.get_operand(0)
        if remat.defining(source) is None or not remat.possible(source):
            kept.add(boundary_tag)
            continue
        remat.replace(op)
        recomputed.add(boundary_tag)
    return recomputed - kept, bool(recomputed)
