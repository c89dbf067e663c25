"""Checks of a mixed kernel's inputs against the target, before any IR is built.

Gluon layouts are usually passed as constexprs; one written for 32-thread warps fails on a
wave64 GPU, and one written for 4 warps fails with ``num_warps=8``. Catching that here lets
the error name the argument and say what to do, instead of an MLIR diagnostic.
"""
from __future__ import annotations

import math

from triton.experimental.gluon import language as gl

from .errors import LayoutError


def check_constexpr_layouts(fn, constants: dict, warp_size: int, num_warps: int, target: str) -> None:
    for path, value in constants.items():
        name = fn.arg_names[path[0]] if path and path[0] < len(fn.arg_names) else str(path)
        for layout in _layouts_in(value):
            _check(layout, name, fn, warp_size, num_warps, target)


def _layouts_in(value):
    if isinstance(value, gl.SliceLayout):
        yield from _layouts_in(value.parent)
    elif isinstance(value, gl.BlockedLayout):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _layouts_in(item)


def _check(layout, name: str, fn, warp_size: int, num_warps: int, target: str) -> None:
    where = f"{fn.__name__} ({_definition(fn)}), constexpr argument '{name}'"
    threads = layout.threads_per_warp
    if math.prod(threads) != warp_size:
        raise LayoutError(f"{where}: layout has {math.prod(threads)} threads per warp ({threads}) but {target} runs "
                          f"{warp_size}-thread warps.\n  hint: choose the layout per target, e.g. "
                          f"threads_per_warp whose product is {warp_size}.")
    warps = layout.warps_per_cta
    if math.prod(warps) != num_warps:
        raise LayoutError(f"{where}: layout spreads over {math.prod(warps)} warps ({warps}) but the kernel is "
                          f"compiled with num_warps={num_warps}.\n  hint: pass num_warps={math.prod(warps)} or "
                          f"build the layout for {num_warps} warps.")


def _definition(fn) -> str:
    code = fn.fn.__code__
    return f"{code.co_filename}:{code.co_firstlineno}"
