"""Run mixed kernels on the CPU: Triton regions through Triton's interpreter, Gluon regions
through a Gluon interpreter built on the same numpy builder.

    with hybrid.interpreting(target="sm90a"):      # or HYBRID_INTERPRET=1
        kernel[grid](x, y, ...)

Layouts are checked against the target but never change values; shared memory is an array;
copies, TMA and MMAs complete at once and signal their mbarriers; ``warp_specialize`` runs
its partitions as threads, and a program whose threads all wait on mbarriers is reported as a
deadlock. Ops it cannot model raise ``UnsupportedOpError`` naming the op and the line.
"""
from .bounds import OutOfBoundsError
from .errors import DeadlockError, InterpretError, UnsupportedOpError
from .launch import default_target, enabled, interpreting, launch
from scheduler.grid import GridError

__all__ = ["DeadlockError", "GridError", "InterpretError", "OutOfBoundsError", "UnsupportedOpError", "default_target",
           "enabled", "interpreting", "launch"]
