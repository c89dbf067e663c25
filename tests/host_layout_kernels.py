"""Kernels for tests/test_host_layouts.py: Gluon hosts with explicit layouts calling ordinary
Triton helpers (elementwise, reducing, an activation on a ``tl.dot`` accumulator)."""
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid
from interop.targets import TARGETS


@triton.jit
def scale(x, s):
    return x * s


@triton.jit
def row_norm(x):
    return tl.sqrt(tl.sum(x * x, axis=1))


@triton.jit
def relu(x):
    return tl.maximum(x, 0.0)


@triton.jit
def tile_dot(a_ptr, b_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * BK + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * BN + rn[None, :])
    return tl.dot(a, b)


@gluon.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: gl.constexpr, L: gl.constexpr):
    """The issue's kernel: an elementwise helper on a value in the host's explicit layout."""
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=L)
    x = gl.load(x_ptr + offs, mask=offs < n)
    gl.store(y_ptr + offs, scale(x, 2.0), mask=offs < n)


hybrid_scale_kernel = hybrid.jit(scale_kernel)


@hybrid.jit
@gluon.jit
def row_norm_kernel(x_ptr, y_ptr, BM: gl.constexpr, BN: gl.constexpr, L: gl.constexpr):
    """A reducing helper: its result is used in the slice of the host's layout, unconverted."""
    rows = gl.arange(0, BM, layout=gl.SliceLayout(1, L))
    cols = gl.arange(0, BN, layout=gl.SliceLayout(0, L))
    x = gl.load(x_ptr + rows[:, None] * BN + cols[None, :])
    gl.store(y_ptr + rows, row_norm(x))


@hybrid.jit
@gluon.jit
def epilogue_kernel(a_ptr, b_ptr, c_ptr, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr, L: gl.constexpr):
    """An activation helper applied to a ``tl.dot`` accumulator: it stays in the MMA layout."""
    acc = relu(tile_dot(a_ptr, b_ptr, BM, BN, BK))
    acc = gl.convert_layout(acc, L)   # the host's own store layout
    rows = gl.arange(0, BM, layout=gl.SliceLayout(1, L))
    cols = gl.arange(0, BN, layout=gl.SliceLayout(0, L))
    gl.store(c_ptr + rows[:, None] * BN + cols[None, :], acc)


@hybrid.jit
@gluon.jit
def mismatched_kernel(x_ptr, y_ptr, BM: gl.constexpr, BN: gl.constexpr, L: gl.constexpr, L1: gl.constexpr):
    """Stores a reduction's result (a slice of L) at offsets in another layout, unconverted."""
    rows = gl.arange(0, BM, layout=gl.SliceLayout(1, L))
    cols = gl.arange(0, BN, layout=gl.SliceLayout(0, L))
    norms = row_norm(gl.load(x_ptr + rows[:, None] * BN + cols[None, :]))
    gl.store(y_ptr + gl.arange(0, BM, layout=L1), norms)


def vector(target: str, per_thread: int) -> gl.BlockedLayout:
    return gl.BlockedLayout([per_thread], [TARGETS[target].warp_size], [4], [0])


def tile(target: str, per_thread: int) -> gl.BlockedLayout:
    """Rows over warps, ``per_thread`` consecutive columns per thread."""
    warp = TARGETS[target].warp_size
    return gl.BlockedLayout([1, per_thread], [warp // 8, 8], [4, 1], [1, 0])
