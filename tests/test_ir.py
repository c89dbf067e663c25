"""The IR utilities every step uses (``interop/ir/``)."""
from interop.ir.copy import copy_module
from interop.ir.verify import verify
from interop.triton.bindings import gluon_ir, ir, parse_module

#: A splat constant converted at a boundary into an MFMA layout.
KERNEL = '''#rows = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#mma = #ttg.amd_mfma<{version = 3, warpsPerCTA = [4, 1], instrShape = [32, 32, 8], isTransposed = true}>
module attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, ttg.target = "hip:gfx942", "ttg.threads-per-warp" = 64 : i32} {
  tt.func public @host(%O: !tt.ptr<f32>) {
    %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #rows>
    %wanted = ttg.convert_layout %zero {hybrid.boundary = "0:in:0"} : tensor<64x64xf32, #rows> -> tensor<64x64xf32, #mma>
    %o = tt.splat %O : !tt.ptr<f32> -> tensor<64x64x!tt.ptr<f32>, #mma>
    tt.store %o, %wanted : tensor<64x64x!tt.ptr<f32>, #mma>
    tt.return
  }
}
'''


def _parsed(text: str):
    context = ir.context()
    ir.load_dialects(context)
    return parse_module(text, context), context


def test_a_copy_verifies_and_is_independent_of_the_original():
    module, context = _parsed(KERNEL)
    copy = copy_module(module, context)
    verify(copy, "copying")
    assert str(copy) == str(module)
    builder = gluon_ir.GluonOpBuilder(context)
    for changed, other in ((copy, module), (module, copy)):   # each changes on its own
        marked = str(id(changed))
        _conversion(changed).get_result(0).set_attr("hybrid.test", builder.get_string_attr(marked))
        assert marked in str(changed) and marked not in str(other)
    verify(module, "marking the original and its copy")


def _conversion(module):
    found: list = []
    module.walk(lambda op: found.append(op) if op.get_name() == "ttg.convert_layout" else None)
    return found[0]
