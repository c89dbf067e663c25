"""Triton kernels calling Gluon functions, compiled for every target on the CPU."""
import re

import pytest

import hybrid
from hybrid.targets import TARGETS
from tests import triton_hosts
from tests.kernels import NUM_WARPS

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
@pytest.mark.parametrize("case", ["reduce", "smem", "control_flow"])
def test_one_fused_kernel(built, case, target):
    fb = built(case, target)
    ttgir = fb.asm["ttgir"]
    assert fb.kernel_entries == 1 and ttgir.count("tt.func public") == 1
    assert "tt.call" not in ttgir and "tt.func private" not in ttgir
    assert "hybrid.gluon." not in ttgir and "hybrid.in." not in ttgir and "elementwise_inline_asm" not in ttgir
    assert fb.regions and fb.regions[0]["language"] == "gluon"


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
    assert [(r["function"], r["language"]) for r in fb.regions] == [
        ("g_add_one", "gluon"), ("g_scale_then_triton", "gluon"), ("t_scale", "triton")]
    ttgir = fb.asm["ttgir"]
    assert "scf.for" in ttgir and "scf.if" in ttgir


def test_regions_report_their_own_shared_memory(built):
    """The Gluon region stages a 32x32 fp32 tile: that is what it allocates itself."""
    (region, ) = built("smem", "sm90a").regions
    assert region["shared_bytes"] == 32 * 32 * 4
    assert all(r["shared_bytes"] == 0 for r in built("reduce", "sm90a").regions)


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
