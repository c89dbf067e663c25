"""A branch that guards pure code against poison taken always (``speculate``, ``stitching/speculate.py``): a Gluon
call's opaque ``scf.if`` in a Triton host once its pure region is inlined, as Triton 3.6's
pipeliner leaves it in a loop's epilogue (shrunk from ``tests/triton_hosts.py``'s ``h_reduce``)."""
import pytest

from tests.passes.modules import LANES, blocked, conditions, count, module_text, parsed, run_pass, stitch_of

TARGETS = ["sm90a", "gfx942"]


def layouts(target: str) -> dict[str, str]:
    lanes = LANES[target]
    return {"row": blocked([1], [lanes], [4], [0]), "tile": blocked([1, 4], [lanes // 16, 16], [4, 1], [1, 0])}


def guarded(target: str, then: str, otherwise: str = "%0") -> str:
    """``scf.if %flag`` whose then branch is ``then`` (yielding ``%r``), its else ``otherwise``."""
    return module_text(target, layouts(target), f'''  tt.func public @k(%x: tensor<32x64x!tt.ptr<f32>, #tile>, %t: tensor<32x64xf32, #tile>, %flag: i1, %y: tensor<32x!tt.ptr<f32>, #row>) {{
    %0 = ub.poison : tensor<32xf32, #row>
    %cst = arith.constant dense<2.000000e+00> : tensor<32x64xf32, #tile>
    %1 = scf.if %flag -> (tensor<32xf32, #row>) {{
{then}      scf.yield %r : tensor<32xf32, #row>
    }} else {{
      scf.yield {otherwise} : tensor<32xf32, #row>
    }}
    tt.store %y, %1 : tensor<32x!tt.ptr<f32>, #row>
    tt.return
  }}
''')


#: The region: a row sum of its scaled tile, made pure code.
PURE = '''      %2 = arith.mulf %t, %cst : tensor<32x64xf32, #tile>
      %3 = "tt.reduce"(%2) <{axis = 1 : i32}> ({
      ^bb0(%a: f32, %b: f32):
        %s = arith.addf %a, %b : f32
        tt.reduce.return %s : f32
      }) : (tensor<32x64xf32, #tile>) -> tensor<32xf32, #ttg.slice<{dim = 1, parent = #tile}>>
      %r = ttg.convert_layout %3 : tensor<32xf32, #ttg.slice<{dim = 1, parent = #tile}>> -> tensor<32xf32, #row>
'''
#: The same region reading its tile from memory: a load may fault where the branch is not taken.
LOADS = PURE.replace("%2 = arith.mulf %t, %cst", "%l = tt.load %x : tensor<32x64x!tt.ptr<f32>, #tile>\n"
                     "      %2 = arith.mulf %l, %cst")


@pytest.mark.ir_pass("speculate")
@pytest.mark.parametrize("target", TARGETS)
def test_a_branch_guarding_pure_code_against_poison_becomes_straight_line_code(target):
    module, context, _ = parsed(guarded(target, PURE), target)
    assert conditions(module) == {"%arg2"}
    run_pass(stitch_of(context, target), module, "speculate")
    assert conditions(module) <= {"%true"} and count(module, "tt.reduce") == 1


@pytest.mark.ir_pass("speculate")
@pytest.mark.parametrize("then, otherwise", [(LOADS, "%0"), (PURE, "%r0")], ids=["loads", "else-computes"])
def test_a_branch_that_loads_or_yields_a_value_otherwise_stays(then, otherwise):
    text = guarded("sm90a", then, otherwise).replace(
        "    %1 = scf.if", "    %r0 = arith.constant dense<0.000000e+00> : tensor<32xf32, #row>\n    %1 = scf.if")
    module, context, _ = parsed(text, "sm90a")
    run_pass(stitch_of(context, "sm90a"), module, "speculate")
    assert conditions(module) == {"%arg2"}
