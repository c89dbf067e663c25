"""How each boundary value moves (``plan boundaries``, ``boundaries/planner.plan``, as the build's
``boundaries`` setting asks): a tile the host makes by rows and a
Gluon region reads by columns converted by Triton, or handed off in one shared buffer; a
conversion that moves nothing is not planned."""
import pytest

from tests.passes.modules import LANES, blocked, count, module_text, ops, parsed, run_pass, stitch_of

TARGET_NAMES = ["sm90a", "gfx942"]


def layouts(target: str) -> dict[str, str]:
    lanes = LANES[target]
    return {"rows": blocked([1, 4], [lanes // 16, 16], [4, 1], [1, 0]),
            "cols": blocked([4, 1], [16, lanes // 16], [1, 4], [0, 1])}


def converting(target: str, wanted: str) -> str:
    """The host's tile converted (boundary ``0:in:0``) to ``wanted`` for the region, which stores it."""
    return module_text(target, layouts(target), f'''  tt.func public @k(%t: tensor<64x64xf32, #rows>, %y: tensor<64x64x!tt.ptr<f32>, #{wanted}>) {{
    %0 = ttg.convert_layout %t {{hybrid.boundary = "0:in:0"}} : tensor<64x64xf32, #rows> -> tensor<64x64xf32, #{wanted}>
    tt.store %y, %0 : tensor<64x64x!tt.ptr<f32>, #{wanted}>
    tt.return
  }}
''')


def planned(target: str, wanted: str, way: str):
    """The module and (the planner's choices, the conversions left) after ``plan boundaries``."""
    module, context, _ = parsed(converting(target, wanted), target)
    state = run_pass(stitch_of(context, target, boundaries=way), module, "plan boundaries")
    return module, (state.choices, state.live)


@pytest.mark.ir_pass("plan boundaries")
@pytest.mark.parametrize("target", TARGET_NAMES)
def test_a_handoff_stores_the_tile_once_and_loads_it_in_the_regions_layout(target):
    module, (choices, live) = planned(target, "cols", "shared")
    choice, = choices
    assert choice.way == "handoff" and choice.tags == ("0:in:0", ) and choice.shared_bytes == 64 * 64 * 4
    assert live == {} and count(module, "ttg.convert_layout") == 0
    alloc, = ops(module, "ttg.local_alloc")
    load, = ops(module, "ttg.local_load")
    assert alloc.get_str_attr("hybrid.boundary") == load.get_str_attr("hybrid.boundary") == "0:in:0"
    assert choice.layout == str(alloc.get_result(0).get_type())
    assert layouts(target)["cols"] in str(load.get_result(0).get_type())


@pytest.mark.ir_pass("plan boundaries")
@pytest.mark.parametrize("target", TARGET_NAMES)
def test_a_conversion_left_to_triton_is_kept_and_says_what_it_moves(target):
    module, (choices, live) = planned(target, "cols", "convert")
    assert [c.way for c in choices] == ["convert"] and count(module, "ttg.convert_layout") == 1
    conversion, = live["0:in:0"]
    assert conversion.movement.kind == "shared" and conversion.movement.shared_bytes > 0


@pytest.mark.ir_pass("plan boundaries")
@pytest.mark.parametrize("target", TARGET_NAMES)
def test_in_auto_mode_the_way_modelled_cheaper_is_taken_and_a_tie_keeps_the_conversion(target):
    module, (choices, live) = planned(target, "cols", "auto")
    choice, = choices
    assert choice.tags == ("0:in:0", ) and choice.cost <= choice.other
    assert choice.way == "handoff" if choice.cost < choice.other else choice.way == "convert"
    assert f"modelled cost {choice.cost} against {choice.other}" in choice.reason
    assert count(module, "ttg.convert_layout") == len(live.get("0:in:0", []))   # what is left is what it says


@pytest.mark.ir_pass("plan boundaries")
def test_a_conversion_between_layouts_that_place_alike_is_not_planned():
    """Over a one-row tile a ``[4, 1]`` and a ``[1, 1]`` blocked layout place every element alike:
    nothing to move between threads, nothing to weigh."""
    alike = {"four": blocked([4, 1], [1, 32], [4, 1], [1, 0]), "one": blocked([1, 1], [1, 32], [4, 1], [1, 0])}
    module, context, _ = parsed(module_text("sm90a", alike, '''  tt.func public @k(%t: tensor<1x64xf32, #four>, %y: tensor<1x64x!tt.ptr<f32>, #one>) {
    %0 = ttg.convert_layout %t {hybrid.boundary = "0:in:0"} : tensor<1x64xf32, #four> -> tensor<1x64xf32, #one>
    tt.store %y, %0 : tensor<1x64x!tt.ptr<f32>, #one>
    tt.return
  }
'''), "sm90a")
    state = run_pass(stitch_of(context, "sm90a"), module, "plan boundaries")   # (the default: "auto")
    choices, live = state.choices, state.live
    assert choices == [] and count(module, "ttg.convert_layout") == 1
    assert live["0:in:0"][0].movement.kind in ("none", "registers")
