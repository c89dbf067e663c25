"""Small mixed kernels that tests copy to a temporary file and edit (cache invalidation, CLI).

Each kernel reaches one helper, so an edit to a helper must rebuild exactly the kernels that
call it. ``SIGNATURE`` and ``constexprs(target)`` are the module defaults the scheduler reads.
"""
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid
from interop.targets import TARGETS

SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}


def constexprs(target: str) -> dict:
    return {"BLOCK": 256, "L1": gl.BlockedLayout([2], [TARGETS[target].warp_size], [4], [0])}


@triton.jit
def h_scale(x):
    return x * 2.0


@triton.jit
def h_shift(x):
    return x + 1.0


@triton.jit
def h_bad(x):
    return x + tl.arange(0, 16)   # 16 elements against the caller's BLOCK: a region error


@hybrid.jit
@gluon.jit
def k_scale(x_ptr, y_ptr, n, BLOCK: gl.constexpr, L1: gl.constexpr):
    offs = gl.arange(0, BLOCK, layout=L1)
    y = gl.convert_layout(h_scale(gl.load(x_ptr + offs, mask=offs < n)), L1)
    gl.store(y_ptr + offs, y, mask=offs < n)


@hybrid.jit
@gluon.jit
def k_shift(x_ptr, y_ptr, n, BLOCK: gl.constexpr, L1: gl.constexpr):
    offs = gl.arange(0, BLOCK, layout=L1)
    y = gl.convert_layout(h_shift(gl.load(x_ptr + offs, mask=offs < n)), L1)
    gl.store(y_ptr + offs, y, mask=offs < n)


@hybrid.jit
@gluon.jit
def k_bad(x_ptr, y_ptr, n, BLOCK: gl.constexpr, L1: gl.constexpr):
    offs = gl.arange(0, BLOCK, layout=L1)
    y = gl.convert_layout(h_bad(gl.load(x_ptr + offs)), L1)
    gl.store(y_ptr + offs, y, mask=offs < n)
