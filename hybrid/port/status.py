"""``hybrid port status module.py:kernel --target T``: where a port stands, function by function.

Every JIT function the kernel reaches (itself included) is listed as still Triton or already
Gluon, with the machine instructions of the built kernel that come from its source lines
(``hybrid.attribution.machine_line_instructions``: they add up to the kernel's instructions as
``hybrid port start`` and ``hybrid report`` count them) and their share. A function whose calls
now call a ``@gluon.jit`` port is that port, Gluon; the port's own helpers count with it. The
kernel is built as the module's ``run()`` launches it on ``problem(*CHECK_SIZE)`` (or with the
arguments given), said in ``built_as``. When only the kernel's own body is Triton, the next step
ports the kernel whole (``hybrid port start MODULE:KERNEL``); when nothing is, the kernel is a
plain ``@gluon.jit`` kernel.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path

from triton.runtime import JITFunction

from interop.triton.frontend import GluonJITFunction

from ..attribution import NONE, by_owner, machine_line_instructions
from .compare import as_hybrid
from .errors import PortError, shown
from .launch import Given, build_for
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
    built_as: str = ""     # the build counted (``launch.Build.said``)

    @property
    def done(self) -> bool:
        return all(f.language == "gluon" for f in self.functions)

    @property
    def to_port(self) -> list[str]:
        """The functions the kernel calls that are still Triton (the kernel itself left out)."""
        return [f.function for f in self.functions[1:] if f.language == "triton"]

    @property
    def body_left(self) -> bool:
        """Only the kernel's own body is Triton: the next step ports the kernel whole."""
        return self.functions[0].language == "triton" and not self.to_port


def reachable(kernel: JITFunction) -> tuple[list[JITFunction], dict[str, tuple[str, JITFunction]]]:
    """``kernel`` and every user JIT function it calls, directly or not, callers first; and the
    Gluon functions a Gluon function calls from its own module (a port's combine functions), left
    out of the list: by qualified name, the function each is part of and itself."""
    order, todo, seen, part_of = [], [(kernel, None)], set(), {}
    while todo:
        fn, owner = todo.pop(0)
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        if owner is None:
            order.append(fn)
        else:
            part_of[qualified(fn)] = (owner, fn)
        for callee in jit_callees(fn).values():
            helper = isinstance(fn, GluonJITFunction) and isinstance(callee, GluonJITFunction) and \
                callee.fn.__module__ == fn.fn.__module__
            todo.append((callee, (owner or qualified(fn)) if helper else None))
    return order, part_of


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
    build = build_for(module, kernel, target, given, inputs_variant(module, kernel_name))
    import hybrid
    built = hybrid.compile(as_hybrid(kernel), build.signature, build.constexprs, target, **build.options)
    functions, part_of = reachable(kernel)
    ranges = {qualified(fn): _lines(fn) for fn in functions}
    spans = {**ranges, **{name: _lines(fn) for name, (_, fn) in part_of.items()}}   # a port's helpers count for it

    def owner(where: str | None) -> str:
        if where is None:
            return NONE
        path, _, line = where.rpartition(":")
        resolved = str(Path(path).resolve())
        inside = [(last - first, part_of.get(name, (name, ))[0]) for name, (file, first, last) in spans.items()
                  if file == resolved and first <= int(line) <= last]
        return min(inside)[1] if inside else NONE   # the innermost (a nested function's own lines)

    per_line = machine_line_instructions(built)
    counts = by_owner(per_line, owner)
    rows = [FunctionStatus(qualified(fn), "gluon" if isinstance(fn, GluonJITFunction) else "triton",
                           f"{shown(ranges[qualified(fn)][0])}:{ranges[qualified(fn)][1]}-{ranges[qualified(fn)][2]}",
                           counts[qualified(fn)]) for fn in functions]
    return Status(qualified(kernel), target, rows, sum(per_line.values()), counts[NONE], build.said(target))

