"""Marked accesses issued as AMD buffer ops where Triton's ``ConvertToBufferOps`` would
(the pass ``buffer access``, ``lowering/buffer_access.resolve``): a Gluon function's load and store of its caller's tile,
``base + offsets``, once stitched; on NVIDIA and where Triton cannot prove the offsets in range,
plain global accesses, the marks gone."""
import pytest

from interop.stitching import opaque
from tests.passes.modules import LANES, blocked, conditions, count, module_text, parsed, printed, run_pass, stitch_of


def layouts(target: str) -> dict[str, str]:
    return {"row": blocked([4], [LANES[target]], [4], [0])}


def accesses(target: str, offsets: str) -> str:
    """A marked load of ``x + offsets`` and a marked store (in ``scf.if`` on its flag) to ``y + offsets``;
    ``offsets`` is the name of a value defined in the body (``%range``: 0..1023, ``%n``: unknown)."""
    return module_text(target, layouts(target), f'''  tt.func public @k(%x: !tt.ptr<f32>, %y: !tt.ptr<f32>, %k: i32) {{
    %range = tt.make_range {{end = 1024 : i32, start = 0 : i32}} : tensor<1024xi32, #row>
    %n = tt.splat %k : i32 -> tensor<1024xi32, #row>
    %0 = tt.splat %x : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>, #row>
    %1 = tt.addptr %0, {offsets} : tensor<1024x!tt.ptr<f32>, #row>, tensor<1024xi32, #row>
    %2 = tt.load %1 {{hybrid.buffer = ""}} : tensor<1024x!tt.ptr<f32>, #row>
    %3 = tt.splat %y : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>, #row>
    %4 = tt.addptr %3, {offsets} : tensor<1024x!tt.ptr<f32>, #row>, tensor<1024xi32, #row>
    %5 = tt.elementwise_inline_asm "hybrid.buffer_store" {{constraints = "=r", packed_element = 1 : i32, pure = true}} -> i1
    scf.if %5 {{
      tt.store %4, %2 : tensor<1024x!tt.ptr<f32>, #row>
    }}
    tt.return
  }}
''')


@pytest.mark.ir_pass("buffer access")
@pytest.mark.parametrize("host", ["triton", "gluon"])
def test_on_gfx942_an_access_triton_proves_in_range_is_a_buffer_op_from_the_same_base_and_offsets(host):
    module, context, _ = parsed(accesses("gfx942", "%range"), "gfx942")
    run_pass(stitch_of(context, "gfx942", host), module, "buffer access")
    body = printed(module, layouts("gfx942"))
    assert "amdg.buffer_load %arg0[%0]" in body and "amdg.buffer_store %1, %arg1[%0]" in body
    assert count(module, "tt.load") == count(module, "tt.store") == count(module, "scf.if") == 0
    assert "hybrid." not in body and not opaque.markers(module)


@pytest.mark.ir_pass("buffer access")
@pytest.mark.parametrize("target, offsets", [("gfx942", "%n"), ("sm90a", "%range")],
                         ids=["unproven-offsets", "nvidia"])
def test_any_other_access_stays_the_global_access_unmarked(target, offsets):
    module, context, _ = parsed(accesses(target, offsets), target)
    run_pass(stitch_of(context, target), module, "buffer access")
    body = printed(module, layouts(target))
    assert count(module, "tt.load") == count(module, "tt.store") == 1 and "amdg." not in body
    assert "hybrid." not in body and conditions(module) <= {"%true"}   # the store's guard taken always
