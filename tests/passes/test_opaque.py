"""The placeholder ops a region crosses Triton's passes with (``stitching/opaque.py``): its ports
found by their markers in a lowered region (``find``), and an opaque flag replaced by a constant
(``stitch.set_flags``) so that the branch on it folds."""
import pytest

from interop.ir.canonicalize import canonicalize
from interop.stitching import opaque, stitch
from tests.passes.modules import LANES, blocked, conditions, module_text, parsed


def layouts(target: str) -> dict[str, str]:
    lanes = LANES[target]
    return {"row": blocked([1], [lanes], [4], [0]), "vec": blocked([4], [lanes], [4], [0])}


def lowered(target: str) -> str:
    """A region as its tt pipeline leaves it: input 0 made by a producer (twice: a pass duplicated it
    for a second layout), result 0 converted before its sink, result 1 sunk as it is."""
    return module_text(target, layouts(target), '''  tt.func public @region(%x: !tt.ptr<f32>) {
    %0 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32, #row>
    %1 = tt.elementwise_inline_asm "hybrid.in.0" {constraints = "=r,r", packed_element = 1 : i32, pure = true} %0 : tensor<256xi32, #row> -> tensor<256xf32, #row>
    %2 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32, #vec>
    %3 = tt.elementwise_inline_asm "hybrid.in.0" {constraints = "=r,r", packed_element = 1 : i32, pure = true} %2 : tensor<256xi32, #vec> -> tensor<256xf32, #vec>
    %4 = ttg.convert_layout %3 : tensor<256xf32, #vec> -> tensor<256xf32, #row>
    %5 = arith.addf %1, %4 : tensor<256xf32, #row>
    %6 = ttg.convert_layout %5 : tensor<256xf32, #row> -> tensor<256xf32, #vec>
    %7 = tt.elementwise_inline_asm "hybrid.enable" {constraints = "=r", packed_element = 1 : i32, pure = true} -> i1
    scf.if %7 {
      %8 = tt.elementwise_inline_asm "hybrid.out.0" {constraints = "=r,r", packed_element = 1 : i32, pure = false} %6 : tensor<256xf32, #vec> -> tensor<256xf32, #vec>
      %9 = tt.elementwise_inline_asm "hybrid.out.1" {constraints = "=r,r", packed_element = 1 : i32, pure = false} %5 : tensor<256xf32, #row> -> tensor<256xf32, #row>
    }
    tt.return
  }
''')


@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
def test_find_gives_each_ports_markers_and_the_conversion_before_a_sink(target):
    module, _, _ = parsed(lowered(target), target)
    ports = opaque.find(module)
    assert {k: len(found) for k, found in ports.producers.items()} == {0: 2}
    assert sorted(ports.sinks) == [0, 1] and list(ports.sink_conversions) == [0]
    assert ports.sink_conversions[0].get_result(0).id() == ports.sinks[0].get_operand(0).id()
    assert [opaque.marker_of(op) for op in opaque.markers(module, (opaque.ENABLE, ))] == ["hybrid.enable"]


def test_a_flag_set_false_leaves_the_sinks_in_a_branch_never_taken():
    module, context, _ = parsed(lowered("sm90a"), "sm90a")
    stitch.set_flags(module, opaque.ENABLE, False, context)
    canonicalize(module, context)
    assert conditions(module) <= {"%false"} and not opaque.markers(module, (opaque.ENABLE, ))
