"""Kernels for ``tests/test_buffer_access.py``: a Triton kernel's Gluon function accessing the
pointer tile it is passed with ``hybrid.amd.buffer_load``/``buffer_store``, the same function
written in Triton, and a Gluon kernel doing it on its own tile."""
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid

SIGNATURE = {"x_ptr": "*fp32", "n": "i32"}
ROW = gl.BlockedLayout([4], [64], [4], [0])


@gluon.jit
def doubled(ptrs, mask):
    ptrs = hybrid.convert_in(ptrs, ROW)
    mask = hybrid.convert_in(mask, ROW)
    x = hybrid.amd.buffer_load(ptrs, mask=mask)
    hybrid.amd.buffer_store(ptrs, x * 2, mask=mask)


@triton.jit
def doubled_triton(ptrs, mask):
    x = tl.load(ptrs, mask=mask)
    tl.store(ptrs, x * 2, mask=mask)


@triton.jit
def row_kernel(x_ptr, n, BLOCK: tl.constexpr):
    """Each program's row from a scalar base: offsets Triton bounds by ``BLOCK``."""
    row = x_ptr + tl.program_id(0) * BLOCK
    offs = tl.arange(0, BLOCK)
    doubled(row + offs, offs < n)


@triton.jit
def row_kernel_triton(x_ptr, n, BLOCK: tl.constexpr):
    row = x_ptr + tl.program_id(0) * BLOCK
    offs = tl.arange(0, BLOCK)
    doubled_triton(row + offs, offs < n)


@triton.jit
def flat_kernel(x_ptr, n, BLOCK: tl.constexpr):
    """Offsets ``program_id * BLOCK + arange``: unbounded without the launch's 2 GB specialization."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    doubled(x_ptr + offs, offs < n)


@triton.jit
def flat_kernel_triton(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    doubled_triton(x_ptr + offs, offs < n)


@gluon.jit
def gluon_kernel(x_ptr, n, BLOCK: gl.constexpr, LANES: gl.constexpr):
    row = x_ptr + gl.program_id(0) * BLOCK
    offs = gl.arange(0, BLOCK, layout=gl.BlockedLayout([4], [LANES], [4], [0]))
    x = hybrid.amd.buffer_load(row + offs, mask=offs < n, other=0.0)
    hybrid.amd.buffer_store(row + offs, x * 2, mask=offs < n)
