"""Kernels for ``tests/test_caller_loads.py``: upstream fused softmax's row (its Triton kernel is
``bench/parity_ports.py``'s ``softmax_rows``, whose persistent row loop Triton software-pipelines)
as Gluon functions loading the row with ``hybrid.caller_load``: one whose load a caller may
issue, four whose load no caller may, one loading a scalar too; and a Gluon kernel calling the
row. The functions take the tiles in the layout they arrive in."""
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid

CONSTEXPRS = {"BLOCK_SIZE": 1024, "num_stages": 2}
NUM_WARPS = 8


def row_layout(warp_size: int) -> gl.BlockedLayout:
    """The layout Triton gives the row (one element a thread at a time, ``NUM_WARPS`` warps)."""
    return gl.BlockedLayout([1], [warp_size], [NUM_WARPS], [0])


@gluon.jit
def softmax_row(input_ptrs, mask):
    row = hybrid.caller_load(input_ptrs, mask=mask, other=-float("inf"))
    row_minus_max = row - gl.max(row, axis=0)
    numerator = gl.exp(row_minus_max)
    return numerator / gl.sum(numerator, axis=0)


@gluon.jit
def softmax_row_after_a_store(input_ptrs, mask):
    """Writes before it loads: the load must stay where it is."""
    gl.store(input_ptrs, gl.full(input_ptrs.shape, 0.0, gl.float32, input_ptrs.type.layout), mask=mask)
    row = hybrid.caller_load(input_ptrs, mask=mask, other=-float("inf"))
    return row - gl.max(row, axis=0)


@gluon.jit
def softmax_row_tensor_other(input_ptrs, mask):
    """Its ``other`` is a tile the function makes: no caller can make it."""
    other = gl.full(input_ptrs.shape, -float("inf"), gl.float32, input_ptrs.type.layout)
    row = hybrid.caller_load(input_ptrs, mask=mask, other=other)
    return row - gl.max(row, axis=0)


@gluon.jit
def softmax_row_own_pointers(input_ptrs, mask):
    """Loads from pointers it computes: no caller has them."""
    row = hybrid.caller_load(input_ptrs + 0, mask=mask, other=-float("inf"))
    return row - gl.max(row, axis=0)


@gluon.jit
def softmax_row_in_a_loop(input_ptrs, mask):
    """Loads inside a loop of its own: the load must stay there."""
    row = gl.full(input_ptrs.shape, 0.0, gl.float32, input_ptrs.type.layout)
    for _ in range(2):
        row += hybrid.caller_load(input_ptrs, mask=mask, other=0.0)
    return row - gl.max(row, axis=0)


@gluon.jit
def scaled_row(input_ptrs, mask, scale_ptr):
    """A scalar's load (of one pointer, not a tile): the function loads it as written."""
    scale = hybrid.caller_load(scale_ptr)
    return hybrid.caller_load(input_ptrs, mask=mask, other=0.0) * scale


@triton.jit
def scaled_rows(out_ptr, in_ptr, scale_ptr, n_cols, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    row = tl.program_id(0) * n_cols
    tl.store(out_ptr + row + cols, scaled_row(in_ptr + row + cols, cols < n_cols, scale_ptr), mask=cols < n_cols)


@gluon.jit
def softmax_rows_gluon(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                       BLOCK_SIZE: gl.constexpr, num_stages: gl.constexpr, L: gl.constexpr):
    for row_idx in range(gl.program_id(0), n_rows, gl.num_programs(0)):
        cols = gl.arange(0, BLOCK_SIZE, layout=L)
        y = softmax_row(input_ptr + row_idx * input_row_stride + cols, cols < n_cols)
        gl.store(output_ptr + row_idx * output_row_stride + cols, y, mask=cols < n_cols)
