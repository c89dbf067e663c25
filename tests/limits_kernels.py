"""Kernels for ``tests/test_limits.py``: accesses at an offset the test chooses (in bounds or not),
in Gluon and in Triton, and a Gluon region allocating more shared memory than any target has."""
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid


@hybrid.jit
@gluon.jit
def g_shifted_copy(x_ptr, y_ptr, n, load_at, store_at, BLOCK: gl.constexpr, L: gl.constexpr):
    offs = gl.arange(0, BLOCK, layout=L)
    mask = offs < n
    gl.store(y_ptr + store_at + offs, gl.load(x_ptr + load_at + offs, mask=mask), mask=mask)


@hybrid.jit
@triton.jit
def t_shifted_copy(x_ptr, y_ptr, n, load_at, store_at, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + store_at + offs, tl.load(x_ptr + load_at + offs, mask=mask), mask=mask)


@hybrid.jit
@triton.jit
def t_shifted_atomic_add(x_ptr, n, at, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(x_ptr + at + offs, 1.0, mask=offs < n)


@hybrid.jit
@gluon.jit
def g_shifted_atomic_add(x_ptr, n, at, BLOCK: gl.constexpr, L: gl.constexpr):
    offs = gl.arange(0, BLOCK, layout=L)
    gl.atomic_add(x_ptr + at + offs, gl.full([BLOCK], 1.0, gl.float32, L), mask=offs < n)


@gluon.jit
def g_stage_twice(x_ptr, BLOCK: gl.constexpr, L: gl.constexpr):
    """Stages ``x`` in a [ROWS, BLOCK] fp32 shared buffer (ROWS = 512: 256 KiB, over every target)."""
    S: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [0])
    offs = gl.arange(0, BLOCK, layout=L)
    smem = gl.allocate_shared_memory(gl.float32, [512, BLOCK], S)
    smem.index(0).store(gl.load(x_ptr + offs))
    return smem.index(0).load(L) * 2


@hybrid.jit
@triton.jit
def t_host_of_a_big_region(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, g_stage_twice(x_ptr, BLOCK, gl.BlockedLayout([1], [32], [4], [0])))


@hybrid.jit
@gluon.jit
def g_big_shared(x_ptr, y_ptr, ROWS: gl.constexpr, BLOCK: gl.constexpr, L: gl.constexpr):
    """A [ROWS, BLOCK] fp32 shared buffer: ROWS * BLOCK * 4 bytes."""
    S: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [0])
    offs = gl.arange(0, BLOCK, layout=L)
    smem = gl.allocate_shared_memory(gl.float32, [ROWS, BLOCK], S)
    smem.index(ROWS - 1).store(gl.load(x_ptr + offs))
    gl.store(y_ptr + offs, smem.index(ROWS - 1).load(L))


@hybrid.jit
@gluon.jit
def g_shared_per_iteration(x_ptr, y_ptr, ROWS: gl.constexpr, BLOCK: gl.constexpr, L: gl.constexpr):
    """A [ROWS, BLOCK] fp32 buffer allocated in each of 3 iterations: one buffer compiled."""
    S: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [0])
    offs = gl.arange(0, BLOCK, layout=L)
    acc = gl.zeros([BLOCK], gl.float32, L)
    for i in range(3):
        smem = gl.allocate_shared_memory(gl.float32, [ROWS, BLOCK], S)
        smem.index(i).store(gl.load(x_ptr + offs))
        acc += smem.index(i).load(L)
    gl.store(y_ptr + offs, acc)
