"""Loop invariants hoisted in a Triton host (``hoist invariants``): what a region brings into the
host's loop was never through Triton's loop-invariant code motion (its ``make_ttir`` runs it
before layouts; Gluon's pipeline has none), so a port's index arithmetic on the kernel's scalars
stayed in every iteration (shrunk from the descriptor persistent matmul's epilogue)."""
import pytest

from interop.region import CallSite
from tests.passes.modules import LANES, blocked, module_text, parsed, printed, run_pass, stitch_of


def loop(target: str) -> tuple[str, dict[str, str]]:
    layouts = {"one": blocked([4], [LANES[target]], [4], [0])}
    return module_text(target, layouts, '''  tt.func public @k(%x: !tt.ptr<f32>, %n: i32) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    scf.for %i = %c0 to %n step %c1  : i32 {
      %0 = tt.make_range {end = 512 : i32, start = 0 : i32} : tensor<512xi32, #one>
      %1 = tt.splat %x : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>, #one>
      %2 = tt.addptr %1, %0 : tensor<512x!tt.ptr<f32>, #one>, tensor<512xi32, #one>
      %3 = tt.load %2 : tensor<512x!tt.ptr<f32>, #one>
      %4 = tt.splat %i : i32 -> tensor<512xi32, #one>
      %5 = arith.addi %0, %4 : tensor<512xi32, #one>
      %6 = tt.addptr %1, %5 : tensor<512x!tt.ptr<f32>, #one>, tensor<512xi32, #one>
      tt.store %6, %3 : tensor<512x!tt.ptr<f32>, #one>
    }
    tt.return
  }
'''), layouts


@pytest.mark.ir_pass("hoist invariants")
@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
def test_pure_ops_on_values_the_loop_does_not_change_move_before_it(target):
    text, layouts = loop(target)
    module, context, _ = parsed(text, target)
    state = stitch_of(context, target)
    state.region_in_loop = True   # (what ``inline`` notes of a region called in the loop)
    run_pass(state, module, "hoist invariants")
    lines = printed(module, layouts).splitlines()
    start = next(k for k, line in enumerate(lines) if "scf.for" in line)
    where = {op: next(k for k, line in enumerate(lines) if op in line)
             for op in ("tt.make_range", "tt.splat %arg0", "tt.addptr %1, %0", "tt.load", "tt.splat %arg2", "arith.addi")}
    assert all(where[op] < start for op in ("tt.make_range", "tt.splat %arg0", "tt.addptr %1, %0"))
    # what the loop changes, and a load (not free of effects), stay in it
    assert all(where[op] > start for op in ("tt.load", "tt.splat %arg2", "arith.addi"))


@pytest.mark.ir_pass("inline")
@pytest.mark.parametrize("in_loop", [True, False])
def test_inline_notes_whether_a_region_is_called_in_a_loop_of_the_host(in_loop):
    """The loop of ``loop`` calling a region inside it, or before it."""
    text, layouts = loop("sm90a")
    call = "      tt.call @__hybrid_r0_g() : () -> ()\n"
    text = text.replace("      tt.store", call + "      tt.store") if in_loop else \
        text.replace("    scf.for", call.replace("      ", "    ", 1) + "    scf.for")
    text = text.replace("    tt.return\n  }\n", "    tt.return\n  }\n  tt.func private @__hybrid_r0_g() {\n    tt.return\n  }\n")
    module, context, _ = parsed(text, "sm90a")
    state = stitch_of(context, "sm90a")
    state.compile.new_region("g", "gluon", CallSite("k.py", 4), "", shared_bytes=0, lines=())
    run_pass(state, module, "inline")
    assert state.region_in_loop is in_loop


@pytest.mark.ir_pass("hoist invariants")
def test_without_a_region_in_a_loop_the_loops_are_left_as_triton_made_them():
    text, layouts = loop("sm90a")
    module, context, _ = parsed(text, "sm90a")
    run_pass(stitch_of(context, "sm90a"), module, "hoist invariants")
    assert printed(module, layouts) == printed(parsed(text, "sm90a")[0], layouts)


@pytest.mark.slow
def test_a_kernel_without_a_region_keeps_tritons_loops():
    """Hoisted at ttgir, the descriptor persistent matmul's tile loop on sm80 builds to 8 more
    instructions than Triton's: a kernel no region was inlined into is left as Triton made it."""
    import hybrid
    from bench import parity_ports as pp
    from examples.layouts import compile_pure
    from hybrid.port.compare import as_hybrid
    from interop.instrumentation.resources import instructions
    signature, constexprs, divisible = pp.PERSISTENT_SIGNATURE, pp.PERSISTENT_CONSTEXPRS, pp.PERSISTENT_DIVISIBLE
    built = hybrid.compile(as_hybrid(pp.matmul_descriptor_persistent), signature, constexprs, "sm80", num_warps=4,
                           divisible=divisible)
    plain = compile_pure(pp.matmul_descriptor_persistent, signature, constexprs, "sm80", 4, divisible=divisible)
    assert not built.regions and instructions(built.asm) == instructions(plain.asm)
