"""A Gluon function's marked loads its Triton caller issues itself (``lowering/caller_loads``):
which ones it may (``hoistable``: at the top of the function, of its parameters, after nothing that
writes), and the function built to take each such tile as a new last parameter (``take``)."""
import pytest

from interop.lowering import caller_loads
from tests.passes.modules import LANES, blocked, module_text, ops, parsed

TARGETS = ["sm90a", "gfx942"]


def layouts(target: str) -> dict[str, str]:
    lanes = LANES[target]
    return {"host": blocked([1], [lanes], [4], [0]), "row": blocked([4], [lanes], [4], [0])}


def function(target: str, before: str = "") -> str:
    """``rows(ptrs, mask, out)``: its marked load of ``ptrs`` (converted) under ``mask`` (as passed),
    other 0.0, its sum stored; then a second marked load of ``out``, after that store."""
    return module_text(target, layouts(target), f'''  tt.func private @rows(%ptrs: tensor<1024x!tt.ptr<f32>, #host>, %mask: tensor<1024xi1, #row>, %out: tensor<1024x!tt.ptr<f32>, #row>) {{
{before}    %cst = arith.constant dense<0.000000e+00> : tensor<1024xf32, #row>
    %0 = ttg.convert_layout %ptrs : tensor<1024x!tt.ptr<f32>, #host> -> tensor<1024x!tt.ptr<f32>, #row>
    %1 = tt.load %0, %mask, %cst {{hybrid.caller_load = "float:0.0"}} : tensor<1024x!tt.ptr<f32>, #row>
    %2 = arith.addf %1, %1 : tensor<1024xf32, #row>
    tt.store %out, %2 : tensor<1024x!tt.ptr<f32>, #row>
    %3 = tt.load %out {{hybrid.caller_load = "none"}} : tensor<1024x!tt.ptr<f32>, #row>
    tt.store %out, %3 : tensor<1024x!tt.ptr<f32>, #row>
    tt.return
  }}
''')


@pytest.mark.parametrize("target", TARGETS)
def test_a_load_of_parameters_at_the_top_is_hoistable_and_one_after_a_store_is_not(target):
    module, _, _ = parsed(function(target), target)
    assert caller_loads.hoistable(module, "rows") == [caller_loads.Hoist(index=0, pointer=0, mask=1, other=0.0)]


def test_nothing_is_hoistable_after_a_write_at_the_top():
    write = "    %w = arith.constant dense<1.000000e+00> : tensor<1024xf32, #row>\n" \
            "    tt.store %out, %w : tensor<1024x!tt.ptr<f32>, #row>\n"
    module, _, _ = parsed(function("sm90a", before=write), "sm90a")
    assert caller_loads.hoistable(module, "rows") == []


@pytest.mark.parametrize("target", TARGETS)
def test_take_makes_a_hoisted_load_a_parameter_and_the_others_plain_loads(target):
    module, _, builder = parsed(function(target), target)
    rows = module.get_function("rows")
    types = caller_loads.take(module, rows, builder, [0])
    assert [str(t) for t in types] == [str(ops(module, "arith.addf")[0].get_operand(0).get_type())]
    assert rows.get_num_args() == 4
    add = ops(module, "arith.addf")[0]
    assert add.get_operand(0).id() == rows.args(3).id()   # the sum reads the new parameter
    plain, = [op for op in ops(module, "tt.load") if op.get_str_attr(caller_loads.MARK) is None]
    assert ops(module, "tt.store")[1].get_operand(1).id() == plain.get_result(0).id()   # the second made plain
