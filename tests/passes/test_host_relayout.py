"""A Triton host laid out again around its Gluon calls (``lowering/host_relayout.py``, the passes
``hide region bodies`` to ``restore region bodies``): its tile loaded in the layout the call takes
(``Moved.RELOADED``), its code after a call adopting the call's result layout (``Moved.ADOPTED``), and a
region's tensor-memory load sunk to its use on sm100a (``interleave tmem``), a tile a call returns
for a dot transposed in registers before its store to shared memory on gfx942 (``transpose in
thread``). Shrunk from ``tests/triton_hosts.py``'s
``h_reduce`` and ``examples/mma_handoff.py`` (its ``b_tile`` ported, on gfx942)."""
import pytest

from interop.boundary import Moved
from interop import pipeline
from interop.lowering.triton_host import GluonCall
from interop.region import CallSite
from interop.stitching.stitch import Folded
from tests.passes.modules import (LANES, blocked, conditions, count, module_text, ops, parsed, printed, run_pass,
                                  stitch_of)

REGIONS = {"__hybrid_r0_g": 0}
#: The host's relayout, in the pipeline's order.
RELAYOUT = [p.name for p in pipeline.TRITON_HOST if p.stage == pipeline.RELAYOUT and not p.markers_gone]


def relayout_state(context, target: str, regions: dict[str, int] = REGIONS):
    """The state of a Triton host's compile whose Gluon calls, built, are ``regions``."""
    state = stitch_of(context, target)
    state.compile.gluon.symbols.update(regions)
    return state


def relaid(module, context, target: str, regions: dict[str, int]) -> Folded:
    """What the relayout's passes folded, run on ``module`` calling the Gluon functions ``regions``."""
    return run_pass(relayout_state(context, target, regions), module, *RELAYOUT).relaid


def layouts(target: str) -> dict[str, str]:
    """The host's row, the tile as Triton's coalescing loads it, and as the Gluon function takes it
    (reading memory as well: the same contiguous run a warp)."""
    lanes = LANES[target]
    return {"row": blocked([1], [lanes], [4], [0]), "coalesced": blocked([1, 4], [lanes // 16, 16], [4, 1], [1, 0]),
            "taken": blocked([1, 4], [lanes // 16, 16], [2, 2], [1, 0])}


#: The host's tile, loaded by ``#coalesced``: its pointers (``%10``).
TILE = '''    %cst_0 = arith.constant dense<64> : tensor<32x1xi32, #coalesced>
    %1 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #ttg.slice<{dim = 1, parent = #coalesced}>>
    %2 = tt.expand_dims %1 {axis = 1 : i32} : tensor<32xi32, #ttg.slice<{dim = 1, parent = #coalesced}>> -> tensor<32x1xi32, #coalesced>
    %3 = arith.muli %2, %cst_0 : tensor<32x1xi32, #coalesced>
    %4 = tt.splat %x : !tt.ptr<f32> -> tensor<32x1x!tt.ptr<f32>, #coalesced>
    %5 = tt.addptr %4, %3 : tensor<32x1x!tt.ptr<f32>, #coalesced>, tensor<32x1xi32, #coalesced>
    %6 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #ttg.slice<{dim = 0, parent = #coalesced}>>
    %7 = tt.expand_dims %6 {axis = 0 : i32} : tensor<64xi32, #ttg.slice<{dim = 0, parent = #coalesced}>> -> tensor<1x64xi32, #coalesced>
    %8 = tt.broadcast %5 : tensor<32x1x!tt.ptr<f32>, #coalesced> -> tensor<32x64x!tt.ptr<f32>, #coalesced>
    %9 = tt.broadcast %7 : tensor<1x64xi32, #coalesced> -> tensor<32x64xi32, #coalesced>
    %10 = tt.addptr %8, %9 : tensor<32x64x!tt.ptr<f32>, #coalesced>, tensor<32x64xi32, #coalesced>
'''


def reducing(target: str) -> str:
    """The host loads a tile, converts it for the Gluon call (in its opaque ``scf.if``), adds one to the
    row sum it returns and stores it. The Gluon function squares the tile in a layout of its author's
    (two conversions Triton's passes would remove)."""
    return module_text(target, layouts(target), '''  tt.func public @h(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
    %cst = arith.constant dense<1.000000e+00> : tensor<32xf32, #row>
    %poison = ub.poison : tensor<32xf32, #row>
    %0 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #row>
''' + TILE + '''    %11 = tt.load %10 : tensor<32x64x!tt.ptr<f32>, #coalesced>
    %true = arith.constant true
    %12 = scf.if %true -> (tensor<32xf32, #row>) {
      %17 = ttg.convert_layout %11 {hybrid.boundary = "0:in:0"} : tensor<32x64xf32, #coalesced> -> tensor<32x64xf32, #taken>
      %18 = tt.call @__hybrid_r0_g(%17) : (tensor<32x64xf32, #taken>) -> tensor<32xf32, #ttg.slice<{dim = 1, parent = #taken}>>
      %19 = ttg.convert_layout %18 {hybrid.boundary = "0:out:0"} : tensor<32xf32, #ttg.slice<{dim = 1, parent = #taken}>> -> tensor<32xf32, #row>
      scf.yield %19 : tensor<32xf32, #row>
    } else {
      scf.yield %poison : tensor<32xf32, #row>
    }
    %13 = arith.addf %12, %cst : tensor<32xf32, #row>
    %14 = tt.splat %y : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>, #row>
    %15 = tt.addptr %14, %0 : tensor<32x!tt.ptr<f32>, #row>, tensor<32xi32, #row>
    tt.store %15, %13 : tensor<32x!tt.ptr<f32>, #row>
    tt.return
  }
  tt.func private @__hybrid_r0_g(%arg0: tensor<32x64xf32, #taken>) -> tensor<32xf32, #ttg.slice<{dim = 1, parent = #taken}>> {
    %c = ttg.convert_layout %arg0 : tensor<32x64xf32, #taken> -> tensor<32x64xf32, #coalesced>
    %m = arith.mulf %c, %c : tensor<32x64xf32, #coalesced>
    %d = ttg.convert_layout %m : tensor<32x64xf32, #coalesced> -> tensor<32x64xf32, #taken>
    %0 = "tt.reduce"(%d) <{axis = 1 : i32}> ({
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      tt.reduce.return %s : f32
    }) : (tensor<32x64xf32, #taken>) -> tensor<32xf32, #ttg.slice<{dim = 1, parent = #taken}>>
    tt.return %0 : tensor<32xf32, #ttg.slice<{dim = 1, parent = #taken}>>
  }
''')


@pytest.mark.ir_pass(*RELAYOUT)
@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
def test_the_hosts_tile_is_loaded_in_the_layout_the_call_takes(target):
    module, context, _ = parsed(reducing(target), target)
    folded = relaid(module, context, target, REGIONS)
    assert folded.moved == {"0:in:0": Moved.RELOADED}
    load, = ops(module, "tt.load")
    assert ops(module, "tt.call")[0].get_operand(0).id() == load.get_result(0).id()   # no conversion between
    assert layouts(target)["taken"] in str(load.get_result(0).get_type())
    assert count(module, "scf.if") == 0   # the call's opaque branch folded
    host, gluon = printed(module, layouts(target)).split("tt.func private @__hybrid_r0_g")
    assert '{hybrid.boundary = "0:out:0"}' in host   # the row sum still converted
    assert gluon.count("ttg.convert_layout") == 2   # the Gluon function out of the passes' sight


def storing(target: str) -> str:
    """The host doubles the tile a Gluon call returns (converted to ``#coalesced``) and stores it,
    masked, by its pointers in ``#coalesced``."""
    return module_text(target, layouts(target), '''  tt.func public @h(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: tensor<32x64xf32, #taken>) {
    %poison = ub.poison : tensor<32x64xf32, #coalesced>
''' + TILE + '''    %true = arith.constant true
    %12 = scf.if %true -> (tensor<32x64xf32, #coalesced>) {
      %18 = tt.call @__hybrid_r0_g(%y) : (tensor<32x64xf32, #taken>) -> tensor<32x64xf32, #taken>
      %19 = ttg.convert_layout %18 {hybrid.boundary = "0:out:0"} : tensor<32x64xf32, #taken> -> tensor<32x64xf32, #coalesced>
      scf.yield %19 : tensor<32x64xf32, #coalesced>
    } else {
      scf.yield %poison : tensor<32x64xf32, #coalesced>
    }
    %13 = arith.addf %12, %12 : tensor<32x64xf32, #coalesced>
    %lim = arith.constant dense<60> : tensor<32x64xi32, #coalesced>
    %m = arith.cmpi slt, %9, %lim : tensor<32x64xi32, #coalesced>
    tt.store %10, %13, %m : tensor<32x64x!tt.ptr<f32>, #coalesced>
    tt.return
  }
  tt.func private @__hybrid_r0_g(%arg0: tensor<32x64xf32, #taken>) -> tensor<32x64xf32, #taken> {
    %0 = arith.mulf %arg0, %arg0 : tensor<32x64xf32, #taken>
    tt.return %0 : tensor<32x64xf32, #taken>
  }
''')


@pytest.mark.ir_pass(*RELAYOUT)
@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
def test_the_hosts_code_after_a_call_adopts_its_result_layout(target):
    module, context, _ = parsed(storing(target), target)
    assert relaid(module, context, target, REGIONS).moved == {"0:out:0": Moved.ADOPTED}
    store, = ops(module, "tt.store")
    assert count(module, "ttg.convert_layout") == 0
    assert layouts(target)["taken"] in str(store.get_operand(0).get_type())


@pytest.mark.ir_pass(*RELAYOUT)
def test_a_host_without_gluon_calls_is_left_as_triton_made_it():
    module, context, _ = parsed(reducing("sm90a"), "sm90a")
    before = printed(module, layouts("sm90a"))
    assert relaid(module, context, "sm90a", {}) == Folded.nothing()
    assert printed(module, layouts("sm90a")) == before


def tmem(target: str) -> str:
    """A region's MMA accumulator loaded from tensor memory, then the host's address arithmetic for
    its store (as ``make_ttgir`` left it while the call was opaque)."""
    text = module_text(target, {"acc": blocked([1, 64], [32, 1], [4, 1], [0, 1]),
                                "out": blocked([1, 4], [2, 16], [4, 1], [1, 0]),
                                "tmem": "#ttng.tensor_memory_encoding<blockM = 128, blockN = 64, colStride = 1>"},
                       '''  tt.func public @k(%c: !tt.ptr<f32>, %stride: i32) {
    %result = ttng.tmem_alloc : () -> !ttg.memdesc<128x64xf32, #tmem, #ttng.tensor_memory, mutable>
    %acc = ttng.tmem_load %result : !ttg.memdesc<128x64xf32, #tmem, #ttng.tensor_memory, mutable> -> tensor<128x64xf32, #acc>
    %0 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32, #ttg.slice<{dim = 1, parent = #out}>>
    %1 = tt.expand_dims %0 {axis = 1 : i32} : tensor<128xi32, #ttg.slice<{dim = 1, parent = #out}>> -> tensor<128x1xi32, #out>
    %2 = tt.splat %stride : i32 -> tensor<128x1xi32, #out>
    %3 = arith.muli %1, %2 : tensor<128x1xi32, #out>
    %4 = tt.splat %c : !tt.ptr<f32> -> tensor<128x1x!tt.ptr<f32>, #out>
    %5 = tt.addptr %4, %3 : tensor<128x1x!tt.ptr<f32>, #out>, tensor<128x1xi32, #out>
    %6 = tt.broadcast %5 : tensor<128x1x!tt.ptr<f32>, #out> -> tensor<128x64x!tt.ptr<f32>, #out>
    %7 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #ttg.slice<{dim = 0, parent = #out}>>
    %8 = tt.expand_dims %7 {axis = 0 : i32} : tensor<64xi32, #ttg.slice<{dim = 0, parent = #out}>> -> tensor<1x64xi32, #out>
    %9 = tt.broadcast %8 : tensor<1x64xi32, #out> -> tensor<128x64xi32, #out>
    %10 = tt.addptr %6, %9 : tensor<128x64x!tt.ptr<f32>, #out>, tensor<128x64xi32, #out>
    %11 = ttg.convert_layout %acc {hybrid.boundary = "0:out:0"} : tensor<128x64xf32, #acc> -> tensor<128x64xf32, #out>
    tt.store %10, %11 : tensor<128x64x!tt.ptr<f32>, #out>
    tt.return
  }
''')
    return text


def _sunk(module) -> bool:
    body = module.str_nodebug()
    return body.index("ttng.tmem_load") > body.index("tt.splat %arg0")


@pytest.mark.ir_pass("interleave tmem")
def test_a_regions_tensor_memory_load_is_sunk_past_the_hosts_address_arithmetic_on_sm100a():
    module, context, _ = parsed(tmem("sm100a"), "sm100a")
    assert not _sunk(module)
    run_pass(stitch_of(context, "sm100a"), module, "interleave tmem")
    assert _sunk(module)


@pytest.mark.ir_pass("interleave tmem")
def test_a_target_without_tensor_memory_is_left_alone():
    module, context, _ = parsed(tmem("sm100a"), "sm100a")
    run_pass(stitch_of(context, "sm90a"), module, "interleave tmem")
    assert not _sunk(module)


#: The layouts of a gfx942 matmul whose B tile a Gluon call returns by rows, for the host to stage.
STAGING = {"row": blocked([4, 1], [1, 64], [4, 1], [1, 0]),
           "mma": "#ttg.amd_mfma<{version = 3, warpsPerCTA = [2, 2], instrShape = [32, 32, 8], isTransposed = true}>",
           "flat": "#ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>",
           "smem": "#ttg.shared_memory"}
#: The host stages the call's B tile in unswizzled shared memory for its dot (its body out of sight,
#: as ``relayout`` runs the step).
STAGED = module_text("gfx942", STAGING, '''  tt.func public @k(%a: tensor<128x64xf16, #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 4}>>, %b: !tt.ptr<f16>, %n: i32, %c: tensor<128x64x!tt.ptr<f32>, #mma>) {
    %cst = arith.constant dense<0.000000e+00> : tensor<128x64xf32, #mma>
    %0 = tt.call @__hybrid_r0_g(%b, %n) : (!tt.ptr<f16>, i32) -> tensor<64x64xf16, #row>
    %1 = ttg.local_alloc %0 : (tensor<64x64xf16, #row>) -> !ttg.memdesc<64x64xf16, #flat, #smem>
    %2 = ttg.local_load %1 : !ttg.memdesc<64x64xf16, #flat, #smem> -> tensor<64x64xf16, #ttg.dot_op<{opIdx = 1, parent = #mma, kWidth = 4}>>
    %3 = tt.dot %a, %2, %cst, inputPrecision = tf32 : tensor<128x64xf16, #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 4}>> * tensor<64x64xf16, #ttg.dot_op<{opIdx = 1, parent = #mma, kWidth = 4}>> -> tensor<128x64xf32, #mma>
    tt.store %c, %3 : tensor<128x64x!tt.ptr<f32>, #mma>
    tt.return
  }
  tt.func private @__hybrid_r0_g(!tt.ptr<f16>, i32) -> tensor<64x64xf16, #row>
''')


def transposed(regions: dict[str, int]):
    """``STAGED`` after ``transpose in thread``, in the relayout that records the calls it needs."""
    module, context, _ = parsed(STAGED, "gfx942")
    run_pass(relayout_state(context, "gfx942", regions), module, "hide region bodies", "transpose in thread", "restore region bodies")
    return module


@pytest.mark.ir_pass("transpose in thread")
def test_a_tile_a_call_returns_for_a_dot_is_transposed_in_registers_before_its_store_on_gfx942():
    module = transposed(REGIONS)
    transpose, = ops(module, "amdg.in_thread_transpose")
    assert transpose.get_operand(0).id() == ops(module, "tt.call")[0].get_result(0).id()
    alloc, = ops(module, "ttg.local_alloc")
    assert alloc.get_operand(0).id() == transpose.get_result(0).id()
    assert "#flat" not in printed(module, STAGING)   # stored into the swizzle the transpose is made for


@pytest.mark.ir_pass("transpose in thread")
def test_without_gluon_calls_a_staged_tile_is_left_as_it_is():
    before = printed(parsed(STAGED, "gfx942")[0], STAGING)
    assert printed(transposed({}), STAGING) == before


@pytest.mark.ir_pass("hide region bodies")
def test_the_gluon_functions_bodies_are_out_of_the_passes_sight():
    module, context, _ = parsed(reducing("sm90a"), "sm90a")
    state = run_pass(relayout_state(context, "sm90a"), module, "hide region bodies")
    assert count(module, "tt.reduce") == count(module, "arith.mulf") == 0   # a declaration, its body held elsewhere
    assert state.relayout.regions == REGIONS and state.relayout.before == {"0:in:0", "0:out:0"}


@pytest.mark.ir_pass("hide region bodies", "restore region bodies")
def test_the_bodies_come_back_and_a_relayout_that_changed_nothing_replaced_nothing():
    """Run after ``hide region bodies``, which holds the bodies."""
    module, context, _ = parsed(reducing("sm90a"), "sm90a")
    before = printed(module, layouts("sm90a"))
    state = run_pass(relayout_state(context, "sm90a"), module, "hide region bodies", "restore region bodies")
    assert printed(module, layouts("sm90a")) == before
    assert state.relayout is None and state.relaid == Folded.nothing()


@pytest.mark.ir_pass("fold opaque branches")
def test_the_calls_opaque_branch_is_folded_and_the_call_kept():
    """Run between ``hide region bodies`` and ``restore region bodies``, as in the pipeline."""
    module, context, _ = parsed(reducing("sm90a"), "sm90a")
    run_pass(relayout_state(context, "sm90a"), module, "hide region bodies", "fold opaque branches",
             "restore region bodies")
    assert count(module, "scf.if") == 0 and count(module, "tt.call") == 1 and count(module, "tt.reduce") == 1


@pytest.mark.ir_pass("tag boundaries")
def test_the_conversions_on_a_calls_operands_and_results_are_tagged_as_its_boundaries():
    """Run between ``hide region bodies`` and ``restore region bodies``; the layout passes before
    it remake conversions without tags, as the module here has them."""
    module, context, _ = parsed(reducing("sm90a").replace(' {hybrid.boundary = "0:in:0"}', "").replace(
        ' {hybrid.boundary = "0:out:0"}', ""), "sm90a")
    run_pass(relayout_state(context, "sm90a"), module, "hide region bodies", "tag boundaries", "restore region bodies")
    tags = [op.get_str_attr("hybrid.boundary") for op in ops(module, "ttg.convert_layout")]
    assert tags == ["0:in:0", "0:out:0", None, None]   # the Gluon function's own conversions untouched


def g_gone():
    """The Gluon function called (only its name is read: it is not built)."""


@pytest.mark.ir_pass("splice Gluon calls")
def test_a_gluon_call_in_ir_the_code_generator_discarded_drops_its_region_and_the_calls_are_enabled():
    """The call recorded at code generation (``GluonRegions``) without a copy of its boundary in
    the module: nothing to build; the flags guarding the Gluon calls left are set."""
    module, context, _ = parsed(module_text("sm90a", {}, '''  tt.func public @k() {
    %0 = tt.elementwise_inline_asm "hybrid.gluon.enable" {constraints = "=r", packed_element = 1 : i32, pure = true} -> i1
    scf.if %0 {
      gpu.barrier
    }
    tt.return
  }
'''), "sm90a")
    state = stitch_of(context, "sm90a")
    region = state.compile.new_region("g_gone", "gluon", CallSite("k.py", 9), "", shared_bytes=0, lines=())
    state.compile.gluon._calls.append(GluonCall(region, g_gone, [], [], [], False, {}, [], []))
    assert conditions(module) == {"%0"}
    run_pass(state, module, "splice Gluon calls")
    assert state.regions == [] and conditions(module) == {"%true"}   # (the flag, unused, left to the canonicalizer)
