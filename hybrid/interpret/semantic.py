"""The semantics the interpreter's builtins run with: upstream's, with whole-tile data.

``TritonSemantic`` needs nothing more than Triton's own interpreter gives it. ``GluonSemantic``
asks its builder for the layout of some results (``expand_dims``, ``permute``, ``reshape``,
``join``, ``split``); those are inferred by upstream's C++ rules on a throwaway module
(``_Shadow``), so the interpreter's layouts are the compiler's.
"""
from __future__ import annotations

import contextlib
import functools
import threading

from triton.experimental.gluon import language as gl

from interop.triton.bindings import gluon_ir, ir
from interop.triton.frontend import make_backend
from interop.triton.language import GluonSemantic, layout_to_ir

from .errors import UnsupportedOpError
from .layouts import RegionLayout

#: the op whose result layout ``_wrap_handle_infer_layout`` is asked for, per thread
_request = threading.local()


class GluonInterpreterSemantic(GluonSemantic):
    """Upstream's ``GluonSemantic`` (every check it makes runs as written), except where it asks
    its builder for a result's layout: the op being built says which inference to run."""

    def __init__(self, builder, num_warps: int):
        super().__init__(builder)
        self._num_warps = num_warps

    def num_warps(self, generator=None):
        return gl.constexpr(self._num_warps)

    @contextlib.contextmanager
    def _inferring(self, op: str, inputs: list, *args):
        previous, _request.value = getattr(_request, "value", None), (op, [t.type for t in inputs], args)
        try:
            yield
        finally:
            _request.value = previous

    def _wrap_handle_infer_layout(self, handle, scalar_ty, shape):
        if not shape:
            return self.tensor(handle, scalar_ty)
        request = getattr(_request, "value", None)
        if request is None:
            raise UnsupportedOpError("this op's result layout", "the interpreter infers the layouts of expand_dims, "
                                     "permute, reshape, join, split and reductions only")
        op, types, args = request
        layout = shadow(self.builder.target, self._num_warps).infer(op, types, *args)
        regions = [r for ty in types for r in _regions(ty.layout)]
        return self.tensor(handle, gl.distributed_type(scalar_ty, shape, _as_region(layout, regions)))

    def expand_dims(self, input, axis):
        with self._inferring("create_expand_dims", [input], axis if axis >= 0 else axis + len(input.shape)):
            return super().expand_dims(input, axis)

    def permute(self, input, dims):
        with self._inferring("create_trans", [input], list(dims)):
            return super().permute(input, dims)

    def reshape(self, input, dst_shape, can_reorder):
        with self._inferring("create_reshape", [input], [int(d) for d in dst_shape], False):
            return super().reshape(input, dst_shape, can_reorder)

    def join(self, a, b):
        with self._inferring("create_join", [a, b]):
            return super().join(a, b)

    def split(self, a):
        with self._inferring("create_split", [a]):
            return super().split(a)

    def convert_layout(self, value, layout, assert_trivial=False):
        """A conversion asserted to move nothing is checked as the compiler checks it: Triton's
        own ``is_convert_layout_trivial`` on the two types, in the shadow module (a port's
        ``gl.permute``/``gl.reshape``/``gl.join`` pinned to the layout Triton gave its result)."""
        if assert_trivial and not _regions(value.type.layout) and not _regions(layout):
            result_type = gl.distributed_type(value.type.element_ty, value.type.shape, layout)
            if not shadow(self.builder.target, self._num_warps).trivial(value.type, result_type):
                raise TypeError(f"layout conversion from {value.type.layout} to {layout} is not trivial")
            assert_trivial = False
        return super().convert_layout(value, layout, assert_trivial)


def _regions(layout) -> list:
    if isinstance(layout, RegionLayout):
        return [layout]
    parent = getattr(layout, "parent", None)
    return _regions(parent) if parent is not None else []


def _as_region(layout, regions: list):
    """C++ inference returns plain layouts; one that is a boundary's placeholder stays marked."""
    if isinstance(layout, gl.SliceLayout):
        return gl.SliceLayout(layout.dim, _as_region(layout.parent, regions))
    for region in regions:
        fields = ("size_per_thread", "threads_per_warp", "warps_per_cta", "order")
        if isinstance(layout, gl.BlockedLayout) and all(getattr(region, f) == getattr(layout, f) for f in fields):
            return region
    return layout


class _Shadow:
    """A module no one compiles, where upstream's builder infers result layouts."""

    def __init__(self, target, num_warps: int):
        self.lock = threading.Lock()
        self.context = ir.context()
        ir.load_dialects(self.context)
        make_backend(target).load_dialects(self.context)
        self.builder = gluon_ir.GluonOpBuilder(self.context)
        module = self.builder.create_module()
        module.set_attr("ttg.num-warps", self.builder.get_int32_attr(num_warps))
        module.set_attr("ttg.threads-per-warp", self.builder.get_int32_attr(target.warp_size))
        module.set_attr("ttg.num-ctas", self.builder.get_int32_attr(1))
        fn = self.builder.get_or_insert_function(module, "shadow", self.builder.get_function_ty([], []), "public",
                                                 False)
        module.push_back(fn)
        self.builder.set_insertion_point_to_start(fn.add_entry_block())
        self.module = module

    def check_shared_type(self, element_ty, shape, layout, alloc_shape) -> None:
        """Make a shared-memory descriptor type as the compiler does, so that its checks (an NVMMA
        swizzle wider than the block's contiguous dimension, ...) fail here too."""
        with self.lock:
            self.builder.get_shared_mem_desc_ty(element_ty.to_ir(self.builder), list(shape),
                                                layout_to_ir(layout, self.builder), list(alloc_shape))

    def trivial(self, source, result) -> bool:
        """Whether converting a tensor of type ``source`` to type ``result`` moves nothing."""
        with self.lock:
            value = self.builder.create_poison(source.to_ir(self.builder))
            return self.builder.is_convert_layout_trivial(result.to_ir(self.builder), value)

    def infer(self, op: str, types: list, *args):
        with self.lock:
            values = [self.builder.create_poison(ty.to_ir(self.builder)) for ty in types]
            result = getattr(self.builder, op)(*values, *args)
            result = result[0] if isinstance(result, (tuple, list)) else result
            return self.builder.get_gluon_layout_from_tensor(result)


@functools.lru_cache(maxsize=None)
def shadow(target, num_warps: int) -> _Shadow:
    return _Shadow(target, num_warps)
