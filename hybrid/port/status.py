"""``hybrid port status module.py:kernel --target T``: where a port stands, function by function.

Every JIT function the kernel reaches (itself included) is listed as still Triton or already
Gluon, with the machine instructions of the built kernel that come from its source lines (the
``.loc`` before each instruction, ``hybrid.attribution.instructions``) and their share. The
kernel is built as the module's ``run()`` launches it on ``problem(*CHECK_SIZE)``. When no
Triton function is left, the kernel is a plain ``@gluon.jit`` kernel.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path

from triton.runtime import JITFunction

from interop.triton.frontend import GluonJITFunction

from ..attribution import NONE, by_owner, kernel_instructions, line_instructions
from .compare import as_hybrid
from .errors import PortError, shown
from .launch import Given, build_arguments_for
from .names import jit_callees, jit_function, qualified
from .render import inputs_variant


@dataclass(frozen=True)
class FunctionStatus:
    function: str          # module.name
    language: str          # "triton" (still to port) or "gluon"
    where: str             # file:first-last
    instructions: int      # of the built kernel, from this function's lines


@dataclass(frozen=True)
class Status:
    kernel: str
    target: str
    functions: list[FunctionStatus]
    instructions: int      # the kernel's total
    unattributed: int      # instructions with no line of these functions (constants, conversions a pass made)

    @property
    def done(self) -> bool:
        return all(f.language == "gluon" for f in self.functions)


def reachable(kernel: JITFunction) -> list[JITFunction]:
    """``kernel`` and every user JIT function it calls, directly or not, callers first."""
    order, todo, seen = [], [kernel], set()
    while todo:
        fn = todo.pop(0)
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        order.append(fn)
        todo.extend(jit_callees(fn).values())
    return order


def _lines(fn: JITFunction) -> tuple[str, int, int]:
    lines, first = inspect.getsourcelines(fn.fn)
    return str(Path(inspect.getsourcefile(fn.fn)).resolve()), first, first + len(lines) - 1


def status(module, kernel_name: str, target: str, given: Given | None = None) -> Status:
    """``kernel_name``'s functions, built with ``given`` arguments (over the module's defaults)
    or, with none given, as the module's ``run()`` launches it on ``problem()``."""
    given = given or Given()
    kernel = jit_function(getattr(module, kernel_name, None))
    if not isinstance(kernel, JITFunction):
        raise PortError(f"{module.__name__} has no JIT kernel named {kernel_name!r}")
    signature, constexprs, options = build_arguments_for(module, kernel, target, given,
                                                         inputs_variant(module, kernel_name))
    import hybrid
    built = hybrid.compile(as_hybrid(kernel), signature, constexprs, target, **options)
    functions = reachable(kernel)
    ranges = {qualified(fn): _lines(fn) for fn in functions}

    def owner(where: str | None) -> str:
        if where is None:
            return NONE
        path, _, line = where.rpartition(":")
        resolved = str(Path(path).resolve())
        inside = [(last - first, name) for name, (file, first, last) in ranges.items()
                  if file == resolved and first <= int(line) <= last]
        return min(inside)[1] if inside else NONE   # the innermost (a nested function's own lines)

    counts = by_owner(line_instructions(built.assembly, built.name), owner)
    rows = [FunctionStatus(qualified(fn), "gluon" if isinstance(fn, GluonJITFunction) else "triton",
                           f"{shown(ranges[qualified(fn)][0])}:{ranges[qualified(fn)][1]}-{ranges[qualified(fn)][2]}",
                           counts[qualified(fn)]) for fn in functions]
    return Status(qualified(kernel), target, rows, kernel_instructions(built.assembly, built.name), counts[NONE])
