"""How much shared-memory scratch Triton gives one ``ttg.convert_layout``, asked of Triton itself.

Triton does not always stage a whole tile: its lowering picks a swizzled scratch layout and,
where that needs fewer bytes than the tile, moves the tile in rounds (store, barrier, load,
barrier, ...). The size comes from the backend's own allocation pass, run on a module that
holds nothing but the conversion; rounds and barriers follow from it (``movement``).
"""
from __future__ import annotations

from .. import caches, diagnostics
from ..instrumentation import timing
from ..triton import compat
from ..triton.bindings import gluon_ir, ir

#: scratch bytes by (target, warps, warp size, PTX version, source type, result type): the same
#: layout pair meets again in later compiles (the printed types hold layouts and shapes whole)
_BYTES: dict[tuple, int] = {}
caches.register(_BYTES.clear)


class ScratchProbe:
    """Scratch bytes per conversion for one target and warp configuration, cached by types."""

    def __init__(self, context, target, options):
        self.context, self.target, self.options = context, target, options

    def conversion_bytes(self, source_type, result_type) -> int:
        key = (self.target.backend, str(self.target.arch), self.options.num_warps, self.options.warp_size,
               getattr(self.options, "ptx_version", None), str(source_type), str(result_type))
        if key in _BYTES:
            timing.hit("scratch probes")
        else:
            _BYTES[key] = self._allocate(source_type, result_type)
        return _BYTES[key]

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
        module = builder.create_module()
        for name, value in (("ttg.num-warps", self.options.num_warps), ("ttg.num-ctas", 1),
                            ("ttg.threads-per-warp", self.options.warp_size)):
            module.set_attr(name, builder.get_int32_attr(value))
        module.set_attr("ttg.target", builder.get_string_attr(f"{self.target.backend}:{self.target.arch}"))
        function = builder.get_or_insert_function(module, "conversion",
                                                  builder.get_function_ty([source_type], [result_type]), "public",
                                                  False)
        module.push_back(function)
        builder.set_insertion_point_to_start(function.add_entry_block())
        builder.ret([builder.create_convert_layout(result_type, function.args(0))])
        pm = ir.pass_manager(self.context)
        compat.add_shared_memory_allocation(pm, self.target, self.options)
        diagnostics.run(pm, module, "hybrid_scratch_probe")
        return module.get_int_attr("ttg.shared") or 0
