"""What a boundary's layout conversion moves, from the two layouts' linear maps.

Triton lowers ``ttg.convert_layout`` by what the layouts require: a permutation of each
thread's registers, warp shuffles where every element a thread needs is held in its own warp,
and a round trip through shared-memory scratch where it has to cross warps. Both layouts are
turned into Triton's own linear layouts (``to_linear_layout``: register, lane and warp bases),
and for every element each thread of the result needs, the threads of the source that hold it
decide the class. A shuffle moves one 32-bit register per lane; a round trip moves the tile in
as many rounds as Triton's scratch for it takes (``scratch.ScratchProbe``), each a store, a
barrier, a load and (between rounds) another barrier.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .. import caches
from ..instrumentation import timing
from ..boundary import element_bits, shape_and_dtype, tile_bytes
from ..targets import resolve
from ..triton.bindings import gluon_ir, ir, parse_module
from ..triton.frontend import make_backend
from ..triton.language import DistributedLinearLayout, layout_to_ir

#: movement kinds, cheapest first
ORDER = ("none", "registers", "shuffles", "shared")


@dataclass(frozen=True)
class Movement:
    kind: str           # "none" (same layout), "registers" (within each thread), "shuffles" (within warps), "shared"
    shared_bytes: int   # shared-memory scratch the round trip uses
    barriers: int       # barriers of the round trip: 2 per round, less the one after the last load
    shuffles: int = 0   # warp shuffles per thread


def of_conversion(builder, source, result, probe=None) -> Movement:
    """The movement of ``convert_layout(source) -> result`` (two IR tensor values); ``probe`` (a
    ``scratch.ScratchProbe``) sizes a round trip's scratch as Triton will, else it is the tile."""
    shape, dtype = shape_and_dtype(str(source.get_type()))
    move = between(builder, builder.get_gluon_layout_from_tensor(source), builder.get_gluon_layout_from_tensor(result),
                   list(shape), element_bits(dtype))
    scratch = probe.conversion_bytes(source.get_type(), result.get_type()) if move.kind == "shared" and probe else 0
    return _round_trip(tile_bytes(shape, element_bits(dtype)), scratch) if scratch else move


def moving_conversions(ttgir: str, target: str) -> int:
    """Layout conversions of a kernel's final ``ttgir`` that move data between threads:
    ``ttg.convert_layout`` (and AMD's ``amdg.in_thread_transpose``, a conversion Triton's AMD
    backend spells as its own op) whose source and result place the tile's elements, as Triton's
    linear layouts, so that a thread needs an element another thread holds (warp shuffles or a
    round trip through shared memory). Two attributes that print apart but place
    every element alike (a ``[4, 1]`` and a ``[1, 1]`` blocked layout over a ``1x64`` row) lower
    to nothing, and a permutation of each thread's own registers moves nothing between threads;
    neither is counted (what either costs shows in the instruction count)."""
    context = ir.context()
    ir.load_dialects(context)
    make_backend(resolve(target)).load_dialects(context)
    return len(_moving(parse_module(ttgir, context), gluon_ir.GluonOpBuilder(context)))


def moving_bytes(module, builder) -> int:
    """The bytes ``module``'s layout conversions move between threads (``moving_conversions``'
    conversions, each its whole tile): what one layout plan of a kernel costs against another."""
    total = 0
    for op in _moving(module, builder):
        shape, dtype = shape_and_dtype(str(op.get_operand(0).get_type()))
        total += tile_bytes(shape, element_bits(dtype))
    return total


def loaded_bytes(module) -> int:
    """The bytes ``module``'s tile loads read from global memory (``tt.load``, AMD buffer loads),
    a tile loaded twice counted twice: what a layout plan that loads a tile again in a second
    layout, instead of converting it, pays."""
    total = 0

    def visit(op):
        nonlocal total
        if op.get_name() in ("tt.load", "amdg.buffer_load") and str(op.get_result(0).get_type()).startswith("tensor<"):
            shape, dtype = shape_and_dtype(str(op.get_result(0).get_type()))
            total += tile_bytes(shape, element_bits(dtype))

    module.walk(visit)
    return total


def _moving(module, builder) -> list:
    found: list = []

    def visit(op) -> None:
        if op.get_name() in ("ttg.convert_layout", "amdg.in_thread_transpose") \
                and of_conversion(builder, op.get_operand(0), op.get_result(0)).kind in ("shuffles", "shared"):
            found.append(op)

    module.walk(visit)
    return found


@timing.timed("movement analysis")
def between(builder, source_layout, result_layout, shape: list, bits: int) -> Movement:
    """The movement of converting a ``shape`` tensor of ``bits``-bit elements between two Gluon
    layouts (``builder``: a ``GluonOpBuilder``, for Triton's linear-layout conversion), a round
    trip taken as staging the whole tile at once."""
    src_layout, dst_layout = linear(builder, source_layout, shape), linear(builder, result_layout, shape)
    if _bases(src_layout) == _bases(dst_layout):
        return Movement("none", 0, 0)
    kind = _kind_of(_bases(src_layout), _bases(dst_layout), tuple(shape))
    if kind == "registers":
        return Movement(kind, 0, 0)
    if kind == "shuffles":
        return Movement(kind, 0, 0, -(-(2 ** len(dst_layout.reg_bases)) * bits // 32))
    tile = tile_bytes(shape, bits)
    return _round_trip(tile, tile)


def _round_trip(tile_bytes: int, scratch_bytes: int) -> Movement:
    """A tile moved through ``scratch_bytes`` (> 0) of scratch, in as many rounds as that takes."""
    rounds = max(1, -(-tile_bytes // scratch_bytes))
    return Movement("shared", min(scratch_bytes, tile_bytes), 2 * rounds - 1)


def linear(builder, layout, shape: list) -> DistributedLinearLayout:
    """Triton's linear layout (register, lane, warp bases) of a distributed layout over ``shape``.
    A linear layout written for a larger tile than ``shape`` (Triton's passes type a ``128x1``
    column with the ``128x64`` tile's layout) broadcasts what lies beyond it, as Triton's
    ``ensureLayoutNotLargerThan`` does: each basis component past its dimension is zero."""
    if isinstance(layout, DistributedLinearLayout):
        def fit(bases):
            return [[c if c < size else 0 for c, size in zip(basis, shape)] for basis in bases]
        return DistributedLinearLayout(fit(layout.reg_bases), fit(layout.lane_bases), fit(layout.warp_bases),
                                       fit(layout.block_bases), list(shape))
    return builder.to_linear_layout(layout_to_ir(layout, builder), list(shape))


def _bases(layout: DistributedLinearLayout) -> tuple:
    return tuple(tuple(map(tuple, b)) for b in (layout.reg_bases, layout.lane_bases, layout.warp_bases))


def holders(layout: DistributedLinearLayout, shape: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (element, warp, lane) a layout places: the element's row-major index and the warp and
    lane holding it, one entry per register of every thread (several per element where it broadcasts)."""
    return _holders(layout.reg_bases, layout.lane_bases, layout.warp_bases, shape)


def _holders(reg_bases, lane_bases, warp_bases, shape: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rank = len(shape)
    axes = [np.array(span(bases, rank), dtype=np.int64) for bases in (reg_bases, lane_bases, warp_bases)]
    coords = axes[0][:, None, None, :] ^ axes[1][None, :, None, :] ^ axes[2][None, None, :, :]   # [reg,lane,warp,dim]
    element = np.ravel_multi_index(tuple(np.moveaxis(coords, -1, 0)), shape).ravel()
    _, lanes, warps = np.meshgrid(np.arange(len(axes[0])), np.arange(len(axes[1])), np.arange(len(axes[2])),
                                  indexing="ij")
    return element, warps.ravel(), lanes.ravel()


@functools.lru_cache(maxsize=4096)
def _kind_of(src_bases: tuple, dst_bases: tuple, shape: tuple) -> str:
    """``_kind`` of two layouts given by their (register, lane, warp) bases over ``shape``. Cached:
    a host's conversions are weighed again in each layout trial (``host_relayout``) and by the
    planner, and the same layouts meet again in the next compile."""
    return _kind(_holders(*src_bases, list(shape)), _holders(*dst_bases, list(shape)))


caches.register(_kind_of.cache_clear)


def _kind(src: tuple, dst: tuple) -> str:
    """``registers`` if every thread of ``dst`` already holds each element it needs in ``src``;
    else ``shuffles`` if some thread of its own warp does; else ``shared``."""
    (src_element, src_warp, src_lane), (dst_element, dst_warp, dst_lane) = src, dst
    lanes, warps = int(max(src_lane.max(), dst_lane.max())) + 1, int(max(src_warp.max(), dst_warp.max())) + 1
    in_thread = np.isin((dst_element * warps + dst_warp) * lanes + dst_lane,
                        (src_element * warps + src_warp) * lanes + src_lane)
    if in_thread.all():
        return "registers"
    in_warp = np.isin(dst_element[~in_thread] * warps + dst_warp[~in_thread], src_element * warps + src_warp)
    return "shuffles" if in_warp.all() else "shared"


def span(bases: list, rank: int) -> list[tuple]:
    """The coordinate of every index 0..2^len(bases)-1: the XOR of the bases of its set bits."""
    coords = [(0, ) * rank]
    for basis in bases:
        coords += [tuple(a ^ b for a, b in zip(c, basis)) for c in coords]
    return coords
