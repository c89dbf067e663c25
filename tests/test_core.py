"""Gluon hosts calling Triton regions, compiled for every target on the CPU."""
import re

import pytest

import hybrid
from interop.targets import TARGETS
from tests import kernels

pytestmark = pytest.mark.version

MATRIX_INSTRUCTION = {"sm80": "mma.sync", "sm90a": "wgmma.mma_async", "sm100a": "tcgen05.mma",
                      "gfx942": "v_mfma", "gfx950": "v_mfma"}
CASES = ["arange_load", "reduce", "dot", "trans_reshape", "control_flow", "agree", "chain", "fold", "aligned", "void"]
VECTOR_LOAD = {"sm80": "ld.global.v4.b32", "sm90a": "ld.global.v4.b32", "sm100a": "ld.global.v4.b32",
               "gfx942": "load_dwordx4", "gfx950": "load_dwordx4"}


def build(case: str, target: str) -> hybrid.FusedBinary:
    kernel, signature, constexprs = kernels.cases(target)[case]
    return hybrid.compile(kernel, signature, constexprs, target=target, num_warps=kernels.NUM_WARPS)


@pytest.fixture(scope="module")
def built():
    cache: dict = {}

    def get(case: str, target: str) -> hybrid.FusedBinary:
        if (case, target) not in cache:
            cache[case, target] = build(case, target)
        return cache[case, target]

    return get


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("case", CASES)
def test_one_fused_kernel(built, case, target):
    fb = built(case, target)
    assert fb.kernel_entries == 1
    assert "tt.call" not in fb.asm["ttgir"]
    assert "@__hybrid_r" not in fb.asm["ttgir"]       # every placeholder inlined and gone
    assert "tt.func private" not in fb.asm["ttgir"]
    assert "hybrid.in." not in fb.asm["ttgir"] and "hybrid.out." not in fb.asm["ttgir"]   # opaque ports gone
    assert "hybrid.enable" not in fb.asm["ttgir"] and "ub.poison" not in fb.asm["ttgir"]
    assert len(fb.binary) > 0
    assert fb.regions and all(r.language == "triton" for r in fb.regions)


@pytest.mark.parametrize("target", list(TARGETS))
def test_dot_region_uses_matrix_instructions(built, target):
    assert MATRIX_INSTRUCTION[target] in built("dot", target).assembly


@pytest.mark.parametrize("target", list(TARGETS))
def test_dot_result_comes_back_in_its_own_layout(built, target):
    """The region hands back the dot's accumulator layout; the boundary adds no conversion and
    the only one left is the conversion the Gluon author wrote (mma -> their layout)."""
    fb = built("dot", target)
    (out, ) = fb.boundaries
    assert (out.direction, out.conversions, out.reason) == ("out", 0, "layouts agree")
    assert not out.to_layout.startswith("#ttg.blocked")   # the dot's own (mma/mfma) layout
    assert "hybrid.boundary" not in fb.asm["ttgir"]
    (conversion, ) = re.findall(r"ttg\.convert_layout .*", fb.asm["ttgir"])
    assert "#blocked" in conversion.split("->")[-1]


@pytest.mark.parametrize("target", list(TARGETS))
def test_region_result_survives_folding_in_the_host(built, target):
    """The host multiplies and casts the region's result before anything else: if the result's
    placeholder could be folded, the region's load and the multiply would silently vanish."""
    ttgir = built("fold", target).asm["ttgir"]
    assert "arith.mulf" in ttgir and "arith.truncf" in ttgir
    assert "tt.load" in ttgir or "buffer_load" in ttgir


@pytest.mark.parametrize("target", list(TARGETS))
def test_region_sees_the_kernels_pointer_alignment(built, target):
    """The host kernel's argument is 16-byte aligned (its specialization says so); the region,
    lowered on its own, must know it too to load 4 floats at a time, as the unported code would."""
    assert VECTOR_LOAD[target] in built("aligned", target).assembly


@pytest.mark.parametrize("target", list(TARGETS))
def test_region_returning_nothing(built, target):
    """A Triton region without a return value (3.9 types it as ``constexpr None``): its store is
    in the kernel, and it has an inbound boundary and no outbound one."""
    fb = built("void", target)
    assert [b.direction for b in fb.boundaries] == ["in"]
    assert re.search(r"st\.global|global_store|buffer_store", fb.assembly)


@pytest.mark.parametrize("target", list(TARGETS))
def test_agreeing_layouts_cost_nothing(built, target):
    fb = built("agree", target)
    assert [(b.direction, b.conversions, b.reason) for b in fb.boundaries] == [
        ("in", 0, "layouts agree"), ("out", 0, "layouts agree")]
    assert "ttg.convert_layout" not in fb.asm["ttgir"]


@pytest.mark.parametrize("target", list(TARGETS))
def test_conversion_chain_folds(built, target):
    """Host converts L1 -> L2, region wants L1: both conversions disappear."""
    fb = built("chain", target)
    inbound = fb.boundaries[0]
    assert (inbound.direction, inbound.conversions) == ("in", 0)
    assert inbound.reason.startswith("folded")
    assert "ttg.convert_layout" not in fb.asm["ttgir"]


def test_regions_in_loops_branches_and_per_call_specialization(built):
    fb = built("control_flow", "sm90a")
    assert [(r.function, r.specialization.split("(")[1].split(",")[0]) for r in fb.regions] == [
        ("t_scale", "<['512']"), ("t_outer", "<['512']"), ("t_scale", "<['512']")]
    assert "fp32" in fb.regions[0].specialization and "int32" in fb.regions[2].specialization
    lines = [r.call_site.line for r in fb.regions]
    assert lines == sorted(lines) and len(set(lines)) == 3
    ttgir = fb.asm["ttgir"]
    assert "scf.for" in ttgir and "scf.if" in ttgir
    assert "tt.func private" not in ttgir and ttgir.count("tt.func public") == 1


def test_boundary_records_are_complete(built):
    fb = built("reduce", "sm80")
    inbound, outbound = fb.boundaries
    assert inbound.function == "t_row_max_sum" and inbound.shape == (32, 64) and inbound.dtype == "f32"
    assert outbound.shape == (32, ) and outbound.direction == "out"
    assert (inbound.value, outbound.value) == ("x", "return[0]")
    assert set(inbound.to_json()) == {"region", "function", "direction", "index", "value", "shape", "dtype",
                                      "from_layout", "to_layout", "conversions", "reason", "handoff", "movement",
                                      "shared_bytes", "barriers", "fences", "shuffles", "cost"}
    assert inbound.fences == outbound.fences == 0 and outbound.handoff == inbound.handoff == "convert"
    # the region reduces the tile in the host's layout and returns its slice: nothing to convert
    assert (inbound.reason, inbound.conversions, inbound.cost) == ("layouts agree", 0, 0)
    assert outbound.to_layout.startswith("#ttg.slice<{dim = 1, parent = #ttg.blocked<{sizePerThread = [1, 4]")


def test_gluon_layouts_survive_unchanged(built):
    """The host's explicit layout is still in the final ttgir, exactly as written."""
    fb = built("dot", "sm90a")
    assert "#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>" \
        in fb.asm["ttgir"]


def test_region_is_lowered_by_triton_passes(built):
    """Triton's own pipeline ran on the region: the sm90 dot became an async wgmma."""
    ttgir = built("dot", "sm90a").asm["ttgir"]
    assert "ttng.warp_group_dot" in ttgir
    assert "ttg.local_alloc" in ttgir or "ttg.async_copy_global_to_local" in ttgir


def test_metadata_reads_like_tritons(built):
    """``fb.metadata`` answers as Triton's ``CompiledKernel.metadata`` does (attributes, fields,
    ``_asdict``), and as a dict (keys, ``get``, JSON); the regions' ttir Triton's carries is in
    ``fb.asm`` instead."""
    import json

    from interop.entry.stages_hook import TTIR_KEY

    fb = built("reduce", "sm90a")
    triton_md = fb.kernel.metadata
    assert getattr(triton_md, TTIR_KEY) == fb.asm["ttir"]
    assert fb.metadata._fields == tuple(f for f in triton_md._fields if f != TTIR_KEY)
    assert fb.metadata._asdict() == {k: v for k, v in triton_md._asdict().items() if k != TTIR_KEY}
    for name in ("shared", "num_warps", "name", "target"):
        assert getattr(fb.metadata, name) == getattr(triton_md, name) == fb.metadata[name]
    assert fb.metadata.name == fb.name and fb.metadata.get("num_warps") == kernels.NUM_WARPS
    assert hasattr(fb.metadata, "no_such_field") is False
    with pytest.raises(AttributeError):
        fb.metadata.shared = 0
    assert json.loads(json.dumps(fb.summary()))["shared_bytes"] == fb.metadata.shared
