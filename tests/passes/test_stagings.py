"""One staging of a value into shared memory where the stitched kernel makes two (``merge
stagings``, ``stitching/stagings.py``): two ports of one function at two call sites, each staging
the kernel's ``q`` (through its own entry conversion) and loading it for its dot, as attention's
causal ``kv_loop`` does on gfx950 (shrunk)."""
import pytest

from tests.passes.modules import LANES, blocked, count, module_text, ops, parsed, printed, run_pass, stitch_of

SHARED = {"shared": "#ttg.swizzled_shared<{vec = 2, perPhase = 2, maxPhase = 4, order = [1, 0]}>",
          "smem": "#ttg.shared_memory"}


def twice(target: str, between: str = "") -> tuple[str, dict[str, str]]:
    layouts = {"rows": blocked([1, 4], [LANES[target] // 16, 16], [4, 1], [1, 0]), **SHARED}
    buffer = "!ttg.memdesc<64x64xf16, #shared, #smem, mutable>"
    return module_text(target, layouts, f'''  tt.func public @k(%q: tensor<64x64xf16, #rows>, %y: !tt.ptr<f16>, %offs: tensor<64x64xi32, #rows>) {{
    %0 = ttg.local_alloc %q : (tensor<64x64xf16, #rows>) -> {buffer}
    %1 = ttg.local_load %0 : {buffer} -> tensor<64x64xf16, #rows>
    %c = ttg.convert_layout %q : tensor<64x64xf16, #rows> -> tensor<64x64xf16, #rows>
    %2 = ttg.local_alloc %c : (tensor<64x64xf16, #rows>) -> {buffer}
{between}    %3 = ttg.local_load %2 : {buffer} -> tensor<64x64xf16, #rows>
    %4 = arith.addf %1, %3 : tensor<64x64xf16, #rows>
    %p = tt.splat %y : !tt.ptr<f16> -> tensor<64x64x!tt.ptr<f16>, #rows>
    %a = tt.addptr %p, %offs : tensor<64x64x!tt.ptr<f16>, #rows>, tensor<64x64xi32, #rows>
    tt.store %a, %4 : tensor<64x64x!tt.ptr<f16>, #rows>
    tt.return
  }}
'''), layouts


@pytest.mark.ir_pass("merge stagings", "canonicalize")
@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
def test_a_value_staged_twice_and_only_read_is_staged_and_loaded_once(target):
    text, layouts = twice(target)
    module, context, _ = parsed(text, target)
    run_pass(stitch_of(context, target), module, "merge stagings", "canonicalize")
    assert count(module, "ttg.local_alloc") == 1 and count(module, "ttg.local_load") == 1
    (load, ) = ops(module, "ttg.local_load")
    (add, ) = ops(module, "arith.addf")
    assert add.get_operand(0).id() == add.get_operand(1).id() == load.get_result(0).id()


@pytest.mark.ir_pass("merge stagings")
def test_a_buffer_written_after_its_staging_keeps_its_own():
    text, layouts = twice("sm90a", "    ttg.local_store %q, %2 : tensor<64x64xf16, #rows> -> "
                                   "!ttg.memdesc<64x64xf16, #shared, #smem, mutable>\n")
    module, context, _ = parsed(text, "sm90a")
    run_pass(stitch_of(context, "sm90a"), module, "merge stagings")
    assert count(module, "ttg.local_alloc") == 2
    assert printed(module, layouts) == printed(parsed(text, "sm90a")[0], layouts)
