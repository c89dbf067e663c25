"""A boundary conversion moved past the casts after it on Triton's side (``sink casts``, and ``sink
result casts`` in a Triton host's relayout; ``stitching/sinking.py``): a Gluon region's fp32
accumulator converted for the Triton host's epilogue ``acc.to(fp16)``, then stored
(``examples/matmul_gluon_epilogue.py``'s shape, shrunk)."""
import pytest

from interop.boundary import Moved
from interop.region import CallSite
from tests.passes.modules import LANES, blocked, count, module_text, ops, parsed, printed, run_pass, stitch_of

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


def sunk(text: str, target: str, direction: str = "out", then: tuple[str, ...] = ()):
    """``text`` after ``sink casts`` (and the passes ``then``) in a compile whose Gluon region 0's
    boundary ``direction`` 0 is planned (a result: into the host's Triton code; an operand: into
    the Gluon function's code), and what the pass moved."""
    module, context, _ = parsed(text, target)
    state = stitch_of(context, target)
    region = state.compile.new_region("g_mma", "gluon", CallSite("k.py", 4), "", shared_bytes=0, lines=())
    types = {name: f"tensor<64x64xf32, {attribute}>" for name, attribute in layouts(target).items()}
    state.compile.plan(region, direction, 0, "acc", types["mine"], types["host"])
    return module, run_pass(state, module, "sink casts", *then).folded.moved


@pytest.mark.ir_pass("sink casts")
@pytest.mark.parametrize("target", TARGETS)
def test_a_conversion_before_a_cast_and_the_hosts_own_conversion_merges_into_it(target):
    module, moved = sunk(epilogue(target, "store"), target)
    assert moved == {"0:out:0": Moved.MERGED}
    body = printed(module, layouts(target))
    stored = ops(module, "tt.store")[0].get_operand(1)
    live = [op for op in ops(module, "ttg.convert_layout") if op.get_result(0).id() == stored.id()]
    assert len(live) == 1 and "{hybrid.boundary" not in str(live[0])   # the host's own, now from #mine
    assert "arith.truncf %arg0 : tensor<64x64xf32, #mine> to tensor<64x64xf16, #mine>" in body
    assert "tensor<64x64xf16, #mine> -> tensor<64x64xf16, #store>" in body


@pytest.mark.ir_pass("sink casts", "canonicalize folds")
@pytest.mark.parametrize("target", TARGETS)
def test_a_conversion_before_a_narrowing_cast_converts_after_it_instead(target):
    module, moved = sunk(epilogue(target, "host"), target, then=("canonicalize folds", ))
    assert moved == {"0:out:0": Moved.NARROWED}
    body = printed(module, layouts(target))
    assert count(module, "ttg.convert_layout") == 1
    lines = body.splitlines()
    store = next(k for k, line in enumerate(lines) if "tt.store" in line)
    assert '{hybrid.boundary = "0:out:0"} : tensor<64x64xf16, #mine> -> tensor<64x64xf16, #host>' \
        in lines[store - 1]   # where Triton converts: after the store's pointers, just before it
    assert "arith.truncf %arg0 : tensor<64x64xf32, #mine> to tensor<64x64xf16, #mine>" in body


@pytest.mark.ir_pass("sink casts")
def test_a_widening_cast_without_the_hosts_conversion_after_it_is_left_alone():
    text = epilogue("sm90a", "host", cast="arith.extf", to="f64")
    module, moved = sunk(text, "sm90a")
    assert moved == {} and printed(module, layouts("sm90a")) == printed(parsed(text, "sm90a")[0], layouts("sm90a"))


@pytest.mark.ir_pass("sink casts")
def test_a_conversion_into_gluon_code_is_never_moved():
    text = epilogue("sm90a", "store").replace('"0:out:0"', '"0:in:0"')   # (the Gluon function's operand)
    module, moved = sunk(text, "sm90a", direction="in")
    assert moved == {} and printed(module, layouts("sm90a")) == printed(parsed(text, "sm90a")[0], layouts("sm90a"))


@pytest.mark.ir_pass("sink result casts")
@pytest.mark.parametrize("target", TARGETS)
def test_in_a_triton_hosts_relayout_a_calls_result_conversion_merges_into_the_hosts_own(target):
    """Run between ``hide region bodies`` and ``restore region bodies`` (which records it moved),
    on the result of a Gluon call: the Triton host's boundaries are its calls' there."""
    text = epilogue(target, "store").replace("%acc: tensor<64x64xf32, #mine>, ", "").replace(
        "    %0 = ttg.convert_layout %acc", "    %acc = tt.call @__hybrid_r0_g() : () -> tensor<64x64xf32, #mine>\n"
        "    %0 = ttg.convert_layout %acc").replace("  }\n}\n", "  }\n  tt.func private @__hybrid_r0_g() -> "
                                              "tensor<64x64xf32, #mine>\n}\n")
    module, context, _ = parsed(text, target)
    state = stitch_of(context, target)
    state.compile.gluon.symbols["__hybrid_r0_g"] = 0
    run_pass(state, module, "hide region bodies", "sink result casts", "restore region bodies")
    assert state.relaid.moved == {"0:out:0": Moved.MERGED}
    assert "arith.truncf %0 : tensor<64x64xf32, #mine> to tensor<64x64xf16, #mine>" in printed(module, layouts(target))


def statistics(target: str, tail: str = "") -> str:
    """Upstream attention's epilogue on a Gluon region's two row statistics ``l`` and ``m``: each
    converted ``#mine -> #host`` (the boundary's), then ``m + log2(l)`` (and ``tail``) stored."""
    return module_text(target, layouts(target), f'''  tt.func public @k(%l: tensor<64xf32, #ttg.slice<{{dim = 1, parent = #mine}}>>, %m: tensor<64xf32, #ttg.slice<{{dim = 1, parent = #mine}}>>, %y: !tt.ptr<f32>, %offsets: tensor<64xi32, #ttg.slice<{{dim = 1, parent = #host}}>>, %scale: f32) {{
    %0 = ttg.convert_layout %l {{hybrid.boundary = "0:out:1"}} : tensor<64xf32, #ttg.slice<{{dim = 1, parent = #mine}}>> -> tensor<64xf32, #ttg.slice<{{dim = 1, parent = #host}}>>
    %1 = ttg.convert_layout %m {{hybrid.boundary = "0:out:2"}} : tensor<64xf32, #ttg.slice<{{dim = 1, parent = #mine}}>> -> tensor<64xf32, #ttg.slice<{{dim = 1, parent = #host}}>>
    %2 = math.log2 %0 : tensor<64xf32, #ttg.slice<{{dim = 1, parent = #host}}>>
    %s = tt.splat %scale : f32 -> tensor<64xf32, #ttg.slice<{{dim = 1, parent = #host}}>>
    %3 = arith.addf %1, %2 : tensor<64xf32, #ttg.slice<{{dim = 1, parent = #host}}>>
    %4 = arith.mulf %3, %s : tensor<64xf32, #ttg.slice<{{dim = 1, parent = #host}}>>
    %p = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>, #ttg.slice<{{dim = 1, parent = #host}}>>
    %q = tt.addptr %p, %offsets : tensor<64x!tt.ptr<f32>, #ttg.slice<{{dim = 1, parent = #host}}>>, tensor<64xi32, #ttg.slice<{{dim = 1, parent = #host}}>>
{tail}    tt.store %q, %4 : tensor<64x!tt.ptr<f32>, #ttg.slice<{{dim = 1, parent = #host}}>>
    tt.return
  }}
''')


def joined(text: str, target: str):
    """``text`` after ``join conversions`` and ``canonicalize folds``, with results 1 and 2 of
    region 0 planned, and what the pass moved."""
    module, context, _ = parsed(text, target)
    state = stitch_of(context, target)
    region = state.compile.new_region("g_stats", "gluon", CallSite("k.py", 4), "", shared_bytes=0, lines=())
    row = {name: f"tensor<64xf32, #ttg.slice<{{dim = 1, parent = {attribute}}}>>"
           for name, attribute in layouts(target).items()}
    for index in (1, 2):
        state.compile.plan(region, "out", index, f"return[{index}]", row["mine"], row["host"])
    return module, run_pass(state, module, "join conversions", "canonicalize folds").folded.moved


@pytest.mark.ir_pass("join conversions", "canonicalize folds")
@pytest.mark.parametrize("target", TARGETS)
def test_two_results_converted_for_the_hosts_arithmetic_convert_once_after_it(target):
    module, moved = joined(statistics(target), target)
    assert moved == {"0:out:1": Moved.JOINED, "0:out:2": Moved.JOINED}
    body = printed(module, layouts(target))
    mine = "tensor<64xf32, #ttg.slice<{dim = 1, parent = #mine}>>"
    assert f"math.log2 %arg0 : {mine}" in body and "arith.addf %arg1, " in body
    assert f"tt.splat %arg4 : f32 -> {mine}" in body   # the splat beside them, made again in their layout
    assert count(module, "ttg.convert_layout") == 1
    lines = body.splitlines()
    store = next(k for k, line in enumerate(lines) if "tt.store" in line)
    assert '{hybrid.boundary = "0:out:1"}' in lines[store - 1] and f"{mine} -> " in lines[store - 1]


@pytest.mark.ir_pass("join conversions")
def test_arithmetic_whose_values_are_used_elsewhere_too_is_left_in_the_hosts_layout():
    """Moving it would convert ``log2(l)`` and the sum, two conversions for the two it saves."""
    host = "tensor<64xf32, #ttg.slice<{dim = 1, parent = #host}>>"
    text = statistics("sm90a", f"    tt.store %q, %2 : {host.replace('64xf32', '64x!tt.ptr<f32>')}\n")
    module, moved = joined(text, "sm90a")
    assert moved == {} and count(module, "ttg.convert_layout") == 2
    assert f"math.log2 %0 : {host}" in printed(module, layouts("sm90a"))
