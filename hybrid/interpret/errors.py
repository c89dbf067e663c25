"""What the interpreter tells a kernel author: an op it cannot model, or a hang it detected."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy
import triton

import interop

#: code that is never the kernel author's: the interpreter, the compiler's checks it shares, Triton,
#: numpy, the standard library
INTERNAL_PATHS = tuple(str(Path(p).resolve()) for p in (Path(__file__).parent, Path(interop.__file__).parent,
                                                    Path(triton.__file__).parent, Path(numpy.__file__).parent,
                                                    Path(sys.modules["os"].__file__).parent))


class InterpretError(RuntimeError):
    """A mixed kernel cannot run in the interpreter."""


class UnsupportedOpError(InterpretError):
    """An op the interpreter does not model: it says which and where instead of approximating."""

    def __init__(self, op: str, why: str = "", builtin: str | None = None, site: str | None = None):
        self.op, self.why, self.builtin, self.site = op, why, builtin, site or user_site()
        within = f" in {builtin}" if builtin and builtin != op else ""
        detail = f": {why}" if why else ""
        super().__init__(f"the interpreter cannot run {op}{within} (at {self.site}){detail}.\n"
                         f"  hint: check this kernel on a GPU, or move the op out of the interpreted path")

    def within(self, builtin: str) -> "UnsupportedOpError":
        """This error naming the Gluon builtin the kernel called too (the op may be one step of it)."""
        return self if self.builtin else UnsupportedOpError(self.op, self.why, builtin, self.site)


class DeadlockError(InterpretError):
    """Every live thread of a program waits on an mbarrier phase that nobody can complete."""


def user_site() -> str:
    """file:line of the innermost frame in kernel code (not Triton's, not the interpreter's)."""
    frame = sys._getframe(1)
    while frame is not None:
        path = str(Path(frame.f_code.co_filename).resolve()) if not frame.f_code.co_filename.startswith("<") else ""
        if path and not path.startswith(INTERNAL_PATHS):
            return f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"
        frame = frame.f_back
    return "?"
