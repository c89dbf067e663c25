"""The semantics the interpreter's builtins run with: upstream's, with whole-tile data.

``TritonSemantic`` needs nothing more than Triton's own interpreter gives it. ``GluonSemantic``
asks its builder for the layout of some results (``expand_dims``, ``permute``, ``reshape``,
``join``, ``split``); those are inferred by upstream's C++ rules on a throwaway module
(``_Shadow``), so the interpreter's layouts are the compiler's.
"""
from __future__ import annotations

import functools
import threading

from triton._C.libtriton import gluon_ir, ir
from triton.compiler.compiler import make_backend
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language._semantic import GluonSemantic
from triton.language.semantic import TritonSemantic

from .layouts import RegionLayout



class GluonInterpreterSemantic(GluonSemantic):

    def __init__(self, builder, num_warps: int):
        super().__init__(builder)
        self._num_warps = num_warps

    def num_warps(self, generator=None):
        return gl.constexpr(self._num_warps)

    def _inferred(self, value, op: str, inputs: list, *args):
        layout = _shadow(self.builder.target, self._num_warps).infer(op, [t.type for t in inputs], *args)
        regions = [r for t in inputs for r in _regions(t.type.layout)]
        return self.tensor(value.handle, gl.distributed_type(value.type.scalar, value.shape, _as_region(layout, regions)))

    def expand_dims(self, input, axis):
        value = TritonSemantic.expand_dims(self, input, axis)
        return self._inferred(value, "create_expand_dims", [input], axis if axis >= 0 else axis + len(input.shape))

    def permute(self, input, dims):
        return self._inferred(TritonSemantic.permute(self, input, dims), "create_trans", [input], list(dims))

    def reshape(self, input, dst_shape, can_reorder):
        if can_reorder:
            raise ValueError("can_reorder is not supported in gluon")
        value = TritonSemantic.reshape(self, input, dst_shape, can_reorder)
        return self._inferred(value, "create_reshape", [input], list(value.shape), False)

    def join(self, a, b):
        return self._inferred(TritonSemantic.join(self, a, b), "create_join", [a, b])

    def split(self, a):
        lhs, rhs = TritonSemantic.split(self, a)
        return self._inferred(lhs, "create_split", [a]), self._inferred(rhs, "create_split", [a])


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

    def infer(self, op: str, types: list, *args):
        with self.lock:
            values = [self.builder.create_poison(ty.to_ir(self.builder)) for ty in types]
            result = getattr(self.builder, op)(*values, *args)
            result = result[0] if isinstance(result, (tuple, list)) else result
            return self.builder.get_gluon_layout_from_tensor(result)


@functools.lru_cache(maxsize=None)
def _shadow(target, num_warps: int) -> _Shadow:
    return _Shadow(target, num_warps)
