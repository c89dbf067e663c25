"""A Gluon region's entry conversion taken as its declared layout, and the Triton host's load and
store issued in it (``handoff.entry_layouts``, ``stitching/access_layouts``): issue 33's
softmax_gluon_stats rows. Each test reads the built kernel (records, ttgir, machine code)."""
import re

import pytest
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid
from examples import softmax, softmax_gluon_stats
from examples.layouts import row_layout
from interop.instrumentation.resources import instructions, layout_conversions
from interop.targets import TARGETS

pytestmark = pytest.mark.version


def _ops(ttgir: str, name: str) -> list[str]:
    return [line for line in ttgir.splitlines() if f" {name} " in line]


@pytest.mark.parametrize("target", ["sm80", "gfx942"])
def test_a_triton_host_loads_and_stores_in_the_layout_its_gluon_statistics_convert_to(target):
    """The author's ``gl.convert_layout(x, L)`` becomes the boundary's; the host loads the tile in
    ``L`` and stores the result in it, so no conversion and no shared memory is left, and the
    kernel costs no more than all-Triton's (fewer instructions: the reductions stay in warps)."""
    fb, pure = softmax_gluon_stats.build(target), softmax.build_triton(target)
    incoming = next(b for b in fb.boundaries if b.direction == "in")
    assert incoming.to_layout != incoming.from_layout   # taken as declared: the region's L, not the host's
    assert incoming.reason.startswith("the host loads the tile in the layout the region takes")
    assert sum(b.conversions for b in fb.boundaries) == 0
    ttgir = fb.asm["ttgir"]
    assert len(_ops(ttgir, "tt.load")) == len(_ops(ttgir, "tt.store")) == 1
    assert layout_conversions(ttgir) == 0
    assert fb.metadata.shared <= pure.metadata.shared
    assert instructions(fb.asm) <= 1.02 * instructions(pure.asm)


@gluon.jit
def converted_then_summed(x, L: gl.constexpr):
    return gl.sum(gl.convert_layout(x, L), axis=1)


@gluon.jit
def converted_beside_a_tile_in_its_layout(x, L: gl.constexpr):
    """Reads the layout ``x`` arrives in (``x.type.layout``): another layout would change its code."""
    ones = gl.full(x.shape, 1.0, gl.float32, layout=x.type.layout)
    return gl.sum(gl.convert_layout(x, L), axis=1) + gl.sum(gl.convert_layout(ones, L), axis=1)


@gluon.jit
def converted_beside_its_own_tile(x, L: gl.constexpr, P: gl.constexpr):
    """Converts ``x`` first, and makes a tile of its own in ``P``, the layout a probe build gives
    ``x`` (one element a thread): ``P`` shows in the code whatever layout ``x`` arrives in."""
    ones = gl.full(x.shape, 1.0, gl.float32, layout=P)
    return gl.sum(gl.convert_layout(x, L), axis=1) + gl.sum(gl.convert_layout(ones, L), axis=1)


@hybrid.jit
@triton.jit
def summing_host(x_ptr, y_ptr, n_cols, stride, BM: tl.constexpr, BN: tl.constexpr, L: tl.constexpr,
                 READS: tl.constexpr, P: tl.constexpr = None):
    """Loads rows of a runtime stride, masked by a runtime column count: Triton's coalescing gives
    the tile one element per thread along a row (not ``L``'s four)."""
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    x = tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=cols[None, :] < n_cols, other=0.0)
    if READS:
        tl.store(y_ptr + rows, converted_beside_a_tile_in_its_layout(x, L))
    elif P is not None:
        tl.store(y_ptr + rows, converted_beside_its_own_tile(x, L, P))
    else:
        tl.store(y_ptr + rows, converted_then_summed(x, L))


def _summing(target: str, reads: bool, placeholder=None):
    layout = row_layout(target, 4, 64)
    return hybrid.compile(summing_host, {"x_ptr": "*fp32", "y_ptr": "*fp32", "n_cols": "i32", "stride": "i32"},
                          {"BM": 32, "BN": 64, "L": layout, "READS": reads, "P": placeholder}, target,
                          num_warps=4), layout


@pytest.mark.parametrize("target", ["sm90a", "gfx950"])
def test_a_parameter_only_converted_is_taken_in_the_layout_converted_to(target):
    """The host loads ``x`` in ``L`` (the function's first conversion): nothing is converted."""
    fb, layout = _summing(target, reads=False)
    incoming = next(b for b in fb.boundaries if b.direction == "in")
    assert f"sizePerThread = {list(layout.size_per_thread)}" in incoming.to_layout
    assert f"threadsPerWarp = {list(layout.threads_per_warp)}" in incoming.to_layout
    assert incoming.from_layout != incoming.to_layout
    assert incoming.conversions == 0 and incoming.reason.startswith("the host loads the tile in the layout")


@pytest.mark.parametrize("target", ["sm90a", "gfx950"])
def test_a_parameter_only_converted_is_taken_so_though_its_probe_layout_shows_in_the_code(target):
    """The function's own tile is in the probe's placeholder layout, so the first probe cannot tell
    whether the code read ``x``'s layout; a second probe, ``x`` in that placeholder written as a
    linear layout, tells it did not: ``x`` is taken in ``L``, loaded there, nothing converted."""
    warp = TARGETS[target].warp_size
    fb, layout = _summing(target, reads=False, placeholder=gl.BlockedLayout([1, 1], [1, warp], [1, 4], [1, 0]))
    incoming = next(b for b in fb.boundaries if b.direction == "in")
    assert f"sizePerThread = {list(layout.size_per_thread)}" in incoming.to_layout
    assert incoming.conversions == 0 and incoming.reason.startswith("the host loads the tile in the layout")


@pytest.mark.parametrize("target", ["sm90a", "gfx950"])
def test_a_parameter_whose_layout_the_code_reads_is_built_in_the_hosts_layout(target):
    """``x.type.layout`` sizes a tile of ones: built in ``L`` its code would differ, so the
    function takes ``x`` as the host laid it out and converts it itself, as written."""
    fb, _ = _summing(target, reads=True)
    incoming = next(b for b in fb.boundaries if b.direction == "in")
    assert incoming.to_layout == incoming.from_layout
    assert incoming.reason == "layouts agree"


@hybrid.jit
@triton.jit
def cached_softmax(x_ptr, y_ptr, n_rows, n_cols, stride, BM: tl.constexpr, BN: tl.constexpr, L: tl.constexpr):
    """softmax_gluon_stats's kernel with a cache hint on its load, which the bindings cannot read
    off the op (so it cannot be issued again with it)."""
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offsets = rows[:, None] * stride + cols[None, :]
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0, cache_modifier=".cg")
    m, s = softmax_gluon_stats.row_stats_gluon(x, n_cols, BN, L)
    tl.store(y_ptr + offsets, tl.exp(x - m[:, None]) / s[:, None], mask=mask)


def test_a_load_with_cache_hints_is_left_as_written_and_its_conversions_counted():
    """The tile stays in the layout of its load, so the region converts it itself, as written, and
    Triton keeps converting the two row statistics back; the conversions Triton's passes remake
    are tagged as the boundary's again, so the records count what the kernel does."""
    fb = hybrid.compile(cached_softmax, softmax.SIGNATURE, softmax_gluon_stats.constexprs("sm80"), "sm80",
                        num_warps=softmax.NUM_WARPS)
    ttgir = fb.asm["ttgir"]
    assert "cacheModifier = cg" in ttgir or "cache_modifier = cg" in ttgir
    incoming = next(b for b in fb.boundaries if b.direction == "in")
    assert (incoming.conversions, incoming.reason, incoming.to_layout) == (0, "layouts agree", incoming.from_layout)
    recorded = sum(b.conversions for b in fb.boundaries if b.direction == "out")
    in_module = len(re.findall(r'ttg\.convert_layout %\S+ \{hybrid\.boundary = "\d+:out:\d+"\}', ttgir))
    assert recorded == in_module > 0
