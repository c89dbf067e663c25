"""Entry conversions made in place (the Gluon host's pass ``make entry conversions in place``): a Gluon port's
``hybrid.convert_in`` of its caller's ``gl.zeros`` and pointer arithmetic made in the layout it
wants, a loaded tile converted as written (its mark dropped), once the port is inlined into its
Gluon kernel; a Triton host's entry conversions left by the stitch's folds untagged
(``untag entry conversions``)."""
import pytest

from tests.passes.modules import LANES, blocked, count, module_text, ops, parsed, printed, run_pass, stitch_of

TARGETS = ["sm90a", "gfx942"]


def layouts(target: str) -> dict[str, str]:
    lanes = LANES[target]
    return {"caller": blocked([1, 1], [lanes // 8, 8], [4, 1], [1, 0]),
            "wanted": blocked([1, 4], [lanes // 16, 16], [4, 1], [1, 0])}


def ported(target: str) -> str:
    """A kernel passing an accumulator of zeros, a pointer tile and a loaded tile to its port, which
    takes each with ``convert_in`` (tagged ``entry:<id>``) and sums them into a store."""
    return module_text(target, layouts(target), '''  tt.func public @kernel(%x: !tt.ptr<f32>, %y: tensor<64x64x!tt.ptr<f32>, #wanted>) {
    %zeros = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #caller>
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #ttg.slice<{dim = 1, parent = #caller}>>
    %r2 = tt.expand_dims %r {axis = 1 : i32} : tensor<64xi32, #ttg.slice<{dim = 1, parent = #caller}>> -> tensor<64x1xi32, #caller>
    %rb = tt.broadcast %r2 : tensor<64x1xi32, #caller> -> tensor<64x64xi32, #caller>
    %p = tt.splat %x : !tt.ptr<f32> -> tensor<64x64x!tt.ptr<f32>, #caller>
    %ptrs = tt.addptr %p, %rb : tensor<64x64x!tt.ptr<f32>, #caller>, tensor<64x64xi32, #caller>
    %tile = tt.load %ptrs : tensor<64x64x!tt.ptr<f32>, #caller>
    tt.call @port(%zeros, %ptrs, %tile, %y) : (tensor<64x64xf32, #caller>, tensor<64x64x!tt.ptr<f32>, #caller>, tensor<64x64xf32, #caller>, tensor<64x64x!tt.ptr<f32>, #wanted>) -> ()
    tt.return
  }
  tt.func private @port(%acc: tensor<64x64xf32, #caller>, %ptrs: tensor<64x64x!tt.ptr<f32>, #caller>, %tile: tensor<64x64xf32, #caller>, %y: tensor<64x64x!tt.ptr<f32>, #wanted>) {
    %0 = ttg.convert_layout %acc {hybrid.boundary = "entry:1"} : tensor<64x64xf32, #caller> -> tensor<64x64xf32, #wanted>
    %1 = ttg.convert_layout %ptrs {hybrid.boundary = "entry:2"} : tensor<64x64x!tt.ptr<f32>, #caller> -> tensor<64x64x!tt.ptr<f32>, #wanted>
    %2 = ttg.convert_layout %tile {hybrid.boundary = "entry:3"} : tensor<64x64xf32, #caller> -> tensor<64x64xf32, #wanted>
    %3 = tt.load %1 : tensor<64x64x!tt.ptr<f32>, #wanted>
    %4 = arith.addf %0, %3 : tensor<64x64xf32, #wanted>
    %5 = arith.addf %4, %2 : tensor<64x64xf32, #wanted>
    tt.store %y, %5 : tensor<64x64x!tt.ptr<f32>, #wanted>
    tt.return
  }
''')


@pytest.mark.ir_pass("make entry conversions in place")
@pytest.mark.parametrize("target", TARGETS)
def test_a_constant_and_a_pointer_tile_are_made_in_the_wanted_layout_and_a_loaded_tile_converted(target):
    module, context, _ = parsed(ported(target), target)
    run_pass(stitch_of(context, target, "gluon"), module, "make entry conversions in place")
    body = printed(module, layouts(target))
    assert count(module, "tt.call") == 0   # inlined first
    conversion, = ops(module, "ttg.convert_layout")
    assert conversion.get_operand(0).id() == ops(module, "tt.load")[0].get_result(0).id()   # the loaded tile
    assert conversion.get_str_attr("hybrid.boundary") == ""   # a plain conversion from here on
    assert "arith.constant dense<0.000000e+00> : tensor<64x64xf32, #wanted>" in body
    assert "tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #ttg.slice<{dim = 1, parent = " \
           "#wanted}>>" in body


@pytest.mark.ir_pass("make entry conversions in place")
def test_a_module_without_entry_conversions_is_left_as_it_is():
    target = "sm90a"
    text = ported(target).replace('{hybrid.boundary = "entry:', '{hybrid.other = "')
    module, context, _ = parsed(text, target)
    before = printed(module, layouts(target))
    run_pass(stitch_of(context, target, "gluon"), module, "make entry conversions in place")
    assert printed(module, layouts(target)) == before and count(module, "tt.call") == 1


@pytest.mark.ir_pass("untag entry conversions")
def test_a_triton_hosts_entry_conversions_left_are_plain_conversions_and_a_boundarys_keeps_its_tag():
    target = "sm90a"
    module, context, _ = parsed(ported(target).replace('"entry:3"', '"0:in:2"'), target)
    run_pass(stitch_of(context, target), module, "untag entry conversions")
    assert [op.get_str_attr("hybrid.boundary") for op in ops(module, "ttg.convert_layout")] == ["", "", "0:in:2"]
    assert count(module, "tt.call") == 1   # nothing inlined, nothing made in place
