"""AMD scheduling hints, as Triton's own AMD passes write them (``interop.lowering.amd_hints``),
accesses of a pointer tile issued as buffer ops where Triton's would be (``interop.lowering.buffer_access``),
and MFMAs at an input precision (``interop.lowering.amd_mfma``).

    hybrid.amd.setprio(1)                                # s_setprio 1: this warp's issue priority
    hybrid.amd.sched_barrier()                           # LLVM schedules nothing across this point
    hybrid.amd.sched_barrier("non_mem_non_sideeffect")   # ... but ALU instructions
    x = hybrid.amd.buffer_load(ptrs, mask=m, other=0.0)  # gl.load; a buffer load where Triton proves
    hybrid.amd.buffer_store(ptrs, x, mask=m)             # ptrs a base plus offsets in range (else global)
    acc = hybrid.amd.mfma(a, b, acc, input_precision="tf32")   # Gluon's mfma at tl.dot's input precision

Builtins for gfx942/gfx950 (the hints of Gluon and Triton code, the accesses and MFMAs of Gluon
code); a hint changes no value, an access is ``gl.load``/``gl.store`` and an MFMA a ``tl.dot`` in
the interpreter; any other target refuses them at the call.
"""
from interop.lowering.amd_hints import SCHED_CLASSES, sched_barrier, setprio
from interop.lowering.amd_mfma import mfma
from interop.lowering.buffer_access import buffer_load, buffer_store

__all__ = ["SCHED_CLASSES", "buffer_load", "buffer_store", "mfma", "sched_barrier", "setprio"]
