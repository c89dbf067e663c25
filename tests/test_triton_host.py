"""Triton kernels calling Gluon functions, compiled for every target on the CPU."""
import re

import pytest
import torch

import hybrid
from examples import matmul_gluon_epilogue
from examples.layouts import has_tma
from interop.targets import TARGETS
from hybrid.interpret import interpreting
from tests import triton_hosts
from tests.kernels import NUM_WARPS

pytestmark = pytest.mark.version

BARRIER = {"sm80": "bar.sync", "sm90a": "bar.sync", "sm100a": "bar.sync", "gfx942": "s_barrier",
           "gfx950": "s_barrier"}


@pytest.fixture(scope="module")
def built():
    cache: dict = {}

    def get(case: str, target: str) -> hybrid.FusedBinary:
        if (case, target) not in cache:
            kernel, signature, constexprs = triton_hosts.cases(target)[case]
            cache[case, target] = hybrid.compile(kernel, signature, constexprs, target=target, num_warps=NUM_WARPS)
        return cache[case, target]

    return get


def layout_text(layout) -> str:
    """How the final ttgir prints a Gluon ``BlockedLayout`` the author wrote."""
    return (f"#ttg.blocked<{{sizePerThread = {layout.size_per_thread}, threadsPerWarp = {layout.threads_per_warp}, "
            f"warpsPerCTA = {layout.warps_per_cta}, order = {layout.order}}}>")


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("case", ["reduce", "smem", "control_flow", "row_loop", "pipelined_loop", "tile_and_scalar",
                                  "two_shapes"])
def test_one_fused_kernel(built, case, target):
    fb = built(case, target)
    ttgir = fb.asm["ttgir"]
    assert fb.kernel_entries == 1 and ttgir.count("tt.func public") == 1
    assert "tt.call" not in ttgir and "tt.func private" not in ttgir
    assert "hybrid.gluon." not in ttgir and "hybrid.in." not in ttgir and "elementwise_inline_asm" not in ttgir
    assert fb.regions and fb.regions[0].language == "gluon"


@pytest.mark.parametrize("target", list(TARGETS))
def test_gluon_layout_is_kept_exactly(built, target):
    """The layout the Gluon author converted to is in the final ttgir, and the reduction runs in it."""
    fb = built("reduce", target)
    L = triton_hosts.cases(target)["reduce"][2]["L"]
    ttgir = fb.asm["ttgir"]
    alias = re.search(r"^(#\w+) = " + re.escape(layout_text(L)), ttgir, re.M)
    assert alias, layout_text(L)
    assert re.search(rf"tt\.reduce.*\n(?:.*\n)*?.*\) : \(tensor<32x64xf32, {alias.group(1)}>\)", ttgir)


@pytest.mark.parametrize("target", list(TARGETS))
def test_shared_memory_and_barrier_of_the_gluon_region(built, target):
    fb = built("smem", target)
    ttgir = fb.asm["ttgir"]
    assert "ttg.local_alloc" in ttgir and "ttg.local_load" in ttgir and "ttg.memdesc_trans" in ttgir
    assert BARRIER[target] in fb.assembly
    assert fb.metadata["shared"] >= 32 * 32 * 4   # the 32x32 fp32 tile the region staged


@pytest.mark.parametrize("target", list(TARGETS))
def test_boundary_records(built, target):
    fb = built("reduce", target)
    inbound, outbound = fb.boundaries
    assert (inbound.function, inbound.direction, inbound.value, inbound.shape) == ("g_row_sum", "in", "x", (32, 64))
    assert inbound.conversions == 0 and inbound.reason == "layouts agree"   # Gluon takes the host's layout
    assert (outbound.direction, outbound.shape) == ("out", (32, ))
    assert outbound.from_layout.startswith("#ttg.slice") and outbound.conversions <= 1


def test_regions_in_loops_branches_and_mixed_nesting(built):
    fb = built("control_flow", "sm90a")
    assert [(r.function, r.language) for r in fb.regions] == [
        ("g_add_one", "gluon"), ("g_scale_then_triton", "gluon"), ("t_scale", "triton")]
    ttgir = fb.asm["ttgir"]
    assert "scf.for" in ttgir and "scf.if" in ttgir


def local_buffers(ttgir: str) -> list[str]:
    """The shapes of the shared-memory buffers a kernel allocates up front (a pipeliner's rings)."""
    return sorted(re.findall(r"ttg\.local_alloc\s*:\s*\(\) -> !ttg\.memdesc<([\dx]+\w+)", ttgir))


@pytest.mark.parametrize("target", list(TARGETS))
def test_gluon_region_in_a_pipelined_loop(built, target):
    """Triton pipelines the loop around a Gluon call as it pipelines the same loop in pure Triton
    (the same ring buffers), and every copy of the call a pipeliner peels is spliced: the region's
    multiply runs in the author's layout once per copy of the loop body."""
    fb = built("pipelined_loop", target)
    kernel, signature, constexprs = triton_hosts.cases(target)["pipelined_loop"]
    pure = hybrid.compile(kernel, signature, {**constexprs, "GLUON": False}, target=target, num_warps=NUM_WARPS)
    ttgir, pure_ttgir = fb.asm["ttgir"], pure.asm["ttgir"]
    assert local_buffers(ttgir) == local_buffers(pure_ttgir) and local_buffers(ttgir)
    alias = re.search(r"^(#\w+) = " + re.escape(layout_text(constexprs["L"])), ttgir, re.M).group(1)
    products = re.findall(r"arith\.mulf .* : tensor<64x64xf32, (#\w+)>", ttgir)
    assert products and products == [alias] * pure_ttgir.count("arith.mulf")


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("case, shapes", [("tile_and_scalar", [(32, 64)]), ("two_shapes", [(32, 64), (32, )])])
def test_gluon_region_with_several_results(built, case, shapes, target):
    """Results of different shapes and kinds (a tile and a scalar or a row vector) each reach the
    host's store, whatever order Triton gives them."""
    fb = built(case, target)
    ttgir = fb.asm["ttgir"]
    assert len(re.findall(r"tt\.store|buffer_store", ttgir)) == 2 and "tt.reduce" in ttgir
    assert [b.shape for b in fb.boundaries if b.direction == "out"] == shapes


def test_regions_report_their_own_shared_memory(built):
    """The Gluon region stages a 32x32 fp32 tile: that is what it allocates itself."""
    (region, ) = built("smem", "sm90a").regions
    assert region.shared_bytes == 32 * 32 * 4
    assert all(r.shared_bytes == 0 for r in built("reduce", "sm90a").regions)


@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
def test_divisible_integer_arguments_specialize_like_the_jit(target):
    """A runtime row stride known to be a multiple of 16 (as Triton's JIT specializes such a
    value) lets the host's loads vectorize; unknown, they cannot."""
    L = triton_hosts.cases(target)["reduce"][2]["L"]
    signature, constexprs = {"x_ptr": "*fp32", "y_ptr": "*fp32", "stride": "i32"}, {"BM": 32, "BN": 64, "L": L}
    vector = {"sm90a": "ld.global.v4.b32", "gfx942": "load_dwordx4"}[target]
    plain = hybrid.compile(triton_hosts.h_strided_rows, signature, constexprs, target=target, num_warps=NUM_WARPS)
    aligned = hybrid.compile(triton_hosts.h_strided_rows, signature, constexprs, target=target, num_warps=NUM_WARPS,
                             divisible=("stride", ))
    assert vector in aligned.assembly and vector not in plain.assembly
    assert "tt.divisibility = 16" in aligned.asm["ttgir"].split("%stride")[1].split(")")[0]
    with pytest.raises(TypeError, match="x_ptr"):
        hybrid.compile(triton_hosts.h_strided_rows, signature, constexprs, target=target, divisible=("x_ptr", ))


@pytest.mark.parametrize("target", list(TARGETS))
def test_tma_store_epilogue(target):
    """The matmul example's Gluon epilogue is a TMA store through NVMMA-swizzled shared memory on
    sm90a/sm100a (descriptor made on the device, async-proxy fence, one bulk tensor copy), a plain
    explicit-layout store elsewhere; the Triton mainloop is the same in both."""
    fb = matmul_gluon_epilogue.build(target)
    ttgir = fb.asm["ttgir"]
    assert fb.kernel_entries == 1 and "tt.call" not in ttgir
    tma_ops = ("ttng.tensormap_create", "ttng.fence_async_shared", "ttng.async_tma_copy_local_to_global",
               "ttng.async_tma_store_wait")
    if has_tma(target):
        assert all(op in ttgir for op in tma_ops)
        assert re.search(r"ttg\.local_alloc .*!ttg\.memdesc<64x64xf16, #shared\d*", ttgir)
        assert "#ttg.nvmma_shared<{swizzlingByteWidth = 128" in ttgir
        assert "cp.async.bulk.tensor" in fb.assembly and "fence.proxy.async" in fb.assembly
        assert fb.metadata["global_scratch_size"] >= 128   # the device-made descriptor
    else:
        assert not any(op in ttgir for op in tma_ops)
        assert "tt.store" in ttgir or "buffer_store" in ttgir


@pytest.mark.parametrize("target", ["sm90a", "sm100a"])
def test_warp_specialize_inside_a_gluon_region(built, target):
    """The region forks a one-warp producer (its registers capped at 24) that streams tiles through
    a shared ring under mbarriers; the default partition's sum is the region's result."""
    fb = built("warp_specialized", target)
    ttgir, ptx = fb.asm["ttgir"], fb.assembly
    assert fb.kernel_entries == 1 and "tt.call" not in ttgir
    assert "ttg.warp_specialize" in ttgir and "requestedRegisters = array<i32: 24>" in ttgir
    assert re.search(r"setmaxnreg\.dec\.sync\.aligned\.u32\s+24\b", ptx)
    assert "mbarrier.try_wait" in ptx and "mbarrier.arrive" in ptx
    assert fb.regions[0].shared_bytes >= 2 * 256 * 4   # the two-slot ring


def test_warp_specialized_region_computes_the_sum_in_the_interpreter():
    x = torch.randn(5 * 256)
    y = torch.full((256, ), float("nan"))
    with interpreting(target="sm90a"):
        triton_hosts.h_warp_specialized[(1, )](x, y, 5, BLOCK=256)
    torch.testing.assert_close(y, 2 * x.view(5, 256).sum(0), rtol=1e-5, atol=1e-5)


def test_a_gluon_regions_tensor_memory_load_is_sunk_to_its_use_as_triton_sinks_its_own():
    """mma_handoff on sm100a: the Gluon region's tcgen05 accumulator load, stitched into the Triton
    host, is sunk past the host's address arithmetic for the store (``host_relayout.interleave_tmem``),
    as Triton's own ``make_ttgir`` sinks an all-Triton kernel's, so its 64 registers a thread are
    not held across that arithmetic."""
    from examples import mma_handoff
    ttgir = mma_handoff.build("sm100a").asm["ttgir"]
    body = ttgir[ttgir.index("tt.func public"):]
    assert body.index("ttng.tmem_load") > body.index("tt.splat %c_ptr"), body


def test_a_gluon_call_in_a_loop_without_carried_values_runs_in_the_interpreter_as_compiled():
    kernel, _, constexprs = triton_hosts.cases("sm90a")["row_loop"]
    x, y = torch.randn(3 * 512), torch.zeros(3 * 512)
    with interpreting("sm90a"):
        kernel[(1, )](x, y, 3, num_warps=NUM_WARPS, **constexprs)
    assert torch.equal(y, x + 1.0)
