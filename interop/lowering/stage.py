"""``hybrid.stage``: a tensor stored once into shared memory, in a swizzle planned for its
writer and its readers.

In a Gluon kernel, a Triton region's result comes back in the layout Triton's passes chose,
which the author cannot write down in advance. ``hybrid.stage(y, *reader_layouts)`` stores
``y`` into a new shared buffer whose swizzled layout ``swizzle.plan`` picks for ``y``'s own
layout (the writer) and the layouts the kernel will load the buffer in (the readers), and
returns its ``shared_memory_descriptor``. Where ``y`` is a Triton region's result, the compile
records the boundary as a shared-memory handoff (``TritonRegions.staged``); the store takes
the region's value as it is, so there is one write and no conversion.

It is a builtin (like ``gl.allocate_shared_memory``), so the code generator hands it its
semantic and itself; in the interpreter the layout is the unswizzled one (layouts do not
change results there).
"""
from __future__ import annotations

from . import interception
from ..boundaries import swizzle
from .. import validate
from ..errors import RegionError
from ..triton.bindings import gluon_ir
from ..triton.language import DistributedLayout, unwrap_constexpr
from ..triton.language import core as tl

_HINT = ("pass the distributed layouts the buffer is loaded in (its .load(layout) calls), "
         "each of the tensor's rank, e.g. hybrid.stage(y, gl.BlockedLayout(...))")


@tl.builtin
def stage(value, *readers, _semantic=None, _generator=None):
    """Store ``value`` once into shared memory in a swizzle planned for its own layout and
    ``readers`` (the distributed layouts the buffer will be loaded in); returns the buffer."""
    readers = [unwrap_constexpr(r) for r in readers]
    compile_context = interception.compile_of(_generator)
    regions = compile_context.triton if compile_context is not None else None
    problem = _problem(value.type, readers)
    if problem and _generator is not None:
        region = regions.region_of(value) if regions is not None else None
        site = f"{_generator.file_name}:{_generator.begin_line + _generator.cur_node.lineno}"
        raise RegionError(region.function if region else "hybrid.stage", site, f"hybrid.stage: {problem}", _HINT)
    if problem:
        raise ValueError(f"hybrid.stage: {problem}")
    ty = value.type
    builder = _semantic.builder
    if isinstance(builder, gluon_ir.GluonOpBuilder):
        plan = swizzle.plan(builder, ty.layout, readers, list(ty.shape), ty.element_ty.primitive_bitwidth)
        layout = plan.layout
    else:   # the interpreter: any layout gives the same values
        plan, layout = None, swizzle.plain(len(ty.shape))
    buffer = _semantic.allocate_shared(ty.element_ty, list(ty.shape), layout, value)
    if regions is not None and plan is not None:
        regions.staged(value, buffer, plan)
    return buffer


def _problem(ty, readers: list) -> str | None:
    """What makes ``readers`` unusable for a tensor of type ``ty``, or None."""
    if not isinstance(ty, tl.block_type):
        return f"it stores a tensor, not a {ty}"
    if not readers:
        return "no reader layout given: the swizzle is planned for the layouts the buffer is loaded in"
    for reader in readers:
        if not isinstance(reader, DistributedLayout):
            return f"the reader layout {reader!r} is not a distributed layout"
        rank = validate.rank_of(reader, ty.shape)
        if rank != len(ty.shape):
            return f"the reader layout {reader!r} has rank {rank}; the tensor {list(ty.shape)} has rank {len(ty.shape)}"
    return None
