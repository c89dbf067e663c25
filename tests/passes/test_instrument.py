"""Proton scopes placed after stitching (``place scopes``, ``instrumentation/instrument.bracket``): the
kernel scope around the kernel's whole body, before each of its returns, and a scope around each
pipelined loop timed whole (shrunk from ``tests/triton_hosts.py``'s ``h_pipelined_loop`` on sm90a);
such a loop found again once the host's layout passes made it anew (``relocate scopes``)."""
import pytest

from interop.errors import RegionError
from interop.instrumentation import instrument
from interop.region import CallSite
from interop.triton.bindings import parse_module
from tests.passes.modules import LANES, blocked, module_text, ops, parsed, run_pass, stitch_of

SITE = CallSite("k.py", 7)


def instrumented(context, target: str):
    """The state of an instrumented compile whose one region, ``r2`` say, is ``g_sum``."""
    state = stitch_of(context, target, instrument_regions=True)
    instrument.load_dialect(context)
    for name in ("g_a", "g_b", "g_sum"):
        state.compile.new_region(name, "gluon", SITE, "", shared_bytes=0, lines=())
    state.compile.regions = state.compile.regions[2:]
    return state


def kernel(target: str) -> str:
    """A loop summing rows (its body: region 2's code, say), an early return, and the last one."""
    return module_text(target, {"row": blocked([4], [LANES[target]], [4], [0])}, '''  tt.func public @k(%x: tensor<1024x!tt.ptr<f32>, #row>, %y: tensor<1024x!tt.ptr<f32>, #row>, %n: i32, %stop: i1) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<1024xf32, #row>
    %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<1024xf32, #row>) : i32 {
      %0 = tt.load %x : tensor<1024x!tt.ptr<f32>, #row>
      %1 = arith.addf %acc, %0 : tensor<1024xf32, #row>
      scf.yield %1 : tensor<1024xf32, #row>
    }
    cf.cond_br %stop, ^early, ^last
  ^early:
    tt.return
  ^last:
    tt.store %y, %sum : tensor<1024x!tt.ptr<f32>, #row>
    tt.return
  }
''')


def bracketed(target: str, timed: bool):
    module, context, _ = parsed(kernel(target), target)
    state = instrumented(context, target)
    if timed:
        state.compile.scopes.timed_loops = {ops(module, "scf.for")[0].get_region(0).id(): state.regions}
    run_pass(state, module, "place scopes")
    return [line.strip() for line in module.str_nodebug().splitlines()]


def _records(lines: list[str]) -> list[str]:
    return [line for line in lines if "proton.record" in line]


@pytest.mark.ir_pass("place scopes")
@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
def test_the_kernel_scope_opens_the_body_and_closes_before_every_return(target):
    lines = bracketed(target, timed=False)
    assert _records(lines) == ['proton.record start "kernel"'] + ['proton.record end "kernel"'] * 2
    body = lines[next(k for k, line in enumerate(lines) if line.startswith("tt.func public")) + 1:]
    assert body[0] == 'proton.record start "kernel"'
    for k, line in enumerate(body):
        if line == "tt.return":
            assert body[k - 1] == 'proton.record end "kernel"'


@pytest.mark.ir_pass("place scopes")
def test_a_pipelined_loop_timed_whole_gets_its_own_scope_around_it():
    lines = bracketed("sm90a", timed=True)
    assert _records(lines)[:3] == ['proton.record start "kernel"', 'proton.record start "loop0[r2]"',
                                   'proton.record end "loop0[r2]"']
    start, end = lines.index('proton.record start "loop0[r2]"'), lines.index('proton.record end "loop0[r2]"')
    assert "scf.for" in lines[start + 1] and lines[end - 1] == "}"


@pytest.mark.ir_pass("place scopes")
def test_a_compile_without_instrumented_regions_gets_no_scope():
    module, context, _ = parsed(kernel("sm90a"), "sm90a")
    run_pass(stitch_of(context, "sm90a"), module, "place scopes")
    assert "proton" not in module.str_nodebug()


#: A loop the pipeliner transformed (it waits on copies started earlier), a region's code in it.
PIPELINED = kernel("sm90a").replace("      %0 = tt.load", "      %w = ttg.async_wait {num = 0 : i32}\n      %0 = tt.load")


def timed_in_loop(context):
    """The state of a compile whose region in ``PIPELINED``'s loop is timed with the loop, and
    the module it was recorded on."""
    recorded = parse_module(PIPELINED, context)
    state = instrumented(context, "sm90a")
    assert not state.compile.scopes.around_region(recorded, state.regions[0], ops(recorded, "tt.load")[0])
    return state, recorded


@pytest.mark.ir_pass("relocate scopes")
def test_a_loop_timed_whole_is_found_again_in_the_module_the_layout_passes_made():
    module, context, _ = parsed(PIPELINED, "sm90a")   # the loop made anew (another op, another body)
    state, recorded = timed_in_loop(context)
    assert list(state.compile.scopes.timed_loops) == [ops(recorded, "scf.for")[0].get_region(0).id()]
    run_pass(state, module, "relocate scopes")
    assert state.compile.scopes.timed_loops == {ops(module, "scf.for")[0].get_region(0).id(): state.regions}


@pytest.mark.ir_pass("relocate scopes")
def test_a_timed_loop_gone_after_the_layout_passes_is_named_with_the_pass():
    module, context, _ = parsed(module_text("sm90a", {}, "  tt.func public @k() {\n    tt.return\n  }\n"), "sm90a")
    state, _ = timed_in_loop(context)
    with pytest.raises(RegionError, match=r"the pass 'relocate scopes' failed: the host has 0 loops after its layout "
                                          r"passes, 1 before"):
        run_pass(state, module, "relocate scopes")
