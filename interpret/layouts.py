"""Layouts in the interpreter: checked against the target, never applied to values."""
from __future__ import annotations

import dataclasses

from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language._layouts import DistributedLayout

from interop.errors import LayoutError
from interop.validate import layout_problem

from . import program as prog
from .errors import user_site


def check(layout, warp_size: int, num_warps: int) -> None:
    problem = layout_problem(layout, warp_size, num_warps, prog.program().target)
    if problem:
        raise LayoutError(f"{user_site()}: {problem}")


def transposed(layout, order) -> object:
    """The shared layout of a transposed view (as ``memdesc_trans`` infers it)."""
    if isinstance(layout, gl.NVMMASharedLayout):
        return dataclasses.replace(layout, transposed=not layout.transposed)
    if isinstance(layout, gl.SwizzledSharedLayout):
        return dataclasses.replace(layout, order=[list(order).index(o) for o in layout.order])
    return layout


class RegionLayout(DistributedLayout):
    """The layout of a value that crossed a language boundary.

    Compiled, a Triton region's result has the layout Triton's passes chose, and a Gluon region's
    argument has the layout the Triton host gave it. The interpreter does not run those passes,
    so it marks such values: any use that depends on the exact layout fails with a message that
    says to convert explicitly (which the compiled kernel needs too, unless Triton happens to
    choose that very layout).
    """

    def __init__(self, origin: str, rank: int):
        self.origin, self._rank = origin, rank

    @property
    def rank(self) -> int:
        return self._rank

    def __eq__(self, other) -> bool:
        return isinstance(other, RegionLayout) and (other.origin, other.rank) == (self.origin, self.rank)

    def __hash__(self) -> int:
        return hash((self.origin, self.rank))

    def __repr__(self) -> str:
        return f"<the layout {self.origin}; gl.convert_layout it to the layout you need>"

    def _to_ir(self, builder):
        return self

    def mangle(self) -> str:
        return "RegionLayout"
