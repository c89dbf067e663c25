"""Values crossing between a Triton function and a Gluon function in the interpreter.

Compiled, a Triton region takes its tensors in the layouts its Gluon host gave them, as layout
anchors (function arguments), and Triton's passes choose the rest; a Gluon region sees the
layouts its Triton host's passes chose. Here the same types are made: Triton code gets plain
block types; a Triton region's results come back to Gluon code in the layouts those passes
keep (``followed``) where the region ran no layout anchor of its own (``AnchorWatch``), and in
a ``RegionLayout`` otherwise; Gluon code called from Triton gets a ``RegionLayout``, or what
the function declared with ``@hybrid.takes`` (``declared``). A shared buffer a Gluon function
returns to Triton code is loaded, as the compiled boundary does.
"""
from __future__ import annotations

import inspect

import numpy as np
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import tma

from interop.boundaries import handoff
from interop.lowering.pointer_descriptors import PointerDescriptor
from interop.triton import interpreter as upstream
from interop.triton.language import TritonSemantic
from interop.triton.language import core as tl

from . import layouts
from . import program as prog
from .layouts import RegionLayout
from .tma import TMADescriptor

#: The ``TritonSemantic`` builders of ops Triton's ``RemoveLayoutConversions`` takes layouts from
#: (besides function arguments): memory accesses, dots, gathers; a region that runs one may return
#: a layout its host never gave it.
ANCHORS = ("load", "store", "dot", "dot_scaled", "gather", "atomic_", "descriptor_")


class AnchorWatch(TritonSemantic):
    """Triton's semantic, noting whether the code it builds ran a layout anchor (``ANCHORS``; a
    reshape that may reorder elements too)."""
    anchored = False

    def __getattribute__(self, name: str):
        if name.startswith(ANCHORS) and not name.startswith("_"):
            object.__setattr__(self, "anchored", True)
        return super().__getattribute__(name)

    def reshape(self, input, dst_shape, can_reorder):
        self.anchored = self.anchored or bool(can_reorder)
        return super().reshape(input, dst_shape, can_reorder)


def given_layouts(values) -> list[tuple[tuple, object]]:
    """(shape, layout) of each distributed tensor among ``values`` (recursing through tuples)."""
    found = []
    for value in values:
        if isinstance(value, (tl.tuple, tuple)):
            found += given_layouts(value.values if isinstance(value, tl.tuple) else value)
        elif isinstance(value, tl.tensor) and isinstance(value.type, gl.distributed_type):
            found.append((tuple(value.type.shape), value.type.layout))
    return found


def followed(given: list[tuple[tuple, object]], shape: tuple):
    """The layout Triton's passes keep for a result of ``shape`` of a region without anchors of
    its own: its one input layout of that shape (elementwise math), or the slice of its one input
    layout with one axis fewer (a reduction); ``None`` where that is not one layout."""
    same = {layout for s, layout in given if s == shape}
    if not same:
        same = {gl.SliceLayout(axis, layout) for s, layout in given if len(s) == len(shape) + 1
                for axis in range(len(s)) if s[:axis] + s[axis + 1:] == shape}
    return same.pop() if len(same) == 1 else None


def pointer_view(value):
    """``value`` (recursing through tuples) with each Triton tensor descriptor as the
    ``PointerDescriptor`` of its base pointer, padding option, shape and strides."""
    if isinstance(value, tl.tuple):
        return tl.tuple([pointer_view(v) for v in value.values])
    if isinstance(value, tuple):
        return tuple(pointer_view(v) for v in value)
    if not isinstance(value, tl.tensor_descriptor):
        return value
    handle = value.handle
    nan = upstream.TensorHandle(np.array([handle.padding == upstream.padding_option("nan")]), tl.int1)
    return PointerDescriptor(tl.tensor(handle.base, handle.base.dtype), tl.tensor(nan, tl.int1), tl.tuple(value.shape),
                             tl.tuple(value.strides), list(value.block_type.shape))


def into(language: str, value, origin: str, semantic=None, given: list | None = None):
    """``value`` as code of ``language`` sees it (recursing through tuples); ``semantic`` (the
    Gluon one) loads a returned shared buffer; ``given`` are the layouts a Triton region without
    anchors of its own was given (``followed``)."""
    if isinstance(value, tl.tuple):
        return tl.tuple([into(language, v, origin, semantic, given) for v in value.values])
    if isinstance(value, tuple):
        return tuple(into(language, v, origin, semantic, given) for v in value)
    if language == "triton" and isinstance(value, gl.shared_memory_descriptor):
        if semantic is None:
            raise TypeError(f"a shared-memory descriptor cannot be passed into a Triton region ({origin}); "
                            f"load it into registers before the call")
        value = semantic.shared_load(value, _region_layout(origin, len(value.type.shape)))
    if language == "triton" and isinstance(value, tma.tensor_descriptor):   # Triton's, of the same view
        block = value.block_type
        return tl.tensor_descriptor(value.handle.for_triton(list(block.shape)), value.shape, value.strides,
                                    tl.block_type(block.element_ty, list(block.shape)))
    if language == "gluon" and isinstance(value, tl.tensor_descriptor):   # Gluon's TMA descriptor of the view
        block = value.block_type
        layout = gl.NVMMASharedLayout.get_default_for(list(block.shape), block.element_ty)   # as Triton lays it out
        return tma.tensor_descriptor(TMADescriptor.of_triton(value.handle, layout), value.shape, value.strides,
                                     gl.block_type(block.element_ty, list(block.shape)), layout)
    if not isinstance(value, tl.tensor) or not isinstance(value.type, tl.block_type):
        return value
    ty = value.type
    if language == "triton":
        return tl.tensor(value.handle, tl.block_type(ty.element_ty, ty.shape))
    layout = followed(given, tuple(ty.shape)) if given else None
    return tl.tensor(value.handle, gl.distributed_type(ty.element_ty, ty.shape,
                                                       layout or _region_layout(origin, len(ty.shape))))


def declared(fn, args: tuple, kwargs: dict, semantic) -> tuple[tuple, dict]:
    """The arguments of a Gluon function called from Triton code as its ``@hybrid.takes``
    declarations ask: in the declared layout (checked against the target), or stored into a
    new shared buffer of the declared shared layout."""
    if not handoff.declares(fn):   # most calls: nothing to bind
        return args, kwargs
    bound = inspect.signature(fn.fn).bind(*args, **kwargs)
    bound.apply_defaults()
    wants = handoff.wants(fn, dict(bound.arguments))
    for name, want in wants.items():
        value = bound.arguments[name]
        ty = value.type
        if want.in_shared:
            bound.arguments[name] = semantic.allocate_shared(ty.element_ty, list(ty.shape), want.layout, value)
        else:
            layouts.check(want.layout, prog.program().warp_size, prog.current_frame().num_warps)
            bound.arguments[name] = tl.tensor(value.handle, want.gluon_type(ty))
    return bound.args, bound.kwargs


def _region_layout(origin: str, rank: int) -> RegionLayout:
    return RegionLayout.for_value(origin, rank, prog.program().warp_size, prog.current_frame().num_warps)
