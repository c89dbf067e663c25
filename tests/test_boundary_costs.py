"""Boundaries that cost nothing where the all-Triton kernel pays nothing (issue 33's fixed rows).

A Gluon host hands a Triton loop its accumulators (``gl.zeros``, ``gl.full``) and pointer tiles:
the constants are made in the loop's layouts (no conversion, no shared memory), the pointers
pipeline (``axis_hints``). Each test pins the conversions and shared memory of its row.
"""
import re
import sys
from pathlib import Path

import pytest
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid
from examples.layouts import tile_layout
from examples.mma_handoff import b_tile, store_c
from interop.instrumentation.resources import instructions
from interop.triton import compat

pytestmark = [pytest.mark.version, pytest.mark.slow]

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))


@triton.jit
def accumulate(acc, a_ptr, b_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc)
    return acc


@hybrid.jit
@gluon.jit
def zero_acc_host(a_ptr, b_ptr, c_ptr, K, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr, L: gl.constexpr):
    acc = accumulate(gl.zeros([BM, BN], gl.float32, layout=L) + 0.5, a_ptr, b_ptr, K, BM, BN, BK)
    rm = gl.arange(0, BM, layout=gl.SliceLayout(1, L))
    rn = gl.arange(0, BN, layout=gl.SliceLayout(0, L))
    gl.store(c_ptr + rm[:, None] * BN + rn[None, :], gl.convert_layout(acc, L))


SIGNATURE = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "K": "i32"}
TILES = {"BM": 64, "BN": 64, "BK": 32}


@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
def test_a_constant_accumulator_enters_a_triton_loop_without_conversion(target):
    fb = hybrid.compile(zero_acc_host, SIGNATURE, {**TILES, "L": tile_layout(target, 4)}, target, num_warps=4)
    acc = next(b for b in fb.boundaries if b.direction == "in" and b.value == "acc")
    assert acc.conversions == 0 and acc.shared_bytes == 0
    assert "splat constant" in acc.reason
    # made in the loop's own (MMA) layout, with the host's value: no f32 tile goes through shared memory
    ttgir = fb.asm["ttgir"]
    assert "arith.constant dense<5.000000e-01> : tensor<64x64xf32, #mma>" in ttgir
    assert "x64xf32, #shared" not in ttgir
    assert ttgir.count("ttg.convert_layout") == 1   # the host's own, before its store


@pytest.mark.parametrize("target", ["sm80", "sm90a", "sm100a", "gfx942", "gfx950"])
def test_attention_inner_loop_in_a_gluon_host_costs_what_all_triton_costs(target):
    """bench/parity.py's attention_inner_loop row: the K/V loop as a Triton region under a Gluon
    host whose layouts are 16-byte rows (as Triton loads them), storing from the loop's MFMA
    layout on AMD (as Triton does there). On gfx942 Triton loads V in a [2, 8] layout its
    in-thread transpose chose late: the region's conversion of the V pointer tile (every
    iteration) becomes the host's pointer arithmetic made in that layout (``remat``)."""
    import parity_ports

    builds = parity_ports._attention(target)
    hybrid_build, triton_build = builds["hybrid"], builds["triton"]
    assert sum(b.conversions for b in hybrid_build.boundaries) == 0
    assert hybrid_build.metadata.shared == triton_build.metadata.shared
    ratio = instructions(hybrid_build.asm) / instructions(triton_build.asm)
    assert ratio <= 1.02, ratio
    # m_i and l_i start as constants in the slices of the loop's MMA layout
    ttgir = hybrid_build.asm["ttgir"]
    assert "arith.constant dense<0xFF800000> : tensor<128xf32, #ttg.slice<{dim = 1, parent = #" in ttgir
    # no pointer tile is converted (all-Triton converts none either)
    pointer_conversions = r"ttg\.convert_layout %\S+ (?:\{[^}]*\} )?: tensor<\d+x\d+x!tt\.ptr"
    assert len(re.findall(pointer_conversions, ttgir)) == len(re.findall(pointer_conversions, triton_build.asm["ttgir"]))
    v_ptrs = next(b for b in hybrid_build.boundaries if b.value == "v_ptrs")
    assert v_ptrs.reason == ("index arithmetic, made again in the layout wanted (no conversion)"
                             if target == "gfx942" else "layouts agree"), v_ptrs


@pytest.mark.skipif((3, 7) <= compat.TRITON_MAJOR_MINOR < (3, 9), reason="3.7 keeps the Gluon region in its scf.if; "
                    "3.8 lays the host's store out in the region's layout (the conversion moves past the cast, and stays)")
@pytest.mark.parametrize("target", ["sm80", "sm90a"])
def test_a_gluon_activation_result_is_converted_once_after_the_hosts_cast(target):
    """bench/parity.py's matmul_activation, Triton host: the Gluon leaky_relu returns the MMA
    tile; the host casts it to fp16 and stores. The boundary's conversion is moved past the cast
    (3.9: into the host's own conversion for the store; 3.6, whose host has none: just before
    the store): one fp16 conversion, the all-Triton kernel's."""
    if target == "sm90a" and compat.TRITON_MAJOR_MINOR < (3, 7):
        pytest.skip("Triton 3.6 converts the fp16 tile in 4 rounds; the planner hands it off through a 32 KiB "
                    "buffer instead")
    import parity_ports

    port = next(p for p in parity_ports.PORTS if p.name == "matmul_activation" and p.direction == "triton->gluon")
    builds = port.builds(target)
    fb, pure = builds["hybrid"], builds["triton"]
    assert fb.metadata.shared == pure.metadata.shared
    result, = [b for b in fb.boundaries if b.direction == "out"]
    assert "moved past the cast" in result.reason and result.conversions == (compat.TRITON_MAJOR_MINOR < (3, 7)), result
    assert re.search(r"arith\.truncf %\S+ : tensor<\d+x\d+xf32, #mma> to tensor<\d+x\d+xf16, #mma>", fb.asm["ttgir"])
    assert fb.asm["ttgir"].count("ttg.convert_layout") == pure.asm["ttgir"].count("ttg.convert_layout")
    assert instructions(fb.asm) == instructions(pure.asm)


@gluon.jit
def rows_in(x, L: gl.constexpr):
    return gl.convert_layout(x * 2.0, L)


@hybrid.jit
@triton.jit
def narrowing_host(x_ptr, y_ptr, BM: tl.constexpr, BN: tl.constexpr, L: tl.constexpr):
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    x = tl.load(x_ptr + rows[:, None] * BN + cols[None, :])
    y = rows_in(x, L).to(tl.float16)
    tl.store(y_ptr + rows, tl.sum(y, axis=1))


@pytest.mark.parametrize("boundaries", ["convert", "auto"])
def test_the_hosts_code_after_a_call_takes_the_tile_as_returned(boundaries):
    """The Gluon function returns its author's layout; the host casts to fp16 and reduces. The
    call's result is an anchor for Triton's layout passes (``stitching/anchors``), as the tile
    load of an all-Triton kernel is: the cast and the reduction run in the returned layout, and
    nothing crosses the boundary but the tile (it was converted back, as fp16 after the cast)."""
    layout = gl.BlockedLayout([1, 1], [1, 32], [4, 1], [1, 0])
    fb = hybrid.compile(narrowing_host, {"x_ptr": "*fp32", "y_ptr": "*fp16"}, {"BM": 64, "BN": 64, "L": layout},
                        "sm90a", num_warps=4, boundaries=boundaries)
    result, = [b for b in fb.boundaries if b.direction == "out"]
    assert result.conversions == 0 and "the host takes the region's layout" in result.reason, result
    ttgir = fb.asm["ttgir"]
    returned = re.search(r"^(#\w+) = #ttg\.blocked<\{sizePerThread = \[1, 1\], threadsPerWarp = \[1, 32\], "
                         r"warpsPerCTA = \[4, 1\]", ttgir, re.M).group(1)
    assert re.search(rf"arith\.truncf %\S+ : tensor<64x64xf32, {returned}> to tensor<64x64xf16, {returned}>", ttgir)
    assert not re.findall(r"ttg\.convert_layout %\S+ : tensor<64x64xf16", ttgir)


def test_a_wgmma_a_operand_handed_over_in_registers_takes_what_all_triton_takes():
    """bench/parity.py's mma_handoff_a_operand row on sm90a: mma_handoff with the wgmma's A operand
    declared in registers (``DotOperandLayout``) where all-Triton keeps it, B in NVMMA shared
    memory. The kernel's shared memory is all-Triton's (the A conversion and the result's return
    to the store each go through scratch in rounds, as all-Triton's own do; no 32 KiB buffer for
    the result), instructions within 2%; its two boundary conversions are those two."""
    import parity_ports

    builds = parity_ports._mma_a_operand("sm90a")
    hybrid_build, triton_build = builds["hybrid"], builds["triton"]
    assert hybrid_build.metadata.shared == triton_build.metadata.shared
    assert instructions(hybrid_build.asm) / instructions(triton_build.asm) <= 1.02
    a_in, b_in, out = sorted(hybrid_build.boundaries, key=lambda b: (b.direction, b.index))
    assert (a_in.handoff, a_in.conversions, b_in.handoff, out.handoff, out.conversions) == (
        "convert", 1, "shared", "convert", 1)
    assert "#ttg.dot_op" in a_in.to_layout


@pytest.mark.parametrize("target", ["sm80", "sm90a", "gfx942"])
def test_a_gluon_load_stage_doing_what_a_descriptor_load_does_costs_what_all_triton_costs(target):
    """bench/parity.py's tma_stage rows: the Gluon stage loads as Triton lowers a descriptor load
    (TMA into shared memory on sm90a, into registers elsewhere), so the kernel takes the shared
    memory and instructions of the all-Triton kernel loading through a descriptor."""
    from examples import tma_stage

    hybrid_build, triton_build = tma_stage.build(target), tma_stage.build_triton(target)
    assert hybrid_build.metadata.shared <= triton_build.metadata.shared
    assert (hybrid_build.metadata.shared == 0) == (target != "sm90a")
    assert sum(b.conversions for b in hybrid_build.boundaries) == 0
    assert instructions(hybrid_build.asm) / instructions(triton_build.asm) <= 1.02


@pytest.mark.parametrize("target", ["sm80", "gfx942"])
def test_gluon_row_statistics_in_the_layout_they_arrive_in_cost_what_all_triton_costs(target):
    """bench/parity.py's softmax_gluon_stats_host_layout row: the Gluon statistics written over the
    layout the Triton host hands over (no author's conversion) return in its slices, so nothing
    is converted back and the kernel is all-Triton's, instruction for instruction."""
    import parity_ports

    builds = parity_ports._softmax_host_layout_stats(target)
    hybrid_build, triton_build = builds["hybrid"], builds["triton"]
    assert sum(b.conversions for b in hybrid_build.boundaries) == 0
    assert hybrid_build.metadata.shared == triton_build.metadata.shared
    assert instructions(hybrid_build.asm) == instructions(triton_build.asm)


def _amd_epilogue_builds(row: str, target: str) -> dict:
    """The hybrid and all-Triton builds of ``row`` (bench/parity.py's name and direction)."""
    import parity_ports

    from examples import attention, matmul, matmul_gluon_epilogue, tile_matmul

    examples = {"attention triton->gluon": attention, "matmul triton->gluon": matmul,
                "matmul_gluon_epilogue triton->gluon": matmul_gluon_epilogue, "tile_matmul gluon->triton": tile_matmul}
    if row in examples:
        return {"hybrid": examples[row].build(target), "triton": examples[row].build_triton(target)}
    name, direction = row.split()
    return next(p for p in parity_ports.PORTS if p.name == name and p.direction == direction).builds(target)


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
@pytest.mark.parametrize("row", ["attention triton->gluon", "matmul triton->gluon", "matmul_gluon_epilogue triton->gluon",
                                 "tile_matmul gluon->triton", "matmul_activation gluon->triton"])
def test_an_epilogue_on_amd_stores_from_the_mfma_layout_as_triton_does(row, target):
    """The hand-written Gluon epilogues store the dot's tile from the MFMA layout it arrives in on
    AMD (``examples.layouts.stores_from_dot_layout``), where they converted it to rows first (up
    to 64 KiB of shared memory for matmul's 128x256 tile, and 1.07-1.15x the instructions), as
    Triton's AMD backend does with its own dot's. (A Triton host storing a Gluon region's MFMA
    result: ``host_relayout``, the next test.)"""
    if row == "matmul_activation gluon->triton" and target == "gfx942" and compat.TRITON_MAJOR_MINOR < (3, 7):
        pytest.skip("Triton 3.6: this kernel's two Triton regions do not stitch on gfx942 ('arith.cmpf' op using "
                    "value defined outside the region, from Gluon's canonicalizer); a RegionError, known")
    builds = _amd_epilogue_builds(row, target)
    fb, pure = builds["hybrid"], builds["triton"]
    assert sum(b.conversions for b in fb.boundaries) == 0
    assert fb.metadata.shared <= pure.metadata.shared
    ratio = instructions(fb.asm) / instructions(pure.asm)
    assert ratio <= 1.02, ratio
    assert re.search(r"tt\.store [^\n]*: tensor<\d+x\d+x!tt\.ptr<\w+>, #mma>", fb.asm["ttgir"])


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_a_triton_host_stores_straight_from_its_gluon_regions_mfma_layout(target):
    """bench/parity.py's matmul_activation, Triton host, on AMD: the Gluon leaky_relu returns the
    MFMA tile; the host, laid out again around the call (``host_relayout``), stores straight from
    it as all-Triton does (AMD's optimize_epilogue), where it used to convert to a blocked layout."""
    import parity_ports

    port = next(p for p in parity_ports.PORTS if p.name == "matmul_activation" and p.direction == "triton->gluon")
    builds = port.builds(target)
    fb, pure = builds["hybrid"], builds["triton"]
    assert sum(b.conversions for b in fb.boundaries) == 0
    assert fb.metadata.shared <= pure.metadata.shared
    assert _store_layouts(fb.asm["ttgir"]) == _store_layouts(pure.asm["ttgir"])
    assert fb.asm["ttgir"].count("ttg.convert_layout") == pure.asm["ttgir"].count("ttg.convert_layout")
    assert instructions(fb.asm) <= 1.02 * instructions(pure.asm)


def _store_layouts(ttgir: str) -> list[str]:
    """The layout each ``tt.store`` of ``ttgir`` stores in, spelled out (aliases differ between modules)."""
    aliases = dict(re.findall(r"^(#\w+) = (#.*)$", ttgir, re.MULTILINE))
    return [aliases.get(alias, alias) for alias in re.findall(r"tt\.store .* : tensor<[^,]+, (#\w+)>", ttgir)]


@gluon.jit
def doubled_in(x, L: gl.constexpr):
    """Converts to ``L`` and back: Triton's RemoveLayoutConversions would fold both away."""
    y = gl.convert_layout(x, L) * 2.0
    return gl.convert_layout(y, x.type.layout)


@hybrid.jit
@triton.jit
def doubling_host(x_ptr, y_ptr, BM: tl.constexpr, BN: tl.constexpr, L: tl.constexpr):
    offsets = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(y_ptr + offsets, doubled_in(tl.load(x_ptr + offsets), L).to(tl.float16))


@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
def test_the_hosts_second_layout_round_leaves_the_gluon_regions_ops_as_written(target):
    """``host_relayout`` runs Triton's layout passes on the host with every Gluon body moved out
    of their sight: the region's function, conversions included, is the same op for op after."""
    from interop.lowering import host_relayout
    from interop.stitching import runner

    seen, hidden = [], {}

    def hiding(state, module):
        hidden["bodies"] = {name: module.get_function(name).str_nodebug() for name in state.compile.gluon.symbols}
        hidden["host"] = module.get_function("doubling_host").str_nodebug()

    def restored(state, module):
        seen.append((hidden["bodies"], {name: module.get_function(name).str_nodebug()
                                        for name in state.compile.gluon.symbols},
                     hidden["host"] != module.get_function("doubling_host").str_nodebug()))

    warp = 64 if target.startswith("gfx") else 32
    layout = gl.BlockedLayout([1, 1], [1, warp], [4, 1], [1, 0])
    with runner.observing(runner.Observer(host_relayout.hide_bodies, hiding, before=True)), \
            runner.observing(runner.Observer(host_relayout.restore_bodies, restored)):
        hybrid.compile(doubling_host, {"x_ptr": "*fp32", "y_ptr": "*fp16"}, {"BM": 64, "BN": 64, "L": layout},
                       target, num_warps=4)
    (before, after, host_changed), = seen
    assert before == after
    assert all(body.count("ttg.convert_layout") == 2 for body in after.values())
    assert host_changed   # the passes did run on the host (its boundary scf.if folded at least)


@gluon.jit
def scaled_rows_gluon(a_ptr, s_ptr, M, pid_m, BM: gl.constexpr, K: gl.constexpr, L: gl.constexpr):
    """examples/mma_handoff.py's scaled_rows, written in Gluon in the layout ``L``."""
    rm = pid_m * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, L))
    rk = gl.arange(0, K, layout=gl.SliceLayout(0, L))
    a = gl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=rm[:, None] < M, other=0.0)
    s = gl.load(s_ptr + rm, mask=rm < M, other=0.0)
    return (a.to(gl.float32) * s[:, None]).to(gl.float16)


@hybrid.jit
@triton.jit
def gluon_operand_host(a_ptr, s_ptr, b_ptr, c_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, K: tl.constexpr,
                       L: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a = scaled_rows_gluon(a_ptr, s_ptr, M, pid_m, BM, K, L)
    store_c(c_ptr, tl.dot(a, b_tile(b_ptr, N, pid_n, BN, K)), M, N, pid_m, pid_n, BM, BN)


@pytest.mark.parametrize("target", ["sm80", "gfx942"])
def test_a_gluon_result_staged_for_a_dot_frees_its_buffer_before_the_other_operands(target):
    """The host stages the region's tile into shared memory for ``tl.dot`` as it came (Triton's
    ``alloc(convert(x)) -> alloc(x)``, here in the host's second layout round) and loads it right
    after the store, so its buffer is free before the B operand's: all-Triton's shared memory."""
    from examples import mma_handoff

    sizes = {k: mma_handoff.constexprs(target)[k] for k in ("BM", "BN", "K")}
    fb = hybrid.compile(gluon_operand_host, mma_handoff.SIGNATURE, {**sizes, "L": tile_layout(target, 4)}, target,
                        num_warps=mma_handoff.NUM_WARPS, divisible=mma_handoff.DIVISIBLE)
    pure = mma_handoff.build_triton(target)
    result, = [b for b in fb.boundaries if b.direction == "out"]
    assert result.conversions == 0 and "stored into the host's shared buffer" in result.reason, result
    assert fb.metadata.shared <= pure.metadata.shared
