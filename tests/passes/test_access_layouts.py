"""A Triton host's loads and stores issued in the layouts of the Gluon code around them
(``stitching/access_layouts.py``): a tile loaded, then converted for a Gluon call, loaded in the
call's layout instead (``issue_in_wanted_layouts``); a store of a value converted to the store's
layout issued in the value's (``issue_stores_in_value_layouts``)."""
import pytest

from interop.ir.canonicalize import canonicalize
from interop.stitching import access_layouts
from tests.passes.modules import LANES, blocked, count, module_text, ops, parsed, printed, run_pass, stitch_of

TARGETS = ["sm90a", "gfx942"]
TAG = "hybrid.boundary"


def tiles(target: str) -> dict[str, str]:
    """Triton's coalesced layout of a 32x64 tile, the one a Gluon function takes (as many
    contiguous elements a thread along the rows), and one by columns (none along them)."""
    lanes = LANES[target]
    return {"coalesced": blocked([1, 4], [lanes // 16, 16], [4, 1], [1, 0]),
            "taken": blocked([2, 4], [lanes // 16, 16], [2, 2], [1, 0]),
            "columns": blocked([4, 1], [16, lanes // 16], [1, 4], [0, 1])}


def loaded(target: str, wanted: str) -> str:
    """The host loads a tile by ``#coalesced`` and converts it (boundary ``0:in:0``) for a call."""
    return module_text(target, tiles(target), f'''  tt.func public @h(%x: !tt.ptr<f32>, %y: tensor<32x64x!tt.ptr<f32>, #{wanted}>) {{
    %cst = arith.constant dense<64> : tensor<32x1xi32, #coalesced>
    %0 = tt.make_range {{end = 32 : i32, start = 0 : i32}} : tensor<32xi32, #ttg.slice<{{dim = 1, parent = #coalesced}}>>
    %1 = tt.expand_dims %0 {{axis = 1 : i32}} : tensor<32xi32, #ttg.slice<{{dim = 1, parent = #coalesced}}>> -> tensor<32x1xi32, #coalesced>
    %2 = arith.muli %1, %cst : tensor<32x1xi32, #coalesced>
    %3 = tt.splat %x : !tt.ptr<f32> -> tensor<32x1x!tt.ptr<f32>, #coalesced>
    %4 = tt.addptr %3, %2 : tensor<32x1x!tt.ptr<f32>, #coalesced>, tensor<32x1xi32, #coalesced>
    %5 = tt.make_range {{end = 64 : i32, start = 0 : i32}} : tensor<64xi32, #ttg.slice<{{dim = 0, parent = #coalesced}}>>
    %6 = tt.expand_dims %5 {{axis = 0 : i32}} : tensor<64xi32, #ttg.slice<{{dim = 0, parent = #coalesced}}>> -> tensor<1x64xi32, #coalesced>
    %7 = tt.broadcast %4 : tensor<32x1x!tt.ptr<f32>, #coalesced> -> tensor<32x64x!tt.ptr<f32>, #coalesced>
    %8 = tt.broadcast %6 : tensor<1x64xi32, #coalesced> -> tensor<32x64xi32, #coalesced>
    %9 = tt.addptr %7, %8 : tensor<32x64x!tt.ptr<f32>, #coalesced>, tensor<32x64xi32, #coalesced>
    %10 = tt.load %9 : tensor<32x64x!tt.ptr<f32>, #coalesced>
    %11 = ttg.convert_layout %10 {{hybrid.boundary = "0:in:0"}} : tensor<32x64xf32, #coalesced> -> tensor<32x64xf32, #{wanted}>
    tt.store %y, %11 : tensor<32x64x!tt.ptr<f32>, #{wanted}>
    tt.return
  }}
''')


def called(target: str) -> str:
    """``loaded``'s tile converted for a Gluon call (``__hybrid_r0_g``, region 0) instead of a store."""
    return loaded(target, "taken").replace(
        "    tt.store %y, %11 : tensor<32x64x!tt.ptr<f32>, #taken>\n",
        "    tt.call @__hybrid_r0_g(%11) : (tensor<32x64xf32, #taken>) -> ()\n").replace(
        "  }\n}\n", "  }\n  tt.func private @__hybrid_r0_g(tensor<32x64xf32, #taken>)\n}\n")


@pytest.mark.ir_pass("issue loads in call layouts")
@pytest.mark.parametrize("target", TARGETS)
def test_a_tile_converted_for_a_call_is_loaded_in_the_calls_layout(target):
    """Run in a Triton host's relayout after ``sink result casts``, which records the calls'
    operands; ``restore region bodies`` says the boundary's tile was loaded again."""
    module, context, _ = parsed(called(target), target)
    state = stitch_of(context, target)
    state.compile.gluon.symbols["__hybrid_r0_g"] = 0
    run_pass(state, module, "hide region bodies", "sink result casts", "issue loads in call layouts")
    assert state.relayout.issued == {"0:in:0"}
    run_pass(state, module, "restore region bodies", "canonicalize")
    load, = ops(module, "tt.load")
    assert count(module, "ttg.convert_layout") == 0 and tiles(target)["taken"] in str(load.get_result(0).get_type())
    assert "#coalesced" not in printed(module, tiles(target))   # the pointers made again in the call's layout
    assert ops(module, "tt.call")[0].get_operand(0).id() == load.get_result(0).id()


@pytest.mark.parametrize("wanted, tags", [("columns", {"0:in:0"}), ("taken", {"0:in:1"})],
                         ids=["reads-worse", "another-boundary"])
def test_a_layout_that_reads_worse_or_another_boundarys_conversion_is_left_alone(wanted, tags):
    module, _, builder = parsed(loaded("gfx942", wanted), "gfx942")
    before = printed(module, tiles("gfx942"))
    assert access_layouts.issue_in_wanted_layouts(module, builder, tags) == set()
    assert printed(module, tiles("gfx942")) == before


def vectors(target: str) -> dict[str, str]:
    lanes = LANES[target]
    return {"four": blocked([4], [lanes], [4], [0]), "one": blocked([1], [lanes], [4], [0])}


def stored(target: str, mask: bool) -> str:
    """A row computed by ``#four`` converted to the store's ``#one``, stored under a bounds mask."""
    masked = ", %m" if mask else ""
    return module_text(target, vectors(target), f'''  tt.func public @h(%v: tensor<1024xf32, #four>, %y: !tt.ptr<f32>, %n: i32) {{
    %0 = tt.make_range {{end = 1024 : i32, start = 0 : i32}} : tensor<1024xi32, #one>
    %1 = tt.splat %n : i32 -> tensor<1024xi32, #one>
    %m = arith.cmpi slt, %0, %1 : tensor<1024xi32, #one>
    %2 = tt.splat %y : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>, #one>
    %3 = tt.addptr %2, %0 : tensor<1024x!tt.ptr<f32>, #one>, tensor<1024xi32, #one>
    %4 = ttg.convert_layout %v : tensor<1024xf32, #four> -> tensor<1024xf32, #one>
    tt.store %3, %4{masked} : tensor<1024x!tt.ptr<f32>, #one>
    tt.return
  }}
''')


@pytest.mark.parametrize("target", TARGETS)
def test_a_masked_store_of_a_converted_value_is_issued_in_the_values_layout(target):
    module, context, builder = parsed(stored(target, mask=True), target)
    assert access_layouts.issue_stores_in_value_layouts(module, builder) == 1
    canonicalize(module, context)
    body = printed(module, vectors(target))
    assert count(module, "tt.store") == 1 and count(module, "ttg.convert_layout") == 0
    assert "tt.store %" in body and "#one" not in body


def test_an_unmasked_store_is_left_alone():
    module, _, builder = parsed(stored("sm90a", mask=False), "sm90a")
    assert access_layouts.issue_stores_in_value_layouts(module, builder) == 0
    assert count(module, "ttg.convert_layout") == 1


def differences(target: str) -> str:
    """The host loads a row ``g`` of fewer elements than the CTA's threads, computes
    ``g[:, None] - g[None, :]`` by ``#coalesced`` and converts it (boundary ``0:in:0``) for a call
    that takes it by ``#taken`` (fla's gated ``exp2`` on the gates' differences)."""
    layouts = {**tiles(target), "row": blocked([1], [LANES[target]], [4], [0])}
    rows, columns = "#ttg.slice<{dim = 1, parent = #coalesced}>", "#ttg.slice<{dim = 0, parent = #coalesced}>"
    return module_text(target, layouts, f'''  tt.func public @h(%x: !tt.ptr<f32>) {{
    %0 = tt.make_range {{end = 32 : i32, start = 0 : i32}} : tensor<32xi32, #row>
    %1 = tt.splat %x : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>, #row>
    %2 = tt.addptr %1, %0 : tensor<32x!tt.ptr<f32>, #row>, tensor<32xi32, #row>
    %g = tt.load %2 : tensor<32x!tt.ptr<f32>, #row>
    %3 = ttg.convert_layout %g : tensor<32xf32, #row> -> tensor<32xf32, {rows}>
    %4 = tt.expand_dims %3 {{axis = 1 : i32}} : tensor<32xf32, {rows}> -> tensor<32x1xf32, #coalesced>
    %5 = tt.broadcast %4 : tensor<32x1xf32, #coalesced> -> tensor<32x32xf32, #coalesced>
    %6 = ttg.convert_layout %g : tensor<32xf32, #row> -> tensor<32xf32, {columns}>
    %7 = tt.expand_dims %6 {{axis = 0 : i32}} : tensor<32xf32, {columns}> -> tensor<1x32xf32, #coalesced>
    %8 = tt.broadcast %7 : tensor<1x32xf32, #coalesced> -> tensor<32x32xf32, #coalesced>
    %9 = arith.subf %5, %8 : tensor<32x32xf32, #coalesced>
    %10 = ttg.convert_layout %9 {{hybrid.boundary = "0:in:0"}} : tensor<32x32xf32, #coalesced> -> tensor<32x32xf32, #taken>
    tt.call @__hybrid_r0_g(%10) : (tensor<32x32xf32, #taken>) -> ()
    tt.return
  }}
  tt.func private @__hybrid_r0_g(tensor<32x32xf32, #taken>)
''')


@pytest.mark.parametrize("target", TARGETS)
def test_arithmetic_on_a_small_loaded_row_is_made_in_the_calls_layout(target):
    """Its row loaded again in each slice of the call's layout the arithmetic takes it in, as
    Triton's layout propagation does in a kernel without the call: no conversion is left."""
    module, context, builder = parsed(differences(target), target)
    value = ops(module, "arith.subf")[0].get_result(0)
    taken = builder.get_gluon_layout_from_tensor(ops(module, "tt.call")[0].get_operand(0))
    assert access_layouts.issuable(module, builder, [(value, taken)]) == [True]
    assert access_layouts.issue_in_wanted_layouts(module, builder, {"0:in:0"}) == {"0:in:0"}
    canonicalize(module, context)
    body = printed(module, tiles(target))
    assert count(module, "ttg.convert_layout") == 0 and count(module, "tt.load") == 2
    assert "#coalesced" not in body and "#ttg.slice<{dim = 1, parent = #taken}>" in body
    assert ops(module, "tt.call")[0].get_operand(0).id() == ops(module, "arith.subf")[0].get_result(0).id()
