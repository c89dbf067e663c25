"""The layout helpers a port carries: each one it uses is copied verbatim into the port's file.

Upstream's translator writes calls to helpers of its own (``tl_arange``, ``reset_to_default_layout``,
...) and imports them from the translator's package. Those modules are not public API, differ
between Triton releases (3.9's pick the warp size from the compile target, 3.6's hard-code 32,
which no AMD target accepts) and are not importable across them, so a port generated on one Triton
would not load on the other. A port instead defines the helpers it calls, on the public Gluon API
only, with the two numbers every layout depends on as constants at the top of its file:
``THREADS_PER_WARP`` (the target's warp size) and ``NUM_WARPS`` (``--num-warps``). The constants
here are placeholders so the module can be imported and tested; ``hybrid port start`` writes the
target's values.

The layouts are the translator's: one blocked layout per rank (the last dimension across a warp's
threads, the first across the warps), converted back to after every op that changes it. Correct
for any shape, not fast; the author of the port replaces them.
"""
from __future__ import annotations

import ast
import inspect
import sys

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

THREADS_PER_WARP = gl.constexpr(32)
NUM_WARPS = gl.constexpr(4)


@gluon.constexpr_function
def default_blocked_layout(shape):
    """The one layout of every tensor of this rank in the port."""
    rank = len(shape)
    return gl.BlockedLayout(size_per_thread=[1] * rank, threads_per_warp=[1] * (rank - 1) + [THREADS_PER_WARP],
                            warps_per_cta=[NUM_WARPS] + [1] * (rank - 1), order=list(range(rank - 1, -1, -1)))


@gluon.constexpr_function
def expand_dims_layout(shape, expand_dims):
    """The slice of the default layout that ``x[None, :]``-style indexing expands back into it."""
    parent_shape = list(shape)
    for dim in expand_dims:
        parent_shape.insert(dim, 1)
    layout = default_blocked_layout(parent_shape)
    for dim in reversed(expand_dims):
        layout = gl.SliceLayout(dim, layout)
    return layout


@gluon.jit
def convert_to_expand_dims_layout(value, expand_dims: gl.constexpr):
    return gl.convert_layout(value, expand_dims_layout(value.type.shape, expand_dims))


@gluon.jit
def to_default_layout(value):
    """A distributed tensor in its rank's default layout; anything else (scalars, pointers) as is."""
    if isinstance(value, gl.tensor) and isinstance(value.type, gl.distributed_type):
        return gl.convert_layout(value, default_blocked_layout(value.type.shape))
    else:
        return value


@gluon.jit
def reset_to_default_layout(value):
    """``to_default_layout`` of a value or of each element of a tuple (a function's results)."""
    if isinstance(value, gl.tuple):
        out = ()
        for i in gl.static_range(len(value)):
            out = out + (to_default_layout(value[i]), )
        return out
    else:
        return to_default_layout(value)


@gluon.jit
def tl_arange(start: gl.constexpr, stop: gl.constexpr):
    return gl.arange(start, stop, layout=default_blocked_layout([stop - start]))


@gluon.jit
def tl_full(shape, value, dtype=None):
    return gl.full(shape, value, dtype, layout=default_blocked_layout(shape))


@gluon.constexpr_function
def split_src_layout(shape):
    """The layout ``split`` needs: the last dimension (of size 2) within each thread."""
    rank = len(shape)
    threads_per_warp = [1] * rank
    remaining = THREADS_PER_WARP.value
    for dim in range(rank - 2, -1, -1):
        threads_per_warp[dim] = min(shape[dim], remaining)
        remaining = remaining // threads_per_warp[dim]
    threads_per_warp[0] *= remaining   # threads the shape leaves over replicate along the first dimension
    return gl.BlockedLayout(size_per_thread=[1] * (rank - 1) + [2], threads_per_warp=threads_per_warp,
                            warps_per_cta=[NUM_WARPS] + [1] * (rank - 1), order=list(range(rank - 1, -1, -1)))


@gluon.jit
def set_split_src_layout(value):
    return gl.convert_layout(value, split_src_layout(value.type.shape))


#: Helper name -> its definition, in this file's order (callees before callers).
HELPERS = {name: value for name, value in vars(sys.modules[__name__]).items()
           if getattr(value, "__module__", None) == __name__ and hasattr(value, "fn")}


def helper_sources(used: set[str]) -> list[str]:
    """The source text of the helpers in ``used`` and of those they call, in definition order."""
    needed, todo = set(), list(used & HELPERS.keys())
    while todo:
        name = todo.pop()
        if name not in needed:
            needed.add(name)
            todo.extend(_names(HELPERS[name]) & HELPERS.keys())
    return [inspect.getsource(HELPERS[name].fn) for name in HELPERS if name in needed]


def _names(helper) -> set[str]:
    return {n.id for n in ast.walk(ast.parse(inspect.getsource(helper.fn))) if isinstance(n, ast.Name)}
