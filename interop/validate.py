"""Checks of a mixed kernel's layouts against the target, before any IR is built.

Gluon layouts are usually passed as constexprs; one written for 32-thread warps fails on a
wave64 GPU, and one written for 4 warps fails with ``num_warps=8``. Catching that here lets
the error name the argument and say what to do, instead of an MLIR diagnostic. The
interpreter (``hybrid/interpret/``) applies the same rule to every layout a kernel uses.
"""
from __future__ import annotations

import math

from triton.experimental.gluon import language as gl

from .errors import LayoutError
from .triton.language import DistributedLayout


def check_constexpr_layouts(fn, constants: dict, warp_size: int, num_warps: int, target: str) -> None:
    for path, value in constants.items():
        name = fn.arg_names[path[0]] if path and path[0] < len(fn.arg_names) else str(path)
        for layout in _values(value):
            problem = layout_problem(layout, warp_size, num_warps, target)
            if problem:
                raise LayoutError(f"{fn.__name__} ({definition(fn)}), constexpr argument '{name}': {problem}")


def rank_of(layout, shape) -> int:
    """A layout's rank as far as its ``order`` tells; a layout without one (slice, linear, MMA)
    counts as the tensor's rank here and is checked by Gluon when it is used."""
    return len(getattr(layout, "order", None) or shape)


def layout_problem(layout, warp_size: int, num_warps: int, target: str) -> str | None:
    """Why ``layout`` cannot run with ``warp_size``-thread warps and ``num_warps`` warps, or None.

    Only what the layout itself states is checked (thread and warp counts); layouts derived by
    the compiler or read from hardware (MMA, linear) carry their own checks upstream."""
    if isinstance(layout, (gl.SliceLayout, gl.DotOperandLayout)):
        return layout_problem(layout.parent, warp_size, num_warps, target)
    if not isinstance(layout, gl.BlockedLayout):
        return None
    for field in ("size_per_thread", "threads_per_warp", "warps_per_cta"):
        odd = [int(n) for n in getattr(layout, field) if int(n) < 1 or int(n) & (int(n) - 1)]
        if odd:
            return (f"layout's {field} {[int(n) for n in getattr(layout, field)]} has {odd[0]}, which is not a power "
                    f"of two; Triton's layouts tile tensors by powers of two.\n  hint: use a power of two "
                    f"(and a mask for a size that is not one).")
    threads = [int(t) for t in layout.threads_per_warp]
    if math.prod(threads) != warp_size:
        return (f"layout has {math.prod(threads)} threads per warp ({threads}) but {target} runs "
                f"{warp_size}-thread warps.\n  hint: choose the layout per target, e.g. "
                f"threads_per_warp whose product is {warp_size}.")
    warps = [int(w) for w in layout.warps_per_cta]
    if math.prod(warps) != num_warps:
        return (f"layout spreads over {math.prod(warps)} warps ({warps}) but the code runs on "
                f"num_warps={num_warps}.\n  hint: pass num_warps={math.prod(warps)} or "
                f"build the layout for {num_warps} warps.")
    return None


def _values(value):
    if isinstance(value, (tuple, list)):
        for item in value:
            yield from _values(item)
    elif isinstance(value, DistributedLayout):
        yield value


def definition(fn) -> str:
    """``file:line`` of a JIT function's ``def``: where its errors point."""
    code = fn.fn.__code__
    return f"{code.co_filename}:{code.co_firstlineno}"
