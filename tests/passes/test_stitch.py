"""Splicing a lowered region into its host, inlining it, connecting its results (the passes
``splice Triton calls``, ``inline``, ``connect results``; ``interop/stitching/stitch.py``: ``splice``,
``bind_ports``, ``inline``, ``connect_results``, ``check_no_markers``), on a Gluon host calling a
Triton region that loads a row (``tests/kernels.py``'s ``k_fold``, shrunk)."""
from dataclasses import dataclass

import pytest

from interop.ir.walk import function_blocks
from interop.errors import RegionError
from interop.lowering.triton_regions import PendingSplice
from interop.region import CallSite
from interop.stitching import stitch
from interop.triton.bindings import parse_module
from tests.passes.modules import LANES, blocked, count, module_text, ops, parsed, printed, run_pass, stitch_of


def layouts(target: str) -> dict[str, str]:
    lanes = LANES[target]
    return {"row": blocked([2], [lanes], [4], [0]), "vec": blocked([4], [lanes], [4], [0])}


#: The region's body as lowered: it loads the row and sinks it (its result) under ``%enable``.
REGION_BODY = '''    %cst = arith.constant dense<0.000000e+00> : tensor<256xf32, #row>
    %0 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32, #row>
    %1 = tt.splat %n : i32 -> tensor<256xi32, #row>
    %2 = arith.cmpi slt, %0, %1 : tensor<256xi32, #row>
    %3 = tt.splat %x : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>, #row>
    %4 = tt.addptr %3, %0 : tensor<256x!tt.ptr<f32>, #row>, tensor<256xi32, #row>
    %5 = tt.load %4, %2, %cst : tensor<256x!tt.ptr<f32>, #row>
    %6 = tt.elementwise_inline_asm "hybrid.enable" {constraints = "=r", packed_element = 1 : i32, pure = true} -> i1
    scf.if %6 {
      %7 = tt.elementwise_inline_asm "hybrid.out.0" {constraints = "=r,r", hybrid.sink = "0:0", packed_element = 1 : i32, pure = false} %5 : tensor<256xf32, #row> -> tensor<256xf32, #row>
    }
    tt.return
'''
#: The host: it calls the region, takes its result from a placeholder, scales it and stores it.
HOST = '''  tt.func public @k_fold(%x: !tt.ptr<f32>, %y: !tt.ptr<f16>, %n: i32) {
    tt.call @__hybrid_r0_t_arange_load(%x, %n) : (!tt.ptr<f32>, i32) -> ()
    %0 = ub.poison : tensor<256xf32, #row>
    %1 = tt.elementwise_inline_asm "hybrid.result.0:0" {constraints = "=r,r", hybrid.result = "0:0", packed_element = 1 : i32, pure = true} %0 : tensor<256xf32, #row> -> tensor<256xf32, #row>
    %cst = arith.constant dense<2.000000e+00> : tensor<256xf32, #row>
    %2 = arith.mulf %1, %cst : tensor<256xf32, #row>
    %3 = arith.truncf %2 : tensor<256xf32, #row> to tensor<256xf16, #row>
    %4 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32, #vec>
    %5 = tt.splat %y : !tt.ptr<f16> -> tensor<256x!tt.ptr<f16>, #vec>
    %6 = tt.addptr %5, %4 : tensor<256x!tt.ptr<f16>, #vec>, tensor<256xi32, #vec>
    %7 = ttg.convert_layout %3 : tensor<256xf16, #row> -> tensor<256xf16, #vec>
    tt.store %6, %7 : tensor<256x!tt.ptr<f16>, #vec>
    tt.return
  }
'''
#: The host, its call discarded (the result's placeholder left without the region's value).
UNCALLED = HOST.replace("    tt.call @__hybrid_r0_t_arange_load(%x, %n) : (!tt.ptr<f32>, i32) -> ()\n", "")
SPLICED = HOST + '''  tt.func private @__hybrid_r0_t_arange_load(%x: !tt.ptr<f32>, %n: i32) {
''' + REGION_BODY + '''  }
'''


def spliced(target: str):
    return parsed(module_text(target, layouts(target), SPLICED), target)


@dataclass
class Lowered:
    """What ``bind_ports`` and ``splice`` read of a ``lower_triton.LoweredRegion``."""
    module: object
    function: object
    leaf_is_tensor: list


def unspliced(target: str):
    """The host, its placeholder declared, and the state of its compile: the region lowered (its
    module, in the host's context), waiting for its splice. Returns (module, state, lowered module)."""
    host = module_text(target, layouts(target), HOST + '''  tt.func private @__hybrid_r0_t_arange_load(!tt.ptr<f32>, i32)
''')
    region = module_text(target, layouts(target), '''  tt.func public @region(%x: !tt.ptr<f32>, %n: i32) {
''' + REGION_BODY + '''  }
''')
    module, context, _ = parsed(host, target)
    lowered = parse_module(region, context)
    state = stitch_of(context, target, "gluon")
    pending(state, module, Lowered(lowered, lowered.get_function("region"), [False, False]), ())
    return module, state, lowered


def pending(state, module, lowered: Lowered, tensor_types: tuple) -> None:
    """A call of ``t_arange_load`` (region 0) lowered to ``lowered``, waiting for its splice."""
    region = state.compile.new_region("t_arange_load", "triton", CallSite("k.py", 3), "", shared_bytes=0, lines=())
    state.compile.triton._pending.append(PendingSplice(region, lowered, module.get_function(region.symbol),
                                                       tensor_types, fn=None, args=[], leaf_names=()))


@pytest.mark.ir_pass("splice Triton calls")
def test_splice_moves_the_regions_body_into_the_hosts_placeholder():
    target = "sm90a"
    module, state, lowered = unspliced(target)
    run_pass(state, module, "splice Triton calls")
    placeholder = printed(module, layouts(target)).split("tt.func private @__hybrid_r0_t_arange_load(")[1]
    assert "tt.load" in placeholder and '"hybrid.out.0"' in placeholder
    assert count(lowered, "tt.load") == 0   # moved, not copied


@pytest.mark.ir_pass("splice Triton calls")
def test_a_splice_the_host_passes_another_tensor_type_to_is_named_with_its_region():
    target = "sm90a"
    module, context, _ = parsed(module_text(target, layouts(target), UNCALLED + '''  tt.func private @__hybrid_r0_t_arange_load(!tt.ptr<f32>, tensor<256xf32, #row>)
'''), target)
    lowered = parse_module(module_text(target, layouts(target), PORTS), context)
    state = stitch_of(context, target, "gluon")
    wrong = ops(lowered, "ttg.convert_layout")[0].get_result(0).get_type()   # the #vec type
    pending(state, module, Lowered(lowered, lowered.get_function("region"), [False, True]), (wrong, ))
    with pytest.raises(RegionError, match=r"t_arange_load.*k.py:3.*tensor input 1 of the lowered region is"):
        run_pass(state, module, "splice Triton calls")


#: A region taking a pointer and a tensor (in the host's layout), converting the tensor to the
#: layout its code wants and its result back before the sink.
PORTS = '''  tt.func public @region(%x: !tt.ptr<f32>, %t: tensor<256xf32, #row>) {
    %0 = ttg.convert_layout %t : tensor<256xf32, #row> -> tensor<256xf32, #vec>
    %1 = arith.mulf %0, %0 : tensor<256xf32, #vec>
    %2 = ttg.convert_layout %1 : tensor<256xf32, #vec> -> tensor<256xf32, #row>
    %3 = tt.elementwise_inline_asm "hybrid.enable" {constraints = "=r", packed_element = 1 : i32, pure = true} -> i1
    scf.if %3 {
      %4 = tt.elementwise_inline_asm "hybrid.out.0" {constraints = "=r,r", packed_element = 1 : i32, pure = false} %2 : tensor<256xf32, #row> -> tensor<256xf32, #row>
    }
    tt.return
  }
'''


@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
def test_bind_ports_tags_the_input_and_output_conversions_and_the_sink(target):
    module, context, _ = parsed(module_text(target, layouts(target), PORTS), target)
    function = module.get_function("region")
    host_types = [function_blocks(module, function)[0].arg(1).get_type()]
    stitch.bind_ports(Lowered(module, function, [False, True]), host_types, 3, context)
    body = printed(module, layouts(target))
    assert '%0 = ttg.convert_layout %arg1 {hybrid.boundary = "3:in:1"}' in body
    assert '%2 = ttg.convert_layout %1 {hybrid.boundary = "3:out:0"}' in body
    assert 'hybrid.sink = "3:0"' in body


def test_bind_ports_refuses_a_tensor_input_in_another_type_than_the_hosts():
    target = "sm90a"
    module, context, _ = parsed(module_text(target, layouts(target), PORTS), target)
    function = module.get_function("region")
    wrong = [ops(module, "ttg.convert_layout")[0].get_result(0).get_type()]   # the #vec type
    with pytest.raises(stitch.StitchError, match="tensor input 1 of the lowered region is .*the host passes"):
        stitch.bind_ports(Lowered(module, function, [False, True]), wrong, 0, context)


@pytest.mark.ir_pass("splice Triton calls", "inline", "connect results", "canonicalize")
@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
def test_inline_and_connect_results_make_the_placeholder_the_regions_value(target):
    """From the splice: the Gluon host's pipeline runs them only where a splice is waiting."""
    module, state, _ = unspliced(target)
    run_pass(state, module, "splice Triton calls", "inline")
    assert count(module, "tt.call") == 0 and count(module, "tt.load") == 1
    run_pass(state, module, "connect results", "canonicalize")
    body = printed(module, layouts(target))
    assert "hybrid." not in body   # the sink, the placeholder and the flag are gone
    load = next(line for line in body.splitlines() if "tt.load" in line).split(" = ")[0].strip()
    assert f"arith.mulf {load}, " in body   # the host scales the loaded row
    stitch.check_no_markers(module)


@pytest.mark.ir_pass("connect results")
def test_connect_results_without_the_regions_value_says_which_result():
    target = "sm90a"
    module, context, _ = parsed(module_text(target, layouts(target), UNCALLED), target)
    with pytest.raises(RegionError, match="the pass 'connect results' failed: no region value for result 0:0"):
        run_pass(stitch_of(context, target), module, "connect results")


def test_check_no_markers_names_the_markers_left():
    module, context, _ = spliced("sm90a")
    with pytest.raises(stitch.StitchError, match=r"survived stitching: \['hybrid.enable', 'hybrid.out.0', "
                                                 r"'hybrid.result.0:0'\]"):
        stitch.check_no_markers(module)
