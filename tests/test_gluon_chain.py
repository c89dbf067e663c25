"""A tile one Gluon call returns, passed by the Triton host straight to another Gluon call: the
second is built for the layout the first returned it in, as a Gluon caller would pass it, so
nothing is converted between them (issue 29's tile_matmul port in matmul_gluon_epilogue)."""
import pytest
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid
from examples.layouts import column_layout


@gluon.jit
def ramp(BM: gl.constexpr, BN: gl.constexpr, L: gl.constexpr):
    """A tile made in ``L`` (columns contiguous per thread: not a layout Triton picks for it)."""
    rows = gl.arange(0, BM, layout=gl.SliceLayout(1, L))
    cols = gl.arange(0, BN, layout=gl.SliceLayout(0, L))
    return (rows[:, None] * BN + cols[None, :]).to(gl.float32)


@gluon.jit
def doubled(x):
    return x * 2.0


@hybrid.jit
@triton.jit
def chained(y_ptr, BM: tl.constexpr, BN: tl.constexpr, L: tl.constexpr):
    offsets = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(y_ptr + offsets, doubled(ramp(BM, BN, L)))


@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
def test_a_gluon_result_passed_to_another_gluon_call_is_not_converted_between_them(target):
    layout = column_layout(target, 4, 32)
    fb = hybrid.compile(chained, {"y_ptr": "*fp32"}, {"BM": 32, "BN": 32, "L": layout}, target, num_warps=4)
    (returned, ) = [b for b in fb.boundaries if b.function == "ramp" and b.direction == "out"]
    (taken, ) = [b for b in fb.boundaries if b.function == "doubled" and b.direction == "in"]
    assert taken.to_layout == returned.from_layout   # built for the layout the tile was returned in
    assert f"sizePerThread = {list(layout.size_per_thread)}" in taken.to_layout
    assert returned.conversions == taken.conversions == 0
