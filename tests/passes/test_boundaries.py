"""The compile's regions and boundary records after stitching (``lowering/assemble.py``): the
regions whose call was discarded forgotten (``keep called regions``), and each planned boundary
completed from what is left in the module, what the planner chose and what the folds before it
replaced (``complete boundaries``, after ``plan boundaries``)."""
import pytest

from interop.boundary import CONSTANT_IN_PLACE, Moved
from interop.region import CallSite
from interop.stitching.stitch import Folded
from tests.passes.modules import LANES, blocked, module_text, parsed, run_pass, stitch_of

SITE = CallSite("k.py", 5)


def layouts(target: str) -> dict[str, str]:
    lanes = LANES[target]
    return {"rows": blocked([1, 4], [lanes // 16, 16], [4, 1], [1, 0]),
            "cols": blocked([4, 1], [16, lanes // 16], [1, 4], [0, 1])}


def calling(target: str, tag: str) -> str:
    """A host calling Gluon region 0 (``g_used``) only, its tile converted (boundary ``tag``, none
    where empty) by rows to columns for the call."""
    tagged = f' {{hybrid.boundary = "{tag}"}}' if tag else ""
    return module_text(target, layouts(target), f'''  tt.func public @k(%t: tensor<64x64xf32, #rows>) {{
    %0 = ttg.convert_layout %t{tagged} : tensor<64x64xf32, #rows> -> tensor<64x64xf32, #cols>
    tt.call @__hybrid_r0_g_used(%0) : (tensor<64x64xf32, #cols>) -> ()
    tt.return
  }}
  tt.func private @__hybrid_r0_g_used(tensor<64x64xf32, #cols>)
''')


def with_regions(context, target: str, names: list[str]):
    """The state of a compile whose Gluon regions are ``names`` (in call order), each taking one
    tile by columns from the host's rows (its boundary planned)."""
    state = stitch_of(context, target)
    tile = {name: f"tensor<64x64xf32, {text}>" for name, text in layouts(target).items()}
    for name in names:
        region = state.compile.new_region(name, "gluon", SITE, "", shared_bytes=0, lines=())
        state.compile.plan(region, "in", 0, "t", tile["rows"], tile["cols"])
    return state


@pytest.mark.ir_pass("keep called regions")
def test_a_region_whose_call_was_discarded_is_forgotten_with_its_boundaries():
    module, context, _ = parsed(calling("sm90a", "0:in:0"), "sm90a")
    state = with_regions(context, "sm90a", ["g_used", "g_discarded"])
    run_pass(state, module, "keep called regions")
    assert [r.function for r in state.regions] == ["g_used"]
    assert [p.tag for p in state.compile.planned] == ["0:in:0"]


@pytest.mark.ir_pass("plan boundaries", "complete boundaries")
@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
def test_a_conversion_left_is_completed_with_what_it_moves(target):
    module, context, _ = parsed(calling(target, "0:in:0"), target)
    state = run_pass(with_regions(context, target, ["g_used"]), module, "plan boundaries", "complete boundaries")
    boundary, = state.compile.boundaries
    assert (boundary.function, boundary.direction, boundary.conversions) == ("g_used", "in", 1)
    assert boundary.reason.startswith("converted: ") and boundary.reason.endswith(state.choices[0].reason)
    assert boundary.movement == "shared" and boundary.shared_bytes > 0


@pytest.mark.ir_pass("plan boundaries", "complete boundaries")
def test_a_boundary_folded_away_says_which_fold_of_the_stitch_or_the_relayout_replaced_it():
    """What the host's relayout (``state.relaid``) and the stitch's folds (``state.folded``)
    replaced, as those passes leave it: the conversion gone from the module."""
    module, context, _ = parsed(calling("sm90a", ""), "sm90a")
    state = with_regions(context, "sm90a", ["g_used", "g_other"])
    state.relaid = Folded(frozenset(), frozenset(), frozenset(), frozenset(), {"1:in:0": Moved.ADOPTED})
    state.folded = Folded(frozenset(), frozenset(), frozenset({"0:in:0"}), frozenset(), {})
    run_pass(state, module, "plan boundaries", "complete boundaries")
    first, second = state.compile.boundaries
    assert (first.reason, first.conversions) == (CONSTANT_IN_PLACE, 0)
    assert second.reason.startswith("the host takes the region's layout") and second.conversions == 0
