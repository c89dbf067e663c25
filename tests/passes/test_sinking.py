"""A boundary conversion moved past the casts after it on Triton's side (``stitching/sinking.py``):
a Gluon region's fp32 accumulator converted for the Triton host's epilogue ``acc.to(fp16)``,
then stored (``examples/matmul_gluon_epilogue.py``'s shape, shrunk)."""
import pytest

from interop.stitching import sinking, stitch
from tests.passes.modules import LANES, blocked, count, module_text, ops, parsed, printed

TARGETS = ["sm90a", "gfx942"]


def layouts(target: str) -> dict[str, str]:
    """The region's result layout, the host's one for it, and the store's."""
    lanes = LANES[target]
    return {"mine": blocked([1, 4], [lanes // 16, 16], [4, 1], [1, 0]),
            "host": blocked([4, 1], [16, lanes // 16], [1, 4], [0, 1]),
            "store": blocked([1, 8], [lanes // 8, 8], [4, 1], [1, 0])}


def epilogue(target: str, store: str, cast: str = "arith.truncf", to: str = "f16") -> str:
    """The boundary's conversion of the result ``#mine -> #host``, the host's cast in ``#host``, the
    store's pointers made, then (where ``store`` is ``"store"``) the host's own conversion to the
    store's layout, and the store."""
    own = (f"    %2 = ttg.convert_layout %1 : tensor<64x64x{to}, #host> -> tensor<64x64x{to}, #store>\n"
           if store == "store" else "")
    value = "%2" if own else "%1"
    return module_text(target, layouts(target), f'''  tt.func public @k(%acc: tensor<64x64xf32, #mine>, %y: !tt.ptr<{to}>, %offsets: tensor<64x64xi32, #{store}>) {{
    %0 = ttg.convert_layout %acc {{hybrid.boundary = "0:out:0"}} : tensor<64x64xf32, #mine> -> tensor<64x64xf32, #host>
    %1 = {cast} %0 : tensor<64x64xf32, #host> to tensor<64x64x{to}, #host>
    %p = tt.splat %y : !tt.ptr<{to}> -> tensor<64x64x!tt.ptr<{to}>, #{store}>
    %q = tt.addptr %p, %offsets : tensor<64x64x!tt.ptr<{to}>, #{store}>, tensor<64x64xi32, #{store}>
{own}    tt.store %q, {value} : tensor<64x64x!tt.ptr<{to}>, #{store}>
    tt.return
  }}
''')


@pytest.mark.parametrize("target", TARGETS)
def test_a_conversion_before_a_cast_and_the_hosts_own_conversion_merges_into_it(target):
    module, _, builder = parsed(epilogue(target, "store"), target)
    assert sinking.sink_past_casts(module, builder, {"0:out:0"}) == {"0:out:0": "merged"}
    body = printed(module, layouts(target))
    stored = ops(module, "tt.store")[0].get_operand(1)
    live = [op for op in ops(module, "ttg.convert_layout") if op.get_result(0).id() == stored.id()]
    assert len(live) == 1 and "{hybrid.boundary" not in str(live[0])   # the host's own, now from #mine
    assert "arith.truncf %arg0 : tensor<64x64xf32, #mine> to tensor<64x64xf16, #mine>" in body
    assert "tensor<64x64xf16, #mine> -> tensor<64x64xf16, #store>" in body


@pytest.mark.parametrize("target", TARGETS)
def test_a_conversion_before_a_narrowing_cast_converts_after_it_instead(target):
    module, context, builder = parsed(epilogue(target, "host"), target)
    assert sinking.sink_past_casts(module, builder, {"0:out:0"}) == {"0:out:0": "narrowed"}
    stitch.canonicalize(module, context)
    body = printed(module, layouts(target))
    assert count(module, "ttg.convert_layout") == 1
    lines = body.splitlines()
    store = next(k for k, line in enumerate(lines) if "tt.store" in line)
    assert '{hybrid.boundary = "0:out:0"} : tensor<64x64xf16, #mine> -> tensor<64x64xf16, #host>' \
        in lines[store - 1]   # where Triton converts: after the store's pointers, just before it
    assert "arith.truncf %arg0 : tensor<64x64xf32, #mine> to tensor<64x64xf16, #mine>" in body


def test_a_widening_cast_without_the_hosts_conversion_after_it_is_left_alone():
    module, _, builder = parsed(epilogue("sm90a", "host", cast="arith.extf", to="f64"), "sm90a")
    before = printed(module, layouts("sm90a"))
    assert sinking.sink_past_casts(module, builder, {"0:out:0"}) == {}
    assert printed(module, layouts("sm90a")) == before


def test_a_conversion_into_gluon_code_is_never_moved():
    module, _, builder = parsed(epilogue("sm90a", "store"), "sm90a")
    before = printed(module, layouts("sm90a"))
    assert sinking.sink_past_casts(module, builder, {"0:in:0"}) == {}   # (another boundary's tag only)
    assert printed(module, layouts("sm90a")) == before
