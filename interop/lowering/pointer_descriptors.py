"""A Triton kernel's tensor descriptor in a Gluon region where the target has no TMA (sm80, AMD).

There Triton lowers a descriptor to its base pointer, shape, strides and padding option, and
loads a block through it as masked pointer loads. A Gluon function takes it as the same values,
a ``PointerDescriptor``; ``load_block`` and ``store_block`` take either it or Gluon's TMA
descriptor (sm90a, sm100a), so one Gluon function is written for every target.
"""
# (no ``from __future__ import annotations``: Triton 3.6 reads an aggregate's field types unevaluated)
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma

from ..errors import PointerDescriptorError
from ..triton import compat
from ..triton.language import AggregateType, aggregate
from ..triton.language import core as tl

_tma_load, _tma_store = compat.gluon_tma_copies()


@aggregate
class PointerDescriptor:
    """A tiled view of a global tensor as Triton lowers a descriptor without TMA: the base pointer,
    whether out-of-bounds elements read as NaN (``padding="nan"``; else zero), the tensor's shape
    (i32) and strides (i64, in elements), and the block a load or store moves."""
    base: tl.tensor
    padding_nan: tl.base_value   # a tensor (i1), or a constexpr where known
    shape: tl.tuple
    strides: tl.tuple
    block_shape: tl.constexpr

    @gluon.constexpr_function
    def __init__(self, base, padding_nan, shape, strides, block_shape):
        self.base = base
        self.padding_nan = padding_nan
        self.shape = shape
        self.strides = strides
        self.block_shape = tl.constexpr(block_shape)

    def __getattr__(self, name):
        """A TMA descriptor's attribute (``layout``, ``dtype``, ...) asked of this one: named, with
        what to do, by the compiler and the interpreter alike."""
        if name.startswith("_"):
            raise AttributeError(name)
        raise PointerDescriptorError(name)

    __getattr__.__triton_builtin__ = True   # not Triton code: Triton's dependency hash passes it over


@gluon.jit
def _pointers(desc, offsets, layout: gl.constexpr):
    """The block's pointers at ``offsets``, in ``layout``, and the mask of those inside the
    tensor (``0 <= index < shape`` in every dimension, in 64-bit indices, as Triton's lowering)."""
    gl.static_assert(len(desc.shape) <= 2, "a PointerDescriptor loads and stores blocks of rank 1 or 2")
    if len(desc.shape) == 1:
        index = gl.arange(0, desc.block_shape[0], layout=layout).to(gl.int64) + offsets[0]
        pointers = desc.base + index * desc.strides[0]
        mask = (index >= 0) & (index < desc.shape[0])
    else:
        rows = gl.arange(0, desc.block_shape[0], layout=gl.SliceLayout(1, layout)).to(gl.int64) + offsets[0]
        cols = gl.arange(0, desc.block_shape[1], layout=gl.SliceLayout(0, layout)).to(gl.int64) + offsets[1]
        rows = gl.expand_dims(rows, 1)
        cols = gl.expand_dims(cols, 0)
        pointers = desc.base + (rows * desc.strides[0] + cols * desc.strides[1])
        mask = ((rows >= 0) & (rows < desc.shape[0])) & ((cols >= 0) & (cols < desc.shape[1]))
    return pointers, mask


@gluon.jit
def _load(desc, offsets, layout: gl.constexpr):
    """The block at ``offsets`` in the distributed ``layout``; elements outside the tensor read
    as the padding option says."""
    pointers, mask = _pointers(desc, offsets, layout)
    if desc.base.dtype.element_ty.is_floating():
        other = gl.where(desc.padding_nan, float("nan"), 0.0)
    else:
        other = 0
    return gl.load(pointers, mask=mask, other=other)


@gluon.jit
def _store(desc, offsets, value):
    """``value`` (in any distributed layout) stored at ``offsets``; elements outside the
    tensor are not written."""
    layout: gl.constexpr = value.type.layout
    pointers, mask = _pointers(desc, offsets, layout)
    gl.store(pointers, value.to(desc.base.dtype.element_ty), mask=mask)


def view_type(ty, padding_nan: bool | None = None):
    """The ``PointerDescriptor`` type a Gluon function takes a Triton descriptor of type ``ty`` in:
    its IR values are the descriptor's handle's (the base pointer), the padding option's (none
    where ``padding_nan`` is known: a constexpr), then its shape's and strides' (the leaves
    Triton passes it as)."""
    block = ty.block_type
    padding = tl.int1 if padding_nan is None else tl.constexpr_type(tl.constexpr(padding_nan))
    return AggregateType(PointerDescriptor, [
        ("base", tl.pointer_type(block.element_ty)), ("padding_nan", padding),
        ("shape", ty.shape_type), ("strides", ty.strides_type),
        ("block_shape", tl.constexpr_type(tl.constexpr([tl.constexpr(n) for n in block.shape])))])


class LoweredDescriptorType(tl.tensor_descriptor_type):
    """A ``PointerDescriptor`` as a Triton region takes it: Triton's descriptor type, with the
    padding option where it is a constant (the region's lowering folds it in, as the all-Triton
    kernel's descriptor made with it has it)."""

    def __init__(self, desc):
        super().__init__(tl.block_type(desc.base.dtype.element_ty, list(desc.block_shape.value)), desc.shape.type,
                         desc.strides.type)
        self.padding_nan = desc.padding_nan.value if isinstance(desc.padding_nan, tl.constexpr) else None

    def __str__(self) -> str:
        return f"{super().__str__()}<padding_nan={self.padding_nan}>"

    def mangle(self) -> str:
        return f"{super().mangle()}P{self.padding_nan}"


def is_pointer_descriptor(value) -> bool:
    return isinstance(getattr(value, "type", None), AggregateType) and value.type.base_cls is PointerDescriptor


def lowered_leaves(builder, name: str, desc) -> list[tuple[str, object]]:
    """The values a Triton function taking ``desc`` as a tensor descriptor takes once Triton's
    ``make_ttir`` lowered it: the pointer, shape (64-bit) and strides, its flags (the padding
    option, then where Triton has it, f32 not rounded to tf32), then the shape's and strides' own
    leaves; each named as Gluon code reads it off ``desc`` called ``name``."""
    shape = [(f"{name}.shape[{i}]", n) for i, n in enumerate(desc.shape.values)]
    strides = [(f"{name}.strides[{i}]", s) for i, s in enumerate(desc.strides.values)]
    wide = [(f"{n}.to(gl.int64)", tl.tensor(builder.create_int_cast(value.handle, builder.get_int64_ty(), True),
                                             tl.int64)) for n, value in shape]
    padding = desc.padding_nan
    if isinstance(padding, tl.constexpr):   # (the region folds it in: ``LoweredDescriptorType``)
        padding = tl.tensor(builder.get_int1(padding.value), tl.int1)
    flags = [(f"{name}.padding_nan", padding)]
    flags += [("False", tl.tensor(builder.get_int1(False), tl.int1))] * (compat.LOWERED_DESCRIPTOR_FLAGS - 1)
    return [(f"{name}.base", desc.base), *wide, *strides, *flags, *shape, *strides]


@gluon.jit
def load_block(desc, offsets, layout: gl.constexpr):
    """The block of ``desc`` at ``offsets`` in ``layout``: copied by TMA into shared memory and
    loaded from there (a TMA descriptor), or loaded through pointers (a ``PointerDescriptor``)."""
    if hasattr(desc, "padding_nan"):   # a PointerDescriptor (the interpreter hands its globals over as constexprs)
        return _load(desc, offsets, layout)
    else:
        smem = gl.allocate_shared_memory(desc.dtype, desc.block_type.shape, desc.layout)
        bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        mbarrier.init(bar, count=1)
        mbarrier.expect(bar, desc.block_type.nbytes)
        _tma_load(desc, offsets, bar, smem)
        mbarrier.wait(bar, 0)
        mbarrier.invalidate(bar)
        return smem.load(layout)


@gluon.jit
def store_block(desc, offsets, value):
    """``value`` stored into the block of ``desc`` at ``offsets``: by TMA from shared memory (a
    TMA descriptor), or through pointers (a ``PointerDescriptor``)."""
    if hasattr(desc, "padding_nan"):   # a PointerDescriptor (the interpreter hands its globals over as constexprs)
        _store(desc, offsets, value)
    else:
        smem = gl.allocate_shared_memory(desc.dtype, desc.block_type.shape, desc.layout, value.to(desc.dtype))
        fence_async_shared()
        _tma_store(desc, offsets, smem)
        tma.store_wait(0)
