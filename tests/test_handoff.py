"""Declared boundaries of Gluon regions in Triton hosts (``@hybrid.takes``): layouts and
shared-memory handoffs, compiled for every target on the CPU."""
import re

import pytest
import torch
from triton.experimental.gluon import language as gl

import hybrid
from examples import mma_handoff, tma_stage
from examples.layouts import has_tma
from interop.targets import TARGETS
from interop.triton.bindings import gluon_ir, ir
from tests import kernels, triton_hosts
from tests.kernels import NUM_WARPS
from tests.test_triton_host import layout_text

pytestmark = pytest.mark.version


@pytest.fixture(scope="module")
def mma_builds():
    return {target: mma_handoff.build(target) for target in TARGETS}


def tagged(ttgir: str, op: str) -> dict[str, list[str]]:
    """Boundary tag -> the result types of the ``op`` ops carrying it."""
    found: dict[str, list[str]] = {}
    for tag, ty in re.findall(op + r' %\S+ \{hybrid\.boundary = "([^"]+)"\} : \([^)]*\) -> (!ttg\.memdesc<[^>]*>)',
                              ttgir):
        found.setdefault(tag, []).append(ty)
    return found


@pytest.mark.parametrize("target", ["sm90a", "sm100a"])
def test_shared_handoff_writes_each_operand_once_in_its_declared_layout(mma_builds, target):
    fb = mma_builds[target]
    ttgir = fb.asm["ttgir"]
    constexprs = mma_handoff.constexprs(target)
    stores = {tag: types for tag, types in tagged(ttgir, "ttg.local_alloc").items() if ":in:" in tag}
    assert sorted(stores) == ["0:in:0", "0:in:1"] and all(len(types) == 1 for types in stores.values())
    for (tag, (ty, )), declared in zip(sorted(stores.items()), (constexprs["SA"], constexprs["SB"])):
        alias = ty.split(", ")[1]
        layout = re.search(rf"^{alias} = (.*)$", ttgir, re.M).group(1)
        assert layout.startswith("#ttg.nvmma_shared") and f"swizzlingByteWidth = {declared.swizzle_byte_width}" in layout
    a_in, b_in = [b for b in fb.boundaries if b.direction == "in"]
    assert (a_in.value, a_in.handoff, a_in.shared_bytes) == ("a", "shared", mma_handoff.BM * mma_handoff.K * 2)
    assert (b_in.value, b_in.handoff, b_in.shared_bytes) == ("b", "shared", mma_handoff.K * mma_handoff.BN * 2)
    assert a_in.to_layout.startswith("#ttg.nvmma_shared") and a_in.conversions == b_in.conversions == 0


@pytest.mark.parametrize("target", ["sm90a", "sm100a"])
def test_shared_handoff_fences_once_for_the_async_proxy(mma_builds, target):
    """One fence after both stores (the MMA reads them through the async proxy); the tcgen05 region
    writes one more itself, after its mbarrier init."""
    fb = mma_builds[target]
    own = {"sm90a": 0, "sm100a": 1}[target]
    assert sum(b.fences for b in fb.boundaries) == 1
    assert fb.asm["ttgir"].count("ttng.fence_async_shared") == 1 + own
    mma = {"sm90a": "wgmma.mma_async", "sm100a": "tcgen05.mma"}[target]
    ptx = fb.assembly
    assert ptx.index("fence.proxy.async") < ptx.index(mma) and "bar.sync" in ptx[:ptx.index(mma)]


def test_no_fence_without_an_async_proxy_reader():
    """A shared handoff to a region that only reads with ld.shared needs no fence."""
    fb = hybrid.compile(*triton_hosts.cases("sm90a")["shared_handoff"], target="sm90a", num_warps=NUM_WARPS)
    (handoff, ) = [b for b in fb.boundaries if b.direction == "in"]
    assert handoff.handoff == "shared" and handoff.fences == 0
    assert "fence_async_shared" not in fb.asm["ttgir"] and "fence.proxy.async" not in fb.assembly


@pytest.mark.parametrize("target", ["sm80", "gfx942", "gfx950"])
def test_targets_without_wgmma_or_tcgen05_keep_the_dot_in_triton(mma_builds, target):
    fb = mma_builds[target]
    assert fb.kernel_entries == 1 and fb.regions == [] and fb.boundaries == []


@pytest.mark.parametrize("target", list(TARGETS))
def test_declared_register_layout_is_what_the_region_computes_in(target):
    """``@hybrid.takes(x="L")``: the body has no conversion of its own, the reduction runs in ``L``
    and the boundary records the host -> ``L`` conversion (or its folding)."""
    kernel, signature, constexprs = triton_hosts.cases(target)["declared_reduce"]
    fb = hybrid.compile(kernel, signature, constexprs, target=target, num_warps=NUM_WARPS)
    ttgir = fb.asm["ttgir"]
    alias = re.search(r"^(#\w+) = " + re.escape(layout_text(constexprs["L"])), ttgir, re.M).group(1)
    assert re.search(rf"tt\.reduce.*\n(?:.*\n)*?.*\) : \(tensor<32x64xf32, {alias}>\)", ttgir)
    inbound = fb.boundaries[0]
    assert inbound.direction == "in" and inbound.to_layout == layout_text(constexprs["L"])
    handed = inbound.reason.startswith("stored once")   # the planner's handoff: loaded in L, no conversion
    assert inbound.conversions == (0 if handed or inbound.reason == "layouts agree" or "folded" in inbound.reason
                                   else 1)


@pytest.mark.parametrize("target", ["sm90a", "sm100a"])
def test_shared_handoff_in_the_interpreter(target):
    """The interpreter applies the same declarations (a buffer per operand, the declared layout)."""
    p = mma_handoff.problem(200, 100, device="cpu")
    with hybrid.interpreting(target=target):
        out = mma_handoff.run("hybrid", p, target)
    assert mma_handoff.error(out, p) <= mma_handoff.TOLERANCE


def test_declared_register_layout_in_the_interpreter():
    kernel, _, constexprs = triton_hosts.cases("gfx942")["declared_reduce"]
    x = torch.randn(32, 64)
    y = torch.full((32, ), float("nan"))
    with hybrid.interpreting(target="gfx942"):
        kernel[(1, )](x, y, **constexprs)
    torch.testing.assert_close(y, 2 * x.sum(1) + 1, rtol=1e-5, atol=1e-5)


def test_takes_rejects_a_name_that_is_not_a_parameter():
    with pytest.raises(TypeError, match="no parameter named y"):
        hybrid.takes(y="L")(triton_hosts.g_row_sum)


@pytest.mark.parametrize("case, target, expected", [("shared_handoff", "gfx942", lambda x: x.T),
                                                     ("shared_result", "sm80", lambda x: 3 * x),
                                                     ("planned_handoff", "sm90a", lambda x: 2 * x)])
def test_shared_handoffs_in_the_interpreter(case, target, expected):
    """A tile handed in through shared memory (read back transposed), and one handed back."""
    kernel, _, constexprs = triton_hosts.cases(target)[case]
    x = torch.randn(32, 32)
    y = torch.full_like(x, float("nan"))
    with hybrid.interpreting(target=target):
        kernel[(1, )](x, y, **constexprs)
    torch.testing.assert_close(y, expected(x))


@pytest.mark.parametrize("target", list(TARGETS))
def test_a_returned_shared_buffer_is_loaded_once_for_the_host(target):
    kernel, signature, constexprs = triton_hosts.cases(target)["shared_result"]
    fb = hybrid.compile(kernel, signature, constexprs, target=target, num_warps=NUM_WARPS)
    ttgir = fb.asm["ttgir"]
    assert fb.kernel_entries == 1 and re.findall(r'ttg\.local_load %\S+ \{hybrid\.boundary = "0:out:0"\}', ttgir)
    assert ttgir.count("ttg.local_load") == 1
    (out, ) = [b for b in fb.boundaries if b.direction == "out"]
    assert (out.handoff, out.shape, out.conversions) == ("shared", (32, 32), 0)
    assert out.from_layout.startswith("#ttg.swizzled_shared")


@pytest.mark.parametrize("target", list(TARGETS))
def test_gluon_stage_hands_tiles_to_a_triton_region_through_shared_memory(target):
    """``examples/tma_stage.py``: with TMA the staged tile is read back from shared memory in the
    row layout Triton's lowering of the region also computes in (a coalesced load's), elsewhere
    loaded in it: the boundary costs nothing."""
    fb = tma_stage.build(target)
    ttgir = fb.asm["ttgir"]
    assert [(b.direction, b.conversions, b.reason) for b in fb.boundaries] == [
        ("in", 0, "layouts agree"), ("out", 0, "layouts agree")]
    assert ttgir.count("ttg.local_load") == int(has_tma(target))
    assert ttgir.count("ttg.convert_layout") == 1   # the author's own, to a layout equal to its input's
    if has_tma(target):
        assert "cp.async.bulk.tensor" in fb.assembly and "mbarrier.try_wait" in fb.assembly


@pytest.mark.parametrize("target", list(TARGETS))
def test_boundary_conversion_of_a_shared_memory_read_becomes_a_read_in_the_regions_layout(target):
    kernel, signature, constexprs = kernels.cases(target)["staged_columns"]
    fb = hybrid.compile(kernel, signature, constexprs, target=target, num_warps=NUM_WARPS)
    ttgir = fb.asm["ttgir"]
    inbound = next(b for b in fb.boundaries if b.direction == "in")
    assert (inbound.handoff, inbound.conversions, inbound.movement) == ("shared", 0, "none")
    assert "loaded from shared memory" in inbound.reason
    (read, ) = re.findall(r'ttg\.local_load %\S+ \{hybrid\.boundary = "0:in:0"\} : !ttg\.memdesc<[^>]*> -> '
                          r'tensor<64x64xf32, (#\w+)>', ttgir)
    columns = re.search(r"^(#\w+) = " + re.escape(layout_text(constexprs["LC"])), ttgir, re.M)
    assert columns is None or read != columns.group(1)
    assert ttgir.count("ttg.local_load") == 1   # the column-wise read is gone


@pytest.mark.parametrize("target", ["sm90a", "sm100a"])
def test_boundaries_whose_lifetimes_do_not_overlap_share_shared_memory(mma_builds, target):
    """The operand buffers are dead once the MMA has read them; the result's conversion scratch
    reuses their space, so the kernel needs less than its boundaries put through shared memory."""
    fb = mma_builds[target]
    through = sum(b.shared_bytes for b in fb.boundaries)
    out = next(b for b in fb.boundaries if b.direction == "out")
    assert out.movement == "shared" and out.shared_bytes > 0
    assert fb.metadata["shared"] < through


@pytest.mark.parametrize("target", list(TARGETS))
def test_planned_shared_layout_avoids_the_readers_bank_conflicts(target):
    """``hybrid.shared()``: the host writes rows, the region reads columns; the planned swizzle
    serves both in the fewest wavefronts, the unswizzled layout serializes the column reads."""
    kernel, signature, constexprs = triton_hosts.cases(target)["planned_handoff"]
    fb = hybrid.compile(kernel, signature, constexprs, target=target, num_warps=NUM_WARPS)
    (inbound, ) = [b for b in fb.boundaries if b.direction == "in"]
    assert inbound.handoff == "shared" and "planned swizzle" in inbound.reason
    counts = re.search(r"\((\d+) wavefronts per warp to write, (\d+) to read; unswizzled: (\d+) and (\d+)\)",
                       inbound.reason)
    write, read, plain_write, plain_read = map(int, counts.groups())
    assert read < plain_read and write <= plain_write
    (stored, ) = tagged(fb.asm["ttgir"], "ttg.local_alloc")["0:in:0"]
    alias = stored.split(", ")[1]
    assert re.search(rf"^{alias} = (.*)$", fb.asm["ttgir"], re.M).group(1) == inbound.to_layout
    assert "maxPhase = 1," not in inbound.to_layout   # swizzled


def test_swizzle_plan_reaches_the_ideal_for_rows_written_and_columns_read():
    from interop.boundaries import swizzle
    context = ir.context()
    ir.load_dialects(context)
    builder = gluon_ir.GluonOpBuilder(context)
    writer = gl.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0])
    reader = gl.BlockedLayout([4, 1], [8, 4], [1, 4], [0, 1])
    plan = swizzle.plan(builder, writer, [reader], [32, 64], 32)
    ideal = 32 * 64 // 4 * 4 // 128   # one warp's quarter of the tile, 128 bytes per wavefront
    assert (plan.write, plan.read) == (ideal, ideal) and plan.plain_read == 8 * ideal
    assert swizzle.plan(builder, writer, [writer], [32, 64], 32).layout.max_phase == 1   # nothing to fix


@pytest.mark.parametrize("target", list(TARGETS))
def test_stage_stores_a_triton_regions_result_once_in_a_swizzle_planned_for_both_sides(target):
    """``hybrid.stage`` in a Gluon host: the region's loaded tile goes straight into one shared
    buffer (no conversion before it), in a swizzle that serves the region's row-wise writes and
    the host's column-wise reads; the boundary record says so."""
    kernel, signature, constexprs = kernels.cases(target)["stage"]
    fb = hybrid.compile(kernel, signature, constexprs, target=target, num_warps=NUM_WARPS)
    ttgir = fb.asm["ttgir"]
    assert fb.kernel_entries == 1 and "ttg.convert_layout" not in ttgir and "tt.call" not in ttgir
    ((source, buffer_layout), ) = re.findall(r"ttg\.local_alloc (%\w+) : \(tensor<64x64xf32, #\w+>\) -> "
                                             r"!ttg\.memdesc<64x64xf32, (#\w+),", ttgir)
    assert re.search(rf"^\s*{source} = tt\.load ", ttgir, re.M)   # the region's own load feeds the store
    swizzled = re.search(rf"^{buffer_layout} = (#ttg\.swizzled_shared<[^>]*>)", ttgir, re.M).group(1)
    assert "maxPhase = 1," not in swizzled
    (out, ) = fb.boundaries
    assert (out.function, out.direction, out.handoff, out.conversions) == ("t_load_tile", "out", "shared", 0)
    assert out.to_layout == swizzled and out.shared_bytes == 64 * 64 * 4 and "hybrid.stage" in out.reason
    write, read, plain_write, plain_read = map(int, re.findall(r"\d+", out.reason.split("swizzle", 1)[1]))
    assert write <= plain_write and read < plain_read
    assert fb.metadata["shared"] >= out.shared_bytes


@pytest.mark.parametrize("target", ["sm80", "gfx942"])
def test_stage_in_the_interpreter(target):
    kernel, _, constexprs = kernels.cases(target)["stage"]
    x = torch.randn(64, 64)
    y = torch.full_like(x, float("nan"))
    with hybrid.interpreting(target=target):
        kernel[(1, )](x, y, **constexprs)
    torch.testing.assert_close(y, 2 * x)
