"""What a boundary's layout conversion moves, from the two layouts' linear maps.

Triton lowers ``ttg.convert_layout`` by what the layouts require: a permutation of each
thread's registers, warp shuffles where every element a thread needs is held in its own warp,
and a round trip through shared-memory scratch (a barrier between the stores and the loads)
where it has to cross warps. Both layouts are turned into Triton's own linear layouts
(``to_linear_layout``: register, lane and warp bases), and for every element each thread of
the result needs, the threads of the source that hold it decide the class.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import product

from triton.experimental.gluon.language._layouts import DistributedLinearLayout

from .boundary import shape_and_dtype

_ORDER = ("none", "registers", "shuffles", "shared")
_BITS = {"i1": 8, "i8": 8, "f8E4M3FN": 8, "f8E5M2": 8, "i16": 16, "f16": 16, "bf16": 16, "i32": 32, "f32": 32,
         "i64": 64, "f64": 64}


@dataclass(frozen=True)
class Movement:
    kind: str           # "none" (same layout), "registers" (within each thread), "shuffles" (within warps), "shared"
    shared_bytes: int   # bytes stored to (and loaded from) shared-memory scratch
    barriers: int       # barriers the shared round trip needs between its stores and loads


def of_conversion(builder, source, result) -> Movement:
    """The movement of ``convert_layout(source) -> result`` (two IR tensor values)."""
    shape, dtype = shape_and_dtype(str(source.get_type()))
    return between(builder, builder.get_gluon_layout_from_tensor(source), builder.get_gluon_layout_from_tensor(result),
                   list(shape), _BITS.get(dtype, 32))


def between(builder, source_layout, result_layout, shape: list, bits: int) -> Movement:
    """The movement of converting a ``shape`` tensor of ``bits``-bit elements between two Gluon
    layouts (``builder``: a ``GluonOpBuilder``, for Triton's linear-layout conversion)."""
    src_layout, dst_layout = linear(builder, source_layout, shape), linear(builder, result_layout, shape)
    if _bases(src_layout) == _bases(dst_layout):
        return Movement("none", 0, 0)
    src, dst = _owners(src_layout), _owners(dst_layout)
    kind = "registers"
    for coordinate, threads in dst.items():
        held = src[coordinate]
        for warp, lane in threads:
            if (warp, lane) in held:
                continue
            kind = max(kind, "shuffles" if any(w == warp for w, _ in held) else "shared", key=_ORDER.index)
    if kind != "shared":
        return Movement(kind, 0, 0)
    return Movement(kind, math.prod(shape) * bits // 8, 1)


def linear(builder, layout, shape: list) -> DistributedLinearLayout:
    """Triton's linear layout (register, lane, warp bases) of a distributed layout over ``shape``."""
    if isinstance(layout, DistributedLinearLayout):
        return layout
    return builder.to_linear_layout(layout._to_ir(builder), list(shape))


def _bases(layout: DistributedLinearLayout) -> tuple:
    return tuple(tuple(map(tuple, b)) for b in (layout.reg_bases, layout.lane_bases, layout.warp_bases))


def _owners(layout: DistributedLinearLayout) -> dict[tuple, set[tuple[int, int]]]:
    """Tensor coordinate -> the (warp, lane) pairs holding it (several where a layout broadcasts)."""
    owners: dict[tuple, set[tuple[int, int]]] = {}
    rank = len((layout.reg_bases or layout.lane_bases or layout.warp_bases or [[0]])[0])
    registers = span(layout.reg_bases, rank)
    for (warp, w_coord), (lane, l_coord) in product(enumerate(span(layout.warp_bases, rank)),
                                                    enumerate(span(layout.lane_bases, rank))):
        base = tuple(a ^ b for a, b in zip(w_coord, l_coord))
        for r_coord in registers:
            owners.setdefault(tuple(a ^ b for a, b in zip(base, r_coord)), set()).add((warp, lane))
    return owners


def span(bases: list, rank: int) -> list[tuple]:
    """The coordinate of every index 0..2^len(bases)-1: the XOR of the bases of its set bits."""
    coords = [(0, ) * rank]
    for basis in bases:
        coords += [tuple(a ^ b for a, b in zip(c, basis)) for c in coords]
    return coords
