"""Layouts in the interpreter: checked against the target, never applied to values."""
from __future__ import annotations

import dataclasses

from triton.experimental.gluon import language as gl

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


@dataclasses.dataclass(frozen=True)
class RegionLayout(gl.BlockedLayout):
    """The layout of a value that crossed a language boundary.

    Compiled, a Triton region's result has the layout Triton's passes chose, and a Gluon region's
    argument has the layout the Triton host gave it. The interpreter does not run those passes:
    it gives such values a plain blocked layout for the target (so layouts derived from it, such
    as ``SliceLayout(1, x.type.layout)``, work), but one that equals no layout an author writes:
    code that combines it with another layout without ``gl.convert_layout`` fails with this name,
    as the compiled kernel may (unless Triton happens to choose that very layout).
    """
    origin: str = ""

    @staticmethod
    def for_value(origin: str, rank: int, warp_size: int, num_warps: int) -> "RegionLayout":
        lead = [1] * (rank - 1)
        return RegionLayout([1] * rank, lead + [warp_size], lead + [num_warps], list(reversed(range(rank))),
                            origin=origin)

    def __hash__(self) -> int:
        return hash((self.origin, super().__hash__()))

    def __repr__(self) -> str:
        return f"RegionLayout(the layout {self.origin}; gl.convert_layout it to the layout you need)"
