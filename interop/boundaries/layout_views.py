"""Which warp and lane hold each element of a tensor in a layout, from the layout's ttgir text.

Boundary records keep layouts as ttgir attribute text (``#ttg.blocked<{...}>``); a report that
draws them needs the layout's element -> thread map. The text is parsed by MLIR itself (a
one-argument function of that tensor type, through Triton's parser), and the map is Triton's
own linear layout of it (``movement.linear``), so every layout Triton knows (blocked, slice,
MMA, dot operand, linear) is drawn as the compiler places it.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from . import movement
from ..triton.bindings import gluon_ir, ir, parse_module
from ..triton.language import SharedLayout


@dataclass(frozen=True)
class Placement:
    """The first holder of every element of a ``shape`` tensor (row-major arrays of ``shape``)."""
    shape: tuple
    warp: np.ndarray
    lane: np.ndarray
    register: np.ndarray
    copies: int   # threads holding each element (broadcast layouts hold one several times)


def gluon_layout_of(layout: str, shape, dtype: str, num_warps: int, warp_size: int, builder, context):
    """The Gluon layout object of ``layout`` (ttgir attribute text) for a ``shape`` x ``dtype``
    tensor, parsed by MLIR in ``context``; ``ValueError`` for text that is not a layout Triton knows."""
    tensor = f"tensor<{'x'.join(map(str, shape))}x{dtype}, {layout}>"
    module = _taking(tensor, num_warps, warp_size, context)
    return builder.get_gluon_layout_from_tensor(module.get_function("f").args(0))


def gluon_shared_layout_of(layout: str, shape, dtype: str, num_warps: int, warp_size: int, builder, context):
    """``gluon_layout_of`` for a shared layout (of a ``shape`` x ``dtype`` buffer)."""
    buffer = f"!ttg.memdesc<{'x'.join(map(str, shape))}x{dtype}, {layout}, #ttg.shared_memory>"
    module = _taking(buffer, num_warps, warp_size, context)
    return builder.get_gluon_layout_from_memdesc(module.get_function("f").args(0))


def _taking(ir_type: str, num_warps: int, warp_size: int, context):
    """A module of one function ``f`` taking an ``ir_type``, parsed by MLIR in ``context``."""
    text = (f'module attributes {{"ttg.num-warps" = {num_warps} : i32, "ttg.threads-per-warp" = {warp_size} : i32, '
            f'"ttg.num-ctas" = 1 : i32}} {{\n  tt.func public @f(%a: {ir_type}) {{ tt.return }}\n}}\n')
    try:
        module = parse_module(text, context)
    except Exception as exc:   # MLIR's parse error: not a layout this Triton knows
        raise ValueError(f"cannot parse {ir_type}: {exc}") from None
    return module


class NotDistributed(ValueError):
    """A layout no thread holds elements in: a shared-memory layout (a handoff's buffer)."""


@functools.lru_cache(maxsize=256)
def placement(layout: str, shape: tuple, dtype: str, num_warps: int, warp_size: int) -> Placement:
    """Where ``layout`` puts each element of a ``shape`` x ``dtype`` tensor; raises ``ValueError``
    for text MLIR does not parse as a layout, ``NotDistributed`` for a shared-memory layout."""
    context = ir.context()
    ir.load_dialects(context)
    builder = gluon_ir.GluonOpBuilder(context)
    gluon_layout = gluon_layout_of(layout, shape, dtype, num_warps, warp_size, builder, context)
    if isinstance(gluon_layout, SharedLayout):   # (Triton 3.6 aborts making its linear layout)
        raise NotDistributed(f"{layout} is a shared-memory layout: no thread holds its elements")
    linear = movement.linear(builder, gluon_layout, list(shape))
    element, warps, lanes = movement.holders(linear, list(shape))
    size = int(np.prod(shape))
    warp, lane, register = (np.full(size, -1, dtype=np.int64) for _ in range(3))
    registers = np.arange(len(element)) // (len(element) >> len(linear.reg_bases))   # holders: [reg, lane, warp]
    first = np.unique(element, return_index=True)[1]
    warp[element[first]], lane[element[first]], register[element[first]] = warps[first], lanes[first], registers[first]
    copies = len(element) // size
    return Placement(tuple(shape), warp.reshape(shape), lane.reshape(shape), register.reshape(shape), copies)
