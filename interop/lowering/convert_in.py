"""``hybrid.convert_in``: a tensor a Gluon function takes, converted to the layout it needs,
made there instead where its caller made it from a constant or from index arithmetic.

A port of a Triton function for a Gluon kernel (``hybrid port``) takes the caller's tensors in
whatever layout they come and converts the ones its code needs elsewhere: attention's inner loop
wants its accumulator, running max and sum in the MMA layout, its K and V pointer tiles in the
loads' layouts. In the kernel the port replaced, those were a Triton region's inputs, and the
stitcher made the caller's ``gl.zeros`` and pointer arithmetic in the region's layouts instead
of converting them (``stitching.stitch_passes``: splat constants, ``remat``). Gluon
keeps every conversion its author wrote, so the port's plain ``gl.convert_layout`` moves each
tile through shared memory once. ``convert_in`` marks its conversion as an entry's: in a kernel
built by ``hybrid``, once the functions are inlined (``make_in_place`` for a Gluon kernel, the stitch's folds,
``stitching.stitch_passes``, for a Triton kernel's Gluon regions), a marked conversion of a
splat constant becomes the constant in the new layout, and one of index arithmetic the
arithmetic made in it; any other stays a conversion (``untag``). Outside hybrid (upstream's
compiler, the interpreter) it is ``gl.convert_layout``.
"""
from __future__ import annotations

from . import interception
from ..boundary import TAG
from ..ir.canonicalize import canonicalize
from ..stitching import remat, stitch
from ..triton.bindings import gluon_ir
from ..triton.language import core as tl
from ..stitching.state import Stitch

#: The tag of an entry's conversion (then its result's value id): no region record is kept for it.
ENTRY = "entry:"


@tl.builtin
def convert_in(value, layout, _semantic=None, _generator=None):
    """``value`` in ``layout``: converted, or (in a Gluon kernel built by ``hybrid``) made in it
    where the caller made it from a splat constant or index arithmetic."""
    from triton.experimental.gluon import language as gl
    converted = gl.convert_layout(value, layout, _semantic=_semantic)
    compile_context = interception.compile_of(_generator)
    if compile_context is not None and isinstance(_semantic.builder, gluon_ir.GluonOpBuilder):
        converted.handle.set_attr(TAG, _semantic.builder.get_string_attr(f"{ENTRY}{converted.handle.id()}"))
    return converted


def make_in_place(state: Stitch, module) -> bool | None:
    """A Gluon host's pass: inline the Gluon functions of ``module`` (as Gluon's pipeline does
    first) where an entry conversion is in one, make each entry conversion of a splat constant or
    of index arithmetic in its layout instead, and untag the rest (plain conversions from here on).
    One pass: the folds and the canonicalizer after them are the same as a boundary's, in one go.
    False where there is no entry conversion."""
    if not _entries(module):
        return False
    context = state.context
    stitch.inline(module, context)
    builder = gluon_ir.GluonOpBuilder(context)
    stitch.fold_constant_conversions(module, builder)
    remat.recompute_boundary_conversions(module, builder)
    canonicalize(module, context)
    _untag(module, builder)


def untag(state: Stitch, module) -> bool:
    """A Triton host's pass: its Gluon regions' entry conversions left (not made in place by the
    stitch's folds) are plain conversions from here on. Whether there was one."""
    return _untag(module, gluon_ir.GluonOpBuilder(state.context))


def _untag(module, builder) -> bool:
    entries = _entries(module)
    for conversion in entries:
        conversion.get_result(0).set_attr(TAG, builder.get_string_attr(""))
    return bool(entries)


def _entries(module) -> list:
    found: list = []

    def visit(op):
        if op.get_name() == "ttg.convert_layout" and (op.get_str_attr(TAG) or "").startswith(ENTRY):
            found.append(op)

    module.walk(visit)
    return found
