"""The interpreter's builder: Triton's numpy ``InterpreterBuilder`` plus Gluon's ops.

Gluon's own front end (``gl.*`` builtins and ``GluonSemantic``) runs unchanged on top of it, so
every argument check upstream does at compile time also happens here. Types are Python objects
(a layout's "IR" is the layout itself), so layouts can be checked against the target whenever a
type is made. Values are whole tiles; layouts never change a value (``convert_layout`` is the
identity). Shared and tensor memory are numpy arrays (``memory.py``); copies complete at once
and signal their mbarrier (``barriers.py``).
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from triton.experimental.gluon import language as gl

from interop.targets import arch
from interop.triton import interpreter as upstream
from interop.triton.bindings import ir
from interop.triton.interpreter import TensorHandle

from . import barriers, bounds, layouts, libdevice, memory, numerics
from . import program as prog
from . import tma
from .errors import UnsupportedOpError, user_site


def _scalar(handle) -> int | float | bool:
    return np.asarray(handle.data).reshape(-1)[0].item()


def _pred(handle) -> bool:
    return handle is None or not isinstance(handle, TensorHandle) or bool(_scalar(handle))


def as_float32(data: np.ndarray, dtype) -> np.ndarray:
    if dtype in (gl.bfloat16, ) or dtype.primitive_bitwidth == 8 and dtype.is_floating():
        return upstream.convert_float(data, dtype, gl.float32, None).view(np.float32)
    return data.astype(np.float32)


#: the arith op each numpy function of the builder's float arithmetic stands for
FP8_OPS = {np.add: "arith.addf", np.subtract: "arith.subf", np.multiply: "arith.mulf", np.divide: "arith.divf",
           np.fmod: "arith.remf", np.negative: "arith.negf", np.maximum: "arith.maximumf", np.minimum: "arith.minimumf",
           np.fmax: "arith.maxnumf", np.fmin: "arith.minnumf", "fma": "math.fma"}


class HybridInterpreterBuilder(upstream.InterpreterBuilder):

    def __init__(self, target, num_warps: int, num_ctas: int = 1):
        super().__init__()
        self.target = target
        opts = {k: getattr(self.options, k) for k in dir(self.options) if not k.startswith("_")}
        # the fp8 types the target has (interop.targets.arch): Triton's own check refuses the others, as it
        # does in the compiler from the backend's options
        opts["supported_fp8_dtypes"] = arch.supported_fp8_dtypes(target)
        self.options = SimpleNamespace(**opts, num_warps=num_warps, num_ctas=num_ctas, enable_iisan=False,
                                       enable_fp_fusion=False, warp_size=target.warp_size)

    def create_umulhi(self, lhs, rhs):
        """The high half of the operands' product as unsigned integers of their width, as
        ``tt.mulhiui`` computes: signed operands take part by their bits (Triton 3.6's interpreter
        widened them by value, so Philox's rounds on ``int32`` tiles drew other numbers)."""
        dtype = lhs.data.dtype
        unsigned = np.dtype(f"uint{dtype.itemsize * 8}")
        a, b = lhs.data.view(unsigned), rhs.data.view(unsigned)
        if dtype.itemsize == 8:
            high = upstream.np_umulhi_u64(a, b)
        else:
            wide = np.dtype(f"uint{dtype.itemsize * 16}")
            high = (a.astype(wide) * b.astype(wide)) >> (dtype.itemsize * 8)
        return TensorHandle(np.asarray(high).astype(unsigned).view(dtype), lhs.dtype.scalar)

    def create_extern_elementwise(self, lib_name, lib_path, symbol, args, ret_type, is_pure):
        return libdevice.compute(self, symbol, args)

    # -- bf16 and fp8: computed in fp32 and rounded to nearest even, as the GPU (numerics.py) ---
    def check_fp8_arithmetic(self, dtype, op) -> None:
        """fp8 op fp8 is an op no target lowers (``interop.targets.arch``): refused as the compiler refuses it."""
        name = FP8_OPS.get(op)
        if name and dtype.is_floating() and dtype.primitive_bitwidth == 8:
            feature = arch.feature_of_op(name)
            if feature is not None and not feature.available(self.target):
                raise arch.missing_op_error(name, feature, self.target, user_site())

    def binary_op(self, lhs, rhs, op):
        dtype = lhs.dtype.scalar
        if numerics.stored_as_bits(dtype):
            self.check_fp8_arithmetic(dtype, op)
            out = op(numerics.decode(lhs.data, dtype), numerics.decode(rhs.data, rhs.dtype.scalar))
            result = TensorHandle(out if out.dtype == np.bool_ else numerics.encode(out, dtype), dtype)
        else:
            result = super().binary_op(lhs, rhs, op)
        # a comparison is an i1, as compiled: upstream's handle keeps its operands' type, which a splat of it
        # (``gl.full(shape, k > 0, gl.int1)``, a port's mask) then gives its tile: an int32 mask no load takes
        return TensorHandle(result.data, gl.int1) if result.data.dtype == np.bool_ else result

    def unary_op(self, arg, op):
        dtype = arg.dtype.scalar
        if not numerics.stored_as_bits(dtype):
            return super().unary_op(arg, op)
        self.check_fp8_arithmetic(dtype, op)
        return TensorHandle(numerics.encode(op(numerics.decode(arg.data, dtype)), dtype), dtype)

    def ternary_op(self, lhs, rhs, other, op):
        dtype = other.dtype.scalar
        if op is np.where or not numerics.stored_as_bits(dtype):   # a select moves bits as they are
            return super().ternary_op(lhs, rhs, other, op)
        self.check_fp8_arithmetic(dtype, np.maximum)   # a clamp
        out = op(*(numerics.decode(h.data, h.dtype.scalar) for h in (lhs, rhs, other)))
        return TensorHandle(numerics.encode(out, dtype), dtype)

    def get_bf16(self, value):   # a Python float as a bf16 constant, rounded to nearest even
        return self.cast_impl(self.get_fp32(value), gl.bfloat16)

    def create_fma(self, x, y, z):
        dtype = z.dtype.scalar
        if not numerics.stored_as_bits(dtype):
            return super().create_fma(x, y, z)
        self.check_fp8_arithmetic(dtype, "fma")
        x, y, z = (numerics.decode(h.data, dtype).astype(np.float64) for h in (x, y, z))
        return TensorHandle(numerics.encode(x * y + z, dtype), dtype)   # exact in fp64, rounded once

    def cast_impl(self, src, dst_type):
        source, dest = src.dtype.scalar, dst_type.scalar
        if not (numerics.stored_as_bits(source) or numerics.stored_as_bits(dest)):
            return super().cast_impl(src, dst_type)
        values = numerics.decode(src.data, source) if numerics.stored_as_bits(source) else src.data
        if numerics.stored_as_bits(dest):
            return TensorHandle(numerics.encode(values, dest), dest)
        return TensorHandle(values.astype(upstream.np_dtype(dest)), dest)

    def create_fp_to_fp(self, src, dst_type, rounding_mode):
        if rounding_mode == ir.ROUNDING_MODE.RTZ:   # toward zero: upstream's truncation is that rounding
            return super().create_fp_to_fp(src, dst_type, rounding_mode)
        return self.cast_impl(src, dst_type)

    # -- types: Python objects, checked against the target as they are made --------------------
    def _fp8_type(self, dtype):
        """An fp8 type the target has; another fails as ``tl.dtype.to_ir`` fails it in the compiler
        (upstream's interpreter skips that check)."""
        if dtype.name not in self.options.supported_fp8_dtypes:
            raise ValueError(f"type {dtype} not supported in this architecture. "
                             f"The supported fp8 dtypes are {self.options.supported_fp8_dtypes}")
        return dtype

    def get_fp8e4nv_ty(self):
        return self._fp8_type(gl.float8e4nv)

    def get_fp8e4b8_ty(self):
        return self._fp8_type(gl.float8e4b8)

    def get_fp8e4b15_ty(self):
        return self._fp8_type(gl.float8e4b15)

    def get_fp8e5_ty(self):
        return self._fp8_type(gl.float8e5)

    def get_fp8e5b16_ty(self):
        return self._fp8_type(gl.float8e5b16)

    def get_distributed_ty(self, element_ty, shape, layout):
        layouts.check(layout, self.target.warp_size, prog.current_frame().num_warps)
        return gl.distributed_type(element_ty, list(shape), layout)

    def get_shared_mem_desc_ty(self, element_ty, shape, layout, alloc_shape):
        from .semantic import shadow
        shadow(self.target, prog.current_frame().num_warps).check_shared_type(element_ty, shape, layout, alloc_shape)
        return gl.shared_memory_descriptor_type(element_ty, list(shape), layout, list(alloc_shape))

    def get_tensor_mem_desc_ty(self, element_ty, shape, layout, alloc_shape):
        from triton.experimental.gluon.language.nvidia.blackwell import tensor_memory_descriptor_type
        return tensor_memory_descriptor_type(element_ty, list(shape), layout, list(alloc_shape))

    def get_gluon_layout_from_memdesc(self, handle):
        return handle.layout

    def is_convert_layout_trivial(self, ty, value) -> bool:   # (the semantic asks the shadow module first)
        raise UnsupportedOpError("convert_layout(..., assert_trivial=True)",
                                 "a Triton region's layout is the compiled code's; the interpreter keeps whole "
                                 "tiles")

    def create_broadcast(self, arg, shape):   # Gluon passes the result type, Triton the shape
        return bounds.derived(super().create_broadcast(arg, getattr(shape, "shape", shape)), arg)

    def create_convert_layout(self, ty, value):
        return TensorHandle(value.data, value.dtype.scalar)

    def create_set_auto_layout(self, layout, value):
        return TensorHandle(value.data, value.dtype.scalar)

    # -- global memory: every access checked against the launch's tensors (bounds.py) ------------
    # (cache and eviction arguments differ between Triton versions: passed on as given)
    def create_masked_load(self, ptrs, mask, *rest, **options):
        bounds.check(ptrs, mask, "load")
        return super().create_masked_load(ptrs, mask, *rest, **options)

    def create_masked_store(self, ptrs, value, mask, *rest, **options):
        bounds.check(ptrs, mask, "store")
        return super().create_masked_store(ptrs, value, mask, *rest, **options)

    def create_atomic_rmw(self, rmwOp, ptr, val, mask, *rest, **options):
        bounds.check(ptr, mask, "atomic")
        return super().create_atomic_rmw(rmwOp, ptr, val, mask, *rest, **options)

    def create_atomic_cas(self, ptr, *rest, **options):
        bounds.check(ptr, None, "atomic_cas")
        return super().create_atomic_cas(ptr, *rest, **options)

    # pointer arithmetic keeps the argument a pointer came from, for an out-of-bounds report
    def create_addptr(self, ptr, offset):
        return bounds.derived(super().create_addptr(ptr, offset), ptr)

    def create_splat(self, ret_ty, arg):
        return bounds.derived(super().create_splat(ret_ty, arg), arg)

    def create_expand_dims(self, arg, axis):
        return bounds.derived(super().create_expand_dims(arg, axis), arg)

    # -- shared memory -------------------------------------------------------------------------
    def create_local_alloc(self, ty, value=None):
        handle = memory.allocate(ty.alloc_shape, upstream.np_dtype(ty.element_ty), ty.element_ty, ty.layout)
        site, _, function = user_site().partition(" in ")
        prog.program().shared.add(handle.root, site, function, prog.current_frame().language)
        if value is not None:
            handle.data[...] = value.data
        return handle

    def create_local_load(self, ty, src):
        return TensorHandle(src.data.copy(), src.dtype)

    def create_local_store(self, dst, value):
        dst.data[...] = value.data

    def create_local_dealloc(self, handle):
        pass

    def create_memdesc_index(self, ty, src, index):
        return src.view(src.data[int(_scalar(index))], layout=ty.layout)

    def create_memdesc_subslice(self, ty, src, offsets):
        lead = src.data.ndim - len(offsets)
        window = (slice(None), ) * lead + tuple(slice(o, o + n) for o, n in zip(offsets, ty.shape[-len(offsets):]))
        return src.view(src.data[window], layout=ty.layout)

    def create_memdesc_trans(self, src, order):
        return src.view(np.transpose(src.data, order), layout=layouts.transposed(src.layout, order))

    def create_memdesc_reshape(self, src, shape):
        data = src.data.reshape(shape)
        if not np.shares_memory(data, src.root):
            raise UnsupportedOpError("memdesc reshape of a non-contiguous view")
        return src.view(data)

    def create_memdesc_reinterpret(self, ty, src):
        if not src.data.flags.c_contiguous:
            raise UnsupportedOpError("memdesc reinterpret of a non-contiguous view")
        data = src.data.view(upstream.np_dtype(ty.element_ty)).reshape(ty.shape)
        return src.view(data, layout=ty.layout, dtype=ty.element_ty)

    # -- mbarriers -----------------------------------------------------------------------------
    def create_mbarrier_init(self, bar, count):
        barriers.init(bar.key(), int(count))

    def create_mbarrier_inval(self, bar):
        barriers.invalidate(bar.key())

    def create_mbarrier_expect(self, bar, nbytes, pred=None, *rest):
        if _pred(pred):   # arrive.expect_tx: one arrival, and nbytes more to be delivered
            barriers.arrive(bar.key(), 1, tx_bytes=int(nbytes))

    def create_mbarrier_arrive(self, bar, count=1, pred=None, *rest):
        if _pred(pred):
            barriers.arrive(bar.key(), int(count))

    def create_mbarrier_wait(self, bar, phase, pred=None, deps=()):
        if _pred(pred):
            barriers.wait(bar.key(), int(_scalar(phase)) & 1)

    # -- async copies (cp.async): complete at once -------------------------------------------
    def create_async_copy_global_to_local(self, smem, ptr, mask, other, *rest):
        mask = mask.data if isinstance(mask, TensorHandle) else np.ones_like(ptr.data, dtype=bool)
        np_dtype = upstream.np_dtype(ptr.get_element_ty())
        other = other.data if isinstance(other, TensorHandle) else np.zeros(ptr.data.shape, dtype=np_dtype)
        bounds.check(ptr, mask, "async copy")
        smem.data[...] = upstream.load(ptr.data, mask, other, np_dtype)

    def create_async_copy_local_to_global(self, smem, ptr, mask, *rest):
        mask = mask if isinstance(mask, TensorHandle) else TensorHandle(np.ones_like(ptr.data, dtype=bool), gl.int1)
        self.create_masked_store(ptr, TensorHandle(smem.data.copy(), smem.dtype), mask, None)

    def create_async_commit_group(self):
        pass

    def create_async_wait_group(self, num_outstanding):
        pass

    def create_async_copy_mbarrier_arrive(self, bar, increment_count):
        # Every earlier copy is complete. With increment_count the pending count is raised by one
        # before the arrival, so the barrier is unchanged; without (noinc) it is one arrival.
        if not increment_count:
            barriers.arrive(bar.key(), 1)

    def create_fence_async_shared(self, cluster=False):
        pass   # copies complete at once: nothing to order

    # -- AMD buffer ops: a scalar base pointer and element offsets, as tl.load/tl.store's pointers --
    def _buffer_pointers(self, ptr, offsets):
        base = TensorHandle(np.full(offsets.data.shape, _scalar(ptr), dtype=np.uint64), ptr.dtype.scalar)
        return self.create_addptr(bounds.derived(base, ptr), offsets)

    def _buffer_mask(self, mask, offsets) -> np.ndarray:
        return mask.data if isinstance(mask, TensorHandle) else np.ones(offsets.data.shape, dtype=bool)

    def create_buffer_load(self, ty, ptr, offsets, mask, other, cache, *rest):
        np_dtype = upstream.np_dtype(ptr.get_element_ty())
        other = other.data if isinstance(other, TensorHandle) else np.zeros(offsets.data.shape, dtype=np_dtype)
        ptrs, mask = self._buffer_pointers(ptr, offsets), self._buffer_mask(mask, offsets)
        bounds.check(ptrs, mask, "buffer load")
        return TensorHandle(upstream.load(ptrs.data, mask, other, np_dtype), ptr.get_element_ty())

    def create_buffer_store(self, value, ptr, offsets, mask, cache, *rest):
        ptrs, mask = self._buffer_pointers(ptr, offsets), self._buffer_mask(mask, offsets)
        bounds.check(ptrs, mask, "buffer store")
        upstream.store(ptrs.data, value.data, mask)

    # -- TMA -----------------------------------------------------------------------------------
    def create_async_tma_copy_global_to_local(self, desc, coord, bar, result, pred=None, *rest):
        desc.check_copy(result)
        if not _pred(pred):
            return
        result.data[...] = desc.read([int(_scalar(c)) for c in coord], result.data.shape)
        barriers.complete_tx(bar.key(), result.nbytes)

    def create_make_tensor_descriptor(self, *args):
        """A descriptor made on the device: Triton's (``tl.make_tensor_descriptor``, upstream's
        interpreter models it) or Gluon's (``tma.make_tensor_descriptor``, below)."""
        if prog.current_frame().language == "triton":
            return super().create_make_tensor_descriptor(*args)
        return self._gluon_tensor_descriptor(*args)

    def _gluon_tensor_descriptor(self, ty, base, shape, strides, padding, *rest):
        """The same tiled view as a host descriptor."""
        pad = "nan" if padding == ir.PADDING_OPTION.PAD_NAN else "zero"
        return tma.TMADescriptor(int(_scalar(base)), [int(_scalar(s)) for s in shape],
                                 [int(_scalar(s)) for s in strides], base.dtype.element_ty, pad)

    def create_async_tma_copy_local_to_global(self, desc, coord, src, *rest):
        desc.check_copy(src)
        desc.write([int(_scalar(c)) for c in coord], src.data)

    def create_async_tma_store_wait(self, pendings, *rest):
        pass

    # -- MMA -----------------------------------------------------------------------------------
    def create_dot(self, a, b, d, *rest):
        # Upstream multiplies bf16 as the uint16 bits it stores them in; widen floats first.
        if not a.dtype.scalar.is_floating():
            return super().create_dot(a, b, d, *rest)
        out = _matmul(a, b) + d.data.astype(np.float32)
        return TensorHandle(out.astype(d.data.dtype), d.dtype.scalar)

    def create_warpgroup_mma(self, a, b, acc, use_acc, precision, max_num_imprecise_acc, is_async, *rest):
        out = _matmul(a, b)
        if _pred(use_acc):
            out = out + acc.data.astype(np.float32)
        return TensorHandle(out.astype(acc.data.dtype), acc.dtype.scalar)

    def create_warpgroup_mma_wait(self, deps, num_outstanding):
        return list(deps)

    def create_tmem_alloc(self, ty, value=None):
        handle = memory.allocate(ty.alloc_shape, upstream.np_dtype(ty.element_ty), ty.element_ty, ty.layout,
                                 space="tensor")
        if value is not None:
            handle.data[...] = value.data
        return handle

    def create_tmem_load(self, ty, src, *reduction):
        if reduction:
            raise UnsupportedOpError("tensor-memory load with a fused reduction")
        return TensorHandle(src.data.copy(), src.dtype)

    def create_tmem_store(self, dst, value, pred=None):
        if _pred(pred):
            dst.data[...] = value.data

    def create_tmem_subslice(self, ty, src, start, dim=1):
        window = [slice(None)] * src.data.ndim
        window[-1] = slice(start, start + ty.shape[-1])
        return src.view(src.data[tuple(window)], layout=ty.layout)

    def create_tcgen05_mma(self, a, b, acc, use_acc, pred, mbarriers=(), mbarrier_preds=(), *rest):
        if _pred(pred):
            out = _matmul(a, b)
            if _pred(use_acc):
                out = out + acc.data.astype(np.float32)
            acc.data[...] = out.astype(acc.data.dtype)
        for bar, bar_pred in zip(mbarriers, list(mbarrier_preds) + [None] * len(mbarriers)):
            if _pred(bar_pred):
                barriers.arrive(bar.key(), 1)

    def create_tcgen05_commit(self, bar, pred=None, *rest):
        if _pred(pred):   # every earlier MMA is complete: the commit is one arrival
            barriers.arrive(bar.key(), 1)

    def __getattr__(self, name: str):
        # An op of Gluon's that this builder has no rule for: say which, never approximate.
        if name.startswith(("create_", "get_")):
            def unsupported(*args, **kwargs):
                raise UnsupportedOpError(name.removeprefix("create_").removeprefix("get_"))
            return unsupported
        raise AttributeError(name)


def _matmul(a, b) -> np.ndarray:
    return np.matmul(as_float32(a.data, a.dtype.scalar if hasattr(a.dtype, "scalar") else a.dtype),
                     as_float32(b.data, b.dtype.scalar if hasattr(b.dtype, "scalar") else b.dtype))
