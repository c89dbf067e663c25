"""What Triton's lowering of one ``ttg.convert_layout`` through shared memory takes, asked of
Triton itself.

Triton does not always stage a whole tile: its lowering picks a swizzled scratch layout and,
where that needs fewer bytes than the tile, moves the tile in rounds (store, barrier, load,
barrier, ...). The size comes from the backend's own allocation pass, run on a module that
holds nothing but the conversion; rounds and barriers follow from it (``movement``). Which
stores and loads it issues comes from the backend's own lowering to LLVM of that module: its
scratch layout is not one of the swizzled layouts a handoff can name (it vectorizes over
whatever registers both layouts hold in common), so only the lowering itself says how wide each
access is.
"""
from __future__ import annotations

import re

from triton.experimental.gluon import language as gl

from .. import caches
from ..ir import diagnostics
from ..instrumentation import timing
from ..boundary import shape_and_dtype
from ..triton import compat
from ..triton.bindings import gluon_ir, ir

#: scratch bytes by (target, warps, warp size, PTX version, source type, result type): the same
#: layout pair meets again in later compiles (the printed types hold layouts and shapes whole)
_BYTES: dict[tuple, int] = {}
caches.register(_BYTES.clear)
#: the byte widths of the shared-memory accesses one thread issues, by the same key (None: the
#: conversion alone does not lower)
_ACCESSES: dict[tuple, tuple[int, ...] | None] = {}
caches.register(_ACCESSES.clear)


class ScratchProbe:
    """Scratch bytes per conversion for one target and warp configuration, cached by types."""

    def __init__(self, context, target, options):
        self.context, self.target, self.options = context, target, options

    def conversion_bytes(self, source_type, result_type) -> int:
        key = self._key(source_type, result_type)
        if key in _BYTES:
            timing.hit("scratch probes")
        else:
            _BYTES[key] = self._allocate(source_type, result_type)
        return _BYTES[key]

    def conversion_accesses(self, source, result, element) -> tuple[int, ...] | None:
        """The byte widths of the shared-memory stores and loads one thread issues in Triton's
        lowering of ``convert_layout(source) -> result`` (two IR tensor values of the gluon dtype
        ``element``), every round's; None where the conversion alone does not lower."""
        key = self._key(source.get_type(), result.get_type())
        if key in _ACCESSES:
            timing.hit("scratch probes")
        else:
            _ACCESSES[key] = self._lower(source, result, element)
        return _ACCESSES[key]

    def _key(self, source_type, result_type) -> tuple:
        return (self.target.backend, str(self.target.arch), self.options.num_warps, self.options.warp_size,
                getattr(self.options, "ptx_version", None), str(source_type), str(result_type))

    @timing.timed("scratch probes")
    def kernel_bytes(self, throwaway) -> int:
        """The shared memory Triton's allocation gives ``throwaway``, a copy of a module that the
        allocation marks up (buffers and scratch, reused where lifetimes allow): what a boundary
        plan costs the kernel's occupancy."""
        pm = ir.pass_manager(self.context)
        compat.add_shared_memory_allocation(pm, self.target, self.options)
        diagnostics.run(pm, throwaway, "hybrid_kernel_shared_memory")
        return throwaway.get_int_attr("ttg.shared") or 0

    @timing.timed("scratch probes")
    def _allocate(self, source_type, result_type) -> int:
        builder = gluon_ir.GluonOpBuilder(self.context)
        module, function = self._module(builder, [source_type], [result_type])
        builder.ret([builder.create_convert_layout(result_type, function.args(0))])
        pm = ir.pass_manager(self.context)
        compat.add_shared_memory_allocation(pm, self.target, self.options)
        diagnostics.run(pm, module, "hybrid_scratch_probe")
        return module.get_int_attr("ttg.shared") or 0

    @timing.timed("scratch probes")
    def _lower(self, source, result, element) -> tuple[int, ...] | None:
        """A kernel that loads the tile in the source's layout, converts it and stores it, lowered
        to LLVM by the backend's passes; the shared-memory accesses counted in what they left."""
        builder = gluon_ir.GluonOpBuilder(self.context)
        module, _ = self._module(builder, [], [])
        pointer = gl.pointer_type(element)
        null = builder.create_int_to_ptr(builder.get_int64(0), pointer.to_ir(builder))
        shape = list(shape_and_dtype(str(source.get_type()))[0])
        layouts = [builder.get_gluon_layout_from_tensor(v) for v in (source, result)]
        pointers = [builder.create_splat(gl.distributed_type(pointer, shape, layout).to_ir(builder), null)
                    for layout in layouts]
        tile = compat.create_plain_load(builder, pointers[0], None, None)
        converted = builder.create_convert_layout(result.get_type(), tile)
        compat.create_plain_store(builder, pointers[1], converted, None)
        builder.ret([])
        pm = ir.pass_manager(self.context)
        compat.add_conversion_lowering(pm, self.target, self.options)
        try:   # (stderr is the process's: a compile that succeeds does not redirect it, and MLIR says why)
            pm.run(module, "hybrid_conversion_probe")
        except RuntimeError:
            return None
        return _shared_accesses(module)

    def _module(self, builder, inputs: list, results: list):
        """An empty module for this target and warp configuration with one public function."""
        module = builder.create_module()
        for name, value in (("ttg.num-warps", self.options.num_warps), ("ttg.num-ctas", 1),
                            ("ttg.threads-per-warp", self.options.warp_size)):
            module.set_attr(name, builder.get_int32_attr(value))
        module.set_attr("ttg.target", builder.get_string_attr(f"{self.target.backend}:{self.target.arch}"))
        function = builder.get_or_insert_function(module, "conversion", builder.get_function_ty(inputs, results),
                                                  "public", False)
        module.push_back(function)
        builder.set_insertion_point_to_start(function.add_entry_block())
        return module, function


def _shared_accesses(module) -> tuple[int, ...] | None:
    """The byte widths of the shared-memory stores and loads (address space 3, inline PTX, and
    NVIDIA's ``stmatrix``/``ldmatrix``) in ``module``'s LLVM dialect, one thread's (Triton's
    lowering is straight-line code); None where one moves a type this does not size."""
    widths: list[int | None] = []

    def visit(op) -> None:
        name = op.get_name()
        if name == "llvm.store" and str(op.get_operand(1).get_type()) == _SHARED:
            widths.append(_bytes(str(op.get_operand(0).get_type())))
        elif name == "llvm.load" and str(op.get_operand(0).get_type()) == _SHARED:
            widths.append(_bytes(str(op.get_result(0).get_type())))
        elif name == "llvm.inline_asm":   # PTX written out (Triton 3.7 stores to shared memory so)
            widths.extend(int(vector or 1) * int(bits) // 8
                          for vector, bits in _ASM_ACCESS.findall(op.get_str_attr("asm_string") or ""))
        elif name == "nvvm.stmatrix":   # a 32-bit register per 8x8 matrix, after the address
            widths.append(4 * (op.get_num_operands() - 1))
        elif name == "nvvm.ldmatrix":   # one i32, or a struct of one per matrix
            widths.append(4 * max(1, str(op.get_result(0).get_type()).count("i32")))

    module.walk(visit)
    return None if None in widths else tuple(widths)


_SHARED = "!llvm.ptr<3>"
#: a shared-memory store or load in inline PTX: ``st.shared.v4.b32``, ``ld.shared::cta.b16``
_ASM_ACCESS = re.compile(r"\b(?:st|ld)\.shared(?:::cta)?(?:\.v(\d))?\.[a-z]+(\d+)")
_TYPE = re.compile(r"(?:vector<(\d+)x)?(?:i|f|bf)(\d+)>?")


def _bytes(printed: str) -> int | None:
    """Bytes of an LLVM integer or float type, or a vector of one, as printed (``i16``,
    ``vector<4xi32>``)."""
    match = _TYPE.fullmatch(printed)
    return int(match[1] or 1) * int(match[2]) // 8 if match else None
