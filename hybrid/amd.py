"""AMD scheduling hints, as Triton's own AMD passes write them (``interop.lowering.amd_hints``).

    hybrid.amd.setprio(1)                                # s_setprio 1: this warp's issue priority
    hybrid.amd.sched_barrier()                           # LLVM schedules nothing across this point
    hybrid.amd.sched_barrier("non_mem_non_sideeffect")   # ... but ALU instructions

Builtins of Gluon and Triton code for gfx942/gfx950; a hint changes no value (the interpreter
runs it as nothing), and any other target refuses it at the call.
"""
from interop.lowering.amd_hints import SCHED_CLASSES, sched_barrier, setprio

__all__ = ["SCHED_CLASSES", "sched_barrier", "setprio"]
