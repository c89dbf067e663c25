"""TMA tensor descriptors in the interpreter: a tiled view of a global tensor.

A copy reads (or writes) one block at a coordinate; elements outside the tensor read as zero
(``padding="zero"``) or NaN (``"nan"``) and are not written, as the hardware does.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from interop.errors import LayoutError
from interop.triton import interpreter as upstream

from . import bounds
from .errors import user_site


def _host_descriptor_class():
    try:
        from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
    except ImportError:   # a Triton build without Gluon's NVIDIA runtime
        return None
    return TensorDescriptor


def is_host_descriptor(value) -> bool:
    cls = _host_descriptor_class()
    return cls is not None and isinstance(value, cls)


@dataclass
class TMADescriptor:
    base: int               # address of element 0
    shape: list[int]
    strides: list[int]      # in elements
    dtype: object           # Triton element type
    padding: str
    layout: object = None   # its shared layout, where known (a host's, or Triton code's: ``check_copy``)

    def _addresses(self, coord: list[int], block: tuple) -> tuple[np.ndarray, np.ndarray]:
        index = np.indices(block)
        inside = np.ones(block, dtype=bool)
        offset = np.zeros(block, dtype=np.int64)
        for d, (c, n, s) in enumerate(zip(coord, self.shape, self.strides)):
            pos = index[d] + c
            inside &= (pos >= 0) & (pos < n)
            offset += pos.astype(np.int64) * s
        nbytes = max(1, self.dtype.primitive_bitwidth // 8)
        return (self.base + offset * nbytes).astype(np.uint64), inside

    def read(self, coord: list[int], block: tuple) -> np.ndarray:
        ptrs, inside = self._addresses(coord, block)
        bounds.check_addresses(ptrs, inside, self.dtype, "TMA load")
        np_dtype = upstream.np_dtype(self.dtype)
        fill = np.nan if self.padding == "nan" else 0
        other = np.full(block, fill, dtype=np.float32).astype(np_dtype)
        return upstream.load(ptrs, inside, other, np_dtype)

    def write(self, coord: list[int], data: np.ndarray) -> None:
        ptrs, inside = self._addresses(coord, data.shape)
        bounds.check_addresses(ptrs, inside, self.dtype, "TMA store")
        upstream.store(ptrs, np.ascontiguousarray(data), inside)

    def check_copy(self, buffer) -> None:
        """A copy between this descriptor and ``buffer`` (a shared ``MemoryHandle``) of another layout
        is refused, as Triton's verifier refuses it (and the compiler in a Gluon region)."""
        if self.layout is not None and buffer.layout != self.layout:
            raise LayoutError(f"{user_site()}: a TMA copy through a tensor descriptor in {self.layout} uses a shared "
                              f"buffer in {buffer.layout}: the layouts must be the same (allocate it in desc.layout)")

    @staticmethod
    def of_triton(handle, layout) -> "TMADescriptor":
        """The view of upstream's descriptor ``handle`` (a Triton kernel's), for a Gluon region's
        copies through it in ``layout``."""
        nan = handle.padding == upstream.padding_option("nan")
        return TMADescriptor(int(handle.base.data.item()), [int(n.data.item()) for n in handle.shape],
                             [int(s.data.item()) for s in handle.strides], handle.base.dtype.element_ty,
                             "nan" if nan else "zero", layout)

    def for_triton(self, block_shape: list[int]):
        """Upstream's descriptor of the same view, for a Triton region's ``desc.load``/``store``."""
        import triton.language as tl
        base = upstream.TensorHandle(np.array([self.base], dtype=np.uint64), tl.pointer_type(self.dtype))
        shape = [upstream.TensorHandle(np.array([n], dtype=np.int32), tl.int32) for n in self.shape]
        strides = [upstream.TensorHandle(np.array([s], dtype=np.int64), tl.int64) for s in self.strides]
        return upstream.TensorDescHandle(base, shape, strides, list(block_shape), upstream.padding_option(self.padding))


def device_descriptor(desc):
    """The kernel-side ``tma.tensor_descriptor`` for a host ``TensorDescriptor`` argument."""
    import triton.language as tl
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.hopper import tma

    from interop.triton.frontend import mangle_type

    dtype = tl.str_to_ty(mangle_type(desc.base), None).element_ty
    handle = TMADescriptor(desc.base.data_ptr(), list(desc.shape), list(desc.strides), dtype, desc.padding,
                           desc.layout)
    shape = [upstream.implicit_cvt(int(s)) for s in desc.shape]
    strides = [upstream.implicit_cvt(int(s)) for s in desc.strides]
    return tma.tensor_descriptor(handle, shape, strides, gl.block_type(dtype, list(desc.block_shape)), desc.layout)

