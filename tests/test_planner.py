"""The boundary planner (``interop.boundaries.planner``): its choice, its rewrite and its records, on the
boundary cases of ``bench/boundaries.py`` compiled for real targets."""
import re

import pytest

import hybrid
from bench import boundary_cases

TWO_READERS = "64x64 fp32, warps by column, 2 readers"
ONE_READER = "64x64 fp32, columns, 1 reader"


@pytest.fixture(scope="module")
def build():
    built: dict = {}

    def get(name: str, target: str, mode: str) -> hybrid.FusedBinary:
        if (name, target, mode) not in built:
            (case, ) = boundary_cases.cases(target, [name])
            built[name, target, mode] = boundary_cases.build(case, target, mode)
        return built[name, target, mode]

    return get


def tagged(ttgir: str, op: str, tag: str) -> int:
    return len(re.findall(rf'{op} %\S+ \{{hybrid\.boundary = "{tag}"\}}', ttgir))


def cost(fb) -> int:
    return sum(b.cost for b in fb.boundaries)


@pytest.mark.parametrize("target", ["sm80", "sm90a", "gfx942"])
def test_the_choice_is_the_cheaper_modelled_way_that_takes_no_more_shared_memory(build, target):
    """A handoff that would raise the kernel's shared memory above Triton's conversions (which
    stage the tile in rounds) is not taken, however cheap its model; otherwise the cheaper way is."""
    costs = {mode: cost(build(TWO_READERS, target, mode)) for mode in ("auto", "convert", "shared")}
    smem = {mode: build(TWO_READERS, target, mode).metadata["shared"] for mode in ("convert", "shared")}
    expected = costs["convert"] if smem["shared"] > smem["convert"] else min(costs["convert"], costs["shared"])
    assert costs["auto"] == expected > 0, (costs, smem)
    handed = [b for b in build(TWO_READERS, target, "auto").boundaries if b.handoff == "shared"]
    assert bool(handed) == (costs["auto"] == costs["shared"] < costs["convert"]), (costs, smem)


def test_a_value_two_consumers_need_in_shared_memory_is_written_once(build):
    """sm90a: the result crosses back in two layouts, both through shared memory. Triton's two
    conversions move it in rounds with a barrier each side; the handoff stores it once, waits
    once and both consumers load their layout. It keeps the whole tile in shared memory, more
    than Triton's rounds take, so ``auto`` keeps the conversions and ``shared`` asks for it."""
    auto, convert = build(TWO_READERS, "sm90a", "shared"), build(TWO_READERS, "sm90a", "convert")
    assert auto.metadata["shared"] > convert.metadata["shared"]
    assert [b.handoff for b in build(TWO_READERS, "sm90a", "auto").boundaries if b.direction == "out"] == ["convert"]
    (out, ) = [b for b in auto.boundaries if b.direction == "out"]
    assert (out.handoff, out.movement, out.barriers, out.conversions) == ("shared", "shared", 1, 0)
    assert out.shared_bytes == 64 * 64 * 4 and "2 consumer(s)" in out.reason
    assert "planned swizzle" in out.reason and out.to_layout.startswith("#ttg.blocked")   # what the host gets
    ttgir = auto.asm["ttgir"]
    assert tagged(ttgir, "ttg.local_alloc", "0:out:0") == 1 and tagged(ttgir, "ttg.local_load", "0:out:0") == 2
    assert tagged(ttgir, "ttg.convert_layout", "0:out:0") == 0
    assert auto.metadata["shared"] >= out.shared_bytes
    assert auto.assembly.count("bar.sync") < convert.assembly.count("bar.sync")
    (kept, ) = [b for b in convert.boundaries if b.direction == "out"]
    assert kept.handoff == "convert" and kept.conversions == 2 and kept.barriers > 2
    assert tagged(convert.asm["ttgir"], "ttg.local_alloc", "0:out:0") == 0


def test_forcing_shared_hands_off_every_conversion_that_moves_data(build):
    convert, shared = build(ONE_READER, "sm90a", "convert"), build(ONE_READER, "sm90a", "shared")
    assert [b.movement for b in convert.boundaries] == ["shared", "shared"]   # the tile goes to columns and back
    for kept, handed in zip(convert.boundaries, shared.boundaries):
        assert (kept.direction, kept.index, kept.handoff, handed.handoff) == (handed.direction, handed.index,
                                                                              "convert", "shared")
        assert handed.shared_bytes == 64 * 64 * 4 and handed.barriers == 1 and handed.conversions == 0
    assert "ttg.convert_layout" not in shared.asm["ttgir"]


def test_compile_argument_wins_over_an_enclosing_mode_and_a_block_is_the_default(build):
    """``hybrid.compile(boundaries=...)`` wins over ``hybrid.boundary_mode(...)`` around it;
    given none, the compile takes the block's mode."""
    (case, ) = boundary_cases.cases("sm90a", [ONE_READER])
    with hybrid.boundary_mode("shared"):
        given = boundary_cases.build(case, "sm90a", "convert")
        defaulted = hybrid.compile(boundary_cases.h_boundary, case["signature"], case["constexprs"], target="sm90a",
                                   num_warps=boundary_cases.NUM_WARPS)
    assert given.binary == build(ONE_READER, "sm90a", "convert").binary
    assert defaulted.binary == build(ONE_READER, "sm90a", "shared").binary != given.binary


def test_an_unknown_mode_names_the_ones_there_are():
    (case, ) = boundary_cases.cases("sm90a", [ONE_READER])
    with pytest.raises(ValueError, match="expected one of auto, convert, shared"):
        boundary_cases.build(case, "sm90a", "fastest")


def test_a_tile_triton_converts_in_rounds_is_not_handed_off_for_more_shared_memory():
    """mma_handoff on sm90a: the wgmma result (128x64 fp32, 32 KiB) goes back to the Triton host's
    store. Triton converts it in rounds through half that scratch, as the all-Triton kernel does
    for its own store; a handoff would keep the whole tile in shared memory, so ``auto`` keeps
    Triton's conversion (the kernel takes no more shared memory for it than all-Triton)."""
    from examples import mma_handoff
    fb = mma_handoff.build("sm90a")
    (out, ) = [b for b in fb.boundaries if b.direction == "out"]
    tile = 128 * 64 * 4
    assert out.handoff == "convert" and "rounds" in out.reason and 0 < out.shared_bytes < tile, out
    assert fb.metadata["shared"] < tile + sum(b.shared_bytes for b in fb.boundaries if b.direction == "in"), fb.metadata
