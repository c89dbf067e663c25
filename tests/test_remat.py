"""Index arithmetic made again in another layout instead of converted (``interop/stitching/remat.py``): a
boundary's conversion of a pointer tile built from scalars, and a region's conversion of
arithmetic on its tensor argument inside a loop (hoisted to one conversion of the argument)."""
import pytest

from interop.ir.canonicalize import canonicalize
from interop.ir.verify import verify
from interop.ir.walk import function_blocks
from interop.stitching import remat
from interop.triton.bindings import gluon_ir, ir, parse_module

pytestmark = pytest.mark.version

LAYOUTS = '''#rows = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#pairs = #ttg.blocked<{sizePerThread = [2, 8], threadsPerWarp = [8, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, ttg.target = "hip:gfx942", "ttg.threads-per-warp" = 64 : i32} {
'''
#: A V pointer tile (rows of 64 fp16, as attention builds it) in 16-byte rows, a loaded tile.
TILE = '''    %cst = arith.constant dense<64> : tensor<64x1xi32, #rows>
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #ttg.slice<{dim = 1, parent = #rows}>>
    %c = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #ttg.slice<{dim = 0, parent = #rows}>>
    %r2 = tt.expand_dims %r {axis = 1 : i32} : tensor<64xi32, #ttg.slice<{dim = 1, parent = #rows}>> -> tensor<64x1xi32, #rows>
    %rs = arith.muli %r2, %cst : tensor<64x1xi32, #rows>
    %p = tt.splat %V : !tt.ptr<f16> -> tensor<64x1x!tt.ptr<f16>, #rows>
    %p1 = tt.addptr %p, %rs : tensor<64x1x!tt.ptr<f16>, #rows>, tensor<64x1xi32, #rows>
    %c2 = tt.expand_dims %c {axis = 0 : i32} : tensor<64xi32, #ttg.slice<{dim = 0, parent = #rows}>> -> tensor<1x64xi32, #rows>
    %pb = tt.broadcast %p1 : tensor<64x1x!tt.ptr<f16>, #rows> -> tensor<64x64x!tt.ptr<f16>, #rows>
    %cb = tt.broadcast %c2 : tensor<1x64xi32, #rows> -> tensor<64x64xi32, #rows>
    %ptrs = tt.addptr %pb, %cb : tensor<64x64x!tt.ptr<f16>, #rows>, tensor<64x64xi32, #rows>
    %x = tt.load %ptrs : tensor<64x64x!tt.ptr<f16>, #rows>
'''
BOUNDARIES = LAYOUTS + '''  tt.func public @host(%V: !tt.ptr<f16>, %O: !tt.ptr<f16>) {
''' + TILE + '''    %wanted = ttg.convert_layout %ptrs {hybrid.boundary = "0:in:0"} : tensor<64x64x!tt.ptr<f16>, #rows> -> tensor<64x64x!tt.ptr<f16>, #pairs>
    %loaded = ttg.convert_layout %x {hybrid.boundary = "0:in:1"} : tensor<64x64xf16, #rows> -> tensor<64x64xf16, #pairs>
    %y = tt.load %wanted : tensor<64x64x!tt.ptr<f16>, #pairs>
    %z = arith.addf %y, %loaded : tensor<64x64xf16, #pairs>
    %o = tt.splat %O : !tt.ptr<f16> -> tensor<64x64x!tt.ptr<f16>, #pairs>
    tt.store %o, %z : tensor<64x64x!tt.ptr<f16>, #pairs>
    tt.return
  }
}
'''
#: A region's loop converting arithmetic on its pointer argument every iteration (AMD's late
#: load layout for a dot operand).
REGION = LAYOUTS + '''  tt.func public @region(%n: i32, %O: !tt.ptr<f16>, %ptrs: tensor<64x64x!tt.ptr<f16>, #rows>) {
    %c0 = arith.constant 0 : i32
    %c64 = arith.constant 64 : i32
    %zero = arith.constant dense<0.0> : tensor<64x64xf16, #pairs>
    %sum = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %zero) -> (tensor<64x64xf16, #pairs>) : i32 {
      %step = tt.splat %i : i32 -> tensor<64x64xi32, #rows>
      %moved = tt.addptr %ptrs, %step : tensor<64x64x!tt.ptr<f16>, #rows>, tensor<64x64xi32, #rows>
      %wanted = ttg.convert_layout %moved : tensor<64x64x!tt.ptr<f16>, #rows> -> tensor<64x64x!tt.ptr<f16>, #pairs>
      %y = tt.load %wanted : tensor<64x64x!tt.ptr<f16>, #pairs>
      %next = arith.addf %acc, %y : tensor<64x64xf16, #pairs>
      scf.yield %next : tensor<64x64xf16, #pairs>
    }
    %o = tt.splat %O : !tt.ptr<f16> -> tensor<64x64x!tt.ptr<f16>, #pairs>
    tt.store %o, %sum : tensor<64x64x!tt.ptr<f16>, #pairs>
    tt.return
  }
}
'''


#: The same arithmetic converted in the loop and after it: each use gets its own ops (the ones made
#: inside the loop do not dominate the use after it).
TWO_USES = LAYOUTS + '''  tt.func public @region(%n: i32, %O: !tt.ptr<f16>, %ptrs: tensor<64x64x!tt.ptr<f16>, #rows>) {
    %c0 = arith.constant 0 : i32
    %c64 = arith.constant 64 : i32
    %cst = arith.constant dense<64> : tensor<64x64xi32, #rows>
    %base = tt.addptr %ptrs, %cst : tensor<64x64x!tt.ptr<f16>, #rows>, tensor<64x64xi32, #rows>
    %zero = arith.constant dense<0.0> : tensor<64x64xf16, #pairs>
    %sum = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %zero) -> (tensor<64x64xf16, #pairs>) : i32 {
      %step = tt.splat %i : i32 -> tensor<64x64xi32, #rows>
      %moved = tt.addptr %base, %step : tensor<64x64x!tt.ptr<f16>, #rows>, tensor<64x64xi32, #rows>
      %wanted = ttg.convert_layout %moved : tensor<64x64x!tt.ptr<f16>, #rows> -> tensor<64x64x!tt.ptr<f16>, #pairs>
      %y = tt.load %wanted : tensor<64x64x!tt.ptr<f16>, #pairs>
      %next = arith.addf %acc, %y : tensor<64x64xf16, #pairs>
      scf.yield %next : tensor<64x64xf16, #pairs>
    }
    %last = ttg.convert_layout %base : tensor<64x64x!tt.ptr<f16>, #rows> -> tensor<64x64x!tt.ptr<f16>, #pairs>
    %z = tt.load %last : tensor<64x64x!tt.ptr<f16>, #pairs>
    %both = arith.addf %sum, %z : tensor<64x64xf16, #pairs>
    %o = tt.splat %O : !tt.ptr<f16> -> tensor<64x64x!tt.ptr<f16>, #pairs>
    tt.store %o, %both : tensor<64x64x!tt.ptr<f16>, #pairs>
    tt.return
  }
}
'''


def _parsed(text: str):
    context = ir.context()
    ir.load_dialects(context)
    return parse_module(text, context), context


def _body(module) -> str:
    """The printed module without locations, its two layouts under the names the test gave them
    (the printer names them anew)."""
    lines = [line for line in str(module).splitlines() if not line.startswith("#loc")]
    names = {}
    for line in lines:
        if line.startswith("#") and "sizePerThread" in line:
            names[line.split(" = ", 1)[0]] = "#pairs" if "sizePerThread = [2, 8]" in line else "#rows"
    text = "\n".join(line for line in lines if not line.startswith("#"))
    for alias in sorted(names, key=len, reverse=True):
        text = text.replace(alias + ">", names[alias] + ">").replace(alias + ",", names[alias] + ",")
    return text


def test_a_boundary_conversion_of_a_pointer_tile_becomes_the_tile_made_in_the_wanted_layout():
    module, context = _parsed(BOUNDARIES)
    recomputed, changed = remat.recompute_boundary_conversions(module, gluon_ir.GluonOpBuilder(context))
    canonicalize(module, context)
    verify(module, "the test's rewrite")
    assert recomputed == {"0:in:0"} and changed   # the loaded tile is data: it stays converted
    body = _body(module)
    assert body.count("ttg.convert_layout") == 1 and "xf16, #rows> -> tensor<64x64xf16, #pairs>" in body
    pairs = [line for line in body.splitlines() if "tt.make_range" in line]
    assert len(pairs) == 4   # both ranges, in the host's layout (its own load) and in the wanted one
    assert "tt.load %" in body and "x!tt.ptr<f16>, #pairs>" in body


def test_a_regions_conversion_in_its_loop_becomes_one_conversion_of_its_argument_at_the_entry():
    module, context = _parsed(REGION)
    function = module.get_function("region")
    entry = function_blocks(module, function)[0]
    builder = gluon_ir.GluonOpBuilder(context)
    assert remat.hoist_argument_conversions(module, entry, [entry.arg(2)], builder) == 1
    canonicalize(module, context)
    verify(module, "the test's rewrite")
    body = _body(module)
    before_loop, loop = body.split("scf.for", 1)
    assert "ttg.convert_layout %arg2 : tensor<64x64x!tt.ptr<f16>, #rows> -> tensor<64x64x!tt.ptr<f16>, #pairs>" \
        in before_loop
    assert "ttg.convert_layout" not in loop
    assert "tt.addptr" in loop and "tensor<64x64xi32, #pairs>" in loop


def test_arithmetic_converted_in_a_loop_and_after_it_is_made_again_for_each_use():
    module, context = _parsed(TWO_USES)
    entry = function_blocks(module, module.get_function("region"))[0]
    assert remat.hoist_argument_conversions(module, entry, [entry.arg(2)], gluon_ir.GluonOpBuilder(context)) == 2
    canonicalize(module, context)
    verify(module, "the test's rewrite")   # every op made dominates its use
    body = _body(module)
    assert body.count("ttg.convert_layout") == 1 and "ttg.convert_layout" not in body.split("scf.for", 1)[1]


def test_the_printed_module_gives_each_ops_integers_as_the_op_does():
    """``compat.Integers`` on 3.6 and 3.7 reads each op's line of one print (its value named by
    a name location); where the bindings read the op (3.8+) both ways must agree, and on every
    version the printed read leaves the module's locations as they were."""
    from interop.triton import compat
    module, context = _parsed(BOUNDARIES.replace("%x = tt.load %ptrs :", "%b = arith.cmpi sge, %r2, %cst : "
                                                 "tensor<64x1xi32, #rows>\n    %x = tt.load %ptrs :"))
    builder = ir.builder(context)
    before = str(module)
    printed, direct = compat.Integers(module, builder, direct=False), compat.Integers(module, builder)
    assert str(module) == before
    ops = []
    module.walk(lambda op: ops.append(op) if op.get_name() in ("tt.make_range", "arith.constant", "tt.expand_dims",
                                                                "arith.cmpi") else None)
    read = {(op.get_name(), name, printed.int_attr(op, name)) for op in ops for name in ("start", "end", "axis")
            if printed.int_attr(op, name) is not None}
    assert read == {("tt.make_range", "start", 0), ("tt.make_range", "end", 64), ("tt.expand_dims", "axis", 1),
                    ("tt.expand_dims", "axis", 0)}
    assert [printed.int_attr(op, "predicate") for op in ops if op.get_name() == "arith.cmpi"] == [5]   # sge
    assert [printed.integer_constant(op) for op in ops if op.get_name() == "arith.constant"] == [64]
    for op in ops:
        for name in ("start", "end", "axis", "predicate"):
            if op.get_name() != "arith.cmpi" or name == "predicate":
                assert printed.int_attr(op, name) == direct.int_attr(op, name) or direct.int_attr(op, name) is None
        if op.get_name() == "arith.constant":
            assert printed.integer_constant(op) == direct.integer_constant(op)
